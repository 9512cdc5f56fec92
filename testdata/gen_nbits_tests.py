#!/usr/bin/python3
"""Builds the tests of weight-only 4-bit models (tests/nbits.sh).

usage: gen_nbits_tests.py OUTDIR      (the committed data is testdata/nbits)

Needs onnxruntime (1.32 wrote the committed data; its quantization tools
need onnx_ir), onnx >= 1.17 (int4 tensors) and numpy, which the tests
themselves do not: the expected outputs are ONNX Runtime's, computed here
once and committed. Writes, in the layout of testdata/nodetest.py:
  OUTDIR/good/NAME   MatMulNBits (com.microsoft) built by hand: zero points
      packed, as floats or absent, bias, block sizes 16 to 128, K not a
      multiple of the block, M = 1 and M > 1, a batch, float16, 8 bits, a
      plain g_idx; DequantizeLinear of int4/uint4 constants (blocked along K,
      or per column) -> MatMul, opset 21; and the same float MatMul model
      (float_ref) through MatMulNBitsQuantizer in both its formats:
      QOperator (quantizer_qop: MatMulNBits) and QDQ (quantizer_qdq:
      DequantizeLinear of int4 with block_size -> MatMul)
  OUTDIR/bad/NAME    models collagec must refuse, with the message
Deterministic for a given onnxruntime.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodetest  # noqa: E402

import onnxruntime as ort  # noqa: E402

MS = "com.microsoft"
RNG = np.random.default_rng(31)
GOOD = []
BAD = []


def run_ort(m, inputs):
    """ONNX Runtime's outputs without its graph optimizations: they fuse
    DequantizeLinear(int4) -> MatMul into a MatMulNBits of accuracy_level 4,
    which quantizes A to int8 (0.03 off the float result in these models);
    unoptimized, DequantizeLinear and MatMul compute what ONNX says."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    outs = s.run(None, inputs)
    return {o.name: v for o, v in zip(s.get_outputs(), outs)}


def model(nodes, inputs, outputs, inits=(), opset=17):
    """inputs: {name: array}; inits: a list of TensorProtos."""
    def info(name, a):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    g = helper.make_graph(nodes, "nbits", [info(k, v) for k, v in inputs.items()],
                          [helper.make_empty_tensor_value_info(o) for o in outputs], list(inits))
    m = helper.make_model(g, producer_name="collagec-testdata",
                          opset_imports=[helper.make_opsetid("", opset),
                                         helper.make_opsetid(MS, 1)])
    m.ir_version = 10
    return m


def quantize(w, bits, bs, zp_kind):
    """w [K, N] float32 -> (B [N, kb, blob] uint8, scales [N * kb], zero points or None)."""
    K, N = w.shape
    kb = (K + bs - 1) // bs
    top = (1 << bits) - 1
    wp = np.zeros((kb * bs, N), np.float32)
    wp[:K] = w
    blocks = wp.reshape(kb, bs, N)
    lo, hi = np.minimum(blocks.min(1), 0), np.maximum(blocks.max(1), 0)
    if zp_kind is None:  # symmetric around the default zero point 2^(bits-1)
        zp = np.full((kb, N), 1 << (bits - 1), np.float32)
        scale = np.maximum(np.abs(lo), np.abs(hi)) / (1 << (bits - 1))
    else:
        scale = (hi - lo) / top
        zp = np.clip(np.round(-lo / np.where(scale == 0, 1, scale)), 0, top)
    scale = np.where(scale == 0, 1, scale).astype(np.float32)
    q = np.clip(np.round(blocks / scale[:, None, :]) + zp[:, None, :], 0, top).astype(np.uint8)
    q = q.transpose(2, 0, 1)  # [N, kb, bs]
    if bits == 4:
        q = q[:, :, 0::2] | (q[:, :, 1::2] << 4)
    scales = scale.T.reshape(-1).copy()
    if zp_kind is None:
        return q, scales, None
    if zp_kind == "float":
        return q, scales, zp.T.reshape(-1).astype(np.float32)
    z = zp.T.astype(np.uint8)  # [N, kb]
    if bits == 4:
        if kb % 2:
            z = np.concatenate([z, np.zeros((N, 1), np.uint8)], 1)
        z = z[:, 0::2] | (z[:, 1::2] << 4)
    return q, scales, z.reshape(-1).copy()


