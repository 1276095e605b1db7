#!/usr/bin/python3
"""tests/onnx/run.py — ONNX's conformance suite (Debian's libonnx-testdata)
through tir: each test's model imported (`tir import`), then run on each of
its data sets (`tir run model.onnx --input NAME=input_K.pb --save ...`), each
output compared as ONNX's backend runner compares (the same dtype, then
numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7).

Tests whose ops are not inference ops are left out, the list below
(SKIP_OPS, and any test with a sequence, optional, map or string value).
Prints one line per test that is not passed, then the counts:
"onnx: P passed, W wrong, U unsupported (of N; S skipped)".

  run.py --tir build/tir [--list tests/onnx/pass.txt] [--write-pass FILE]
         [--jobs N] [--verbose] [NAME-PATTERN...]
With --list, only the tests listed run, and the status is 1 unless every one
passes (`make test`'s suite).  Without, the status is 0 (the counts are the
result).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

DATA = "/usr/share/libonnx-testdata/data"
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]

# Left out: training, sequence, optional, string, quantized, random and
# control-flow ops (docs/onnx.md lists them too).
SKIP_OPS = {
    # training
    "Adagrad", "Adam", "Momentum", "Gradient",
    # sequence and optional
    "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
    "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence",
    "Optional", "OptionalGetElement", "OptionalHasElement",
    # string
    "StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit", "TfIdfVectorizer",
    # quantized
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
    "ConvInteger", "MatMulInteger",
    # random
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial",
    # control flow
    "If", "Loop", "Scan",
}
SKIP_DOMAINS = {"ai.onnx.preview.training", "ai.onnx.ml"}


# what the importer says of a model it refuses (docs/onnx.md, "Refused"):
# such a test is unsupported; any other failure is wrong
UNSUPPORTED = re.compile(r"not supported|cannot import|tir needs it known|tir imports opsets|which tir has not|"
                         r"\(tir has|tir tiles up to|depends on the data|is not a tensor|has no shape|"
                         r"is symbolic|folded at import")


def value_kinds(model):
    """whether every graph input and output is a tensor of a non-string type"""
    for v in list(model.graph.input) + list(model.graph.output):
        t = v.type
        if t.WhichOneof("value") != "tensor_type":
            return False
        if t.tensor_type.elem_type == onnx.TensorProto.STRING:
            return False
    return True


def skip_reason(model):
    for n in model.graph.node:
        if n.domain in SKIP_DOMAINS:
            return "domain " + n.domain
        if n.op_type in SKIP_OPS:
            return n.op_type
    if not value_kinds(model):
        return "sequence, optional or string values"
    return None


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def bf16_as_f32(bits):
    """bfloat16 bit patterns (uint16) as the float32 values they are"""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path, name):
    """the raw value NAME of a .safetensors file, as uint16 when bf16 (tir
    writes bf16 there: NumPy has no bf16 dtype, so no .npy can hold it)"""
    import json
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = json.loads(f.read(n))
        body = f.read()
    e = head[name]
    lo, hi = e["data_offsets"]
    assert e["dtype"] == "BF16", e["dtype"]
    return np.frombuffer(body[lo:hi], dtype=np.uint16).reshape(e["shape"])


def short(s, n=160):
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


def run_test(tir, path, name):
    """('passed' | 'wrong' | 'unsupported' | 'skipped', detail)"""
    try:
        model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
    except Exception as e:  # noqa: BLE001 — a model onnx cannot read is one tir need not
        return "skipped", "onnx cannot load it: %s" % short(str(e))
    why = skip_reason(model)
    if why:
        return "skipped", why
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [o.name for o in model.graph.output]
    bf16 = {o.name for o in model.graph.output if o.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16}
    sets = sorted(d for d in os.listdir(path) if d.startswith("test_data_set_"))
    if not sets:
        return "skipped", "no data set"
    tmp = tempfile.mkdtemp(prefix="tir-onnx-test-")
    try:
        # the inputs of the first data set fix any symbolic dimension (tir
        # run does the same; --dim names them for the others)
        ds0 = os.path.join(path, sets[0])
        given = []
        for k, nm in enumerate(inputs):
            pb = os.path.join(ds0, "input_%d.pb" % k)
            if os.path.exists(pb):
                arr = read_pb(pb)
                given.append((nm, arr.shape))
        dims = []
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            shp = dict(given).get(vi.name)
            if shp is None or not vi.type.tensor_type.HasField("shape"):
                continue
            # a data set that contradicts the model's own static shape (CastLike's
            # 'like' of shape [1] for a declared [3, 4]): tir holds every input
            # to its declared shape, so the test counts against tir, as unsupported
            decl = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
            if len(decl) != len(shp) or any(d is not None and d != n for d, n in zip(decl, shp)):
                return "unsupported", "input '%s' of the data set has shape %s, the model declares %s" % (
                    vi.name, list(shp), ["?" if d is None else d for d in decl])
            for d, n in zip(vi.type.tensor_type.shape.dim, shp):
                if d.HasField("dim_param") and d.dim_param:
                    dims += ["--dim", "%s=%d" % (d.dim_param, n)]
        for ds in sets:
            dsp = os.path.join(path, ds)
            args = [tir, "run", os.path.join(path, "model.onnx"), "--quiet"] + dims
            for k, nm in enumerate(inputs):
                pb = os.path.join(dsp, "input_%d.pb" % k)
                if os.path.exists(pb):
                    args += ["--input", "%s=%s" % (nm, pb)]
            outs = []
            for k, nm in enumerate(outputs):
                f = os.path.join(tmp, "out_%d.%s" % (k, "safetensors" if nm in bf16 else "npy"))
                outs.append(f)
                args += ["--save", "%s=%s" % (nm, f)]
            r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120)
            if r.returncode != 0:
                if UNSUPPORTED.search(r.stderr):
                    return "unsupported", short(r.stderr)
                return "wrong", "%s: tir run failed: %s" % (ds, short(r.stderr))
            for k, nm in enumerate(outputs):
                exp = read_pb(os.path.join(dsp, "output_%d.pb" % k))
                if nm in bf16:
                    # a bf16 output (expected as its bit patterns, uint16)
                    # compared as the values it holds, within one bf16
                    # unit in the last place: the suite's data truncates
                    # to bf16, as ONNX did before 1.14; tir rounds to
                    # nearest even, as ONNX's Cast now specifies
                    got = bf16_as_f32(read_safetensors(outs[k], nm))
                    exp = bf16_as_f32(exp)
                    try:
                        np.testing.assert_allclose(got, exp, rtol=2.0 ** -7, atol=0)
                    except AssertionError as e:
                        return "wrong", "%s: bf16 output '%s' differs: %s" % (ds, nm, short(str(e)))
                    continue
                got = np.load(outs[k])
                if exp.dtype != got.dtype:
                    return "wrong", "%s: output '%s' is %s, expected %s" % (ds, nm, got.dtype, exp.dtype)
                if exp.shape != got.shape:
                    return "wrong", "%s: output '%s' has shape %s, expected %s" % (ds, nm, got.shape, exp.shape)
                try:
                    np.testing.assert_allclose(got, exp, rtol=1e-3, atol=1e-7)
                except AssertionError as e:
                    lines = [ln for ln in str(e).splitlines() if "Mismatch" in ln or "Max abs" in ln]
                    return "wrong", "%s: output '%s' differs: %s" % (ds, nm, short("; ".join(lines)))
        return "passed", ""
    except subprocess.TimeoutExpired:
        return "wrong", "timed out"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", default="build/tir")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--list")
    ap.add_argument("--write-pass")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("patterns", nargs="*")
    a = ap.parse_args()
    tir = os.path.abspath(a.tir)
    if not os.path.isdir(a.data):
        print("onnx: %s is missing (Debian's libonnx-testdata; make deps installs it)" % a.data)
        return 1
    tests = []
    for suite in SUITES:
        d = os.path.join(a.data, suite)
        if not os.path.isdir(d):
            continue
        for t in sorted(os.listdir(d)):
            if os.path.exists(os.path.join(d, t, "model.onnx")):
                tests.append(("%s/%s" % (suite, t), os.path.join(d, t)))
    wanted = None
    if a.list:
        with open(a.list) as f:
            wanted = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        known = {n for n, _ in tests}
        missing = [w for w in wanted if w not in known]
        for w in missing:
            print("onnx: %s: listed but not in %s" % (w, a.data))
        ws = set(wanted)
        tests = [t for t in tests if t[0] in ws]
    if a.patterns:
        tests = [t for t in tests if any(re.search(p, t[0]) for p in a.patterns)]
    counts = {"passed": 0, "wrong": 0, "unsupported": 0, "skipped": 0}
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(run_test, tir, p, n): n for n, p in tests}
        for fut in concurrent.futures.as_completed(futs):
            results[futs[fut]] = fut.result()
    skipped = []
    for n, _ in tests:
        st, detail = results[n]
        counts[st] += 1
        if st == "skipped":
            skipped.append((n, detail))
            if a.verbose:
                print("skipped      %s: %s" % (n, detail))
        elif st != "passed":
            print("%-12s %s: %s" % (st, n, detail))
        elif a.verbose:
            print("passed       %s" % n)
    if a.write_pass:
        with open(a.write_pass, "w") as f:
            f.write("# tests/onnx/pass.txt — the ONNX conformance tests tir passes (tests/onnx/run.py\n"
                    "# --write-pass); make test runs exactly these (tests/suites/onnx.sh).\n")
            for n, _ in tests:
                if results[n][0] == "passed":
                    f.write(n + "\n")
    run = counts["passed"] + counts["wrong"] + counts["unsupported"]
    print("onnx: left out (not inference ops): %s" % ", ".join(sorted(SKIP_OPS | SKIP_DOMAINS)))
    print("onnx: %d passed, %d wrong, %d unsupported (of %d; %d skipped)%s" % (
        counts["passed"], counts["wrong"], counts["unsupported"], run, counts["skipped"],
        " — %.1f%% pass" % (100.0 * counts["passed"] / run) if run else ""))
    if wanted is not None:
        bad = counts["wrong"] + counts["unsupported"] + counts["skipped"] + len(missing)
        print("%d passed, %d failed" % (counts["passed"], bad))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
