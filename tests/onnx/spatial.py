#!/usr/bin/python3
"""tests/onnx/spatial.py — the ONNX importer's spatial ops checked against
references: Resize and Upsample against ONNX's own (the generator of its
node tests, onnx.backend.test.case.node.resize) on inputs larger than the
suite's; Einsum with '...' and RoiAlign against NumPy; 3-D Conv and
ConvTranspose, 3-D, dilated and 1-D pools, MaxPool's Indices, MaxUnpool
and GridSample against PyTorch (when installed); a Conv bias of +0.0s
left out at import (the same bytes), one with a -0.0 kept; bad attributes refused
with a message, never a crash.  Prints "ok NAME" or "bad NAME: WHY" per
case (tests/suites/onnx_spatial.sh counts them).

  spatial.py --tir build/tir --dir TMPDIR
"""
import argparse
import os
import subprocess

import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, cubic_coeffs, nearest_coeffs

ap = argparse.ArgumentParser()
ap.add_argument("--tir", required=True)
ap.add_argument("--dir", required=True)
args = ap.parse_args()
tir = args.tir
n = 0


def model(node, inputs, opset, inits=(), outs=("y",)):
    global n
    n += 1
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    d = os.path.join(args.dir, "c%d" % n)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, d + "/m.onnx")
    cmd = [tir, "run", d + "/m.onnx", "--quiet"]
    for o in outs:
        cmd += ["--save", "%s=%s/%s.npy" % (o, d, o)]
    for k, a in inputs.items():
        np.save(d + "/%s.npy" % k, a)
        cmd += ["--input", "%s=%s/%s.npy" % (k, d, k)]
    desc = "%s%s" % (node.op_type, [(a.name, helper.get_attribute_value(a)) for a in node.attribute])
    return d, cmd, desc.replace(" ", "")


def run(node, inputs, exp, opset=13, inits=(), rtol=1e-4):
    """exp: y's expected value, or a dict of each output's"""
    outs = exp if isinstance(exp, dict) else {"y": exp}
    d, cmd, desc = model(node, inputs, opset, inits, tuple(outs))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode:
        print("bad %s: tir run failed: %s" % (desc, r.stderr.strip()[:300]))
        return
    for o, e in outs.items():
        got = np.load("%s/%s.npy" % (d, o))
        if got.shape != e.shape or got.dtype != e.dtype or not np.allclose(got, e, rtol=rtol, atol=1e-5):
            print("bad %s: %s %s %s differs from the reference's %s %s" % (desc, o, got.shape, got.dtype, e.shape,
                                                                        e.dtype))
            return
    print("ok %s" % desc)


def refused(node, inputs, want, opset=13, inits=()):
    d, cmd, desc = model(node, inputs, opset, inits)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode == 1 and want in r.stderr and "Traceback" not in r.stderr:
        print("ok refused %s" % desc)
    else:
        print("bad refused %s: exit %d, %s" % (desc, r.returncode, r.stderr.strip()[:300]))


rng = np.random.default_rng(0)

# Resize: every mode and coordinate mode, by scales and by sizes (more
# than 64 positions on an axis: its constants go to the weights file)
x = rng.standard_normal((1, 2, 5, 66)).astype(np.float32)
for mode, coeffs in [("nearest", nearest_coeffs), ("linear", linear_coeffs), ("cubic", cubic_coeffs)]:
    for ctm in ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]:
        for sizes in ([1, 2, 7, 70], [1, 2, 3, 31]):
            exp = interpolate_nd(x, coeffs, output_size=np.array(sizes),
                                 coordinate_transformation_mode=ctm).astype(np.float32)
            s = numpy_helper.from_array(np.array(sizes, dtype=np.int64), "sizes")
            run(helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                                 coordinate_transformation_mode=ctm), {"x": x}, exp, inits=[s])
for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
    scales = np.array([1, 1, 1.7, 1.05], dtype=np.float32)
    exp = interpolate_nd(x, lambda r: nearest_coeffs(r, mode=nm), scale_factors=scales).astype(np.float32)
    run(helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest", nearest_mode=nm), {"x": x}, exp,
        inits=[numpy_helper.from_array(scales, "scales")])
