#!/usr/bin/python3
"""Builds node tests for the opsets after 17, and for the modes of older ops
that Debian's ONNX test data misses (tests/opset.sh).

usage: gen_opset_tests.py OUTDIR

Writes, in the ONNX backend-test layout that `collagec conformance` reads:
  OUTDIR/good/NAME/model.onnx and test_data_set_0/{input,output}_K.pb
      one model per op version that opsets 18 to 28 added or changed, and
      models for GridSample, MaxPool's Indices, MaxUnpool, training-mode
      BatchNormalization, RoiAlign, TfIdfVectorizer, DFT, STFT, the window
      functions, DeformConv and the ai.onnx.preview.training optimizers,
      with expected outputs computed here with numpy from the operator specs
  OUTDIR/bad/NAME/model.onnx and expect
      models collagec must refuse; expect holds a line of the message

Debian's python3-onnx (1.12) knows opsets up to 17 only, so the models are
written with onnx.helper and an explicit opset_import, without the checker.
Needs python3-onnx and python3-numpy only; every byte is deterministic.
"""
import math
import re
import sys

import numpy as np
from onnx import helper, numpy_helper

import nodetest

RNG = np.random.default_rng(23)
GOOD = []
BAD = []


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def const(name, array):
    """A Constant node holding array (for inputs that must be constant)."""
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(array), name))


def vinfo(name, array):
    a = np.asarray(array)
    return helper.make_tensor_value_info(name, numpy_helper.from_array(a).data_type, a.shape)


def model(name, opset, nodes, inputs, outputs):
    graph = helper.make_graph(nodes, name, [vinfo(k, v) for k, v in inputs.items()],
                              [vinfo(k, v) for k, v in outputs.items()])
    m = helper.make_model(graph, producer_name="collagec-opset-test",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def good(name, opset, nodes, inputs, outputs):
    """A test: nodes run on inputs (name -> array) must give outputs."""
    GOOD.append((name, model(name, opset, nodes, inputs, outputs), inputs, outputs))


def bad(name, opset, nodes, inputs, outputs, expect):
    """A model collagec must refuse with a message containing expect."""
    BAD.append((name, model(name, opset, nodes, inputs, outputs), expect))


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=op.lower() + "_" + outs[0], **attrs)


# ---- Reduce*-18: axes as an input, noop_with_empty_axes ----

REDUCE = {
    "ReduceL1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "ReduceLogSumExp": lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k)),
    "ReduceMax": lambda x, a, k: np.max(x, axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "ReduceMin": lambda x, a, k: np.min(x, axis=a, keepdims=k),
    "ReduceProd": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "ReduceSum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "ReduceSumSquare": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k),
}


def reduce_tests():
    x = np.abs(randn(3, 2, 4)) + 0.5
    for op, f in REDUCE.items():
        low = op.lower()
        good("%s_18_axes_input" % low, 18,
             [const("axes", np.array([0, -1], np.int64)),
              node(op, ["x", "axes"], ["y"], keepdims=1)],
             {"x": x}, {"y": f(x, (0, 2), True).astype(np.float32)})
        good("%s_18_no_axes" % low, 18, [node(op, ["x"], ["y"], keepdims=0)],
             {"x": x}, {"y": np.asarray(f(x, None, False), np.float32)})
        good("%s_18_noop_empty_axes" % low, 18,
             [const("axes", np.zeros([0], np.int64)),
              node(op, ["x", "axes"], ["y"], noop_with_empty_axes=1)],
             {"x": x}, {"y": x})
        # the attribute form of opset 17 still works
        if op != "ReduceSum":
            good("%s_17_axes_attr" % low, 17, [node(op, ["x"], ["y"], axes=[1], keepdims=0)],
                 {"x": x}, {"y": f(x, 1, False).astype(np.float32)})
    b = np.array([[True, False, True], [True, True, True]])
    for op, f in (("ReduceMax", np.any), ("ReduceMin", np.all)):
        good("%s_20_bool" % op.lower(), 20,
             [const("axes", np.array([1], np.int64)), node(op, ["x", "axes"], ["y"], keepdims=0)],
             {"x": b}, {"y": f(b, axis=1)})


# ---- Split-18 num_outputs, Pad-18 axes, Pad-19 wrap ----

def split_pad_tests():
    x = randn(2, 7)
    good("split_18_num_outputs_uneven", 18,
         [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
         {"x": x}, {"a": x[:, 0:3], "b": x[:, 3:6], "c": x[:, 6:7]})
    good("split_18_num_outputs_even", 18,
         [node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2)],
         {"x": x}, {"a": x[0:1], "b": x[1:2]})
    bad("split_18_num_outputs_mismatch", 18,
        [node("Split", ["x"], ["a", "b"], axis=1, num_outputs=3)],
        {"x": x}, {"a": x, "b": x}, "num_outputs is 3 but the node has 2 outputs")
    x = randn(2, 3, 4)
    good("pad_18_axes", 18,
         [const("pads", np.array([1, 0, 2, 1], np.int64)),
          const("axes", np.array([-1, 1], np.int64)),
          const("cv", np.array(1.5, np.float32)),
          node("Pad", ["x", "pads", "cv", "axes"], ["y"])],
         {"x": x}, {"y": np.pad(x, [(0, 0), (0, 1), (1, 2)], constant_values=1.5)})
    good("pad_19_wrap", 19,
         [const("pads", np.array([0, 1, 0, 2], np.int64)),
          node("Pad", ["x", "pads", "", ""], ["y"], mode="wrap")],
         {"x": x[0]}, {"y": np.pad(x[0], [(0, 0), (1, 2)], mode="wrap")})
    good("pad_18_reflect_axes", 18,
         [const("pads", np.array([2, 1], np.int64)), const("axes", np.array([2], np.int64)),
          node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")],
         {"x": x}, {"y": np.pad(x, [(0, 0), (0, 0), (2, 1)], mode="reflect")})
    good("pad_23_edge_axes", 23,
         [const("pads", np.array([2, 1], np.int64)), const("axes", np.array([0], np.int64)),
          node("Pad", ["x", "pads", "", "axes"], ["y"], mode="edge")],
         {"x": x[0]}, {"y": np.pad(x[0], [(2, 1), (0, 0)], mode="edge")})


# ---- versions that only widened types (opsets 19 to 23) ----

def widen_tests():
    x = randn(2, 3, 4)
    for opset in (19, 21, 23):
        good("shape_ops_%d" % opset, opset,
             [const("shape", np.array([6, 4], np.int64)),
              node("Reshape", ["x", "shape"], ["r"]),
              node("Transpose", ["r"], ["t"], perm=[1, 0]),
              const("ax", np.array([0], np.int64)),
              node("Unsqueeze", ["t", "ax"], ["u"]),
              node("Squeeze", ["u", "ax"], ["s"]),
              node("Flatten", ["s"], ["f"], axis=1),
              node("Identity", ["f"], ["y"]),
              node("Shape", ["x"], ["sh"], start=1),
              node("Size", ["x"], ["n"]),
              node("Cast", ["x"], ["c"], to=6),
              node("CastLike", ["c", "x"], ["cl"]),
              node("Equal", ["c", "c"], ["eq"])],
             {"x": x},
             {"y": x.reshape(6, 4).T.copy(), "sh": np.array([3, 4], np.int64),
              "n": np.array(24, np.int64), "cl": x.astype(np.int32).astype(np.float32),
              "eq": np.ones(x.shape, bool)})
    good("cast_19_saturate", 19, [node("Cast", ["x"], ["y"], to=7, saturate=1)],
         {"x": x}, {"y": x.astype(np.int64)})
    good("constantofshape_21", 21,
         [const("s", np.array([2, 3], np.int64)),
          node("ConstantOfShape", ["s"], ["y"],
               value=numpy_helper.from_array(np.array([7], np.int32)))],
         {"x": x}, {"y": np.full((2, 3), 7, np.int32)})
    xs = [randn(2, 3) for _ in range(2)]
    ops22 = [("Acos", np.arccos, 0.5), ("Asin", np.arcsin, 0.5), ("Atan", np.arctan, 1),
             ("Cos", np.cos, 1), ("Sin", np.sin, 1), ("Tan", np.tan, 1),
             ("Softsign", lambda v: v / (1 + np.abs(v)), 1), ("Round", np.round, 3)]
    for op, f, s in ops22:
        v = xs[0] * s
        good("%s_22" % op.lower(), 22, [node(op, ["x"], ["y"])], {"x": v},
             {"y": f(v).astype(np.float32)})
    x = xs[1]
    act22 = [("Elu", {}, lambda v: np.where(v < 0, np.exp(v) - 1, v)),
             ("Selu", {}, lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 *
                                                                  (np.exp(v) - 1))),
             ("HardSigmoid", {}, lambda v: np.clip(0.2 * v + 0.5, 0, 1)),
             ("HardSwish", {}, lambda v: v * np.clip(v / 6 + 0.5, 0, 1)),
             ("ThresholdedRelu", {"alpha": 0.5}, lambda v: np.where(v > 0.5, v, 0)),
             ("Softplus", {}, lambda v: np.log1p(np.exp(v))),
             ("Cosh", {}, np.cosh), ("Sinh", {}, np.sinh), ("Asinh", {}, np.arcsinh)]
    for op, attrs, f in act22:
        good("%s_22" % op.lower(), 22, [node(op, ["x"], ["y"], **attrs)], {"x": x},
             {"y": f(x.astype(np.float64)).astype(np.float32)})
    good("dropout_22", 22, [node("Dropout", ["x"], ["y"])], {"x": x}, {"y": x})
    good("lpnormalization_22", 22, [node("LpNormalization", ["x"], ["y"], p=2, axis=1)],
         {"x": x}, {"y": (x / np.sqrt((x.astype(np.float64) ** 2).sum(1, keepdims=True)))
                    .astype(np.float32)})
    img, w, bias = randn(1, 3, 4, 4), randn(2, 3, 1, 1), randn(2)
    good("conv_22", 22, [node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[1, 1])],
         {"x": img, "w": w, "b": bias},
         {"y": (np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), img) +
                bias[None, :, None, None]).astype(np.float32)})
    good("maxpool_22", 22, [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
         {"x": img}, {"y": img.reshape(1, 3, 2, 2, 2, 2).max(axis=(3, 5))})
    good("globalaveragepool_22", 22, [node("GlobalAveragePool", ["x"], ["y"])], {"x": img},
         {"y": img.mean(axis=(2, 3), keepdims=True)})
    sc, bi = randn(3), randn(3)
    mean = img.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    var = img.astype(np.float64).var(axis=(2, 3), keepdims=True)
    good("instancenormalization_22", 22,
         [node("InstanceNormalization", ["x", "s", "b"], ["y"])], {"x": img, "s": sc, "b": bi},
         {"y": ((img - mean) / np.sqrt(var + 1e-5) * sc[None, :, None, None] +
                bi[None, :, None, None]).astype(np.float32)})
    good("eyelike_22", 22, [node("EyeLike", ["x"], ["y"], k=1)], {"x": xs[0]},
         {"y": np.eye(2, 3, 1, dtype=np.float32)})


# ---- new elementwise ops: Bitwise*-18, Mish-18, Gelu-20 ----

def erf(v):
    return np.vectorize(math.erf)(v.astype(np.float64))


def elementwise_tests():
    for t in (np.int32, np.uint8, np.int64):
        a = RNG.integers(0, 100, (3, 4)).astype(t)
        b = RNG.integers(0, 100, (4,)).astype(t)
        sfx = np.dtype(t).name
        good("bitwiseand_18_%s" % sfx, 18, [node("BitwiseAnd", ["a", "b"], ["y"])],
             {"a": a, "b": b}, {"y": a & b})
        good("bitwiseor_18_%s" % sfx, 18, [node("BitwiseOr", ["a", "b"], ["y"])],
             {"a": a, "b": b}, {"y": a | b})
        good("bitwisexor_18_%s" % sfx, 18, [node("BitwiseXor", ["a", "b"], ["y"])],
             {"a": a, "b": b}, {"y": a ^ b})
        good("bitwisenot_18_%s" % sfx, 18, [node("BitwiseNot", ["a"], ["y"])],
             {"a": a}, {"y": ~a})
    x = randn(3, 5) * 3
    x[0, 0] = 30
    sp = np.where(x > 20, x, np.log1p(np.exp(x.astype(np.float64))))
    good("mish_18", 18, [node("Mish", ["x"], ["y"])], {"x": x},
         {"y": (x * np.tanh(sp)).astype(np.float32)})
    xd = x.astype(np.float64)
    good("gelu_20", 20, [node("Gelu", ["x"], ["y"])], {"x": x},
         {"y": (0.5 * xd * (1 + erf(xd / math.sqrt(2)))).astype(np.float32)})
    good("gelu_20_tanh", 20, [node("Gelu", ["x"], ["y"], approximate="tanh")], {"x": x},
         {"y": (0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                        (xd + 0.044715 * xd ** 3)))).astype(np.float32)})
    bad("gelu_20_bad_approximate", 20, [node("Gelu", ["x"], ["y"], approximate="fast")],
        {"x": x}, {"y": x}, "approximate 'fast' is not supported")
    bad("bitwiseand_18_float", 18, [node("BitwiseAnd", ["x", "x"], ["y"])],
        {"x": x}, {"y": x}, "input 0 must be an integer type, not float32")
    xi = (randn(2, 3) * 10).astype(np.float32)
    xi[0, 0] = np.inf
    xi[0, 1] = -np.inf
    xi[1, 0] = np.nan
    good("isinf_20", 20, [node("IsInf", ["x"], ["y"], detect_negative=0)], {"x": xi},
         {"y": np.isposinf(xi)})
    good("isnan_20", 20, [node("IsNaN", ["x"], ["y"])], {"x": xi}, {"y": np.isnan(xi)})


