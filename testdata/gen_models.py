#!/usr/bin/python3
"""Builds the five reference models of collagec's end-to-end tests.

usage: gen_models.py OUTDIR [NAME...]

Architectures (opset 13, float32, fixed-seed weights, deterministic bytes):
  mnist_cnn    Pad/Conv/Add/Relu/MaxPool x2, Reshape, MatMul, Add   in [1,1,28,28]
  resnet18     ResNet-18: Conv+BatchNormalization+Relu, residual Add,
               GlobalAveragePool, Flatten, Gemm                      in [1,3,224,224]
  mobilenetv2  MobileNetV2 (width 1.0), BN folded into Conv bias, Clip(0,6),
               depthwise Conv, GlobalAveragePool, Flatten, Gemm     in [1,3,224,224]
  bert_tiny    2-layer BERT encoder (hidden 128, 2 heads, FFN 512, seq 128),
               symbolic batch 'batch'; Gather embeddings, LayerNorm spelled
               with ReduceMean/Sub/Pow/Sqrt/Div, erf GELU, Softmax attention
  mlp          784-1024-1024-10 Gemm(transB)+Relu, symbolic batch 'N'
Needs Debian's python3-onnx and python3-numpy only.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = 0

    def fresh(self, tag):
        self.count += 1
        return "%s_%d" % (tag, self.count)

    def tensor(self, array, name=None):
        name = name or self.fresh("const")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def randn(self, shape, scale, name=None):
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.tensor(data, name)

    def node(self, op, inputs, outputs=1, name=None, **attrs):
        name = name or self.fresh(op.lower())
        outs = [name] if outputs == 1 else ["%s:%d" % (name, i) for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def finish(self, inputs, outputs, rename=None):
        if rename:
            for node in self.nodes:
                node.output[:] = [rename.get(o, o) for o in node.output]
                node.input[:] = [rename.get(i, i) for i in node.input]
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        model = helper.make_model(graph, producer_name="collagec-testdata",
                                  opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        onnx.checker.check_model(model)
        return model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def conv(b, x, cin, cout, k, stride=1, pad=0, group=1, bias=True):
    fan_in = cin // group * k * k
    w = b.randn((cout, cin // group, k, k), np.sqrt(2.0 / fan_in))
    ins = [x, w] + ([b.randn((cout,), 0.05)] if bias else [])
    return b.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                  pads=[pad] * 4, group=group)


def batchnorm(b, x, c):
    scale = b.tensor((1 + 0.1 * b.rng.standard_normal(c)).astype(np.float32))
    shift = b.randn((c,), 0.1)
    mean = b.randn((c,), 0.1)
    var = b.tensor((0.5 + b.rng.random(c)).astype(np.float32))
    return b.node("BatchNormalization", [x, scale, shift, mean, var], epsilon=1e-5)


def mnist_cnn():
    b = Builder("mnist_cnn", 101)
    x = b.node("Pad", ["Input3", b.tensor(np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64))])
    x = b.node("Relu", [b.node("Add", [conv(b, x, 1, 8, 5, bias=False), b.randn((8, 1, 1), 0.1)])])
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Pad", [x, b.tensor(np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64))])
    x = b.node("Relu", [b.node("Add", [conv(b, x, 8, 16, 5, bias=False), b.randn((16, 1, 1), 0.1)])])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[3, 3])
    x = b.node("Reshape", [x, b.tensor(np.array([1, 256], np.int64))])
    x = b.node("Add", [b.node("MatMul", [x, b.randn((256, 10), 0.06)]), b.randn((1, 10), 0.1)])
    return b.finish([f32("Input3", [1, 1, 28, 28])], [f32("Plus214_Output_0", [1, 10])],
                    {x: "Plus214_Output_0"})


def resnet18():
    b = Builder("resnet18", 102)

    def block(x, cin, cout, stride):
        y = b.node("Relu", [batchnorm(b, conv(b, x, cin, cout, 3, stride, 1, bias=False), cout)])
        y = batchnorm(b, conv(b, y, cout, cout, 3, 1, 1, bias=False), cout)
        if stride != 1 or cin != cout:
            x = batchnorm(b, conv(b, x, cin, cout, 1, stride, 0, bias=False), cout)
        return b.node("Relu", [b.node("Add", [y, x])])

    x = b.node("Relu", [batchnorm(b, conv(b, "input", 3, 64, 7, 2, 3, bias=False), 64)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        x = block(x, cin, cout, stride)
        x = block(x, cout, cout, 1)
        cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, 512), np.sqrt(1.0 / 512)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def mobilenetv2():
    b = Builder("mobilenetv2", 103)

    def cbr(x, cin, cout, k, stride, group=1, relu6=True):
        y = conv(b, x, cin, cout, k, stride, k // 2, group)
        if relu6:
            y = b.node("Clip", [y, b.tensor(np.array(0, np.float32)), b.tensor(np.array(6, np.float32))])
        return y

    x = cbr("input", 3, 32, 3, 2)
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else cbr(x, cin, hidden, 1, 1)
            y = cbr(y, hidden, hidden, 3, stride, group=hidden)
            y = cbr(y, hidden, c, 1, 1, relu6=False)
            x = b.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = cbr(x, cin, 1280, 1, 1)
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, 1280), np.sqrt(1.0 / 1280)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def scalar(b, v):
    """A float32 scalar initializer; exports write one per use."""
    return b.tensor(np.array(v, np.float32))


def layernorm(b, x, n, eps=1e-12):
    """LayerNorm over the last axis (n wide) as exports before opset 17 spell it:
    ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, then Mul and Add."""
    mean = b.node("ReduceMean", [x], axes=[-1], keepdims=1)
    d = b.node("Sub", [x, mean])
    var = b.node("ReduceMean", [b.node("Pow", [d, scalar(b, 2.0)])], axes=[-1], keepdims=1)
    y = b.node("Div", [d, b.node("Sqrt", [b.node("Add", [var, scalar(b, eps)])])])
    gamma = b.tensor((1 + 0.05 * b.rng.standard_normal(n)).astype(np.float32))
    return b.node("Add", [b.node("Mul", [y, gamma]), b.randn((n,), 0.02)])


def dense(b, x, din, dout):
    """A Linear layer on [.., din] as exports write it: MatMul by [din, dout], Add bias."""
    y = b.node("MatMul", [x, b.randn((din, dout), 0.02 * np.sqrt(768.0 / din))])
    return b.node("Add", [y, b.randn((dout,), 0.02)])


def gelu_erf(b, x):
    """torch's exact GELU: x * (Erf(x / sqrt(2)) + 1) * 0.5."""
    g = b.node("Erf", [b.node("Div", [x, scalar(b, 1.4142135381698608)])])
    return b.node("Mul", [b.node("Mul", [x, b.node("Add", [g, scalar(b, 1.0)])]), scalar(b, 0.5)])


