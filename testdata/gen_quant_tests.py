#!/usr/bin/python3
"""Builds node tests of quantization and 16-bit floats (tests/quant.sh) for
what libonnx-testdata (ONNX 1.12) lacks: blocked and 16-bit quantization
(opset 21), output_dtype, negative axes, [1]-or-scalar scale and zero point
mixes, float16 scales, rounding ties and saturation; Casts to
float16/bfloat16 at ties, subnormals, overflow and NaN, a rounding Cast
inside a fused kernel, bfloat16 arithmetic, float16 and bfloat16 MatMul,
Gemm and Conv (computed in float32 between Casts); MatMulInteger and
QLinearMatMul with a constant B (the c target's integer GEMM) of odd
sizes, every type pair and zero-point form, ConvInteger and QLinearConv
with constant weights (strides, pads, dilations, groups, depthwise, 1x1,
1-D, per-channel), DynamicQuantizeLinear, and QDQ Adds (DequantizeLinear
twice -> Add [-> Relu] -> QuantizeLinear, which the qdq pass makes one
QLinearAdd) against the integer formula that node computes, and QDQ Gemms
with transB and an int32 bias (QLinearMatMul with the bias, B transposed
at compile time) against numpy's int64 sums.

usage: gen_quant_tests.py OUTDIR

Writes, in the ONNX backend-test layout that `collagec conformance` reads:
  OUTDIR/good/NAME/model.onnx and test_data_set_0/{input,output}_K.pb
      expected outputs computed here with numpy from the operator specs,
      to be matched exactly (OUTDIR/near/NAME: within an ulp of float16,
      where the sums' order is not the spec's business)
      (quantization in float32, as the specs' reference does; float16 by
      numpy's correctly rounded conversions; bfloat16 rounded to nearest
      even on the bits)
  OUTDIR/bad/NAME/model.onnx and expect
      models collagec must refuse; expect holds a line of the message

Needs python3-onnx and python3-numpy only; every byte is deterministic.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import nodetest

RNG = np.random.default_rng(21)
GOOD = []
BAD = []
NP = {TensorProto.FLOAT: np.float32, TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8,
      TensorProto.UINT16: np.uint16, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
      TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64}


def bf16_bits(x):
    """float32 -> bfloat16 bit patterns, rounding to nearest even (NaN kept quiet)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_value(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


def tensor(name, t, arr):
    """A TensorProto; bfloat16 arrays are given as their uint16 bits."""
    if t == TensorProto.BFLOAT16:
        arr = np.asarray(arr, np.uint16)
        return helper.make_tensor(name, t, arr.shape, arr.tobytes(), raw=True)
    return numpy_helper.from_array(np.asarray(arr, NP[t]), name)


def case(name, node, opset, inputs, outputs, inits=()):
    """inputs/outputs: (name, onnx type, array); inits: TensorProtos."""
    GOOD.append((name, node, opset, inputs, outputs, list(inits)))


def quantize(x, s, zp, lo, hi):
    return np.clip(np.rint(np.float32(x) / np.float32(s)) + zp, lo, hi)


def quant_cases():
    F, U8, I8, U16, I16 = (TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8,
                           TensorProto.UINT16, TensorProto.INT16)
    # blocked along axis 1, block 2: scale and zero point [2, 3]
    x = (RNG.standard_normal((2, 6)) * 4).astype(np.float32)
    s = (RNG.random((2, 3)) * 0.1 + 0.02).astype(np.float32)
    z = RNG.integers(100, 156, (2, 3)).astype(np.uint8)
    y = quantize(x, np.repeat(s, 2, axis=1), np.repeat(z, 2, axis=1), 0, 255)
    case("quantizelinear_blocked", helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"],
                                                    axis=1, block_size=2), 21,
         [("x", F, x), ("s", F, s), ("z", U8, z)], [("y", U8, y)])
    # blocked along axis 0 with a partial last block: x [5, 3], block 2 -> 3 blocks
    xq = RNG.integers(-128, 128, (5, 3)).astype(np.int8)
    s = (RNG.random((3, 3)) * 0.1 + 0.01).astype(np.float32)
    z = RNG.integers(-5, 5, (3, 3)).astype(np.int8)
    se, ze = np.repeat(s, 2, axis=0)[:5], np.repeat(z, 2, axis=0)[:5]
    y = ((xq.astype(np.int32) - ze).astype(np.float32) * se).astype(np.float32)
    case("dequantizelinear_blocked", helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"],
                                                      axis=0, block_size=2), 21,
         [("x", I8, xq), ("s", F, s), ("z", I8, z)], [("y", F, y)])
    # ties to even and saturation, int8 and int16 (x / 0.5 = k + 0.5)
    x = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 63.75, 64.25, -64.25, 1e6, -1e6],
                 np.float32)
    for t, lo, hi in ((I8, -128, 127), (I16, -32768, 32767)):
        z = np.array(1, NP[t])
        case("quantizelinear_ties_%s" % NP[t].__name__,
             helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]), 21,
             [("x", F, x), ("s", F, np.float32(0.5)), ("z", t, z)],
             [("y", t, quantize(x, 0.5, 1, lo, hi))])
    # uint8 per tensor (the c target's quantizelinear.vec: 8 lanes and a
    # tail): ties both ways, saturation at both ends, the zero point added
    x = np.concatenate([(np.arange(-40, 1003 - 40) + 0.5) * 0.5,
                        [1e6, -1e6, 0.25, -0.25]]).astype(np.float32)
    case("quantizelinear_vec_uint8", helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]),
         13, [("x", F, x), ("s", F, np.float32(0.5)), ("z", U8, np.array(7, np.uint8))],
         [("y", U8, quantize(x, 0.5, 7, 0, 255))])
    # uint16 chosen by output_dtype, no zero point
    x = np.array([0, 1.5, 2.5, 3.5, 70000, -3], np.float32)
    case("quantizelinear_output_dtype_uint16",
         helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=U16), 21,
         [("x", F, x), ("s", F, np.float32(1))], [("y", U16, quantize(x, 1, 0, 0, 65535))])
    # per axis, negative axis
    xq = RNG.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    s = (RNG.random(4) * 0.1 + 0.01).astype(np.float32)
    z = RNG.integers(0, 256, 4).astype(np.uint8)
    y = ((xq.astype(np.int32) - z).astype(np.float32) * s).astype(np.float32)
    case("dequantizelinear_axis_negative",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=-1), 13,
         [("x", U8, xq), ("s", F, s), ("z", U8, z)], [("y", F, y)])
    # per-tensor parameters as exporters write them: a [1] scale beside a
    # scalar zero point (quantize_static's bias DequantizeLinears), a
    # scalar scale beside a [1] zero point, both [1]
    xq = RNG.integers(-5000, 5000, 8).astype(np.int32)
    y = ((xq.astype(np.int64) - 7).astype(np.float32) * np.float32(0.003)).astype(np.float32)
    case("dequantizelinear_int32_scale1_zp_scalar",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"]), 13,
         [("x", TensorProto.INT32, xq), ("s", F, np.full(1, 0.003, np.float32)),
          ("z", TensorProto.INT32, np.int32(7))], [("y", F, y)])
    x = (RNG.standard_normal((3, 4)) * 3).astype(np.float32)
    case("quantizelinear_scale_scalar_zp1",
         helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]), 13,
         [("x", F, x), ("s", F, np.float32(0.05)), ("z", U8, np.full(1, 120, np.uint8))],
         [("y", U8, quantize(x, 0.05, 120, 0, 255))])
    case("quantizelinear_scale1_zp1_int8",
         helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1), 13,
         [("x", F, x), ("s", F, np.full(1, 0.03, np.float32)), ("z", I8, np.full(1, -3, np.int8))],
         [("y", I8, quantize(x, np.float32(0.03), -3, -128, 127))])
    # a [1] scale on a per-axis node whose axis has other sizes is per tensor
    xq = RNG.integers(0, 256, (2, 3, 2)).astype(np.uint8)
    y = ((xq.astype(np.int32) - 9).astype(np.float32) * np.float32(0.25)).astype(np.float32)
    case("dequantizelinear_axis_scale1_zp_scalar",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1), 13,
         [("x", U8, xq), ("s", F, np.full(1, 0.25, np.float32)), ("z", U8, np.uint8(9))],
         [("y", F, y)])
    # per axis, 16-bit, negative axis (opset 21)
    x = (RNG.standard_normal((3, 4, 2)) * 100).astype(np.float32)
    s = (RNG.random(4) * 0.01 + 0.001).astype(np.float32)
    z = RNG.integers(-300, 300, 4).astype(np.int16)
    case("quantizelinear_axis_negative_int16",
         helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=-2), 21,
         [("x", F, x), ("s", F, s), ("z", I16, z)],
         [("y", I16, quantize(x, s[:, None], z[:, None].astype(np.float32), -32768, 32767))])
    xq = RNG.integers(0, 65536, (2, 5)).astype(np.uint16)
    s = (RNG.random(2) * 0.01 + 0.001).astype(np.float32)
    z = RNG.integers(0, 65536, 2).astype(np.uint16)
    y = ((xq.astype(np.int32) - z[:, None]).astype(np.float32) * s[:, None]).astype(np.float32)
    case("dequantizelinear_axis0_uint16",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0), 21,
         [("x", U16, xq), ("s", F, s), ("z", U16, z)], [("y", F, y)])
    # blocked, 16-bit, negative axis, partial last block, no zero point
    x = (RNG.standard_normal((2, 7)) * 50).astype(np.float32)
    s = (RNG.random((2, 3)) * 0.01 + 0.002).astype(np.float32)
    case("quantizelinear_blocked_axis_negative_int16",
         helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=-1, block_size=3,
                          output_dtype=I16), 21,
         [("x", F, x), ("s", F, s)],
         [("y", I16, quantize(x, np.repeat(s, 3, axis=1)[:, :7], 0, -32768, 32767))])
    xq = RNG.integers(0, 65536, (5, 2)).astype(np.uint16)
    s = (RNG.random((2, 2)) * 0.01 + 0.001).astype(np.float32)
    z = RNG.integers(0, 65536, (2, 2)).astype(np.uint16)
    se, ze = np.repeat(s, 4, axis=0)[:5], np.repeat(z, 4, axis=0)[:5]
    y = ((xq.astype(np.int32) - ze).astype(np.float32) * se).astype(np.float32)
    case("dequantizelinear_blocked_uint16",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=-2, block_size=4), 21,
         [("x", U16, xq), ("s", F, s), ("z", U16, z)], [("y", F, y)])
    # float16 scale and data
    H = TensorProto.FLOAT16
    x = (RNG.standard_normal(12) * 3).astype(np.float16)
    s, z = np.float16(0.0625), np.uint8(128)
    case("quantizelinear_float16", helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]), 19,
         [("x", H, x), ("s", H, s), ("z", U8, z)],
         [("y", U8, quantize(x.astype(np.float32), np.float32(s), 128, 0, 255))])
    xq = RNG.integers(-128, 128, 12).astype(np.int8)
    s = np.float16(0.0123)
    y = ((xq.astype(np.int32) - 3).astype(np.float32) * np.float32(s)).astype(np.float16)
    case("dequantizelinear_float16",
         helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"]), 19,
         [("x", I8, xq), ("s", H, s), ("z", I8, np.int8(3))], [("y", H, y)])


