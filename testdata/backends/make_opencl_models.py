#!/usr/bin/python3
"""Builds the small models of the opencl section of tests/backends.sh.

usage: make_opencl_models.py OUTDIR

Writes, all opset 13, float32, static shapes unless noted (the tests feed
them `collagec run --seed` inputs):
  add_bcast.onnx     Add(a [2,3,4], b [3,1]) then Mul by c [4]  -> y [2,3,4]
  act_chain.onnx     Tanh(Sigmoid(Relu(x [4,33])))             -> y [4,33]
  reduce.onnx        ReduceMean(x [2,5,7], axes 1, keepdims 1)  -> m [2,1,7]
                     ReduceMax(x, axes 2, keepdims 0)           -> n [2,5]
  softmax.onnx       Softmax(x [3,10]) on axis -1 and on axis 0 -> y, z [3,10]
  pool.onnx          MaxPool 2x2/2 and AveragePool 3x3/1 pad 1 of x [1,3,8,8]
                     (count_include_pad 0)                      -> p [1,3,4,4], q [1,3,8,8]
  conv.onnx          Conv x [1,3,9,9], w [4,3,3,3], bias, pads 1, stride 2 -> y [1,4,5,5]
  conv_dw.onnx       Conv group 4 (depthwise) x [1,4,8,8], w [4,1,3,3] -> y [1,4,8,8]
  matmul.onnx        MatMul a [2,3,4,5] x b [2,3,5,6]           -> y [2,3,4,6]
  shape_ops.onnx     Transpose x [2,3,4] perm (0,2,1), Concat with z [2,4,2] on
                     axis 2, Gather rows by int64 ids [3] (axis 1) -> y [2,3,5]
  sym_batch.onnx     Gemm(x [N,8], w [4,8] transB, bias) Relu, then
                     ReduceSum axis 1 keepdims 1 -> y [N,1], with N symbolic
  boundary.onnx      a = Relu(x [4,33]); TopK(Sigmoid(a), 5, axis 1) (on c: opencl
                     does not take TopK), its values through Tanh -> y [4,5];
                     Exp(a) -> z [4,33]: values cross to the host and back
Needs Debian's python3-onnx and python3-numpy only.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    return numpy_helper.from_array(arr, name)


class Writer:
    def __init__(self, out):
        self.out = out
        self.rng = np.random.default_rng(20240607)

    def rand(self, *shape):
        return self.rng.standard_normal(shape).astype(np.float32)

    def save(self, name, nodes, inputs, outputs, inits=()):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="collagec-tests")
        model.ir_version = 7
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(self.out, name + ".onnx"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    w = Writer(out)
    mk = helper.make_node

    w.save("add_bcast",
           [mk("Add", ["a", "b"], ["t"]), mk("Mul", ["t", "c"], ["y"])],
           [vi("a", [2, 3, 4]), vi("b", [3, 1]), vi("c", [4])], [vi("y", [2, 3, 4])])

    w.save("act_chain",
           [mk("Relu", ["x"], ["r"]), mk("Sigmoid", ["r"], ["s"]), mk("Tanh", ["s"], ["y"])],
           [vi("x", [4, 33])], [vi("y", [4, 33])])

    w.save("reduce",
           [mk("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
            mk("ReduceMax", ["x"], ["n"], axes=[2], keepdims=0)],
           [vi("x", [2, 5, 7])], [vi("m", [2, 1, 7]), vi("n", [2, 5])])

    w.save("softmax", [mk("Softmax", ["x"], ["y"], axis=-1), mk("Softmax", ["x"], ["z"], axis=0)],
           [vi("x", [3, 10])], [vi("y", [3, 10]), vi("z", [3, 10])])

    w.save("pool",
           [mk("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
            mk("AveragePool", ["x"], ["q"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               count_include_pad=0)],
           [vi("x", [1, 3, 8, 8])], [vi("p", [1, 3, 4, 4]), vi("q", [1, 3, 8, 8])])

    w.save("conv",
           [mk("Conv", ["x", "w", "bias"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[2, 2])],
           [vi("x", [1, 3, 9, 9])], [vi("y", [1, 4, 5, 5])],
           [const("w", w.rand(4, 3, 3, 3)), const("bias", w.rand(4))])

    w.save("conv_dw",
           [mk("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4)],
           [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
           [const("w", w.rand(4, 1, 3, 3))])

    w.save("matmul", [mk("MatMul", ["a", "b"], ["y"])],
           [vi("a", [2, 3, 4, 5]), vi("b", [2, 3, 5, 6])], [vi("y", [2, 3, 4, 6])])

    w.save("shape_ops",
           [mk("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
            mk("Concat", ["t", "z"], ["c"], axis=2),
            mk("Gather", ["c", "ids"], ["y"], axis=1)],
           [vi("x", [2, 3, 4]), vi("z", [2, 4, 2])], [vi("y", [2, 3, 5])],
           [const("ids", np.array([3, 0, 2], dtype=np.int64))])

    w.save("sym_batch",
           [mk("Gemm", ["x", "w", "bias"], ["g"], transB=1),
            mk("Relu", ["g"], ["r"]),
            mk("ReduceSum", ["r", "axes"], ["y"], keepdims=1)],
           [vi("x", ["N", 8])], [vi("y", ["N", 1])],
           [const("w", w.rand(4, 8)), const("bias", w.rand(4)),
            const("axes", np.array([1], dtype=np.int64))])

    w.save("boundary",
           [mk("Relu", ["x"], ["a"]), mk("Sigmoid", ["a"], ["b"]),
            mk("TopK", ["b", "k"], ["v", "i"], axis=1), mk("Tanh", ["v"], ["y"]),
            mk("Exp", ["a"], ["z"])],
           [vi("x", [4, 33])], [vi("y", [4, 5]), vi("z", [4, 33])],
           [const("k", np.array([5], dtype=np.int64))])


if __name__ == "__main__":
    main()
