#!/usr/bin/env python3
"""Builds the quantized models of tests/quant.sh with ONNX Runtime's own
quantizer, and their reference outputs from ONNX Runtime (run once; the
results are committed, so the test needs no ONNX Runtime).

usage: gen_quant_models.py OUTDIR [contrib|chain]   (testdata/quant)

OUTDIR/NAME/model.onnx and test_data_set_0/{input_0,output_0}.pb for
  cnn_qdq      a small float CNN (Conv, Relu, MaxPool, Conv, Relu,
               MaxPool, Flatten, MatMul, Add) quantized by quantize_static with a
               calibration reader, QDQ format, per-channel int8 weights and
               uint8 activations
  cnn_qop      the same in QOperator format, Conv and MatMul only (QLinearConv,
               QLinearMatMul; ONNX Runtime's other QOperator ops are in its
               com.microsoft domain)
  mlp_dynamic  MatMul + Add + Relu + MatMul quantized by quantize_dynamic
               (DynamicQuantizeLinear, MatMulInteger)
  cnn_qdq_tensor  the CNN by quantize_static's defaults (QDQ, per-tensor
               weights): its bias DequantizeLinears have a [1] scale beside
               a scalar zero point, as in its ResNet-50
  resblock_qdq a residual CNN (Conv, Relu, Conv, Relu, Conv, Add of the
               first Relu, Relu, GlobalAveragePool, Flatten, MatMul, Add)
               with 7 channels of 15 x 15 (1575 elements: vector tails),
               quantize_static QDQ as cnn_qdq: its residual Add runs as
               QLinearAdd in ONNX Runtime and in collagec
  resblock_chain_qdq  the same block with one more Conv and Relu after its
               residual Relu, before the pool (`gen_quant_models.py OUTDIR
               chain` writes only it): the residual Add's result, read by a
               Conv only, and its operands may all stay channels-last
  qlinearadd_{u8,s8,u8_scalar,s8_bcast}  one com.microsoft QLinearAdd
               (ONNX Runtime's kernel) of random 8-bit tensors: odd sizes, a
               one-element b, a broadcast; atol 0 (collagec computes what
               that kernel computes, bit for bit)
  qlinearpool_{avg_u8,avg_s8_incl,gap_u8,gap_s8}, qlinearconcat_{u8,s8}
               one com.microsoft QLinearAveragePool, QLinearGlobalAveragePool
               or QLinearConcat of random 8-bit tensors (their own random
               generator: `gen_quant_models.py OUTDIR contrib` writes only
               them), and qlinearfold_{avg_u8,gap_s8,concat_u8,concat_s8}:
               the same of initializers only, which collagec folds at
               compile time through the ops' own loop nests (the c target's
               kernels take the others); atol one unit for the pools (ONNX Runtime sums
               dequantized floats, collagec the integers exactly), 0 for
               the concatenations
The output is ONNX Runtime's (default session options: its QDQ fusions
run integer kernels). OUTDIR/NAME/atol holds the test's tolerance: one
quantization step of the output (its last DequantizeLinear's scale) plus
1e-6 for the cnn models, 1e-4 for mlp_dynamic (a float output of
dequantized int32 sums: no rounding steps). One step because ONNX Runtime
itself moves values by one step: on cnn_qdq its optimized session (fused
integer kernels) and its unoptimized one (the QDQ graph as written, which
collagec matches exactly) differ by one step (printed when this runs), and
its x86 uint8 x int8 kernels saturate int16 pair sums (pmaddubsw), which
the exact int32 arithmetic of ONNX and collagec does not: cnn_qop differs
from it by one step in 2 of 10 outputs, while collagec's QLinearConv and
QLinearMatMul equal onnx.reference's on those inputs.

Needs onnx, numpy and onnxruntime (python3 of pyenv); deterministic.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)

RNG = np.random.default_rng(7)


def init(name, shape, scale):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def cnn():
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool2"),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "wf"], ["fm"], name="fc"),
        helper.make_node("Add", ["fm", "bf"], ["y"], name="fc_bias"),
    ]
    g = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [init("w1", [8, 3, 3, 3], 0.3), init("b1", [8], 0.1), init("w2", [16, 8, 3, 3], 0.15),
         init("b2", [16], 0.1), init("wf", [256, 10], 0.08), init("bf", [10], 0.1)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def resblock():
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], name="conv0"),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r0"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "wf"], ["fm"], name="fc"),
        helper.make_node("Add", ["fm", "bf"], ["y"], name="fc_bias"),
    ]
    g = helper.make_graph(
        nodes, "resblock", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 15, 15])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [init("w0", [7, 3, 3, 3], 0.3), init("b0", [7], 0.1), init("w1", [7, 7, 3, 3], 0.2),
         init("b1", [7], 0.1), init("w2", [7, 7, 3, 3], 0.2), init("b2", [7], 0.1),
         init("wf", [7, 10], 0.3), init("bf", [10], 0.1)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def resblock_chain():
    m = resblock()
    g = m.graph
    pool = [n for n in g.node if n.name == "pool"][0]
    pool.input[0] = "r3"
    i = list(g.node).index(pool)
    g.node.insert(i, helper.make_node("Relu", ["c3"], ["r3"], name="relu3"))
    g.node.insert(i, helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1],
                                      name="conv3"))
    g.initializer.extend([init("w3", [7, 7, 3, 3], 0.2), init("b3", [7], 0.1)])
    g.name = "resblock_chain"
    return m


def chain(out):
    """resblock_chain_qdq (the docstring), from a generator of its own: the
    same model whether written alone or after the others."""
    global RNG
    RNG = np.random.default_rng(11)
    tmp = os.path.join(out, "float")
    os.makedirs(tmp, exist_ok=True)
    residual_qdq(out, tmp, "resblock_chain", resblock_chain())
    os.remove(os.path.join(tmp, "resblock_chain.onnx"))
    os.rmdir(tmp)


def residual_qdq(out, tmp, name, model):
    """NAME_qdq: the residual CNN model (saved in tmp) by quantize_static, QDQ,
    per-channel int8 weights, uint8 activations, and its case."""
    onnx.save(model, os.path.join(tmp, name + ".onnx"))
    d = os.path.join(out, name + "_qdq")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    quantize_static(os.path.join(tmp, name + ".onnx"), path, Reader(8, (1, 3, 15, 15)),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    save_case(d, path, RNG.standard_normal((1, 3, 15, 15)).astype(np.float32),
              output_scale(onnx.load(path)) + 1e-6)


def mlp():
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["y"], name="mm2"),
    ]
    g = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [init("w1", [32, 64], 0.2), init("b1", [64], 0.1), init("w2", [64, 8], 0.2)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


class Reader(CalibrationDataReader):
    def __init__(self, n, shape=(1, 3, 16, 16)):
        self.data = iter([{"x": RNG.standard_normal(shape).astype(np.float32)}
                          for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def output_scale(model):
    """The scale of the last DequantizeLinear before the graph output."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    if not dq:
        sys.exit("gen_quant_models.py: no DequantizeLinear")
    return float(inits[dq[-1].input[1]])