def imm_operand(t, shape, narrow):
    """A random uint8/int8 array; narrow: 7-bit values (B' in [-64, 63])."""
    if t == TensorProto.INT8:
        lo, hi = (-64, 64) if narrow else (-128, 128)
    else:
        lo, hi = (64, 192) if narrow else (0, 256)
    return RNG.integers(lo, hi, shape).astype(NP[t])


def imm_cases():
    """MatMulInteger and QLinearMatMul with a constant B (the c target's
    rt_cigemm, B packed at compile time): odd sizes, every type pair, the
    zero points absent, per tensor, per row and per column, a batch of A,
    shapes big enough for threads, 7-bit B (vpmaddubsw's path) and B whose
    pairs saturate vpmaddubsw; the int32 results exact."""
    U8, I8, I32, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.FLOAT
    shapes = [((7, 13), 19), ((1, 1), 1), ((33, 130), 50), ((64, 257), 40), ((2, 5, 9), 17),
              ((17, 64), 33)]
    k = 0
    for ta in (U8, I8):
        for tb in (I8, U8):
            for ashape, n in shapes:
                zmode = k % 4  # none, a only, both per tensor, per row/column
                narrow = k % 3 == 1
                k += 1
                a = imm_operand(ta, ashape, False)
                bm = imm_operand(tb, (ashape[-1], n), narrow)
                m = ashape[-2]
                if zmode == 3 and len(ashape) > 2:
                    zmode = 2
                za = zb = None
                if zmode >= 1:
                    za = imm_operand(ta, (m,) if zmode == 3 else (), False)
                if zmode >= 2:
                    zb = imm_operand(tb, (n,) if zmode == 3 else (), False)
                ai = a.astype(np.int64) - (0 if za is None else
                                           (za[:, None] if zmode == 3 else za))
                bi = bm.astype(np.int64) - (0 if zb is None else zb)
                y = np.matmul(ai, bi).astype(np.int32)
                name = "matmulinteger_const_%s%s_%s_z%d%s" % (
                    NP[ta].__name__[0], NP[tb].__name__[0],
                    "x".join(map(str, ashape)) + "x%d" % n, zmode, "_7bit" if narrow else "")
                ins = ["a", "b"] + (["za"] if za is not None else ([""] if zb is not None else []))
                ins += ["zb"] if zb is not None else []
                inputs = [("a", ta, a)] + ([("za", ta, za)] if za is not None else [])
                inits = [tensor("b", tb, bm)] + ([tensor("zb", tb, zb)] if zb is not None else [])
                case(name, helper.make_node("MatMulInteger", ins, ["y"]), 13, inputs,
                     [("y", I32, y)], inits)
    # every pair of B saturates vpmaddubsw (255 * 127 * 2 > 32767): exact all the same
    a = np.full((5, 12), 255, np.uint8)
    a[1] = 254
    bm = np.where(RNG.random((12, 20)) < 0.5, 127, -128).astype(np.int8)
    case("matmulinteger_const_saturating", helper.make_node("MatMulInteger", ["a", "b"], ["y"]),
         13, [("a", U8, a)], [("y", I32, (a.astype(np.int64) @ bm).astype(np.int32))],
         [tensor("b", I8, bm)])
    # 7-bit B with a few extremes, K a multiple of 4 (panels of both kinds of
    # quads, vpmaddubsw-safe and not, taken in the map's order): exact
    a = imm_operand(U8, (9, 96), False)
    bm = imm_operand(I8, (96, 37), True)
    bm = np.where(RNG.random(bm.shape) < 0.03, np.where(RNG.random(bm.shape) < 0.5, -128, 127),
                  bm).astype(np.int8)
    zb = imm_operand(I8, (37,), False)
    case("matmulinteger_const_mixed", helper.make_node("MatMulInteger", ["a", "b", "", "zb"],
                                                       ["y"]),
         13, [("a", U8, a)],
         [("y", I32, (a.astype(np.int64) @ (bm.astype(np.int64) - zb)).astype(np.int32))],
         [tensor("b", I8, bm), tensor("zb", I8, zb)])
    # QLinearMatMul: requantized as the op's lowering does (float32 throughout)
    for ta, tb, ty, shape, per in ((U8, I8, U8, ((9, 37), 21), True),
                                   (I8, I8, I8, ((2, 3, 70), 18), False),
                                   (U8, U8, U8, ((40, 200), 35), True),
                                   (I8, U8, I8, ((4, 5), 3), False)):
        ashape, n = shape
        m, kk = ashape[-2], ashape[-1]
        a = imm_operand(ta, ashape, False)
        bm = imm_operand(tb, (kk, n), False)
        za, zb, zy = imm_operand(ta, (), False), imm_operand(tb, (n,) if per else (), False), \
            imm_operand(ty, (), False)
        sa = (RNG.random(m if per else ()) * 0.02 + 0.005).astype(np.float32)
        sb = (RNG.random(n if per else ()) * 0.02 + 0.005).astype(np.float32)
        sy = np.float32(RNG.random() * 2 + 1)
        acc = np.matmul(a.astype(np.int64) - za, bm.astype(np.int64) - zb).astype(np.int32)
        mult = ((sa[:, None] if per else sa) * sb) / sy
        lo, hi = (0, 255) if ty == U8 else (-128, 127)
        y = np.clip(np.rint(acc.astype(np.float32) * mult.astype(np.float32)) + np.float32(zy),
                    lo, hi)
        name = "qlinearmatmul_const_%s%s%s_%s%s" % (
            NP[ta].__name__[0], NP[tb].__name__[0], NP[ty].__name__[0],
            "x".join(map(str, ashape)) + "x%d" % n, "_per_axis" if per else "")
        node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"],
                                ["y"])
        case(name, node, 13, [("a", ta, a), ("sa", F, sa), ("za", ta, za)], [("y", ty, y)],
             [tensor("b", tb, bm), tensor("sb", F, sb), tensor("zb", tb, zb),
              tensor("sy", F, sy), tensor("zy", ty, zy)])
    # QLinearMatMul as oneDNN's int8 matmul takes it (the dnnl target's
    # qlmatmul): int8 B with zero point 0, A's scale and zero point per
    # tensor, B's scales per tensor or per column, a batch of A folded into
    # the rows; their own generator, so that the cases above keep their data
    rng = np.random.default_rng(31)
    for ta, ty, ashape, n, per in ((U8, U8, (2, 9, 37), 40, True),
                                   (I8, I8, (33, 130), 50, False),
                                   (U8, I8, (5, 64), 17, True)):
        m, kk = ashape[-2], ashape[-1]
        lo_a, hi_a = (0, 256) if ta == U8 else (-128, 128)
        a = rng.integers(lo_a, hi_a, ashape).astype(NP[ta])
        bm = rng.integers(-128, 128, (kk, n)).astype(np.int8)
        za = np.asarray(rng.integers(lo_a, hi_a), NP[ta])
        zy = np.asarray(rng.integers(*((0, 256) if ty == U8 else (-128, 128))), NP[ty])
        zb = np.zeros((n,) if per else (), np.int8)
        sa = np.float32(rng.random() * 0.02 + 0.005)
        sb = (rng.random(n if per else ()) * 0.02 + 0.005).astype(np.float32)
        sy = np.float32(rng.random() * 2 + 1)
        acc = np.matmul(a.astype(np.int64) - za, bm.astype(np.int64)).astype(np.int32)
        mult = ((sa * sb) / sy).astype(np.float32)
        lo, hi = (0, 255) if ty == U8 else (-128, 127)
        y = np.clip(np.rint(acc.astype(np.float32) * mult) + np.float32(zy), lo, hi)
        name = "qlinearmatmul_const_%si%s_%s_zb0%s" % (
            NP[ta].__name__[0], NP[ty].__name__[0],
            "x".join(map(str, ashape)) + "x%d" % n, "_per_axis" if per else "")
        node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"],
                                ["y"])
        case(name, node, 13, [("a", ta, a)], [("y", ty, y)],
             [tensor("sa", F, sa), tensor("za", ta, za), tensor("b", I8, bm),
              tensor("sb", F, sb), tensor("zb", I8, zb), tensor("sy", F, sy),
              tensor("zy", ty, zy)])
    # DynamicQuantizeLinear over a vector's lanes and a tail, an all-negative one
    for name, x in (("dynamicquantizelinear_lanes", RNG.standard_normal(1003) * 5),
                    ("dynamicquantizelinear_negative", -RNG.random((3, 67)) - 0.5)):
        x = np.asarray(x, np.float32)
        mn, mx = min(np.float32(0), x.min()), max(np.float32(0), x.max())
        sc = np.float32((mx - mn) / np.float32(255))
        zp = np.float32(np.rint(np.clip(np.float32(0) - mn / sc, 0, 255)))
        y = np.clip(np.rint(x / sc) + zp, 0, 255)
        case(name, helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"]), 11,
             [("x", F, x)], [("y", U8, y), ("s", F, sc), ("z", U8, zp)])


