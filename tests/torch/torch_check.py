#!/usr/bin/python3
"""torch_check.py — tir against torch.nn modules loaded from one checkpoint.

    /usr/bin/python3 tests/torch/torch_check.py [--tir build/tir] [--keep DIR] [--brief]

`make test-torch` runs it (and `make bench`, once it has installed
python3-torch).  `make test` does not: its oracle stays NumPy.

For each model below, with fixed seeds, this script builds the torch.nn
module, sets EVERY parameter to random values (torch's default init leaves
LayerNorm weights at 1 and the attention biases at 0, so a program that
mixed up norm1 and norm2, or dropped a bias, would still pass), writes its
state_dict to NAME.safetensors (written here with json + struct: the
`safetensors` package is not a Debian package; the file is read back and
checked bit for bit, and `tir inspect` must list the same tensors), writes
the input to x.npy, and runs the checked-in program tests/torch/NAME.tir,
which loads every weight BY ITS state_dict NAME:

    tir run NAME.tir --quiet --input x=x.npy --save y=y.npy [--threads N] [--no-fuse]

in the folder holding the files, fused and --no-fuse, at --threads 1 and 2.
Each y is compared with the module's output (eval mode, no grad; float32):

    err = max |y_tir - y_torch| / max |y_torch|      must be <= TOL = 1e-5

and the four runs must give the same bytes (tir's promise on one machine).

Why 1e-5: the outputs are float32 (eps 1.19e-7) and tir and torch sum in
different orders (tir: one ascending FMA chain per matmul element; torch:
OpenBLAS/mkldnn blocks) with different exp/erf/rsqrt (SLEEF, 1 ULP, vs
torch's own).  The longest dot products have 256 terms (linear2) and 135
(conv2: 8 x 3 x 3; conv1 has 45, the Linear 192), so a worst-case rounding
bound is about K * eps ~ 3e-5 of the sum of |terms|, and a typical one
sqrt(K) * eps ~ 2e-6; the layers after it (layernorm's 1/sigma, softmax,
the residuals) do not amplify it by more than a few.  Measured errors are
printed ("# " lines): about 2e-7 relative (8e-8 for the CNN) on every
TIR_VMATH path, so 1e-5 leaves a margin of 40x or more, while a real error
of layout or semantics (a transposed weight, a wrong head split, a missing
mask, a bias on the wrong axis) is 1e-3 or more (the negative checks below
show the size of one: 0.05 on one weight is 1e-3 or more).

Checks that the comparison can fail (run every time):
  - the comparator on a copy of the reference with one element moved by
    2 * TOL * scale fails, by 0.5 * TOL * scale passes;
  - for every tensor of each checkpoint, a checkpoint with 0.05 added to
    its first element: tir on it must MISMATCH torch's original output
    (so every name the program loads matters and the suite sees it), and
    for one tensor per model, tir on it must match torch run with the same
    change (the mismatch comes from the weight, nothing else);
  - encoder.tir with causal=true turned to causal=false must mismatch.

Output: "ok NAME" or "FAIL NAME: WHY" per check, "# " lines of measured
errors, and last "N passed, M failed" (--brief: no "ok" lines); exit
status 0 only when none failed.  --keep DIR leaves the checkpoints, inputs
and outputs in DIR.
If torch cannot be imported the script says so (run `make bench`, which
installs python3-torch, or apt-get install python3-torch) and fails.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "torch")
TOL = 1e-5
SEED = 0
CONFIGS = [("fused, --threads 1", ["--threads", "1"]),
           ("fused, --threads 2", ["--threads", "2"]),
           ("--no-fuse, --threads 1", ["--no-fuse", "--threads", "1"]),
           ("--no-fuse, --threads 2", ["--no-fuse", "--threads", "2"])]

passed = 0
failed = 0


BRIEF = False


def ok(name):
    global passed
    passed += 1
    if not BRIEF:
        print("ok " + name, flush=True)


def fail(name, why):
    global failed
    failed += 1
    print("FAIL %s: %s" % (name, why), flush=True)


def check(cond, name, why=""):
    (ok if cond else lambda n: fail(n, why))(name)
    return cond


# ---- the comparator ----

def compare(got, want, tol=TOL):
    """(True or False, err, what): err = max|got - want| / max|want|."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, float("inf"), "got %s%s, want %s%s" % (got.dtype, list(got.shape), want.dtype,
                                                            list(want.shape))
    if not np.all(np.isfinite(got)):
        return False, float("inf"), "got %d non-finite values" % int(np.sum(~np.isfinite(got)))
    scale = float(np.max(np.abs(want.astype(np.float64))))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    err = float(np.max(diff)) / scale
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    what = "max |diff| %.3g at %s (tir %.9g, torch %.9g), output scale %.3g: %.3g relative, tolerance %g" % (
        float(np.max(diff)), list(map(int, at)), float(got[at]), float(want[at]), scale, err, tol)
    return err <= tol, err, what


