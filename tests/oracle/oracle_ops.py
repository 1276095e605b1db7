"""oracle_ops.py — oracle cases for NumPy's common ops (issue 25): isnan
isinf isfinite, std and var with ddof, any all logsumexp, cumsum cumprod,
sort argsort, stack, einsum, conv2d's groups and dilation, pooling's
padding.  (log1p and expm1 are in oracle_ref.UNARY_FLOAT, so every unary
case runs them.)  Each expected value is NumPy's own function where NumPy
has one; conv2d and pooling by the reference implementations of
oracle_ref.py, as the existing conv cases are.
"""
import numpy as np

import oracle_ref as R
from oracle_ref import NPDT, FLOATS

NAN, INF = float("nan"), float("inf")
POS = r"(^|\n)case\.tir:\d+:\d+: error: "


def f64(x):
    return np.asarray(x, dtype=np.float64)


def logsumexp(x, axis=None, keepdims=False):
    """SciPy's logsumexp, by its definition: max + log(sum(exp(x - max)))."""
    x = f64(x)
    ax = tuple(axis) if isinstance(axis, list) else axis
    with np.errstate(all="ignore"):
        m = np.max(x, axis=ax, keepdims=True) if x.size else np.full([1] * x.ndim, -INF)
        m0 = np.where(np.isfinite(m), m, 0)
        s = np.sum(np.exp(x - m0), axis=ax, keepdims=True)
        r = np.log(s) + m0
        if not keepdims:
            r = np.squeeze(r, axis=ax) if ax is not None else r.reshape(())
        return r


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, absolute=False):
    """oracle_ref.conv2d with PyTorch's dilation (zeros between the taps)
    and groups (one convolution per group of channels)."""
    dh, dw = R.pair(dilation)
    w = f64(w)
    o, c, kh, kw = w.shape
    wd = np.zeros((o, c, dh * (kh - 1) + 1, dw * (kw - 1) + 1))
    wd[:, :, ::dh, ::dw] = w
    cg, og = x.shape[1] // groups, o // groups
    outs = []
    for g in range(groups):
        bg = None if b is None else f64(b)[g * og:(g + 1) * og]
        outs.append(R.conv2d(x[:, g * cg:(g + 1) * cg], wd[g * og:(g + 1) * og], bg, stride, padding,
                             absolute=absolute))
    return np.concatenate(outs, axis=1)


def pool2d(x, kernel, stride=None, padding=0, is_max=True, count_include_pad=True):
    """PyTorch's max_pool2d / avg_pool2d with padding."""
    ph, pw = R.pair(padding)
    pads = ((0, 0), (0, 0), (ph, ph), (pw, pw))
    if is_max:
        fill = -INF if R.dtname(x) in FLOATS else np.iinfo(x.dtype).min
        return R.pool2d(np.pad(x, pads, constant_values=fill), kernel, stride, True)
    s = R.pool2d(np.pad(f64(x), pads), kernel, stride, False)
    if count_include_pad:
        return s
    ones = np.pad(np.ones((1, 1) + x.shape[2:]), pads)
    return s / R.pool2d(ones, kernel, stride, False)


