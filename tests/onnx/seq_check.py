#!/usr/bin/python3
"""seq_check.py — the ONNX importer's sequence and index ops (RNN, GRU,
LSTM, GatherND, ScatterND, ScatterElements, ReverseSequence,
BatchNormalization in training mode) on models made here with
python3-onnx's helpers, in the variants ONNX's own suite does not cover
(reverse and bidirectional, sequence_lens, clip, other activations,
linear_before_reset, input_forget, batch_dims, reductions), each output
checked against a NumPy reference written from ONNX's operator spec; bad
indices must fail with a clear run-time error.  Prints one line per failure
and "N passed, M failed" last.

  seq_check.py --tir build/tir
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

R = np.random.default_rng(24)
PASS = 0
FAIL = 0


def bad(msg):
    global FAIL
    FAIL += 1
    print("seq_check: " + msg)


def good():
    global PASS
    PASS += 1


ONNX_T = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32,
          np.float64: TensorProto.DOUBLE}


def model(tmp, name, node, ins, outs, opset):
    """a one-node model: ins {name: array} are graph inputs, outs {name: shape-less float}"""
    vi = [helper.make_tensor_value_info(n, ONNX_T[a.dtype.type], list(a.shape)) for n, a in ins.items()]
    vo = [helper.make_tensor_value_info(n, t, None) for n, t in outs]
    g = helper.make_graph([node], name, vi, vo)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="seq_check")
    path = os.path.join(tmp, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def run(tir, tmp, name, node, ins, expect, opset=14, tol=1e-5):
    """import and run the node's model; compare each output with expect {name: array}"""
    outs = [(n, ONNX_T[a.dtype.type]) for n, a in expect.items()]
    path = model(tmp, name, node, ins, outs, opset)
    args = [tir, "run", path, "--quiet"]
    for n, a in ins.items():
        f = os.path.join(tmp, "%s_%s.npy" % (name, n))
        np.save(f, a)
        args += ["--input", "%s=%s" % (n, f)]
    for n in expect:
        args += ["--save", "%s=%s" % (n, os.path.join(tmp, "%s_out_%s.npy" % (name, n)))]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return bad("%s: tir run failed: %s" % (name, r.stderr.strip()[:300]))
    for n, want in expect.items():
        got = np.load(os.path.join(tmp, "%s_out_%s.npy" % (name, n)))
        if got.shape != want.shape or got.dtype != want.dtype:
            return bad("%s: %s is %s%s, expected %s%s" % (name, n, got.dtype, got.shape, want.dtype, want.shape))
        if not np.allclose(got, want, rtol=tol, atol=tol):
            return bad("%s: %s differs by up to %g" % (name, n, np.max(np.abs(got - want))))
    good()


def run_error(tir, tmp, name, node, ins, outs, pattern, opset=14):
    """the model runs and fails with an error matching pattern (no crash)"""
    path = model(tmp, name, node, ins, [(n, t) for n, t in outs], opset)
    args = [tir, "run", path, "--quiet"]
    for n, a in ins.items():
        f = os.path.join(tmp, "%s_%s.npy" % (name, n))
        np.save(f, a)
        args += ["--input", "%s=%s" % (n, f)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode == 1 and re.search(pattern, r.stderr):
        return good()
    bad("%s: status %d, stderr %r (expected /%s/)" % (name, r.returncode, r.stderr.strip()[:300], pattern))


# ---- NumPy references, from ONNX's operator spec ----

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACT = {
    "Tanh": lambda x, a, b: np.tanh(x), "Sigmoid": lambda x, a, b: sigmoid(x),
    "Relu": lambda x, a, b: np.maximum(x, 0), "Affine": lambda x, a, b: a * x + b,
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x), "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1), "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
}