def save_case(d, path, x, atol):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": x})[0]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    print("%s: optimized vs unoptimized ONNX Runtime differ by at most %.3g (atol %.3g)"
          % (os.path.basename(d), float(np.abs(y - plain).max()), atol))
    for name, t, arr in (("input_0", "x", x), ("output_0", "y", y)):
        with open(os.path.join(d, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, t).SerializeToString())
    with open(os.path.join(d, "atol"), "w") as f:
        f.write("%.9g\n" % atol)


def qlinearadd(d, t, ash, bsh, rng):
    """One com.microsoft QLinearAdd, and ONNX Runtime's output on random inputs."""
    npt = np.uint8 if t == TensorProto.UINT8 else np.int8
    lo, hi = (0, 256) if npt == np.uint8 else (-128, 128)
    a, b = rng.integers(lo, hi, ash).astype(npt), rng.integers(lo, hi, bsh).astype(npt)
    inits = [numpy_helper.from_array(np.float32(rng.random() * 0.05 + 0.01), "sa"),
             numpy_helper.from_array(npt(rng.integers(lo, hi)), "za"),
             numpy_helper.from_array(np.float32(rng.random() * 0.05 + 0.01), "sb"),
             numpy_helper.from_array(npt(rng.integers(lo, hi)), "zb"),
             numpy_helper.from_array(np.float32(rng.random() * 0.06 + 0.02), "sc"),
             numpy_helper.from_array(npt(rng.integers(lo, hi)), "zc")]
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"],
                            domain="com.microsoft", name="qadd")
    g = helper.make_graph([node], "qlinearadd", [helper.make_tensor_value_info("a", t, ash),
                                                 helper.make_tensor_value_info("b", t, bsh)],
                          [helper.make_tensor_value_info("y", t, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})[0]
    for name, v, arr in (("input_0", "a", a), ("input_1", "b", b), ("output_0", "y", y)):
        with open(os.path.join(d, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, v).SerializeToString())
    with open(os.path.join(d, "atol"), "w") as f:
        f.write("0\n")


def contrib_case(d, node, ins, t, atol, const=False):
    """One com.microsoft node of inputs ins [(name, array)], ONNX Runtime's
    output; the tensors x* graph inputs, or with const every input an
    initializer (collagec then folds the node at compile time, running the
    op's own loop nest in its loop-IR interpreter)."""
    def is_input(n):
        return n.startswith("x") and not const

    g = helper.make_graph([node], node.op_type,
                          [helper.make_tensor_value_info(n, t, a.shape) for n, a in ins
                           if is_input(n)],
                          [helper.make_tensor_value_info("y", t, None)],
                          [numpy_helper.from_array(a, n) for n, a in ins if not is_input(n)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    feeds = {n: a for n, a in ins if is_input(n)}
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for k, (n, a) in enumerate(feeds.items()):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())
    with open(os.path.join(d, "atol"), "w") as f:
        f.write("%g\n" % atol)


def contrib_pools(out):
    """The qlinearpool_* and qlinearconcat_* cases (the docstring)."""
    rng = np.random.default_rng(31)

    def q(npt, shape):
        lo, hi = (0, 256) if npt == np.uint8 else (-128, 128)
        return rng.integers(lo, hi, shape).astype(npt)

    def s():
        return np.float32(rng.random() * 0.05 + 0.01)

    for name, t, shape, attrs in (
            ("avg_u8", TensorProto.UINT8, (1, 3, 15, 17),
             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
            ("avg_s8_incl", TensorProto.INT8, (2, 2, 9, 11),
             {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
            ("gap_u8", TensorProto.UINT8, (1, 5, 7, 7), None),
            ("gap_s8", TensorProto.INT8, (2, 3, 4, 5), None)):
        npt = np.uint8 if t == TensorProto.UINT8 else np.int8
        ins = [("x", q(npt, shape)), ("sx", s()), ("zx", q(npt, ())), ("sy", s()),
               ("zy", q(npt, ()))]
        op = "QLinearAveragePool" if attrs else "QLinearGlobalAveragePool"
        node = helper.make_node(op, [n for n, _ in ins], ["y"], domain="com.microsoft",
                                name="qpool", **(attrs or {}))
        contrib_case(os.path.join(out, "qlinearpool_" + name), node, ins, t, 1)
        if name in ("avg_u8", "gap_s8"):
            contrib_case(os.path.join(out, "qlinearfold_" + name), node, ins, t, 1, True)
    for name, t in (("u8", TensorProto.UINT8), ("s8", TensorProto.INT8)):
        npt = np.uint8 if t == TensorProto.UINT8 else np.int8
        ins = [("sy", s()), ("zy", q(npt, ()))]
        for i, c in enumerate((3, 2, 5)):
            ins += [("x%d" % i, q(npt, (1, c, 4, 5))), ("sx%d" % i, s()), ("zx%d" % i, q(npt, ()))]
        # the second input at the output's scale and zero point: a copy
        ins[6] = ("sx1", ins[0][1])
        ins[7] = ("zx1", ins[1][1])
        node = helper.make_node("QLinearConcat", [n for n, _ in ins], ["y"],
                                domain="com.microsoft", name="qconcat", axis=1)
        contrib_case(os.path.join(out, "qlinearconcat_" + name), node, ins, t, 0)
        contrib_case(os.path.join(out, "qlinearfold_concat_" + name), node, ins, t, 0, True)


def main():
    out = sys.argv[1]
    if sys.argv[2:] == ["contrib"]:
        contrib_pools(out)
        return
    if sys.argv[2:] == ["chain"]:
        chain(out)
        return
    tmp = os.path.join(out, "float")
    os.makedirs(tmp, exist_ok=True)
    onnx.save(cnn(), os.path.join(tmp, "cnn.onnx"))
    onnx.save(mlp(), os.path.join(tmp, "mlp.onnx"))
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    for name, fmt in (("cnn_qdq", QuantFormat.QDQ), ("cnn_qop", QuantFormat.QOperator)):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        ops = None if fmt == QuantFormat.QDQ else ["Conv", "MatMul"]
        quantize_static(os.path.join(tmp, "cnn.onnx"), path, Reader(8), quant_format=fmt,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, op_types_to_quantize=ops)
        m = onnx.load(path)
        save_case(d, path, x, output_scale(m) + 1e-6)
    d = os.path.join(out, "mlp_dynamic")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    quantize_dynamic(os.path.join(tmp, "mlp.onnx"), path, weight_type=QuantType.QUInt8)
    save_case(d, path, RNG.standard_normal((4, 32)).astype(np.float32), 1e-4)
    d = os.path.join(out, "cnn_qdq_tensor")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    quantize_static(os.path.join(tmp, "cnn.onnx"), path, Reader(8), quant_format=QuantFormat.QDQ,
                    per_channel=False)
    save_case(d, path, x, output_scale(onnx.load(path)) + 1e-6)
    residual_qdq(out, tmp, "resblock", resblock())
    rng = np.random.default_rng(5)
    for name, t, ash, bsh in (("u8", TensorProto.UINT8, (3, 1001), (3, 1001)),
                              ("s8", TensorProto.INT8, (7, 333), (7, 333)),
                              ("u8_scalar", TensorProto.UINT8, (2, 77), (1,)),
                              ("s8_bcast", TensorProto.INT8, (4, 1, 9), (5, 1))):
        qlinearadd(os.path.join(out, "qlinearadd_" + name), t, ash, bsh, rng)
    contrib_pools(out)
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)
    chain(out)


if __name__ == "__main__":
    main()
