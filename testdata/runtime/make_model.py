#!/usr/bin/python3
"""Builds the model tests/runtime.sh compiles for tests/runtime_checks.c.

usage: make_model.py OUT.onnx

checks.onnx: inputs a [N,3] and b [N,3] (float; 'N' symbolic, shared),
c [K,1], d [1,M], e [P,Q] and f [R,Q] (float); outputs y = a + b [N,3],
z = c * d [K,M], so the outer product z can be made too large for int64 from
inputs whose own sizes are fine, and w = Concat(e, f) [P+R,Q], whose derived
symbol P+R can overflow while e and f hold no bytes (Q = 0). Needs Debian's python3-onnx only; deterministic.
"""
import sys

import onnx
from onnx import TensorProto, helper


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    nodes = [
        helper.make_node("Add", ["a", "b"], ["y"], name="add"),
        helper.make_node("Mul", ["c", "d"], ["z"], name="outer"),
        helper.make_node("Concat", ["e", "f"], ["w"], name="cat", axis=0),
    ]
    g = helper.make_graph(nodes, "checks",
                          [f32("a", ["N", 3]), f32("b", ["N", 3]), f32("c", ["K", 1]),
                           f32("d", [1, "M"]), f32("e", ["P", "Q"]), f32("f", ["R", "Q"])],
                          [f32("y", ["N", 3]), f32("z", ["K", "M"]), f32("w", ["S", "Q"])])
    m = helper.make_model(g, producer_name="collagec-runtime-test",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    with open(sys.argv[1], "wb") as f:
        f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
