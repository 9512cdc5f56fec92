#!/usr/bin/python3
"""Builds encoder.onnx: a 2-layer transformer encoder written the way
PyTorch's exporter writes one, with a symbolic batch and sequence length;
and shift.onnx, whose shapes need derived symbols.

usage: gen_encoder.py OUTDIR

  input  x [batch, seq, 64] float32   output y [batch, seq, 64]
  positional embedding  Slice(pos[1, 32, 64], ends = Shape(x)[1])
  per layer  LayerNormalization; Q, K, V MatMul + Add; heads split by
             Reshape(t, Concat(Unsqueeze(Gather(Shape(t), 0)),
                               Unsqueeze(Gather(Shape(t), 1)), [4], [16]))
             and Transpose; causal mask from Range(0, seq) and Less, Where,
             Expand to [batch, 4, seq, seq]; Softmax; heads merged by
             Reshape(ctx, Concat(batch, seq, [-1])); erf GELU FFN;
             residual Adds
  final      LayerNormalization spelled with ReduceMean/Sub/Mul/Sqrt/Div

shift.onnx: x [N, S, 4] float32;
  y  = Concat(x, x[:, :-1] - x[:, 1:], axis 1)   [N, 2*S-1, 4]
  y2 = x[:, :Shape(x)[1] / 2]                      [N, S/2, 4]
  y3 = Range(0, Shape(x)[1] - 1, 1)                [S-1] int64

Opset 17, fixed-seed weights, deterministic bytes; needs Debian's
python3-onnx and python3-numpy only. The reference outputs that
tests/models.sh checks, testdata/models/encoder/B_S/y.npy, were made by
  tools/ort.py refs OUTDIR/encoder.onnx testdata/models/encoder/2_16 \
      --shape batch=2 --shape seq=16
(onnxruntime 1.32) for (B, S) = (1, 7), (2, 16), (3, 5); those of shift.onnx,
testdata/models/shift/N_S/, the same way for (N, S) = (1, 2), (2, 5), (3, 8).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, FFN, LAYERS, MAX_SEQ = 64, 4, 128, 2, 32


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, tag):
        self.count += 1
        return "%s_%d" % (tag, self.count)

    def tensor(self, array):
        name = self.fresh("const")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, *v):
        return self.tensor(np.array(v, np.int64))

    def weight(self, *shape, scale=0.1):
        return self.tensor((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op, inputs, **attrs):
        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.fresh(op), **attrs))
        return out


def dim(b, x, axis):
    """Unsqueeze(Gather(Shape(x), axis)): what torch's x.size(axis) exports to."""
    g = b.node("Gather", [b.node("Shape", [x]), b.tensor(np.int64(axis))], axis=0)
    return b.node("Unsqueeze", [g, b.ints(0)])


def layernorm_op(b, x):
    return b.node("LayerNormalization", [x, b.tensor(1 + b.rng.standard_normal(HIDDEN).astype(
        np.float32) * 0.1), b.weight(HIDDEN)], axis=-1, epsilon=1e-5)


def layernorm_spelled(b, x):
    mean = b.node("ReduceMean", [x], axes=[-1])
    d = b.node("Sub", [x, mean])
    var = b.node("ReduceMean", [b.node("Mul", [d, d])], axes=[-1])
    std = b.node("Sqrt", [b.node("Add", [var, b.tensor(np.float32(1e-5))])])
    return b.node("Add", [b.node("Mul", [b.node("Div", [d, std]), b.weight(HIDDEN)]),
                          b.weight(HIDDEN)])


def dense(b, x, n_in, n_out):
    return b.node("Add", [b.node("MatMul", [x, b.weight(n_in, n_out)]), b.weight(n_out)])