# ---- ScatterElements-18 / ScatterND-18 max and min; pools with dilations, ceil_mode ----

def scatter_tests():
    data = randn(3, 4)
    ix = np.array([[1, 0, 2, 1], [2, 2, 0, 0]], np.int64)
    up = randn(2, 4)
    for red, f in (("max", np.maximum), ("min", np.minimum)):
        want = data.copy()
        for i in range(2):
            for j in range(4):
                want[ix[i, j], j] = f(want[ix[i, j], j], up[i, j])
        good("scatterelements_18_%s" % red, 18,
             [const("ix", ix), node("ScatterElements", ["x", "ix", "u"], ["y"], axis=0,
                                    reduction=red)],
             {"x": data, "u": up}, {"y": want})
        nix = np.array([[1], [0], [1]], np.int64)
        nup = randn(3, 4)
        want = data.copy()
        for i in range(3):
            want[nix[i, 0]] = f(want[nix[i, 0]], nup[i])
        good("scatternd_18_%s" % red, 18,
             [const("ix", nix), node("ScatterND", ["x", "ix", "u"], ["y"], reduction=red)],
             {"x": data, "u": nup}, {"y": want})


def pool2d(x, k, s, d, pads, ceil, kind, incl=0, p=2):
    """Reference 2-D pooling from the spec's window rules (kind avg or lp)."""
    n, c, h, w = x.shape
    outs = []
    for ax, ln in enumerate((h, w)):
        span = ln + pads[ax] + pads[ax + 2] - ((k[ax] - 1) * d[ax] + 1)
        o = (-(-span // s[ax]) if ceil else span // s[ax]) + 1
        if ceil and (o - 1) * s[ax] >= ln + pads[ax]:
            o -= 1
        outs.append(o)
    y = np.zeros((n, c, outs[0], outs[1]), np.float64)
    for i in range(outs[0]):
        for j in range(outs[1]):
            acc = np.zeros((n, c))
            cnt = 0
            padded = 0
            for a in range(k[0]):
                for b in range(k[1]):
                    r = i * s[0] + a * d[0] - pads[0]
                    q = j * s[1] + b * d[1] - pads[1]
                    if -pads[0] <= r < h + pads[2] and -pads[1] <= q < w + pads[3]:
                        padded += 1
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q].astype(np.float64)
                        acc += np.abs(v) ** p if kind == "lp" else v
                        cnt += 1
            if kind == "lp":
                y[:, :, i, j] = acc ** (1.0 / p)
            else:
                y[:, :, i, j] = acc / (padded if incl else cnt)
    return y.astype(np.float32)


def pool_tests():
    x = randn(1, 2, 7, 7)
    good("averagepool_19_dilations", 19,
         [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], dilations=[2, 2],
               pads=[1, 1, 1, 1])],
         {"x": x}, {"y": pool2d(x, [3, 3], [1, 1], [2, 2], [1, 1, 1, 1], 0, "avg")})
    good("averagepool_19_dilations_ceil_include_pad", 19,
         [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 3], dilations=[2, 1],
               strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1, count_include_pad=1)],
         {"x": x}, {"y": pool2d(x, [2, 3], [2, 2], [2, 1], [1, 0, 0, 1], 1, "avg", incl=1)})
    x = randn(1, 1, 6, 6)
    good("lppool_18_ceil_mode", 18,
         [node("LpPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
         {"x": x}, {"y": pool2d(x, [3, 3], [2, 2], [1, 1], [0, 0, 0, 0], 1, "lp")})
    good("lppool_18_dilations_p3", 18,
         [node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], p=3,
               pads=[1, 1, 0, 0])],
         {"x": x}, {"y": pool2d(x, [2, 2], [1, 1], [2, 2], [1, 1, 0, 0], 0, "lp", p=3)})


# ---- MaxPool's Indices output (opset 8 on; written at 18) ----

def maxpool_indices(x, k, s, d, pads, order):
    """Y and the flat index of each window's first maximum (no ceil_mode)."""
    sp = x.shape[2:]
    r = len(sp)
    outs = [(sp[i] + pads[i] + pads[i + r] - (k[i] - 1) * d[i] - 1) // s[i] + 1
            for i in range(r)]
    y = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    ind = np.zeros(y.shape, np.int64)
    step = int(np.prod(sp))
    for nc in np.ndindex(*x.shape[:2]):
        for o in np.ndindex(*outs):
            best = None
            for kk in np.ndindex(*k):
                pos = [o[i] * s[i] + kk[i] * d[i] - pads[i] for i in range(r)]
                if all(0 <= pos[i] < sp[i] for i in range(r)):
                    v = x[nc + tuple(pos)]
                    if best is None or v > best[0]:
                        best = (v, pos)
            if order == 0:
                flat = int(np.ravel_multi_index(best[1], sp))
            else:
                flat = int(np.ravel_multi_index(best[1], sp, order="F"))
            y[nc + o] = best[0]
            ind[nc + o] = (nc[0] * x.shape[1] + nc[1]) * step + flat
    return y, ind


def maxpool_indices_tests():
    rng = np.random.default_rng(8)
    cases = (("2d_storage_order1", (2, 3, 5, 6), [3, 2], [2, 1], [1, 1], [1, 0, 1, 1], 1),
             ("2d_dilations", (1, 2, 7, 7), [2, 3], [1, 2], [2, 1], [0, 1, 0, 1], 0),
             ("3d_storage_order1", (1, 2, 4, 3, 5), [2, 2, 3], [2, 1, 2], [1, 1, 1],
              [1, 0, 1, 0, 0, 1], 1),
             ("1d", (2, 2, 9), [3], [2], [1], [1, 1], 0))
    for name, shape, k, s, d, pads, order in cases:
        # small integers repeat, so the first of equal maxima must win
        x = rng.integers(-4, 5, shape).astype(np.float32)
        y, ind = maxpool_indices(x, k, s, d, pads, order)
        good("maxpool_indices_%s" % name, 18,
             [node("MaxPool", ["x"], ["y", "i"], kernel_shape=k, strides=s, dilations=d,
                   pads=pads, storage_order=order)],
             {"x": x}, {"y": y, "i": ind})
    # Y fused with a following op while Indices leave the graph
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    y, ind = maxpool_indices(x, [2, 2], [2, 2], [1, 1], [0, 0, 0, 0], 0)
    good("maxpool_indices_then_relu", 18,
         [node("MaxPool", ["x"], ["m", "i"], kernel_shape=[2, 2], strides=[2, 2]),
          node("Relu", ["m"], ["y"])],
         {"x": x}, {"y": np.maximum(y, 0), "i": ind})
    # MaxUnpool (opset 11 on) puts them back: default shape, pads, a constant output_shape
    for name, shape, k, s, pads, out in (("2d_pads", (2, 2, 5, 6), [2, 3], [2, 2], [1, 0, 0, 1],
                                          None),
                                         ("3d_output_shape", (1, 2, 4, 4, 3), [2, 2, 2],
                                          [2, 2, 1], [0] * 6, [1, 2, 5, 4, 5])):
        x = rng.standard_normal(shape).astype(np.float32)
        pooled, ind = maxpool_indices(x, k, s, [1] * len(k), pads, 0)
        r = len(k)
        dims = [(pooled.shape[i + 2] - 1) * s[i] + k[i] - pads[i] - pads[i + r]
                for i in range(r)]
        full = list(shape[:2]) + (out[2:] if out else dims)
        # I indexes the default shape; a larger output_shape pads it at the
        # end, each element keeping its coordinates (as the ONNX reference
        # and test_maxunpool_export_with_output_shape do)
        part = list(shape[:2]) + dims
        y = np.zeros(int(np.prod(part)), np.float32)
        y[ind.ravel()] = pooled.ravel()
        y = np.pad(y.reshape(part), [(0, f - d) for f, d in zip(full, part)])
        nodes = [node("MaxUnpool", ["p", "i"] + (["os"] if out else []), ["y"],
                      kernel_shape=k, strides=s, pads=pads)]
        if out:
            nodes.insert(0, const("os", np.array(out, np.int64)))
        good("maxunpool_11_%s" % name, 11, nodes, {"p": pooled, "i": ind},
             {"y": y.reshape(full)})


# ---- BatchNormalization-14/15 training mode ----

def batchnorm_train(x, sc, bi, mean, var, eps, mom):
    axes = tuple(i for i in range(x.ndim) if i != 1)
    xd = x.astype(np.float64)
    bm, bv = xd.mean(axis=axes), xd.var(axis=axes)
    shape = [1, -1] + [1] * (x.ndim - 2)
    y = (xd - bm.reshape(shape)) / np.sqrt(bv.reshape(shape) + eps) * sc.reshape(shape) \
        + bi.reshape(shape)
    return (y.astype(x.dtype), (mean * mom + bm * (1 - mom)).astype(mean.dtype),
            (var * mom + bv * (1 - mom)).astype(var.dtype))


def batchnorm_training_tests():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    sc, bi = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    mean = rng.standard_normal(4).astype(np.float32)
    var = rng.uniform(0.5, 2, 4).astype(np.float32)
    y, rm, rv = batchnorm_train(x, sc, bi, mean, var, 1e-5, 0.9)
    good("batchnorm_18_training_y_only", 18,
         [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], training_mode=1)],
         {"x": x, "s": sc, "b": bi, "m": mean, "v": var}, {"y": y})
    x = rng.standard_normal((2, 3, 2, 2, 3)).astype(np.float32)
    sc, bi = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    mean = rng.standard_normal(3).astype(np.float64)
    var = rng.uniform(0.5, 2, 3).astype(np.float64)
    y, rm, rv = batchnorm_train(x, sc, bi, mean, var, 1e-3, 0.7)
    good("batchnorm_15_training_3d_double_stats", 15,
         [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
               training_mode=1, epsilon=1e-3, momentum=0.7)],
         {"x": x, "s": sc, "b": bi, "m": mean, "v": var}, {"y": y, "rm": rm, "rv": rv})
    # after a Conv with constant weights: must not be folded into it like inference BN
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    p = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    p.append(rng.uniform(0.5, 2, 4).astype(np.float32))
    c = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0]).astype(np.float32)
    y, rm, rv = batchnorm_train(c, p[0], p[1], p[2], p[3], 1e-5, 0.9)
    good("batchnorm_18_training_after_conv", 18,
         [const("w", w)] + [const(k, v) for k, v in zip("sbmv", p)] +
         [node("Conv", ["x", "w"], ["c"]),
          node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], training_mode=1)],
         {"x": x}, {"y": y})


# ---- RoiAlign-10 and -16: avg and max, sampling ratios, both coordinate modes ----

def roi_bilinear(img, y, x):
    """The four weighted corners of sample (y, x) in img, or None outside."""
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return None
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return [(1 - ly) * (1 - lx) * img[y0, x0], (1 - ly) * lx * img[y0, x1],
            ly * (1 - lx) * img[y1, x0], ly * lx * img[y1, x1]]