def ops_cases(case, Gen, with_specials, SPECIAL, arr):
    # isnan, isinf, isfinite: bool, of any dtype
    for dt in ["f32", "f64", "i32", "i64", "bool"]:
        g = Gen("isnan_%s" % dt)
        x = with_specials(g, dt, (3, 5)) if dt in FLOATS else g.any(dt, (3, 5))
        case("isnan_%s" % dt, "r1 = isnan(x)\nr2 = isinf(x)\nr3 = isfinite(x)\nr4 = any(isnan(x * 1.0))",
             {"x": x}, {"r1": np.isnan(x), "r2": np.isinf(x), "r3": np.isfinite(x),
                        "r4": np.any(np.isnan(x.astype(NPDT[dt if dt in FLOATS else "f32"]) * 1.0))})

    # std and var with ddof, over axes, keepdims
    for dt in ["f32", "f64", "i32"]:
        g = Gen("std_ddof_%s" % dt)
        x = g.any(dt, (3, 4, 5), -3, 3)
        od = dt if dt in FLOATS else "f32"
        body, exp = [], {}
        for k, (attrs, ax, keep, ddof) in enumerate([
                ("", None, False, 0), (", axis=1", 1, False, 0), (", axis=-1, ddof=1", -1, False, 1),
                (", axis=[0, 2], ddof=2, keepdims=true", (0, 2), True, 2), (", ddof=1", None, False, 1)]):
            body.append("s%d = std(x%s)\nv%d = var(x%s)" % (k, attrs, k, attrs))
            exp["s%d" % k] = R.rounded(np.std(f64(x), axis=ax, ddof=ddof, keepdims=keep), od)
            exp["v%d" % k] = R.rounded(np.var(f64(x), axis=ax, ddof=ddof, keepdims=keep), od)
        case("std_ddof_%s" % dt, "\n".join(body), {"x": x}, exp)
    x = arr([[1.0, 2.0], [3.0, 5.0]], "f64")
    case("std_ddof_count", "r1 = var(x, axis=1, ddof=2)\nr2 = std(x, axis=0, ddof=3)\nr3 = std(x * 2.0, ddof=1)",
         {"x": x}, {"r1": np.var(x, axis=1, ddof=2), "r2": np.std(x, axis=0, ddof=3),
                    "r3": np.std(x * 2.0, ddof=1)})

    # any, all
    for dt in ["f32", "f64", "i32", "i64", "bool"]:
        g = Gen("any_all_%s" % dt)
        x = g.any(dt, (3, 4, 2), -1, 1)
        if dt in FLOATS:
            x[0, 0, 0] = NAN
        body, exp = [], {}
        for k, (attrs, ax, keep) in enumerate([("", None, False), (", axis=1", 1, False),
                                                (", axis=[0, 2], keepdims=true", (0, 2), True),
                                                (", axis=-1", -1, False)]):
            body.append("a%d = any(x%s)\nl%d = all(x%s)" % (k, attrs, k, attrs))
            exp["a%d" % k] = np.any(x, axis=ax, keepdims=keep)
            exp["l%d" % k] = np.all(x, axis=ax, keepdims=keep)
        case("any_all_%s" % dt, "\n".join(body), {"x": x}, exp)
    e = np.zeros((0, 3), "<f4")
    case("any_all_empty", "r1 = any(e, axis=0)\nr2 = all(e, axis=0)\nr3 = any(e)\nr4 = all(e)", {"e": e},
         {"r1": np.any(e, axis=0), "r2": np.all(e, axis=0), "r3": np.any(e), "r4": np.all(e)})

    # logsumexp: stable for huge values; NaN, inf, -inf rows
    for dt in FLOATS:
        g = Gen("logsumexp_%s" % dt)
        x = g.f(dt, (3, 4, 5), -5, 5)
        big = arr([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1002.0], [-INF, -INF, -INF],
                   [1.0, INF, 2.0], [NAN, 1.0, 2.0], [-INF, 0.0, 1.0]], dt)
        case("logsumexp_%s" % dt,
             "r1 = logsumexp(x)\nr2 = logsumexp(x, axis=1)\nr3 = logsumexp(x, axis=[0, 2], keepdims=true)\n"
             "r4 = logsumexp(big, axis=1)\nr5 = logsumexp(big, axis=-1, keepdims=true)",
             {"x": x, "big": big},
             {"r1": R.rounded(logsumexp(x), dt), "r2": R.rounded(logsumexp(x, 1), dt),
              "r3": R.rounded(logsumexp(x, [0, 2], True), dt), "r4": R.rounded(logsumexp(big, 1), dt),
              "r5": R.rounded(logsumexp(big, -1, True), dt)})
    xi = arr([[1, 2, 3], [0, 0, 0]], "i32")
    case("logsumexp_int", "r = logsumexp(xi, axis=1)", {"xi": xi}, {"r": R.rounded(logsumexp(xi, 1), "f32")})

    # cumsum, cumprod: axis None flattens; integers and bool in i64
    for dt in ["f32", "f64", "i32", "i64", "bool"]:
        g = Gen("cumsum_%s" % dt)
        x = g.any(dt, (3, 4), -3, 3)
        p = (g.f(dt, (3, 4), 0.5, 1.5) if dt in FLOATS else g.any(dt, (3, 4), -2, 2))
        case("cumsum_%s" % dt,
             "r1 = cumsum(x)\nr2 = cumsum(x, axis=0)\nr3 = cumsum(x, axis=-1)\nr4 = cumprod(p)\n"
             "r5 = cumprod(p, axis=0)\nr6 = cumprod(p, axis=1)",
             {"x": x, "p": p},
             {"r1": np.cumsum(x), "r2": np.cumsum(x, axis=0), "r3": np.cumsum(x, axis=-1),
              "r4": np.cumprod(p), "r5": np.cumprod(p, axis=0), "r6": np.cumprod(p, axis=1)})
    x = arr([[1.0, NAN, 2.0], [INF, -INF, 1.0]], "f64")
    s = arr(2.5, "f32")
    xl = arr([2**62, 2**62, 2**62], "i64")
    case("cumsum_special", "r1 = cumsum(x, axis=1)\nr2 = cumprod(x, axis=0)\nr3 = cumsum(s)\nr4 = cumsum(xl)",
         {"x": x, "s": s, "xl": xl},
         {"r1": np.cumsum(x, axis=1), "r2": np.cumprod(x, axis=0), "r3": np.cumsum(s), "r4": np.cumsum(xl)})

    # sort, argsort: stable, NaN last
    for dt in ["f32", "f64", "i32", "i64", "bool"]:
        g = Gen("sort_%s" % dt)
        x = with_specials(g, dt, (4, 6), specials=SPECIAL + [0.5, -0.5, NAN]) if dt in FLOATS \
            else g.any(dt, (4, 6), -2, 2)
        case("sort_%s" % dt,
             "r1 = sort(x)\nr2 = argsort(x)\nr3 = sort(x, axis=0)\nr4 = argsort(x, axis=0)\nr5 = argsort(x, axis=-2)",
             {"x": x},
             {"r1": np.sort(x, kind="stable"), "r2": np.argsort(x, kind="stable"),
              "r3": np.sort(x, axis=0, kind="stable"), "r4": np.argsort(x, axis=0, kind="stable"),
              "r5": np.argsort(x, axis=-2, kind="stable")})
    g = Gen("sort_rank3")
    x = g.i("i32", (2, 3, 40), -3, 3)
    case("sort_rank3_ties", "r1 = argsort(x, axis=1)\nr2 = argsort(x)\nr3 = sort(x, axis=1)", {"x": x},
         {"r1": np.argsort(x, axis=1, kind="stable"), "r2": np.argsort(x, kind="stable"),
          "r3": np.sort(x, axis=1, kind="stable")})

    # stack
    g = Gen("stack")
    a, b, c = g.f("f32", (2, 3)), g.f("f32", (2, 3)), g.f("f32", (2, 3))
    ai, bi = g.i("i32", (4,)), g.i("i32", (4,))
    case("stack", "r1 = stack([a, b, c])\nr2 = stack([a, b], axis=1)\nr3 = stack([a, b, c], axis=-1)\n"
                  "r4 = stack([ai, bi, ai])\nr5 = stack([a])",
         {"a": a, "b": b, "c": c, "ai": ai, "bi": bi},
         {"r1": np.stack([a, b, c]), "r2": np.stack([a, b], axis=1), "r3": np.stack([a, b, c], axis=-1),
          "r4": np.stack([ai, bi, ai]), "r5": np.stack([a])})

    # einsum: products through the gemm, and the rest
    for dt in ["f32", "f64", "i32", "i64"]:
        g = Gen("einsum_%s" % dt)
        m, n = g.any(dt, (3, 4), -3, 3), g.any(dt, (4, 5), -3, 3)
        q = g.any(dt, (4, 4), -3, 3)
        bt, bu = g.any(dt, (2, 3, 4), -3, 3), g.any(dt, (2, 4, 5), -3, 3)
        v, u = g.any(dt, (4,), -3, 3), g.any(dt, (3,), -3, 3)
        t3 = g.any(dt, (3, 4, 2), -3, 3)
        specs = [
            ("r1", "ij,jk->ik", ["m", "n"]), ("r2", "bij,bjk->bik", ["bt", "bu"]),
            ("r3", "ii->", ["q"]), ("r4", "ii->i", ["q"]), ("r5", "ij->ji", ["m"]),
            ("r6", "i,j->ij", ["u", "v"]), ("r7", "ij,jk,kl->il", ["m", "q", "n"]),
            ("r8", "ijk,jl->il", ["t3", "n"]), ("r9", "ij,j->i", ["m", "v"]), ("r10", "ij,ij->", ["m", "m"]),
            ("r11", "bij,bkj->bik", ["bt", "bt"]), ("r12", "ij->", ["m"]), ("r13", "ijk->kji", ["t3"]),
            ("r14", "i,i,i->i", ["v", "v", "v"]), ("r15", "ij,kl->ijkl", ["m", "q"]),
        ]
        ins = {"m": m, "n": n, "q": q, "bt": bt, "bu": bu, "v": v, "u": u, "t3": t3}
        body, exp, scale = [], {}, {}
        for name, spec, ops in specs:
            body.append('%s = einsum("%s", %s)' % (name, spec, ", ".join(ops)))
            if dt in FLOATS:
                exp[name] = R.rounded(np.einsum(spec, *[f64(ins[o]) for o in ops]), dt)
                scale[name] = np.einsum(spec, *[np.abs(f64(ins[o])) for o in ops])
            else:
                exp[name] = np.einsum(spec, *[ins[o] for o in ops]).astype(NPDT[dt])
        case("einsum_%s" % dt, "\n".join(body), ins, exp, scale=scale)
    g = Gen("einsum_big")
    a, b = g.f("f32", (64, 96)), g.f("f32", (96, 80))
    case("einsum_big", 'r = einsum("ik,kj->ij", a, b)\nr2 = einsum("ik,kj->ji", a, b)', {"a": a, "b": b},
         {"r": R.rounded(f64(a) @ f64(b), "f32"), "r2": R.rounded((f64(a) @ f64(b)).T, "f32")},
         scale={"r": np.abs(f64(a)) @ np.abs(f64(b)), "r2": (np.abs(f64(a)) @ np.abs(f64(b))).T})

    # conv2d: groups and dilation
    for dt in FLOATS:
        g = Gen("conv2d_groups_%s" % dt)
        x = g.f(dt, (2, 4, 7, 8))
        w2 = g.f(dt, (6, 2, 3, 3))
        w4 = g.f(dt, (4, 1, 2, 3))
        w1 = g.f(dt, (5, 4, 3, 2))
        b6, b4 = g.f(dt, (6,)), g.f(dt, (4,))
        runs = [
            ("r1", "x, w2, groups=2", (x, w2, None, 1, 0, 1, 2)),
            ("r2", "x, w4, b4, groups=4, padding=1", (x, w4, b4, 1, 1, 1, 4)),
            ("r3", "x, w1, dilation=2", (x, w1, None, 1, 0, 2, 1)),
            ("r4", "x, w2, b6, stride=[2, 1], padding=[2, 1], dilation=[2, 3], groups=2",
             (x, w2, b6, (2, 1), (2, 1), (2, 3), 2)),
        ]
        body, exp, scale = [], {}, {}
        for name, args, ra in runs:
            body.append("%s = conv2d(%s)" % (name, args))
            exp[name] = R.rounded(conv2d(*ra), dt)
            scale[name] = conv2d(*ra, absolute=True)
        case("conv2d_groups_%s" % dt, "\n".join(body), {"x": x, "w2": w2, "w4": w4, "w1": w1, "b6": b6, "b4": b4},
             exp, scale=scale)

    # pooling with padding (PyTorch's: -inf for max, zeros counted for avg
    # unless count_include_pad=false)
    for dt in ["f32", "f64", "i32"]:
        g = Gen("pool_padding_%s" % dt)
        x = g.any(dt, (2, 3, 5, 6), -3, 3)
        if dt == "f32":
            x = -np.abs(x) - 1  # all negative: a zero pad would show
        body = ["r1 = maxpool2d(x, 3, stride=2, padding=1)", "r2 = maxpool2d(x, [2, 3], stride=1, padding=[1, 1])"]
        exp = {"r1": R.rounded(pool2d(x, 3, 2, 1), dt), "r2": R.rounded(pool2d(x, (2, 3), 1, (1, 1)), dt)}
        if dt in FLOATS:
            body += ["r3 = avgpool2d(x, 3, stride=2, padding=1)",
                     "r4 = avgpool2d(x, [3, 2], stride=1, padding=[1, 1], count_include_pad=false)",
                     "r5 = avgpool2d(x, 2, padding=1, count_include_pad=true)"]
            exp["r3"] = R.rounded(pool2d(x, 3, 2, 1, False), dt)
            exp["r4"] = R.rounded(pool2d(x, (3, 2), 1, (1, 1), False, False), dt)
            exp["r5"] = R.rounded(pool2d(x, 2, None, 1, False), dt)
        case("pool_padding_%s" % dt, "\n".join(body), {"x": x}, exp)

    # pooling's vector runs (lib/exec/window.c): rows wide enough for
    # several vectors and an overlapping last one (16 f32/i32 lanes, 8
    # f64/i64 and sums), strides 1 and 2 (the last chunk's odd lanes),
    # kernels 1 to 5, pads, a row of one vector exactly, windows at the
    # sides (one at a time), and a transposed (strided) input; maxima
    # exact (tol 0), with NaN, infinities and signed zeros among them
    pools = [(3, 2, 1), (3, 1, 1), (2, 2, 0), (2, 1, 0), (5, 2, 2), (5, 1, 2), (1, 2, 0), (1, 1, 0),
             ((3, 5), (1, 2), (1, 2)), ((2, 3), (2, 1), (1, 1))]
    for dt in ["f32", "f64", "i32", "i64"]:
        g = Gen("pool_runs_%s" % dt)
        for tag, shape in (("wide", (1, 2, 9, 71)), ("one", (1, 1, 4, 33)), ("narrow", (2, 3, 6, 5))):
            if dt in FLOATS:
                x = with_specials(g, dt, shape)
                g.r.shuffle(x.reshape(-1))
            else:
                x = g.any(dt, shape, -50, 50)
            body, exp, bodya, expa = [], {}, [], {}
            for n, (k, s, p) in enumerate(pools):
                kk, ss, pp = R.pair(k), R.pair(s), R.pair(p)
                if kk[0] > shape[2] + 2 * pp[0] or kk[1] > shape[3] + 2 * pp[1]:
                    continue
                a = "[%d, %d], stride=[%d, %d], padding=[%d, %d]" % (kk + ss + pp)
                body.append("m%d = maxpool2d(x, %s)" % (n, a))
                exp["m%d" % n] = R.rounded(pool2d(x, kk, ss, pp), dt)
                if dt in FLOATS:
                    for c in (True, False):
                        name = "a%d%s" % (n, "c" if c else "")
                        bodya.append("%s = avgpool2d(x, %s, count_include_pad=%s)" % (name, a, "true" if c else "false"))
                        expa[name] = R.rounded(pool2d(x, kk, ss, pp, False, c), dt)
            body.append("mt = maxpool2d(transpose(x, [0, 1, 3, 2]), 3, stride=2, padding=1)")
            exp["mt"] = R.rounded(pool2d(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), 3, 2, 1), dt)
            case("pool_runs_max_%s_%s" % (tag, dt), "\n".join(body), {"x": x}, exp, tol=(0, 0))
            if dt in FLOATS:
                case("pool_runs_avg_%s_%s" % (tag, dt), "\n".join(bodya), {"x": x}, expa)

    # the activations with parameters (PyTorch's), tile, triu/tril
    for dt in ["f32", "f64", "i32"]:
        g = Gen("act_%s" % dt)
        x = with_specials(g, dt, (3, 8)) if dt in FLOATS else g.any(dt, (3, 8), -4, 4)
        sl = g.f("f32", (8,), 0.0, 0.5)
        od = dt if dt in FLOATS else "f32"
        X = f64(x)
        with np.errstate(all="ignore"):
            exp = {
                "r1": np.where(X > 0, X, np.expm1(X)), "r2": np.where(X > 0, X, 0.5 * np.expm1(X)),
                "r3": np.where(X > 0, X, 2.0 * np.expm1(X / 2.0)), "r4": np.where(X >= 0, X, X * 0.01),
                "r5": np.where(X >= 0, X, X * 0.2), "r6": np.clip(X / 6 + 0.5, 0, 1),
                "r7": np.clip(0.2 * X + 0.5, 0, 1), "r8": np.where(X >= 0, X, X * f64(sl)),
            }
        od8 = "f64" if dt == "f64" else "f32"
        case("act_%s" % dt,
             "r1 = elu(x)\nr2 = elu(x, alpha=0.5)\nr3 = celu(x, alpha=2.0)\nr4 = leaky_relu(x)\n"
             "r5 = leaky_relu(x, negative_slope=0.2)\nr6 = hardsigmoid(x)\nr7 = hardsigmoid(x, alpha=0.2, beta=0.5)\n"
             "r8 = prelu(x, sl)",
             {"x": x, "sl": sl}, {k: R.rounded(v, od8 if k == "r8" else od) for k, v in exp.items()})
    for dt in ["f32", "i64", "bool"]:
        g = Gen("tile_trilu_%s" % dt)
        x = g.any(dt, (2, 3), -5, 5)
        y = g.any(dt, (2, 4, 5), -5, 5)
        case("tile_trilu_%s" % dt,
             "r1 = tile(x, [2, 3])\nr2 = tile(x, 2)\nr3 = tile(x, [2, 1, 2])\nr4 = tile(x, [0, 2])\n"
             "r5 = triu(y)\nr6 = tril(y)\nr7 = triu(y, k=2)\nr8 = tril(y, k=-1)\nr9 = triu(y, k=-9)\nr10 = tril(x, 7)",
             {"x": x, "y": y},
             {"r1": np.tile(x, (2, 3)), "r2": np.tile(x, 2), "r3": np.tile(x, (2, 1, 2)), "r4": np.tile(x, (0, 2)),
              "r5": np.triu(y), "r6": np.tril(y), "r7": np.triu(y, 2), "r8": np.tril(y, -1), "r9": np.triu(y, -9),
              "r10": np.tril(x, 7)})

    # errors, each at its line
    x = np.ones((2, 3), "<f4")
    x4 = np.ones((1, 3, 4, 4), "<f4")
    w = np.ones((4, 3, 3, 3), "<f4")
    for name, body, msg, line in [
        ("err_cumsum_axis", "r = cumsum(x, axis=2)", r"cumsum: axis 2 is out of range", 1),
        ("err_sort_axis", "y = x\nr = sort(x, axis=-3)", r"sort: axis -3 is out of range", 2),
        ("err_std_axis", "r = std(x, axis=[0, 0])", r"std: axis 0 is given twice", 1),
        ("err_stack_shapes", "r = stack([x, transpose(x)])", r"stack: all operands need one shape", 1),
        ("err_stack_axis", "r = stack([x, x], axis=3)", r"stack: axis 3 is out of range", 1),
        ("err_einsum_terms", 'r = einsum("ij,jk->ik", x)', r"einsum: .*more terms than the 1 operand", 1),
        ("err_einsum_rank", 'r = einsum("ijk->i", x)', r"einsum: term \"ijk\" has 3 letters for operand 1", 1),
        ("err_einsum_size", 'r = einsum("ij,ij->i", x, transpose(x))', r"einsum: 'i' is 2 in one place and 3", 1),
        ("err_einsum_out", 'r = einsum("ij->k", x)', r"einsum: output letter 'k'", 1),
        ("err_einsum_implicit", 'r = einsum("ij", x)', r"einsum: .*explicit output form", 1),
        ("err_einsum_ellipsis", 'r = einsum("...->", x)', r"einsum: '\.\.\.' .* is not supported", 1),
        ("err_conv_groups", "r = conv2d(x4, w, groups=2)", r"conv2d: groups=2", 1),
        ("err_conv_dilation", "r = conv2d(x4, w, dilation=0)", r"conv2d: dilation must be >= 1", 1),
        ("err_tile_reps", "r = tile(x, [2, -1])", r"tile: reps must be >= 0", 1),
        ("err_trilu_rank", "r = triu(reshape(x, [6]))", r"triu: needs at least two dimensions", 1),
        ("err_prelu_slope", "r = prelu(x, [1.0, 2.0])", r"prelu: slope f32\[2\] does not broadcast to x", 1),
        ("err_pool_padding", "r = maxpool2d(x4, 2, padding=2)", r"maxpool2d: padding 2 must be >= 0 and at most half",
         1),
    ]:
        case(name, body, {"x": x, "x4": x4, "w": w}, error=POS + msg, err_line=line)
