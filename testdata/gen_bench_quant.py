#!/usr/bin/env python3
"""Builds the quantized models of make bench-quant (tests/bench_quant.sh),
each beside the float32 model it was made from, as a new user makes them
with ONNX Runtime's own quantization tools (issue 31's measure).

usage: gen_bench_quant.py OUTDIR [NAME...]   (no NAME: every model)

Writes OUTDIR/NAME.onnx (quantized) and OUTDIR/NAME.f32.onnx (float32) for
  bert_tiny      gen_models.py's bert_tiny by quantize_dynamic(weight_type=
                 QInt8): MatMulInteger + DynamicQuantizeLinear
  bert_base      gen_zoo.py's bert_base (BERT-Base-sized: 12 layers, hidden
                 768, seq 128) the same way
  resnet18       gen_models.py's resnet18 by quant_pre_process, then
                 quantize_static(QDQ, per_channel, QUInt8 activations, QInt8
                 weights) calibrated on 2 random inputs
  resnet50       gen_zoo.py's resnet50 the same way
  decoder_nbits  one LLaMA-style decoder layer at one token (hidden 2048,
                 16 heads, FFN 5632; RMSNorm, Q/K/V/O MatMuls, softmax
                 attention, SiLU-gated MLP, residual Adds; opset 17), its 7
                 weight MatMuls quantized here to com.microsoft MatMulNBits
                 as ONNX Runtime's MatMulNBitsQuantizer writes them: 4 bits,
                 blocks of 32 along K, asymmetric, uint8 zero points packed
                 two to a byte, float32 scales (that quantizer needs
                 onnx_ir, which the venv may lack)
  bert_tiny_f16  bert_tiny converted to float16 whole, inputs and outputs
                 too, by onnxruntime.transformers.float16's
                 convert_float_to_float16 (how a float16 model is made for
                 ONNX Runtime; issue 31's item 4)
  bert_base_f16  bert_base the same way

Needs numpy, onnx and onnxruntime (quantization tools); deterministic
(seeded weights and calibration data).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models  # noqa: E402
import gen_zoo  # noqa: E402


def save(m, path):
    with open(path + ".tmp", "wb") as f:
        f.write(m.SerializeToString())
    os.replace(path + ".tmp", path)


def dynamic(out, name, model):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    f = os.path.join(out, name + ".f32.onnx")
    save(model, f)
    quantize_dynamic(f, os.path.join(out, name + ".onnx"), weight_type=QuantType.QInt8)


def half(out, name, model):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    save(model, os.path.join(out, name + ".f32.onnx"))
    save(convert_float_to_float16(model, keep_io_types=False), os.path.join(out, name + ".onnx"))


def static_qdq(out, name, model):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quant_pre_process, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(31)
            self.data = iter([{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
                              for _ in range(2)])

        def get_next(self):
            return next(self.data, None)

    f = os.path.join(out, name + ".f32.onnx")
    pre = os.path.join(out, name + ".pre.onnx")
    save(model, f)
    quant_pre_process(f, pre)
    quantize_static(pre, os.path.join(out, name + ".onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    os.remove(pre)


def nbits(w, bs=32):
    """float32 W [K, N] as MatMulNBits' B [N, K/bs, bs/2], scales [N * K/bs] and
    packed uint4 zero points [N * ceil(K/bs / 2)]: per block, min and max
    (with 0) to 15 steps, q = clip(rint(w / s) + zp, 0, 15), low nibble first."""
    k, n = w.shape
    kb = k // bs
    blk = w.T.reshape(n, kb, bs).astype(np.float32)
    mn = np.minimum(blk.min(-1), 0)
    mx = np.maximum(blk.max(-1), 0)
    s = ((mx - mn) / 15).astype(np.float32)
    s[s == 0] = 1
    zp = np.clip(np.rint(-mn / s), 0, 15).astype(np.uint8)
    q = np.clip(np.rint(blk / s[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    b = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zpp = np.zeros((n, (kb + 1) // 2), np.uint8)
    for j in range(kb):
        zpp[:, j // 2] |= zp[:, j] << (4 * (j % 2))
    return b, s.reshape(-1), zpp.reshape(-1)


def decoder(hidden=2048, heads=16, ffn=5632):
    """One decoder layer at one token: float32 model and its MatMulNBits form."""
    rng = np.random.default_rng(33)
    d = hidden // heads
    inits, nodes, weights = [], [], {}

    def node(op, ins, **kw):
        out = "t%d" % len(nodes)
        nodes.append(helper.make_node(op, ins, [out], name=out + "_" + op.lower(), **kw))
        return out

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def matmul(x, din, dout):
        name = "w%d" % len(weights)
        weights[name] = (rng.standard_normal((din, dout)) / np.sqrt(din)).astype(np.float32)
        return node("MatMul", [x, name])

    def rmsnorm(x):
        g = const("g%d" % len(inits), (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        ms = node("ReduceMean", [node("Mul", [x, x])], axes=[-1])
        return node("Mul", [node("Div", [x, node("Sqrt", [node("Add", [ms, "eps"])])]), g])

    const("eps", np.float32(1e-5))
    const("hshape", np.array([1, 1, heads, d], np.int64))
    const("oshape", np.array([1, 1, hidden], np.int64))
    const("scale", np.float32(1 / np.sqrt(d)))
    h = rmsnorm("x")
    qkv = [node("Transpose", [node("Reshape", [matmul(h, hidden, hidden), "hshape"])],
                perm=[0, 2, 1, 3]) for _ in range(3)]
    s = node("Mul", [node("MatMul", [qkv[0], node("Transpose", [qkv[1]], perm=[0, 1, 3, 2])]),
                     "scale"])
    a = node("MatMul", [node("Softmax", [s], axis=-1), qkv[2]])
    a = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]), "oshape"])
    x1 = node("Add", ["x", matmul(a, hidden, hidden)])
    h = rmsnorm(x1)
    gate = matmul(h, hidden, ffn)
    up = matmul(h, hidden, ffn)
    act = node("Mul", [node("Mul", [gate, node("Sigmoid", [gate])]), up])
    y = node("Add", [x1, matmul(act, ffn, hidden)])
    nodes[-1].output[0] = "y"

    def model(quant):
        ns, ins = [], list(inits)
        for n in nodes:
            if n.op_type == "MatMul" and n.input[1] in weights and quant:
                w = weights[n.input[1]]
                b, sc, zp = nbits(w)
                nm = n.input[1]
                ins += [numpy_helper.from_array(b, nm + "_q"),
                        numpy_helper.from_array(sc, nm + "_scales"),
                        numpy_helper.from_array(zp, nm + "_zp")]
                ns.append(helper.make_node("MatMulNBits", [n.input[0], nm + "_q", nm + "_scales",
                                                          nm + "_zp"], list(n.output),
                                           name=n.name, domain="com.microsoft", K=w.shape[0],
                                           N=w.shape[1], bits=4, block_size=32))
            else:
                ns.append(n)
        if not quant:
            ins += [numpy_helper.from_array(w, nm) for nm, w in weights.items()]
        g = helper.make_graph(ns, "decoder_nbits",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 1, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [1, 1, hidden])], ins)
        ops = [helper.make_opsetid("", 17)]
        if quant:
            ops.append(helper.make_opsetid("com.microsoft", 1))
        m = helper.make_model(g, opset_imports=ops, producer_name="gen_bench_quant.py")
        m.ir_version = 8
        return m
    return model(False), model(True)


MODELS = {
    "bert_tiny": lambda out: dynamic(out, "bert_tiny", gen_models.bert_tiny()),
    "bert_base": lambda out: dynamic(out, "bert_base", gen_zoo.bert_base()),
    "resnet18": lambda out: static_qdq(out, "resnet18", gen_models.resnet18()),
    "resnet50": lambda out: static_qdq(out, "resnet50", gen_zoo.resnet50()),
    "decoder_nbits": None,
    "bert_tiny_f16": lambda out: half(out, "bert_tiny_f16", gen_models.bert_tiny()),
    "bert_base_f16": lambda out: half(out, "bert_base_f16", gen_zoo.bert_base()),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out = sys.argv[1]
    unknown = [n for n in sys.argv[2:] if n not in MODELS]
    if unknown:
        sys.exit("gen_bench_quant.py: no model named %s (have: %s)" % (unknown[0],
                                                                        " ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        if name == "decoder_nbits":
            f, q = decoder()
            save(f, os.path.join(out, name + ".f32.onnx"))
            save(q, os.path.join(out, name + ".onnx"))
        else:
            MODELS[name](out)
        print("%s: %d bytes (float32: %d)" % (
            name, os.path.getsize(os.path.join(out, name + ".onnx")),
            os.path.getsize(os.path.join(out, name + ".f32.onnx"))))


if __name__ == "__main__":
    main()