def roi_align(x, rois, bidx, oh, ow, sr, scale, mode, half):
    y = np.zeros((len(rois), x.shape[1], oh, ow), np.float64)
    for r, box in enumerate(rois.astype(np.float64)):
        x0, y0, x1, y1 = box * scale - (0.5 if half else 0.0)
        rw, rh = x1 - x0, y1 - y0
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sr if sr > 0 else int(math.ceil(bh))
        gw = sr if sr > 0 else int(math.ceil(bw))
        for c in range(x.shape[1]):
            img = x[bidx[r], c].astype(np.float64)
            for i in range(oh):
                for j in range(ow):
                    vals = []
                    for a in range(gh):
                        for b in range(gw):
                            corners = roi_bilinear(img, y0 + i * bh + (a + 0.5) * bh / gh,
                                                   x0 + j * bw + (b + 0.5) * bw / gw)
                            vals.append([0.0] * 4 if corners is None else corners)
                    if mode == "avg":
                        y[r, c, i, j] = sum(map(sum, vals)) / max(gh * gw, 1)
                    else:
                        y[r, c, i, j] = max(max(v) for v in vals)
    return y.astype(x.dtype)


def roialign_tests():
    rng = np.random.default_rng(16)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 5.5, 4.0], [-1.0, -0.5, 3.0, 8.0], [2.0, 2.0, 2.4, 2.2],
                     [6.0, 1.0, 13.0, 11.0]], np.float32)
    bidx = np.array([1, 0, 1, 0], np.int64)
    for opset, mode, sr, scale, ctm in ((16, "max", 0, 1.0, "half_pixel"),
                                        (16, "avg", 2, 0.5, "output_half_pixel"),
                                        (16, "max", 3, 0.75, "output_half_pixel"),
                                        (10, "avg", 0, 0.5, None),
                                        (10, "max", 2, 1.0, None)):
        attrs = dict(mode=mode, sampling_ratio=sr, spatial_scale=scale, output_height=3,
                     output_width=2)
        if ctm:
            attrs["coordinate_transformation_mode"] = ctm
        half = ctm == "half_pixel"
        good("roialign_%d_%s_sr%d_%s" % (opset, mode, sr, ctm or "default"), opset,
             [node("RoiAlign", ["x", "rois", "bi"], ["y"], **attrs)],
             {"x": x, "rois": rois, "bi": bidx},
             {"y": roi_align(x, rois, bidx, 3, 2, sr, scale, mode, half)})


# ---- ai.onnx.preview.training: Adagrad, Adam, Momentum (opset 1 of that domain) ----

TRAINING = "ai.onnx.preview.training"


def training_model(name, nodes, inputs, outputs, opset=None):
    """A model importing the training domain, and the default one when opset is set."""
    graph = helper.make_graph(nodes, name, [vinfo(k, v) for k, v in inputs.items()],
                              [vinfo(k, v) for k, v in outputs.items()])
    imports = [helper.make_opsetid(TRAINING, 1)]
    if opset:
        imports.append(helper.make_opsetid("", opset))
    m = helper.make_model(graph, producer_name="collagec-opset-test", opset_imports=imports)
    m.ir_version = 8
    return m


def training_tests():
    rng = np.random.default_rng(1)
    r, t = np.array(0.05, np.float32), np.array(3, np.int64)
    x, g = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    v, h = rng.standard_normal((2, 3)).astype(np.float32), rng.uniform(0.1, 1, (2, 3)).astype(np.float32)
    xd, gd, vd, hd = (a.astype(np.float64) for a in (x, g, v, h))
    # Adam with every attribute, bias correction (T > 0) and a post-step decay
    al, be, eps, nc, post = 0.8, 0.9, 1e-3, 0.01, 0.05
    gr = nc * xd + gd
    vn = al * vd + (1 - al) * gr
    hn = be * hd + (1 - be) * gr * gr
    rt = 0.05 * math.sqrt(1 - be ** 3) / (1 - al ** 3)
    xn = (1 - post) * (xd - rt * vn / (np.sqrt(hn) + eps))
    ins = {"r": r, "t": t, "x": x, "g": g, "v": v, "h": h}
    outs = {"xn": xn.astype(np.float32), "vn": vn.astype(np.float32), "hn": hn.astype(np.float32)}
    GOOD.append(("adam_training1_all_attributes", training_model(
        "adam", [helper.make_node("Adam", list(ins), list(outs), domain=TRAINING, alpha=al,
                                  beta=be, epsilon=eps, norm_coefficient=nc,
                                  norm_coefficient_post=post)], ins, outs), ins, outs))
    # beside default-domain ops: Adagrad with a decaying rate, its X then scaled by a Mul
    dec = 0.1
    hn = hd + gd * gd
    xn = xd - 0.05 / (1 + 3 * dec) * gd / (np.sqrt(hn) + 1e-6)
    ins = {"r": r, "t": t, "x": x, "g": g, "h": h}
    outs = {"y": (2 * xn).astype(np.float32), "hn": hn.astype(np.float32)}
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    nodes = [helper.make_node("Constant", [], ["two"], value=two),
             helper.make_node("Adagrad", ["r", "t", "x", "g", "h"], ["xn", "hn"],
                              domain=TRAINING, decay_factor=dec),
             helper.make_node("Mul", ["xn", "two"], ["y"])]
    GOOD.append(("adagrad_training1_with_default_domain", training_model(
        "adagrad", nodes, ins, outs, opset=18), ins, outs))
    # a default-domain op in a model importing only the training domain
    BAD.append(("training1_relu_without_default_opset", training_model(
        "relu", [helper.make_node("Relu", ["x"], ["y"])], {"x": x}, {"y": x}),
        "model imports no default-domain opset"))
    # an optimizer in the default domain
    BAD.append(("momentum_in_default_domain", model(
        "momentum", 18, [helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["xn", "vn"],
                                          alpha=0.9, beta=0.1, mode="standard",
                                          norm_coefficient=0.0)],
        {"r": r, "t": t, "x": x, "g": g, "v": v}, {"xn": x, "vn": v}),
        "op 'Momentum' is not in domain 'ai.onnx'"))


# ---- TfIdfVectorizer-9: IDF and TFIDF, weights, int32, min_gram_length 2 ----

def tfidf(x, min_n, max_n, skip, mode, pool, counts, indexes, weights=None):
    """Counts every pool n-gram (lengths min_n..max_n) at every skip, then weighs."""
    rows = x.reshape(-1, x.shape[-1])
    out = max(indexes) + 1
    y = np.zeros((rows.shape[0], out), np.float64)
    grams, j = [], 0
    for ln in range(1, len(counts) + 1):
        end = counts[ln] if ln < len(counts) else len(pool)
        for at in range(counts[ln - 1], end, ln):
            grams.append((tuple(pool[at:at + ln]), indexes[j]))
            j += 1
    for r, row in enumerate(rows):
        for gram, col in grams:
            ln = len(gram)
            if not min_n <= ln <= max_n:
                continue
            for d in range(1, (skip + 1 if ln > 1 else 1) + 1):
                for i in range(len(row) - d * (ln - 1)):
                    if tuple(row[i + d * k] for k in range(ln)) == gram:
                        y[r, col] += 1
    w = np.ones(out) if weights is None else np.array(weights[:out], np.float64)
    if mode == "IDF":
        y = np.where(y > 0, w, 0.0)
    elif mode == "TFIDF":
        y = y * w
    return y.reshape(x.shape[:-1] + (out,)).astype(np.float32)


def tfidf_tests():
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]    # unigrams 2 3 5 4, bigrams (5,6) (7,8) (6,7)
    counts, indexes = [0, 4], [0, 1, 2, 3, 4, 5, 6]
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75]
    x32 = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32)
    x64 = np.array([2, 5, 6, 7, 8, 5, 4, 6, 7, 5], np.int64)
    for name, x, mn, mx, skip, mode, w in (
            ("idf_weights_int32", x32, 1, 2, 2, "IDF", weights),
            ("tfidf_weights", x64, 1, 2, 3, "TFIDF", weights),
            ("idf_no_weights", x64, 1, 2, 0, "IDF", None),
            ("tfidf_no_weights_bigrams_only", x32, 2, 2, 4, "TFIDF", None)):
        attrs = dict(min_gram_length=mn, max_gram_length=mx, max_skip_count=skip, mode=mode,
                     pool_int64s=pool, ngram_counts=counts, ngram_indexes=indexes)
        if w:
            attrs["weights"] = w
        good("tfidfvectorizer_9_%s" % name, 9, [node("TfIdfVectorizer", ["x"], ["y"], **attrs)],
             {"x": x}, {"y": tfidf(x, mn, mx, skip, mode, pool, counts, indexes, w)})
    # the same over strings: pool_strings, X a string tensor
    spool = ["two", "three", "five", "four", "five", "six", "seven", "eight", "six", "seven"]
    words = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"],
                     dtype=object)
    for name, x, mn, mx, skip, mode, w in (
            ("strings_tf_2d", words[x32], 1, 2, 2, "TF", None),
            ("strings_tfidf_weights", words[x64], 1, 2, 3, "TFIDF", weights),
            ("strings_idf_bigrams_only", words[x64], 2, 2, 4, "IDF", None)):
        attrs = dict(min_gram_length=mn, max_gram_length=mx, max_skip_count=skip, mode=mode,
                     pool_strings=spool, ngram_counts=counts, ngram_indexes=indexes)
        if w:
            attrs["weights"] = w
        good("tfidfvectorizer_9_%s" % name, 9, [node("TfIdfVectorizer", ["x"], ["y"], **attrs)],
             {"x": x}, {"y": tfidf(x, mn, mx, skip, mode, spool, counts, indexes, w)})


# ---- DFT-17 and DFT-20: onesided, inverse, dft_length, axis ----

def dft_ref(x, n, axis, inverse, onesided):
    sig = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    f = (np.fft.ifft if inverse else np.fft.fft)(sig.astype(np.complex128), n=n, axis=axis)
    if onesided:
        f = np.take(f, range(n // 2 + 1), axis=axis)
    return np.stack([f.real, f.imag], axis=-1).astype(np.float32)


def dft_tests():
    rng = np.random.default_rng(17)
    xr = rng.standard_normal((2, 7, 3, 1)).astype(np.float32)
    xc = rng.standard_normal((2, 3, 6, 2)).astype(np.float32)
    # opset 17: axis attribute
    good("dft_17_onesided_dft_length_pad", 17,
         [const("n", np.array(10, np.int64)),
          node("DFT", ["x", "n"], ["y"], axis=1, onesided=1)],
         {"x": xr}, {"y": dft_ref(xr, 10, 1, False, True)})
    good("dft_17_complex_axis2_truncate", 17,
         [const("n", np.array(4, np.int64)), node("DFT", ["x", "n"], ["y"], axis=-2)],
         {"x": xc}, {"y": dft_ref(xc, 4, 2, False, False)})
    # opset 20: axis as an input (default -2)
    good("dft_20_default_axis_inverse", 20, [node("DFT", ["x"], ["y"], inverse=1)],
         {"x": xc}, {"y": dft_ref(xc, 6, 2, True, False)})
    good("dft_20_axis_input_onesided_odd", 20,
         [const("n", np.array(7, np.int64)), const("a", np.array(1, np.int64)),
          node("DFT", ["x", "n", "a"], ["y"], onesided=1)],
         {"x": xr}, {"y": dft_ref(xr, 7, 1, False, True)})
    good("dft_20_axis0_inverse_pad", 20,
         [const("n", np.array(5, np.int64)), const("a", np.array(0, np.int64)),
          node("DFT", ["x", "n", "a"], ["y"], inverse=1)],
         {"x": xc}, {"y": dft_ref(xc, 5, 0, True, False)})


# ---- DeformConv-19 (2-D): offsets, mask, bias, groups, offset groups ----

def deform_conv(x, w, off, b, mask, strides, dil, pads, group, og):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    oh, ow = off.shape[2:]
    off = off.reshape(n, og, kh, kw, 2, oh, ow).astype(np.float64)
    mask = np.ones((n, og, kh, kw, oh, ow)) if mask is None else \
        mask.reshape(n, og, kh, kw, oh, ow).astype(np.float64)
    xd = x.astype(np.float64)

    def at(img, yy, xx):
        y0, x0 = math.floor(yy), math.floor(xx)
        total = 0.0
        for dy in (0, 1):
            for dx in (0, 1):
                r, q = y0 + dy, x0 + dx
                if 0 <= r < h and 0 <= q < wd:
                    wy = yy - y0 if dy else 1 - (yy - y0)
                    wx = xx - x0 if dx else 1 - (xx - x0)
                    total += wy * wx * img[r, q]
        return total

    y = np.zeros((n, oc, oh, ow))
    for bi in range(n):
        for o in range(oc):
            for ci in range(cg):
                ic = o // (oc // group) * cg + ci
                g = ic // (c // og)
                for i in range(oh):
                    for j in range(ow):
                        for u in range(kh):
                            for v in range(kw):
                                yy = i * strides[0] - pads[0] + u * dil[0] + off[bi, g, u, v, 0, i, j]
                                xx = j * strides[1] - pads[1] + v * dil[1] + off[bi, g, u, v, 1, i, j]
                                y[bi, o, i, j] += w[o, ci, u, v] * mask[bi, g, u, v, i, j] * \
                                    at(xd[bi, ic], yy, xx)
            if b is not None:
                y[bi, o] += b[o]
    return y.astype(np.float32)


def deformconv_tests():
    rng = np.random.default_rng(19)
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    off = rng.uniform(-1.5, 1.5, (1, 8, 3, 4)).astype(np.float32)
    good("deformconv_19_plain", 19, [node("DeformConv", ["x", "w", "off"], ["y"])],
         {"x": x, "w": w, "off": off},
         {"y": deform_conv(x, w, off, None, None, [1, 1], [1, 1], [0, 0], 1, 1)})
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 2)).astype(np.float32)
    st, dl, pd = [2, 1], [1, 2], [1, 0, 1, 2]
    oh = (5 + 2 - 3) // 2 + 1
    ow = (5 + 2 - 3) // 1 + 1
    off = rng.uniform(-2, 2, (2, 2 * 2 * 6, oh, ow)).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 2 * 6, oh, ow)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    good("deformconv_19_groups_mask_bias", 19,
         [node("DeformConv", ["x", "w", "off", "b", "m"], ["y"], strides=st, dilations=dl,
               pads=pd, group=2, offset_group=2, kernel_shape=[3, 2])],
         {"x": x, "w": w, "off": off, "b": b, "m": mask},
         {"y": deform_conv(x, w, off, b, mask, st, dl, pd, 2, 2)})