def conv_ref(x, w, group, strides, pads, dil):
    """int64 convolution of zero-point-shifted x [N, C, *sp] and w [M, C/group, *k]
    (pads begin then end; padding is 0 after the shift), 1-D or 2-D."""
    r = x.ndim - 2
    if r == 1:
        y = conv_ref(x[:, :, None, :], w[:, :, None, :], group, (1,) + tuple(strides),
                     (0, pads[0], 0, pads[1]), (1,) + tuple(dil))
        return y[:, :, 0, :]
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dil[0]:i * dil[0] + strides[0] * (oh - 1) + 1:strides[0],
                           j * dil[1]:j * dil[1] + strides[1] * (ow - 1) + 1:strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch,
                                                        w[g * mg:(g + 1) * mg, :, i, j])
    return y


def qconv_requant(acc, bias, sx, sw, sy, zy, per, r, unsigned):
    """QLinearConv's y from the int64 sums acc [N, M, *sp] as the op's
    lowering computes it (float32 throughout): rint(float(acc + bias) *
    (sx * sw / sy)) + zy, saturated to uint8 (unsigned) or int8; sw per
    output channel when per, r spatial dims."""
    m = acc.shape[1]
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape((m,) + (1,) * r)
    mult = (sx * sw) / sy
    if per:
        mult = mult.reshape((m,) + (1,) * r)
    lo, hi = (0, 255) if unsigned else (-128, 127)
    return np.clip(np.rint(acc.astype(np.int32).astype(np.float32) * mult.astype(np.float32)) +
                   np.float32(zy), lo, hi)


def iconv_cases():
    """ConvInteger and QLinearConv with constant weights (the c target's
    rt_ciconv2d: im2col + the integer GEMM, requantization fused): strides,
    asymmetric pads, dilations, groups and depthwise, 1x1 and 1-D, per-tensor
    and per-channel weight zero points and scales, u8/s8 pairs, 7-bit
    weights (vpmaddubsw's path), full 8-bit ones and 7-bit ones with a few
    at the extremes (panels with both kinds of k quads); int32 results exact,
    QLinearConv's requantized as the op's lowering does (float32
    throughout: rint(float(acc + bias) * (sx * sw / sy)) + zy, saturated)."""
    U8, I8, I32, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.FLOAT
    # name, x type, w type, y type, x shape, M, kernel, group, strides, pads, dilations,
    # per-channel, bias, 7-bit weights
    conf = [
        ("3x3_pad", U8, I8, U8, (2, 5, 9, 7), 19, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, False),
        ("stride2_dil2", U8, I8, U8, (1, 6, 13, 11), 17, (3, 3), 1, (2, 2), (2, 1, 0, 3),
         (2, 2), True, True, True),
        ("group2", I8, I8, I8, (1, 6, 8, 8), 10, (3, 2), 2, (1, 2), (1, 0, 1, 1), (1, 1),
         False, True, False),
        ("depthwise", U8, I8, U8, (1, 8, 10, 9), 8, (3, 3), 8, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, False),
        ("1x1", U8, U8, U8, (1, 40, 6, 5), 33, (1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1),
         True, False, False),
        ("1d", I8, I8, U8, (2, 7, 23), 12, (5,), 1, (2,), (2, 1), (1,), True, True, True),
        ("7x7_s2", U8, I8, I8, (1, 3, 20, 20), 16, (7, 7), 1, (2, 2), (3, 3, 3, 3), (1, 1),
         False, True, False),
        ("mixed", U8, I8, U8, (1, 24, 7, 6), 40, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, "mixed"),
        ("mixed_s8", I8, I8, I8, (1, 16, 5, 5), 20, (3, 1), 1, (1, 1), (1, 0, 1, 0), (1, 1),
         False, True, "mixed"),
        # rows wide enough for im2col's 16 x 16 byte transposes, with tap rows
        # above and below the image, 16-column blocks and leftover columns
        ("wide", U8, I8, U8, (1, 20, 9, 37), 24, (3, 3), 1, (1, 1), (1, 2, 1, 0), (1, 1),
         True, True, "mixed"),
        ("wide_1x1", I8, I8, I8, (2, 35, 3, 40), 17, (1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1),
         True, True, False),
    ]
    for (name, tx, tw, ty, xs, m, k, group, strides, pads, dil, per, has_b,
         narrow) in conf:
        r = len(k)
        x = imm_operand(tx, xs, False)
        w = imm_operand(tw, (m, xs[1] // group) + k, bool(narrow))
        if narrow == "mixed":
            # 7-bit weights with a few at the extremes: panels of both kinds
            # of k quads (vpmaddubsw-safe and not)
            w = np.where(RNG.random(w.shape) < 0.03, np.where(RNG.random(w.shape) < 0.5,
                                                               -128, 127), w).astype(w.dtype)
        zx = imm_operand(tx, (), False)
        zw = imm_operand(tw, (m,) if per else (), narrow)
        zy = imm_operand(ty, (), False)
        sx = np.float32(RNG.random() * 0.02 + 0.005)
        sw = (RNG.random(m if per else ()) * 0.02 + 0.005).astype(np.float32)
        sy = np.float32(RNG.random() * 2 + 1)
        bias = RNG.integers(-20000, 20000, m).astype(np.int32)
        wi = w.astype(np.int64) - (zw.reshape((m,) + (1,) * (r + 1)) if per else zw)
        acc = conv_ref(x.astype(np.int64) - zx, wi, group, strides, pads, dil)
        attrs = dict(kernel_shape=list(k), strides=list(strides), pads=list(pads),
                     dilations=list(dil), group=group)
        # ConvInteger: the int32 sums (its zero point of w per channel or per tensor)
        case("convinteger_const_%s" % name,
             helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], **attrs), 10,
             [("x", tx, x), ("zx", tx, zx)], [("y", I32, acc.astype(np.int32))],
             [tensor("w", tw, w), tensor("zw", tw, zw)])
        y = qconv_requant(acc, bias if has_b else None, sx, sw, sy, zy, per, r, ty == U8)
        ins = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"] + (["b"] if has_b else [])
        inits = [tensor("w", tw, w), tensor("sw", F, sw), tensor("zw", tw, zw),
                 tensor("sy", F, sy), tensor("zy", ty, zy)]
        inits += [tensor("b", I32, bias)] if has_b else []
        case("qlinearconv_const_%s_%s%s%s" % (name, NP[tx].__name__[0], NP[tw].__name__[0],
                                               NP[ty].__name__[0]),
             helper.make_node("QLinearConv", ins, ["y"], **attrs), 10,
             [("x", tx, x), ("sx", F, sx), ("zx", tx, zx)], [("y", ty, y)], inits)