def recurrent(cell, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", acts=None,
              alphas=(), betas=(), clip=None, lbr=0, input_forget=0, layout=0):
    """Y, Y_h (and Y_c for LSTM) as ONNX defines RNN, GRU, LSTM"""
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    S, B, _ = x.shape
    D, GH, H = r.shape
    G = GH // H
    per = {"rnn": 1, "gru": 2, "lstm": 3}[cell]
    acts = acts or {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}[cell] * D
    params, ka, kb = [], 0, 0
    for a in acts:  # parameters taken in order by the activations that have them
        al = be = None
        if a in ("Affine", "LeakyRelu", "ScaledTanh", "HardSigmoid"):
            al = alphas[ka] if ka < len(alphas) else {"LeakyRelu": 0.01, "HardSigmoid": 0.2}.get(a, 1.0)
            ka += 1
        if a in ("Affine", "ScaledTanh", "HardSigmoid"):
            be = betas[kb] if kb < len(betas) else {"HardSigmoid": 0.5, "Affine": 0.0}.get(a, 1.0)
            kb += 1
        params.append((a, al, be))

    def f(k, v, clipped=True):
        if clip is not None and clipped:
            v = np.clip(v, -clip, clip)
        a, al, be = params[k]
        return ACT[a](v, al, be)

    lens = np.full(B, S) if lens is None else lens
    Y = np.zeros((S, D, B, H), np.float32)
    Yh = np.zeros((D, B, H), np.float32)
    Yc = np.zeros((D, B, H), np.float32)
    for d in range(D):
        back = d == 1 or direction == "reverse"
        W, Rm = w[d], r[d]
        Wb, Rb = (b[d][:GH], b[d][GH:]) if b is not None else (np.zeros(GH, np.float32), np.zeros(GH, np.float32))
        for bi in range(B):
            h = h0[d, bi] if h0 is not None else np.zeros(H, np.float32)
            c = c0[d, bi] if c0 is not None else np.zeros(H, np.float32)
            L = int(lens[bi])
            steps = range(L - 1, -1, -1) if back else range(L)
            for t in steps:
                xt = x[t, bi]
                k0 = d * per
                if cell == "rnn":
                    h = f(k0, W @ xt + Rm @ h + Wb + Rb)
                elif cell == "gru":
                    z = f(k0, W[:H] @ xt + Rm[:H] @ h + Wb[:H] + Rb[:H])
                    rr = f(k0, W[H:2 * H] @ xt + Rm[H:2 * H] @ h + Wb[H:2 * H] + Rb[H:2 * H])
                    if lbr:
                        hh = f(k0 + 1, W[2 * H:] @ xt + rr * (Rm[2 * H:] @ h + Rb[2 * H:]) + Wb[2 * H:])
                    else:
                        hh = f(k0 + 1, W[2 * H:] @ xt + Rm[2 * H:] @ (rr * h) + Rb[2 * H:] + Wb[2 * H:])
                    h = (1 - z) * hh + z * h
                else:
                    pi, po, pf = (p[d][:H], p[d][H:2 * H], p[d][2 * H:]) if p is not None else (0, 0, 0)
                    gts = W @ xt + Rm @ h + Wb + Rb
                    i = f(k0, gts[:H] + pi * c)
                    fg = 1 - i if input_forget else f(k0, gts[2 * H:3 * H] + pf * c)
                    cc = f(k0 + 1, gts[3 * H:])
                    c = fg * c + i * cc
                    o = f(k0, gts[H:2 * H] + po * c)
                    h = o * f(k0 + 2, c, clipped=False)
                Y[t, d, bi] = h
            Yh[d, bi] = h
            Yc[d, bi] = c
    if layout:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


def f32(*shape, scale=0.5):
    return (R.standard_normal(shape) * scale).astype(np.float32)