# ---- HannWindow, HammingWindow, BlackmanWindow-17 with a constant size ----

def window_tests():
    coef = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25 / 46, 21 / 46, 0.0),
            "BlackmanWindow": (0.42, 0.5, 0.08)}
    for op, (a0, a1, a2) in coef.items():
        for periodic, size, to in ((1, 10, 1), (0, 7, 11)):
            n = size if periodic else size - 1
            x = 2 * np.pi * np.arange(size) / n
            w = a0 - a1 * np.cos(x) + a2 * np.cos(2 * x)
            dt = np.float32 if to == 1 else np.float64
            good("%s_17_periodic%d_type%d" % (op.lower(), periodic, to), 17,
                 [const("sz", np.array(size, np.int64)),
                  node(op, ["sz"], ["y"], periodic=periodic, output_datatype=to)],
                 {}, {"y": w.astype(dt)})


# ---- STFT-17 with constant frame_step and frame_length ----

def stft_ref(x, step, frame, window, onesided):
    sig = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    frames = (sig.shape[1] - frame) // step + 1
    out = []
    for f in range(frames):
        seg = sig[:, f * step:f * step + frame].astype(np.complex128)
        if window is not None:
            seg = seg * window
        spec = np.fft.fft(seg, axis=1)
        out.append(spec[:, :frame // 2 + 1] if onesided else spec)
    y = np.stack(out, axis=1)
    return np.stack([y.real, y.imag], axis=-1).astype(np.float32)


def stft_tests():
    rng = np.random.default_rng(171)
    x = rng.standard_normal((2, 40, 1)).astype(np.float32)
    good("stft_17_frame_length", 17,
         [const("st", np.array(6, np.int64)), const("fl", np.array(10, np.int64)),
          node("STFT", ["x", "st", "", "fl"], ["y"])],
         {"x": x}, {"y": stft_ref(x, 6, 10, None, True)})
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(9) / 9)).astype(np.float32)
    good("stft_17_window_two_sided", 17,
         [const("st", np.array(4, np.int64)), node("STFT", ["x", "st", "w"], ["y"], onesided=0)],
         {"x": x, "w": win}, {"y": stft_ref(x, 4, 9, win, False)})
    xc = rng.standard_normal((1, 25, 2)).astype(np.float32)
    good("stft_17_complex_window_and_length", 17,
         [const("st", np.array(5, np.int64)), const("fl", np.array(8, np.int64)),
          node("STFT", ["x", "st", "w", "fl"], ["y"], onesided=0)],
         {"x": xc, "w": win[:8]}, {"y": stft_ref(xc, 5, 8, win[:8], False)})


# ---- Resize-18 (axes, keep_aspect_ratio_policy, antialias), Resize-19 ----

def resize_axis(y, ax, out, scale, coord, mode, nearest="round_prefer_floor", A=-0.75,
                exclude=False):
    """Resizes axis ax of y (float64) to out elements, one axis at a time."""
    n = y.shape[ax]
    width = scale * n
    res = []
    for o in range(out):
        if coord == "asymmetric":
            c = o / scale
        elif coord == "align_corners":
            c = 0.0 if width == 1 else o * (n - 1) / (width - 1)
        elif coord == "half_pixel_symmetric":
            c = n / 2 * (1 - out / width) + (o + 0.5) / scale - 0.5
        else:
            c = (o + 0.5) / scale - 0.5

        def tap(i):
            return np.take(y, min(max(i, 0), n - 1), axis=ax)
        if mode == "nearest":
            f = {"round_prefer_floor": lambda v: math.ceil(v - 0.5),
                 "round_prefer_ceil": lambda v: math.floor(v + 0.5),
                 "floor": math.floor, "ceil": math.ceil}[nearest]
            res.append(tap(f(c)))
            continue
        i0 = math.floor(c)
        r = c - i0
        if mode == "linear":
            res.append((1 - r) * tap(i0) + r * tap(i0 + 1))
            continue
        w = [((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
             ((A + 2) * r - (A + 3)) * r * r + 1,
             ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
             ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A]
        if exclude:
            w = [w[j] if 0 <= i0 - 1 + j < n else 0 for j in range(4)]
            w = [v / sum(w) for v in w]
        res.append(sum(w[j] * tap(i0 - 1 + j) for j in range(4)))
    return np.stack(res, axis=ax)


def resize_axis_aa(y, ax, out, scale, mode, A=-0.75, exclude=False):
    """Antialiased half_pixel downscaling of axis ax: the filter stretched by 1 / scale."""
    n = y.shape[ax]
    start = math.floor((-1 if mode == "linear" else -2) / scale) + 1
    res = []
    for o in range(out):
        c = (o + 0.5) / scale - 0.5
        base = math.ceil(c) - 1 + start
        idx = [base + t for t in range(2 - 2 * start)]

        def f(u):
            u = abs(u)
            if mode == "linear":
                return max(0.0, 1 - u)
            if u <= 1:
                return ((A + 2) * u - (A + 3)) * u * u + 1
            return ((A * u - 5 * A) * u + 8 * A) * u - 4 * A if u < 2 else 0.0
        w = np.array([f((i - c) * scale) for i in idx])
        if exclude:
            w = np.where([0 <= i < n for i in idx], w, 0)
        w = w / w.sum()
        res.append(sum(w[t] * np.take(y, min(max(i, 0), n - 1), axis=ax)
                       for t, i in enumerate(idx)))
    return np.stack(res, axis=ax)


def resize_ref(x, out, scales, coord, mode, **kw):
    y = x.astype(np.float64)
    for ax in range(x.ndim):
        if out[ax] != x.shape[ax] or scales[ax] != 1:
            y = resize_axis(y, ax, out[ax], scales[ax], coord, mode, **kw)
    return y.astype(x.dtype)


def resize_tests():
    x = randn(1, 2, 4, 5)
    empty = np.zeros([0], np.float32)
    good("resize_18_axes_scales_linear", 18,
         [const("roi", empty), const("sc", np.array([2, 1.5], np.float32)),
          node("Resize", ["x", "roi", "sc"], ["y"], mode="linear", axes=[2, 3])],
         {"x": x}, {"y": resize_ref(x, [1, 2, 8, 7], [1, 1, 2, 1.5], "half_pixel", "linear")})
    good("resize_18_axes_sizes_nearest", 18,
         [const("sz", np.array([9], np.int64)),
          node("Resize", ["x", "", "", "sz"], ["y"], axes=[-1],
               coordinate_transformation_mode="asymmetric", nearest_mode="ceil")],
         {"x": x}, {"y": resize_ref(x, [1, 2, 4, 9], [1, 1, 1, 9 / 5], "asymmetric",
                                    "nearest", nearest="ceil")})
    good("resize_18_axes_cubic_align_corners", 18,
         [const("sz", np.array([3, 7], np.int64)),
          node("Resize", ["x", "", "", "sz"], ["y"], axes=[3, 2], mode="cubic",
               coordinate_transformation_mode="align_corners")],
         {"x": x}, {"y": resize_ref(x, [1, 2, 7, 3], [1, 1, 7 / 4, 3 / 5], "align_corners",
                                    "cubic")})
    x = randn(1, 1, 4, 6)
    for policy, scale in (("not_larger", 8 / 6), ("not_smaller", 7 / 4)):
        out = [1, 1, int(scale * 4 + 0.5), int(scale * 6 + 0.5)]
        good("resize_18_keep_aspect_%s" % policy, 18,
             [const("sz", np.array([7, 8], np.int64)),
              node("Resize", ["x", "", "", "sz"], ["y"], axes=[2, 3], mode="linear",
                   keep_aspect_ratio_policy=policy)],
             {"x": x}, {"y": resize_ref(x, out, [1, 1, scale, scale], "half_pixel", "linear")})
    good("resize_18_antialias_upscale", 18,
         [const("sc", np.array([1, 1, 2, 1.5], np.float32)),
          node("Resize", ["x", "", "sc"], ["y"], mode="linear", antialias=1)],
         {"x": x}, {"y": resize_ref(x, [1, 1, 8, 9], [1, 1, 2, 1.5], "half_pixel", "linear")})
    xa = randn(1, 2, 9, 11)
    for mode, excl in (("linear", 0), ("cubic", 0), ("cubic", 1)):
        # axis 2 down by 0.4 with the stretched filter, axis 3 up by 1.5 as usual
        y = resize_axis_aa(xa.astype(np.float64), 2, 3, np.float32(0.4), mode, exclude=excl)
        y = resize_axis(y, 3, 16, np.float32(1.5), "half_pixel", mode, exclude=excl)
        good("resize_18_antialias_%s_exclude%d" % (mode, excl), 18,
             [const("sc", np.array([1, 1, 0.4, 1.5], np.float32)),
              node("Resize", ["x", "", "sc"], ["y"], mode=mode, antialias=1,
                   exclude_outside=excl)],
             {"x": xa}, {"y": y.astype(np.float32)})
    y = resize_axis_aa(xa.astype(np.float64), 2, 4, 4 / 9, "linear")
    y = resize_axis_aa(y, 3, 3, 3 / 11, "linear")
    good("resize_18_antialias_sizes_both_axes", 18,
         [const("sz", np.array([4, 3], np.int64)),
          node("Resize", ["x", "", "", "sz"], ["y"], axes=[2, 3], mode="linear", antialias=1)],
         {"x": xa}, {"y": y.astype(np.float32)})
    bad("resize_18_bad_policy", 18,
        [const("sz", np.array([7, 8], np.int64)),
         node("Resize", ["x", "", "", "sz"], ["y"], axes=[2, 3],
              keep_aspect_ratio_policy="fit")],
        {"x": x}, {"y": x}, "keep_aspect_ratio_policy 'fit' is not supported")
    # tf_crop_and_resize on one axis: roi holds that axis's start and end
    x = randn(1, 1, 4, 6)
    n, out, rb, re_ = 6, 4, 0.2, 0.7
    crop = np.empty((1, 1, 4, out), np.float64)
    for o in range(out):
        c = rb * (n - 1) + o * (re_ - rb) * (n - 1) / (out - 1)
        i0 = math.floor(c)
        r = c - i0
        v = (1 - r) * x[..., min(i0, n - 1)] + r * x[..., min(i0 + 1, n - 1)]
        crop[..., o] = v if 0 <= c <= n - 1 else 0
    good("resize_18_axes_tf_crop_and_resize", 18,
         [const("roi", np.array([rb, re_], np.float32)), const("sz", np.array([out], np.int64)),
          node("Resize", ["x", "roi", "", "sz"], ["y"], axes=[3], mode="linear",
               coordinate_transformation_mode="tf_crop_and_resize")],
         {"x": x}, {"y": crop.astype(np.float32)})
    for mode in ("linear", "nearest"):
        good("resize_19_half_pixel_symmetric_%s" % mode, 19,
             [const("sc", np.array([1, 1, 1.7, 2.3], np.float32)),
              node("Resize", ["x", "", "sc"], ["y"], mode=mode,
                   coordinate_transformation_mode="half_pixel_symmetric")],
             {"x": x}, {"y": resize_ref(x, [1, 1, 6, 13], [1, 1, np.float32(1.7),
                                                           np.float32(2.3)],
                                        "half_pixel_symmetric", mode)})


# ---- GroupNormalization-18/21, RMSNormalization-23 ----

def norm_tests():
    x = randn(2, 6, 3, 2)
    groups = 3
    xd = x.astype(np.float64).reshape(2, groups, -1)
    mean = xd.mean(axis=2, keepdims=True)
    var = xd.var(axis=2, keepdims=True)
    norm = ((xd - mean) / np.sqrt(var + 1e-3)).reshape(x.shape)
    sg, bg = randn(groups), randn(groups)
    good("groupnormalization_18", 18,
         [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-3)],
         {"x": x, "s": sg, "b": bg},
         {"y": (norm * np.repeat(sg, 2)[None, :, None, None] +
                np.repeat(bg, 2)[None, :, None, None]).astype(np.float32)})
    sc, bc = randn(6), randn(6)
    good("groupnormalization_21", 21,
         [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-3)],
         {"x": x, "s": sc, "b": bc},
         {"y": (norm * sc[None, :, None, None] + bc[None, :, None, None]).astype(np.float32)})
    bad("groupnormalization_21_groups", 21,
        [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4)],
        {"x": x, "s": sc, "b": bc}, {"y": x}, "num_groups 4 does not divide the 6 channels")
    x = randn(2, 3, 4)
    for axis, sshape in ((-1, (4,)), (1, (3, 1))):
        s = randn(*sshape)
        red = tuple(range(axis % 3, 3))
        xd = x.astype(np.float64)
        rms = np.sqrt(np.mean(xd * xd, axis=red, keepdims=True) + 1e-5)
        good("rmsnormalization_23_axis%d" % axis, 23,
             [node("RMSNormalization", ["x", "s"], ["y"], axis=axis)],
             {"x": x, "s": s}, {"y": (xd / rms * s).astype(np.float32)})


