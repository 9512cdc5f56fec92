#!/usr/bin/python3
"""Builds model-zoo-sized graphs for measuring compile time (make bench-compile).

usage: gen_zoo.py OUTDIR [NAME...]

  densenet121  DenseNet-121 (growth 32, blocks 6/12/24/16, bottleneck 4x):
               BatchNormalization/Relu/Conv pre-activation layers, each
               concatenated onto its block's running tensor; transitions
               BN/Relu/1x1 Conv/AveragePool; 427 nodes      in [1,3,224,224]
  densenet264  the same with blocks 6/12/64/48; 931 nodes    in [1,3,224,224]
  resnet50     ResNet-50 (bottleneck blocks 3/4/6/3), Conv+BatchNormalization
               +Relu, projection shortcuts; 175 nodes        in [1,3,224,224]
Opset 13, float32, fixed-seed weights; Debian's python3-onnx and numpy only.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import Builder, batchnorm, conv, f32  # noqa: E402


def densenet(name, blocks):
    b = Builder(name, 201)
    growth, bn_size = 32, 4
    x = b.node("Relu", [batchnorm(b, conv(b, "input", 3, 64, 7, 2, 3, bias=False), 64)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for i, layers in enumerate(blocks):
        for _ in range(layers):
            y = b.node("Relu", [batchnorm(b, x, c)])
            y = conv(b, y, c, bn_size * growth, 1, bias=False)
            y = b.node("Relu", [batchnorm(b, y, bn_size * growth)])
            y = conv(b, y, bn_size * growth, growth, 3, 1, 1, bias=False)
            x = b.node("Concat", [x, y], axis=1)
            c += growth
        if i < 3:
            x = b.node("Relu", [batchnorm(b, x, c)])
            x = conv(b, x, c, c // 2, 1, bias=False)
            x = b.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = b.node("Relu", [batchnorm(b, x, c)])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, c), np.sqrt(1.0 / c)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def resnet50():
    b = Builder("resnet50", 202)

    def block(x, cin, mid, stride):
        cout = 4 * mid
        y = b.node("Relu", [batchnorm(b, conv(b, x, cin, mid, 1, bias=False), mid)])
        y = b.node("Relu", [batchnorm(b, conv(b, y, mid, mid, 3, stride, 1, bias=False), mid)])
        y = batchnorm(b, conv(b, y, mid, cout, 1, bias=False), cout)
        if stride != 1 or cin != cout:
            x = batchnorm(b, conv(b, x, cin, cout, 1, stride, 0, bias=False), cout)
        return b.node("Relu", [b.node("Add", [y, x])])

    x = b.node("Relu", [batchnorm(b, conv(b, "input", 3, 64, 7, 2, 3, bias=False), 64)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for mid, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for k in range(n):
            x = block(x, cin, mid, stride if k == 0 else 1)
            cin = 4 * mid
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, cin), np.sqrt(1.0 / cin)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def densenet121():
    return densenet("densenet121", (6, 12, 24, 16))


def densenet264():
    return densenet("densenet264", (6, 12, 64, 48))


MODELS = {"densenet121": densenet121, "densenet264": densenet264, "resnet50": resnet50}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        m = MODELS[name]()
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        print("%s: %d nodes" % (name, len(m.graph.node)))


if __name__ == "__main__":
    main()
