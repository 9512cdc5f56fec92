#!/usr/bin/python3
"""Builds tests of model-local functions (ModelProto.functions; tests/function.sh).

usage: gen_function_tests.py OUTDIR

Writes, in the layout of testdata/nodetest.py:
  OUTDIR/good/NAME   models calling functions of their own: called twice,
      attributes referring to the call's (ref_attr_name) with and without a
      default (attribute_proto, IR 9), a function calling a function, an
      optional input left out, an input passed through as an output and one
      value as two outputs, overloads (IR 10), a call inside an If branch;
      expected outputs computed here with numpy
  OUTDIR/bad/NAME    models collagec must refuse (recursion, calls nested
      too deep, an opset other than the model's, too many inputs)

ONNX 1.12's schema lacks attribute_proto and the overload fields; they are
appended to the serialized messages as the field numbers of newer schemas
(FunctionProto 11 and 13, NodeProto 8), which the 1.12 classes keep as
unknown fields. Needs python3-onnx and python3-numpy only; deterministic.
"""
import math
import sys

import numpy as np
from onnx import FunctionProto, NodeProto, TensorProto, helper

import nodetest

OPSET = 17
DOMAIN = "local"
RNG = np.random.default_rng(8)
GOOD = []
BAD = []
ERF = np.vectorize(math.erf, otypes=[np.float64])


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def with_field(msg, cls, field, payload):
    """msg again, with a length-delimited field the 1.12 schema does not know."""
    m = cls()
    m.ParseFromString(msg.SerializeToString() + varint(field << 3 | 2) + varint(len(payload))
                      + payload)
    return m


def function(name, inputs, outputs, nodes, attributes=(), defaults=(), overload=None,
             opset=OPSET):
    f = helper.make_function(DOMAIN, name, inputs, outputs, nodes,
                             [helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)],
                             list(attributes))
    for a in defaults:
        f = with_field(f, FunctionProto, 11, a.SerializeToString())
    if overload:
        f = with_field(f, FunctionProto, 13, overload.encode())
    return f


def call(name, fn, inputs, outputs, overload=None, **attrs):
    n = helper.make_node(fn, inputs, outputs, name=name, domain=DOMAIN, **attrs)
    if overload:
        n = with_field(n, NodeProto, 8, overload.encode())
    return n


def ref(name, ref_name, kind):
    a = helper.make_attribute(name, 0.0 if kind == TensorProto.FLOAT else 0)
    a.ClearField("f")
    a.ClearField("i")
    a.ref_attr_name = ref_name
    a.type = {TensorProto.FLOAT: 1, TensorProto.INT64: 2}[kind]
    return a


def model(name, nodes, inputs, outputs, functions, opset=OPSET):
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid(DOMAIN, 1)],
                          functions=functions, producer_name="gen_function_tests.py")
    m.ir_version = 8
    return m


def good(name, nodes, inputs, outputs, functions):
    inputs = {k: v.astype(np.float32) for k, v in inputs.items()}
    outputs = {k: np.asarray(v, np.float32) for k, v in outputs.items()}
    GOOD.append((name, model(name, nodes, inputs, outputs, functions), inputs, outputs))


def gelu_fn():
    n = helper.make_node
    return function("Gelu2", ["x"], ["y"], [
        n("Constant", [], ["r"], value_float=1 / math.sqrt(2)),
        n("Mul", ["x", "r"], ["t"]), n("Erf", ["t"], ["e"]),
        n("Constant", [], ["one"], value_float=1.0), n("Add", ["e", "one"], ["s"]),
        n("Constant", [], ["half"], value_float=0.5), n("Mul", ["x", "half"], ["h"]),
        n("Mul", ["h", "s"], ["y"])])


def gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def cases():
    x = RNG.standard_normal((2, 3, 4))
    # one function, called twice, the second on the first's output
    good("called_twice", [call("g1", "Gelu2", ["x"], ["a"]), call("g2", "Gelu2", ["a"], ["y"])],
         {"x": x}, {"y": gelu(gelu(x))}, [gelu_fn()])

    # attributes: alpha given by the call or defaulted (attribute_proto), beta given
    n = helper.make_node
    k = n("Constant", [], ["k"])
    k.attribute.append(ref("value_float", "alpha", TensorProto.FLOAT))
    scale = function("ScaleClip", ["x"], ["y"], [
        k, n("Mul", ["x", "k"], ["m"]), n("Constant", [], ["lo"], value_float=-1.0),
        n("Clip", ["m", "lo"], ["y"])], attributes=["alpha"],
        defaults=[helper.make_attribute("alpha", 3.0)])
    good("attribute_ref", [call("s1", "ScaleClip", ["x"], ["a"], alpha=0.5),
                           call("s2", "ScaleClip", ["x"], ["b"]),
                           n("Add", ["a", "b"], ["y"])],
         {"x": x}, {"y": np.maximum(x * 0.5, -1) + np.maximum(x * 3.0, -1)}, [scale])

    # a function calling another, its intermediate names the same as the caller's
    outer = function("Twice", ["x"], ["y"], [
        call("in1", "Gelu2", ["x"], ["t"]), n("Add", ["t", "x"], ["y"])])
    good("nested", [call("tw", "Twice", ["x"], ["t"]), n("Neg", ["t"], ["y"])],
         {"x": x}, {"y": -(gelu(x) + x)}, [outer, gelu_fn()])

    # an optional input left out: Clip's max reads as absent
    clip = function("Bounded", ["x", "lo", "hi"], ["y"], [n("Clip", ["x", "lo", "hi"], ["y"])])
    lo = np.array(-0.5)
    good("optional_input", [call("b1", "Bounded", ["x", "lo"], ["y"])],
         {"x": x, "lo": lo}, {"y": np.maximum(x, -0.5)}, [clip])

    # overloads: one name, two bodies
    neg = function("Op", ["x"], ["y"], [n("Neg", ["x"], ["y"])], overload="neg")
    sq = function("Op", ["x"], ["y"], [n("Mul", ["x", "x"], ["y"])], overload="square")
    good("overload", [call("o1", "Op", ["x"], ["a"], overload="square"),
                      call("o2", "Op", ["a"], ["y"], overload="neg")],
         {"x": x}, {"y": -(x * x)}, [neg, sq])

    # outputs that are not the call's own values: an input passed through, one
    # value given as two outputs (ONNX Runtime 1.32 refuses such a function;
    # collagec gives it the plain meaning, through Identity nodes)
    both = function("Both", ["x"], ["p", "q", "r"], [n("Neg", ["x"], ["q"]),
                                                     n("Identity", ["q"], ["r"])])
    both.output[0] = "x"
    both.output[2] = "q"
    good("output_is_input", [call("b", "Both", ["x"], ["p", "q", "r"]),
                             n("Sub", ["p", "q"], ["s"]), n("Mul", ["s", "r"], ["y"])],
         {"x": x}, {"y": (x + x) * -x}, [both])

    # a call inside an If branch whose condition folds
    then_g = helper.make_graph([call("gt", "Gelu2", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([n("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    good("in_if_branch", [n("Constant", [], ["c"], value=helper.make_tensor(
        "c", TensorProto.BOOL, [], [True])),
        n("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
         {"x": x}, {"y": gelu(x)}, [gelu_fn()])


def bad(name, nodes, functions, expect, opset=OPSET):
    x = np.zeros((2, 2), np.float32)
    BAD.append((name, model(name, nodes, {"x": x}, ["y"], functions, opset), expect))


def bad_cases():
    n = helper.make_node
    ping = function("Ping", ["x"], ["y"], [call("p", "Pong", ["x"], ["y"])])
    pong = function("Pong", ["x"], ["y"], [call("q", "Ping", ["x"], ["y"])])
    bad("recursive", [call("f", "Ping", ["x"], ["y"])], [ping, pong],
        "node 'f/p/q' (Ping): function 'Ping' calls itself")
    # 2^33 calls if nothing stopped them: each level calls the next twice
    fan = [function("F%d" % i, ["x"], ["y"], [call("a", "F%d" % (i + 1), ["x"], ["t"]),
                                              call("b", "F%d" % (i + 1), ["t"], ["y"])])
           for i in range(33)]
    fan.append(function("F33", ["x"], ["y"], [n("Neg", ["x"], ["y"])]))
    bad("fan_out", [call("f", "F0", ["x"], ["y"])], fan,
        "(F32): inlining function 'F32' goes past 32 nested calls or 250000 nodes")
    old = function("Old", ["x"], ["y"], [n("Neg", ["x"], ["y"])], opset=13)
    bad("opset_mismatch", [call("o", "Old", ["x"], ["y"])], [old],
        "node 0 'o' (Old): function 'Old' imports opset 13 of the default domain and the "
        "model 17; they must be the same")
    bad("too_many_inputs", [call("g", "Gelu2", ["x", "x"], ["y"])], [gelu_fn()],
        "node 0 'g' (Gelu2): 2 inputs and 1 outputs for function 'Gelu2' of 1 and 1")
    bad("unknown_function", [call("u", "Missing", ["x"], ["y"])], [gelu_fn()],
        "node 0 'u' (Missing): operator domain 'local' is not supported")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_function_tests.py OUTDIR")
    cases()
    bad_cases()
    nodetest.write(sys.argv[1], GOOD, BAD)


main()