scales = np.array([1, 1, 2.5, 0.8], dtype=np.float32)
exp = interpolate_nd(x, lambda r: cubic_coeffs(r, A=-0.5), scale_factors=scales,
                     exclude_outside=True).astype(np.float32)
run(helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
    {"x": x}, exp, inits=[numpy_helper.from_array(scales, "scales")])
roi = np.array([0, 0, -0.2, 0.3, 1, 1, 1.3, 0.9], dtype=np.float32)
exp = interpolate_nd(x, linear_coeffs, output_size=np.array([1, 2, 6, 67]), roi=roi,
                     coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0).astype(np.float32)
run(helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                     coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0), {"x": x}, exp,
    inits=[numpy_helper.from_array(roi, "roi"), numpy_helper.from_array(np.array([1, 2, 6, 67], dtype=np.int64), "sizes")])
exp = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
run(helper.make_node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 3.0]), {"x": x}, exp, opset=7)
run(helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest"), {"x": x}, exp, opset=9,
    inits=[numpy_helper.from_array(np.array([1, 1, 2, 3], dtype=np.float32), "s")])
refused(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="bogus"), {"x": x}, "mode 'bogus'",
        inits=[numpy_helper.from_array(np.array([1, 1, 2], dtype=np.float32), "s")])
refused(helper.make_node("Resize", ["x", "", "s"], ["y"]), {"x": x}, "scales of 3 values for rank 4",
        inits=[numpy_helper.from_array(np.array([1, 1, 2], dtype=np.float32), "s")])
refused(helper.make_node("Resize", ["x", "", "", "s"], ["y"]), {"x": x}, "sizes[2] is 0",
        inits=[numpy_helper.from_array(np.array([1, 1, 0, 3], dtype=np.int64), "s")])

# Einsum with '...'
for eq, shapes in [("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 6)]), ("...ij,...jk", [(2, 3, 4, 5), (3, 5, 6)]),
                   ("i...->...", [(4, 2, 3)]), ("...ii->...i", [(3, 5, 5)]), ("ij...,jk...->ik...", [(2, 3, 4), (3, 5, 4)])]:
    ins = {"x%d" % i: rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    run(helper.make_node("Einsum", list(ins), ["y"], equation=eq), ins, np.einsum(eq, *ins.values()), opset=12)
refused(helper.make_node("Einsum", ["x0"], ["y"], equation="...ijk->i"), {"x0": np.zeros((2, 3), np.float32)},
        "stands for -1 axes", opset=12)



# RoiAlign (avg) against a NumPy port of its loops (ONNX Runtime's, which made ONNX's tests)
def roi_align(X, rois, bidx, oh, ow, sr, scale, half_pixel):
    N, C, H, W = X.shape
    out = np.zeros((len(rois), C, oh, ow))
    off = 0.5 if half_pixel else 0.0
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sw, sh = x1 * scale - off, y1 * scale - off
        rw, rh = x2 * scale - off - sw, y2 * scale - off - sh
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        for ph in range(oh):
            for pw in range(ow):
                acc = np.zeros(C)
                for iy in range(sr):
                    y = sh + ph * bh + (iy + 0.5) * bh / sr
                    for ix in range(sr):
                        x = sw + pw * bw + (ix + 0.5) * bw / sr
                        if y < -1 or y > H or x < -1 or x > W:
                            continue
                        y, x = max(y, 0.0), max(x, 0.0)
                        yl, xl = int(y), int(x)
                        if yl >= H - 1:
                            yl = yh = H - 1
                            y = float(yl)
                        else:
                            yh = yl + 1
                        if xl >= W - 1:
                            xl = xh = W - 1
                            x = float(xl)
                        else:
                            xh = xl + 1
                        ly, lx = y - yl, x - xl
                        b = X[bidx[r]]
                        acc += (1 - ly) * (1 - lx) * b[:, yl, xl] + (1 - ly) * lx * b[:, yl, xh] + \
                            ly * (1 - lx) * b[:, yh, xl] + ly * lx * b[:, yh, xh]
                out[r, :, ph, pw] = acc / (sr * sr)
    return out.astype(np.float32)


x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
rois = np.array([[0, 0, 8, 8], [1.5, 2.2, 20.1, 13.7], [-3, -2, 4, 5], [3.3, 1.1, 3.6, 1.4], [17, 15, 30, 25]],
                dtype=np.float32)
bidx = np.array([0, 1, 1, 0, 1], dtype=np.int64)
for oh, ow, sr, scale, ctm in [(3, 4, 2, 0.5, "half_pixel"), (2, 2, 3, 0.7, "output_half_pixel"), (5, 3, 1, 1.0, "half_pixel")]:
    run(helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], output_height=oh, output_width=ow, sampling_ratio=sr,
                         spatial_scale=scale, coordinate_transformation_mode=ctm), {"x": x, "rois": rois},
        roi_align(x, rois, bidx, oh, ow, sr, scale, ctm == "half_pixel"), opset=16,
        inits=[numpy_helper.from_array(bidx, "b")])