def recurrent_cases(tir, tmp):
    S, B, I, H = 5, 3, 4, 3
    cases = [
        ("rnn_reverse", "rnn", dict(direction="reverse"), dict()),
        ("rnn_bidir_relu", "rnn", dict(direction="bidirectional", activations=["Relu", "Tanh"]), dict(acts=["Relu", "Tanh"])),
        ("rnn_lens_h0", "rnn", dict(direction="bidirectional"), dict(lens=True, h0=True)),
        ("rnn_affine_clip", "rnn", dict(activations=["Affine"], activation_alpha=[0.5], activation_beta=[0.1], clip=0.4),
         dict(acts=["Affine"], alphas=(0.5,), betas=(0.1,), clip=0.4)),
        ("gru_lbr_bias", "gru", dict(linear_before_reset=1), dict(bias=True, lbr=1)),
        ("gru_bidir_lens", "gru", dict(direction="bidirectional"), dict(bias=True, lens=True, h0=True)),
        ("gru_reverse_layout", "gru", dict(direction="reverse", layout=1), dict(bias=True, h0=True, layout=1)),
        ("gru_acts", "gru", dict(activations=["HardSigmoid", "ScaledTanh"], activation_alpha=[0.3, 0.9],
                                 activation_beta=[0.4, 1.2]),
         dict(acts=["HardSigmoid", "ScaledTanh"], alphas=(0.3, 0.9), betas=(0.4, 1.2))),
        ("lstm_bidir_all", "lstm", dict(direction="bidirectional"), dict(bias=True, lens=True, h0=True, c0=True, p=True)),
        ("lstm_reverse_clip", "lstm", dict(direction="reverse", clip=0.3), dict(bias=True, clip=0.3, p=True)),
        ("lstm_input_forget_layout", "lstm", dict(input_forget=1, layout=1), dict(bias=True, h0=True, c0=True, layout=1, input_forget=1)),
        ("lstm_acts", "lstm", dict(activations=["Sigmoid", "Softsign", "LeakyRelu"], activation_alpha=[0.2]),
         dict(acts=["Sigmoid", "Softsign", "LeakyRelu"], alphas=(0.2,))),
    ]
    for name, cell, attrs, opt in cases:
        G = {"rnn": 1, "gru": 3, "lstm": 4}[cell]
        D = 2 if attrs.get("direction") == "bidirectional" else 1
        layout = opt.get("layout", 0)
        x = f32(*((B, S, I) if layout else (S, B, I)), scale=1.0)
        w, r = f32(D, G * H, I), f32(D, G * H, H)
        ins = {"X": x, "W": w, "R": r}
        names = ["X", "W", "R", "", "", "", "", ""]
        ref = dict(direction=attrs.get("direction", "forward"), acts=opt.get("acts"), alphas=opt.get("alphas", ()),
                   betas=opt.get("betas", ()), clip=opt.get("clip"), lbr=opt.get("lbr", 0),
                   input_forget=opt.get("input_forget", 0), layout=layout)
        if opt.get("bias"):
            ins["B"] = ref["b"] = f32(D, 2 * G * H)
            names[3] = "B"
        if opt.get("lens"):
            ins["L"] = ref["lens"] = np.array([S, 2, 4][:B], np.int32)
            names[4] = "L"
        hs = (B, D, H) if layout else (D, B, H)
        if opt.get("h0"):
            ins["H0"] = ref["h0"] = f32(*hs)
            names[5] = "H0"
        if opt.get("c0"):
            ins["C0"] = ref["c0"] = f32(*hs)
            names[6] = "C0"
        if opt.get("p"):
            ins["P"] = ref["p"] = f32(D, 3 * H)
            names[7] = "P"
        while names[-1] == "":
            names.pop()
        outs = ["Y", "Y_h"] + (["Y_c"] if cell == "lstm" else [])
        node = helper.make_node(cell.upper(), names, outs, hidden_size=H, **attrs)
        y, yh, yc = recurrent(cell, x, w, r, **ref)
        exp = {"Y": y, "Y_h": yh}
        if cell == "lstm":
            exp["Y_c"] = yc
        run(tir, tmp, name, node, ins, exp)


# ---- indices ----

def gathernd_ref(x, idx, bd):
    out = []
    bshape = idx.shape[:bd]
    xb = x.reshape((-1,) + x.shape[bd:])
    ib = idx.reshape((-1,) + idx.shape[bd:])
    for k in range(xb.shape[0]):
        t = ib[k].reshape(-1, idx.shape[-1])
        out.append(np.stack([xb[k][tuple(int(v) for v in tt)] for tt in t]))
    o = np.stack(out)
    return o.reshape(bshape + idx.shape[bd:-1] + x.shape[bd + idx.shape[-1]:])