def layer(b, x, mask):
    dh = HIDDEN // HEADS
    h = layernorm_op(b, x)

    def heads(t, perm):
        shape = b.node("Concat", [dim(b, t, 0), dim(b, t, 1), b.ints(HEADS), b.ints(dh)],
                       axis=0)
        return b.node("Transpose", [b.node("Reshape", [t, shape])], perm=perm)

    q = heads(dense(b, h, HIDDEN, HIDDEN), [0, 2, 1, 3])
    k = heads(dense(b, h, HIDDEN, HIDDEN), [0, 2, 3, 1])
    v = heads(dense(b, h, HIDDEN, HIDDEN), [0, 2, 1, 3])
    s = b.node("Div", [b.node("MatMul", [q, k]), b.tensor(np.float32(np.sqrt(dh)))])
    p = b.node("Softmax", [b.node("Add", [s, mask])], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    merge = b.node("Concat", [dim(b, ctx, 0), dim(b, ctx, 1), b.ints(-1)], axis=0)
    x = b.node("Add", [x, dense(b, b.node("Reshape", [ctx, merge]), HIDDEN, HIDDEN)])
    h = dense(b, layernorm_op(b, x), HIDDEN, FFN)
    gelu = b.node("Mul", [b.node("Mul", [h, b.tensor(np.float32(0.5))]), b.node("Add", [
        b.node("Erf", [b.node("Div", [h, b.tensor(np.float32(np.sqrt(2)))])]),
        b.tensor(np.float32(1))])])
    return b.node("Add", [x, dense(b, gelu, FFN, HIDDEN)])


def causal_mask(b, x):
    """[batch, heads, seq, seq]: 0 where key <= query, -1e4 after it."""
    seq = b.node("Gather", [b.node("Shape", [x]), b.tensor(np.int64(1))], axis=0)
    r = b.node("Range", [b.tensor(np.int64(0)), seq, b.tensor(np.int64(1))])
    later = b.node("Less", [b.node("Unsqueeze", [r, b.ints(1)]),
                            b.node("Unsqueeze", [r, b.ints(0)])])
    m = b.node("Where", [later, b.tensor(np.float32(-1e4)), b.tensor(np.float32(0))])
    shape = b.node("Concat", [dim(b, x, 0), b.ints(HEADS), dim(b, x, 1), dim(b, x, 1)],
                   axis=0)
    return b.node("Expand", [m, shape])


def encoder():
    b = Builder(17)
    pos = b.node("Slice", [b.weight(1, MAX_SEQ, HIDDEN), b.ints(0), dim(b, "x", 1),
                           b.ints(1)])
    x = b.node("Add", ["x", pos])
    mask = causal_mask(b, x)
    for _ in range(LAYERS):
        x = layer(b, x, mask)
    y = layernorm_spelled(b, x)
    b.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))
    f32 = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                                  ["batch", "seq", HIDDEN])
    graph = helper.make_graph(b.nodes, "encoder", [f32("x")], [f32("y")], b.inits)
    model = helper.make_model(graph, producer_name="collagec-testdata",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def shift():
    b = Builder(5)
    x = "x"
    head = b.node("Slice", [x, b.ints(0), b.ints(-1), b.ints(1)])
    tail = b.node("Slice", [x, b.ints(1), b.ints(1 << 62), b.ints(1)])
    b.nodes.append(helper.make_node("Concat", [x, b.node("Sub", [head, tail])], ["y"],
                                    name="cat", axis=1))
    seq = b.node("Gather", [b.node("Shape", [x]), b.tensor(np.int64(1))], axis=0)
    half = b.node("Unsqueeze", [b.node("Div", [seq, b.tensor(np.int64(2))]), b.ints(0)])
    b.nodes.append(helper.make_node("Slice", [x, b.ints(0), half, b.ints(1)], ["y2"],
                                    name="first_half"))
    b.nodes.append(helper.make_node("Range", [b.tensor(np.int64(0)), b.node(
        "Sub", [seq, b.tensor(np.int64(1))]), b.tensor(np.int64(1))], ["y3"], name="range"))
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
    graph = helper.make_graph(b.nodes, "shift", [f32("x", ["N", "S", 4])],
                              [f32("y", ["N", "T", 4]), f32("y2", ["N", "H", 4]),
                               helper.make_tensor_value_info("y3", TensorProto.INT64, ["R"])],
                              b.inits)
    model = helper.make_model(graph, producer_name="collagec-testdata",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    onnx.save(encoder(), os.path.join(sys.argv[1], "encoder.onnx"))
    onnx.save(shift(), os.path.join(sys.argv[1], "shift.onnx"))


if __name__ == "__main__":
    main()
