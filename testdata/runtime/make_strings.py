#!/usr/bin/python3
"""Builds the model of tests/runtime.sh's string checks (testdata/runtime/strings.c).

usage: make_strings.py OUT.onnx

strings.onnx: inputs s [N] (string) and x [2] (float); outputs
num = Cast(s) to float [N], up = StringNormalizer(s) (UPPER, stopwords
"skip", case-insensitive) [C'], txt = CastLike(x, like) [2] string, where
like is a string initializer (TensorProto string_data), and norm =
StringNormalizer(txt) (LOWER, no stopwords) [2], a string intermediate.
Needs Debian's python3-onnx only; deterministic.
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    like = helper.make_tensor("like", TensorProto.STRING, [1], [b"x"])
    nodes = [
        helper.make_node("Cast", ["s"], ["num"], name="tonum", to=TensorProto.FLOAT),
        helper.make_node("StringNormalizer", ["s"], ["up"], name="upper",
                         case_change_action="UPPER", stopwords=["skip"], locale="en_US"),
        helper.make_node("CastLike", ["x", "like"], ["txt"], name="totext"),
        helper.make_node("StringNormalizer", ["txt"], ["norm"], name="lower",
                         case_change_action="LOWER"),
    ]
    g = helper.make_graph(
        nodes, "strings",
        [helper.make_tensor_value_info("s", TensorProto.STRING, ["N"]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("num", TensorProto.FLOAT, ["N"]),
         helper.make_tensor_value_info("up", TensorProto.STRING, [None]),
         helper.make_tensor_value_info("txt", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("norm", TensorProto.STRING, [2])],
        [like])
    m = helper.make_model(g, producer_name="collagec-runtime-test",
                          opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    with open(sys.argv[1], "wb") as f:
        f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