def scatter_elements_ref(x, idx, upd, axis, red="none"):
    y = x.copy()
    for pos in np.ndindex(*idx.shape):
        at = list(pos)
        at[axis] = int(idx[pos])
        at = tuple(at)
        y[at] = {"none": upd[pos], "add": y[at] + upd[pos], "mul": y[at] * upd[pos]}[red]
    return y


def index_cases(tir, tmp):
    x = f32(2, 3, 4, 5)
    idx = np.array([[[1, -1], [0, 2]], [[1, 2], [-2, 0]]], np.int64)  # [2, 2, 2]
    run(tir, tmp, "gathernd_k2", helper.make_node("GatherND", ["x", "i"], ["y"]), {"x": x, "i": idx},
        {"y": gathernd_ref(x, idx, 0)}, opset=13)
    idx = np.array([[[1, -1]], [[2, 3]]], np.int64)  # batch 2, then [1, 2] tuples over axes 1, 2
    run(tir, tmp, "gathernd_batch1", helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1),
        {"x": x, "i": idx}, {"y": gathernd_ref(x, idx, 1)}, opset=13)
    x2 = f32(2, 3, 4)
    idx = np.array([[[1], [3]], [[0], [2]], [[3], [3]]], np.int64).transpose(1, 0, 2).reshape(2, 3, 1)
    run(tir, tmp, "gathernd_batch2", helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2),
        {"x": x2, "i": np.ascontiguousarray(idx)}, {"y": gathernd_ref(x2, idx, 2)}, opset=13)
    run_error(tir, tmp, "gathernd_out_of_range", helper.make_node("GatherND", ["x", "i"], ["y"]),
              {"x": x, "i": np.array([[0, 3]], np.int64)}, [("y", TensorProto.FLOAT)], r"out of range", opset=13)

    d = f32(3, 4)
    i = np.array([[0, -1, 2, 1], [2, 0, -3, 0]], np.int64)
    u = f32(2, 4)
    for red in ["none", "add", "mul"]:
        kw = {} if red == "none" else {"reduction": red}
        for axis in [0, 1, -1]:
            ii = i if axis == 0 else np.array([[0, -1], [3, 1], [-4, 2]], np.int64)
            uu = u if axis == 0 else f32(3, 2)
            run(tir, tmp, "scatter_elements_%s_%d" % (red, axis),
                helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, **kw),
                {"x": d, "i": ii, "u": uu}, {"y": scatter_elements_ref(d, ii, uu, axis % 2, red)}, opset=16)
    run_error(tir, tmp, "scatter_elements_out_of_range", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1),
              {"x": d, "i": np.array([[0, 4]], np.int64), "u": f32(1, 2)}, [("y", TensorProto.FLOAT)],
              r"scatter_nd: index 4 is out of range for axis 1 of size 4", opset=16)
    x3 = f32(4, 3, 2)
    i3 = np.array([[1, 2], [1, 2], [-1, 0]], np.int64)
    u3 = f32(3, 2)
    want = x3.copy()
    for t, b in zip(i3, u3):
        want[tuple(t)] += b
    run(tir, tmp, "scatternd_add_dup", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add"),
        {"x": x3, "i": i3, "u": u3}, {"y": want}, opset=16)
    run_error(tir, tmp, "scatternd_out_of_range", helper.make_node("ScatterND", ["x", "i", "u"], ["y"]),
              {"x": x3, "i": np.array([[4]], np.int64), "u": f32(1, 3, 2)}, [("y", TensorProto.FLOAT)],
              r"scatter_nd: index 4 is out of range for axis 0 of size 4", opset=16)

    # ReverseSequence on rank 3, both axis orders
    xs = f32(4, 3, 2)
    for ta, ba in [(0, 1), (1, 0)]:
        lens = np.array([4, 1, 2] if ba == 1 else [3, 1, 2, 3], np.int64)
        want = xs.copy()
        for b_, L in enumerate(lens):
            if ba == 1:
                want[:L, b_] = xs[:L, b_][::-1]
            else:
                want[b_, :L] = xs[b_, :L][::-1]
        run(tir, tmp, "reversesequence_t%d" % ta,
            helper.make_node("ReverseSequence", ["x", "l"], ["y"], time_axis=ta, batch_axis=ba),
            {"x": xs, "l": lens}, {"y": want}, opset=10)

    # BatchNormalization, training mode, rank 3 and a momentum
    x = f32(4, 3, 5, scale=2.0)
    s, bb, m, v = f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5
    mu, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    y = (x - mu[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) * s[None, :, None] + bb[None, :, None]
    run(tir, tmp, "batchnorm_training",
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                         momentum=0.7, epsilon=1e-3),
        {"x": x, "s": s, "b": bb, "m": m, "v": v},
        {"y": y.astype(np.float32), "rm": (m * 0.7 + mu * 0.3).astype(np.float32),
         "rv": (v * 0.7 + var * 0.3).astype(np.float32)}, opset=15)