def reorder_weights(rng, k, n):
    """int8 B [k, n] (k a multiple of 4) whose k quads are, in turn, of the
    four kinds rt_cipack.h packs (enum rt_ci_order) in every panel of 16
    columns: safe for vpmaddubsw as they are; saturating as they are but
    not paired as 0 2 / 1 3; saturating in both those pairings but not as
    0 3 / 1 2 (the first two columns of the panel each spoil one); and
    saturating in every pairing. The other columns small random values."""
    b = rng.integers(-40, 41, (k, n)).astype(np.int64)
    spoil = {1: [(100, 100, -100, -100)], 2: [(100, 100, 0, 0), (100, 0, 100, 0)],
             3: [(100, 100, 100, 100), (-128, -128, -128, -128)]}
    for q in range(k // 4):
        for j0 in range(0, n, 16):
            for c, col in enumerate(spoil.get(q % 4, [])):
                if j0 + c < n:
                    b[4 * q:4 * q + 4, j0 + c] = col
    return b.astype(np.int8)


def reorder_cases():
    """The integer GEMM and convolution where B's k quads are of every kind
    rt_cipack.h packs: safe for vpmaddubsw, safe in one of the two other
    byte orders (A's quads read reordered), saturating in all (vpmaddwd);
    A near 255 so that any saturation would show: the int32 sums exact."""
    U8, I8, I32, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.FLOAT
    rng = np.random.default_rng(31)
    a = rng.integers(240, 256, (13, 64)).astype(np.uint8)
    bm = reorder_weights(rng, 64, 35)
    case("matmulinteger_const_reorder", helper.make_node("MatMulInteger", ["a", "b"], ["y"]),
         13, [("a", U8, a)], [("y", I32, (a.astype(np.int64) @ bm).astype(np.int32))],
         [tensor("b", I8, bm)])
    # a 3x3 convolution over 8 channels (k quads of 4 taps across channels), 20 output channels
    m, c = 20, 8
    x = rng.integers(240, 256, (1, c, 7, 9)).astype(np.uint8)
    x[0, :, 3, 4] = rng.integers(0, 256, c)
    w = reorder_weights(rng, c * 9, m).T.reshape(m, c, 3, 3)
    zx = np.uint8(3)
    attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    acc = conv_ref(x.astype(np.int64) - zx, w.astype(np.int64), 1, (1, 1), (1, 1, 1, 1),
                   (1, 1))
    case("convinteger_const_reorder",
         helper.make_node("ConvInteger", ["x", "w", "zx"], ["y"], **attrs), 10,
         [("x", U8, x), ("zx", U8, zx)], [("y", I32, acc.astype(np.int32))],
         [tensor("w", I8, w)])
    sx, sy = np.float32(0.01), np.float32(7.5)
    sw = (rng.random(m) * 0.02 + 0.005).astype(np.float32)
    zy = np.uint8(128)
    mult = ((sx * sw) / sy).reshape(m, 1, 1)
    y = np.clip(np.rint(acc.astype(np.int32).astype(np.float32) * mult.astype(np.float32)) +
                np.float32(zy), 0, 255)
    case("qlinearconv_const_reorder",
         helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["y"],
                          **attrs), 10,
         [("x", U8, x), ("sx", F, sx), ("zx", U8, zx)], [("y", U8, y)],
         [tensor("w", I8, w), tensor("sw", F, sw), tensor("zw", I8, np.zeros(m, np.int8)),
          tensor("sy", F, sy), tensor("zy", U8, zy)])


def im2col_cases():
    """QLinearConv where rt_ciconv2d's im2col takes its other ways: a 1 x 1
    convolution at unit stride (one row of all the pixels, 16 x 16
    transposes across the image's rows), rows of 12 pixels inside the
    image (8 at a time, then single ones)."""
    U8, I8, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT
    rng = np.random.default_rng(41)
    # name, x shape, M, kernel, pads
    for name, xs, m, k, pads in (("1x1_rows", (1, 20, 7, 5), 18, (1, 1), (0, 0, 0, 0)),
                                 ("3x3_w14", (1, 17, 5, 14), 16, (3, 3), (1, 1, 1, 1))):
        x = rng.integers(0, 256, xs).astype(np.uint8)
        w = rng.integers(-128, 128, (m, xs[1]) + k).astype(np.int8)
        zx, zy = np.uint8(rng.integers(0, 256)), np.uint8(rng.integers(0, 256))
        sx, sy = np.float32(0.01), np.float32(rng.random() * 2 + 1)
        sw = (rng.random(m) * 0.02 + 0.005).astype(np.float32)
        acc = conv_ref(x.astype(np.int64) - zx, w.astype(np.int64), 1, (1, 1), pads, (1, 1))
        mult = ((sx * sw) / sy).reshape(m, 1, 1)
        y = np.clip(np.rint(acc.astype(np.int32).astype(np.float32) * mult.astype(np.float32)) +
                    np.float32(zy), 0, 255)
        case("qlinearconv_const_%s" % name,
             helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"],
                              ["y"], kernel_shape=list(k), pads=list(pads)), 10,
             [("x", U8, x), ("sx", F, sx), ("zx", U8, zx)], [("y", U8, y)],
             [tensor("w", I8, w), tensor("sw", F, sw), tensor("zw", I8, np.zeros(m, np.int8)),
              tensor("sy", F, sy), tensor("zy", U8, zy)])


def conv_ref3(x, w, group, strides, pads, dil):
    """conv_ref over 3 spatial dims: per output depth, the 2-D convolutions
    of the input slices its kernel taps read, summed."""
    n, c, d = x.shape[:3]
    kd = w.shape[2]
    xp = np.zeros((n, c, d + pads[0] + pads[3]) + x.shape[3:], np.int64)
    xp[:, :, pads[0]:pads[0] + d] = x
    od = (d + pads[0] + pads[3] - dil[0] * (kd - 1) - 1) // strides[0] + 1
    p2 = (pads[1], pads[2], pads[4], pads[5])
    ys = []
    for o in range(od):
        ys.append(sum(conv_ref(xp[:, :, o * strides[0] + k * dil[0]], w[:, :, k], group,
                               strides[1:], p2, dil[1:]) for k in range(kd)))
    return np.stack(ys, axis=2)


