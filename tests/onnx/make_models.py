#!/usr/bin/python3
"""tests/onnx/make_models.py OUT_DIR — the small ONNX models the onnx_import
suite (tests/suites/onnx_import.sh) and the importer's fuzz seeds are made
from, written with python3-onnx's helpers: a perceptron named as PyTorch
names things (input.1, onnx::Gemm_1), and hostile files, each one fault.
Also writes x.npy / x.pb (an input) and expect.npy (the perceptron's output
computed with NumPy)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)


def save(name, model, check=True):
    if check:
        onnx.checker.check_model(model)
    with open(os.path.join(out, name), "wb") as f:
        f.write(model.SerializeToString())


def opset(v=13):
    return [helper.make_opsetid("", v)]


# the perceptron: Gemm (transB), Relu, MatMul + Add, Softmax; a symbolic batch
w1 = rng.standard_normal((8, 4)).astype(np.float32)
b1 = rng.standard_normal(8).astype(np.float32)
w2 = rng.standard_normal((8, 3)).astype(np.float32)
b2 = rng.standard_normal(3).astype(np.float32)
x = rng.standard_normal((2, 4)).astype(np.float32)
nodes = [
    helper.make_node("Gemm", ["input.1", "onnx::Gemm_1", "onnx::Gemm_2"], ["h.1"], name="/fc1/Gemm", transB=1),
    helper.make_node("Relu", ["h.1"], ["h.2"], name="/act/Relu"),
    helper.make_node("MatMul", ["h.2", "fc2.weight"], ["h.3"], name="/fc2/MatMul"),
    helper.make_node("Add", ["h.3", "fc2.bias"], ["logits"], name="/fc2/Add"),
    helper.make_node("Softmax", ["logits"], ["probs"], name="/Softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
    [numpy_helper.from_array(w1, "onnx::Gemm_1"), numpy_helper.from_array(b1, "onnx::Gemm_2"),
     numpy_helper.from_array(w2, "fc2.weight"), numpy_helper.from_array(b2, "fc2.bias")])
mlp = helper.make_model(graph, opset_imports=opset(13), producer_name="make_models")
save("mlp.onnx", mlp)
np.save(os.path.join(out, "x.npy"), x)
with open(os.path.join(out, "x.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "input.1").SerializeToString())
h = np.maximum(x @ w1.T + b1, 0)
lg = h @ w2 + b2
e = np.exp(lg - lg.max(axis=-1, keepdims=True))
np.save(os.path.join(out, "expect.npy"), (e / e.sum(axis=-1, keepdims=True)).astype(np.float32))

# shape arithmetic folded at import: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
nodes = [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
    helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
    helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["y"]),
]
graph = helper.make_graph(
    nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])],
    [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array([0], np.int64), "ax0"),
     numpy_helper.from_array(np.array([-1], np.int64), "minus1")])
save("fold.onnx", helper.make_model(graph, opset_imports=opset(13)))


def one(op, name="n0", domain="", ins=("x",), outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), name=name, domain=domain, **attrs)


def simple(nodes, fname, inits=(), opv=13, check=True, shape=(2, 3), extra_opsets=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(graph, opset_imports=opset(opv) + list(extra_opsets))
    save(fname, m, check)
    return m


# weights past the folding limit (65536 elements), as raw_data and as
# float_data: y = x @ w + b, w [300, 300]
wb = rng.standard_normal((300, 300)).astype(np.float32)
xb = rng.standard_normal((2, 300)).astype(np.float32)
for name, raw in (("big_raw.onnx", True), ("big_fields.onnx", False)):
    wt = numpy_helper.from_array(wb, "w")
    if not raw:
        wt.ClearField("raw_data")
        wt.float_data.extend(wb.ravel().tolist())
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 300])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 300])], [wt])
    save(name, helper.make_model(graph, opset_imports=opset(13)))
np.save(os.path.join(out, "xb.npy"), xb)
np.save(os.path.join(out, "expect_big.npy"), xb @ wb)

# several unsupported ops: every one listed at once
simple([one("Relu", "a", ins=["x"], outs=["a"]), one("LpPool", "lp", ins=["a"], outs=["b"]),
        one("MaxRoiPool", "roi", ins=["b", "b"], outs=["c"]), one("Relu", "d", ins=["c"], outs=["y"])],
       "unsupported.onnx", check=False)
# window ops whose attributes ask for results past tir's largest axis
for name, attrs in (("deconv_shape.onnx", {"output_shape": [1 << 40, 3]}),
                    ("deconv_strides.onnx", {"strides": [1 << 31, 1 << 31]}),
                    ("deconv_dilation.onnx", {"dilations": [1 << 31, 3]})):
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3]),
                                            helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(name, helper.make_model(graph, opset_imports=opset(13)), check=False)
# an unknown domain
simple([one("Frobnicate", "custom", domain="com.example")], "domain.onnx", check=False,
       extra_opsets=[helper.make_opsetid("com.example", 1)])
# a data-dependent shape
simple([one("NonZero", "nz", outs=["y"])], "nonzero.onnx", check=False)
# an opset past 17
simple([one("Relu")], "opset18.onnx", opv=18, check=False)
simple([one("Relu")], "opset0.onnx", opv=0, check=False)
# an op whose old version tir does not implement (Tile of opset 1 to 5), and the old
# binary ops' broadcast (B [3] placed at axis 0 of A [3, 2])
simple([one("Tile", "tile5", ins=["x", "t", "a"])], "old_tile.onnx", opv=5, check=False,
       inits=[numpy_helper.from_array(np.array(2, np.int64), "t"), numpy_helper.from_array(np.array(1, np.int64), "a")])
graph = helper.make_graph([one("Add", "add6", ins=["x", "b"], broadcast=1, axis=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, 2, 3], np.float32), "b")])
save("old_broadcast.onnx", helper.make_model(graph, opset_imports=opset(6)), False)
# a cycle: a -> b -> a
simple([one("Relu", "first", ins=["b"], outs=["a"]), one("Relu", "second", ins=["a"], outs=["b"]),
        one("Relu", "last", ins=["b"], outs=["y"])], "cycle.onnx", check=False)
# huge dimensions: an initializer whose dims promise 2^40 elements
big = TensorProto()
big.name = "w"
big.data_type = TensorProto.FLOAT
big.dims.extend([1 << 20, 1 << 20])
big.float_data.append(1.0)
simple([one("Add", ins=["x", "w"])], "huge.onnx", inits=[big], check=False)
# a lying size: raw_data shorter than the dims want
lie = TensorProto()
lie.name = "w"
lie.data_type = TensorProto.FLOAT
lie.dims.extend([2, 3])
lie.raw_data = b"\0" * 8
simple([one("Add", ins=["x", "w"])], "lying.onnx", inits=[lie], check=False)
# external data that leaves the model's folder
ext = TensorProto()
ext.name = "w"
ext.data_type = TensorProto.FLOAT
ext.dims.extend([2, 3])
ext.data_location = TensorProto.EXTERNAL
for k, v in (("location", "../../etc/passwd"), ("offset", "0"), ("length", "24")):
    e = ext.external_data.add()
    e.key, e.value = k, v
simple([one("Add", ins=["x", "w"])], "escape.onnx", inits=[ext], check=False)
# a symbolic dimension nothing fixes
graph = helper.make_graph([one("Relu")], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
save("symbolic.onnx", helper.make_model(graph, opset_imports=opset(13)), False)
# malformed protobuf: the perceptron cut short, and bytes that are no protobuf
raw = mlp.SerializeToString()
with open(os.path.join(out, "truncated.onnx"), "wb") as f:
    f.write(raw[: len(raw) // 2])
with open(os.path.join(out, "garbage.onnx"), "wb") as f:
    f.write(b"\xff\xff\xff\xff\x0f" + bytes(range(200)))
# a length prefix that lies (a field claiming 2^31 bytes)
with open(os.path.join(out, "length.onnx"), "wb") as f:
    f.write(b"\x3a\xff\xff\xff\xff\x07" + b"\0" * 16)
