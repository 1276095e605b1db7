/*
 * replay.c — a main for a libFuzzer target built without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named (a folder: on each file
 * in it), as libFuzzer replays a corpus.  The target aborts on what it
 * finds; this says which file it was on first.  `make` links
 * tests/fuzz/fuzz_parse.c with it, so that the target builds and its
 * corpus replays in every `make test` (tests/suites/fuzz_parse.sh).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 0, or 1 when the file cannot be read. */
static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 4096, n = 0;
	unsigned char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			unsigned char *b = realloc(buf, cap *= 2);
			if (!b)
				free(buf);
			buf = b;
		}
	}
	int bad = !buf || ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: cannot read it\n", path);
		free(buf);
		return 1;
	}
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
		return 2;
	}
	int failed = 0, done = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct dirent **names;
			int k = scandir(argv[i], &names, NULL, alphasort);
			if (k < 0) {
				perror(argv[i]);
				failed++;
				continue;
			}
			for (int j = 0; j < k; j++) {
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", argv[i], names[j]->d_name);
				if (names[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
					failed += replay(path);
					done++;
				}
				free(names[j]);
			}
			free(names);
		} else {
			failed += replay(argv[i]);
			done++;
		}
	}
	fprintf(stderr, "replay: %d inputs, %d unreadable\n", done, failed);
	return failed ? 1 : 0;
}