def qconv_const_cases():
    """QLinearConv with every scale and zero point a constant, weight zero
    points 0 (or absent): what the dnnl target's int8 convolution takes
    (oneDNN's, with output scales and zero points as attributes; tests/
    quant.sh's qconv part). uint8 and int8 x and y, per-tensor and
    per-channel weight scales, with and without a bias, groups,
    depthwise, 1x1, 1-D, 2-D and 3-D, strides, dilations, asymmetric pads,
    a batch of 2, and full-range weights against x near 255 (pairs of
    products past int16: exact only where the sums are). Written to
    OUTDIR/qconv: y as the op's lowering computes it (float32 throughout:
    rint(float(acc + bias) * (sx * sw / sy)) + zy, saturated); oneDNN adds
    zy before rounding, so a tie may round to the other side: tests/quant.sh
    allows one unit there."""
    U8, I8, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT
    rng = np.random.default_rng(57)
    # name, x type, y type, x shape, M, kernel, group, strides, pads, dilations,
    # per-channel, bias, weight zero point (None: absent), x near 255 and full-range w
    conf = [
        ("3x3_pad_batch2", U8, U8, (2, 16, 9, 7), 24, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, "zeros", False),
        ("s8_stride2_dil2", I8, I8, (1, 12, 13, 11), 17, (3, 3), 1, (2, 2), (2, 1, 0, 3),
         (2, 2), False, False, None, False),
        ("group2_u8s8", U8, I8, (1, 8, 8, 8), 10, (3, 2), 2, (1, 2), (1, 0, 1, 1), (1, 1),
         True, True, "zeros", False),
        ("depthwise", U8, U8, (1, 32, 10, 9), 32, (3, 3), 32, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, None, False),
        ("1x1", U8, U8, (1, 40, 6, 5), 33, (1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1),
         True, False, None, False),
        ("1d_s8u8", I8, U8, (2, 7, 23), 12, (5,), 1, (2,), (2, 1), (1,), True, True,
         "zeros", False),
        ("3d", U8, U8, (1, 6, 5, 6, 7), 9, (2, 3, 3), 1, (1, 1, 2), (1, 0, 1, 0, 1, 1),
         (1, 1, 1), True, True, None, False),
        ("7x7_s2_stem", U8, U8, (1, 3, 20, 20), 16, (7, 7), 1, (2, 2), (3, 3, 3, 3), (1, 1),
         True, True, None, False),
        ("full_range", U8, U8, (1, 64, 6, 6), 20, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1),
         True, True, None, True),
    ]
    for (name, tx, ty, xs, m, k, group, strides, pads, dil, per, has_b, zw_form,
         full) in conf:
        r = len(k)
        if full:
            x = rng.integers(240, 256, xs).astype(np.uint8)
            w = np.where(rng.random((m, xs[1] // group) + k) < 0.5, -128, 127).astype(np.int8)
        else:
            x = (rng.integers(0, 256, xs) if tx == U8 else rng.integers(-128, 128, xs)).astype(NP[tx])
            w = rng.integers(-128, 128, (m, xs[1] // group) + k).astype(np.int8)
        zx = NP[tx](rng.integers(0, 256) if tx == U8 else rng.integers(-128, 128))
        zy = NP[ty](rng.integers(0, 256) if ty == U8 else rng.integers(-128, 128))
        sx = np.float32(rng.random() * 0.02 + 0.005)
        sw = (rng.random(m if per else ()) * 0.02 + 0.005).astype(np.float32)
        # y's scale: the outputs spread over the 8-bit range, few saturated
        sy = np.float32((rng.random() + 0.5) * (0.4 if not full else 1.5))
        bias = rng.integers(-20000, 20000, m).astype(np.int32)
        ref = conv_ref3 if r == 3 else conv_ref
        acc = ref(x.astype(np.int64) - np.int64(zx), w.astype(np.int64), group, strides, pads,
                  dil)
        y = qconv_requant(acc, bias if has_b else None, sx, sw, sy, zy, per, r, ty == U8)
        ins = ["x", "sx", "zx", "w", "sw", "zw" if zw_form else "", "sy", "zy"] + \
            (["b"] if has_b else [])
        inits = [tensor("sx", F, sx), tensor("zx", tx, zx), tensor("w", I8, w),
                 tensor("sw", F, sw), tensor("sy", F, sy), tensor("zy", ty, zy)]
        inits += [tensor("zw", I8, np.zeros(m if per else (), np.int8))] if zw_form else []
        inits += [tensor("b", TensorProto.INT32, bias)] if has_b else []
        case("qconv/qlinearconv_constq_%s" % name,
             helper.make_node("QLinearConv", ins, ["y"], kernel_shape=list(k),
                              strides=list(strides), pads=list(pads), dilations=list(dil),
                              group=group), 10,
             [("x", tx, x)], [("y", ty, y)], inits)


def qadd_ref(a, sa, za, b, sb, zb, sc, zc, lo, hi):
    """QLinearAdd as ONNX Runtime's x86 kernel computes it (ops_quant.c):
    fma(A, rA, fma(B, rB, fixed)) on the raw integers, each fma exact in
    float64 (8-bit times 24-bit products) and rounded once to float32."""
    f32, f64 = np.float32, np.float64
    ra, rb = f32(sa) / f32(sc), f32(sb) / f32(sc)
    fixed = f32(f64(zc) - (f64(ra) * f64(za) + f64(rb) * f64(zb)))
    v = (b.astype(f64) * f64(rb) + f64(fixed)).astype(f32)
    v = (a.astype(f64) * f64(ra) + v.astype(f64)).astype(f32)
    return np.clip(np.rint(v), lo, hi)


def qadd_cases():
    """QDQ Adds, as quantize_static writes a residual connection: odd sizes
    (the vector loop's tails), uint8 and int8, a Relu folded (y's zero point
    its type's least value), a one-element b, a broadcast the kernel leaves
    to the op's own loops, and one large enough for threads to share."""
    F, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8
    # name, type, a shape, b shape, Relu
    conf = [
        ("u8", U8, (2, 3, 5, 7), (2, 3, 5, 7), False),
        ("u8_relu", U8, (1, 37), (1, 37), True),
        ("s8", I8, (3, 67), (3, 67), False),
        ("s8_relu", I8, (5, 13), (5, 13), True),
        ("u8_scalar_b", U8, (1, 4, 9), (1,), False),
        ("s8_bcast", I8, (3, 1, 5), (4, 1), False),
        ("u8_large", U8, (1, 8, 100, 101), (1, 8, 100, 101), True),
    ]
    for name, t, ash, bsh, relu in conf:
        lo, hi = (0, 255) if t == U8 else (-128, 127)
        a, b = imm_operand(t, ash, False), imm_operand(t, bsh, False)
        za, zb = imm_operand(t, (), False), imm_operand(t, (), False)
        zc = NP[t](lo) if relu else imm_operand(t, (), False)
        sa, sb = np.float32(RNG.random() * 0.05 + 0.01), np.float32(RNG.random() * 0.05 + 0.01)
        sc = np.float32(RNG.random() * 0.06 + 0.02)
        y = qadd_ref(a, sa, za, b, sb, zb, sc, zc, lo, hi)
        nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["fa"]),
                 helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["fb"]),
                 helper.make_node("Add", ["fa", "fb"], ["s"])]
        if relu:
            nodes.append(helper.make_node("Relu", ["s"], ["r"]))
        nodes.append(helper.make_node("QuantizeLinear", ["r" if relu else "s", "sc", "zc"],
                                      ["y"]))
        GOOD.append(("qdq_add_" + name, nodes, 13, [("a", t, a), ("b", t, b)], [("y", t, y)],
                     [tensor("sa", F, sa), tensor("za", t, za), tensor("sb", F, sb),
                      tensor("zb", t, zb), tensor("sc", F, sc), tensor("zc", t, zc)]))


def qgemm_cases():
    """DequantizeLinear(x), DequantizeLinear(w [N, K], per channel or per
    tensor), DequantizeLinear(int32 bias, scale x_scale * w_scale) -> Gemm
    (transB) -> QuantizeLinear, as quantize_static writes a classifier: the
    qdq pass makes it one QLinearMatMul (B transposed, the bias its ninth
    input); odd sizes, uint8 x int8 and int8 x int8."""
    F, U8, I8, I32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
    for name, tx, tw, m, k, n, per in (("u8s8", U8, I8, 3, 37, 21, True),
                                       ("s8s8", I8, I8, 1, 64, 33, False)):
        x = imm_operand(tx, (m, k), False)
        w = imm_operand(tw, (n, k), False)
        zx, zy = imm_operand(tx, (), False), imm_operand(tx, (), False)
        zw = imm_operand(tw, (n,) if per else (), False)
        sx = np.float32(RNG.random() * 0.02 + 0.005)
        sw = (RNG.random(n if per else ()) * 0.02 + 0.005).astype(np.float32)
        sy = np.float32(RNG.random() * 2 + 1)
        bias = RNG.integers(-20000, 20000, n).astype(np.int32)
        acc = ((x.astype(np.int64) - zx) @ (w.astype(np.int64) - (zw[:, None] if per else zw)).T
               + bias.astype(np.int64))
        lo, hi = (0, 255) if tx == U8 else (-128, 127)
        y = np.clip(np.rint(acc.astype(np.int32).astype(np.float32) *
                            ((sx * sw) / sy).astype(np.float32)) + np.float32(zy), lo, hi)
        bs = (sx * sw).astype(np.float32)
        nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
                 helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["fw"], axis=0),
                 helper.make_node("DequantizeLinear", ["b", "sb"], ["fb"], axis=0),
                 helper.make_node("Gemm", ["fx", "fw", "fb"], ["g"], transB=1),
                 helper.make_node("QuantizeLinear", ["g", "sy", "zy"], ["y"])]
        GOOD.append(("qdq_gemm_transb_bias_" + name, nodes, 13, [("x", tx, x)], [("y", tx, y)],
                     [tensor("sx", F, sx), tensor("zx", tx, zx), tensor("w", tw, w),
                      tensor("sw", F, sw), tensor("zw", tw, zw), tensor("b", I32, bias),
                      tensor("sb", F, bs), tensor("sy", F, sy), tensor("zy", tx, zy)]))


