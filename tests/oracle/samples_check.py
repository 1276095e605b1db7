#!/usr/bin/python3
"""samples_check.py — NumPy's independent recomputation of samples/*.tir.

    samples_check.py [-v] [--tir PATH] [NAME...]     (default: every sample)

For each sample it runs `tir run --quiet samples/NAME.tir --save ...`, saving
the random tensors (and some results) as .npy files.  It does not reimplement
tir's random number generator: it loads the saved random inputs and
recomputes everything downstream of them with NumPy, in float64.  Then it
compares
  - every block tir printed on stdout (header dtype and shape, and each
    printed number; for a summarized block the elements that were shown),
  - every saved result named in the sample's table,
  - a few claims a sample's comments make (e.g. "the first token attends
    only to itself"),
with a relative tolerance of 1e-5 (floats; ints and bools exactly).  A
printed float also gets half a unit of its last printed digit, and where a
value comes out of cancellation (a matmul or a sum of mixed signs) the
tolerance is relative to the magnitude of the terms rather than of the
result (the `scale` below: e.g. |a| @ |b| for a @ b).

Prints "NAME: ok" or "NAME: FAILED" plus up to a few lines on what
differed, per sample (-v: also how close the worst float came to its
tolerance); exits 1 when any sample failed, 2 on bad usage.  --tir
defaults to $BUILD/tir (BUILD=build).
Uses only NumPy and the standard library (run it with /usr/bin/python3).
"""
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

RTOL = 1e-5
PRECISION = 6          # tir's default --precision
SUMMARY = 1000         # tir summarizes past this many elements
EDGE = 3
WORST = [0.0]          # the largest |got - want| / tolerance seen (for -v)
NP_DTYPE = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
            "i64": np.int64, "bool": np.bool_}

_erf = np.vectorize(math.erf, otypes=[np.float64])


class E:
    """An expected value: the array, tir's dtype name, and optionally a
    scale (broadcastable) below which differences are absolute."""

    def __init__(self, value, dtype, scale=None):
        self.value = np.asarray(value, dtype=np.float64 if dtype in ("f32", "f64")
                                else NP_DTYPE[dtype])
        self.dtype = dtype
        self.scale = scale

    def scale_array(self):
        if self.scale is None:
            return None
        return np.broadcast_to(np.asarray(self.scale, dtype=np.float64), self.value.shape)


def f32(v, scale=None):
    return E(v, "f32", scale)


def f64(v, scale=None):
    return E(v, "f64", scale)


def i64(v):
    return E(v, "i64")


def i32(v):
    return E(v, "i32")


def b(v):
    return E(v, "bool")


def d(a):
    """A saved f32/f64 array as float64 for the recomputation."""
    return np.asarray(a, dtype=np.float64)


def rms(a):
    a = np.asarray(a, dtype=np.float64)
    return float(np.sqrt(np.mean(a * a))) if a.size else 0.0


# ---- NumPy versions of the tir ops that NumPy lacks ----

def relu(x):
    return np.maximum(x, 0)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def layernorm(x, w, bias, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + bias


def rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def _pair(v):
    return (v, v) if np.isscalar(v) else tuple(v)


def conv2d(x, w, bias=None, stride=1, padding=0):
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    _, _, h, wd = x.shape
    _, _, kh, kw = w.shape
    ho, wo = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    if bias is not None:
        out += np.asarray(bias)[None, :, None, None]
    return out


def _windows(x, kernel, stride):
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride if stride is not None else kernel)
    _, _, h, w = x.shape
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    return np.stack([x[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]
                     for i in range(kh) for j in range(kw)])


def maxpool2d(x, kernel, stride=None):
    return _windows(x, kernel, stride).max(axis=0)


def avgpool2d(x, kernel, stride=None):
    return _windows(x, kernel, stride).mean(axis=0)


def attention(q, k, v, causal=False):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        s = np.where(np.triu(np.ones((lq, lk), dtype=bool), 1), -np.inf, s)
    return softmax(s) @ v