def head_shapes(b, seq, heads, hidden):
    """The Reshape targets that split [batch, seq, hidden] into heads and merge
    them back (0 keeps the batch)."""
    split = b.tensor(np.array([0, seq, heads, hidden // heads], np.int64))
    merge = b.tensor(np.array([0, seq, hidden], np.int64))
    return split, merge


def split_heads(b, t, split, perm):
    """Transpose(Reshape(t, split), perm): [0, 2, 1, 3] for Q and V, [0, 2, 3, 1] for K."""
    return b.node("Transpose", [b.node("Reshape", [t, split])], perm=perm)


def attend(b, q, k, v, dh, merge, mask=None):
    """Softmax(Q K^T / sqrt(dh) + mask) V over split heads, the heads merged by
    Transpose and Reshape(merge): [batch, seq, hidden], before the output Linear."""
    s = b.node("Div", [b.node("MatMul", [q, k]), scalar(b, np.sqrt(dh))])
    p = b.node("Softmax", [s if mask is None else b.node("Add", [s, mask])], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    return b.node("Reshape", [ctx, merge])


def bert(name, seed, vocab=30522, hidden=128, heads=2, layers=2, ffn=512, seq=128):
    """A BERT encoder (transformers' BertModel, post-LayerNorm) with its pooler."""
    b = Builder(name, seed)
    dh = hidden // heads
    words = b.randn((vocab, hidden), 0.02)
    positions = b.randn((512, hidden), 0.02)
    pos_ids = b.tensor(np.arange(seq, dtype=np.int64).reshape(1, seq))
    e = b.node("Gather", [words, "input_ids"], axis=0)
    e = b.node("Add", [e, b.node("Gather", [positions, pos_ids], axis=0)])
    e = b.node("Add", [e, b.randn((1, hidden), 0.02)])
    h = layernorm(b, e, hidden)
    m = b.node("Unsqueeze", ["attention_mask", b.tensor(np.array([1, 2], np.int64))])
    m = b.node("Cast", [m], to=TensorProto.FLOAT)
    mask = b.node("Mul", [b.node("Sub", [scalar(b, 1.0), m]), scalar(b, -10000.0)])
    split, merge = head_shapes(b, seq, heads, hidden)
    for _ in range(layers):
        q = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 1, 3])
        k = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 3, 1])
        v = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 1, 3])
        a = dense(b, attend(b, q, k, v, dh, merge, mask), hidden, hidden)
        h = layernorm(b, b.node("Add", [a, h]), hidden)
        g = gelu_erf(b, dense(b, h, hidden, ffn))
        h = layernorm(b, b.node("Add", [dense(b, g, ffn, hidden), h]), hidden)
    b.node("Identity", [h], name="last_hidden_state")
    first = b.node("Gather", [h, b.tensor(np.array(0, np.int64))], axis=1)
    pooled = b.node("Tanh", [dense(b, first, hidden, hidden)])
    ids = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", seq])
    return b.finish([ids("input_ids"), ids("attention_mask")],
                    [f32("last_hidden_state", ["batch", seq, hidden]),
                     f32("pooler_output", ["batch", hidden])], {pooled: "pooler_output"})


def bert_tiny():
    return bert("bert_tiny", 104)


def mlp():
    b = Builder("mlp", 105)
    x, sizes = "input", [784, 1024, 1024, 10]
    for i in range(3):
        w = b.randn((sizes[i + 1], sizes[i]), np.sqrt(2.0 / sizes[i]))
        x = b.node("Gemm", [x, w, b.randn((sizes[i + 1],), 0.05)], transB=1)
        if i < 2:
            x = b.node("Relu", [x])
    return b.finish([f32("input", ["N", 784])], [f32("logits", ["N", 10])], {x: "logits"})


MODELS = {"mnist_cnn": mnist_cnn, "resnet18": resnet18, "mobilenetv2": mobilenetv2,
          "bert_tiny": bert_tiny, "mlp": mlp}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out = sys.argv[1]
    unknown = [n for n in sys.argv[2:] if n not in MODELS]
    if unknown:
        sys.exit("gen_models.py: no model named %s (have: %s)"
                 % (unknown[0], " ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        path = os.path.join(out, name + ".onnx")
        tmp = path + ".tmp"
        onnx.save(MODELS[name](), tmp)
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
