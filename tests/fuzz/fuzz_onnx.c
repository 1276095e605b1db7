/*
 * fuzz_onnx.c — a libFuzzer target for the ONNX importer (lib/onnx): each
 * input is a model file, imported with its symbolic dimensions fixed to 2;
 * a model that imports must give a program that parses again without
 * errors (its weights read from the file the import wrote).  A crash, a
 * leak or an abort is the finding; an error is the expected answer to a
 * bad file.  Nothing runs.
 */
#include "tir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/tir-fuzz-onnx-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	char model[96], weights[96];
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
	FILE *f = fopen(model, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	unlink(weights);
	static const struct tir_onnx_dim dims[] = {{"batch", 2}, {"n", 2}, {"N", 2}};
	struct tir_onnx_opts o = {.dims = dims, .ndims = 3, .weights_file = weights};
	struct tir_onnx_model m;
	struct tir_err err = {0};
	if (tir_onnx_import(model, &o, &m, &err) == 0) {
		struct tir_program *p = tir_program_new();
		if (!p)
			abort();
		tir_program_set_loader(p, tir_load_type_from_file, NULL);
		if (tir_program_parse(p, "imported.tir", m.text, strlen(m.text), 0) != 0) {
			fprintf(stderr, "fuzz_onnx: the imported program does not parse:\n%s\n", m.text);
			abort();
		}
		tir_program_free(p);
		tir_onnx_model_free(&m);
	} else if (!err.code || !err.msg[0]) {
		abort(); /* a failure must say why */
	}
	unlink(model);
	unlink(weights);
	return 0;
}