# ---- .safetensors, by hand ----

def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> float32 array, written in the order given."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, d in header.items():
        assert d["dtype"] == "F32", d
        b, e = d["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(d["shape"])
    return out


# ---- the models ----

def build_encoder(torch):
    torch.manual_seed(SEED)
    m = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, activation="gelu",
                                         norm_first=True, batch_first=True)
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(SEED + 1))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(16)    # -inf above the diagonal

    def forward(mod, inp):
        return mod(inp, src_mask=mask)
    return m, x, forward


def build_cnn(torch):
    nn = torch.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, kernel_size=(3, 5), padding=(1, 2))
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.pool2 = nn.AvgPool2d(2)
            self.fc = nn.Linear(16 * 4 * 3, 10)

        def forward(self, x):
            x = self.pool1(torch.relu(self.conv1(x)))
            x = self.pool2(torch.relu(self.conv2(x)))
            return torch.log_softmax(self.fc(torch.flatten(x, 1)), dim=-1)

    torch.manual_seed(SEED)
    m = CNN()
    x = torch.randn(4, 3, 32, 26, generator=torch.Generator().manual_seed(SEED + 1))
    return m, x, lambda mod, inp: mod(inp)


# name, program, builder, the tensor whose change is also run through torch
MODELS = [("encoder", "encoder.tir", build_encoder, "self_attn.in_proj_weight"),
          ("encoder", "encoder_matmul.tir", build_encoder, "linear1.weight"),
          ("cnn", "cnn.tir", build_cnn, "conv2.weight")]


def randomize(torch, m):
    """Every parameter random: weights as initialized plus noise of their own
    size, LayerNorm weights near 1, every bias nonzero."""
    g = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.startswith("norm"):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                p.add_(float(p.std()) * 0.5 * noise)


def state_arrays(m):
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in m.state_dict().items()}


def perturb(arrays, name, delta):
    a = {k: v.copy() for k, v in arrays.items()}
    flat = a[name].reshape(-1)
    flat[0] += np.float32(delta)
    return a


# ---- running tir ----

def run_tir(tir, prog, cwd, args):
    """y from `tir run PROG --input x=x.npy --save y=y.npy ARGS` in cwd, or
    (None, message)."""
    out = os.path.join(cwd, "y.npy")
    if os.path.exists(out):
        os.unlink(out)
    cmd = [tir, "run", prog, "--quiet", "--input", "x=x.npy", "--save", "y=y.npy"] + args
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "timed out: " + " ".join(cmd)
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, (p.stderr.strip() or p.stdout.strip())[-600:])
    return np.load(out), None


# ---- f16 and bf16 against torch's own ----

HALF_PROG = """input a: {t}[64, 96]
input b: {t}[96, 48]
input c: {t}[48]
e = a * 1.5 - exp(a) / 4
m = a @ b
y = gelu(m + c)
s = sum(a, axis=1)
"""