def pool_geom(n, k, s, d, pads, ceil):
    """Per spatial dim of an n-long axis: out, and the tap positions of each output."""
    pb, pe = pads
    span = (k - 1) * d + 1
    num = n + pb + pe - span
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= n + pb:
        out -= 1
    return out, [[o * s - pb + j * d for j in range(k)] for o in range(out)]


def pool_ref(x, kind, ks, ss, ds, pads, ceil, incl=False, sxz=None, syz=None, lo=0, hi=0):
    """MaxPool of x (any type; padding never wins), or the QLinear average
    pool of the integers x (kind "qavg": exact int sums requantized as
    rt_cqpool.h's formula in float64), or the float average ("avg") of x;
    1-D, 2-D or 3-D (the op's own loops), N x C first."""
    r = len(ks)
    geo = [pool_geom(x.shape[2 + i], ks[i], ss[i], ds[i], (pads[i], pads[i + r]), ceil)
           for i in range(r)]
    outs = tuple(g[0] for g in geo)
    y = np.zeros(x.shape[:2] + outs, np.float64)
    for o in np.ndindex(*outs):
        taps = [geo[i][1][o[i]] for i in range(r)]
        inside = [[p for p in t if 0 <= p < x.shape[2 + i]] for i, t in enumerate(taps)]
        padded = [[p for p in t if p < x.shape[2 + i] + pads[i + r]]
                  for i, t in enumerate(taps)]
        sl = x[(slice(None), slice(None)) + np.ix_(*inside)] if all(inside) else None
        n = int(np.prod([len(t) for t in inside]))
        div = int(np.prod([len(t) for t in padded])) if incl else n
        idx = (slice(None), slice(None)) + o
        if kind == "max":
            y[idx] = sl.reshape(x.shape[0], x.shape[1], -1).max(-1)
        elif kind == "avg":
            y[idx] = (sl.reshape(x.shape[0], x.shape[1], -1).astype(np.float32).sum(-1,
                      dtype=np.float32) / np.float32(div))
        else:
            (sx, zx), (sy, zy) = sxz, syz
            acc = sl.reshape(x.shape[0], x.shape[1], -1).astype(np.int64).sum(-1) - n * int(zx)
            v = np.rint(acc.astype(np.float64) * (np.float64(sx) / (np.float64(sy) *
                                                                   np.float64(div))))
            y[idx] = np.clip(v + int(zy), lo, hi)
    return y


def qpool_cases():
    """DequantizeLinear -> MaxPool / AveragePool / GlobalAveragePool /
    Concat -> QuantizeLinear, as quantize_static writes ResNet's and
    Inception's pools and concatenations, which the qdq pass makes integer
    nodes (an 8-bit MaxPool, QLinearAveragePool, QLinearGlobalAveragePool,
    QLinearConcat or a Concat of the integers): pads, strides, dilations,
    ceil_mode, row tails past the vector width, uint8 and int8, the same
    and differing scales. MaxPool and Concat exactly as the float graph
    (numpy in float32); the average pools exactly as their integer formula
    (exact sums, one requantization in float64), which is checked here to
    be within one unit of the float graph's. ONNX MaxPool-12 of uint8 and
    int8 too (the c target's 8-bit kernel)."""
    F, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8
    f32 = np.float32

    def deq(x, s, z):
        return ((x.astype(np.int32) - int(z)).astype(f32) * f32(s)).astype(f32)

    def params(t, same):
        sx = f32(RNG.random() * 0.05 + 0.01)
        zx = imm_operand(t, (), False)
        if same:
            return sx, zx, sx, zx
        return sx, zx, f32(RNG.random() * 0.05 + 0.01), imm_operand(t, (), False)

    def attrs(ks, ss, ds, pads, ceil):
        a = {"kernel_shape": list(ks), "strides": list(ss), "pads": list(pads)}
        if any(d != 1 for d in ds):
            a["dilations"] = list(ds)
        if ceil:
            a["ceil_mode"] = 1
        return a

    # name, type, shape, kernel, strides, dilations, pads, ceil, same params
    maxconf = [
        ("u8_stem", U8, (1, 3, 17, 19), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
        ("s8_dil_ceil", I8, (2, 2, 11, 13), (2, 3), (1, 2), (2, 1), (0, 1, 1, 0), True, True),
        ("u8_tails", U8, (1, 2, 5, 70), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), False, True),
        ("s8_wide", I8, (1, 2, 6, 131), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False, True),
        ("u8_requant", U8, (1, 3, 17, 19), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False),
        ("s8_requant_1d", I8, (1, 3, 29), (3,), (2,), (1,), (1, 1), True, False),
        ("u8_stride3", U8, (1, 2, 10, 40), (3, 3), (3, 3), (1, 1), (1, 1, 1, 1), True, True),
        ("s8_3d", I8, (1, 2, 5, 6, 7), (2, 2, 3), (2, 1, 2), (1, 1, 1), (1, 0, 1, 0, 1, 1),
         False, True),
    ]
    for name, t, shape, ks, ss, ds, pads, ceil, same in maxconf:
        lo, hi = (0, 255) if t == U8 else (-128, 127)
        x = imm_operand(t, shape, False)
        sx, zx, sy, zy = params(t, same)
        m = pool_ref(deq(x, sx, zx), "max", ks, ss, ds, pads, ceil).astype(f32)
        y = quantize(m, sy, zy, lo, hi)
        nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
                 helper.make_node("MaxPool", ["fx"], ["p"], **attrs(ks, ss, ds, pads, ceil)),
                 helper.make_node("QuantizeLinear", ["p", "sy", "zy"], ["y"])]
        GOOD.append(("qdq_maxpool_" + name, nodes, 13, [("x", t, x)], [("y", t, y)],
                     [tensor("sx", F, sx), tensor("zx", t, zx), tensor("sy", F, sy),
                      tensor("zy", t, zy)]))
    # per-axis x parameters: no integer MaxPool (the float path, exactly)
    x = imm_operand(U8, (1, 3, 9, 11), False)
    sx = (RNG.random(3) * 0.05 + 0.01).astype(f32)
    zx = imm_operand(U8, (3,), False)
    sy, zy = f32(0.03), np.uint8(100)
    fx = ((x.astype(np.int32) - zx[:, None, None].astype(np.int32)).astype(f32) *
          sx[:, None, None]).astype(f32)
    y = quantize(pool_ref(fx, "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False).astype(f32),
                 sy, zy, 0, 255)
    GOOD.append(("qdq_maxpool_u8_per_axis_float", [
        helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"], axis=1),
        helper.make_node("MaxPool", ["fx"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["p", "sy", "zy"], ["y"])], 13, [("x", U8, x)],
        [("y", U8, y)], [tensor("sx", F, sx), tensor("zx", U8, zx), tensor("sy", F, sy),
                         tensor("zy", U8, zy)]))
    for name, t in (("u8", U8), ("s8", I8)):
        x = imm_operand(t, (1, 3, 9, 37), False)
        ks, ss, ds, pads = (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)
        y = pool_ref(x, "max", ks, ss, ds, pads, True)
        case("maxpool_" + name + "_onnx", helper.make_node(
            "MaxPool", ["x"], ["y"], **attrs(ks, ss, ds, pads, True)), 12,
            [("x", t, x)], [("y", t, y)])
    # name, type, shape, kernel, strides, pads, ceil, count_include_pad
    avgconf = [
        ("u8_pad", U8, (1, 3, 15, 17), (3, 3), (2, 2), (1, 1, 1, 1), False, False),
        ("s8_incl", I8, (2, 2, 9, 11), (3, 3), (1, 1), (1, 1, 1, 1), False, True),
        ("u8_ceil", U8, (1, 2, 7, 9), (2, 2), (2, 2), (0, 0, 0, 0), True, False),
        ("s8_1d_incl", I8, (1, 4, 23), (4,), (3,), (2, 1), True, True),
        ("u8_tails", U8, (1, 2, 5, 70), (3, 3), (1, 1), (1, 1, 1, 1), False, True),
        ("u8_3d", U8, (1, 2, 5, 6, 7), (2, 3, 2), (1, 2, 2), (1, 1, 0, 0, 1, 1), True, False),
    ]
    for name, t, shape, ks, ss, pads, ceil, incl in avgconf:
        lo, hi = (0, 255) if t == U8 else (-128, 127)
        x = imm_operand(t, shape, False)
        sx, zx, sy, zy = params(t, False)
        ds = (1,) * len(ks)
        y = pool_ref(x, "qavg", ks, ss, ds, pads, ceil, incl, (sx, zx), (sy, zy), lo, hi)
        fl = quantize(pool_ref(deq(x, sx, zx), "avg", ks, ss, ds, pads, ceil, incl)
                      .astype(f32), sy, zy, lo, hi)
        assert np.abs(fl - y).max() <= 1, name
        a = attrs(ks, ss, ds, pads, ceil)
        a["count_include_pad"] = int(incl)
        nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
                 helper.make_node("AveragePool", ["fx"], ["p"], **a),
                 helper.make_node("QuantizeLinear", ["p", "sy", "zy"], ["y"])]
        GOOD.append(("qdq_averagepool_" + name, nodes, 13, [("x", t, x)], [("y", t, y)],
                     [tensor("sx", F, sx), tensor("zx", t, zx), tensor("sy", F, sy),
                      tensor("zy", t, zy)]))
    for name, t, shape in (("u8", U8, (1, 5, 7, 7)), ("s8", I8, (2, 3, 4, 5)),
                           ("u8_big", U8, (1, 4, 33, 35))):
        lo, hi = (0, 255) if t == U8 else (-128, 127)
        x = imm_operand(t, shape, False)
        sx, zx, sy, zy = params(t, False)
        hw = int(np.prod(shape[2:]))
        acc = x.reshape(shape[0], shape[1], -1).astype(np.int64).sum(-1) - hw * int(zx)
        y = np.clip(np.rint(acc * (np.float64(sx) / (np.float64(sy) * hw))) + int(zy), lo, hi)
        y = y.reshape(shape[:2] + (1,) * (len(shape) - 2))
        fl = quantize(deq(x, sx, zx).reshape(shape[0], shape[1], -1).sum(-1, dtype=f32) /
                      f32(hw), sy, zy, lo, hi).reshape(y.shape)
        assert np.abs(fl - y).max() <= 1, name
        nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
                 helper.make_node("GlobalAveragePool", ["fx"], ["p"]),
                 helper.make_node("QuantizeLinear", ["p", "sy", "zy"], ["y"])]
        GOOD.append(("qdq_globalaveragepool_" + name, nodes, 13, [("x", t, x)],
                     [("y", t, y)], [tensor("sx", F, sx), tensor("zx", t, zx),
                                     tensor("sy", F, sy), tensor("zy", t, zy)]))
    # name, type, input shapes, axis, same params
    catconf = [
        ("u8_same", U8, [(1, 3, 4, 5), (1, 2, 4, 5), (1, 5, 4, 5)], 1, True),
        ("s8_requant", I8, [(1, 3, 4, 5), (1, 2, 4, 5), (1, 1, 4, 5)], 1, False),
        ("u8_requant_last", U8, [(2, 3, 7), (2, 3, 33)], -1, False),
    ]
    for name, t, shapes, axis, same in catconf:
        lo, hi = (0, 255) if t == U8 else (-128, 127)
        sy = f32(RNG.random() * 0.05 + 0.01)
        zy = imm_operand(t, (), False)
        nodes, inputs, inits, parts = [], [], [tensor("sy", F, sy), tensor("zy", t, zy)], []
        for i, sh in enumerate(shapes):
            x = imm_operand(t, sh, False)
            sx, zx = (sy, zy) if same else (f32(RNG.random() * 0.05 + 0.01),
                                            imm_operand(t, (), False))
            nodes.append(helper.make_node("DequantizeLinear", ["x%d" % i, "sx%d" % i,
                                                               "zx%d" % i], ["f%d" % i]))
            inputs.append(("x%d" % i, t, x))
            inits += [tensor("sx%d" % i, F, sx), tensor("zx%d" % i, t, zx)]
            parts.append(deq(x, sx, zx))
        y = quantize(np.concatenate(parts, axis), sy, zy, lo, hi)
        nodes += [helper.make_node("Concat", ["f%d" % i for i in range(len(shapes))], ["c"],
                                   axis=axis),
                  helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["y"])]
        GOOD.append(("qdq_concat_" + name, nodes, 13, inputs, [("y", t, y)], inits))