refused(helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"]), {"x": x, "rois": rois}, "sampling_ratio 0",
        opset=16, inits=[numpy_helper.from_array(bidx, "b")])

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
if torch is not None:
    # 3-D conv
    for (C,O,g,k,s,p,dl) in [(4,6,1,(3,3,3),(1,1,1),(0,0,0),(1,1,1)),(4,6,2,(2,3,1),(2,1,2),(1,0,1),(1,2,1)),(3,3,3,(3,1,2),(1,2,1),(2,1,0),(2,1,1))]:
        x=rng.standard_normal((2,C,7,6,5)).astype(np.float32); w=rng.standard_normal((O,C//g)+k).astype(np.float32); b=rng.standard_normal(O).astype(np.float32)
        exp=F.conv3d(torch.tensor(x),torch.tensor(w),torch.tensor(b),stride=s,padding=p,dilation=dl,groups=g).numpy()
        node=helper.make_node("Conv",["x","w","b"],["y"],kernel_shape=list(k),strides=list(s),pads=list(p)*2,dilations=list(dl),group=g)
        run(node,{"x":x},exp,inits=[numpy_helper.from_array(w,"w"),numpy_helper.from_array(b,"b")])
    # uneven pads, no bias, SAME_UPPER
    x=rng.standard_normal((1,2,5,6,7)).astype(np.float32); w=rng.standard_normal((3,2,2,2,2)).astype(np.float32)
    xp=np.pad(x,[(0,0),(0,0),(0,1),(0,1),(0,1)])
    exp=F.conv3d(torch.tensor(xp),torch.tensor(w)).numpy()
    run(helper.make_node("Conv",["x","w"],["y"],auto_pad="SAME_UPPER"),{"x":x},exp,inits=[numpy_helper.from_array(w,"w")])
    # pools 3-D
    for (k,s,p,cm,cip) in [((3,3,3),(1,1,1),(0,0,0),0,0),((2,3,2),(2,2,1),(1,1,0),0,1),((3,2,3),(2,2,2),(1,1,1),1,0),((3,3,3),(2,2,2),(1,0,1),1,1)]:
        x=rng.standard_normal((2,3,7,8,9)).astype(np.float32)
        exp=F.max_pool3d(torch.tensor(x),k,s,p,ceil_mode=bool(cm)).numpy()
        run(helper.make_node("MaxPool",["x"],["y"],kernel_shape=list(k),strides=list(s),pads=list(p)*2,ceil_mode=cm),{"x":x},exp)
        exp=F.avg_pool3d(torch.tensor(x),k,s,p,ceil_mode=bool(cm),count_include_pad=bool(cip)).numpy()
        run(helper.make_node("AveragePool",["x"],["y"],kernel_shape=list(k),strides=list(s),pads=list(p)*2,ceil_mode=cm,count_include_pad=cip),{"x":x},exp)
    # dilated max pools 1-D, 2-D, 3-D
    for sh,k,s,p,dl,cm in [((1,2,20),(3,),(2,),(1,),(2,),0),((2,2,11,12),(3,2),(2,1),(1,1),(2,3),1),((1,2,9,8,10),(2,2,3),(1,2,2),(1,0,1),(2,2,2),0)]:
        x=rng.standard_normal(sh).astype(np.float32)
        f={1:F.max_pool1d,2:F.max_pool2d,3:F.max_pool3d}[len(k)]
        exp=f(torch.tensor(x),k,s,p,dl,ceil_mode=bool(cm)).numpy()
        run(helper.make_node("MaxPool",["x"],["y"],kernel_shape=list(k),strides=list(s),pads=list(p)*2,dilations=list(dl),ceil_mode=cm),{"x":x},exp)
    # MaxPool's Indices (PyTorch's are per plane: ONNX's add the plane's offset)
    for sh, k, st, p, dl in [((2, 3, 9, 8), (3, 2), (2, 1), (1, 1), (1, 2)), ((1, 2, 6, 7, 5), (2, 3, 2), (2, 2, 1), (1, 1, 0), (1, 1, 2)),
                             ((2, 2, 11), (4,), (3,), (2,), (1,))]:
        x = rng.standard_normal(sh).astype(np.float32)
        f = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[len(k)]
        y, i = f(torch.tensor(x), k, st, p, dl, return_indices=True)
        plane = int(np.prod(sh[2:]))
        off = (np.arange(sh[0] * sh[1]) * plane).reshape(sh[:2] + (1,) * len(k))
        run(helper.make_node("MaxPool", ["x"], ["y", "z"], kernel_shape=list(k), strides=list(st), pads=list(p) * 2,
                             dilations=list(dl)), {"x": x}, {"y": y.numpy(), "z": i.numpy() + off})
    # 3-D ConvTranspose: strides, pads, dilations, groups, output_padding, output_shape, auto_pad
    for C, O, g, k, st, p, dl, opd in [(2, 3, 1, (3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), (0, 0, 0)),
                                        (4, 6, 2, (2, 3, 2), (2, 1, 3), (1, 0, 1), (1, 2, 1), (1, 0, 2)),
                                        (3, 3, 3, (3, 2, 1), (3, 2, 1), (2, 1, 0), (2, 1, 1), (0, 1, 0))]:
        x = rng.standard_normal((2, C, 3, 4, 5)).astype(np.float32)
        w = rng.standard_normal((C, O // g) + k).astype(np.float32)
        b = rng.standard_normal(O).astype(np.float32)
        exp = F.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=st, padding=p,
                                 output_padding=opd, groups=g, dilation=dl).numpy()
        run(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=list(st), pads=list(p) * 2,
                             dilations=list(dl), group=g, output_padding=list(opd)), {"x": x}, exp,
            inits=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
        # output_shape: the full result cut, total - total // 2 at the end
        full = F.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=st, groups=g,
                                  dilation=dl).numpy()
        want = [full.shape[2] - 1, full.shape[3] - 2, full.shape[4]]
        exp = full[:, :, 0:want[0], 1:1 + want[1], :]
        run(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=list(st), dilations=list(dl), group=g,
                             output_shape=want), {"x": x}, exp,
            inits=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    # MaxUnpool of MaxPool's result and Indices (ONNX's with the plane's offset), and to a larger output_shape
    for sh, k, st in [((2, 3, 8, 6), (2, 2), (2, 2)), ((1, 2, 9), (3,), (2,)), ((1, 2, 4, 6, 4), (2, 3, 2), (2, 3, 2))]:
        x = rng.standard_normal(sh).astype(np.float32)
        f = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[len(k)]
        u = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[len(k)]
        y, i = f(torch.tensor(x), k, st, return_indices=True)
        exp = u(y, i, k, st).numpy()
        plane = int(np.prod(exp.shape[2:]))
        off = (np.arange(sh[0] * sh[1]) * plane).reshape(sh[:2] + (1,) * len(k))
        run(helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=list(k), strides=list(st)),
            {"x": y.numpy()}, exp, inits=[numpy_helper.from_array(i.numpy() + off, "i")])
        big = np.pad(exp, [(0, 0), (0, 0)] + [(0, 1)] * len(k))
        run(helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=list(k), strides=list(st)),
            {"x": y.numpy()}, big, inits=[numpy_helper.from_array(i.numpy() + off, "i"),
                                          numpy_helper.from_array(np.array(big.shape, dtype=np.int64), "s")])
    # GridSample: every mode, padding mode and align_corners, a grid reaching past the edges
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 6, 2)).astype(np.float32)
    grid[0, 0, :2] = [[-1, -1], [1, 1]]
    for mode in ["bilinear", "nearest", "bicubic"]:
        for pm in ["zeros", "border", "reflection"]:
            for al in [0, 1]:
                exp = F.grid_sample(torch.tensor(x), torch.tensor(grid), mode=mode, padding_mode=pm,
                                    align_corners=bool(al)).numpy()
                run(helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=pm, align_corners=al),
                    {"x": x, "grid": grid}, exp, opset=16)
    # 1-D conv and pools
    x=rng.standard_normal((2,4,15)).astype(np.float32); w=rng.standard_normal((6,2,3)).astype(np.float32)
    exp=F.conv1d(torch.tensor(x),torch.tensor(w),stride=2,padding=1,dilation=2,groups=2).numpy()
    run(helper.make_node("Conv",["x","w"],["y"],strides=[2],pads=[1,1],dilations=[2],group=2),{"x":x},exp,inits=[numpy_helper.from_array(w,"w")])
    exp=F.avg_pool1d(torch.tensor(x),3,2,1,count_include_pad=False).numpy()
    run(helper.make_node("AveragePool",["x"],["y"],kernel_shape=[3],strides=[2],pads=[1,1]),{"x":x},exp)
    exp=F.max_pool1d(torch.tensor(x),3,2,1).numpy()
    run(helper.make_node("MaxPool",["x"],["y"],kernel_shape=[3],strides=[2],pads=[1,1]),{"x":x},exp)

