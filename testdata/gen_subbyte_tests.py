#!/usr/bin/python3
"""Writes node tests of the sub-byte element types (int4, uint4, int2, uint2,
float4e2m1) and of Quantize/DequantizeLinear with them and the 8-bit floats
into OUTDIR (testdata/nodetest.py's layout), committed as testdata/subbyte
(tests/subbyte.sh runs them):

  casts from float32 and float16 to each type at its edge values (rounding
  ties, saturation, infinities, NaN, +-0, out-of-range integers, which wrap
  as ONNX's fixed-point rule says) and from every value of each type back,
  a round trip through two Casts, CastLike, elements moved unchanged
  (Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity) across the
  packing (odd counts: the last byte half used), QuantizeLinear and
  DequantizeLinear per tensor, per axis and blocked, with saturate 0 and 1
  to the 8-bit floats; and the refusals (Add of int4, BitCast of uint2).

usage: gen_subbyte_tests.py OUTDIR

Needs onnx 1.23.2 and ml_dtypes (pip, in a venv: Debian's onnx cannot write
these types). Every expected output is onnx.reference's, so the cases check
collagec against ONNX's own reading of the spec; deterministic.
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodetest  # noqa: E402

NP = {TP.INT4: ml_dtypes.int4, TP.UINT4: ml_dtypes.uint4, TP.INT2: ml_dtypes.int2,
      TP.UINT2: ml_dtypes.uint2, TP.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
      TP.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, TP.FLOAT8E5M2: ml_dtypes.float8_e5m2,
      TP.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
      TP.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
      TP.FLOAT: np.float32, TP.FLOAT16: np.float16, TP.INT8: np.int8, TP.UINT8: np.uint8,
      TP.INT64: np.int64}
SUB = (TP.INT4, TP.UINT4, TP.INT2, TP.UINT2, TP.FLOAT4E2M1)
NAME = {TP.INT4: "int4", TP.UINT4: "uint4", TP.INT2: "int2", TP.UINT2: "uint2",
        TP.FLOAT4E2M1: "float4e2m1", TP.FLOAT: "float", TP.FLOAT16: "float16",
        TP.FLOAT8E4M3FN: "e4m3fn", TP.FLOAT8E5M2: "e5m2", TP.FLOAT8E4M3FNUZ: "e4m3fnuz",
        TP.FLOAT8E5M2FNUZ: "e5m2fnuz", TP.INT8: "int8", TP.UINT8: "uint8"}
GOOD, BAD = [], []

# edge values: ties of each format, its saturation, out-of-range integers
F4_EDGES = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -0.25, -2.5, -5, 0.2, 0.3, 6, 6.5, 7,
            1e9, -1e9, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, 2.9]
INT_EDGES = {TP.INT4: [-9.5, -9, -8.5, -8, -7.5, -0.5, 0.5, 1.5, 2.5, 6.5, 7, 7.5, 8, 15, 16,
                       -1, 0, -0.0, 3.9],
             TP.UINT4: [-1, -0.5, 0.5, 1.5, 2.5, 14.5, 15, 15.5, 16, 17, 31, 3.9, 0, 8],
             TP.INT2: [-3, -2.5, -2, -1.5, -0.5, 0.5, 1, 1.5, 2, 3, 4, 0],
             TP.UINT2: [-1, -0.5, 0.5, 1.5, 2.5, 3, 3.5, 4, 5, 0, 2]}


def model(name, nodes, inputs, outputs, inits=(), opset=25):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="collagec-subbyte-test",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11
    return m


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def good(name, nodes, ins, outs, inits=(), opset=25):
    """ins: [(name, onnx type, array)]; outs: [(name, onnx type)], computed by onnx.reference."""
    m = model(name, nodes, [vi(n, t, list(a.shape)) for n, t, a in ins],
              [vi(n, t, None) for n, t in outs], inits, opset)
    feeds = {n: a for n, _, a in ins}
    got = ReferenceEvaluator(m).run(None, feeds)
    for o, g in zip(m.graph.output, got):
        o.type.tensor_type.ClearField("shape")
        for d in g.shape:
            o.type.tensor_type.shape.dim.add().dim_value = d
    onnx.checker.check_model(m)
    GOOD.append((name, m, [numpy_helper.from_array(a, n) for n, _, a in ins],
                 [numpy_helper.from_array(np.asarray(g).astype(NP[t]), n)
                  for (n, t), g in zip(outs, got)]))


def cast(x, t):
    return np.asarray(x, np.float32).astype(NP[t])


def casts():
    for t in SUB:
        edges = F4_EDGES if t == TP.FLOAT4E2M1 else INT_EDGES[t]
        for ft in (TP.FLOAT, TP.FLOAT16):
            x = np.array(edges, np.float32).astype(NP[ft])
            good("cast_%s_to_%s" % (NAME[ft], NAME[t]),
                 [helper.make_node("Cast", ["x"], ["y"], to=t)], [("x", ft, x)], [("y", t)])
        # every value of the type, back to float32, float16 and the 8-bit integer
        bits = 4 if t in (TP.INT4, TP.UINT4, TP.FLOAT4E2M1) else 2
        codes = np.arange(2 ** bits, dtype=np.uint8)
        x = codes.view(NP[t]) if t == TP.FLOAT4E2M1 else codes.astype(np.int8).astype(NP[t])
        if t in (TP.INT4, TP.INT2):
            x = (codes.astype(np.int16) - 2 ** (bits - 1)).astype(NP[t])
        x = np.concatenate([x, x[:1]])	# an odd count: the last byte's high bits unused
        for to in (TP.FLOAT, TP.FLOAT16, TP.UINT8 if t in (TP.UINT4, TP.UINT2) else TP.INT8):
            if t == TP.FLOAT4E2M1 and to not in (TP.FLOAT, TP.FLOAT16):
                continue
            good("cast_%s_to_%s" % (NAME[t], NAME[to]),
                 [helper.make_node("Cast", ["x"], ["y"], to=to)], [("x", t, x)], [("y", to)])
        # float32 -> t -> float32, both outputs; CastLike to t
        x = np.array(edges, np.float32)
        good("round_trip_%s" % NAME[t],
             [helper.make_node("Cast", ["x"], ["q"], to=t),
              helper.make_node("Cast", ["q"], ["y"], to=TP.FLOAT)],
             [("x", TP.FLOAT, x)], [("q", t), ("y", TP.FLOAT)])
        good("castlike_float_to_%s" % NAME[t],
             [helper.make_node("CastLike", ["x", "like"], ["y"])],
             [("x", TP.FLOAT, x), ("like", t, cast([1], t))], [("y", t)])
    # 8-bit float to float4e2m1 and back: no double rounding through float32
    x = np.array([0.25, 0.75, 2.5, 3.5, 5, 448, -448, np.nan, -0.0, 0.3125], np.float32)
    good("cast_e4m3fn_to_float4e2m1",
         [helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT4E2M1)],
         [("x", TP.FLOAT8E4M3FN, cast(x, TP.FLOAT8E4M3FN))], [("y", TP.FLOAT4E2M1)])
    good("cast_float4e2m1_to_e5m2",
         [helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT8E5M2)],
         [("x", TP.FLOAT4E2M1, np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn))],
         [("y", TP.FLOAT8E5M2)])


def moves():
    """Ops that move elements unchanged, over [3, 5] (15: the packing's last byte half used)."""
    for t in (TP.INT4, TP.UINT2, TP.FLOAT4E2M1):
        n = 16 if t != TP.UINT2 else 4
        codes = (np.arange(15) * 7 % n).astype(np.uint8)
        x = (codes.view(NP[t]) if t == TP.FLOAT4E2M1 else
             (codes.astype(np.int16) - (8 if t == TP.INT4 else 0)).astype(NP[t])).reshape(3, 5)
        shape = numpy_helper.from_array(np.array([5, 3], np.int64), "shape")
        axes = numpy_helper.from_array(np.array([0, 3], np.int64), "axes")
        good("moves_%s" % NAME[t],
             [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
              helper.make_node("Reshape", ["t", "shape"], ["r"]),
              helper.make_node("Unsqueeze", ["r", "axes"], ["u"]),
              helper.make_node("Squeeze", ["u", "axes"], ["s"]),
              helper.make_node("Flatten", ["s"], ["f"], axis=0),
              helper.make_node("Identity", ["f"], ["y"]),
              helper.make_node("Shape", ["x"], ["n"])],
             [("x", t, x)], [("t", t), ("y", t), ("n", TP.INT64)], [shape, axes])


def qdq():
    rng = np.random.default_rng(25)
    x = (rng.standard_normal((3, 8)) * 4).astype(np.float32)
    x[0, :4] = [1e6, -1e6, 0.5, -0.5]
    s_axis = np.array([0.5, 0.25, 1.5], np.float32)
    s_block = np.array([[0.5, 1], [0.25, 2], [3, 0.125]], np.float32)
    for t in (TP.INT4, TP.UINT4, TP.INT2, TP.UINT2, TP.FLOAT4E2M1, TP.FLOAT8E4M3FN,
              TP.FLOAT8E5M2, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2FNUZ):
        flt = t not in (TP.INT4, TP.UINT4, TP.INT2, TP.UINT2)
        zp_axis = cast([0, 0, 0] if flt else [1, 2, 0], t)
        zp_block = cast([[0, 0]] * 3 if flt else [[1, 0], [2, 1], [0, 1]], t)
        good("quantize_%s_axis" % NAME[t],
             [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)],
             [("x", TP.FLOAT, x), ("s", TP.FLOAT, s_axis), ("z", t, zp_axis)], [("y", t)])
        good("quantize_%s_block" % NAME[t],
             [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1,
                               block_size=4)],
             [("x", TP.FLOAT, x), ("s", TP.FLOAT, s_block), ("z", t, zp_block)], [("y", t)])
        good("quantize_%s_output_dtype" % NAME[t],
             [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=t)],
             [("x", TP.FLOAT, x), ("s", TP.FLOAT, np.array(0.75, np.float32))], [("y", t)])
        q = ReferenceEvaluator(model("q", [helper.make_node("QuantizeLinear", ["x", "s", "z"],
                                                            ["y"], axis=0)],
                                     [vi("x", TP.FLOAT, [3, 8]), vi("s", TP.FLOAT, [3]),
                                      vi("z", t, [3])], [vi("y", t, None)])).run(
            None, {"x": x, "s": s_axis, "z": zp_axis})[0]
        good("dequantize_%s_axis" % NAME[t],
             [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0)],
             [("q", t, q), ("s", TP.FLOAT, s_axis), ("z", t, zp_axis)], [("y", TP.FLOAT)])
        good("dequantize_%s_block_float16" % NAME[t],
             [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1,
                               block_size=4)],
             [("q", t, q), ("s", TP.FLOAT16, s_block.astype(np.float16)),
              ("z", t, zp_block)], [("y", TP.FLOAT16)])
    # saturate 0: overflow becomes NaN (E4M3FN) or infinity (E5M2)
    for t in (TP.FLOAT8E4M3FN, TP.FLOAT8E5M2):
        good("quantize_%s_no_saturate" % NAME[t],
             [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], saturate=0)],
             [("x", TP.FLOAT, x), ("s", TP.FLOAT, np.array(0.5, np.float32)),
              ("z", t, cast(0, t))], [("y", t)])


def refusals():
    x = vi("x", TP.INT4, [4])
    m = model("add_int4", [helper.make_node("Add", ["x", "x"], ["y"], name="add")], [x],
              [vi("y", TP.INT4, [4])])
    BAD.append(("add_int4", m, "node 0 'add' (Add): input 'x' is an int4 tensor, which Add "
                "does not take (only casts, QuantizeLinear, DequantizeLinear and ops that "
                "move elements take sub-byte types)"))
    m = model("bitcast_uint2", [helper.make_node("BitCast", ["x"], ["y"], name="bc",
                                                 to=TP.INT2)],
              [vi("x", TP.UINT2, [4])], [vi("y", TP.INT2, [4])], opset=26)
    BAD.append(("bitcast_uint2", m, "node 0 'bc' (BitCast): input 'x' is a uint2 tensor, "
                "which BitCast does not take"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_subbyte_tests.py OUTDIR")
    casts()
    moves()
    qdq()
    refusals()
    for name, m, ins, outs in GOOD:
        nodetest.write_case(os.path.join(sys.argv[1], "good", name), m, ins, outs)
    for name, m, expect in BAD:
        nodetest.write_bad(os.path.join(sys.argv[1], "bad", name), m, expect)


main()
