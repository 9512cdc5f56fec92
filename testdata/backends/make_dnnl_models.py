#!/usr/bin/python3
"""Models, inputs and numpy references for the dnnl backend's tests.

usage: make_dnnl_models.py OUTDIR            writes OUTDIR/NAME/{model.onnx,
                                             in/INPUT.npy, ref/OUTPUT.npy, op,
                                             expect, rules}
       make_dnnl_models.py target JSON OP    the target(s) of OP's partition(s)
       make_dnnl_models.py rules JSON        the rules of the dnnl partitions

Most models are one Conv, MatMul or Gemm (float32, opset 14) followed by the
epilogue ops patterns/dnnl.pat fuses as oneDNN post-ops: each activation
kind, a constant per-channel bias, a residual of the output's shape, a
per-channel, last-dim or scalar tensor. The rest are one standalone op each
(pooling, BatchNormalization, LayerNormalization, Softmax, LRN, eltwise,
ConvTranspose),
some over a symbolic batch N, some that the rule must refuse. 'op' names the ONNX op type whose
partition must land on the target in 'expect' (dnnl, or c for what the rule
must refuse); 'rules' holds the sorted rules of the dnnl partitions. The
references are computed in float64 with numpy; comparisons reuse
make_blas_models.py compare.
Needs Debian's python3-onnx and python3-numpy only.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_blas_models import conv_ref  # noqa: E402

F32 = TensorProto.FLOAT


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, F32, shape)


def u(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def f64(v):
    return v.astype(np.float64)


def save(outdir, name, nodes, inputs, outputs, feeds, refs, inits, op, rules, expect="dnnl",
         opset=14):
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref"), exist_ok=True)
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(graph, producer_name="collagec-testdata",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset <= 15 else 8 if opset <= 17 else 9
    if opset <= 17:
        # Debian's python3-onnx 1.12 knows opsets up to 17 (Gelu is 20's)
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in feeds.items():
        np.save(os.path.join(d, "in", k + ".npy"), v)
    for k, v in refs.items():
        np.save(os.path.join(d, "ref", k + ".npy"), v.astype(np.float32))
    for fname, text in (("op", op), ("expect", expect), ("rules", " ".join(sorted(rules)))):
        with open(os.path.join(d, fname), "w") as f:
            f.write(text + "\n")


# ---- activations: ONNX node and float64 reference ----

ACTS = {
    "relu": (lambda: ("Relu", {}), lambda t: np.maximum(t, 0)),
    "leaky": (lambda: ("LeakyRelu", {"alpha": 0.2}), lambda t: np.where(t > 0, t, 0.2 * t)),
    "sigmoid": (lambda: ("Sigmoid", {}), lambda t: 1 / (1 + np.exp(-t))),
    "tanh": (lambda: ("Tanh", {}), np.tanh),
    "elu": (lambda: ("Elu", {"alpha": 0.5}), lambda t: np.where(t > 0, t, 0.5 * np.expm1(t))),
    "hsig": (lambda: ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
             lambda t: np.clip(0.3 * t + 0.4, 0, 1)),
    "hswish": (lambda: ("HardSwish", {}), lambda t: t * np.clip(t / 6 + 0.5, 0, 1)),
    "exp": (lambda: ("Exp", {}), np.exp),
    "abs": (lambda: ("Abs", {}), np.abs),
}


def act_node(kind, src, dst):
    op, attrs = ACTS[kind][0]()
    return helper.make_node(op, [src], [dst], name=kind, **attrs), op


# ---- Conv ----

def convs(outdir, rng):
    # (name, x shape, M, k, strides, pads, dilations, group, bias, activation)
    cases = [
        ("conv_relu", (1, 4, 9, 9), 6, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True, "relu"),
        ("conv_dw_s2_leaky", (1, 8, 10, 9), 8, 3, (2, 2), (1, 1, 1, 1), (1, 1), 8, True,
         "leaky"),
        ("conv_dw_mult_sigmoid", (1, 4, 8, 8), 8, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4, False,
         "sigmoid"),
        ("conv_g2_dil_tanh", (2, 4, 11, 10), 6, 3, (1, 2), (2, 1, 0, 2), (2, 1), 2, True,
         "tanh"),
        ("conv_elu", (1, 3, 8, 7), 5, 2, (1, 1), (0, 1, 1, 0), (1, 1), 1, True, "elu"),
        ("conv_hsig", (1, 3, 8, 8), 4, 3, (2, 1), (1, 1, 1, 1), (1, 1), 1, True, "hsig"),
        ("conv_hswish_1x1", (2, 8, 6, 5), 5, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, False,
         "hswish"),
        ("conv_relu_par", (1, 16, 24, 24), 16, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True,
         "relu"),
        ("conv_exp", (1, 3, 6, 6), 4, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True, "exp"),
        ("conv_abs", (2, 4, 5, 5), 4, 3, (1, 1), (0, 0, 0, 0), (1, 1), 2, False, "abs"),
    ]
    for name, xs, m, k, st, pads, dil, group, bias, act in cases:
        x, w = u(rng, xs), u(rng, (m, xs[1] // group, k, k))
        b = u(rng, (m,)) if bias else None
        names = ["x", "w"] + (["b"] if bias else [])
        inits = [("w", w)] + ([("b", b)] if bias else [])
        an, op = act_node(act, "t", "y")
        nodes = [helper.make_node("Conv", names, ["t"], name="conv", strides=list(st),
                                  pads=list(pads), dilations=list(dil), group=group,
                                  kernel_shape=[k, k]), an]
        t = conv_ref(f64(x), f64(w), None if b is None else f64(b), st, pads, dil, group)
        y = ACTS[act][1](t)
        save(outdir, name, nodes, [vinfo("x", list(xs))], [vinfo("y", list(y.shape))],
             {"x": x}, {"y": y}, inits, op, ["dnnl.conv_act"])
    # Clip(0, 6) over a symbolic batch (references at N=3)
    x, w, b = u(rng, (3, 3, 6, 6)), u(rng, (4, 3, 3, 3)), u(rng, (4,))
    lo, hi = np.array(0, np.float32), np.array(0.5, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["t", "lo", "hi"], ["y"], name="clip")]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    save(outdir, "conv_sym_clip", nodes, [vinfo("x", ["N", 3, 6, 6])],
         [vinfo("y", ["N", 4, 6, 6])], {"x": x}, {"y": np.clip(t, 0, 0.5)},
         [("w", w), ("b", b), ("lo", lo), ("hi", hi)], "Clip", ["dnnl.conv_act"])
    # Conv + constant bias [1,M,1,1] (the conv's bias) + residual + Relu: a ResNet block end
    x, r = u(rng, (2, 3, 7, 7)), u(rng, (2, 5, 4, 4))
    w, b = u(rng, (5, 3, 3, 3)), u(rng, (1, 5, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
             helper.make_node("Add", ["r", "t2"], ["t3"], name="res"),
             helper.make_node("Relu", ["t3"], ["y"], name="relu")]
    t = conv_ref(f64(x), f64(w), None, (2, 2), (1, 1, 1, 1), (1, 1), 1) + b + r
    save(outdir, "conv_bias_res_relu", nodes,
         [vinfo("x", [2, 3, 7, 7]), vinfo("r", [2, 5, 4, 4])], [vinfo("y", [2, 5, 4, 4])],
         {"x": x, "r": r}, {"y": np.maximum(t, 0)}, [("w", w), ("b", b)], "Relu",
         ["dnnl.conv_bias_add_act"])
    # the same after a Conv with a bias: two binary operands (per-channel, residual)
    x, r = u(rng, (2, 16, 6, 6)), u(rng, (2, 16, 6, 6))
    w, b, cb = u(rng, (16, 16, 3, 3)), u(rng, (16,)), u(rng, (1, 16, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "cb"], ["t2"], name="bias"),
             helper.make_node("Add", ["t2", "r"], ["t3"], name="res"),
             helper.make_node("Relu", ["t3"], ["y"], name="relu")]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1) + cb + r
    save(outdir, "conv_bias2_res_relu", nodes,
         [vinfo("x", [2, 16, 6, 6]), vinfo("r", [2, 16, 6, 6])], [vinfo("y", [2, 16, 6, 6])],
         {"x": x, "r": r}, {"y": np.maximum(t, 0)}, [("w", w), ("b", b), ("cb", cb)], "Relu",
         ["dnnl.conv_bias_add_act"])
    # Conv with bias + its own input as residual, nothing after
    x, w, b = u(rng, (1, 4, 6, 6)), u(rng, (4, 4, 3, 3)), u(rng, (4,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "x"], ["y"], name="res")]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1) + x
    save(outdir, "conv_res", nodes, [vinfo("x", [1, 4, 6, 6])], [vinfo("y", [1, 4, 6, 6])],
         {"x": x}, {"y": t}, [("w", w), ("b", b)], "Add", ["dnnl.conv_add"])
    # a per-channel input tensor [M,1,1] (binary add post-op) + Elu
    x, c = u(rng, (1, 3, 6, 6)), u(rng, (4, 1, 1))
    w = u(rng, (4, 3, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv"),
             helper.make_node("Add", ["c", "t"], ["t2"], name="chan"),
             helper.make_node("Elu", ["t2"], ["y"], name="elu", alpha=0.5)]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (0, 0, 0, 0), (1, 1), 1) + c
    save(outdir, "conv_chan_input_elu", nodes, [vinfo("x", [1, 3, 6, 6]), vinfo("c", [4, 1, 1])],
         [vinfo("y", [1, 4, 4, 4])], {"x": x, "c": c}, {"y": ACTS["elu"][1](t)}, [("w", w)],
         "Elu", ["dnnl.conv_add_act"])
    # refused: an Add that broadcasts along W only is no post-op: it stays on c
    x, c = u(rng, (1, 3, 6, 6)), u(rng, (4,))
    w = u(rng, (4, 3, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv"),
             helper.make_node("Add", ["t", "c"], ["y"], name="perw")]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (0, 0, 0, 0), (1, 1), 1) + c
    save(outdir, "conv_refuse_perw", nodes, [vinfo("x", [1, 3, 6, 6])], [vinfo("y", [1, 4, 4, 4])],
         {"x": x}, {"y": t}, [("w", w), ("c", c)], "Add", ["dnnl.conv"], expect="c")


# ---- MatMul and Gemm ----

def matmuls(outdir, rng):
    # MatMul + bias vector [N] + each activation
    for i, act in enumerate(("relu", "sigmoid", "hswish")):
        a, w, b = u(rng, (5, 12)), u(rng, (12, 9)), u(rng, (9,))
        an, op = act_node(act, "t2", "y")
        nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
                 helper.make_node("Add", ["t", "b"], ["t2"], name="bias"), an]
        save(outdir, "mm_bias_" + act, nodes, [vinfo("a", [5, 12])], [vinfo("y", [5, 9])],
             {"a": a}, {"y": ACTS[act][1](f64(a) @ w + b)}, [("w", w), ("b", b)], op,
             ["dnnl.matmul_add_act"])
    # MatMul + bias + Gelu (erf, then tanh form): opset 20
    for name, approx in (("mm_bias_gelu", "none"), ("mm_bias_gelu_tanh", "tanh")):
        a, w, b = u(rng, (5, 12)), u(rng, (12, 9)), u(rng, (9,))
        t = f64(a) @ w + b
        if approx == "none":
            y = 0.5 * t * (1 + erf(t / np.sqrt(2)))
        else:
            y = 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))
        nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
                 helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
                 helper.make_node("Gelu", ["t2"], ["y"], name="gelu", approximate=approx)]
        save(outdir, name, nodes, [vinfo("a", [5, 12])], [vinfo("y", [5, 9])], {"a": a},
             {"y": y}, [("w", w), ("b", b)], "Gelu", ["dnnl.matmul_add_act"], opset=20)
    # a batch folded into the rows, symbolic (references at N=3), + Tanh
    a, w = u(rng, (3, 4, 8)), u(rng, (8, 5))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Tanh", ["t"], ["y"], name="tanh")]
    save(outdir, "mm_sym_fold_tanh", nodes, [vinfo("a", ["N", 4, 8])], [vinfo("y", ["N", 4, 5])],
         {"a": a}, {"y": np.tanh(f64(a) @ w)}, [("w", w)], "Tanh", ["dnnl.matmul_act"])
    # batched MatMul of two inputs (weights at run time) + residual + LeakyRelu
    a, bm, r = u(rng, (2, 3, 4, 6)), u(rng, (2, 3, 6, 5)), u(rng, (2, 3, 4, 5))
    nodes = [helper.make_node("MatMul", ["a", "b"], ["t"], name="mm"),
             helper.make_node("Add", ["t", "r"], ["t2"], name="res"),
             helper.make_node("LeakyRelu", ["t2"], ["y"], name="leaky", alpha=0.2)]
    save(outdir, "mm_batch_res_leaky", nodes,
         [vinfo("a", [2, 3, 4, 6]), vinfo("b", [2, 3, 6, 5]), vinfo("r", [2, 3, 4, 5])],
         [vinfo("y", [2, 3, 4, 5])], {"a": a, "b": bm, "r": r},
         {"y": ACTS["leaky"][1](f64(a) @ bm + r)}, [], "LeakyRelu", ["dnnl.matmul_add_act"])
    # MatMul + a scalar + Clip with a lower bound only
    a, w, s = u(rng, (6, 7)), u(rng, (7, 3)), np.array(0.25, np.float32)
    lo = np.array(-0.1, np.float32)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["t", "s"], ["t2"], name="scalar"),
             helper.make_node("Clip", ["t2", "lo"], ["y"], name="clip")]
    save(outdir, "mm_scalar_clip", nodes, [vinfo("a", [6, 7])], [vinfo("y", [6, 3])], {"a": a},
         {"y": np.maximum(f64(a) @ w + s, -0.1)}, [("w", w), ("s", s), ("lo", lo)], "Clip",
         ["dnnl.matmul_add_act"])
    # Gemm transB with C [N] (the matmul's bias) + Elu; transA with C [M,1] + HardSigmoid
    a, w, c = u(rng, (6, 10)), u(rng, (7, 10)), u(rng, (7,))
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["t"], name="gemm", transB=1),
             helper.make_node("Elu", ["t"], ["y"], name="elu", alpha=0.5)]
    save(outdir, "gemm_tb_c_elu", nodes, [vinfo("a", [6, 10])], [vinfo("y", [6, 7])], {"a": a},
         {"y": ACTS["elu"][1](f64(a) @ f64(w).T + c)}, [("w", w), ("c", c)], "Elu",
         ["dnnl.matmul_act"])
    a, w, c = u(rng, (10, 6)), u(rng, (10, 7)), u(rng, (6, 1))
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["t"], name="gemm", transA=1),
             helper.make_node("HardSigmoid", ["t"], ["y"], name="hsig", alpha=0.3, beta=0.4)]
    save(outdir, "gemm_ta_cm1_hsig", nodes, [vinfo("a", [10, 6]), vinfo("c", [6, 1])],
         [vinfo("y", [6, 7])], {"a": a, "c": c}, {"y": ACTS["hsig"][1](f64(a).T @ w + c)},
         [("w", w)], "HardSigmoid", ["dnnl.matmul_act"])
    # Gemm alpha without C: a linear post-op before the Sigmoid
    a, w = u(rng, (4, 8)), u(rng, (8, 5))
    nodes = [helper.make_node("Gemm", ["a", "w"], ["t"], name="gemm", alpha=0.5),
             helper.make_node("Sigmoid", ["t"], ["y"], name="sig")]
    save(outdir, "gemm_alpha_sigmoid", nodes, [vinfo("a", [4, 8])], [vinfo("y", [4, 5])],
         {"a": a}, {"y": ACTS["sigmoid"][1](0.5 * (f64(a) @ w))}, [("w", w)], "Sigmoid",
         ["dnnl.matmul_act"])
    # refused: Gemm with beta != 1 stays on c; a broadcast MatMul batch stays on c
    a, w, c = u(rng, (4, 8)), u(rng, (8, 5)), u(rng, (5,))
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm", beta=2.0)]
    save(outdir, "gemm_refuse_beta", nodes, [vinfo("a", [4, 8])], [vinfo("y", [4, 5])],
         {"a": a}, {"y": f64(a) @ w + 2 * f64(c)}, [("w", w), ("c", c)], "Gemm", [],
         expect="c")
    a, bm = u(rng, (2, 1, 4, 6)), u(rng, (1, 3, 6, 5))
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")]
    save(outdir, "mm_refuse_bcast", nodes, [vinfo("a", [2, 1, 4, 6]), vinfo("b", [1, 3, 6, 5])],
         [vinfo("y", [2, 3, 4, 5])], {"a": a, "b": bm}, {"y": f64(a) @ bm}, [], "MatMul", [],
         expect="c")


# ---- standalone ops ----

def pool_ref(x, kind, k, s, pads, dil, ceil, include_pad):
    """ONNX MaxPool / AveragePool in float64, by loops over the windows."""
    r = len(k)
    sp = x.shape[2:]
    ek = [(k[i] - 1) * dil[i] + 1 for i in range(r)]
    out = []
    for i in range(r):
        span = sp[i] + pads[i] + pads[i + r] - ek[i]
        o = (-(-span // s[i]) if ceil else span // s[i]) + 1
        if ceil and (o - 1) * s[i] >= sp[i] + pads[i]:
            o -= 1
        out.append(o)
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        vals, cnt = [], 0
        for kp in np.ndindex(*k):
            idx = [pos[i] * s[i] + kp[i] * dil[i] - pads[i] for i in range(r)]
            # the explicit pads count for count_include_pad; the ceil overhang does not
            if all(-pads[i] <= idx[i] < sp[i] + pads[i + r] for i in range(r)):
                cnt += 1
            if all(0 <= idx[i] < sp[i] for i in range(r)):
                vals.append(x[(Ellipsis,) + tuple(idx)])
        v = np.stack(vals)
        if kind == "max":
            y[(Ellipsis,) + pos] = v.max(axis=0)
        else:
            y[(Ellipsis,) + pos] = v.sum(axis=0) / (cnt if include_pad else len(vals))
    return y


def pools(outdir, rng):
    # (name, op, x shape (N: symbolic, references at 3), kernel, strides, pads,
    #  dilations, ceil_mode, count_include_pad, expect)
    cases = [
        ("maxpool_s2_p1", "MaxPool", (2, 4, 9, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, 0,
         "dnnl"),
        ("maxpool_ceil_dil", "MaxPool", (1, 3, 10, 9), (3, 2), (2, 2), (1, 0, 0, 1), (2, 1), 1,
         0, "dnnl"),
        ("maxpool_1d", "MaxPool", (2, 3, 11), (3,), (2,), (0, 1), (1,), 0, 0, "dnnl"),
        ("maxpool_3d", "MaxPool", (1, 2, 5, 6, 4), (2, 2, 2), (2, 2, 1), (0, 0, 0, 1, 0, 0),
         (1, 1, 1), 0, 0, "dnnl"),
        ("avgpool_ceil_excl", "AveragePool", (1, 3, 8, 8), (3, 3), (2, 2), (1, 1, 1, 1),
         (1, 1), 1, 0, "dnnl"),
        ("avgpool_sym_incl", "AveragePool", ("N", 3, 7, 6), (3, 2), (1, 2), (1, 1, 1, 0),
         (1, 1), 0, 1, "dnnl"),
        # refused: ceil_mode's overhang with count_include_pad (oneDNN would count it)
        ("avgpool_refuse_ceil_incl", "AveragePool", (1, 2, 8, 8), (3, 3), (2, 2),
         (1, 1, 1, 1), (1, 1), 1, 1, "c"),
    ]
    for name, op, xs, k, st, pads, dil, ceil, incl, expect in cases:
        xs3 = tuple(3 if d == "N" else d for d in xs)
        x = u(rng, xs3)
        attrs = dict(kernel_shape=list(k), strides=list(st), pads=list(pads), ceil_mode=ceil)
        if op == "MaxPool":
            attrs["dilations"] = list(dil)
        else:
            attrs["count_include_pad"] = incl
        y = pool_ref(f64(x), "max" if op == "MaxPool" else "avg", k, st, pads, dil, ceil, incl)
        ys = ["N" if xs[0] == "N" else y.shape[0]] + list(y.shape[1:])
        nodes = [helper.make_node(op, ["x"], ["y"], name="pool", **attrs)]
        save(outdir, name, nodes, [vinfo("x", list(xs))], [vinfo("y", ys)], {"x": x}, {"y": y},
             [], op, ["dnnl.pool"] if expect == "dnnl" else [], expect=expect)
    for name, op, xs in (("gap_sym", "GlobalAveragePool", ("N", 8, 5, 5)),
                         ("gmp_1d", "GlobalMaxPool", (2, 8, 7))):
        xs3 = tuple(3 if d == "N" else d for d in xs)
        x = u(rng, xs3)
        axes = tuple(range(2, len(xs)))
        y = f64(x).mean(axis=axes, keepdims=True) if op == "GlobalAveragePool" else \
            f64(x).max(axis=axes, keepdims=True)
        nodes = [helper.make_node(op, ["x"], ["y"], name="gpool")]
        save(outdir, name, nodes, [vinfo("x", list(xs))],
             [vinfo("y", [xs[0], xs[1]] + [1] * (len(xs) - 2))], {"x": x}, {"y": y}, [], op,
             ["dnnl.pool"])


def gap_blocked(outdir, rng):
    # a GlobalAveragePool of a plain x into a blocked Conv (rt_dnnl_gap_plain
    # writes y blocked, the padding lanes of 20 channels 0)
    x = u(rng, (3, 20, 9, 9))
    w = u(rng, (16, 20, 1, 1))
    g = f64(x).mean(axis=(2, 3), keepdims=True)
    y = np.maximum(np.einsum("ncij,mc->nmij", g, f64(w[:, :, 0, 0])), 0)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gpool"),
             helper.make_node("Conv", ["g", "w"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    save(outdir, "gap_blocked", nodes, [vinfo("x", [3, 20, 9, 9])], [vinfo("y", [3, 16, 1, 1])],
         {"x": x}, {"y": y}, [("w", w)], "GlobalAveragePool",
         ["dnnl.pool", "dnnl.conv_act"])


def big_weights(outdir, rng):
    # a MatMul whose weights oneDNN reorders (2 MiB) over a symbolic batch:
    # dnnl_shapes -reopen checks that closing the model gives them back
    a, w = u(rng, (3, 512)), u(rng, (512, 1024))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    save(outdir, "mm_big_w", nodes, [vinfo("a", ["N", 512])], [vinfo("y", ["N", 1024])],
         {"a": a}, {"y": np.maximum(f64(a) @ f64(w), 0)}, [("w", w)], "MatMul",
         ["dnnl.matmul_act"])


def norms(outdir, rng):
    # BatchNormalization over a symbolic batch, its parameters constants
    x = u(rng, (3, 4, 5, 5))
    sc, b, mean = u(rng, (4,)), u(rng, (4,)), u(rng, (4,))
    var = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                              name="bn", epsilon=1e-3)]
    shp = (1, 4, 1, 1)
    y = (f64(x) - mean.reshape(shp)) / np.sqrt(f64(var).reshape(shp) + 1e-3) * \
        sc.reshape(shp) + b.reshape(shp)
    save(outdir, "bnorm_sym", nodes, [vinfo("x", ["N", 4, 5, 5])], [vinfo("y", ["N", 4, 5, 5])],
         {"x": x}, {"y": y}, [("s", sc), ("b", b), ("m", mean), ("v", var)],
         "BatchNormalization", ["dnnl.bnorm"])
    # BatchNormalization of rank 2, its parameters inputs
    x, sc, b, mean = u(rng, (6, 5)), u(rng, (5,)), u(rng, (5,)), u(rng, (5,))
    var = rng.uniform(0.5, 2, (5,)).astype(np.float32)
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")]
    y = (f64(x) - mean) / np.sqrt(f64(var) + 1e-5) * sc + b
    save(outdir, "bnorm_2d_inputs", nodes,
         [vinfo("x", [6, 5])] + [vinfo(k, [5]) for k in "sbmv"], [vinfo("y", [6, 5])],
         {"x": x, "s": sc, "b": b, "m": mean, "v": var}, {"y": y}, [], "BatchNormalization",
         ["dnnl.bnorm"])

    def ln(t, axis, sc, b, eps):
        axes = tuple(range(axis, t.ndim))
        m = t.mean(axis=axes, keepdims=True)
        v = ((t - m) ** 2).mean(axis=axes, keepdims=True)
        y = (t - m) / np.sqrt(v + eps) * sc
        return y + b if b is not None else y
    # LayerNormalization on the last axis, symbolic batch; then over two axes, no B
    x, sc, b = u(rng, (3, 5, 8)), u(rng, (8,)), u(rng, (8,))
    nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln",
                              epsilon=1e-4)]
    save(outdir, "lnorm_sym", nodes, [vinfo("x", ["N", 5, 8])], [vinfo("y", ["N", 5, 8])],
         {"x": x}, {"y": ln(f64(x), 2, sc, b, 1e-4)}, [("s", sc), ("b", b)],
         "LayerNormalization", ["dnnl.lnorm"], opset=17)
    x, sc = u(rng, (2, 3, 4)), u(rng, (3, 4))
    nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", axis=1)]
    save(outdir, "lnorm_axis1", nodes, [vinfo("x", [2, 3, 4])], [vinfo("y", [2, 3, 4])],
         {"x": x}, {"y": ln(f64(x), 1, sc, None, 1e-5)}, [("s", sc)], "LayerNormalization",
         ["dnnl.lnorm"], opset=17)
    # refused: a Scale that broadcasts (stays on c)
    x, sc = u(rng, (2, 3, 4)), u(rng, (1, 4))
    nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", axis=1)]
    save(outdir, "lnorm_refuse_bcast", nodes, [vinfo("x", [2, 3, 4])], [vinfo("y", [2, 3, 4])],
         {"x": x}, {"y": ln(f64(x), 1, sc, None, 1e-5)}, [("s", sc)], "LayerNormalization", [],
         expect="c", opset=17)
    # LRN across channels; refused: an even size (oneDNN's window is off by one)
    for name, size, expect in (("lrn_3", 3, "dnnl"), ("lrn_refuse_4", 4, "c")):
        x = u(rng, (2, 7, 4, 3))
        nodes = [helper.make_node("LRN", ["x"], ["y"], name="lrn", size=size, alpha=0.2,
                                  beta=0.6, bias=1.5)]
        sq = f64(x) ** 2
        ssum = np.zeros_like(sq)
        for c in range(7):
            lo, hi = max(0, c - (size - 1) // 2), min(6, c + -(-(size - 1) // 2))
            ssum[:, c] = sq[:, lo:hi + 1].sum(axis=1)
        y = f64(x) / (1.5 + 0.2 / size * ssum) ** 0.6
        save(outdir, name, nodes, [vinfo("x", [2, 7, 4, 3])], [vinfo("y", [2, 7, 4, 3])],
             {"x": x}, {"y": y}, [], "LRN", ["dnnl.lrn"] if expect == "dnnl" else [],
             expect=expect)
    # Softmax along a middle axis; LogSoftmax along the last over a symbolic batch
    x = u(rng, (2, 5, 3)) * 4
    e = np.exp(f64(x) - f64(x).max(axis=1, keepdims=True))
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)]
    save(outdir, "softmax_axis1", nodes, [vinfo("x", [2, 5, 3])], [vinfo("y", [2, 5, 3])],
         {"x": x}, {"y": e / e.sum(axis=1, keepdims=True)}, [], "Softmax", ["dnnl.softmax"])
    x = u(rng, (3, 4, 6)) * 4
    t = f64(x) - f64(x).max(axis=2, keepdims=True)
    nodes = [helper.make_node("LogSoftmax", ["x"], ["y"], name="lsm")]
    save(outdir, "logsoftmax_sym", nodes, [vinfo("x", ["N", 4, 6])], [vinfo("y", ["N", 4, 6])],
         {"x": x}, {"y": t - np.log(np.exp(t).sum(axis=2, keepdims=True))}, [], "LogSoftmax",
         ["dnnl.softmax"])
    # opset 11's Softmax flattens from the axis on
    x = u(rng, (2, 3, 4)) * 4
    f = f64(x).reshape(2, 12)
    e = np.exp(f - f.max(axis=1, keepdims=True))
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)]
    save(outdir, "softmax_opset11", nodes, [vinfo("x", [2, 3, 4])], [vinfo("y", [2, 3, 4])],
         {"x": x}, {"y": (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4)}, [], "Softmax",
         ["dnnl.softmax"], opset=11)


def erf(t):
    from math import erf as e
    return np.vectorize(e)(t)


def eltwises(outdir, rng):
    # (name, op, attrs, reference, input transform, opset)
    cases = [
        ("relu", "Relu", {}, ACTS["relu"][1], None, 14),
        ("leakyrelu", "LeakyRelu", {"alpha": 0.2}, ACTS["leaky"][1], None, 14),
        ("sigmoid", "Sigmoid", {}, ACTS["sigmoid"][1], None, 14),
        ("tanh", "Tanh", {}, np.tanh, None, 14),
        ("elu_sym", "Elu", {"alpha": 0.5}, ACTS["elu"][1], None, 14),
        ("hardsigmoid", "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, ACTS["hsig"][1], None, 14),
        ("hardswish", "HardSwish", {}, ACTS["hswish"][1], None, 14),
        ("exp", "Exp", {}, np.exp, None, 14),
        ("sqrt", "Sqrt", {}, np.sqrt, np.abs, 14),
        ("abs", "Abs", {}, np.abs, None, 14),
        ("round", "Round", {}, np.round, lambda t: np.round(t * 8) / 4, 14),
        ("gelu", "Gelu", {}, lambda t: 0.5 * t * (1 + erf(t / np.sqrt(2))), None, 20),
        ("gelu_tanh", "Gelu", {"approximate": "tanh"},
         lambda t: 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3))), None,
         20),
    ]
    for name, op, attrs, ref, tr, opset in cases:
        x = u(rng, (3, 4, 5)) * 3
        if tr is not None:
            x = tr(x).astype(np.float32)
        shape = ["N", 4, 5] if name.endswith("_sym") else [3, 4, 5]
        nodes = [helper.make_node(op, ["x"], ["y"], name=name, **attrs)]
        save(outdir, "elt_" + name, nodes, [vinfo("x", shape)], [vinfo("y", shape)], {"x": x},
             {"y": ref(f64(x))}, [], op, ["dnnl.eltwise"], opset=opset)
    # Clip with constant bounds; refused: a bound computed at run time
    x = u(rng, (3, 4, 5)) * 3
    lo, hi = np.array(-0.5, np.float32), np.array(1.25, np.float32)
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")]
    save(outdir, "elt_clip", nodes, [vinfo("x", [3, 4, 5])], [vinfo("y", [3, 4, 5])], {"x": x},
         {"y": np.clip(f64(x), -0.5, 1.25)}, [("lo", lo), ("hi", hi)], "Clip", ["dnnl.eltwise"])
    nodes = [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")]
    save(outdir, "elt_refuse_clip_input", nodes, [vinfo("x", [3, 4, 5]), vinfo("lo", [])],
         [vinfo("y", [3, 4, 5])], {"x": x, "lo": lo}, {"y": np.maximum(f64(x), -0.5)}, [],
         "Clip", [], expect="c")


def deconv_ref(x, w, b, st, pads, dil, group, outpad):
    """ONNX ConvTranspose in float64: each input pixel scatters its kernel."""
    r = x.ndim - 2
    n, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * st[i] + (k[i] - 1) * dil[i] + 1 + outpad[i]
            for i in range(r)]
    y = np.zeros((n, mg * group) + tuple(full))
    for g in range(group):
        for pos in np.ndindex(*x.shape[2:]):
            xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]  # [n, cg]
            for kp in np.ndindex(*k):
                o = tuple(pos[i] * st[i] + kp[i] * dil[i] for i in range(r))
                wv = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kp]  # [cg, mg]
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xv @ wv
    crop = tuple(slice(pads[i], full[i] - pads[i + r]) for i in range(r))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * r)
    return y


def deconvs(outdir, rng):
    # (name, x shape (N: symbolic, references at 3), M/group, kernel, strides,
    #  pads, dilations, group, output_padding, bias)
    cases = [
        ("deconv_s2_op1", (1, 4, 5, 5), 3, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1),
         True),
        ("deconv_g2_dil_sym", ("N", 4, 4, 5), 2, (2, 3), (1, 2), (0, 1, 1, 0), (2, 1), 2,
         (0, 0), False),
        ("deconv_1d_s3", (2, 3, 7), 2, (4,), (3,), (1, 2), (1,), 1, (2,), True),
    ]
    for name, xs, mg, k, st, pads, dil, group, op, bias in cases:
        xs3 = tuple(3 if d == "N" else d for d in xs)
        x, w = u(rng, xs3), u(rng, (xs3[1], mg) + k)
        b = u(rng, (mg * group,)) if bias else None
        y = deconv_ref(f64(x), f64(w), None if b is None else f64(b), st, pads, dil, group, op)
        nodes = [helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"],
                                  name="deconv", strides=list(st), pads=list(pads),
                                  dilations=list(dil), group=group, output_padding=list(op))]
        ys = [xs[0]] + list(y.shape[1:])
        save(outdir, name, nodes, [vinfo("x", list(xs))], [vinfo("y", ys)], {"x": x}, {"y": y},
             [("w", w)] + ([("b", b)] if bias else []), "ConvTranspose", ["dnnl.deconv"])
    # refused: output_shape (stays on c)
    x, w = u(rng, (1, 2, 3, 3)), u(rng, (2, 2, 3, 3))
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[2, 2],
                              output_shape=[8, 8])]
    y = deconv_ref(f64(x), f64(w), None, (2, 2), (0, 0, 0, 0), (1, 1), 1, (1, 1))
    save(outdir, "deconv_refuse_outshape", nodes, [vinfo("x", [1, 2, 3, 3])],
         [vinfo("y", [1, 2, 8, 8])], {"x": x}, {"y": y}, [("w", w)], "ConvTranspose", [],
         expect="c")


# ---- pools on a blocked x: collagec's own kernel (rt_dnnl.h) ----

def blocked_pools(outdir, rng):
    """A Conv (3x3, pads 1; 1x1 for the NaN cases) and a pool: the Conv's
    output reaches the pool in oneDNN's blocked layout, so that the pool runs
    collagec's kernel, on whole blocks (8 with AVX2, 16 with AVX-512) or a
    last one padded (M 12; 24 with AVX-512). With 'tail' a 1x1 Conv
    reads the pool's output, which stays blocked; without, the pool writes
    the plain graph output."""
    # (name, op, N, spatial, M, kernel, strides, pads, dilations, ceil_mode,
    #  count_include_pad, tail)
    cases = [
        ("bpool_max_k3s2p1", "MaxPool", 2, (12, 12), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1),
         0, 0, False),
        ("bpool_max_k3s2p1_tail", "MaxPool", 1, (13, 11), 16, (3, 3), (2, 2), (1, 1, 1, 1),
         (1, 1), 0, 0, True),
        ("bpool_max_k2s2_ceil", "MaxPool", 1, (9, 7), 8, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1),
         1, 0, False),
        ("bpool_max_k5s3_dil_tail", "MaxPool", 1, (17, 15), 24, (5, 5), (3, 3), (4, 2, 4, 2),
         (2, 1), 0, 0, True),
        ("bpool_max_k3s1_wide_tail", "MaxPool", 1, (5, 80), 16, (3, 3), (1, 1), (1, 1, 1, 1),
         (1, 1), 0, 0, True),
        ("bpool_max_k3x2_ceil_dil", "MaxPool", 2, (14, 10), 16, (3, 2), (3, 1), (1, 0, 2, 1),
         (2, 2), 1, 0, False),
        ("bpool_max_c12", "MaxPool", 1, (12, 12), 12, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0,
         0, False),
        ("bpool_avg_excl_k3s2_ceil_tail", "AveragePool", 1, (11, 11), 16, (3, 3), (2, 2),
         (1, 1, 1, 1), (1, 1), 1, 0, True),
        ("bpool_avg_incl_k5s3", "AveragePool", 2, (13, 14), 8, (5, 5), (3, 3), (2, 2, 2, 2),
         (1, 1), 0, 1, False),
        ("bpool_avg_incl_k2s1_tail", "AveragePool", 1, (7, 9), 24, (2, 2), (1, 1),
         (1, 1, 0, 0), (1, 1), 0, 1, True),
        ("bpool_avg_excl_k5s1p2", "AveragePool", 1, (9, 40), 16, (5, 5), (1, 1), (2, 2, 2, 2),
         (1, 1), 0, 0, False),
        ("bpool_avg_c12_tail", "AveragePool", 1, (10, 10), 12, (3, 3), (2, 2), (1, 1, 1, 1),
         (1, 1), 0, 1, True),
        ("bpool_max_1d", "MaxPool", 2, (21,), 16, (3,), (2,), (1, 1), (1,), 0, 0, False),
        ("bpool_avg_1d_ceil_tail", "AveragePool", 1, (20,), 16, (4,), (3,), (1, 2), (1,), 1, 0,
         True),
        # over the threshold of an OpenMP team: run on 2, 3 and 1 threads too
        ("bpool_max_par", "MaxPool", 1, (40, 40), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0,
         0, False),
        # NaNs in x (a 1x1 Conv keeps them to their pixels): any in a window gives NaN
        ("bpool_max_nan", "MaxPool", 1, (10, 10), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0,
         0, False),
        ("bpool_max_nan_tail", "MaxPool", 2, (9, 12), 16, (2, 3), (1, 2), (0, 1, 1, 1), (1, 1),
         1, 0, True),
    ]
    for name, op, n, sp, m, k, st, pads, dil, ceil, incl, tail in cases:
        r = len(sp)
        nan = "nan" in name
        kc = 1 if nan else 3
        pc = [0 if nan else 1] * (2 * r)
        x = u(rng, (n, 4) + sp)
        if nan:
            flat = x.reshape(-1)
            flat[rng.choice(flat.size, 6, replace=False)] = np.nan
        w, b = u(rng, (m, 4) + (kc,) * r), u(rng, (m,))
        attrs = dict(kernel_shape=list(k), strides=list(st), pads=list(pads), ceil_mode=ceil)
        if op == "MaxPool":
            attrs["dilations"] = list(dil)
        else:
            attrs["count_include_pad"] = incl
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=pc),
                 helper.make_node(op, ["t"], ["p" if tail else "y"], name="pool", **attrs)]
        inits = [("w", w), ("b", b)]
        t = convnd_ref(f64(x), f64(w), f64(b), (1,) * r, pc, (1,) * r, 1)
        y = pool_ref(t, "max" if op == "MaxPool" else "avg", k, st, pads, dil, ceil, incl)
        rules = ["dnnl.conv", "dnnl.pool"]
        if tail:
            w2 = u(rng, (m, m) + (1,) * r)
            nodes.append(helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2"))
            inits.append(("w2", w2))
            y = convnd_ref(y, f64(w2), None, (1,) * r, (0,) * (2 * r), (1,) * r, 1)
            rules.append("dnnl.conv")
        save(outdir, name, nodes, [vinfo("x", list(x.shape))], [vinfo("y", list(y.shape))],
             {"x": x}, {"y": y}, inits, op, rules)
    # a global max pool of a blocked x (the global average one: chain_blocked)
    x = u(rng, (2, 4, 6, 5))
    w, b = u(rng, (16, 4, 3, 3)), u(rng, (16,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("GlobalMaxPool", ["t"], ["y"], name="gpool")]
    t = convnd_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    save(outdir, "bpool_gmp", nodes, [vinfo("x", [2, 4, 6, 5])], [vinfo("y", [2, 16, 1, 1])],
         {"x": x}, {"y": t.max(axis=(2, 3), keepdims=True)}, [("w", w), ("b", b)],
         "GlobalMaxPool", ["dnnl.conv", "dnnl.pool"])


# ---- chains: blocked layouts handed from kernel to kernel ----

def chains(outdir, rng):
    """Conv, depthwise Conv, residual adds and pools in a row, all on dnnl:
    the values between them stay in oneDNN's blocked layout (a test reads
    oneDNN's verbose log for reorders of them). N is symbolic (references
    at N=2)."""
    def w(shape):
        return (0.3 * u(rng, shape)).astype(np.float32)

    x = u(rng, (2, 8, 12, 12))
    w1, b1 = w((16, 8, 3, 3)), w((16,))
    w2, b2 = w((16, 1, 3, 3)), w((16,))
    w3, b3 = w((16, 16, 1, 1)), w((16,))
    w4, b4 = w((16, 16, 3, 3)), w((16,))
    w5 = w((16, 16, 1, 1))
    lo, hi = np.array(0, np.float32), np.array(6, np.float32)
    p1 = [1, 1, 1, 1]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", pads=p1),
        helper.make_node("Conv", ["t1", "w2", "b2"], ["t2"], name="c2", pads=p1, group=16),
        helper.make_node("Clip", ["t2", "lo", "hi"], ["a2"], name="clip2"),
        helper.make_node("Conv", ["a2", "w3", "b3"], ["t3"], name="c3"),
        # both operands are Conv outputs, t1 read by c2 too (MobileNetV2's block)
        helper.make_node("Add", ["t1", "t3"], ["r"], name="res3"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p", "w4", "b4"], ["t4"], name="c4", pads=p1),
        helper.make_node("HardSwish", ["t4"], ["a4"], name="hswish4"),
        helper.make_node("Conv", ["a4", "w5"], ["t5"], name="c5"),
        # the pool's output as the summed operand
        helper.make_node("Add", ["t5", "p"], ["r5"], name="res5"),
        helper.make_node("Relu", ["r5"], ["a5"], name="relu5"),
        helper.make_node("GlobalAveragePool", ["a5"], ["y"], name="gap"),
    ]
    t1 = conv_ref(f64(x), f64(w1), f64(b1), (1, 1), p1, (1, 1), 1)
    a2 = np.clip(conv_ref(t1, f64(w2), f64(b2), (1, 1), p1, (1, 1), 16), 0, 6)
    r = t1 + conv_ref(a2, f64(w3), f64(b3), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    p = pool_ref(r, "max", (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 0, 0)
    a4 = ACTS["hswish"][1](conv_ref(p, f64(w4), f64(b4), (1, 1), p1, (1, 1), 1))
    a5 = np.maximum(conv_ref(a4, f64(w5), None, (1, 1), (0, 0, 0, 0), (1, 1), 1) + p, 0)
    y = a5.mean(axis=(2, 3), keepdims=True)
    save(outdir, "chain_blocked", nodes, [vinfo("x", ["N", 8, 12, 12])],
         [vinfo("y", ["N", 16, 1, 1])], {"x": x}, {"y": y},
         [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3),
          ("w4", w4), ("b4", b4), ("w5", w5), ("lo", lo), ("hi", hi)], "Conv",
         ["dnnl.conv", "dnnl.conv_act", "dnnl.conv_add", "dnnl.pool", "dnnl.conv_act",
          "dnnl.conv_add_act", "dnnl.pool"])
    # a value between two Convs that is a graph output too stays plain
    x = u(rng, (1, 8, 6, 6))
    w1, w2 = w((16, 8, 3, 3)), w((8, 16, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["t1"], name="c1", pads=p1),
             helper.make_node("Relu", ["t1"], ["a1"], name="relu1"),
             helper.make_node("Conv", ["a1", "w2"], ["y"], name="c2", pads=p1)]
    a1 = np.maximum(conv_ref(f64(x), f64(w1), None, (1, 1), p1, (1, 1), 1), 0)
    y = conv_ref(a1, f64(w2), None, (1, 1), p1, (1, 1), 1)
    save(outdir, "chain_tap_out", nodes, [vinfo("x", [1, 8, 6, 6])],
         [vinfo("a1", [1, 16, 6, 6]), vinfo("y", [1, 8, 6, 6])], {"x": x}, {"a1": a1, "y": y},
         [("w1", w1), ("w2", w2)], "Conv", ["dnnl.conv_act", "dnnl.conv"])


def padded_chain(outdir, rng):
    """chain_padded: blocked values whose channels are no multiple of the
    block (12: of neither AVX2's 8 nor AVX-512's 16; 24: of 16 only; 20),
    stored padded to the next 16 and handed over as they are: a Conv with
    a Sigmoid post-op (which would make 0.5 of padding not kept zero), a
    depthwise Conv, 1x1 Convs, a residual add, a MaxPool on collagec's own
    kernel, then a grouped Conv (10 channels a group), which reads its x
    plain. N is symbolic (references at N=2)."""
    def w(shape):
        return (0.3 * u(rng, shape)).astype(np.float32)

    x = u(rng, (2, 3, 10, 10))
    w1, b1 = w((12, 3, 3, 3)), w((12,))
    w2, b2 = w((12, 1, 3, 3)), w((12,))
    w3, w4 = w((24, 12, 1, 1)), w((24, 12, 1, 1))
    w5, b5 = w((20, 24, 3, 3)), w((20,))
    w6 = w((20, 10, 1, 1))
    lo, hi = np.array(0, np.float32), np.array(6, np.float32)
    p1 = [1, 1, 1, 1]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", pads=p1),
        helper.make_node("Sigmoid", ["t1"], ["s1"], name="sig1"),
        helper.make_node("Conv", ["s1", "w2", "b2"], ["t2"], name="c2", pads=p1, group=12),
        helper.make_node("Clip", ["t2", "lo", "hi"], ["a2"], name="clip2"),
        helper.make_node("Conv", ["a2", "w3"], ["t3"], name="c3"),
        helper.make_node("Conv", ["s1", "w4"], ["t4"], name="c4"),
        helper.make_node("Add", ["t4", "t3"], ["r"], name="res4"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p", "w5", "b5"], ["t5"], name="c5", pads=p1),
        helper.make_node("Relu", ["t5"], ["a5"], name="relu5"),
        helper.make_node("Conv", ["a5", "w6"], ["y"], name="c6", group=2),
    ]
    s1 = ACTS["sigmoid"][1](conv_ref(f64(x), f64(w1), f64(b1), (1, 1), p1, (1, 1), 1))
    a2 = np.clip(conv_ref(s1, f64(w2), f64(b2), (1, 1), p1, (1, 1), 12), 0, 6)
    z = (0, 0, 0, 0)
    r = (conv_ref(s1, f64(w4), None, (1, 1), z, (1, 1), 1) +
         conv_ref(a2, f64(w3), None, (1, 1), z, (1, 1), 1))
    p = pool_ref(r, "max", (2, 2), (2, 2), z, (1, 1), 0, 0)
    a5 = np.maximum(conv_ref(p, f64(w5), f64(b5), (1, 1), p1, (1, 1), 1), 0)
    y = conv_ref(a5, f64(w6), None, (1, 1), z, (1, 1), 2)
    save(outdir, "chain_padded", nodes, [vinfo("x", ["N", 3, 10, 10])],
         [vinfo("y", ["N", 20, 5, 5])], {"x": x}, {"y": y},
         [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("w4", w4),
          ("w5", w5), ("b5", b5), ("w6", w6), ("lo", lo), ("hi", hi)], "Conv",
         ["dnnl.conv_act", "dnnl.conv_act", "dnnl.conv", "dnnl.conv_add", "dnnl.pool",
          "dnnl.conv_act", "dnnl.conv"])


def winograds(outdir, rng):
    """3x3 stride-1 Convs that run by Winograd where oneDNN has none
    (rt_dnnl_wino: collagec's F(4x4, 3x3) transforms around a oneDNN
    matmul): channels no multiple of the block (19 in, 21 out), uneven
    pads, none, a plain x and y reordered at the edges, a summed operand
    that is blocked and one that is a plain graph input, an add by channel
    and of a scalar, and every post-op the output transform applies (Relu,
    LeakyRelu, HardSigmoid's linear and Clip, Clip). tests/backends.sh
    counts the Convs that ran by Winograd, oneDNN's or collagec's: 'wino'
    holds how many must."""
    def w(shape):
        return (0.2 * u(rng, shape)).astype(np.float32)

    def save_wino(name, count, *args, **kw):
        save(outdir, name, *args, **kw)
        with open(os.path.join(outdir, name, "wino"), "w") as f:
            f.write("%d\n" % count)

    # one Conv, plain x and y, pads (1, 0) before and (2, 1) after: y 18 x 17
    pads = [1, 0, 2, 1]
    x, wt, b = u(rng, (2, 19, 17, 18)), w((21, 19, 3, 3)), w((21,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=pads),
             helper.make_node("LeakyRelu", ["t"], ["y"], name="leaky", alpha=0.2)]
    t = conv_ref(f64(x), f64(wt), f64(b), (1, 1), pads, (1, 1), 1)
    save_wino("wino_pad_leaky", 1, nodes, [vinfo("x", [2, 19, 17, 18])],
              [vinfo("y", [2, 21, 18, 17])], {"x": x}, {"y": ACTS["leaky"][1](t)},
              [("w", wt), ("b", b)], "Conv", ["dnnl.conv_act"])

    # a chain over a symbolic batch (references at N=2)
    p1 = [1, 1, 1, 1]
    x = u(rng, (2, 16, 16, 16))
    w1, b1 = w((16, 16, 3, 3)), w((16,))
    w2, b2 = w((16, 16, 3, 3)), w((16,))
    w3 = w((24, 16, 3, 3))
    w4, b4 = w((20, 24, 3, 3)), w((20,))
    w5 = w((16, 20, 3, 3))
    c = u(rng, (20, 1, 1))
    lo, hi = np.array(0.1, np.float32), np.array(0.9, np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", pads=p1),
        helper.make_node("Relu", ["t1"], ["a1"], name="relu1"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["t2"], name="c2", pads=p1),
        # the summed operand: a1, blocked like t2
        helper.make_node("Add", ["t2", "a1"], ["r2"], name="res2"),
        helper.make_node("Relu", ["r2"], ["a2"], name="relu2"),
        helper.make_node("Conv", ["a2", "w3"], ["t3"], name="c3", pads=p1),
        helper.make_node("HardSigmoid", ["t3"], ["a3"], name="hsig3", alpha=0.3, beta=0.4),
        helper.make_node("Conv", ["a3", "w4", "b4"], ["t4"], name="c4", pads=p1),
        helper.make_node("Add", ["t4", "c"], ["r4"], name="chan4"),
        helper.make_node("Clip", ["r4", "lo", "hi"], ["a4"], name="clip4"),
        helper.make_node("Conv", ["a4", "w5"], ["y"], name="c5", pads=p1),
    ]
    a1 = np.maximum(conv_ref(f64(x), f64(w1), f64(b1), (1, 1), p1, (1, 1), 1), 0)
    a2 = np.maximum(conv_ref(a1, f64(w2), f64(b2), (1, 1), p1, (1, 1), 1) + a1, 0)
    a3 = ACTS["hsig"][1](conv_ref(a2, f64(w3), None, (1, 1), p1, (1, 1), 1))
    a4 = np.clip(conv_ref(a3, f64(w4), f64(b4), (1, 1), p1, (1, 1), 1) + c, 0.1, 0.9)
    y = conv_ref(a4, f64(w5), None, (1, 1), p1, (1, 1), 1)
    save_wino("wino_chain", 5, nodes, [vinfo("x", ["N", 16, 16, 16]), vinfo("c", [20, 1, 1])],
              [vinfo("y", ["N", 16, 16, 16])], {"x": x, "c": c}, {"y": y},
              [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("w4", w4),
               ("b4", b4), ("w5", w5), ("lo", lo), ("hi", hi)], "Conv",
              ["dnnl.conv_act", "dnnl.conv_add_act", "dnnl.conv_act", "dnnl.conv_add_act",
               "dnnl.conv"])

    # no pads (y 16 x 16 of 18 x 18); a residual that is a plain graph input,
    # reordered into the blocked y; then a scalar input added to the next
    x, r, sc = u(rng, (1, 16, 18, 18)), u(rng, (1, 16, 16, 16)), u(rng, (1,))
    w1, w2 = w((16, 16, 3, 3)), w((16, 16, 3, 3))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["t1"], name="c1"),
        helper.make_node("Add", ["r", "t1"], ["r1"], name="res1"),
        helper.make_node("Relu", ["r1"], ["a1"], name="relu1"),
        helper.make_node("Conv", ["a1", "w2"], ["t2"], name="c2", pads=p1),
        helper.make_node("Add", ["t2", "s"], ["r2"], name="scalar2"),
        helper.make_node("Relu", ["r2"], ["y"], name="relu2"),
    ]
    z = (0, 0, 0, 0)
    a1 = np.maximum(conv_ref(f64(x), f64(w1), None, (1, 1), z, (1, 1), 1) + r, 0)
    y = np.maximum(conv_ref(a1, f64(w2), None, (1, 1), p1, (1, 1), 1) + sc, 0)
    save_wino("wino_res_input", 2, nodes,
              [vinfo("x", [1, 16, 18, 18]), vinfo("r", [1, 16, 16, 16]), vinfo("s", [1])],
              [vinfo("y", [1, 16, 16, 16])], {"x": x, "r": r, "s": sc}, {"y": y},
              [("w1", w1), ("w2", w2)], "Conv", ["dnnl.conv_add_act", "dnnl.conv_add_act"])

    # one input over a symbolic batch, for one handle run at several batch
    # sizes (dnnl_shapes.c): Conv+Relu, then a Conv summing that Relu's output
    x = u(rng, (2, 16, 16, 16))
    w1, b1, w2 = w((16, 16, 3, 3)), w((16,)), w((16, 16, 3, 3))
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", pads=p1),
        helper.make_node("Relu", ["t1"], ["a1"], name="relu1"),
        helper.make_node("Conv", ["a1", "w2"], ["t2"], name="c2", pads=p1),
        helper.make_node("Add", ["t2", "a1"], ["r2"], name="res2"),
        helper.make_node("Relu", ["r2"], ["y"], name="relu2"),
    ]
    a1 = np.maximum(conv_ref(f64(x), f64(w1), f64(b1), (1, 1), p1, (1, 1), 1), 0)
    y = np.maximum(conv_ref(a1, f64(w2), None, (1, 1), p1, (1, 1), 1) + a1, 0)
    save_wino("wino_sym", 2, nodes, [vinfo("x", ["N", 16, 16, 16])],
              [vinfo("y", ["N", 16, 16, 16])], {"x": x}, {"y": y},
              [("w1", w1), ("b1", b1), ("w2", w2)], "Conv",
              ["dnnl.conv_act", "dnnl.conv_add_act"])


def convnd_ref(x, w, b, st, pads, dil, group):
    """ONNX Conv over any number of spatial dims in float64."""
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + r]) for i in range(r)])
    ks = w.shape[2:]
    out = [(xp.shape[2 + i] - ((ks[i] - 1) * dil[i] + 1)) // st[i] + 1 for i in range(r)]
    m, cg = w.shape[:2]
    mg = m // group
    y = np.zeros((x.shape[0], m) + tuple(out))
    for g in range(group):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg]
        for kp in np.ndindex(*ks):
            sl = tuple(slice(kp[i] * dil[i], kp[i] * dil[i] + st[i] * (out[i] - 1) + 1, st[i])
                       for i in range(r))
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", xs[(Ellipsis,) + sl],
                                                   ws[(slice(None), slice(None)) + kp])
    if b is not None:
        y += b.reshape((1, m) + (1,) * r)
    return y


def convs_nd(outdir, rng):
    """1-D and 3-D Convs with post-ops, and a 1-D chain that stays blocked."""
    # 1-D: strided, padded, dilated, a residual (the next conv's input) and Relu
    x = u(rng, (2, 8, 20))
    w1, b1, w2 = u(rng, (16, 8, 3)), u(rng, (16,)), u(rng, (16, 16, 3))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", pads=[1, 2],
                              strides=[2], dilations=[2]),
             helper.make_node("Conv", ["t1", "w2"], ["t2"], name="c2", pads=[1, 1]),
             helper.make_node("Add", ["t1", "t2"], ["t3"], name="res"),
             helper.make_node("Relu", ["t3"], ["y"], name="relu")]
    t1 = convnd_ref(f64(x), f64(w1), f64(b1), (2,), (1, 2), (2,), 1)
    t3 = t1 + convnd_ref(t1, f64(w2), None, (1,), (1, 1), (1,), 1)
    save(outdir, "conv1d_res_relu", nodes, [vinfo("x", [2, 8, 20])],
         [vinfo("y", list(t3.shape))], {"x": x}, {"y": np.maximum(t3, 0)},
         [("w1", w1), ("b1", b1), ("w2", w2)], "Relu", ["dnnl.conv", "dnnl.conv_add_act"])
    # 3-D: depthwise, strided, padded, a per-channel bias Add and Clip
    x = u(rng, (1, 8, 5, 6, 7))
    w, cb = u(rng, (8, 1, 3, 3, 3)), u(rng, (8, 1, 1, 1))
    lo, hi = np.array(-0.5, np.float32), np.array(0.5, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", group=8,
                              pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 2]),
             helper.make_node("Add", ["t", "cb"], ["t2"], name="bias"),
             helper.make_node("Clip", ["t2", "lo", "hi"], ["y"], name="clip")]
    t = convnd_ref(f64(x), f64(w), None, (1, 2, 2), (1, 0, 1, 1, 1, 0), (1, 1, 1), 8) + cb
    save(outdir, "conv3d_dw_bias_clip", nodes, [vinfo("x", [1, 8, 5, 6, 7])],
         [vinfo("y", list(t.shape))], {"x": x}, {"y": np.clip(t, -0.5, 0.5)},
         [("w", w), ("cb", cb), ("lo", lo), ("hi", hi)], "Clip", ["dnnl.conv_add_act"])


def silus(outdir, rng):
    """SiLU as exporters write it (x * Sigmoid(x), EfficientNet's and
    LLaMA's Swish) after a Conv or MatMul: oneDNN's swish post-op, the Mul's
    operands in either order, after a bias and alone; HardSwish as x *
    HardSigmoid(x) likewise."""
    def silu(t):
        return t / (1 + np.exp(-t))

    # depthwise Conv with a bias, Mul(t, Sigmoid(t))
    x, w, b = u(rng, (2, 8, 9, 9)), u(rng, (8, 1, 3, 3)), u(rng, (8,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1],
                              group=8),
             helper.make_node("Sigmoid", ["t"], ["s"], name="sig"),
             helper.make_node("Mul", ["t", "s"], ["y"], name="silu")]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 8)
    save(outdir, "conv_dw_silu", nodes, [vinfo("x", [2, 8, 9, 9])], [vinfo("y", [2, 8, 9, 9])],
         {"x": x}, {"y": silu(t)}, [("w", w), ("b", b)], "Mul", ["dnnl.conv_silu"])
    # 1x1 Conv + a residual, then Mul(Sigmoid(t2), t2)
    x, r, w = u(rng, (1, 6, 5, 7)), u(rng, (1, 10, 5, 7)), u(rng, (10, 6, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv"),
             helper.make_node("Add", ["t", "r"], ["t2"], name="res"),
             helper.make_node("Sigmoid", ["t2"], ["s"], name="sig"),
             helper.make_node("Mul", ["s", "t2"], ["y"], name="silu")]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (0, 0, 0, 0), (1, 1), 1) + r
    save(outdir, "conv_res_silu", nodes, [vinfo("x", [1, 6, 5, 7]), vinfo("r", [1, 10, 5, 7])],
         [vinfo("y", [1, 10, 5, 7])], {"x": x, "r": r}, {"y": silu(t)}, [("w", w)], "Mul",
         ["dnnl.conv_add_silu"])
    # MatMul alone, then SiLU (a gated MLP's gate)
    a, w = u(rng, (6, 16)), u(rng, (16, 12))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Sigmoid", ["t"], ["s"], name="sig"),
             helper.make_node("Mul", ["s", "t"], ["y"], name="silu")]
    save(outdir, "mm_silu", nodes, [vinfo("a", [6, 16])], [vinfo("y", [6, 12])], {"a": a},
         {"y": silu(f64(a) @ w)}, [("w", w)], "Mul", ["dnnl.matmul_silu"])
    # silu_chain: 1x1 16 -> 24 + bias + SiLU, depthwise 3x3 + SiLU, 1x1
    # back to 16: a1 and a2 stay blocked between the Convs (24 channels: a
    # padded block on AVX-512), each swish a pass of rt_dnnl.h's over the
    # primitive's dst (oneDNN's log shows no swish post-op), 2 x 32 x 40 x 40
    # floats of a1 with the padding: split over 2 and 3 threads
    x, w1, b1 = u(rng, (2, 16, 40, 40)), u(rng, (24, 16, 1, 1)), u(rng, (24,))
    w2, b2, w3 = u(rng, (24, 1, 3, 3)), u(rng, (24,)), u(rng, (16, 24, 1, 1))
    x = (4 * x).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1"),
             helper.make_node("Sigmoid", ["t1"], ["s1"], name="sig1"),
             helper.make_node("Mul", ["t1", "s1"], ["a1"], name="silu1"),
             helper.make_node("Conv", ["a1", "w2", "b2"], ["t2"], name="c2", pads=[1, 1, 1, 1],
                              group=24),
             helper.make_node("Sigmoid", ["t2"], ["s2"], name="sig2"),
             helper.make_node("Mul", ["s2", "t2"], ["a2"], name="silu2"),
             helper.make_node("Conv", ["a2", "w3"], ["y"], name="c3")]
    a1 = silu(conv_ref(f64(x), f64(w1), f64(b1), (1, 1), (0, 0, 0, 0), (1, 1), 1))
    a2 = silu(conv_ref(a1, f64(w2), f64(b2), (1, 1), (1, 1, 1, 1), (1, 1), 24))
    y = conv_ref(a2, f64(w3), None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    save(outdir, "silu_chain", nodes, [vinfo("x", [2, 16, 40, 40])],
         [vinfo("y", [2, 16, 40, 40])], {"x": x}, {"y": y},
         [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3)], "Conv",
         ["dnnl.conv", "dnnl.conv_silu", "dnnl.conv_silu"])
    # a Sigmoid whose output is read outside the match is no SiLU: the Conv
    # and the Sigmoid on dnnl, each alone (the Conv's output is read twice),
    # the Mul on c
    x, w = u(rng, (1, 4, 6, 6)), u(rng, (4, 4, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["t"], ["s"], name="sig"),
             helper.make_node("Mul", ["t", "s"], ["y"], name="silu"),
             helper.make_node("Identity", ["s"], ["z"], name="also")]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    save(outdir, "conv_silu_refuse_shared", nodes, [vinfo("x", [1, 4, 6, 6])],
         [vinfo("y", [1, 4, 6, 6]), vinfo("z", [1, 4, 6, 6])], {"x": x},
         {"y": silu(t), "z": 1 / (1 + np.exp(-t))}, [("w", w)], "Mul",
         ["dnnl.conv", "dnnl.eltwise"], expect="c")
    # HardSwish as torch writes it before opset 14, x * HardSigmoid(x)
    # (alpha 1/6, beta 0.5): oneDNN's hardswish post-op; after a strided
    # Conv, and after a MatMul with a bias vector (the Mul's operands swapped)
    def hswish(t):
        return t * np.clip(t / 6 + 0.5, 0, 1)

    x, w, b = (4 * u(rng, (1, 3, 11, 11))).astype(np.float32), u(rng, (8, 3, 3, 3)), u(rng, (8,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("HardSigmoid", ["t"], ["s"], name="hsig", alpha=1.0 / 6,
                              beta=0.5),
             helper.make_node("Mul", ["t", "s"], ["y"], name="hswish")]
    t = conv_ref(f64(x), f64(w), f64(b), (2, 2), (1, 1, 1, 1), (1, 1), 1)
    save(outdir, "conv_hswish", nodes, [vinfo("x", [1, 3, 11, 11])], [vinfo("y", [1, 8, 6, 6])],
         {"x": x}, {"y": hswish(t)}, [("w", w), ("b", b)], "Mul", ["dnnl.conv_hswish"])
    a, w, b = (4 * u(rng, (5, 16))).astype(np.float32), u(rng, (16, 7)), u(rng, (7,))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
             helper.make_node("HardSigmoid", ["t2"], ["s"], name="hsig", alpha=1.0 / 6,
                              beta=0.5),
             helper.make_node("Mul", ["s", "t2"], ["y"], name="hswish")]
    save(outdir, "mm_bias_hswish", nodes, [vinfo("a", [5, 16])], [vinfo("y", [5, 7])], {"a": a},
         {"y": hswish(f64(a) @ w + b)}, [("w", w), ("b", b)], "Mul",
         ["dnnl.matmul_add_hswish"])
    # another HardSigmoid (alpha 0.2) is no HardSwish: the Mul stays on c
    x, w = u(rng, (1, 4, 6, 6)), u(rng, (4, 4, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("HardSigmoid", ["t"], ["s"], name="hsig", alpha=0.2, beta=0.5),
             helper.make_node("Mul", ["t", "s"], ["y"], name="gate")]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    save(outdir, "conv_hsig_gate_refused", nodes, [vinfo("x", [1, 4, 6, 6])],
         [vinfo("y", [1, 4, 6, 6])], {"x": x}, {"y": t * np.clip(0.2 * t + 0.5, 0, 1)},
         [("w", w)], "Mul", ["dnnl.conv", "dnnl.eltwise"], expect="c")


def runtime_weights_chain(outdir, rng):
    """chain_runtime_w: a Conv whose weights are an input (as after
    pass_fold_scale) between two Convs on dnnl: the values it reads and
    writes stay blocked like the others, and each run reorders the weights
    into the layout the convolution chose (given plain, with a blocked x or
    y oneDNN would run its reference convolution)."""
    x, w1, w2, w3 = u(rng, (2, 8, 10, 10)), u(rng, (16, 8, 3, 3)), u(rng, (8, 16, 1, 1)), \
        u(rng, (8, 8, 3, 3))
    p1 = [1, 1, 1, 1]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["t1"], name="c1", pads=p1),
             helper.make_node("Relu", ["t1"], ["a1"], name="relu1"),
             helper.make_node("Conv", ["a1", "w2"], ["t2"], name="c2"),
             helper.make_node("Conv", ["t2", "w3"], ["t3"], name="c3", pads=p1),
             helper.make_node("Relu", ["t3"], ["y"], name="relu3")]
    z = (0, 0, 0, 0)
    a1 = np.maximum(conv_ref(f64(x), f64(w1), None, (1, 1), p1, (1, 1), 1), 0)
    t2 = conv_ref(a1, f64(w2), None, (1, 1), z, (1, 1), 1)
    y = np.maximum(conv_ref(t2, f64(w3), None, (1, 1), p1, (1, 1), 1), 0)
    save(outdir, "chain_runtime_w", nodes, [vinfo("x", [2, 8, 10, 10]),
                                            vinfo("w2", [8, 16, 1, 1])],
         [vinfo("y", [2, 8, 10, 10])], {"x": x, "w2": w2}, {"y": y}, [("w1", w1), ("w3", w3)],
         "Conv", ["dnnl.conv_act", "dnnl.conv", "dnnl.conv_act"])


def se_blocks(outdir, rng):
    """Squeeze-and-excitation as EfficientNet and MobileNetV3 end their
    blocks: a depthwise Conv + SiLU (a), its global average pool, two 1x1
    Convs (an activation, a gate) to s, Mul(a, s) and a 1x1 projection Conv.
    The pool, the Convs, the gate and the Mul are one dnnl.se kernel.
    se_block: two images, so the Mul stays on a (pass_fold_scale folds one
    image's only); its values stay blocked. se_block_c12: 12 channels (a
    padded block), Mul(s, a) the other way round, and a second scale by a
    constant [1, 12, 1, 1] (dnnl.scale). se_fold: one image, the Mul folded
    into the projection's weights: the kernel scales [8, 16, 1, 1] weights,
    which the Conv reorders each run from a blocked x. se_silu_hsig:
    EfficientNet's SiLU between the Convs, MobileNetV3's HardSigmoid gate,
    24 channels. se_hswish_fold: HardSwish between, folded, the Mul swapped.
    se_leaky: a LeakyRelu between, which the rule does not take: pool, two
    dnnl.conv_act and a dnnl.scale, blocked from kernel to kernel.
    se_only_par: x [2, 512, 14, 14] straight in and the scaled x out, big
    enough that the pool, both GEMVs and the scale split over threads.
    scale_edges: a Mul of a graph input (plain in, blocked out) and one
    whose output is the graph's (blocked in, plain out)."""
    def silu(t):
        return t / (1 + np.exp(-t))

    def sig(t):
        return 1 / (1 + np.exp(-t))

    mids = {"relu": ("Relu", {}, lambda t: np.maximum(t, 0)),
            "hswish": ("HardSwish", {}, lambda t: t * np.clip(t / 6 + 0.5, 0, 1)),
            "leaky": ("LeakyRelu", {"alpha": 0.2}, lambda t: np.where(t > 0, t, 0.2 * t))}
    gates = {"sig": ("Sigmoid", {}, sig),
             "hsig": ("HardSigmoid", {"alpha": 1.0 / 6, "beta": 0.5},
                      lambda t: np.clip(t / 6 + 0.5, 0, 1))}

    def se_nodes(xname, mid, gate, swap, out):
        """pool, squeeze Conv, mid, expand Conv, gate, Mul: nodes, and the float64 y"""
        nodes = [helper.make_node("GlobalAveragePool", [xname], ["p"], name="gap"),
                 helper.make_node("Conv", ["p", "w2", "b2"], ["t2"], name="reduce")]
        if mid == "silu":
            nodes += [helper.make_node("Sigmoid", ["t2"], ["g2"], name="sig2"),
                      helper.make_node("Mul", ["t2", "g2"], ["a2"], name="silu2")]
        else:
            nodes.append(helper.make_node(mids[mid][0], ["t2"], ["a2"], name=mid + "2",
                                          **mids[mid][1]))
        nodes += [helper.make_node("Conv", ["a2", "w3", "b3"], ["t3"], name="expand"),
                  helper.make_node(gates[gate][0], ["t3"], ["s"], name="gate",
                                   **gates[gate][1]),
                  helper.make_node("Mul", ["s", xname] if swap else [xname, "s"], [out],
                                   name="scale")]
        return nodes

    def se_ref(a, mid, gate, w2, b2, w3, b3):
        z = (0, 0, 0, 0)
        t2 = conv_ref(a.mean(axis=(2, 3), keepdims=True), f64(w2), f64(b2), (1, 1), z, (1, 1), 1)
        a2 = silu(t2) if mid == "silu" else mids[mid][2](t2)
        return a * gates[gate][2](conv_ref(a2, f64(w3), f64(b3), (1, 1), z, (1, 1), 1))

    z, p1 = (0, 0, 0, 0), [1, 1, 1, 1]
    for name, n, c, swap, const, mid, gate in (
            ("se_block", 2, 16, False, False, "relu", "sig"),
            ("se_block_c12", 2, 12, True, True, "relu", "sig"),
            ("se_fold", 1, 16, False, False, "relu", "sig"),
            ("se_silu_hsig", 2, 24, False, False, "silu", "hsig"),
            ("se_hswish_fold", 1, 24, True, False, "hswish", "sig"),
            ("se_leaky", 2, 16, False, False, "leaky", "sig")):
        x, w1, b1 = u(rng, (n, c, 10, 10)), u(rng, (c, 1, 3, 3)), u(rng, (c,))
        w2, b2 = u(rng, (4, c, 1, 1)), u(rng, (4,))
        w3, b3 = u(rng, (c, 4, 1, 1)), u(rng, (c,))
        w4, k = u(rng, (8, c, 1, 1)), u(rng, (1, c, 1, 1))
        nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="dw", pads=p1,
                                  group=c),
                 helper.make_node("Sigmoid", ["t1"], ["g1"], name="sig1"),
                 helper.make_node("Mul", ["t1", "g1"], ["a1"], name="silu1")]
        nodes += se_nodes("a1", mid, gate, swap, "m")
        a1 = silu(conv_ref(f64(x), f64(w1), f64(b1), (1, 1), p1, (1, 1), c))
        m = se_ref(a1, mid, gate, w2, b2, w3, b3)
        rules = ["dnnl.conv_silu", "dnnl.se", "dnnl.conv"]
        if mid == "leaky":
            rules = ["dnnl.conv_silu", "dnnl.pool", "dnnl.conv_act", "dnnl.conv_act",
                     "dnnl.scale", "dnnl.conv"]
        inits = [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3),
                 ("w4", w4)]
        if const:
            nodes.append(helper.make_node("Mul", ["m", "k"], ["mk"], name="scale_k"))
            m = m * f64(k)
            rules.append("dnnl.scale")
            inits.append(("k", k))
        nodes.append(helper.make_node("Conv", ["mk" if const else "m", "w4"], ["y"],
                                      name="project"))
        y = conv_ref(m, f64(w4), None, (1, 1), z, (1, 1), 1)
        save(outdir, name, nodes, [vinfo("x", [n, c, 10, 10])], [vinfo("y", [n, 8, 10, 10])],
             {"x": x}, {"y": y}, inits, "Mul", rules)
    x, w2, b2 = u(rng, (2, 512, 14, 14)), u(rng, (128, 512, 1, 1)) / 8, u(rng, (128,))
    w3, b3 = u(rng, (512, 128, 1, 1)) / 4, u(rng, (512,))
    save(outdir, "se_only_par", se_nodes("x", "relu", "sig", False, "y"),
         [vinfo("x", [2, 512, 14, 14])], [vinfo("y", [2, 512, 14, 14])], {"x": x},
         {"y": se_ref(f64(x), "relu", "sig", w2, b2, w3, b3)},
         [("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3)], "Mul", ["dnnl.se"])
    x, s, w = u(rng, (2, 12, 5, 5)), u(rng, (2, 12, 1, 1)), u(rng, (12, 12, 3, 3))
    nodes = [helper.make_node("Mul", ["x", "s"], ["m"], name="scale_in"),
             helper.make_node("Conv", ["m", "w"], ["t"], name="conv", pads=p1),
             helper.make_node("Relu", ["t"], ["a"], name="relu"),
             helper.make_node("Mul", ["a", "s"], ["y"], name="scale_out")]
    a = np.maximum(conv_ref(f64(x) * f64(s), f64(w), None, (1, 1), p1, (1, 1), 1), 0)
    save(outdir, "scale_edges", nodes, [vinfo("x", [2, 12, 5, 5]), vinfo("s", [2, 12, 1, 1])],
         [vinfo("y", [2, 12, 5, 5])], {"x": x, "s": s}, {"y": a * f64(s)}, [("w", w)], "Mul",
         ["dnnl.scale", "dnnl.conv_act", "dnnl.scale"])


def rules(json_path):
    with open(json_path) as f:
        meta = json.load(f)
    return " ".join(sorted(p["rule"] for p in meta["partitions"] if p["target"] == "dnnl"))


def targets(json_path, op):
    with open(json_path) as f:
        meta = json.load(f)
    found = sorted({p["target"] for p in meta["partitions"]
                    if any(nd["op"] == op for nd in p["onnx_nodes"])})
    return ",".join(found) or "none"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "target":
        print(targets(sys.argv[2], sys.argv[3]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "rules":
        print(rules(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = np.random.default_rng(20261123)
    convs(sys.argv[1], rng)
    matmuls(sys.argv[1], rng)
    pools(sys.argv[1], rng)
    norms(sys.argv[1], rng)
    eltwises(sys.argv[1], rng)
    deconvs(sys.argv[1], rng)
    chains(sys.argv[1], rng)
    convs_nd(sys.argv[1], rng)
    blocked_pools(sys.argv[1], rng)
    padded_chain(sys.argv[1], rng)
    winograds(sys.argv[1], rng)
    gap_blocked(sys.argv[1], rng)
    big_weights(sys.argv[1], rng)
    silus(sys.argv[1], rng)
    runtime_weights_chain(sys.argv[1], rng)
    se_blocks(sys.argv[1], rng)


if __name__ == "__main__":
    main()