def heads(t):
    """[2, 16, 32] -> [2, 4, 16, 8] as attention.tir does it."""
    return t.reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)


# ---- the samples: NAME -> (names to --save, function(saved) -> result) ----
# A function returns (prints, saved, claims): the expected printed blocks in
# order, {saved name: expected}, and [(claim, bool)].

# (Biases made by zeros() in a sample are left out of the recomputation.)

def check_mlp(s):
    x, w1, w2 = d(s["x"]), d(s["w1"]), d(s["w2"])
    pre1 = x @ w1
    h = relu(pre1)
    logits = h @ w2
    y = softmax(logits)
    return ([f32(y[:4]), f32(y.sum(axis=1)), i64(y.argmax(axis=1))],
            {"y": f32(y), "h": f32(h, scale=np.abs(x) @ np.abs(w1))},
            [("the batch is uniform in [0, 1)", x.min() >= 0 and x.max() < 1)])


def check_creation(s):
    m = np.array([[1, 2, 3], [4, 5, 6]])
    u, n, dd = d(s["u"]), d(s["n"]), d(s["d"])
    ub, nb = d(s["ub"]), d(s["nb"])
    s5, s5a, s6 = s["s5"], s["s5_again"], s["s6"]
    prints = [
        f32(np.zeros((2, 3))), i32(np.ones(4)), f32(np.full((2, 2), 3.5)),
        i64(np.full(3, 7)),
        i64(np.arange(5)), i64(np.arange(2, 11, 3)), f32(np.arange(0, 1, 0.25)),
        f64(np.arange(3)),
        f32(np.eye(3)), b(np.eye(2, dtype=bool)),
        i64(m), f32([1.5, 2, -0.25]), b([True, False]), i64(42),
        i64(m * 10),
        f32(u), f32(n), f64(dd),
        i64(np.sum(s5 == s5a)), i64(np.sum(s5 == s6)),
        f64(ub.mean()), f64(ub.var()), f64(ub.min()), f64(ub.max()),
        f64(nb.mean(), scale=np.abs(nb).mean()), f64(nb.var()),
        i64(np.arange(1200).reshape(30, 40)),
    ]
    claims = [
        ("rand and randn have the asked dtypes",
         s["u"].dtype == np.float32 and s["n"].dtype == np.float32
         and s["d"].dtype == np.float64),
        ("rand is in [0, 1)", u.min() >= 0 and u.max() < 1 and ub.min() >= 0 and ub.max() < 1),
        ("f32 and f64 rand with one seed agree to f32 precision",
         np.allclose(u[0, :3], dd, rtol=1e-6, atol=0)),
        ("a seed reproduces its numbers", np.array_equal(s5, s5a)),
        ("another seed gives other numbers", not np.any(s5 == s6)),
        ("uniform: mean ~ 1/2, var ~ 1/12",
         abs(ub.mean() - 0.5) < 0.005 and abs(ub.var() - 1 / 12) < 0.002),
        ("normal: mean ~ 0, var ~ 1, skew ~ 0, kurtosis ~ 3",
         abs(nb.mean()) < 0.01 and abs(nb.var() - 1) < 0.02
         and abs(np.mean(nb ** 3)) < 0.05 and abs(np.mean(nb ** 4) - 3) < 0.1),
        ("uniform fills its range evenly (10 bins within 5%)",
         np.all(np.abs(np.histogram(ub, bins=10, range=(0, 1))[0] / 1e4 - 1) < 0.05)),
    ]
    return prints, {}, claims