def half_cases():
    F, H, B, D = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE
    ties = [1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -24 * 1.5,
            65504, 65519.99, 65520, 1e9, -1e9, 0.1, -0.0, np.inf, -np.inf, np.nan, 6.1e-5, 3e-8]
    x = np.array(ties, np.float32)
    case("cast_float_to_float16_rounding", helper.make_node("Cast", ["x"], ["y"], to=H), 13,
         [("x", F, x)], [("y", H, x.astype(np.float16))])
    xd = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -11, 1e300, -1e-300, 65519.999999,
                   2.0 ** -25 + 2.0 ** -60], np.float64)
    case("cast_double_to_float16_once", helper.make_node("Cast", ["x"], ["y"], to=H), 13,
         [("x", D, xd)], [("y", H, xd.astype(np.float16))])
    xb = np.array([1.00390625, 1.01171875, 1 + 2.0 ** -8 + 2.0 ** -20, 3.4028235e38, -0.0,
                   np.inf, 1e-40, 0.1, -2.5e-3, 123456.0], np.float32)
    case("cast_float_to_bfloat16_rounding", helper.make_node("Cast", ["x"], ["y"], to=B), 13,
         [("x", F, xb)], [("y", B, bf16_bits(xb))])
    # Cast to float16 and back inside one fused kernel still rounds
    x = (RNG.standard_normal(16) * 100).astype(np.float32)
    GOOD.append(("cast_float16_roundtrip_fused",
                 [helper.make_node("Cast", ["x"], ["h"], to=H),
                  helper.make_node("Cast", ["h"], ["y0"], to=F),
                  helper.make_node("Mul", ["y0", "two"], ["y"])], 13,
                 [("x", F, x)], [("y", F, x.astype(np.float16).astype(np.float32) * 2)],
                 [tensor("two", F, np.float32(2))]))
    # bfloat16 arithmetic: computed in float, rounded once when stored
    a = bf16_bits(RNG.standard_normal(8).astype(np.float32))
    b = bf16_bits(RNG.standard_normal(8).astype(np.float32))
    case("add_bfloat16", helper.make_node("Add", ["a", "b"], ["y"]), 13,
         [("a", B, a), ("b", B, b)], [("y", B, bf16_bits(bf16_value(a) + bf16_value(b)))])
    # float16 MatMul and Softmax: float sums, one rounding per output
    a = (RNG.standard_normal((3, 8)) * 0.5).astype(np.float16)
    w = (RNG.standard_normal((8, 4)) * 0.5).astype(np.float16)
    m = a.astype(np.float32) @ w.astype(np.float32)
    GOOD.append(("near/matmul_softmax_float16",
                 [helper.make_node("MatMul", ["a", "w"], ["m"]),
                  helper.make_node("Softmax", ["m"], ["y"], axis=-1)], 13,
                 [("a", H, a)],
                 [("y", H, (np.exp(m.astype(np.float16).astype(np.float32) -
                                   m.astype(np.float16).astype(np.float32).max(-1, keepdims=True))
                            / np.exp(m.astype(np.float16).astype(np.float32) -
                                     m.astype(np.float16).astype(np.float32).max(-1, keepdims=True)
                                     ).sum(-1, keepdims=True)).astype(np.float16))],
                 [tensor("w", H, w)]))

    widen_cases()


