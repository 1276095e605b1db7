#!/usr/bin/python3
"""tests/onnx/misc_models.py OUT_DIR — small ONNX models for the
onnx_misc suite (tests/suites/onnx_misc.sh), each with its inputs and the
output NumPy computes: the signal ops (DFT with dft_length, onesided and
inverse; STFT; the windows; MelWeightMatrix), opset 6's broadcast, BitShift
and the unsigned types.  Writes OUT_DIR/NAME.onnx, OUT_DIR/NAME.IN.npy
per input, OUT_DIR/NAME.expect.npy, and OUT_DIR/cases (one line per case:
NAME and its input names)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
cases = []
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
           np.int32: TensorProto.INT32, np.uint8: TensorProto.UINT8, np.uint16: TensorProto.UINT16,
           np.uint32: TensorProto.UINT32, np.uint64: TensorProto.UINT64}
rng = np.random.default_rng(7)


def case(name, node, inputs, expect, opv=17, inits=(), types=None):
    """inputs: (name, array) pairs, given as graph inputs (of the ONNX type
    types[name] when given, else the array's)"""
    types = types or {}
    vi = [helper.make_tensor_value_info(n, types.get(n, NP2ONNX[a.dtype.type]), list(a.shape)) for n, a in inputs]
    graph = helper.make_graph([node], name, vi,
                              [helper.make_tensor_value_info("y", NP2ONNX[expect.dtype.type], None)], list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opv)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
    for n, a in inputs:
        if a.dtype in (np.uint16, np.uint32, np.uint64):  # no .npy reader of tir's has these: a TensorProto
            with open(os.path.join(out, "%s.%s.pb" % (name, n)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        else:
            np.save(os.path.join(out, "%s.%s.npy" % (name, n)), a)
    np.save(os.path.join(out, name + ".expect.npy"), expect)
    cases.append(" ".join([name] + [n for n, _ in inputs]))


def cplx(y):
    return np.stack((y.real, y.imag), axis=-1).astype(np.float32)


# DFT: a real signal on axis 1, padded (dft_length 12 > 9) and onesided
x = rng.standard_normal((2, 9, 3, 1)).astype(np.float32)
case("dft_pad_onesided", helper.make_node("DFT", ["x", "n"], ["y"], axis=1, onesided=1),
     [("x", x), ("n", np.array(12, np.int64))], cplx(np.fft.rfft(x[..., 0], n=12, axis=1)))
# cut (dft_length 6 < 9), on axis 2 of a complex signal
xc = rng.standard_normal((2, 3, 9, 2)).astype(np.float32)
z = xc[..., 0] + 1j * xc[..., 1]
case("dft_cut_complex", helper.make_node("DFT", ["x", "n"], ["y"], axis=2),
     [("x", xc), ("n", np.array(6, np.int64))], cplx(np.fft.fft(z, n=6, axis=2)))
# inverse of a complex signal, axis 1
case("dft_inverse", helper.make_node("DFT", ["x"], ["y"], axis=1, inverse=1),
     [("x", xc)], cplx(np.fft.ifft(z, axis=1)))
# STFT: a real signal in frames of 10 every 4, a window, not onesided
sig = rng.standard_normal((2, 50, 1)).astype(np.float32)
win = np.hanning(10).astype(np.float32)
fr = np.stack([sig[:, k * 4:k * 4 + 10, 0] * win for k in range((50 - 10) // 4 + 1)], axis=1)
case("stft_window", helper.make_node("STFT", ["x", "step", "w"], ["y"], onesided=0),
     [("x", sig), ("step", np.array(4, np.int64)), ("w", win)], cplx(np.fft.fft(fr, axis=-1)))
# the windows: symmetric Hann is NumPy's hanning; periodic Blackman and
# Hamming (ONNX's alpha 25/46) written out
case("hann_symmetric", helper.make_node("HannWindow", ["n"], ["y"], periodic=0),
     [("n", np.array(7, np.int32))], np.hanning(7).astype(np.float32))
k = np.arange(8)
case("blackman_periodic", helper.make_node("BlackmanWindow", ["n"], ["y"]),
     [("n", np.array(8, np.int64))],
     (0.42 - 0.5 * np.cos(2 * np.pi * k / 8) + 0.08 * np.cos(4 * np.pi * k / 8)).astype(np.float32))
case("hamming_f64", helper.make_node("HammingWindow", ["n"], ["y"], output_datatype=TensorProto.DOUBLE),
     [("n", np.array(8, np.int64))], 25 / 46 - (21 / 46) * np.cos(2 * np.pi * k / 8))
# opset 6: Mul with broadcast=1 and axis=1 (B [3, 4] inside A [2, 3, 4, 5])
a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
b = rng.standard_normal((3, 4)).astype(np.float32)
case("old_mul_axis", helper.make_node("Mul", ["a", "b"], ["y"], broadcast=1, axis=1),
     [("a", a), ("b", b)], a * b[None, :, :, None], opv=6)

# BitShift on uint8: past the width, and broadcast
xs = np.array([[255, 1, 128, 3], [16, 17, 0, 200]], np.uint8)
ys = np.array([1, 7, 9, 2], np.uint8)
case("bitshift_left_u8", helper.make_node("BitShift", ["x", "s"], ["y"], direction="LEFT"),
     [("x", xs), ("s", ys)], np.left_shift(xs, ys))
case("bitshift_right_u8", helper.make_node("BitShift", ["x", "s"], ["y"], direction="RIGHT"),
     [("x", xs), ("s", ys)], np.right_shift(xs, ys))

# the unsigned types tir holds in i32 (uint16) and i64 (uint32, uint64),
# written back in the declared type: Max, a Sub that wraps below 0 and a
# Mul past 2^32 (modulo 2^bits, as the unsigned op), BitShift, Mod
u16 = np.array([[1, 65535, 300], [0, 2, 40000]], np.uint16)
v16 = np.array([7, 65534, 301], np.uint16)
case("max_u16", helper.make_node("Max", ["a", "b"], ["y"]), [("a", u16), ("b", v16)], np.maximum(u16, v16))
u32 = np.array([3, 4000000000, 65536], np.uint32)
v32 = np.array([5, 1, 65536], np.uint32)
case("sub_u32_wraps", helper.make_node("Sub", ["a", "b"], ["y"]), [("a", u32), ("b", v32)], u32 - v32)
case("mul_u32_wraps", helper.make_node("Mul", ["a", "b"], ["y"]), [("a", u32), ("b", v32)], u32 * v32)
case("bitshift_left_u32", helper.make_node("BitShift", ["a", "b"], ["y"], direction="LEFT"),
     [("a", u32), ("b", np.array([31, 1, 16], np.uint32))], np.left_shift(u32, np.array([31, 1, 16], np.uint32)))
u64 = np.array([2 ** 62 + 5, 17, 9], np.uint64)
v64 = np.array([2 ** 40, 5, 10], np.uint64)
case("mod_u64", helper.make_node("Mod", ["a", "b"], ["y"]), [("a", u64), ("b", v64)], np.mod(u64, v64))

# a bfloat16 input given as a uint16 TensorProto of its bit patterns, as
# ONNX's test data stores bf16: 1, -2.5, 0.15625, inf, the least
# subnormal, -0, 3.140625 and 65280
bits = np.array([[0x3f80, 0xc020, 0x3e20, 0x7f80], [0x0001, 0x8000, 0x4049, 0x477f]], np.uint16)
case("cast_bf16_bits", helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT), [("x", bits)],
     (bits.astype(np.uint32) << 16).view(np.float32), types={"x": TensorProto.BFLOAT16})

with open(os.path.join(out, "cases"), "w") as f:
    f.write("\n".join(cases) + "\n")
