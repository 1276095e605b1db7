"""oracle_scatter.py — oracle cases for scatter_nd (ONNX's ScatterND):
NumPy's x[tuple(i.T)] = u on a copy, tuple by tuple in order, and
np.add.at / np.multiply.at / np.maximum.at / np.minimum.at for the
reductions; indices out of range and bad shapes are errors."""
import numpy as np


def scatter_ref(x, idx, upd, red="none"):
    """x with each tuple of idx (its last axis) given its block of upd"""
    y = x.copy()
    k = idx.shape[-1]
    tuples = idx.reshape(-1, k)
    blocks = upd.reshape((tuples.shape[0],) + x.shape[k:])
    for t, b in zip(tuples, blocks):
        at = tuple(int(v) for v in t)
        if red == "none":
            y[at] = b
        elif red == "add":
            y[at] = y[at] + b
        elif red == "mul":
            y[at] = y[at] * b
        elif red == "max":
            y[at] = np.maximum(y[at], b)
        else:
            y[at] = np.minimum(y[at], b)
    return y


def scatter_cases(case, Gen, arr):
    for dt in ["f32", "f64", "i32", "i64"]:
        name = "scatter_nd_%s" % dt
        g = Gen(name)
        x = g.any(dt, (4, 3, 5))
        i1 = arr([[2], [0], [-1]], "i64")            # whole [3, 5] blocks
        u1 = g.any(dt, (3, 3, 5))
        i2 = arr([[[1, 2], [3, 0]], [[1, 2], [-4, -3]]], "i32")   # [2, 2] tuples of 2, a repeat
        u2 = g.any(dt, (2, 2, 5))
        i3 = arr([[0, 0, 0], [3, 2, 4], [0, 0, 0]], "i64")      # single elements, a repeat
        u3 = g.any(dt, (3,))
        body = ("r1 = scatter_nd(x, i1, u1)\nr2 = scatter_nd(x, i2, u2, reduction=add)\n"
                "r3 = scatter_nd(x, i3, u3, reduction=mul)\nr4 = scatter_nd(x, i2, u2, reduction=max)\n"
                "r5 = scatter_nd(x, i3, u3, reduction=min)\nr6 = scatter_nd(x, slice(i1, stop=0), slice(u1, stop=0))\n"
                "r7 = scatter_nd(transpose(x, [0, 2, 1]), i2, slice(u2, axis=2, stop=3))")
        case(name, body, {"x": x, "i1": i1, "u1": u1, "i2": i2, "u2": u2, "i3": i3, "u3": u3},
             {"r1": scatter_ref(x, i1, u1), "r2": scatter_ref(x, i2, u2, "add"),
              "r3": scatter_ref(x, i3, u3, "mul"), "r4": scatter_ref(x, i2, u2, "max"),
              "r5": scatter_ref(x, i3, u3, "min"), "r6": x.copy(),
              "r7": scatter_ref(np.transpose(x, (0, 2, 1)), i2, u2[:, :, :3])})
    g = Gen("scatter_nd_bool")
    xb = g.b((3, 4))
    ub = g.b((2, 4))
    case("scatter_nd_bool", "r1 = scatter_nd(x, [[2], [0]], u)\nr2 = scatter_nd(x, [[2], [2]], u, reduction=add)",
         {"x": xb, "u": ub},
         {"r1": scatter_ref(xb, np.array([[2], [0]]), ub),
          "r2": scatter_ref(xb.astype(np.int8), np.array([[2], [2]]), ub.astype(np.int8), "add").astype(bool)})
    x = Gen("scatter_nd_err").f("f32", (3, 4))
    u = np.ones((1, 4), np.float32)
    case("scatter_nd_out_of_range", "y = x * 2.0\nr = scatter_nd(y, i, u)", {"x": x, "i": arr([[3]], "i64"), "u": u},
         error=r"scatter_nd: index 3 is out of range for axis 0 of size 3", err_line=2)
    case("scatter_nd_out_of_range_neg", "r = scatter_nd(x, i, u)", {"x": x, "i": arr([[0, -5]], "i32"),
                                                                     "u": np.ones((1,), np.float32)},
         error=r"scatter_nd: index -5 is out of range for axis 1 of size 4", err_line=1)
    case("scatter_nd_shape", "r = scatter_nd(x, [[0]], ones([2, 4]))", {"x": x},
         error=r"scatter_nd: updates f32\[2, 4\]: must be indices' leading shape", err_line=1)
    case("scatter_nd_tuple", "r = scatter_nd(x, [[0, 1, 2]], ones([1]))", {"x": x},
         error=r"scatter_nd: indices i64\[1, 3\]: the last axis", err_line=1)
    case("scatter_nd_float_index", "r = scatter_nd(x, [[0.0]], ones([1, 4]))", {"x": x},
         error=r"scatter_nd: indices must be i32 or i64", err_line=1)
    case("scatter_nd_dtype", "r = scatter_nd(x, [[0]], ones([1, 4], dtype=f64))", {"x": x},
         error=r"scatter_nd: updates f64\[1, 4\] must have x's dtype f32", err_line=1)
    case("scatter_nd_reduction", "r = scatter_nd(x, [[0]], ones([1, 4]), reduction=sub)", {"x": x},
         error=r"scatter_nd: reduction must be none, add, mul, max or min, got 'sub'", err_line=1)