def half_checks(torch, tir, d):
    """tir's f16 and bf16 ops (computed in f32, rounded on store) against
    torch's CPU ops on the same values: elementwise chains bit for bit
    (torch rounds after each op too), matmul, gelu and sum within one step
    of the type (torch's kernels sum in another order)."""
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(SEED)
    for tname, tdt, step in (("bf16", torch.bfloat16, 2.0 ** -7), ("f16", torch.float16, 2.0 ** -10)):
        a = torch.randn(64, 96, generator=g).to(tdt)
        b = (torch.randn(96, 48, generator=g) / 8).to(tdt)
        c = torch.randn(48, generator=g).to(tdt)
        st = {"a": a, "b": b, "c": c}
        raw = {}
        for n, t in st.items():
            raw[n] = t.view(torch.int16).numpy().astype("<i2").tobytes()
        header, off, blobs = {}, 0, []
        for n, t in st.items():
            header[n] = {"dtype": tname.upper(), "shape": list(t.shape), "data_offsets": [off, off + len(raw[n])]}
            off += len(raw[n])
            blobs.append(raw[n])
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        ck = os.path.join(d, "in.safetensors")
        with open(ck, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
        prog = os.path.join(d, "half.tir")
        with open(prog, "w") as f:
            f.write(HALF_PROG.format(t=tname))
        outs = ["e", "m", "y", "s"]
        with open(prog, "w") as f:
            body = HALF_PROG.format(t=tname).split("\n")[3:]
            f.write("\n".join(['%s = load("in.safetensors", "%s")' % (n, n) for n in st] + body))
        cmd = [tir, "run", "half.tir", "--quiet"] + sum(
            (["--save", "%s=out.safetensors" % n] for n in outs), [])
        p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail("%s ops against torch: tir runs" % tname, p.stderr.strip()[-400:])
            continue
        data = open(os.path.join(d, "out.safetensors"), "rb").read()
        (n,) = struct.unpack("<Q", data[:8])
        head = json.loads(data[8:8 + n])
        got = {}
        for k, v in head.items():
            lo, hi = v["data_offsets"]
            bits = torch.from_numpy(np.frombuffer(data[8 + n + lo:8 + n + hi], "<i2").copy())
            got[k] = bits.view(tdt).reshape(v["shape"]).float().numpy()
        with torch.no_grad():
            if tdt == torch.bfloat16:
                want = {"e": a * 1.5 - torch.exp(a) / 4, "m": a @ b}
                want["y"] = torch.nn.functional.gelu(want["m"] + c)
                want["s"] = a.sum(dim=1)
            else:
                # torch 1.13 has no CPU f16 exp or matmul: each op in f32,
                # rounded to f16 after it, as torch's f16 ops do elsewhere
                def r(t):
                    return t.to(tdt).float()
                af, bf_, cf = a.float(), b.float(), c.float()
                m = r(af @ bf_)
                want = {"e": r(r(af * 1.5) - r(r(torch.exp(af)) / 4)), "m": m,
                        "y": r(torch.nn.functional.gelu(r(m + cf))), "s": r(af.sum(dim=1))}
        for k in outs:
            w = want[k].float().numpy()
            if k == "e":
                # exp: tir's and torch's f32 exp may differ in the last f32 bit
                diff = np.abs(got[k] - w) > step * np.maximum(np.abs(w), 1e-3)
            else:
                diff = np.abs(got[k] - w) > 2 * step * np.maximum(np.abs(w), np.abs(w).max() * 1e-2)
            check(head[k]["dtype"] == tname.upper() and not diff.any(),
                  "%s %s against torch (%s)" % (tname, k, "one step" if k == "e" else "two steps of the output"),
                  "%d of %d differ; max |diff| %g" % (diff.sum(), diff.size, np.abs(got[k] - w).max()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tir", default=os.path.join(ROOT, "build", "tir"))
    ap.add_argument("--keep", help="write the files into DIR and keep them")
    ap.add_argument("--brief", action="store_true", help='leave out the "ok" lines')
    opt = ap.parse_args()
    global BRIEF
    BRIEF = opt.brief
    tir = os.path.abspath(opt.tir)

    try:
        import torch
    except Exception as e:      # ImportError, or a broken install
        print("FAIL import torch: %s: %s" % (type(e).__name__, e))
        print("test-torch: PyTorch is not importable by %s; run `make bench` (which installs "
              "python3-torch) or `apt-get install python3-torch`, then `make test-torch` again" % sys.executable)
        print("0 passed, 1 failed")
        return 1
    if not os.access(tir, os.X_OK):
        print("FAIL %s is not built (run make)" % tir)
        print("0 passed, 1 failed")
        return 1
    torch.set_num_threads(1)
    print("# torch %s, numpy %s, tolerance %g of the output's max |value|" % (torch.__version__, np.__version__, TOL))

    # the comparator itself
    want = np.linspace(-3, 2, 60, dtype=np.float32).reshape(3, 20)
    for k, should in ((2.0, False), (0.5, True)):
        got = want.copy()
        got[1, 7] += np.float32(k * TOL * 3)
        check(compare(got, want)[0] == should, "comparator: one element off by %g x tolerance %s" %
              (k, "fails" if not should else "passes"), compare(got, want)[2])
    check(not compare(want.reshape(60), want)[0], "comparator: a shape differing fails")
    bad = want.copy()
    bad[0, 0] = np.nan
    check(not compare(bad, want)[0], "comparator: a nan fails")

    work = opt.keep or tempfile.mkdtemp(prefix="tir-torch.")
    os.makedirs(work, exist_ok=True)
    try:
        for name, prog_file, build, through_torch in MODELS:
            prog = os.path.join(HERE, prog_file)
            tag = prog_file
            m, x, forward = build(torch)
            randomize(torch, m)
            m.eval()
            with torch.no_grad():
                y_ref = forward(m, x).numpy()
            arrays = state_arrays(m)
            d = os.path.join(work, prog_file[:-4])
            os.makedirs(d, exist_ok=True)
            ck = name + ".safetensors"
            write_safetensors(os.path.join(d, ck), arrays, {"format": "pt", "seed": str(SEED)})
            np.save(os.path.join(d, "x.npy"), x.numpy())

            # the checkpoint as written, and as tir reads it
            back = read_safetensors(os.path.join(d, ck))
            check(list(back) == list(arrays) and all(np.array_equal(back[k], arrays[k]) for k in arrays),
                  "%s: %s reads back bit for bit" % (tag, ck))
            p = subprocess.run([tir, "inspect", ck], cwd=d, capture_output=True, text=True)
            listed = {}
            for line in p.stdout.splitlines()[2:]:
                f = line.split()
                if len(f) >= 2 and f[1] == "F32":
                    listed[f[0]] = json.loads(re.search(r"\[[^\]]*\]", line).group(0))
            check(p.returncode == 0 and listed == {k: list(v.shape) for k, v in arrays.items()},
                  "%s: tir inspect lists the state_dict's %d tensors and shapes" % (tag, len(arrays)),
                  "exit %d: %s" % (p.returncode, p.stdout + p.stderr))
            src = open(prog).read()
            loaded = set(re.findall(r'load\("%s",\s*"([^"]+)"\)' % re.escape(ck), src))
            check(loaded == set(arrays), "%s: loads every state_dict name, and only those" % tag,
                  "not loaded: %s; not in the state_dict: %s" % (sorted(set(arrays) - loaded),
                                                                 sorted(loaded - set(arrays))))

            # the runs, of a copy beside the checkpoint: a program's load
            # paths are relative to its own file
            here = os.path.join(d, prog_file)
            with open(here, "w") as f:
                f.write(src)
            first = None
            for cname, args in CONFIGS:
                y, msg = run_tir(tir, here, d, args)
                if y is None:
                    fail("%s, %s: matches torch" % (tag, cname), msg)
                    continue
                good, err, what = compare(y, y_ref)
                if first is None or first.tobytes() != y.tobytes():    # the others: the same bytes
                    print("# %s, %s: %s" % (tag, cname, what))
                check(good, "%s, %s: matches torch (%.2g relative)" % (tag, cname, err), what)
                if first is None:
                    first = y
                else:
                    check(first.tobytes() == y.tobytes(), "%s, %s: same bytes as %s" % (tag, cname, CONFIGS[0][0]),
                          "max |diff| %g" % float(np.max(np.abs(first - y))))

            # every tensor matters: one element changed must be caught
            pd = os.path.join(d, "perturbed")
            os.makedirs(pd, exist_ok=True)
            shutil.copy(os.path.join(d, "x.npy"), pd)
            shutil.copy(here, pd)
            here = os.path.join(pd, prog_file)
            least = None
            for tname in arrays:
                write_safetensors(os.path.join(pd, ck), perturb(arrays, tname, 0.05))
                y, msg = run_tir(tir, here, pd, ["--threads", "2"])
                if y is None:
                    fail("%s: %s changed: tir runs" % (tag, tname), msg)
                    continue
                good, err, what = compare(y, y_ref)
                least = err if least is None else min(least, err)
                check(not good, "%s: %s, element 0 + 0.05: the comparison fails (%.2g relative)" % (tag, tname, err),
                      "tir on a changed checkpoint still matched torch: " + what)
                if tname == through_torch:
                    m2, _, _ = build(torch)
                    m2.load_state_dict({k: torch.from_numpy(v) for k, v in perturb(arrays, tname, 0.05).items()})
                    m2.eval()
                    with torch.no_grad():
                        y2 = forward(m2, x).numpy()
                    good2, err2, what2 = compare(y, y2)
                    check(good2, "%s: %s changed in torch too: they match again (%.2g relative)" % (tag, tname, err2),
                          what2)
            if least is not None:
                print("# %s: the smallest error adding 0.05 to one element made: %.3g (%.0fx the tolerance)" %
                      (tag, least, least / TOL))

            if prog_file == "encoder.tir":
                nd = os.path.join(d, "nocausal")
                os.makedirs(nd, exist_ok=True)
                for f in (ck, "x.npy"):
                    shutil.copy(os.path.join(d, f), nd)
                assert src.count("causal=true") == 1
                with open(os.path.join(nd, "nocausal.tir"), "w") as f:
                    f.write(src.replace("causal=true", "causal=false"))
                y, msg = run_tir(tir, "nocausal.tir", nd, [])
                if y is None:
                    fail("%s with causal=false: runs" % tag, msg)
                else:
                    good, err, what = compare(y, y_ref)
                    check(not good, "%s with causal=false: the comparison fails (%.2g relative)" % (tag, err),
                          "still matched: " + what)
        half_checks(torch, tir, os.path.join(work, "half"))
    finally:
        if not opt.keep:
            shutil.rmtree(work, ignore_errors=True)

    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