# ---- CenterCropPad-18, Col2Im-18, AffineGrid-20 ----

def center_crop_pad(x, shape, axes):
    y = x
    for a, want in zip(axes, shape):
        n = y.shape[a]
        if n > want:
            start = (n - want) // 2
            y = np.take(y, range(start, start + want), axis=a)
        elif n < want:
            before = (want - n) // 2
            pads = [(0, 0)] * y.ndim
            pads[a] = (before, want - n - before)
            y = np.pad(y, pads)
    return y


def col2im(x, image, block, strides, dilations, pads):
    n, cb, _ = x.shape
    bsz = int(np.prod(block))
    c = cb // bsz
    r = len(image)
    nb = [(image[i] + pads[i] + pads[i + r] - dilations[i] * (block[i] - 1) - 1)
          // strides[i] + 1 for i in range(r)]
    y = np.zeros([n, c] + list(image), np.float64)
    for k, koff in enumerate(np.ndindex(*block)):
        for l, loff in enumerate(np.ndindex(*nb)):
            pos = [loff[i] * strides[i] + koff[i] * dilations[i] - pads[i] for i in range(r)]
            if all(0 <= pos[i] < image[i] for i in range(r)):
                for ch in range(c):
                    y[(slice(None), ch) + tuple(pos)] += x[:, ch * bsz + k, l]
    return y.astype(x.dtype)


def affine_grid(theta, size, align):
    spatial = size[2:]
    axes = []
    for ln in spatial:
        i = np.arange(ln, dtype=np.float64)
        axes.append(-1 + 2 * i / (ln - 1) if align and ln > 1 else
                    np.full(ln, -1.0) if align else -1 + (2 * i + 1) / ln)
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack(mesh[::-1] + [np.ones(spatial)], axis=-1)
    grid = np.einsum("...k,njk->n...j", base, theta.astype(np.float64))
    return grid.astype(np.float32)


def image_tests():
    x = randn(3, 5, 4)
    good("centercroppad_18_crop_and_pad", 18,
         [const("s", np.array([2, 8, 3], np.int64)), node("CenterCropPad", ["x", "s"], ["y"])],
         {"x": x}, {"y": center_crop_pad(x, [2, 8, 3], [0, 1, 2])})
    good("centercroppad_18_axes", 18,
         [const("s", np.array([7, 1], np.int64)),
          node("CenterCropPad", ["x", "s"], ["y"], axes=[-1, 0])],
         {"x": x}, {"y": center_crop_pad(x, [7, 1], [2, 0])})
    # the spec's examples: a 5x5 image from 1x5 blocks, then strides/dilations/pads
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5)
    good("col2im_18", 18,
         [const("img", np.array([5, 5], np.int64)), const("blk", np.array([1, 5], np.int64)),
          node("Col2Im", ["x", "img", "blk"], ["y"])],
         {"x": x}, {"y": col2im(x, [5, 5], [1, 5], [1, 1], [1, 1], [0, 0, 0, 0])})
    img, blk, st, dl, pd = [6, 5], [2, 2], [2, 1], [1, 2], [1, 0, 1, 1]
    nb = [(img[i] + pd[i] + pd[i + 2] - dl[i] * (blk[i] - 1) - 1) // st[i] + 1 for i in (0, 1)]
    x = randn(2, 3 * 4, nb[0] * nb[1])
    good("col2im_18_strides_dilations_pads", 18,
         [const("img", np.array(img, np.int64)), const("blk", np.array(blk, np.int64)),
          node("Col2Im", ["x", "img", "blk"], ["y"], strides=st, dilations=dl, pads=pd)],
         {"x": x}, {"y": col2im(x, img, blk, st, dl, pd)})
    x = randn(1, 2 * 8, 2 * 2 * 3)
    good("col2im_18_3d", 18,
         [const("img", np.array([3, 3, 4], np.int64)),
          const("blk", np.array([2, 2, 2], np.int64)),
          node("Col2Im", ["x", "img", "blk"], ["y"])],
         {"x": x}, {"y": col2im(x, [3, 3, 4], [2, 2, 2], [1] * 3, [1] * 3, [0] * 6)})
    for align in (0, 1):
        th = randn(2, 2, 3)
        good("affinegrid_20_2d_align%d" % align, 20,
             [const("sz", np.array([2, 3, 4, 5], np.int64)),
              node("AffineGrid", ["th", "sz"], ["y"], align_corners=align)],
             {"th": th}, {"y": affine_grid(th, [2, 3, 4, 5], align)})
        th = randn(1, 3, 4)
        good("affinegrid_20_3d_align%d" % align, 20,
             [const("sz", np.array([1, 1, 3, 2, 4], np.int64)),
              node("AffineGrid", ["th", "sz"], ["y"], align_corners=align)],
             {"th": th}, {"y": affine_grid(th, [1, 1, 3, 2, 4], align)})


# ---- GridSample-20: N-D, linear/nearest/cubic, every padding mode ----

def gs_reflect(v, lo, hi):
    """v folded back and forth into [lo, hi] (lo when the range is empty)."""
    if lo <= v <= hi:
        return v
    span = hi - lo
    if span <= 0:
        return lo
    d = lo - v if v < lo else v - hi
    k = math.floor(d / span)
    rest = d - k * span
    near_lo = (v < lo) == (k % 2 == 0)
    return lo + rest if near_lo else hi - rest


def gs_pixel(img, idx, pad, borders):
    """img[idx] with pixel-level padding: 0, clamped or reflected."""
    pos = []
    for i, (p, ln) in enumerate(zip(idx, img.shape)):
        if pad == "zeros" and not 0 <= p < ln:
            return 0.0
        if pad == "border":
            p = min(max(p, 0), ln - 1)
        elif pad == "reflection":
            p = int(gs_reflect(float(p), *borders[i]))
        pos.append(p)
    return float(img[tuple(pos)])


def gs_interp(img, x, mode, pad, borders):
    """Separable interpolation at float position x, the first axis last."""
    if not x:
        return float(img)
    if mode == "nearest":
        i = int(math.floor(x[0]))
        taps = [(i, 1.0)]
    else:
        i = int(math.floor(x[0]))
        t = x[0] - i
        if mode == "linear":
            taps = [(i, 1 - t), (i + 1, t)]
        else:
            a = -0.75
            near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1
            far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
            taps = [(i - 1, far(t + 1)), (i, near(t)), (i + 1, near(1 - t)),
                    (i + 2, far(2 - t))]
    total = 0.0
    for p, w in taps:
        sub = gs_sub(img, p, pad, borders[0])
        total += w * (0.0 if sub is None else gs_interp(sub, x[1:], mode, pad, borders[1:]))
    return total


def gs_sub(img, p, pad, border):
    """The slice of img at index p of its first axis after padding; None for zeros."""
    ln = img.shape[0]
    if pad == "zeros":
        return img[p] if 0 <= p < ln else None
    if pad == "border":
        return img[min(max(p, 0), ln - 1)]
    return img[int(gs_reflect(float(p), *border))]


def grid_sample(x, grid, mode, pad, align):
    dims = x.shape[2:]
    y = np.zeros(x.shape[:2] + grid.shape[1:-1], np.float64)
    if align:
        borders = [(0.0, ln - 1.0) for ln in dims]
    else:
        borders = [(-0.5, ln - 0.5) for ln in dims]
    for n in range(x.shape[0]):
        for o in np.ndindex(*grid.shape[1:-1]):
            pos = []
            for i, v in enumerate(grid[(n,) + o][::-1].astype(np.float64)):
                ln = dims[i]
                p = (v + 1) / 2 * (ln - 1) if align else ((v + 1) * ln - 1) / 2
                if mode == "nearest":
                    p = float(np.rint(p))
                lo, hi = borders[i]
                if pad == "border" and not lo <= p <= hi:
                    p = min(max(p, 0.0), ln - 1.0)
                elif pad == "reflection":
                    p = gs_reflect(p, lo, hi)
                pos.append(p)
            for c in range(x.shape[1]):
                y[(n, c) + o] = gs_interp(x[n, c], pos, mode, pad, borders)
    return y.astype(x.dtype)


def gridsample_tests():
    rng = np.random.default_rng(20)
    x = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 3, 4, 2)).astype(np.float32)
    for mode in ("linear", "nearest", "cubic"):
        for pad in ("zeros", "border", "reflection"):
            for align in (0, 1):
                good("gridsample_20_%s_%s_align%d" % (mode, pad, align), 20,
                     [node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=pad,
                           align_corners=align)],
                     {"x": x, "g": grid}, {"y": grid_sample(x, grid, mode, pad, align)})
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (1, 2, 3, 2, 3)).astype(np.float32)
    for mode, pad, align in (("linear", "zeros", 0), ("nearest", "border", 1),
                             ("cubic", "reflection", 0), ("linear", "reflection", 1)):
        good("gridsample_20_3d_%s_%s_align%d" % (mode, pad, align), 20,
             [node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=pad,
                   align_corners=align)],
             {"x": x, "g": grid}, {"y": grid_sample(x, grid, mode, pad, align)})
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    grid = rng.uniform(-1.5, 1.5, (2, 5, 1)).astype(np.float32)
    good("gridsample_20_1d_cubic_border", 20,
         [node("GridSample", ["x", "g"], ["y"], mode="cubic", padding_mode="border")],
         {"x": x, "g": grid}, {"y": grid_sample(x, grid, "cubic", "border", 0)})


# ---- RotaryEmbedding-23, Attention-23 ----

def rope_ref(x, cos, sin, pos, interleaved, rdim, num_heads):
    """The spec's algorithm, restated."""
    shape = x.shape
    if x.ndim == 4:
        x = np.transpose(x, (0, 2, 1, 3))
    else:
        x = x.reshape(shape[0], shape[1], num_heads, -1)
    rdim = rdim or x.shape[3]
    xr, xk = x[..., :rdim], x[..., rdim:]
    if pos is not None:
        cos, sin = cos[pos], sin[pos]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = np.split(xr, 2, axis=-1)
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if interleaved:
        xr = np.stack([real, imag], axis=-1).reshape(xr.shape)
    else:
        xr = np.concatenate([real, imag], axis=-1)
    y = np.concatenate([xr, xk], axis=-1)
    return y.reshape(shape) if len(shape) == 3 else np.transpose(y, (0, 2, 1, 3))