def import_error(tir, tmp, name, node, ins, pattern, opset=14):
    """the model is refused at import with a message matching pattern"""
    path = model(tmp, name, node, ins, [("y", TensorProto.FLOAT)], opset)
    r = subprocess.run([tir, "import", path, "-o", os.path.join(tmp, name + ".tir")], capture_output=True,
                       text=True, timeout=60)
    if r.returncode == 1 and re.search(pattern, r.stderr):
        return good()
    bad("%s: status %d, stderr %r (expected /%s/)" % (name, r.returncode, r.stderr.strip()[:300], pattern))


def refused_cases(tir, tmp):
    x, w, r = f32(5, 2, 4), f32(1, 12, 4), f32(1, 12, 3)
    import_error(tir, tmp, "lstm_bad_w", helper.make_node("LSTM", ["X", "W", "R"], ["", "y"], hidden_size=4),
                 {"X": x, "W": w, "R": r}, r"W, R or hidden_size 4 do not fit X")
    import_error(tir, tmp, "lstm_bad_act", helper.make_node("LSTM", ["X", "W", "R"], ["", "y"], hidden_size=3,
                                                             activations=["Sigmoid", "Tanh", "Swish"]),
                 {"X": x, "W": w, "R": r}, r"activation 'Swish' is not supported")
    import_error(tir, tmp, "lstm_act_count", helper.make_node("LSTM", ["X", "W", "R"], ["", "y"], hidden_size=3,
                                                               activations=["Sigmoid"]),
                 {"X": x, "W": w, "R": r}, r"1 activations, expected 3")
    import_error(tir, tmp, "gru_bad_h0", helper.make_node("GRU", ["X", "W", "R", "", "", "H"], ["", "y"], hidden_size=3),
                 {"X": x, "W": f32(1, 9, 4), "R": f32(1, 9, 3), "H": f32(1, 3, 3)}, r"initial_h must be \[1, 2, 3\]")
    import_error(tir, tmp, "rnn_direction", helper.make_node("RNN", ["X", "W", "R"], ["", "y"], hidden_size=3,
                                                              direction="sideways"),
                 {"X": x, "W": f32(1, 3, 4), "R": f32(1, 3, 3)}, r"direction 'sideways'")
    import_error(tir, tmp, "gathernd_rank", helper.make_node("GatherND", ["x", "i"], ["y"]),
                 {"x": f32(2, 3), "i": np.zeros((1, 3), np.int64)}, r"indices' last axis 3 for data of rank 2",
                 opset=13)
    import_error(tir, tmp, "scatter_elements_shape", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"]),
                 {"x": f32(2, 3), "i": np.zeros((1, 3), np.int64), "u": f32(1, 2)},
                 r"indices and updates must have one shape", opset=16)
    run_error(tir, tmp, "reversesequence_long", helper.make_node("ReverseSequence", ["x", "l"], ["y"], time_axis=0,
                                                                  batch_axis=1),
              {"x": f32(3, 2), "l": np.array([4, 1], np.int64)}, [("y", TensorProto.FLOAT)], r"out of range",
              opset=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tir", default="build/tir")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tir-seq-") as tmp:
        recurrent_cases(a.tir, tmp)
        index_cases(a.tir, tmp)
        refused_cases(a.tir, tmp)
    print("%d passed, %d failed" % (PASS, FAIL))
    return 1 if FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
