#!/usr/bin/python3
"""Builds model-zoo-sized graphs, written the way torch.onnx, torchvision and
transformers exports look, for measuring compile time and search (make
bench-compile, make bench-search).

usage: gen_zoo.py OUTDIR [NAME...]   (no NAME: every model; it prints each
                                      one's nodes and weight bytes)

  densenet121  DenseNet-121 (growth 32, blocks 6/12/24/16, bottleneck 4x):
               BatchNormalization/Relu/Conv pre-activation layers, each
               concatenated onto its block's running tensor; transitions
               BN/Relu/1x1 Conv/AveragePool; 427 nodes, 32 MB  in [1,3,224,224]
  densenet264  the same with blocks 6/12/64/48; 931 nodes, 135 MB
                                                               in [1,3,224,224]
  resnet50     ResNet-50 (bottleneck blocks 3/4/6/3), Conv+BatchNormalization
               +Relu, projection shortcuts; 175 nodes, 102 MB  in [1,3,224,224]
  efficientnet_b0  EfficientNet-B0 (torchvision): MBConv blocks, depthwise
               Conv, squeeze-excitation (GlobalAveragePool, 1x1 Convs, Sigmoid,
               Mul), SiLU as x*Sigmoid(x), BN folded into Conv bias, Flatten,
               Gemm; 239 nodes, 21 MB                          in [1,3,224,224]
  mobilenet_v3_large  MobileNetV3-Large (torchvision): inverted residuals,
               depthwise 3x3 and 5x5, Hardswish as x*HardSigmoid(x), Relu,
               squeeze-excitation with HardSigmoid, two Gemms; 161 nodes, 22 MB
                                                               in [1,3,224,224]
  bert_base    BERT-Base (vocab 30522, 12 layers, hidden 768, 12 heads, FFN
               3072, seq 128): gen_models.py's bert_tiny at this size, with
               its Gather embeddings, spelled LayerNorm, erf GELU, attention
               mask and pooler; 622 nodes, 438 MB
                                  in input_ids, attention_mask int64 [batch,128]
  gpt2         GPT-2 124M (vocab 50257, 12 layers, hidden 768, 12 heads, seq
               128, no past key/values): token and position Gathers, pre-LN
               layers, fused QKV MatMul + Split, a constant causal mask added
               before Softmax, tanh GELU (Pow/Mul/Add/Tanh), final LayerNorm,
               LM head tied to the token embedding (MatMul by its Transpose,
               [768,50257]); 614 nodes, 498 MB   in input_ids int64 [batch,128]
  vit_base     ViT-B/16: 16x16 stride-16 patch Conv to 768 channels, Reshape and
               Transpose to tokens, class-token Concat, position Add, 12 pre-LN
               layers (12 heads, erf GELU MLP 3072), final LayerNorm, Gather
               of the class token, Gemm to 1000; 604 nodes, 346 MB
                                                               in [1,3,224,224]
Opset 13, float32, fixed-seed random weights; Debian's python3-onnx and numpy only.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx import TensorProto, helper  # noqa: E402
from gen_models import (Builder, attend, batchnorm, bert, conv, dense, f32,  # noqa: E402
                        gelu_erf, head_shapes, layernorm, scalar, split_heads)


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


def efficientnet_b0():
    """torchvision's EfficientNet-B0 as torch.onnx exports it: BatchNormalization
    folded into each Conv's bias, SiLU as x * Sigmoid(x), dropout and stochastic
    depth gone (eval mode)."""
    b = Builder("efficientnet_b0", 203)
    silu = lambda x: b.node("Mul", [x, b.node("Sigmoid", [x])])
    x = silu(conv(b, "input", 3, 32, 3, 2, 1))
    cin = 32
    # expand ratio, kernel, stride, out channels, layers
    for t, k, s, c, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden, squeeze = cin * t, max(1, cin // 4)
            y = x if t == 1 else silu(conv(b, x, cin, hidden, 1))
            y = silu(conv(b, y, hidden, hidden, k, stride, k // 2, group=hidden))
            se = silu(conv(b, b.node("GlobalAveragePool", [y]), hidden, squeeze, 1))
            y = b.node("Mul", [y, b.node("Sigmoid", [conv(b, se, squeeze, hidden, 1)])])
            y = conv(b, y, hidden, c, 1)
            x = b.node("Add", [y, x]) if stride == 1 and cin == c else y
            cin = c
    x = silu(conv(b, x, cin, 1280, 1))
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, 1280), np.sqrt(1.0 / 1280)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def mobilenet_v3_large():
    """torchvision's MobileNetV3-Large as torch.onnx exports it at opset 13:
    BatchNormalization folded into each Conv's bias, Hardswish as
    x * HardSigmoid(x) (alpha 1/6), squeeze-excitation as GlobalAveragePool,
    1x1 Conv, Relu, 1x1 Conv, HardSigmoid, Mul; dropout gone (eval mode)."""
    b = Builder("mobilenet_v3_large", 204)
    hs = lambda x: b.node("Mul", [x, b.node("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])
    relu = lambda x: b.node("Relu", [x])

    def divisible(v):
        n = max(8, int(v + 4) // 8 * 8)
        return n + 8 if n < 0.9 * v else n

    x = hs(conv(b, "input", 3, 16, 3, 2, 1))
    # in, kernel, expanded, out, squeeze-excitation, Hardswish, stride
    for cin, k, e, c, se, use_hs, s in (
            (16, 3, 16, 16, 0, 0, 1), (16, 3, 64, 24, 0, 0, 2), (24, 3, 72, 24, 0, 0, 1),
            (24, 5, 72, 40, 1, 0, 2), (40, 5, 120, 40, 1, 0, 1), (40, 5, 120, 40, 1, 0, 1),
            (40, 3, 240, 80, 0, 1, 2), (80, 3, 200, 80, 0, 1, 1), (80, 3, 184, 80, 0, 1, 1),
            (80, 3, 184, 80, 0, 1, 1), (80, 3, 480, 112, 1, 1, 1), (112, 3, 672, 112, 1, 1, 1),
            (112, 5, 672, 160, 1, 1, 2), (160, 5, 960, 160, 1, 1, 1),
            (160, 5, 960, 160, 1, 1, 1)):
        act = hs if use_hs else relu
        y = x if e == cin else act(conv(b, x, cin, e, 1))
        y = act(conv(b, y, e, e, k, s, k // 2, group=e))
        if se:
            sq = divisible(e // 4)
            g = relu(conv(b, b.node("GlobalAveragePool", [y]), e, sq, 1))
            g = b.node("HardSigmoid", [conv(b, g, sq, e, 1)], alpha=1.0 / 6, beta=0.5)
            y = b.node("Mul", [g, y])
        y = conv(b, y, e, c, 1)
        x = b.node("Add", [y, x]) if s == 1 and cin == c else y
    x = hs(conv(b, x, 160, 960, 1))
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = hs(b.node("Gemm", [x, b.randn((1280, 960), np.sqrt(1.0 / 960)), b.randn((1280,), 0.01)],
                  transB=1))
    x = b.node("Gemm", [x, b.randn((1000, 1280), np.sqrt(1.0 / 1280)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def gelu_tanh(b, x):
    """GPT-2's GELU (transformers' NewGELUActivation) as exported:
    0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * Pow(x, 3))))."""
    cube = b.node("Mul", [b.node("Pow", [x, scalar(b, 3.0)]), scalar(b, 0.044715)])
    t = b.node("Tanh", [b.node("Mul", [b.node("Add", [x, cube]), scalar(b, 0.7978845608028654)])])
    return b.node("Mul", [b.node("Mul", [x, scalar(b, 0.5)]), b.node("Add", [t, scalar(b, 1.0)])])


def pre_ln_layer(b, x, hidden, heads, ffn, shapes, eps, gelu, fused_qkv=False, mask=None):
    """A pre-LayerNorm transformer layer (GPT-2, ViT): x + attention(LN(x)), then
    x + MLP(LN(x)). fused_qkv: one [hidden, 3 hidden] Linear and a Split, as GPT-2's
    Conv1D c_attn exports; otherwise three Linears."""
    split, merge = shapes
    h = layernorm(b, x, hidden, eps)
    if fused_qkv:
        qkv = dense(b, h, hidden, 3 * hidden)
        q, k, v = b.node("Split", [qkv, b.tensor(np.array([hidden] * 3, np.int64))], outputs=3,
                         axis=2)
    else:
        q, k, v = (dense(b, h, hidden, hidden) for _ in range(3))
    q = split_heads(b, q, split, [0, 2, 1, 3])
    k = split_heads(b, k, split, [0, 2, 3, 1])
    v = split_heads(b, v, split, [0, 2, 1, 3])
    x = b.node("Add", [x, dense(b, attend(b, q, k, v, hidden // heads, merge, mask), hidden,
                                hidden)])
    h = gelu(b, dense(b, layernorm(b, x, hidden, eps), hidden, ffn))
    return b.node("Add", [x, dense(b, h, ffn, hidden)])


def gpt2(vocab=50257, hidden=768, heads=12, layers=12, ffn=3072, seq=128):
    """GPT-2 (124M) as transformers exports GPT2LMHeadModel without past key/values:
    the LM head tied to the token embedding (MatMul by its Transpose)."""
    b = Builder("gpt2", 205)
    wte = b.randn((vocab, hidden), 0.02)
    pos_ids = b.tensor(np.arange(seq, dtype=np.int64).reshape(1, seq))
    x = b.node("Add", [b.node("Gather", [wte, "input_ids"], axis=0),
                       b.node("Gather", [b.randn((1024, hidden), 0.02), pos_ids], axis=0)])
    causal = np.triu(np.full((seq, seq), -10000.0, np.float32), 1).reshape(1, 1, seq, seq)
    mask = b.tensor(causal)
    shapes = head_shapes(b, seq, heads, hidden)
    for _ in range(layers):
        x = pre_ln_layer(b, x, hidden, heads, ffn, shapes, 1e-5, gelu_tanh, fused_qkv=True,
                         mask=mask)
    x = layernorm(b, x, hidden, 1e-5)
    logits = b.node("MatMul", [x, b.node("Transpose", [wte], perm=[1, 0])])
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", seq])
    return b.finish([ids], [f32("logits", ["batch", seq, vocab])], {logits: "logits"})


def vit_base(hidden=768, heads=12, layers=12, ffn=3072, patch=16):
    """ViT-B/16 (transformers' ViTForImageClassification): patch Conv, flattened
    and transposed to tokens, class token and position embedding, pre-LN layers
    with erf GELU, final LayerNorm, the class token's Gemm to 1000."""
    b = Builder("vit_base", 206)
    tokens = (224 // patch) ** 2
    x = conv(b, "input", 3, hidden, patch, patch)
    x = b.node("Reshape", [x, b.tensor(np.array([1, hidden, tokens], np.int64))])
    x = b.node("Transpose", [x], perm=[0, 2, 1])
    x = b.node("Concat", [b.randn((1, 1, hidden), 0.02), x], axis=1)
    x = b.node("Add", [x, b.randn((1, tokens + 1, hidden), 0.02)])
    shapes = head_shapes(b, tokens + 1, heads, hidden)
    for _ in range(layers):
        x = pre_ln_layer(b, x, hidden, heads, ffn, shapes, 1e-12, gelu_erf)
    x = layernorm(b, x, hidden, 1e-12)
    x = b.node("Gather", [x, b.tensor(np.array(0, np.int64))], axis=1)
    x = b.node("Gemm", [x, b.randn((1000, hidden), np.sqrt(1.0 / hidden)), b.randn((1000,), 0.01)],
               transB=1)
    return b.finish([f32("input", [1, 3, 224, 224])], [f32("output", [1, 1000])], {x: "output"})


def bert_base():
    return bert("bert_base", 204, hidden=768, heads=12, layers=12, ffn=3072)


def densenet121():
    return densenet("densenet121", (6, 12, 24, 16))


def densenet264():
    return densenet("densenet264", (6, 12, 64, 48))


MODELS = {"densenet121": densenet121, "densenet264": densenet264, "resnet50": resnet50,
          "efficientnet_b0": efficientnet_b0, "mobilenet_v3_large": mobilenet_v3_large,
          "bert_base": bert_base, "gpt2": gpt2,
          "vit_base": vit_base}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out = sys.argv[1]
    unknown = [n for n in sys.argv[2:] if n not in MODELS]
    if unknown:
        sys.exit("gen_zoo.py: no model named %s (have: %s)" % (unknown[0], " ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        m = MODELS[name]()
        path = os.path.join(out, name + ".onnx")
        with open(path + ".tmp", "wb") as f:
            f.write(m.SerializeToString())
        os.replace(path + ".tmp", path)
        weights = sum(len(t.raw_data) for t in m.graph.initializer)
        print("%s: %d nodes, %d bytes of weights" % (name, len(m.graph.node), weights))


if __name__ == "__main__":
    main()