def rope_tests():
    b, h, s, d = 2, 3, 4, 8
    pos = np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int64)
    for inter in (0, 1):
        for rdim in (0, 4):
            half = (rdim or d) // 2
            ang = np.arange(10)[:, None] * (0.3 + np.arange(half)[None, :])
            cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
            x = randn(b, h, s, d)
            good("rotaryembedding_23_4d_inter%d_rdim%d" % (inter, rdim), 23,
                 [node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], interleaved=inter,
                       rotary_embedding_dim=rdim)],
                 {"x": x, "c": cos, "s": sin, "p": pos},
                 {"y": rope_ref(x, cos, sin, pos, inter, rdim, 0)})
    x = randn(b, s, h * d)
    cos3, sin3 = randn(b, s, d // 2), randn(b, s, d // 2)
    good("rotaryembedding_23_3d_no_positions", 23,
         [node("RotaryEmbedding", ["x", "c", "s"], ["y"], num_heads=h)],
         {"x": x, "c": cos3, "s": sin3}, {"y": rope_ref(x, cos3, sin3, None, 0, 0, h)})


def attention_ref(q, k, v, mask=None, causal=0, scale=None, softcap=0.0, hq=0, hkv=0,
                  nonpad=None, left=-1, right=-1):
    """Scaled dot-product attention as the spec draws it (output Y only; the
    cache, qk_matmul_output and 16-bit types: gen_attention_tests.py), with
    Attention-24's nonpad_kv_seqlen and Attention-25's window: query i sits
    at position off + i, off being nonpad[b] - q_seq with nonpad, else 0."""
    flat = q.ndim == 3
    if flat:
        q = q.reshape(q.shape[0], q.shape[1], hq, -1).transpose(0, 2, 1, 3)
        k = k.reshape(k.shape[0], k.shape[1], hkv, -1).transpose(0, 2, 1, 3)
        v = v.reshape(v.shape[0], v.shape[1], hkv, -1).transpose(0, 2, 1, 3)
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    scale = scale if scale is not None else 1 / math.sqrt(q.shape[3])
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    bias = np.zeros(s.shape)
    if mask is not None:
        bias = bias + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    sq, skv = s.shape[2], s.shape[3]
    off = 0 if nonpad is None else (nonpad - sq).reshape(-1, 1, 1, 1)
    pos = np.arange(sq)[:, None] + off            # [B, 1, sq, 1] or [sq, 1]
    j = np.arange(skv)[None, :]
    allowed = np.ones(np.broadcast_shapes(np.shape(pos), j.shape), bool)
    if causal:
        allowed &= j <= pos
    if left >= 0:
        allowed &= pos - j <= left
    if right >= 0:
        allowed &= j - pos <= right
    if nonpad is not None:
        allowed &= j < nonpad.reshape(-1, 1, 1, 1)
    s = s + bias + np.where(allowed, 0, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(mx)
    e = np.where(dead, 0, np.exp(s - np.where(dead, 0, mx)))
    tot = e.sum(axis=-1, keepdims=True)
    y = (e / np.where(tot == 0, 1, tot)) @ v
    if flat:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y.astype(np.float32)


def attention_tests():
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 5, 8), randn(2, 3, 5, 6)
    good("attention_23_4d", 23, [node("Attention", ["q", "k", "v"], ["y"])],
         {"q": q, "k": k, "v": v}, {"y": attention_ref(q, k, v)})
    q, k, v = randn(2, 4, 4 * 8), randn(2, 6, 2 * 8), randn(2, 6, 2 * 3)
    mask = randn(4, 6)
    good("attention_23_3d_gqa_float_mask_scale", 23,
         [node("Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=4, kv_num_heads=2,
               scale=0.5)],
         {"q": q, "k": k, "v": v, "m": mask},
         {"y": attention_ref(q, k, v, mask, scale=0.5, hq=4, hkv=2)})
    q, k, v = randn(1, 2, 5, 4), randn(1, 1, 5, 4), randn(1, 1, 5, 4)
    bmask = RNG.random((1, 2, 5, 5)) > 0.3
    bmask[0, 1, 2, :] = False
    good("attention_23_bool_mask_causal_softcap", 23,
         [node("Attention", ["q", "k", "v", "m"], ["y"], is_causal=1, softcap=2.0)],
         {"q": q, "k": k, "v": v, "m": bmask},
         {"y": attention_ref(q, k, v, bmask, causal=1, softcap=2.0)})

# ---- opsets 24 to 28: what the bumped ops changed, and the new ops ----

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def cumprod_ref(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    if exclusive:
        one = np.ones_like(np.take(y, [0], axis=axis))
        y = np.concatenate([one, np.take(y, range(y.shape[axis] - 1), axis=axis)], axis)
    y = np.cumprod(y, axis=axis, dtype=x.dtype)
    return np.flip(y, axis) if reverse else y


def tscatter_ref(cache, update, axis, wi, circular):
    out = cache.copy()
    m = cache.shape[axis]
    for prefix in np.ndindex(cache.shape[:axis]):
        for s in range(update.shape[axis]):
            at = (0 if wi is None else wi[prefix[0]]) + s
            at = at % m if circular else at
            out[prefix + (at,)] = update[prefix + (s,)]
    return out


def opset24_tests():
    x = randn(3, 5) * 4
    xd = x.astype(np.float64)
    good("swish_24", 24, [node("Swish", ["x"], ["y"])], {"x": x},
         {"y": (xd * sigmoid(xd)).astype(np.float32)})
    good("swish_24_alpha_double", 24, [node("Swish", ["x"], ["y"], alpha=1.702)], {"x": xd},
         {"y": xd * sigmoid(1.702 * xd)})
    a, b = randn(2, 3, 4) * 3, randn(2, 3, 4)
    ad, bd = a.astype(np.float64), b.astype(np.float64)
    good("swiglu_28_alpha", 28, [node("SwiGLU", ["a", "b"], ["y"], alpha=0.5)],
         {"a": a, "b": b}, {"y": (ad * sigmoid(0.5 * ad) * bd).astype(np.float32)})
    # Swish fed by a MatMul and feeding a Mul: the fusion passes take it too
    w = randn(5, 4)
    h = xd @ w.astype(np.float64)
    good("swish_24_matmul_mul", 24,
         [const("w", w), node("MatMul", ["x", "w"], ["h"]), node("Swish", ["h"], ["s"]),
          node("Mul", ["s", "h"], ["y"])], {"x": x},
         {"y": (h * sigmoid(h) * h).astype(np.float32)})

    c = (RNG.integers(1, 4, size=(2, 3, 4)) * np.where(RNG.random((2, 3, 4)) > 0.8, -1, 1))
    for t, name in ((np.int64, "int64"), (np.float32, "float32")):
        xc = c.astype(t)
        good("cumprod_26_%s_axis1" % name, 26, [node("CumProd", ["x", "ax"], ["y"])],
             {"x": xc, "ax": np.array(1, np.int64)}, {"y": cumprod_ref(xc, 1, 0, 0)})
    xc = c.astype(np.float64)
    good("cumprod_26_exclusive_reverse_neg_axis", 26,
         [node("CumProd", ["x", "ax"], ["y"], exclusive=1, reverse=1)],
         {"x": xc, "ax": np.array(-1, np.int32)}, {"y": cumprod_ref(xc, 2, 1, 1)})
    xc = c.astype(np.int32)
    good("cumprod_26_const_axis0_exclusive", 26,
         [const("ax", np.array(0, np.int64)), node("CumProd", ["x", "ax"], ["y"], exclusive=1)],
         {"x": xc}, {"y": cumprod_ref(xc, 0, 1, 0)})

    f = np.array([[0.0, -0.0, 1.5], [np.inf, -np.inf, np.nan]], np.float32)
    good("bitcast_26_float32_uint32", 26, [node("BitCast", ["x"], ["y"], to=12)],
         {"x": f}, {"y": f.view(np.uint32)})
    i16 = np.array([0, 1, -1, 0x3c00, 0x7c00, -32768], np.int16).reshape(2, 3)
    good("bitcast_26_int16_float16", 26, [node("BitCast", ["x"], ["y"], to=10)],
         {"x": i16}, {"y": i16.view(np.float16)})
    u64 = np.array([1, 2 ** 63, 2 ** 64 - 1], np.uint64)
    good("bitcast_26_uint64_int64", 26, [node("BitCast", ["x"], ["y"], to=7)],
         {"x": u64}, {"y": u64.view(np.int64)})

    cache, up = randn(2, 3, 6, 4), randn(2, 3, 2, 4)
    wi = np.array([1, 4], np.int64)
    good("tensorscatter_24_linear", 24,
         [node("TensorScatter", ["c", "u", "w"], ["y"])], {"c": cache, "u": up, "w": wi},
         {"y": tscatter_ref(cache, up, 2, wi, False)})
    wi = np.array([5, 3], np.int64)
    up3 = randn(2, 3, 3, 4)
    good("tensorscatter_24_circular", 24,
         [node("TensorScatter", ["c", "u", "w"], ["y"], mode="circular")],
         {"c": cache, "u": up3, "w": wi}, {"y": tscatter_ref(cache, up3, 2, wi, True)})
    cache, up = randn(2, 5, 3), randn(2, 2, 3)
    good("tensorscatter_24_axis1_no_indices", 24,
         [node("TensorScatter", ["c", "u"], ["y"], axis=1)], {"c": cache, "u": up},
         {"y": tscatter_ref(cache, up, 1, None, False)})
    ci = RNG.integers(-9, 9, size=(2, 4, 3)).astype(np.int32)
    ui = RNG.integers(-9, 9, size=(2, 1, 3)).astype(np.int32)
    wi = np.array([3, 0], np.int64)
    good("tensorscatter_24_int32_decode_step", 24,
         [node("TensorScatter", ["c", "u", "w"], ["y"], axis=-2)],
         {"c": ci, "u": ui, "w": wi}, {"y": tscatter_ref(ci, ui, 1, wi, False)})

    # Attention-24's nonpad_kv_seqlen (causal offset by it; the second
    # entry's 2 keys are fewer than its 3 queries: its first row is zero)
    q, k, v = randn(2, 2, 3, 4), randn(2, 1, 6, 4), randn(2, 1, 6, 5)
    nonpad = np.array([5, 2], np.int64)
    good("attention_24_nonpad_causal_gqa", 24,
         [node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"], is_causal=1)],
         {"q": q, "k": k, "v": v, "n": nonpad},
         {"y": attention_ref(q, k, v, causal=1, nonpad=nonpad)})
    q, k, v = randn(2, 4, 2 * 4), randn(2, 6, 2 * 4), randn(2, 6, 2 * 3)
    mask = randn(4, 6)
    good("attention_25_window_3d_float_mask", 25,
         [node("Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=2, kv_num_heads=2,
               left_window_size=1, right_window_size=2)],
         {"q": q, "k": k, "v": v, "m": mask},
         {"y": attention_ref(q, k, v, mask, hq=2, hkv=2, left=1, right=2)})
    q, k, v = randn(1, 2, 4, 4), randn(1, 2, 7, 4), randn(1, 2, 7, 4)
    nonpad = np.array([6], np.int64)
    good("attention_25_window_nonpad_causal", 25,
         [node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"], is_causal=1,
               left_window_size=2)],
         {"q": q, "k": k, "v": v, "n": nonpad},
         {"y": attention_ref(q, k, v, causal=1, nonpad=nonpad, left=2)})

    # BitShift-28: signed types, shifts out of range
    xs = np.array([-8, -1, 5, 127, -128, 3], np.int8)
    ys = np.array([1, 9, -1, 1, 7, 8], np.int8)
    ok = (ys >= 0) & (ys < 8)
    sh = np.clip(ys, 0, 7).astype(np.int64)
    good("bitshift_28_int8_left", 28, [node("BitShift", ["x", "y"], ["z"], direction="LEFT")],
         {"x": xs, "y": ys},
         {"z": np.where(ok, (xs.astype(np.int64) << sh).astype(np.uint8).view(np.int8),
                        0).astype(np.int8)})
    good("bitshift_28_int8_right", 28, [node("BitShift", ["x", "y"], ["z"], direction="RIGHT")],
         {"x": xs, "y": ys},
         {"z": np.where(ok, xs.astype(np.int64) >> sh, np.where(xs < 0, -1, 0))
          .astype(np.int8)})
    xu = np.array([1, 2 ** 63, 7, 2 ** 64 - 1], np.uint64)
    yu = np.array([63, 1, 64, 200], np.uint64)
    good("bitshift_28_uint64_right_ge_width", 28,
         [node("BitShift", ["x", "y"], ["z"], direction="RIGHT")], {"x": xu, "y": yu},
         {"z": np.where(yu < 64, xu >> np.minimum(yu, np.uint64(63)), np.uint64(0))
          .astype(np.uint64)})

    # Mod-28 of floats, fmod 0: the floor remainder (numpy's), sign of the divisor
    ma = np.array([5.5, -5.5, 5.5, -5.5, 0.0, 3.0, -2.0, 7.0], np.float32)
    mb = np.array([2.0, 2.0, -2.0, -2.0, -3.0, np.inf, np.inf, 3.5], np.float32)
    good("mod_28_float_floor", 28, [node("Mod", ["a", "b"], ["c"])], {"a": ma, "b": mb},
         {"c": np.mod(ma, mb)})
    good("mod_28_float_fmod", 28, [node("Mod", ["a", "b"], ["c"], fmod=1)],
         {"a": ma, "b": mb}, {"c": np.fmod(ma, mb)})

    # SpaceToDepth-28's CRD mode: DepthToSpace CRD's inverse
    xs2 = randn(2, 3, 4, 6)
    n_, c_, h_, w_ = xs2.shape
    t = xs2.reshape(n_, c_, h_ // 2, 2, w_ // 2, 2).transpose(0, 1, 3, 5, 2, 4)
    good("spacetodepth_28_crd", 28, [node("SpaceToDepth", ["x"], ["y"], blocksize=2,
                                         mode="CRD")],
         {"x": xs2}, {"y": t.reshape(n_, c_ * 4, h_ // 2, w_ // 2)})

    # Range-27's stash_type for float16: computed in float64 or float32, rounded once
    st, lim, dl = (np.array(v, np.float16) for v in (2048.0, 2060.0, 1.0))
    for stash, name in ((11, "double"), (1, "float")):
        good("range_27_float16_stash_%s" % name, 27,
             [node("Range", ["s", "l", "d"], ["y"], stash_type=stash)],
             {"s": st, "l": lim, "d": dl},
             {"y": np.arange(2048.0, 2060.0, 1.0).astype(np.float16)})

    bad("tensorscatter_24_axis0", 24, [node("TensorScatter", ["c", "u"], ["y"], axis=0)],
        {"c": randn(2, 3), "u": randn(2, 3)}, {"y": randn(2, 3)},
        "axis must not be 0 (the batch axis)")
    bad("tensorscatter_24_mode", 24, [node("TensorScatter", ["c", "u"], ["y"], mode="ring")],
        {"c": randn(2, 3, 2), "u": randn(2, 1, 2)}, {"y": randn(2, 3, 2)},
        "mode 'ring' is not supported (expected linear or circular)")
    bad("tensorscatter_24_update_shape", 24, [node("TensorScatter", ["c", "u"], ["y"])],
        {"c": randn(2, 3, 2), "u": randn(2, 1, 3)}, {"y": randn(2, 3, 2)},
        "update must have past_cache's dims but along axis")
    bad("bitcast_26_width", 26, [node("BitCast", ["x"], ["y"], to=7)],
        {"x": randn(2)}, {"y": randn(2)}, "float32 and int64 differ in width")
    bad("swiglu_28_shapes", 28, [node("SwiGLU", ["a", "b"], ["y"])],
        {"a": randn(2, 3), "b": randn(1, 3)}, {"y": randn(2, 3)},
        "A [2,3] and B [1,3] must have one shape")
    bad("attention_25_window", 25,
        [node("Attention", ["q", "k", "v"], ["y"], left_window_size=-2)],
        {"q": randn(1, 1, 2, 4), "k": randn(1, 1, 2, 4), "v": randn(1, 1, 2, 4)},
        {"y": randn(1, 1, 2, 4)}, "attr 'left_window_size' is -2 (expected -1 or at least 0)")
    bad("attention_24_nonpad_with_past", 24,
        [node("Attention", ["q", "k", "v", "", "pk", "pv", "n"], ["y"])],
        {"q": randn(1, 1, 2, 4), "k": randn(1, 1, 2, 4), "v": randn(1, 1, 2, 4),
         "pk": randn(1, 1, 3, 4), "pv": randn(1, 1, 3, 4), "n": np.array([4], np.int64)},
        {"y": randn(1, 1, 2, 4)},
        "nonpad_kv_seqlen cannot be given with past_key and past_value")
    bad("attention_23_nonpad", 23,
        [node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"])],
        {"q": randn(1, 1, 2, 4), "k": randn(1, 1, 2, 4), "v": randn(1, 1, 2, 4),
         "n": np.array([2], np.int64)}, {"y": randn(1, 1, 2, 4)},
        "has 7 inputs, expected 3 to 6")
    bad("range_27_stash", 27, [node("Range", ["s", "l", "d"], ["y"], stash_type=10)],
        {"s": st, "l": lim, "d": dl}, {"y": st},
        "attr 'stash_type' is 10 (expected 1, float, or 11, double)")
    bad("swish_23", 23, [node("Swish", ["x"], ["y"])], {"x": x}, {"y": x},
        "Swish does not exist in opset 23 (it first appears in opset 24)")


def linear_attention_ref(q, k, v, hq, hkv, rule, past=None, decay=None, beta=None, scale=0.0):
    """LinearAttention-27's recurrence, token by token, in float64."""
    b, t, _ = q.shape
    dk, dv = q.shape[2] // hq, v.shape[2] // hkv
    q4 = q.reshape(b, t, hq, dk).astype(np.float64)
    k4 = k.reshape(b, t, hkv, dk).astype(np.float64)
    v4 = v.reshape(b, t, hkv, dv).astype(np.float64)
    s = np.zeros((b, hkv, dk, dv)) if past is None else past.astype(np.float64).copy()
    y = np.zeros((b, t, hq, dv))
    scale = scale or 1 / math.sqrt(dk)
    for i in range(t):
        if decay is not None:
            g = decay[:, i].reshape(b, hkv, -1).astype(np.float64)   # [b, hkv, 1 or dk]
            s = s * np.exp(g)[..., None]
        u = v4[:, i]
        if beta is not None:
            be = np.broadcast_to(beta[:, i].reshape(b, -1), (b, hkv)).astype(np.float64)
            u = be[..., None] * (u - np.einsum("bhdm,bhd->bhm", s, k4[:, i]))
        s = s + k4[:, i][..., :, None] * u[..., None, :]
        for h in range(hq):
            y[:, i, h] = scale * np.einsum("bd,bdm->bm", q4[:, i, h], s[:, h // (hq // hkv)])
    return y.reshape(b, t, hq * dv).astype(np.float32), s.astype(np.float32)


def causal_conv_ref(x, w, bias=None, past=None, act="none"):
    """CausalConvWithState-27: depthwise causal conv over past ++ x."""
    b, c, n = x.shape
    k = w.shape[2]
    pad = np.zeros((b, c, k - 1)) if past is None else past.astype(np.float64)
    p = np.concatenate([pad, x.astype(np.float64)], axis=2)
    y = np.zeros((b, c, n))
    for j in range(k):
        y += w[None, :, 0, j, None].astype(np.float64) * p[:, :, j:j + n]
    if bias is not None:
        y += bias[None, :, None]
    if act != "none":
        y = y * sigmoid(y)
    return y.astype(np.float32), p[:, :, p.shape[2] - (k - 1):].astype(np.float32)


def stateful_tests():
    q, k, v = randn(2, 3, 4 * 4), randn(2, 3, 2 * 4), randn(2, 3, 2 * 5)
    k = k / np.linalg.norm(k.reshape(2, 3, 2, 4), axis=-1).repeat(4, -1).reshape(2, 3, 8)
    past = randn(2, 2, 4, 5)
    decay = -np.abs(randn(2, 3, 2 * 4))
    beta = sigmoid(randn(2, 3, 2)).astype(np.float32)
    y, s = linear_attention_ref(q, k, v, 4, 2, "gated_delta", past, decay, beta)
    good("linearattention_27_gated_delta_gqa_past", 27,
         [node("LinearAttention", ["q", "k", "v", "p", "d", "b"], ["y", "s"], q_num_heads=4,
               kv_num_heads=2)],
         {"q": q, "k": k, "v": v, "p": past, "d": decay, "b": beta}, {"y": y, "s": s})
    hdecay = -np.abs(randn(2, 3, 2))
    y, s = linear_attention_ref(q, k, v, 4, 2, "gated", decay=hdecay, scale=0.3)
    good("linearattention_27_gated_per_head_scale", 27,
         [node("LinearAttention", ["q", "k", "v", "", "d"], ["y", "s"], q_num_heads=4,
               kv_num_heads=2, update_rule="gated", scale=0.3)],
         {"q": q, "k": k, "v": v, "d": hdecay}, {"y": y, "s": s})
    beta1 = sigmoid(randn(2, 3, 1)).astype(np.float32)
    y, s = linear_attention_ref(q, k, v, 4, 2, "delta", past, beta=beta1)
    good("linearattention_27_delta_beta_scalar", 27,
         [node("LinearAttention", ["q", "k", "v", "p", "", "b"], ["y", "s"], q_num_heads=4,
               kv_num_heads=2, update_rule="delta")],
         {"q": q, "k": k, "v": v, "p": past, "b": beta1}, {"y": y, "s": s})
    x, w, bias, past = randn(2, 3, 5), randn(3, 1, 3), randn(3), randn(2, 3, 2)
    y, s = causal_conv_ref(x, w, bias, past, "silu")
    good("causalconvwithstate_27_bias_past_silu", 27,
         [node("CausalConvWithState", ["x", "w", "bias", "p"], ["y", "s"], activation="silu")],
         {"x": x, "w": w, "bias": bias, "p": past}, {"y": y, "s": s})
    w4 = randn(3, 1, 4)
    x1 = randn(2, 3, 2)
    y, s = causal_conv_ref(x1, w4)
    good("causalconvwithstate_27_short_input", 27,
         [node("CausalConvWithState", ["x", "w"], ["y", "s"])], {"x": x1, "w": w4},
         {"y": y, "s": s})
    bad("linearattention_27_missing_beta", 27,
        [node("LinearAttention", ["q", "k", "v", "", "d"], ["y", "s"], q_num_heads=4,
              kv_num_heads=2)],
        {"q": q, "k": k, "v": v, "d": decay}, {"y": q, "s": past},
        "update_rule 'gated_delta' needs decay and beta")
    bad("linearattention_27_heads", 27,
        [node("LinearAttention", ["q", "k", "v"], ["y", "s"], q_num_heads=3, kv_num_heads=2,
              update_rule="linear")],
        {"q": randn(1, 2, 6), "k": randn(1, 2, 4), "v": randn(1, 2, 4)},
        {"y": randn(1, 2, 6), "s": randn(1, 2, 2, 2)},
        "q_num_heads (3) must be a positive multiple of kv_num_heads (2)")
    bad("causalconvwithstate_27_activation", 27,
        [node("CausalConvWithState", ["x", "w"], ["y", "s"], activation="gelu")],
        {"x": x, "w": w}, {"y": x, "s": past},
        "activation 'gelu' is not supported (expected none, silu or swish)")


# ---- the 8-bit floats: Cast to and from them (expected bit patterns from
# ml_dtypes 0.5 and onnx.numpy_helper.to_float8e8m0, which Debian lacks) ----

F8_X = [0.0, -0.0, 0.3, -1.7, 1e-3, 5e-6, 300.0, 449.0, 470.0, 1e5, -1e5, np.inf, -np.inf,
        np.nan, 2.0 ** -10, 0.013671875]
F8_BITS = {  # ONNX type: (saturate=1, saturate=0)
    17: ([0, 128, 42, 190, 1, 0, 121, 126, 126, 126, 254, 126, 254, 127, 0, 7],
         [0, 128, 42, 190, 1, 0, 121, 126, 127, 127, 255, 127, 255, 127, 0, 7]),
    18: ([0, 0, 50, 198, 1, 0, 127, 127, 127, 127, 255, 127, 255, 128, 1, 14],
         [0, 0, 50, 198, 1, 0, 128, 128, 128, 128, 128, 128, 128, 128, 1, 14]),
    19: ([0, 128, 53, 191, 20, 0, 93, 95, 95, 123, 251, 123, 251, 126, 20, 35],
         [0, 128, 53, 191, 20, 0, 93, 95, 95, 124, 252, 124, 252, 126, 20, 35]),
    20: ([0, 0, 57, 195, 24, 1, 97, 99, 99, 127, 255, 127, 255, 128, 24, 39],
         [0, 0, 57, 195, 24, 1, 97, 99, 99, 128, 128, 128, 128, 128, 24, 39]),
}
F8_NAME = {17: "e4m3fn", 18: "e4m3fnuz", 19: "e5m2", 20: "e5m2fnuz"}
E8M0_X = [0.0, 0.124, 0.25, 0.3, 0.75, 1.5, 3.0, 1e30, np.inf]
E8M0_BITS = {"up": [0, 124, 125, 126, 127, 128, 129, 227, 255],
             "down": [0, 123, 125, 125, 126, 127, 128, 226, 255],
             "nearest": [0, 124, 125, 125, 127, 128, 129, 227, 255]}


def f8_value(bits, t):
    """The value of an 8-bit float's bit pattern (the formats of ONNX's Cast)."""
    mb, bias, uz, ieee = {17: (3, 7, 0, 0), 18: (3, 8, 1, 0), 19: (2, 15, 0, 1),
                          20: (2, 16, 1, 0)}[t]
    e, m, neg = (bits >> mb) & ((1 << (7 - mb)) - 1), bits & ((1 << mb) - 1), bits >> 7
    emax = (1 << (7 - mb)) - 1
    if (uz and bits == 0x80) or (ieee and e == emax and m) or \
       (not uz and not ieee and e == emax and m == (1 << mb) - 1):
        return np.nan
    if ieee and e == emax:
        return -np.inf if neg else np.inf
    v = (1 + m / (1 << mb)) * 2.0 ** (e - bias) if e else m * 2.0 ** (1 - bias - mb)
    return -v if neg else v


def float8_tests():
    x = np.array(F8_X, np.float32)
    for t, (sat, nosat) in F8_BITS.items():
        for s, bits in ((1, sat), (0, nosat)):
            good("cast_26_float_%s_saturate%d" % (F8_NAME[t], s), 26,
                 [node("Cast", ["x"], ["q"], to=t, saturate=s),
                  node("BitCast", ["q"], ["y"], to=2)],
                 {"x": x}, {"y": np.array(bits, np.uint8)})
        # back to float16 through a Transpose of the 8-bit tensor (moved as bytes)
        x2 = x.reshape(4, 4)
        back = np.array([f8_value(b, t) for b in sat], np.float64).reshape(4, 4).T
        good("cast_24_%s_transpose_float16" % F8_NAME[t], 24,
             [node("Cast", ["x"], ["q"], to=t), node("Transpose", ["q"], ["qt"]),
              node("Cast", ["qt"], ["y"], to=10)],
             {"x": x2}, {"y": back.astype(np.float16)})
    xe = np.array(E8M0_X, np.float32)
    for mode, bits in E8M0_BITS.items():
        good("cast_26_float_e8m0_%s" % mode, 26,
             [node("Cast", ["x"], ["q"], to=24, round_mode=mode),
              node("BitCast", ["q"], ["y"], to=2)],
             {"x": xe}, {"y": np.array(bits, np.uint8)})
    xq = np.array(F8_X[:6], np.float32)
    good("castlike_24_e5m2_double", 24,
         [node("Cast", ["x"], ["like"], to=19), node("CastLike", ["x", "like"], ["q"]),
          node("Cast", ["q"], ["y"], to=11)],
         {"x": xq}, {"y": np.array([f8_value(b, 19) for b in F8_BITS[19][0][:6]])})
    bad("cast_24_float8_add", 24,
        [node("Cast", ["x"], ["q"], to=17), node("Add", ["q", "q"], ["y"])],
        {"x": x}, {"y": x},
        "input 'q' is a float8e4m3fn tensor, which Add does not take")
    bad("cast_24_round_mode", 24, [node("Cast", ["x"], ["y"], to=24, round_mode="odd")],
        {"x": x}, {"y": x}, "round_mode 'odd' is not supported (expected up, down or nearest)")


def bad_tests():
    x = randn(2)
    # GridSample's modes were bilinear/bicubic until opset 20 renamed them
    xg, g = randn(1, 1, 2, 2), randn(1, 1, 1, 2)
    bad("gridsample_16_linear", 16, [node("GridSample", ["x", "g"], ["y"], mode="linear")],
        {"x": xg, "g": g}, {"y": xg}, "mode 'linear' is not one of nearest, bilinear, bicubic")
    bad("gridsample_20_bicubic", 20, [node("GridSample", ["x", "g"], ["y"], mode="bicubic")],
        {"x": xg, "g": g}, {"y": xg}, "mode 'bicubic' is not one of nearest, linear, cubic")
    xs = [randn(2, 3)] + [randn(3) for _ in range(4)]
    bad("batchnorm_9_saved_stats", 9,
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv", "sm", "sv"])],
        dict(zip("xsbmv", xs)), {"y": xs[0]},
        "training-mode BatchNormalization before opset 14 is not supported")
    xg = randn(1, 1, 2, 2, 2)
    bad("gridsample_16_3d", 16, [node("GridSample", ["x", "g"], ["y"])],
        {"x": xg, "g": randn(1, 1, 1, 1, 3)}, {"y": xg}, "X must be [N, C, H, W]")
    bad("opset_29", 29, [node("Relu", ["x"], ["y"])], {"x": x}, {"y": x},
        "opset 29 is newer than the newest supported (28)")


    # float6e2m3 (27, opset 24 names it) stays unsupported; the sub-byte types
    # (opsets 21 to 25) are testdata/gen_subbyte_tests.py's, as Debian's onnx
    # cannot write them
    g = helper.make_graph([node("Identity", ["x"], ["y"])], "float6",
                          [helper.make_tensor_value_info("x", 27, [4])],
                          [helper.make_tensor_value_info("y", 27, [4])])
    m = helper.make_model(g, producer_name="collagec-opset-test",
                          opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 10
    BAD.append(("float6_input_24", m, "input 'x' has element type float6e2m3 (27), which is "
                "not supported"))



# ---- StringConcat-20, RegexFullMatch-20: the spec's examples and a few more ----

def strings(*rows):
    return np.array(rows, dtype=object)


def string_tests():
    for name, x, y in (
            ("string_concat", strings("abc", "def"), strings(".com", ".net")),
            ("string_concat_broadcasting", strings("one", "two", "three"), strings(".")),
            ("string_concat_empty_string", strings("abc", ""), strings("", "abc")),
            ("string_concat_utf8", strings("\u00e9t\u00e9", "\u00fc"), strings("!", "ber")),
            ("string_concat_zero_dimensional", np.array("abc", dtype=object),
             np.array("def", dtype=object)),
            ("string_concat_2d", strings(["a", "b"], ["c", "d"]), strings(["x"], ["y"]))):
        z = np.frompyfunc(lambda a, b: a + b, 2, 1)(x, y)
        good(name, 20, [node("StringConcat", ["x", "y"], ["z"])], {"x": x, "y": y},
             {"z": np.asarray(z, dtype=object)})
    for name, pat, x in (
            ("regex_full_match_basic", r"www\.[\w.-]+\.\bcom",
             strings("www.google.com", "www.facebook.com", "www.bbc.co.uk")),
            ("regex_full_match_email_domain", r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)",
             strings(["account@gmail.com", "account@hotmail.com"],
                     ["not email", "account2@yahoo.com"])),
            ("regex_full_match_digits_lazy", r"(?:ab)+?\d{2,3}",
             strings("ab12", "abab123", "ab1", "ba12", "ab1234")),
            ("regex_full_match_empty", r"a*", np.zeros((2, 0), dtype=object))):
        y = np.frompyfunc(lambda s: re.fullmatch(pat, s) is not None, 1, 1)(x)
        good(name, 20, [node("RegexFullMatch", ["x"], ["y"], pattern=pat)], {"x": x},
             {"y": np.asarray(y, dtype=bool).reshape(x.shape)})
    for name, x, attrs in (
            ("string_split_basic", strings("abc.com", "def.net"), {"delimiter": "."}),
            ("string_split_maxsplit", strings(["hello world", "def.net"],
                                              ["o n n x", "the quick brown fox"]),
             {"maxsplit": 2}),
            ("string_split_consecutive_delimiters", strings("o-n-n--x-", "o-n----nx"),
             {"delimiter": "-"}),
            ("string_split_empty_string_delimiter",
             strings("hello world !", "  hello   world !", " hello world   ! "),
             {"delimiter": ""}),
            ("string_split_no_delimiter", strings("hello world !", "  hello   world !", ""), {}),
            ("string_split_multichar_maxsplit", strings("a::b::c::d", "::", "x"),
             {"delimiter": "::", "maxsplit": 1}),
            ("string_split_empty_tensor", np.zeros((0,), dtype=object), {})):
        sep = attrs.get("delimiter") or None
        pieces = [str(v).split(sep, attrs.get("maxsplit", -1)) for v in x.reshape(-1)]
        cols = max([len(p) for p in pieces], default=0)
        y = np.array([p + [""] * (cols - len(p)) for p in pieces], dtype=object)
        z = np.array([len(p) for p in pieces], dtype=np.int64).reshape(x.shape)
        good(name, 20, [node("StringSplit", ["x"], ["y", "z"], **attrs)], {"x": x},
             {"y": y.reshape(x.shape + (cols,)), "z": z})
    x = strings("abc")
    bad("regex_full_match_inline_flag", 20,
        [node("RegexFullMatch", ["x"], ["y"], pattern="(?i)abc")], {"x": x},
        {"y": np.array([True])}, "pattern '(?i)abc' uses RE2 syntax that is not supported")
    bad("regex_full_match_invalid", 20,
        [node("RegexFullMatch", ["x"], ["y"], pattern="a(b")], {"x": x},
        {"y": np.array([True])}, "pattern 'a(b' is not a valid regular expression")
    bad("string_concat_number", 20,
        [node("StringConcat", ["x", "f"], ["y"])], {"x": x, "f": np.ones(1, np.float32)},
        {"y": x}, "inputs 'X' and 'Y' must be string tensors")
    # Equal-19 of strings: byte for byte, broadcast; not against a number
    for name, a, b in (
            ("equal_string", strings("abc", "", "\u00e9t\u00e9", "x"),
             strings("abc", "", "\u00e9te", "X")),
            ("equal_string_broadcast", strings(["a", "bb"], ["bb", "a"], ["", "a"]),
             strings(["bb", "a"])),
            ("equal_string_scalar", strings("on", "off", "on"), np.array("on", dtype=object))):
        good(name, 19, [node("Equal", ["a", "b"], ["y"])], {"a": a, "b": b},
             {"y": np.asarray(np.frompyfunc(lambda u, v: u == v, 2, 1)(a, b), dtype=bool)})
    # FlexAttention's score_mod over grouped heads (its expansion needs Hq = Hkv)
    cap = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "score_mod",
                            [helper.make_tensor_value_info("s", 1, None)],
                            [helper.make_tensor_value_info("t", 1, None)])
    q, kv = randn(1, 4, 3, 8), randn(1, 2, 3, 8)
    bad("flexattention_gqa_score_mod", 26,
        [helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="flex",
                          domain="ai.onnx.preview", score_mod=cap)],
        {"q": q, "k": kv, "v": kv}, {"y": q},
        "node 0 'flex' (FlexAttention): score_mod and prob_mod need Q and K of one static "
        "head count")
    bad("equal_string_number", 19,
        [node("Equal", ["x", "f"], ["y"])], {"x": x, "f": np.ones(1, np.float32)},
        {"y": np.array([True])}, "inputs of types string and float32 (a string compares only "
        "with a string)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_opset_tests.py OUTDIR")
    reduce_tests()
    split_pad_tests()
    widen_tests()
    elementwise_tests()
    scatter_tests()
    pool_tests()
    maxpool_indices_tests()
    batchnorm_training_tests()
    roialign_tests()
    training_tests()
    tfidf_tests()
    dft_tests()
    deformconv_tests()
    window_tests()
    stft_tests()
    resize_tests()
    norm_tests()
    image_tests()
    gridsample_tests()
    rope_tests()
    attention_tests()
    opset24_tests()
    stateful_tests()
    float8_tests()
    string_tests()
    bad_tests()
    nodetest.write(sys.argv[1], GOOD, BAD)


main()