def widen_cases():
    """16-bit MatMul, Gemm and Conv, which the fold pass computes in float32
    between Casts (core/passes/pass_widen.c): with eighths of at most 2, so
    that every float32 sum is exact whatever its order and the one rounding
    per output is the spec's (exact), and one of random values (near)."""
    F, H, B = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
    rng = np.random.default_rng(1616)

    def eighths(shape):
        return (rng.integers(-16, 17, shape) / 8.0).astype(np.float32)

    a, w, b = eighths((33, 70)), eighths((70, 45)), eighths(45)
    m = (a @ w).astype(np.float16).astype(np.float32)
    GOOD.append(("matmul_add_relu_float16_widened",
                 [helper.make_node("MatMul", ["a", "w"], ["m"]),
                  helper.make_node("Add", ["m", "b"], ["s"]),
                  helper.make_node("Relu", ["s"], ["y"])], 13,
                 [("a", H, a.astype(np.float16))],
                 [("y", H, np.maximum(m + b, 0).astype(np.float16))],
                 [tensor("w", H, w), tensor("b", H, b)]))
    a, bt, c = eighths((17, 40)), eighths((24, 40)), eighths(24)
    case("gemm_transb_bfloat16_widened", helper.make_node("Gemm", ["a", "b", "c"], ["y"],
                                                          transB=1), 13,
         [("a", B, bf16_bits(a))], [("y", B, bf16_bits((a @ bt.T + c).astype(np.float32)))],
         [tensor("b", B, bf16_bits(bt)), tensor("c", B, bf16_bits(c))])
    x, wc, bc = eighths((2, 6, 9, 9)), eighths((8, 3, 3, 3)), eighths(8)
    y = conv_ref((x * 8).astype(np.int64), (wc * 8).astype(np.int64), 2, (2, 2), (1, 1, 1, 1),
                 (1, 1)) / 64.0 + bc[None, :, None, None]
    case("conv_group2_float16_widened",
         helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, strides=[2, 2],
                          pads=[1, 1, 1, 1]), 13,
         [("x", H, x.astype(np.float16))], [("y", H, y.astype(np.float16))],
         [tensor("w", H, wc), tensor("b", H, bc)])
    # weights of 4 KB and more as float32: OUT.so stores their 16 bits and the
    # model widens them when it opens, then packs them for its GEMM or
    # convolution (tests/quant.sh compiles these for each target)
    x, wc, bc = eighths((1, 32, 10, 10)), eighths((40, 32, 3, 3)), eighths(40)
    y = conv_ref((x * 8).astype(np.int64), (wc * 8).astype(np.int64), 1, (1, 1), (1, 1, 1, 1),
                 (1, 1)) / 64.0 + bc[None, :, None, None]
    case("conv3x3_float16_widened_at_open",
         helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]), 13,
         [("x", H, x.astype(np.float16))], [("y", H, y.astype(np.float16))],
         [tensor("w", H, wc), tensor("b", H, bc)])
    a, bt, c = eighths((9, 96)), eighths((80, 96)), eighths(80)
    # h: multiples of 1/64 below 400 in magnitude, rounded to bfloat16; times
    # -1, 0 or 1, 80 of them sum exactly in float32 too
    a2, b2 = rng.integers(-1, 2, (80, 48)).astype(np.float32), eighths(48)
    h = np.maximum(a.astype(np.float64) @ bt.T + c, 0)
    hb = (bf16_bits(h.astype(np.float32)).astype(np.uint32) << 16).view(np.float32)
    GOOD.append(("gemm_relu_gemm_bfloat16_widened_at_open",
                 [helper.make_node("Gemm", ["a", "b", "c"], ["g"], transB=1),
                  helper.make_node("Relu", ["g"], ["h"]),
                  helper.make_node("Gemm", ["h", "b2", "c2"], ["y"])], 13,
                 [("a", B, bf16_bits(a))],
                 [("y", B, bf16_bits((hb.astype(np.float64) @ a2 + b2).astype(np.float32)))],
                 [tensor("b", B, bf16_bits(bt)), tensor("c", B, bf16_bits(c)),
                  tensor("b2", B, bf16_bits(a2)), tensor("c2", B, bf16_bits(b2))]))
    a = (rng.standard_normal((20, 64)) * 0.5).astype(np.float16)
    w = (rng.standard_normal((64, 30)) * 0.5).astype(np.float16)
    GOOD.append(("near/matmul_float16_widened", helper.make_node("MatMul", ["a", "w"], ["y"]),
                 13, [("a", H, a)],
                 [("y", H, (a.astype(np.float32) @ w.astype(np.float32)).astype(np.float16))],
                 [tensor("w", H, w)]))
    # a decode step's rows (3) by float16 weights of 29 KB: rt_cgemm16 reads
    # them packed in their 16 bits (matmul.gemv16; tests/quant.sh)
    a = (rng.standard_normal((3, 300)) * 0.5).astype(np.float16)
    w = (rng.standard_normal((300, 49)) * 0.1).astype(np.float16)
    GOOD.append(("near/matmul_float16_gemv16", helper.make_node("MatMul", ["a", "w"], ["y"]),
                 13, [("a", H, a)],
                 [("y", H, (a.astype(np.float64) @ w.astype(np.float64)).astype(np.float16))],
                 [tensor("w", H, w)]))


def bad_cases():
    F, U8 = TensorProto.FLOAT, TensorProto.UINT8
    x = helper.make_tensor_value_info("x", F, [2, 3])
    BAD.append(("quantizelinear_e8m0", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                                         output_dtype=24, name="q")], 24,
                [x], [tensor("s", F, np.float32(1))],
                "node 0 'q' (QuantizeLinear): quantizing to float8e8m0 is not supported (the "
                "integers of 16 bits or fewer, the 8-bit floats but float8e8m0, and float4e2m1 "
                "are)"))
    BAD.append(("quantizelinear_axis_scale", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                                               axis=1, name="q")], 13,
                [x], [tensor("s", F, np.ones(5, np.float32))],
                "the scale must have one element or one per index of axis 1"))
    BAD.append(("dequantizelinear_block_scale",
                [helper.make_node("DequantizeLinear", ["xq", "s"], ["y"], axis=1, block_size=2,
                                  name="dq")], 21,
                [helper.make_tensor_value_info("xq", U8, [2, 6])],
                [tensor("s", F, np.ones((2, 2), np.float32))],
                "the scale's shape does not fit blocks of 2 along axis 1"))
    BAD.append(("dequantizelinear_zp_shape",
                [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["y"], axis=1,
                                  name="dq")], 13,
                [helper.make_tensor_value_info("xq", U8, [2, 3])],
                [tensor("s", F, np.ones(3, np.float32)), tensor("z", U8, np.zeros(1, np.uint8))],
                "node 0 'dq' (DequantizeLinear): the zero point's shape differs from the scale's"))
    BAD.append(("cast_float6", [helper.make_node("Cast", ["x"], ["y"], to=27, name="c")], 24,
                [x], [], "node 0 'c' (Cast): cast to ONNX type 27 is not supported"))
    BAD.append(("matmulinteger_int32",
                [helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mmi")], 13,
                [helper.make_tensor_value_info("a", TensorProto.INT32, [2, 3]),
                 helper.make_tensor_value_info("b", U8, [3, 2])], [],
                "input 0 has type int32, expected uint8 or int8"))


def write_good(out):
    for name, nodes, opset, inputs, outputs, inits in GOOD:
        if not isinstance(nodes, list):
            nodes = [nodes]
        d = os.path.join(out, name if "/" in name else "good/" + name)
        vi = [helper.make_tensor_value_info(n, t, np.shape(a)) for n, t, a in inputs]
        vo = [helper.make_tensor_value_info(n, t, np.shape(a)) for n, t, a in outputs]
        g = helper.make_graph(nodes, name, vi, vo, inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="gen_quant_tests.py")
        m.ir_version = 8
        nodetest.write_case(d, m, [tensor(n, t, a) for n, t, a in inputs],
                            [tensor(n, t, a) for n, t, a in outputs])


def write_bad(out):
    for name, nodes, opset, inputs, inits, expect in BAD:
        d = os.path.join(out, "bad", name)
        g = helper.make_graph(nodes, name, inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
                              inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        nodetest.write_bad(d, m, expect)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_quant_tests.py OUTDIR")
    quant_cases()
    half_cases()
    imm_cases()
    iconv_cases()
    reorder_cases()
    im2col_cases()
    qconv_const_cases()
    qadd_cases()
    qgemm_cases()
    qpool_cases()
    bad_cases()
    write_good(sys.argv[1])
    write_bad(sys.argv[1])


if __name__ == "__main__":
    main()
