#!/usr/bin/python3
"""Builds the small models of tests/backends.sh (the backend differential tests).

usage: make_models.py OUTDIR

Writes, all opset 13, static shapes unless noted:
  det_3x3.onnx        Det, x float32 [3,3]        -> y []
  det_2x4x4.onnx      Det, x float32 [2,4,4]      -> y [2]
  det_5x5.onnx        Det, x float32 [5,5]        -> y []
  det_f64.onnx        Det, x float64 [3,6,6]      -> y [3]
  det_singular.onnx   Det, x float32 [4,3,3]      -> y [4], with the input
                      det_singular.x.npy: a matrix with two equal rows, one
                      with a zero column, one with a zero row and a regular
                      one (the singular ones are exactly singular in float32,
                      so LU meets an exact zero pivot)
  det_sym.onnx        Det, x float32 [N,3,3]      -> y [N], symbolic batch N
                      (static only after --shape N=...)
  det_two.onnx        Add(Det(a [4,4]), Det(b [2,4,4])) float32 -> y [2]:
                      two Det partitions around a c-target Add
Needs Debian's python3-onnx and python3-numpy only.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def det_model(path, shape, elem):
    x = helper.make_tensor_value_info("x", elem, shape)
    y = helper.make_tensor_value_info("y", elem, shape[:-2])
    node = helper.make_node("Det", ["x"], ["y"], name="det0")
    graph = helper.make_graph([node], "det", [x], [y])
    save(graph, path)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="collagec-tests")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f32, f64 = TensorProto.FLOAT, TensorProto.DOUBLE
    det_model(os.path.join(out, "det_3x3.onnx"), [3, 3], f32)
    det_model(os.path.join(out, "det_2x4x4.onnx"), [2, 4, 4], f32)
    det_model(os.path.join(out, "det_5x5.onnx"), [5, 5], f32)
    det_model(os.path.join(out, "det_f64.onnx"), [3, 6, 6], f64)
    det_model(os.path.join(out, "det_singular.onnx"), [4, 3, 3], f32)
    det_model(os.path.join(out, "det_sym.onnx"), ["N", 3, 3], f32)
    x = np.array([
        [[2, 4, 1], [1, 2, 3], [2, 4, 1]],      # two equal rows
        [[1, 0, 3], [2, 0, 5], [7, 0, 1]],      # zero column
        [[1, 2, 3], [0, 0, 0], [4, 5, 6]],      # zero row
        [[2, -1, 0], [-1, 2, -1], [0, -1, 2]],  # det 4
    ], dtype=np.float32)
    np.save(os.path.join(out, "det_singular.x.npy"), x)

    a = helper.make_tensor_value_info("a", f32, [4, 4])
    b = helper.make_tensor_value_info("b", f32, [2, 4, 4])
    y = helper.make_tensor_value_info("y", f32, [2])
    nodes = [helper.make_node("Det", ["a"], ["da"], name="det_a"),
             helper.make_node("Det", ["b"], ["db"], name="det_b"),
             helper.make_node("Add", ["da", "db"], ["y"], name="add0")]
    save(helper.make_graph(nodes, "det_two", [a, b], [y]), os.path.join(out, "det_two.onnx"))


if __name__ == "__main__":
    main()
