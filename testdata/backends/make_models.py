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


# ---- opencl: the register-tiled MatMul, Gemm and Conv strategies ----

def opencl_tiled_models(out):
    """Writes the models of the opencl section's tiled-kernel checks into out,
    all opset 13, float32, inputs fed by `collagec run --seed`, weights random:

      ocl_mm_edge     MatMul a [5,7] x b [7,19]: edge tiles in M and N
      ocl_mm_big      MatMul a [33,70] x b [70,40]
      ocl_mm_vec_a    MatMul a [13] x b [13,20]: 1-D left operand (M = 1)
      ocl_mm_vec_b    MatMul a [6,13] x b [13]: 1-D right operand (N = 1)
      ocl_mm_small_n  MatMul a [9,12] x b [12,5]: N < 8
      ocl_mm_bcast    MatMul a [2,1,6,9] x b [3,9,17]: batch broadcast to [2,3]
      ocl_mm_sym      MatMul a [N,5,12] x b [N,12,18]: symbolic batch
      ocl_mm_sym_w    MatMul a [N,6,24] x weight [24,33]: symbolic batch
      ocl_gemm_plain  Gemm a [9,11] b [11,21] C [21]
      ocl_gemm_ta     Gemm transA a [11,9] b [11,21] C [9,1], alpha 0.5, beta 2
      ocl_gemm_tb     Gemm transB a [6,37] b [13,37], no C (K % 8 != 0)
      ocl_gemm_tatb   Gemm transA transB a [37,6] b [13,37] C [6,13]
      ocl_gemm_m1     Gemm a [1,20] b [20,30] C [1,30]
      ocl_gemm_sym    Gemm x [N,16] w [10,16] transB bias [10], then Gemm by
                      v [10,12] bias [12]: symbolic M
      ocl_conv_1x1    Conv x [1,8,5,7] w [6,8,1,1] bias
      ocl_conv_s2p1   Conv x [2,5,11,13] w [7,5,3,3] stride 2 pad 1 bias
      ocl_conv_dw     Conv group 6 x [1,6,9,10] w [6,1,3,3] pad 1 bias
      ocl_conv_dw_s2  Conv group 5 x [1,5,12,12] w [5,1,3,3] stride 2 pad 1
      ocl_conv_grp    Conv group 2 x [1,8,7,9] w [6,4,3,3] pad 1 (3 channels a group)
      ocl_conv_dil    Conv x [1,3,12,12] w [5,3,3,3] dilations 2, pads (2,1,0,2)
      ocl_conv_odd    Conv x [1,3,17,19] w [9,3,5,3] strides (2,3) pads (2,1,2,1)
      ocl_conv_wide   Conv x [1,4,6,40] w [8,4,3,3] pad 1 bias (pixel tiles of 14)
      ocl_conv_same   Conv x [1,3,10,10] w [4,3,4,4] stride 3 auto_pad SAME_UPPER
      ocl_conv_1d     Conv x [2,4,30] w [5,4,3] pad 1 bias (1-D)
      ocl_conv_3d     Conv x [1,2,4,5,6] w [3,2,2,2,2] (3-D: the generic kernel)
      ocl_conv_sym    Conv x [N,3,8,8] w [4,3,3,3] pad 1: symbolic batch
    """
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT
    rng = np.random.default_rng(20240611)
    mk = helper.make_node

    def vi(name, shape):
        return helper.make_tensor_value_info(name, f32, shape)

    def w(name, *shape):
        return helper.make_tensor(name, f32, shape,
                                  rng.standard_normal(shape).astype(np.float32).ravel())

    def model(name, nodes, inputs, outputs, inits=()):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        save(graph, os.path.join(out, name + ".onnx"))

    def matmul(name, a, b, y, b_init=False):
        if b_init:
            model(name, [mk("MatMul", ["a", "b"], ["y"])], [vi("a", a)], [vi("y", y)],
                  [w("b", *b)])
        else:
            model(name, [mk("MatMul", ["a", "b"], ["y"])], [vi("a", a), vi("b", b)],
                  [vi("y", y)])

    matmul("ocl_mm_edge", [5, 7], [7, 19], [5, 19])
    matmul("ocl_mm_big", [33, 70], [70, 40], [33, 40])
    matmul("ocl_mm_vec_a", [13], [13, 20], [20])
    matmul("ocl_mm_vec_b", [6, 13], [13], [6])
    matmul("ocl_mm_small_n", [9, 12], [12, 5], [9, 5])
    matmul("ocl_mm_bcast", [2, 1, 6, 9], [3, 9, 17], [2, 3, 6, 17])
    matmul("ocl_mm_sym", ["N", 5, 12], ["N", 12, 18], ["N", 5, 18])
    matmul("ocl_mm_sym_w", ["N", 6, 24], [24, 33], ["N", 6, 33], b_init=True)

    def gemm(name, a, b, c, y, **attrs):
        ins = ["a", "b"] + (["c"] if c else [])
        inits = [w("b", *b)] + ([w("c", *c)] if c else [])
        model(name, [mk("Gemm", ins, ["y"], **attrs)], [vi("a", a)], [vi("y", y)], inits)

    gemm("ocl_gemm_plain", [9, 11], [11, 21], [21], [9, 21])
    gemm("ocl_gemm_ta", [11, 9], [11, 21], [9, 1], [9, 21], transA=1, alpha=0.5, beta=2.0)
    gemm("ocl_gemm_tb", [6, 37], [13, 37], None, [6, 13], transB=1)
    gemm("ocl_gemm_tatb", [37, 6], [13, 37], [6, 13], [6, 13], transA=1, transB=1)
    gemm("ocl_gemm_m1", [1, 20], [20, 30], [1, 30], [1, 30])
    model("ocl_gemm_sym",
          [mk("Gemm", ["x", "w", "bw"], ["h"], transB=1), mk("Gemm", ["h", "v", "bv"], ["y"])],
          [vi("x", ["N", 16])], [vi("y", ["N", 12])],
          [w("w", 10, 16), w("bw", 10), w("v", 10, 12), w("bv", 12)])

    def conv(name, x, wshape, y, bias=False, **attrs):
        ins = ["x", "w"] + (["bias"] if bias else [])
        inits = [w("w", *wshape)] + ([w("bias", wshape[0])] if bias else [])
        model(name, [mk("Conv", ins, ["y"], **attrs)], [vi("x", x)], [vi("y", y)], inits)

    conv("ocl_conv_1x1", [1, 8, 5, 7], [6, 8, 1, 1], [1, 6, 5, 7], bias=True)
    conv("ocl_conv_s2p1", [2, 5, 11, 13], [7, 5, 3, 3], [2, 7, 6, 7], bias=True,
         strides=[2, 2], pads=[1, 1, 1, 1])
    conv("ocl_conv_dw", [1, 6, 9, 10], [6, 1, 3, 3], [1, 6, 9, 10], bias=True, group=6,
         pads=[1, 1, 1, 1])
    conv("ocl_conv_dw_s2", [1, 5, 12, 12], [5, 1, 3, 3], [1, 5, 6, 6], group=5,
         strides=[2, 2], pads=[1, 1, 1, 1])
    conv("ocl_conv_grp", [1, 8, 7, 9], [6, 4, 3, 3], [1, 6, 7, 9], group=2,
         pads=[1, 1, 1, 1])
    conv("ocl_conv_dil", [1, 3, 12, 12], [5, 3, 3, 3], [1, 5, 10, 11], dilations=[2, 2],
         pads=[2, 1, 0, 2])
    conv("ocl_conv_odd", [1, 3, 17, 19], [9, 3, 5, 3], [1, 9, 9, 7], strides=[2, 3],
         pads=[2, 1, 2, 1])
    conv("ocl_conv_wide", [1, 4, 6, 40], [8, 4, 3, 3], [1, 8, 6, 40], bias=True,
         pads=[1, 1, 1, 1])
    conv("ocl_conv_same", [1, 3, 10, 10], [4, 3, 4, 4], [1, 4, 4, 4], strides=[3, 3],
         auto_pad="SAME_UPPER")
    conv("ocl_conv_1d", [2, 4, 30], [5, 4, 3], [2, 5, 30], bias=True, pads=[1, 1])
    conv("ocl_conv_3d", [1, 2, 4, 5, 6], [3, 2, 2, 2, 2], [1, 3, 3, 4, 5])
    conv("ocl_conv_sym", ["N", 3, 8, 8], [4, 3, 3, 3], ["N", 4, 8, 8], pads=[1, 1, 1, 1])