w = rng.standard_normal((6, 3, 2, 2, 2)).astype(np.float32)
refused(helper.make_node("Conv", ["x", "w"], ["y"], group=2), {"x": rng.standard_normal((1, 4, 5, 5, 5)).astype(np.float32)},
        "group 2 does not fit 4 channels", inits=[numpy_helper.from_array(w, "w")])
refused(helper.make_node("GridSample", ["x", "grid"], ["y"], mode="area"),
        {"x": np.zeros((1, 1, 4, 4), np.float32), "grid": np.zeros((1, 2, 2, 2), np.float32)}, "mode 'area'", opset=16)
refused(helper.make_node("GridSample", ["x", "grid"], ["y"]),
        {"x": np.zeros((1, 1, 4, 4), np.float32), "grid": np.zeros((1, 2, 2, 3), np.float32)}, "grid [N, H_out, W_out, 2]",
        opset=16)
refused(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[9, 1, 1]), {"x": np.zeros((1, 1, 4, 4, 4), np.float32)},
        "a window of 9 past an axis of 4")


def zero_bias(bias, kept):
    """A Conv whose bias initializer is bias: imported with the bias kept
    (kept) or left out (all +0.0, the same bits), its result byte for byte
    the bias-less model's when left out, within rounding of it otherwise."""
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    d, cmd, desc = model(node, {"x": x}, 13, [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    d0, cmd0, _ = model(helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                        {"x": x}, 13, [numpy_helper.from_array(w, "w")])
    name = "Conv bias %s %s" % (bias.tolist(), "kept" if kept else "left out")
    r = subprocess.run([tir, "import", d + "/m.onnx", "-o", d + "/m.tir"], capture_output=True, text=True, timeout=120)
    text = open(d + "/m.tir").read() if r.returncode == 0 else ""
    conv = [ln for ln in text.splitlines() if "conv2d(" in ln]
    if r.returncode or len(conv) != 1:
        print("bad %s: import: %s" % (name, r.stderr.strip()[:300]))
        return
    if ("conv2d(x, w, b," in conv[0]) != kept or (not kept and "full(" in text):
        print("bad %s: %s" % (name, conv[0]))
        return
    for c in (cmd, cmd0):
        r = subprocess.run(c, capture_output=True, text=True, timeout=120)
        if r.returncode:
            print("bad %s: tir run failed: %s" % (name, r.stderr.strip()[:300]))
            return
    y, y0 = np.load(d + "/y.npy"), np.load(d0 + "/y.npy")
    if (y.tobytes() == y0.tobytes()) if not kept else np.allclose(y, y0 + bias.reshape(1, 4, 1, 1), atol=1e-5):
        print("ok %s" % name)
    else:
        print("bad %s: the result differs" % name)


zero_bias(np.zeros(4, np.float32), False)
zero_bias(np.array([0.0, -0.0, 0.0, 0.0], np.float32), True)
zero_bias(np.array([0.0, 0.5, 0.0, 0.0], np.float32), True)
