#!/usr/bin/python3
"""The two tiny ONNX models the example projects compile (a real project
keeps its .onnx files in git; these are generated so that the tree holds
no binaries).

usage: models.py scale|project OUT.onnx

scale.onnx    y = 2 * x + 1, x float32 [N, 4] ('N' symbolic)
project.onnx  y = x @ W, x float32 [N, 4], W [4, 2] = [[1,0],[0,1],[1,0],[0,1]]

The weights go to OUT.weights beside OUT.onnx (ONNX external data), as
large models' do: collagec's depfile lists that file too, so the build
systems recompile the model when only its weights change.

Needs python3-onnx and python3-numpy (Debian's will do); deterministic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper


def scale():
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    one = numpy_helper.from_array(np.array(1, np.float32), "one")
    nodes = [helper.make_node("Mul", ["x", "two"], ["t"], name="times_two"),
             helper.make_node("Add", ["t", "one"], ["y"], name="plus_one")]
    return helper.make_graph(nodes, "scale",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                             [two, one])


def project():
    w = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="project")]
    return helper.make_graph(nodes, "project",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
                             [numpy_helper.from_array(w, "W")])


def main():
    graphs = {"scale": scale, "project": project}
    if len(sys.argv) != 3 or sys.argv[1] not in graphs:
        sys.exit(__doc__)
    m = helper.make_model(graphs[sys.argv[1]](), producer_name="collagec-example",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    out = sys.argv[2]
    weights = os.path.splitext(os.path.basename(out))[0] + ".weights"
    path = os.path.join(os.path.dirname(os.path.abspath(out)), weights)
    if os.path.exists(path):
        os.remove(path)  # onnx appends to an existing file
    external_data_helper.convert_model_to_external_data(m, location=weights,
                                                        size_threshold=0)
    m = external_data_helper.write_external_data_tensors(m, os.path.dirname(path))
    with open(out, "wb") as f:
        f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