def check_elementwise(s):
    h = np.array([-2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5])
    p = np.array([0.25, 1, 2, 4])
    t = np.arange(-2, 2.5, 0.5)
    z = np.array([0.0, 1, -1])
    a = np.array([[1.0], [2], [3]])
    bb = np.array([0.5, 1, 2, 4])
    n = np.array([7, -7, 7, -7])
    q = np.array([2, 2, -2, -2])
    iv = np.array([1, 2, 3], dtype=np.int32)
    c = np.array([1, 5, 3])
    e = np.array([2, 5, 1])
    r = d(s["r"])
    with np.errstate(divide="ignore", invalid="ignore"):
        specials = [f32(np.log(z)), f32(1 / z), f32(np.sqrt(z - 0.5))]
    prints = [
        f32(np.floor(h)), f32(np.ceil(h)), f32(np.round(h)),
        f32(np.sign(h)), f32(np.abs(h)), f32(-h),
        f32(np.exp(p)), f32(np.log(p)), f32(np.sqrt(p)), f32(1 / np.sqrt(p)), f32(1 / p),
        f32(np.sin(t)), f32(np.cos(t)), f32(np.tanh(t)),
        f32(sigmoid(t)), f32(relu(t)), f32(t * sigmoid(t)),
        f32(gelu(t)), f32(_erf(t)),
    ] + specials + [
        f32(a + bb), f32(a - bb), f32(a * bb), f32(a / bb),
        f32(a ** bb), f32(np.maximum(a, bb)), f32(np.minimum(a, bb)),
        i64(n // q), i64(n % q), i64(n // q),
        b((n // q) * q + n % q == n),
        f32(np.mod([7.5, -7.5], 2)),
        i32(iv + 1), i64(iv.astype(np.int64) + [10, 20, 30]), f32(iv * 0.5),
        f64(iv + 0.25),
        b(c == e), b(c != e), b(c < e), b(c <= e), b(c > e), b(c >= e),
        b((c > 1) & (e < 5)), b((c == 1) | (e == 1)), b(~(c == e)),
        f32(r), f32(np.where(r > 0, r, 0.1 * r)),
        f32(np.clip(r, -0.5, 0.5)),
        f32(np.minimum(np.maximum(r, [-1, -0.5, 0, 0.5]), 1)),
    ]
    claims = [("round is half to even", list(np.round(h)) == [-2, -2, -0, 0, 0, 2, 2])]
    return prints, {"leaky": f32(np.where(r > 0, r, 0.1 * r))}, claims


def check_reduce(s):
    m = np.arange(1, 13).reshape(3, 4)
    fl = m > 6
    r = d(s["r"])
    ar = np.abs(r)
    mu = r.mean(axis=-1, keepdims=True)
    sd = np.sqrt(r.var(axis=-1, keepdims=True))
    zr = (r - mu) / sd
    prints = [
        i64(m), i64(m.sum()), i64(m.sum(axis=0)), i64(m.sum(axis=1)),
        i64(m.sum(axis=-1, keepdims=True)),
        i64(m.prod(axis=0)), i64(m.max(axis=1)), i64(m.min()),
        f32(m.mean()), f32(m.mean(axis=0)), f32(m.var(axis=1)),
        i64(m.argmax(axis=0)), i64(m.argmin(axis=1)),
        i64(np.argmax([1, 3, 3, 2])), i64(np.argmin([[4, 2, 2], [0, 0, 7]], axis=1)),
        i64(fl.sum()), i64(fl.sum(axis=1)), b(fl.any(axis=1)), b(fl.all(axis=1)),
        f32(r.sum(axis=(0, 2)), scale=ar.sum(axis=(0, 2))),
        f32(r.max(axis=(1, 2))),
        f32(r.mean(), scale=ar.mean()),
        i64(np.argmax(r, axis=1)[:, None, :]),
        f32(zr[:1], scale=(ar + np.abs(mu))[:1] / sd[:1]),
        b(np.max(np.abs(zr.mean(axis=-1))) < 1e-6),
        b(np.max(np.abs(zr.var(axis=-1) - 1)) < 1e-5),
    ]
    return prints, {"zr": f32(zr, scale=(ar + np.abs(mu)) / sd)}, []


def check_movement(s):
    a = np.arange(24).reshape(2, 3, 4)
    col = np.array([1, 2, 3])[:, None]
    x = np.array([[1, 2], [3, 4]])
    y = np.array([[5, 6]])
    v = np.arange(10)
    table = d(s["table"])
    ids = np.array([[1, 3], [9, 0]])
    f = np.array([-1.7, -0.5, 0, 0.5, 2.9], dtype=np.float32)
    prints = [
        i64(a), i64(a.reshape(4, -1)), i64(a.transpose(0, 2, 1)),
        i64(np.arange(6).reshape(2, 3).T),
        i64(np.broadcast_to([[1], [2]], (2, 3))),
        i64(col), i64(col[:, 0]), i64(np.arange(3)),
        i64(np.concatenate([x, y], axis=0)), i64(np.concatenate([x, y.T, y.T], axis=1)),
        i64(v[2:5]), i64(v[-3:]), i64(v[:100:4]),
        i64(v[8:1:-3]), i64(a[:, :, 1:3]),
        i64(np.pad(x, ((1, 0), (0, 2)))), f32(np.pad([1.0, 2], (2, 1), constant_values=-1)),
        f32(table), f32(np.take(table, ids, axis=0)),
        i64(np.take(a, [3, 0], axis=2)),
        i64(a.reshape(2, 12)), i64(a.reshape(-1)),
        i32(np.trunc(f)), b(f != 0), f32((f != 0).astype(np.float32)),
        f64(f.astype(np.float64)),
    ]
    return prints, {"emb": f32(np.take(table, ids, axis=0))}, []


def check_linalg(s):
    u = np.array([1.0, 2, 3])
    w = np.array([4.0, 5, 6])
    m = np.array([[1.0, 2, 3], [4, 5, 6]])
    k = np.arange(6).reshape(2, 3)
    a, bm = d(s["a"]), d(s["b"])
    c, dm = d(s["c"]), d(s["d"])
    p, q = d(s["p"]), d(s["q"])
    ab = a @ bm
    ab_s = np.abs(a) @ np.abs(bm)
    cd = c @ dm
    cd_s = np.abs(c) @ np.abs(dm)
    pq = p @ q
    pq_s = np.abs(p) @ np.abs(q)
    prints = [
        f32(u @ w), f32(m @ np.array([[1.0, 0], [0, 1], [1, 1]])),
        f32(m @ u), f32(np.array([1.0, -1]) @ m),
        i64(k @ k.T), i32(k @ np.ones(3, dtype=np.int64)),
        f32(m @ np.eye(3)),
        f32(ab, scale=ab_s),
        f32(cd[:, :2], scale=cd_s[:, :2]),
        f64(m @ w),
        f32(pq[:2, :5], scale=pq_s[:2, :5]), f32(pq.max(axis=1)[:4]),
    ]
    saved = {"ab": f32(ab, scale=ab_s), "cd": f32(cd, scale=cd_s), "pq": f32(pq, scale=pq_s)}
    claims = [("cd has the broadcast batch shape [2, 5, 3, 2]", cd.shape == (2, 5, 3, 2))]
    return prints, saved, claims


def check_nn(s):
    z = np.array([[1.0, 2, 3], [1, 1, 1]])
    big = np.array([1000.0, 1001, 1002])
    x = d(s["x"])
    g = np.array([1.0, 1, 1, 2, 2, 2])
    beta = np.array([0.0, 0, 0, 0.5, 0.5, 0.5])
    ln = layernorm(x, g, beta)
    mu = x.mean(axis=-1, keepdims=True)
    ln_s = (np.abs(x) + np.abs(mu)) / np.sqrt(x.var(axis=-1, keepdims=True)) * np.abs(g) + np.abs(beta)
    img = np.arange(16.0).reshape(1, 1, 4, 4)
    box = np.ones((1, 1, 3, 3))
    xc, wc = d(s["xc"]), d(s["wc"])
    bc = np.array([0.1, 0.2, 0.3, 0.4])
    yc = conv2d(xc, wc, bc, stride=(2, 1), padding=(1, 0))
    yc_s = conv2d(np.abs(xc), np.abs(wc), np.abs(bc), stride=(2, 1), padding=(1, 0))
    q, k, v = d(s["q"]), d(s["k"]), d(s["v"])
    att = attention(q, k, v)
    catt = attention(q, k, v, causal=True)
    ascale = np.abs(v).max()          # outputs are convex mixes of v's rows
    prints = [
        f32(softmax(z)), f32(softmax(z, axis=0)), f32(log_softmax(z)),
        f32(softmax(big)), f32(log_softmax(big)),
        f32(x), f32(ln, scale=ln_s),
        f32(rmsnorm(x, g)), f32(rmsnorm(x, np.ones(6), eps=0.5)),
        f32(img), f32(conv2d(img, box)), f32(conv2d(img, box, padding=1)),
        f32(conv2d(img, box, [10.0], stride=2, padding=1)),
        f32(yc[:, :2], scale=yc_s[:, :2]),
        f32(maxpool2d(img, 2)), f32(avgpool2d(img, 2)),
        f32(maxpool2d(img, 3, 1)), f32(avgpool2d(img, (1, 4))),
        f32(att[:, :, :3], scale=ascale), f32(catt[:, :, :3], scale=ascale),
        f32(catt[:, :1]), f32(v[:, :1]),
        b(True),                      # attention == its spelled-out formula
    ]
    saved = {"ln": f32(ln, scale=ln_s), "rn": f32(rmsnorm(x, g)),
             "yc": f32(yc, scale=yc_s), "att": f32(att, scale=ascale),
             "catt": f32(catt, scale=ascale)}
    claims = [("causal position 0 is v's row 0", np.allclose(catt[:, 0], v[:, 0])),
              ("causal last position equals unmasked", np.allclose(catt[:, -1], att[:, -1]))]
    return prints, saved, claims


def check_cnn(s):
    x = d(s["x"])
    c1w, c1b, c2w, c2b = d(s["c1w"]), d(s["c1b"]), d(s["c2w"]), d(s["c2b"])
    w3, w4, w5 = d(s["w3"]), d(s["w4"]), d(s["w5"])
    pre1 = conv2d(x, c1w, c1b, padding=2)
    s1 = conv2d(np.abs(x), np.abs(c1w), np.abs(c1b), padding=2)
    h1 = relu(pre1)
    p1 = maxpool2d(h1, 2)
    pre2 = conv2d(p1, c2w, c2b)
    s2 = conv2d(p1, np.abs(c2w), np.abs(c2b))
    h2 = relu(pre2)
    p2 = maxpool2d(h2, 2)
    s2p = maxpool2d(s2, 2)
    f = p2.reshape(4, -1)
    h3 = relu(f @ w3)
    h4 = relu(h3 @ w4)
    logits = h4 @ w5
    probs = softmax(logits)
    prints = [
        f32(h1[:1], scale=s1[:1]),
        f32(f, scale=s2p.reshape(4, -1)),
        f32(probs), i64(probs.argmax(axis=1)), f32(probs.max(axis=1)),
    ]
    saved = {"h1": f32(h1, scale=s1), "f": f32(f, scale=s2p.reshape(4, -1)),
             "logits": f32(logits, scale=rms(logits)), "probs": f32(probs)}
    claims = [("shapes: h1 [4,6,28,28], p1 [4,6,14,14], h2 [4,16,10,10], f [4,400]",
               h1.shape == (4, 6, 28, 28) and p1.shape == (4, 6, 14, 14)
               and h2.shape == (4, 16, 10, 10) and f.shape == (4, 400))]
    return prints, saved, claims


def check_attention(s):
    x = d(s["x"])
    g = {n: d(s[n]) for n in ("ln1_w", "ln1_b", "ln2_w", "ln2_b", "wq", "wk", "wv",
                              "wo", "w1", "b1", "w2", "b2")}
    h = layernorm(x, g["ln1_w"], g["ln1_b"])
    q, k, v = heads(h @ g["wq"]), heads(h @ g["wk"]), heads(h @ g["wv"])
    a = attention(q, k, v, causal=True)
    merged = a.transpose(0, 2, 1, 3).reshape(2, 16, 32)
    x1 = x + merged @ g["wo"]
    h2 = layernorm(x1, g["ln2_w"], g["ln2_b"])
    out = x1 + gelu(h2 @ g["w1"] + g["b1"]) @ g["w2"] + g["b2"]
    last = out[:1, -3:]
    sc = rms(out)
    prints = [
        f32(out, scale=sc),
        b(np.max(np.abs(a[:, :, :1] - v[:, :, :1])) < 1e-6),
        f32(last.mean(axis=-1), scale=sc), f32(last.var(axis=-1)),
    ]
    saved = {"a": f32(a, scale=rms(a)), "x1": f32(x1, scale=rms(x1)), "out": f32(out, scale=sc)}
    claims = [("the first token's head outputs are its value vectors",
               np.allclose(a[:, :, 0], v[:, :, 0])),
              ("the output is not dominated by the residual (attention and MLP matter)",
               rms(out - x) > 0.3 * rms(x))]
    return prints, saved, claims


def read_bf16_ckpt(path):
    """A .safetensors file of BF16 and I64 tensors: name -> float64 / int64."""
    import json
    import struct
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for k, v in json.loads(raw[8:8 + n]).items():
        if k == "__metadata__":
            continue
        a, e = v["data_offsets"]
        body = raw[8 + n + a:8 + n + e]
        if v["dtype"] == "BF16":
            bits = np.frombuffer(body, np.uint16).astype(np.uint32) << 16
            out[k] = bits.view(np.float32).astype(np.float64).reshape(v["shape"])
        else:
            out[k] = np.frombuffer(body, np.int64).reshape(v["shape"])
    return out


def check_gpt2(s):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    path = os.path.join(root, "samples", "gpt2.safetensors")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpt2_ckpt
    with tempfile.TemporaryDirectory() as t:
        gpt2_ckpt.write(os.path.join(t, "g.safetensors"))
        same_file = open(os.path.join(t, "g.safetensors"), "rb").read() == open(path, "rb").read()
    w = read_bf16_ckpt(path)
    x = w["wte.weight"][w["tokens"]] + w["wpe.weight"]
    for i in range(12):
        g = {k[len("h.%d." % i):]: v for k, v in w.items() if k.startswith("h.%d." % i)}
        h = layernorm(x, g["ln_1.weight"], g["ln_1.bias"])
        qkv = h @ g["attn.c_attn.weight"] + g["attn.c_attn.bias"]
        q, k, v = (qkv[:, j * 32:(j + 1) * 32].reshape(16, 4, 8).transpose(1, 0, 2) for j in range(3))
        a = attention(q, k, v, causal=True).transpose(1, 0, 2).reshape(16, 32)
        x = x + a @ g["attn.c_proj.weight"] + g["attn.c_proj.bias"]
        h = layernorm(x, g["ln_2.weight"], g["ln_2.bias"])
        x = x + gelu(h @ g["mlp.c_fc.weight"] + g["mlp.c_fc.bias"]) @ g["mlp.c_proj.weight"] + \
            g["mlp.c_proj.bias"]
    x = layernorm(x, w["ln_f.weight"], w["ln_f.bias"])
    logits = x @ w["wte.weight"].T
    top2 = np.sort(logits, axis=1)[:, -2:]
    prints = [i64(w["tokens"]), i64(logits.argmax(axis=1)), f32(logits[-1:], scale=rms(logits))]
    claims = [("samples/gpt2.safetensors is what tests/oracle/gpt2_ckpt.py writes", same_file),
              ("every next token wins by more than f32 noise (so argmax is well defined)",
               bool((top2[:, 1] - top2[:, 0] > 1e-3).all()))]
    return prints, {"logits": f32(logits, scale=rms(logits))}, claims


SAMPLES = {
    "gpt2": (["logits"], check_gpt2),
    "mlp": (["x", "w1", "w2", "h", "y"], check_mlp),
    "creation": (["u", "n", "d", "s5", "s5_again", "s6", "ub", "nb"], check_creation),
    "elementwise": (["r", "leaky"], check_elementwise),
    "reduce": (["r", "zr"], check_reduce),
    "movement": (["table", "emb"], check_movement),
    "linalg": (["a", "b", "c", "d", "p", "q", "ab", "cd", "pq"], check_linalg),
    "nn": (["x", "ln", "rn", "xc", "wc", "yc", "q", "k", "v", "att", "catt"], check_nn),
    "cnn": (["x", "c1w", "c1b", "c2w", "c2b", "w3", "w4", "w5", "h1", "f", "logits",
             "probs"], check_cnn),
    "attention": (["x", "ln1_w", "ln1_b", "ln2_w", "ln2_b", "wq", "wk", "wv", "wo",
                   "w1", "b1", "w2", "b2", "a", "x1", "out"], check_attention),
}


# ---- reading tir's stdout ----

HEADER = re.compile(r"^(.*): (f32|f64|i32|i64|bool)\[([0-9, ]*)\]$")
TOKEN = re.compile(r"\.\.\.|-?inf|nan|true|false|[-+0-9.eE]+")


def parse_blocks(text):
    """stdout -> [(label, dtype, shape, [token, ...])]"""
    blocks = []
    for line in text.splitlines():
        mh = HEADER.match(line)
        if mh:                      # a data line never holds ": "
            shape = tuple(int(t) for t in mh.group(3).split(",") if t.strip())
            blocks.append((mh.group(1), mh.group(2), shape, []))
        elif blocks:
            blocks[-1][3].extend(TOKEN.findall(line))
        elif line.strip():
            raise ValueError("text before the first header: %r" % line)
    return blocks


def shown(shape):
    """The index arrays of the elements a (possibly summarized) print shows."""
    size = int(np.prod(shape)) if shape else 1
    cut = size > SUMMARY
    return [np.r_[0:EDGE, n - EDGE:n] if cut and n > 2 * EDGE else np.arange(n)
            for n in shape], cut


def token_value(tok):
    if tok == "true":
        return 1.0
    if tok == "false":
        return 0.0
    return float(tok)


def print_slack(got):
    """Half a unit of the last of PRECISION significant digits."""
    with np.errstate(divide="ignore"):
        ex = np.floor(np.log10(np.where(got == 0, 1, np.abs(got))))
    return np.where(np.isfinite(got), 0.5 * 10.0 ** (ex - (PRECISION - 1)), 0)


def compare(got, want, dtype, scale, printed):
    """Indices where got (a float64 array) misses want, or None.  scale is
    None or a float64 array of want's shape."""
    if dtype in ("f32", "f64"):
        want = want.astype(np.float64)
        if scale is None:
            scale = np.zeros_like(want)
        tol = RTOL * np.maximum(np.abs(want), scale)
        if printed:
            tol = tol + print_slack(got)
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = (np.abs(got - want) <= tol) | (np.isnan(got) & np.isnan(want)) | (got == want)
            ratio = np.where(np.isfinite(want) & (got != want), np.abs(got - want) / tol, 0)
        if ratio.size:
            WORST[0] = max(WORST[0], float(np.nanmax(ratio)))
    else:
        ok = got == want.astype(np.float64)
    bad = np.argwhere(~ok)
    return bad if len(bad) else None


def describe_bad(bad, got, want, idx=None):
    i = tuple(bad[0])
    where = tuple(int(ix[j]) for ix, j in zip(idx, i)) if idx is not None else i
    return "at %s: got %r, expected %r (%d element(s) off)" % (
        list(where), float(got[i]), float(np.asarray(want, dtype=np.float64)[i]), len(bad))


def check_block(blk, exp):
    label, dtype, shape, toks = blk
    if dtype != exp.dtype or shape != exp.value.shape:
        return "%s: type %s%s, expected %s%s" % (label, dtype, list(shape), exp.dtype,
                                                 list(exp.value.shape))
    idx, cut = shown(shape)
    if cut != ("..." in toks):
        return "%s: summarized=%s, expected %s" % (label, "..." in toks, cut)
    vals = [t for t in toks if t != "..."]
    if dtype == "bool" and any(t not in ("true", "false") for t in vals):
        return "%s: a bool block with %r" % (label, vals)
    want_shown = exp.value[np.ix_(*idx)] if shape else exp.value
    if len(vals) != want_shown.size:
        return "%s: %d numbers printed, expected %d" % (label, len(vals), want_shown.size)
    got = np.array([token_value(t) for t in vals], dtype=np.float64).reshape(want_shown.shape)
    sc = exp.scale_array()
    if sc is not None and shape:
        sc = sc[np.ix_(*idx)]
    bad = compare(got, want_shown, exp.dtype, sc, printed=True)
    if bad is not None:
        return "%s: %s" % (label, describe_bad(bad, got, want_shown, idx if shape else None))
    return None


def check_saved(name, arr, exp):
    dt = {v: k for k, v in NP_DTYPE.items()}.get(arr.dtype.type)
    if dt != exp.dtype or arr.shape != exp.value.shape:
        return "saved %s: %s%s, expected %s%s" % (name, dt, list(arr.shape), exp.dtype,
                                                 list(exp.value.shape))
    got = arr.astype(np.float64)
    bad = compare(got, exp.value, exp.dtype, exp.scale_array(), printed=False)
    if bad is not None:
        return "saved %s: %s" % (name, describe_bad(bad, got, exp.value))
    return None


def run_sample(tir, root, name, tmp):
    saves, fn = SAMPLES[name]
    src = os.path.join(root, "samples", name + ".tir")
    cmd = [tir, "run", "--quiet", src]
    for n in saves:
        cmd += ["--save", "%s=%s" % (n, os.path.join(tmp, name + "." + n + ".npy"))]
    try:
        pr = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return ["tir timed out"]
    if pr.returncode != 0:
        return ["tir exited %d: %s" % (pr.returncode, pr.stderr.strip()[:500])]
    saved = {n: np.load(os.path.join(tmp, name + "." + n + ".npy")) for n in saves}
    prints, want_saved, claims = fn(saved)
    errs = []
    try:
        blocks = parse_blocks(pr.stdout)
    except ValueError as e:
        return [str(e)]
    if len(blocks) != len(prints):
        errs.append("%d blocks printed, the check expects %d" % (len(blocks), len(prints)))
    for blk, exp in zip(blocks, prints):
        e = check_block(blk, exp)
        if e:
            errs.append(e)
    for n, exp in want_saved.items():
        e = check_saved(n, saved[n], exp)
        if e:
            errs.append(e)
    for what, ok in claims:
        if not ok:
            errs.append("claim does not hold: " + what)
    return errs


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    tir = os.path.join(root, os.environ.get("BUILD", "build"), "tir")
    names = []
    verbose = False
    i = 0
    while i < len(argv):
        if argv[i] == "-v":
            verbose = True
            i += 1
            continue
        if argv[i] == "--tir" and i + 1 < len(argv):
            tir = argv[i + 1]
            i += 2
            continue
        if argv[i].startswith("-"):
            print(__doc__.strip().splitlines()[2], file=sys.stderr)
            return 2
        names.append(argv[i])
        i += 1
    if not names:
        names = sorted(SAMPLES)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tir-samples-") as tmp:
        for name in names:
            if name not in SAMPLES:
                print("%s: FAILED: no NumPy check for this sample in samples_check.py" % name)
                failed += 1
                continue
            WORST[0] = 0.0
            errs = run_sample(tir, root, name, tmp)
            if verbose:
                print("%s: the worst float is %.3g of its tolerance" % (name, WORST[0]))
            if errs:
                print("%s: FAILED" % name)
                for e in errs[:8]:
                    print("    " + e)
                if len(errs) > 8:
                    print("    ... and %d more" % (len(errs) - 8))
                failed += 1
            else:
                print("%s: ok" % name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