def nbits(name, a_shape, K, N, bs, zp_kind="packed", bias=False, bits=4, half=False,
          gidx=False, accuracy=0):
    a = RNG.standard_normal(a_shape + [K]).astype(np.float16 if half else np.float32)
    w = RNG.standard_normal((K, N)).astype(np.float32)
    q, s, z = quantize(w, bits, bs, zp_kind)
    ft = np.float16 if half else np.float32
    inits = [numpy_helper.from_array(q, "B"), numpy_helper.from_array(s.astype(ft), "scales")]
    ins = ["A", "B", "scales"]
    if z is not None:
        inits.append(numpy_helper.from_array(z.astype(ft) if zp_kind == "float" else z, "zp"))
    ins.append("zp" if z is not None else "")
    if gidx:
        inits.append(numpy_helper.from_array((np.arange(K) // bs).astype(np.int32), "g_idx"))
    ins.append("g_idx" if gidx else "")
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(N).astype(ft), "bias"))
    ins.append("bias" if bias else "")
    while ins[-1] == "":
        ins.pop()
    node = helper.make_node("MatMulNBits", ins, ["Y"], domain=MS, K=K, N=N, bits=bits,
                            block_size=bs, accuracy_level=accuracy)
    m = model([node], {"A": a}, ["Y"], inits)
    GOOD.append((name, m, {"A": a}, run_ort(m, {"A": a})))


def hand_built():
    nbits("m1_bs32_zp", [1], 64, 48, 32)
    nbits("m1_bs16_nozp", [1], 96, 40, 16, zp_kind=None)
    nbits("m7_bs64_bias_ktail", [7], 200, 33, 64, bias=True)
    nbits("m1_bs128_oddblocks", [1], 300, 20, 128)
    nbits("batch_bs32_floatzp", [2, 5], 80, 24, 32, zp_kind="float")
    nbits("m3_fp16", [3], 64, 16, 32, bias=True, half=True)
    nbits("m4_bits8", [4], 80, 12, 16, bits=8)
    nbits("m2_gidx_plain", [2], 64, 8, 16, zp_kind=None, gidx=True)
    nbits("m64_bs32_gemm", [64], 512, 136, 32, bias=True)
    nbits("m17_bs16_gemm_tail", [17], 120, 50, 16, zp_kind=None)
    nbits("rank1_a", [], 48, 32, 16)
    nbits("m9_bs512_gemm", [9], 600, 24, 512)
    nbits("m5_bs16_two_groups", [5], 64, 20, 16, bias=True)


def int4_const(name, v, t):
    """v: integers of an int4/uint4 tensor, packed by onnx.helper (int32_data)."""
    return helper.make_tensor(name, t, list(v.shape), v.reshape(-1).tolist())


def int4_raw(name, v, t):
    """The same in raw_data: two elements a byte, the first in the low nibble."""
    flat = (v.reshape(-1).astype(np.int64) & 15).astype(np.uint8)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    raw = flat[0::2] | (flat[1::2] << 4)
    return helper.make_tensor(name, t, list(v.shape), raw.tobytes(), raw=True)


def dq_matmul(name, M, K, N, bs, signed=True, zp=True, raw=False, extra_reader=False):
    """DequantizeLinear(int4/uint4 [K, N], scale [ceil(K / bs), N] (bs 0: [N], per column))
    -> MatMul, opset 21; extra_reader: the float weights also feed an Add."""
    t = TensorProto.INT4 if signed else TensorProto.UINT4
    lo, hi = (-8, 7) if signed else (0, 15)
    x = RNG.integers(lo, hi + 1, (K, N))
    kb = (K + bs - 1) // bs if bs else 0
    sshape = (kb, N) if bs else (N,)
    scale = (RNG.random(sshape) * 0.1 + 0.01).astype(np.float32)
    make = int4_raw if raw else int4_const
    inits = [make("w_q", x, t), numpy_helper.from_array(scale, "w_scale")]
    ins = ["w_q", "w_scale"]
    if zp:
        inits.append(make("w_zp", RNG.integers(lo, hi + 1, sshape), t))
        ins.append("w_zp")
    attrs = {"axis": 0, "block_size": bs} if bs else {"axis": 1}
    nodes = [helper.make_node("DequantizeLinear", ins, ["w"], **attrs),
             helper.make_node("MatMul", ["A", "w"], ["Y"])]
    outs = ["Y"]
    if extra_reader:
        nodes.append(helper.make_node("ReduceSum", ["w"], ["wsum"], keepdims=0))
        outs.append("wsum")
    a = RNG.standard_normal((M, K)).astype(np.float32)
    m = model(nodes, {"A": a}, outs, inits, opset=21)
    GOOD.append((name, m, {"A": a}, run_ort(m, {"A": a})))


def dq_models():
    dq_matmul("dq_int4_bs32_zp", 1, 64, 40, 32)
    dq_matmul("dq_uint4_bs16_nozp", 5, 48, 24, 16, signed=False, zp=False, raw=True)
    dq_matmul("dq_int4_bs32_ktail", 3, 100, 17, 32, raw=True)
    dq_matmul("dq_uint4_bs64_zp_m16", 16, 256, 64, 64, signed=False)
    dq_matmul("dq_int4_per_column", 2, 40, 16, 0)
    dq_matmul("dq_int4_shared_weights", 2, 32, 8, 16, extra_reader=True)


def quantizer_models():
    """One float MatMul model and MatMulNBitsQuantizer's two formats of it."""
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    K, N = 256, 256
    a = RNG.standard_normal((4, K)).astype(np.float32)
    w = (RNG.standard_normal((K, N)) * 0.05).astype(np.float32)
    f = model([helper.make_node("MatMul", ["A", "W"], ["Y"])], {"A": a}, ["Y"],
              [numpy_helper.from_array(w, "W")])
    GOOD.append(("float_ref", f, {"A": a}, run_ort(f, {"A": a})))
    for fmt, name in ((QuantFormat.QOperator, "quantizer_qop"), (QuantFormat.QDQ, "quantizer_qdq")):
        qz = MatMulNBitsQuantizer(onnx.ModelProto.FromString(f.SerializeToString()), bits=4,
                                  block_size=32, is_symmetric=False, quant_format=fmt)
        qz.process()
        m = qz.model.model
        GOOD.append((name, m, {"A": a}, run_ort(m, {"A": a})))


def bad_nbits(name, expect, K=32, N=8, bs=16, bits=4, b_len=None, a_type=TensorProto.FLOAT,
              gidx=None, zp=False, **extra):
    kb = (K + bs - 1) // bs if bs > 0 else 1
    blob = max(bs * bits // 8, 1)
    B = np.zeros(b_len if b_len is not None else N * kb * blob, np.uint8)
    inits = [numpy_helper.from_array(B, "B"),
             numpy_helper.from_array(np.ones(N * kb, helper.tensor_dtype_to_np_dtype(a_type)),
                                     "scales")]
    ins = ["A", "B", "scales"]
    if gidx is not None:
        inits.append(numpy_helper.from_array(gidx.astype(np.int32), "g_idx"))
        if zp:
            inits.append(numpy_helper.from_array(np.zeros(N * ((kb + 1) // 2), np.uint8), "zp"))
        ins += ["zp" if zp else "", "g_idx"]
    node = helper.make_node("MatMulNBits", ins, ["Y"], name="mm_nbits", domain=MS, K=K, N=N,
                            bits=bits, block_size=bs, **extra)
    g = helper.make_graph([node], "nbits",
                          [helper.make_tensor_value_info("A", a_type, [2, K])],
                          [helper.make_empty_tensor_value_info("Y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid(MS, 1)])
    m.ir_version = 10
    BAD.append((name, m, expect))


def refused():
    bad_nbits("bits3", "node 0 'mm_nbits' (MatMulNBits): bits 3 is not supported (4 and 8 are)",
              bits=3)
    bad_nbits("block24", "node 0 'mm_nbits' (MatMulNBits): block_size 24 must be a power of 2, "
              "16 or more", bs=24)
    bad_nbits("b_short", "node 0 'mm_nbits' (MatMulNBits): input 1 ('B') must be uint8 of 128 "
              "elements", b_len=15)
    bad_nbits("act_order", "node 0 'mm_nbits' (MatMulNBits): g_idx other than k / block_size "
              "(act-order) is not supported", gidx=np.arange(32)[::-1] // 16)
    bad_nbits("gidx_zp", "node 0 'mm_nbits' (MatMulNBits): g_idx with zero_points is not "
              "supported", gidx=np.arange(32) // 16, zp=True)
    bad_nbits("double", "node 0 'mm_nbits' (MatMulNBits): type float64 is not supported "
              "(float32 and float16 are)", a_type=TensorProto.DOUBLE)
    bad_nbits("unknown_attr", "node 0 'mm_nbits' (MatMulNBits): attribute 'group' is not "
              "supported", group=2)


def parallel():
    """Big enough for threads (M N K >= 262144) with few rows; last, so that the random
    data of the cases before stays as it was."""
    nbits("m1_k1024_threads", [1], 1024, 272, 64, bias=True)
    nbits("m3_k512_threads", [3], 512, 200, 32, zp_kind="float")


def many_blocks():
    """More than 16 blocks a column, the last 16 not all there (with AVX-512
    the few-rows form takes the zero points 16 blocks at a time); last, so
    that the cases before draw the same numbers as before them."""
    nbits("m2_bs32_kb17_zp", [2], 539, 35, 32)
    nbits("m1_bs32_kb20_floatzp", [1], 640, 9, 32, zp_kind="float", bias=True)
    nbits("m3_bs64_kb18_nozp", [3], 1152, 18, 64, zp_kind=None)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_nbits_tests.py OUTDIR")
    hand_built()
    dq_models()
    quantizer_models()
    refused()
    parallel()
    many_blocks()
    nodetest.write(sys.argv[1], GOOD, BAD)


main()
