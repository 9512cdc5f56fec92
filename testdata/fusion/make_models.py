#!/usr/bin/python3
"""Models, inputs and numpy reference outputs for tests/fusion.sh.

usage: make_models.py OUTDIR

Each NAME.onnx has input x (NAME_x.npy, or NAME_x_N.npy for a symbolic
batch N) and output y (expected in NAME_exp/y.npy or NAME_exp_N/y.npy):
  conv_bias_relu   Conv without bias, Add of a [1, M, 1, 1] bias, Relu
  conv_res_relu    Conv with bias, Add of the input (residual), Relu
  matmul_gelu      MatMul by a constant, Add of a bias row, GELU written with
                   Erf (Div, Erf, Add, Mul, Mul: the input read twice)
  gemm_relu        Gemm with bias, Relu
  maxpool_relu     MaxPool, Mul by a constant, Relu
  conv_swish       Conv, x * Sigmoid(x) (the anchor's output read twice)
  softmax_scale    Mul by a constant, Softmax, Mul by a constant (the first
                   Mul inlined into Softmax's loads: a prologue)
  logsumexp        Mul by a constant, Exp, ReduceSum, Log: the reduction with
                   its elementwise prologue and epilogue
  layernorm        LayerNormalization spelled out: ReduceMean, Sub, Pow,
                   ReduceMean, Add, Sqrt, Div, Mul, Add (the layernorm pass
                   makes it one LayerNormalization node)
  layernorm_2axes  the same over the last two axes, squared by Mul(d, d),
                   Add(eps, var) and Mul(gamma, y) commuted, no bias
  layernorm_plain  the same without scale or bias
  layernorm_shared the centred x also read outside the chain (no
                   LayerNormalization; the rest is an RMSNormalization of it)
  rmsnorm          x / sqrt(mean(x^2) + eps) * gamma spelled out (the
                   layernorm pass makes it one RMSNormalization node)
  rmsnorm_recip    torch's LlamaRMSNorm: Pow, ReduceMean, Add, Sqrt,
                   Reciprocal, Mul(x, r), Mul(gamma, y)
  rmsnorm_div1     Mul(x, x), ReduceMean over the last two axes, Add(eps, ms),
                   Sqrt, Div(1, s), Mul(r, x), Mul(y, gamma) of [10, 48]
  rmsnorm_pow      Pow(ms + eps, -0.5), Mul(x, r), no scale
  rmsnorm_cast     x rounded to float16, then LlamaRMSNorm on float16: Cast
                   to float32, the chain, Cast to float16, Mul by a float16
                   gamma (the Casts go into the node); y cast back to float32
  rmsnorm_axis1    the chain reducing axis 1, not the last (left alone)
  rmsnorm_shared   the reciprocal also added to y (left alone)
  rmsnorm_wbcast   gamma of [10, 1]: broadcasts over axis 1, so it stays a
                   Mul after the merged node
  conv_sym         conv_bias_relu with batch N symbolic (N = 1 and 3)
  bias_gelu_sym    Add of a bias row and GELU written with Erf on x of
                   [N, 64, 256], N symbolic (N = 1 and 3): one fused kernel
                   over loops of x's shape (the bias broadcasts), which must
                   still be a parallel region
  qkv_interleaved  three MatMuls of x, each with an Add of its bias and a Mul
                   by a constant, written as exporters interleave them (the
                   three MatMuls, the three Adds, the three Muls), then
                   y = q + k + v: each MatMul still takes its own Add and Mul
  layernorm_half   layernorm in float16, as a model converted to float16
                   whole writes it (x cast to float16 first, y back to
                   float32; every constant float16): still one node
  matmul_gelu_half matmul_gelu the same way: the MatMul widened to float32
                   (the fold pass), its Add and GELU in float16 between the
                   Casts, all of it one kernel's epilogue
Reference outputs are computed in float64 (the float16 models' from x
rounded to float16, their results rounded to float16).
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = None
RNG = np.random.default_rng(11)


def rnd(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def save(name, nodes, xshape, yshape, inits, opset=13):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)],
                          [numpy_helper.from_array(v, n) for n, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


def expect(name, x, y, suffix=""):
    np.save(os.path.join(OUT, "%s_x%s.npy" % (name, suffix)), x.astype(np.float32))
    d = os.path.join(OUT, "%s_exp%s" % (name, suffix))
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "y.npy"), np.asarray(y, dtype=np.float32))


def ln_chain(x, y):
    """LayerNorm over the last axis spelled out from x to y (constants two, eps,
    gamma, beta)."""
    return [helper.make_node("ReduceMean", [x], ["mu"], name="mean", axes=[-1]),
            helper.make_node("Sub", [x, "mu"], ["d"], name="center"),
            helper.make_node("Pow", ["d", "two"], ["d2"], name="square"),
            helper.make_node("ReduceMean", ["d2"], ["var"], name="variance", axes=[-1]),
            helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
            helper.make_node("Sqrt", ["ve"], ["sd"], name="stddev"),
            helper.make_node("Div", ["d", "sd"], ["nrm"], name="normalize"),
            helper.make_node("Mul", ["nrm", "gamma"], ["sc"], name="gamma"),
            helper.make_node("Add", ["sc", "beta"], [y], name="beta")]


def gelu_chain(x, y):
    """MatMul of x by w, Add of b, GELU written with Erf, into y (constants w, b,
    sqrt2, one, half)."""
    return [helper.make_node("MatMul", [x, "w"], ["m"], name="mm"),
            helper.make_node("Add", ["m", "b"], ["h"], name="bias"),
            helper.make_node("Div", ["h", "sqrt2"], ["d"], name="gelu_div"),
            helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
            helper.make_node("Add", ["e", "one"], ["e1"], name="gelu_add"),
            helper.make_node("Mul", ["h", "e1"], ["he"], name="gelu_mul"),
            helper.make_node("Mul", ["he", "half"], [y], name="gelu_half")]


def conv2d(x, w, b=None, pad=1):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    if b is not None:
        y += b.astype(np.float64).reshape(1, m, 1, 1)
    return y


def relu(v):
    return np.maximum(v, 0)


def erf(v):
    return np.vectorize(math.erf)(v)


def conv_bias_relu(name, batch, batches):
    w, b = rnd(16, 8, 3, 3), rnd(1, 16, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "b"], ["cb"], name="bias"),
             helper.make_node("Relu", ["cb"], ["y"], name="relu")]
    save(name, nodes, [batch, 8, 12, 12], [batch, 16, 12, 12], {"w": w, "b": b})
    for n in batches:
        x = rnd(n, 8, 12, 12)
        expect(name, x, relu(conv2d(x, w) + b), "" if batch != "N" else "_%d" % n)


def main():
    global OUT
    OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)

    conv_bias_relu("conv_bias_relu", 2, [2])
    conv_bias_relu("conv_sym", "N", [1, 3])

    b = rnd(256)
    nodes = [helper.make_node("Add", ["x", "b"], ["h"], name="bias")] + gelu_chain("", "y")[2:]
    save("bias_gelu_sym", nodes, ["N", 64, 256], ["N", 64, 256],
         {"b": b, "sqrt2": np.array(math.sqrt(2), np.float32),
          "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)})
    for n in [1, 3]:
        x = rnd(n, 64, 256)
        h = x.astype(np.float64) + b
        expect("bias_gelu_sym", x, 0.5 * h * (1 + erf(h / math.sqrt(2))), "_%d" % n)

    ws = {"w" + c: rnd(32, 24) for c in "qkv"}
    bs = {"b" + c: rnd(24) for c in "qkv"}
    ss = {"s" + c: np.array(0.5 + i, np.float32) for i, c in enumerate("qkv")}
    nodes = [helper.make_node("MatMul", ["x", "w" + c], ["m" + c], name="mm_" + c) for c in "qkv"]
    nodes += [helper.make_node("Add", ["m" + c, "b" + c], ["a" + c], name="bias_" + c)
              for c in "qkv"]
    nodes += [helper.make_node("Mul", ["a" + c, "s" + c], [c], name="scale_" + c) for c in "qkv"]
    nodes += [helper.make_node("Add", ["q", "k"], ["qk"], name="sum_qk"),
              helper.make_node("Add", ["qk", "v"], ["y"], name="sum_v")]
    save("qkv_interleaved", nodes, [20, 32], [20, 24], {**ws, **bs, **ss})
    x = rnd(20, 32)
    expect("qkv_interleaved", x, sum((x.astype(np.float64) @ ws["w" + c] + bs["b" + c]) *
                                     ss["s" + c] for c in "qkv"))

    w, b = rnd(8, 8, 3, 3), rnd(8)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "x"], ["r"], name="residual"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    save("conv_res_relu", nodes, [1, 8, 10, 10], [1, 8, 10, 10], {"w": w, "b": b})
    x = rnd(1, 8, 10, 10)
    expect("conv_res_relu", x, relu(conv2d(x, w, b) + x))

    w, b = rnd(32, 24), rnd(24)
    nodes = gelu_chain("x", "y")
    save("matmul_gelu", nodes, [20, 32], [20, 24],
         {"w": w, "b": b, "sqrt2": np.array(math.sqrt(2), np.float32),
          "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)})
    x = rnd(20, 32)
    h = x.astype(np.float64) @ w + b
    expect("matmul_gelu", x, 0.5 * h * (1 + erf(h / math.sqrt(2))))

    w, b = rnd(24, 32), rnd(24)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="gemm", transB=1),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    save("gemm_relu", nodes, [20, 32], [20, 24], {"w": w, "b": b})
    x = rnd(20, 32)
    expect("gemm_relu", x, relu(x.astype(np.float64) @ w.T + b))

    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Mul", ["p", "s"], ["ps"], name="scale"),
             helper.make_node("Relu", ["ps"], ["y"], name="relu")]
    save("maxpool_relu", nodes, [1, 4, 8, 8], [1, 4, 4, 4], {"s": np.array(1.5, np.float32)})
    x = rnd(1, 4, 8, 8)
    p = x.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5)).astype(np.float64)
    expect("maxpool_relu", x, relu(p * 1.5))

    w = rnd(8, 4, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sigmoid"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="swish")]
    save("conv_swish", nodes, [1, 4, 9, 9], [1, 8, 9, 9], {"w": w})
    x = rnd(1, 4, 9, 9)
    c = conv2d(x, w)
    expect("conv_swish", x, c / (1 + np.exp(-c)))

    nodes = [helper.make_node("Mul", ["x", "t"], ["xs"], name="temperature"),
             helper.make_node("Softmax", ["xs"], ["p"], name="softmax", axis=-1),
             helper.make_node("Mul", ["p", "k"], ["y"], name="scale")]
    save("softmax_scale", nodes, [6, 40], [6, 40],
         {"t": np.array(0.5, np.float32), "k": np.array(3, np.float32)})
    x = rnd(6, 40)
    e = np.exp(x.astype(np.float64) * 0.5 - (x.astype(np.float64) * 0.5).max(-1, keepdims=True))
    expect("softmax_scale", x, 3 * e / e.sum(-1, keepdims=True))

    nodes = [helper.make_node("Mul", ["x", "t"], ["xs"], name="scale"),
             helper.make_node("Exp", ["xs"], ["e"], name="exp"),
             helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum"),
             helper.make_node("Log", ["s"], ["y"], name="log")]
    save("logsumexp", nodes, [6, 40], [6, 1],
         {"t": np.array(0.25, np.float32), "axes": np.array([-1], np.int64)})
    x = rnd(6, 40)
    expect("logsumexp", x, np.log(np.exp(x.astype(np.float64) * 0.25).sum(-1, keepdims=True)))

    g, bt = rnd(48), rnd(48)
    nodes = ln_chain("x", "y")
    save("layernorm", nodes, [2, 10, 48], [2, 10, 48],
         {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32),
          "gamma": g, "beta": bt})
    x = rnd(2, 10, 48)
    xd = x.astype(np.float64)
    d = xd - xd.mean(-1, keepdims=True)
    expect("layernorm", x, d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g + bt)

    g2 = rnd(10, 48)
    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-2, -1]),
             helper.make_node("Sub", ["x", "mu"], ["d"], name="center"),
             helper.make_node("Mul", ["d", "d"], ["d2"], name="square"),
             helper.make_node("ReduceMean", ["d2"], ["var"], name="variance", axes=[1, 2]),
             helper.make_node("Add", ["eps", "var"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="stddev"),
             helper.make_node("Div", ["d", "sd"], ["nrm"], name="normalize"),
             helper.make_node("Mul", ["gamma", "nrm"], ["y"], name="gamma")]
    save("layernorm_2axes", nodes, [2, 10, 48], [2, 10, 48],
         {"eps": np.array(1e-3, np.float32), "gamma": g2})
    d = xd - xd.mean((1, 2), keepdims=True)
    expect("layernorm_2axes", x, d / np.sqrt((d * d).mean((1, 2), keepdims=True) + 1e-3) * g2)

    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-1]),
             helper.make_node("Sub", ["x", "mu"], ["d"], name="center"),
             helper.make_node("Pow", ["d", "two"], ["d2"], name="square"),
             helper.make_node("ReduceMean", ["d2"], ["var"], name="variance", axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="stddev"),
             helper.make_node("Div", ["d", "sd"], ["y"], name="normalize")]
    save("layernorm_plain", nodes, [2, 10, 48], [2, 10, 48],
         {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32)})
    d = xd - xd.mean(-1, keepdims=True)
    expect("layernorm_plain", x, d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5))

    nodes = nodes[:-1] + [helper.make_node("Div", ["d", "sd"], ["nrm"], name="normalize"),
                          helper.make_node("Add", ["nrm", "d"], ["y"], name="plus_centred")]
    save("layernorm_shared", nodes, [2, 10, 48], [2, 10, 48],
         {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32)})
    expect("layernorm_shared", x, d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) + d)

    nodes = [helper.make_node("Pow", ["x", "two"], ["x2"], name="square"),
             helper.make_node("ReduceMean", ["x2"], ["ms"], name="meansq", axes=[-1]),
             helper.make_node("Add", ["ms", "eps"], ["me"], name="add_eps"),
             helper.make_node("Sqrt", ["me"], ["rms"], name="rms"),
             helper.make_node("Div", ["x", "rms"], ["nrm"], name="normalize"),
             helper.make_node("Mul", ["nrm", "gamma"], ["y"], name="gamma")]
    save("rmsnorm", nodes, [2, 10, 48], [2, 10, 48],
         {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32), "gamma": g})
    expect("rmsnorm", x, xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-5) * g)
    rms_models(x, g)


def rms_chain(sq, axes, after):
    """x^2 by sq ("pow" or "mul"), ReduceMean over axes, + eps, then after."""
    two = ["x", "two"] if sq == "pow" else ["x", "x"]
    return [helper.make_node("Pow" if sq == "pow" else "Mul", two, ["x2"], name="square"),
            helper.make_node("ReduceMean", ["x2"], ["ms"], name="meansq", axes=axes),
            helper.make_node("Add", ["ms", "eps"], ["me"], name="add_eps")] + after


def rms_ref(xd, axes, eps=1e-5):
    return xd / np.sqrt((xd * xd).mean(axes, keepdims=True) + eps)


def rms_models(x, g):
    xd = x.astype(np.float64)
    consts = {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32)}
    recip = [helper.make_node("Sqrt", ["me"], ["rms"], name="rms"),
             helper.make_node("Reciprocal", ["rms"], ["inv"], name="inv"),
             helper.make_node("Mul", ["x", "inv"], ["nrm"], name="normalize")]
    save("rmsnorm_recip", rms_chain("pow", [-1], recip + [
        helper.make_node("Mul", ["gamma", "nrm"], ["y"], name="gamma")]),
        [2, 10, 48], [2, 10, 48], dict(consts, gamma=g))
    expect("rmsnorm_recip", x, rms_ref(xd, -1) * g)

    g2 = rnd(10, 48)
    save("rmsnorm_div1", rms_chain("mul", [-2, -1], [
        helper.make_node("Sqrt", ["me"], ["rms"], name="rms"),
        helper.make_node("Div", ["one", "rms"], ["inv"], name="inv"),
        helper.make_node("Mul", ["inv", "x"], ["nrm"], name="normalize"),
        helper.make_node("Mul", ["nrm", "gamma"], ["y"], name="gamma")]),
        [2, 10, 48], [2, 10, 48], dict(consts, gamma=g2, one=np.array(1, np.float32)))
    expect("rmsnorm_div1", x, rms_ref(xd, (1, 2)) * g2)

    save("rmsnorm_pow", rms_chain("pow", [-1], [
        helper.make_node("Pow", ["me", "mhalf"], ["inv"], name="inv"),
        helper.make_node("Mul", ["x", "inv"], ["y"], name="normalize")]),
        [2, 10, 48], [2, 10, 48], dict(consts, mhalf=np.array(-0.5, np.float32)))
    expect("rmsnorm_pow", x, rms_ref(xd, -1))

    g16 = g.astype(np.float16)
    nodes = [helper.make_node("Cast", ["x"], ["x16"], name="to_half", to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["x16"], ["xf"], name="to_float", to=TensorProto.FLOAT)]
    nodes += [helper.make_node(n.op_type, ["xf" if i == "x" else i for i in n.input],
                               list(n.output), name=n.name, **{a.name: helper.get_attribute_value(a)
                                                                for a in n.attribute})
              for n in rms_chain("pow", [-1], recip)]
    nodes += [helper.make_node("Cast", ["nrm"], ["n16"], name="to_input_dtype",
                               to=TensorProto.FLOAT16),
              helper.make_node("Mul", ["gamma", "n16"], ["y16"], name="gamma"),
              helper.make_node("Cast", ["y16"], ["y"], name="to_output", to=TensorProto.FLOAT)]
    save("rmsnorm_cast", nodes, [2, 10, 48], [2, 10, 48], dict(consts, gamma=g16))
    xh = x.astype(np.float16).astype(np.float64)
    n16 = rms_ref(xh, -1).astype(np.float16).astype(np.float32)
    expect("rmsnorm_cast", x, (n16 * g16.astype(np.float32)).astype(np.float16))

    save("rmsnorm_axis1", rms_chain("pow", [1], recip + [
        helper.make_node("Mul", ["nrm", "gamma"], ["y"], name="gamma")]),
        [2, 10, 48], [2, 10, 48], dict(consts, gamma=g))
    expect("rmsnorm_axis1", x, rms_ref(xd, 1) * g)

    save("rmsnorm_shared", rms_chain("pow", [-1], recip + [
        helper.make_node("Mul", ["nrm", "gamma"], ["sc"], name="gamma"),
        helper.make_node("Add", ["sc", "inv"], ["y"], name="plus_inv")]),
        [2, 10, 48], [2, 10, 48], dict(consts, gamma=g))
    expect("rmsnorm_shared", x,
           rms_ref(xd, -1) * g + 1 / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-5))

    gc = rnd(10, 1)
    save("rmsnorm_wbcast", rms_chain("pow", [-1], recip + [
        helper.make_node("Mul", ["nrm", "gamma"], ["y"], name="gamma")]),
        [2, 10, 48], [2, 10, 48], dict(consts, gamma=gc))
    expect("rmsnorm_wbcast", x, rms_ref(xd, -1) * gc)
    se_models()
    half_models()


def half_model(name, body, xshape, yshape, inits):
    """body (nodes reading x16, writing y16) between Casts of x to float16 and y back."""
    nodes = [helper.make_node("Cast", ["x"], ["x16"], name="to_half", to=TensorProto.FLOAT16)]
    nodes += body
    nodes += [helper.make_node("Cast", ["y16"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    save(name, nodes, xshape, yshape, {k: v.astype(np.float16) for k, v in inits.items()})


def half_models():
    g, bt = rnd(48), rnd(48)
    half_model("layernorm_half", ln_chain("x16", "y16"), [2, 10, 48], [2, 10, 48],
        {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32),
         "gamma": g, "beta": bt})
    x = rnd(2, 10, 48)
    xh = x.astype(np.float16).astype(np.float64)
    d = xh - xh.mean(-1, keepdims=True)
    ln = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)
    g16, b16 = g.astype(np.float16).astype(np.float64), bt.astype(np.float16).astype(np.float64)
    expect("layernorm_half", x, (ln * g16 + b16).astype(np.float16))

    w, b = rnd(32, 24) * 0.25, rnd(24)
    half_model("matmul_gelu_half", gelu_chain("x16", "y16"), [20, 32], [20, 24],
        {"w": w, "b": b, "sqrt2": np.array(math.sqrt(2), np.float32),
         "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)})
    x = rnd(20, 32)
    xh = x.astype(np.float16).astype(np.float64)
    h = (xh @ w.astype(np.float16).astype(np.float64)).astype(np.float16).astype(np.float64)
    h = (h + b.astype(np.float16).astype(np.float64)).astype(np.float16).astype(np.float64)
    s2 = float(np.float16(math.sqrt(2)))
    expect("matmul_gelu_half", x, (0.5 * h * (1 + erf(h / s2))).astype(np.float16))


def se_block(name, c, hw, m):
    """Squeeze-and-excitation, then a 1x1 projection: x [1, c, hw, hw] -> y [1, m, hw, hw]."""
    r = max(c // 4, 1)
    w1, b1, w2, b2, wp = rnd(r, c, 1, 1), rnd(r), rnd(c, r, 1, 1), rnd(c), rnd(m, c, 1, 1)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["q"], name="reduce"),
             helper.make_node("Relu", ["q"], ["qr"], name="relu"),
             helper.make_node("Conv", ["qr", "w2", "b2"], ["e"], name="expand"),
             helper.make_node("Sigmoid", ["e"], ["s"], name="gate"),
             helper.make_node("Mul", ["x", "s"], ["xs"], name="scale"),
             helper.make_node("Conv", ["xs", "wp"], ["y"], name="project")]
    save(name, nodes, [1, c, hw, hw], [1, m, hw, hw],
         {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "wp": wp})
    x = rnd(1, c, hw, hw)
    p = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    q = relu(conv2d(p, w1, b1, pad=0))
    g = 1 / (1 + np.exp(-conv2d(q, w2, b2, pad=0)))
    expect(name, x, conv2d(x * g, wp, pad=0))


def se_models():
    # the projection's 8 x 16 weights are fewer than the 16 x 64 scaled
    # elements: fold-scale scales the weights; in se_nofold, 32 outputs over
    # 4 x 4 pixels, it leaves the Mul on x
    se_block("se_fold", 16, 8, 8)
    se_block("se_nofold", 16, 4, 32)


if __name__ == "__main__":
    main()
