#!/usr/bin/python3
"""Builds the tests of ONNX Runtime's contrib ops (com.microsoft; tests/contrib.sh).

usage: gen_contrib_tests.py OUTDIR      (the committed data is testdata/contrib)

Needs onnxruntime (with its transformers optimizer and sympy), onnx and numpy,
which the tests themselves do not: the expected outputs are ONNX Runtime's,
computed here once and committed. Writes, in the layout of testdata/nodetest.py:
  OUTDIR/good/NAME   one contrib op per model (or a few forms of one), random
      inputs, ONNX Runtime's outputs; and bert_optimized: a 2-layer BERT
      written as a PyTorch export spells it (gen_models.py's pieces; token
      types, positions from Shape/Range/Expand, mask Unsqueeze twice), run
      through onnxruntime.transformers.optimizer.optimize_model(model_type
      'bert'), which writes EmbedLayerNormalization, Attention (its mask a
      1-D mask_index), SkipLayerNormalization and BiasGelu; gpt2_optimized:
      gen_zoo.py's GPT-2, small, through its 'gpt2' fusions (SkipLayerNormalization
      with input_skip_bias_sum, FastGelu); then GroupQueryAttention (its cache as
      concatenation, padding, rotary) and Attention's and MultiHeadAttention's
      past/present, whose random inputs come last so that the data of the
      cases before stays as it was
  OUTDIR/bad/NAME    contrib models collagec must refuse, with the message
BiasAdd, which ONNX Runtime runs on CUDA only, is checked against numpy.
Deterministic for a given onnxruntime (1.32 wrote the committed data).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodetest  # noqa: E402
from gen_models import (Builder, attend, dense, f32, gelu_erf, head_shapes,  # noqa: E402
                        layernorm, scalar, split_heads)

import onnxruntime as ort  # noqa: E402

MS = "com.microsoft"
RNG = np.random.default_rng(33)
GOOD = []
BAD = []


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, inputs, outputs, inits=(), opset=17):
    """inputs: {name: array} (graph inputs); inits: {name: array} (initializers)."""
    def info(name, a):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    g = helper.make_graph(nodes, "contrib", [info(k, v) for k, v in inputs.items()],
                          [helper.make_empty_tensor_value_info(o) for o in outputs],
                          [numpy_helper.from_array(v, k) for k, v in dict(inits).items()])
    m = helper.make_model(g, producer_name="collagec-testdata",
                          opset_imports=[helper.make_opsetid("", opset),
                                         helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def run_ort(m, inputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, inputs)))


def good(name, nodes, inputs, outputs, inits=(), opset=17, expect=None):
    """expect: the outputs computed here, for an op ONNX Runtime has no CPU kernel of."""
    m = model(nodes, inputs, outputs, inits, opset)
    GOOD.append((name, m, inputs, expect or run_ort(m, inputs)))


def bad(name, nodes, inputs, outputs, expect, inits=(), opset=17):
    BAD.append((name, model(nodes, inputs, outputs, inits, opset), expect))


def ms(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, domain=MS, name=op.lower(), **attrs)


def norms():
    x, skip = rand(2, 3, 8), rand(2, 3, 8)
    w = {"gamma": rand(8) + 1, "beta": rand(8), "bias": rand(8)}
    good("skip_layer_norm", [ms("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                                ["y", "", "", "sum"], epsilon=1e-5)],
         {"x": x, "skip": skip}, ["y", "sum"], w)
    good("skip_layer_norm_mean", [ms("SkipLayerNormalization", ["x", "skip", "gamma"],
                                     ["y", "mean", "inv_std_var"])],
         {"x": x, "skip": skip}, ["y", "mean", "inv_std_var"], {"gamma": w["gamma"]})
    good("skip_layer_norm_broadcast", [ms("SkipLayerNormalization",
                                          ["x", "skip1", "gamma", "beta"], ["y"])],
         {"x": x, "skip1": rand(3, 8)}, ["y"], {"gamma": w["gamma"], "beta": w["beta"]})
    good("skip_simplified_layer_norm", [ms("SkipSimplifiedLayerNormalization",
                                           ["x", "skip", "gamma", "bias"],
                                           ["y", "", "", "sum"], epsilon=1e-6)],
         {"x": x, "skip": skip}, ["y", "sum"], {"gamma": w["gamma"], "bias": w["bias"]})
    good("simplified_layer_norm", [helper.make_node("SimplifiedLayerNormalization",
                                                    ["x", "gamma"], ["y"], epsilon=1e-6,
                                                    axis=-1)],
         {"x": x}, ["y"], {"gamma": w["gamma"]})
    good("layer_norm_opset13", [helper.make_node("LayerNormalization", ["x", "gamma", "beta"],
                                                 ["y"], epsilon=1e-12)],
         {"x": x}, ["y"], {"gamma": w["gamma"], "beta": w["beta"]}, opset=13)


def activations():
    x, b = rand(2, 5, 16, scale=2.0), rand(16)
    good("fast_gelu", [ms("FastGelu", ["x", "b"], ["y"])], {"x": x}, ["y"], {"b": b})
    good("fast_gelu_nobias", [ms("FastGelu", ["x"], ["y"])], {"x": x}, ["y"])
    good("bias_gelu", [ms("BiasGelu", ["x", "b"], ["y"])], {"x": x}, ["y"], {"b": b})
    good("gelu", [ms("Gelu", ["x"], ["y"])], {"x": x}, ["y"])
    good("quick_gelu", [ms("QuickGelu", ["x"], ["y"])], {"x": x}, ["y"])
    good("quick_gelu_alpha", [ms("QuickGelu", ["x"], ["y"], alpha=1.5)], {"x": x}, ["y"])
    skip = rand(2, 5, 16)
    good("bias_add", [ms("BiasAdd", ["x", "b", "skip"], ["y"])],
         {"x": x, "skip": skip}, ["y"], {"b": b}, expect={"y": x + b + skip})


def matmuls():
    a, b = rand(2, 4, 3), rand(2, 5, 4)
    good("fused_matmul", [ms("FusedMatMul", ["a", "b"], ["y"], alpha=0.5, transA=1, transB=1)],
         {"a": a, "b": b}, ["y"])
    good("fused_matmul_bcast", [ms("FusedMatMul", ["a", "w"], ["y"], transB=1)],
         {"a": rand(2, 3, 4, 6)}, ["y"], {"w": rand(5, 6)})
    # the input's rank is not known at import: Einsum swaps its axes
    good("fused_matmul_einsum", [helper.make_node("Relu", ["a"], ["r"]),
                                 ms("FusedMatMul", ["r", "b"], ["y"], transA=1, alpha=2.0)],
         {"a": rand(2, 5, 3), "b": rand(2, 5, 4)}, ["y"])


def embed():
    ids = RNG.integers(0, 30, (2, 7)).astype(np.int32)
    seg = (np.arange(14).reshape(2, 7) % 7 >= 4).astype(np.int32)
    mask = np.ones((2, 7), np.int32)
    mask[1, 5:] = 0
    w = {"word": rand(30, 16, scale=0.1), "pos": rand(12, 16, scale=0.1),
         "seg_emb": rand(2, 16, scale=0.1), "gamma": rand(16) + 1, "beta": rand(16)}
    good("embed_layer_norm", [ms("EmbedLayerNormalization",
                                 ["ids", "seg", "word", "pos", "seg_emb", "gamma", "beta",
                                  "mask"], ["y", "mask_index", "sum"], epsilon=1e-5)],
         {"ids": ids, "seg": seg, "mask": mask}, ["y", "mask_index", "sum"], w)
    pos_ids = np.array([[3, 2, 1, 0, 4, 5, 6]] * 2, np.int32)
    w2 = {k: w[k] for k in ("word", "pos", "gamma", "beta")}
    good("embed_layer_norm_position_ids",
         [ms("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta", "",
                                         "pos_ids"], ["y", "mask_index"])],
         {"ids": ids, "pos_ids": pos_ids}, ["y", "mask_index"], w2)


def attention():
    b, s, hid, n = 2, 6, 16, 2
    x = rand(b, s, hid)
    w = {"w": rand(hid, 3 * hid, scale=0.3), "bias": rand(3 * hid, scale=0.1)}
    mask2 = np.ones((b, s), np.int32)
    mask2[1, 4:] = 0
    ends = np.array([6, 3], np.int32)
    mask3 = (RNG.random((b, s, s)) > 0.3).astype(np.int32)
    mask3[:, :, 0] = 1
    good("attention", [ms("Attention", ["x", "w", "bias"], ["y"], num_heads=n)],
         {"x": x}, ["y"], w)
    good("attention_mask2d", [ms("Attention", ["x", "w", "bias", "m"], ["y"], num_heads=n)],
         {"x": x, "m": mask2}, ["y"], w)
    good("attention_mask1d", [ms("Attention", ["x", "w", "bias", "m"], ["y"], num_heads=n)],
         {"x": x, "m": ends}, ["y"], w)
    good("attention_mask3d", [ms("Attention", ["x", "w", "bias", "m"], ["y"], num_heads=n,
                                 mask_filter_value=-1e9, scale=0.3)],
         {"x": x, "m": mask3}, ["y"], w)
    good("attention_bias", [ms("Attention", ["x", "w", "bias", "", "", "ab"], ["y"],
                               num_heads=n)],
         {"x": x, "ab": rand(1, n, s, s)}, ["y"], w)
    wv = {"w": rand(hid, 2 * hid + 8, scale=0.3), "bias": rand(2 * hid + 8, scale=0.1)}
    good("attention_qkv_sizes", [ms("Attention", ["x", "w", "bias", "m"], ["y"], num_heads=n,
                                    qkv_hidden_sizes=[hid, hid, 8])],
         {"x": x, "m": mask2}, ["y"], wv)
    bad("attention_share_buffer", [ms("Attention", ["x", "w", "bias", "", "past"],
                                      ["y", "present"], num_heads=n, past_present_share_buffer=1)],
        {"x": x, "past": rand(2, b, n, 3, hid // n)}, ["y", "present"],
        "past_sequence_length and past_present_share_buffer (a shared key/value buffer) are "
        "not supported", w)
    good("attention_unidirectional", [ms("Attention", ["x", "w", "bias", "m"], ["y"],
                                         num_heads=n, unidirectional=1)],
         {"x": x, "m": mask2}, ["y"], w)


def mha():
    b, s, l, hid, n = 2, 5, 7, 16, 4
    q, k, v = rand(b, s, hid), rand(b, l, hid), rand(b, l, 8)
    kpm = np.ones((b, l), np.int32)
    kpm[0, 5:] = 0
    good("multi_head_attention", [ms("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=n)],
         {"q": q, "k": k, "v": v}, ["y"])
    good("multi_head_attention_bias_mask",
         [ms("MultiHeadAttention", ["q", "k", "v2", "bias", "kpm"], ["y"], num_heads=n)],
         {"q": q, "k": k, "v2": rand(b, l, hid), "kpm": kpm}, ["y"],
         {"bias": rand(3 * hid, scale=0.3)})
    good("multi_head_attention_attn_bias",
         [ms("MultiHeadAttention", ["q", "k", "v", "", "", "ab"], ["y"], num_heads=n, scale=0.2)],
         {"q": q, "k": k, "v": v, "ab": rand(b, 1, s, l)}, ["y"])
    qs = rand(b, s, hid)
    good("multi_head_attention_causal",
         [ms("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=n, unidirectional=1)],
         {"q": qs, "k": rand(b, s, hid), "v": rand(b, s, hid)}, ["y"])
    bad("multi_head_attention_packed", [ms("MultiHeadAttention", ["qkv"], ["y"], num_heads=n)],
        {"qkv": rand(b, s, n, 3, 4)}, ["y"], "packed Q/K/V (no 'key' or 'value') is not supported")


def rotary():
    b, n, s, h, maxpos = 2, 2, 5, 8, 16
    pos = np.arange(maxpos)[:, None] * (1.0 / 10000 ** (np.arange(0, h, 2) / h))[None, :]
    cache = {"cos": np.cos(pos).astype(np.float32), "sin": np.sin(pos).astype(np.float32)}
    pid = np.array([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]], np.int64)
    good("rotary_embedding", [ms("RotaryEmbedding", ["x", "pid", "cos", "sin"], ["y"])],
         {"x": rand(b, n, s, h), "pid": pid}, ["y"], cache)
    good("rotary_embedding_3d_interleaved",
         [ms("RotaryEmbedding", ["x", "pid", "cos", "sin"], ["y"], num_heads=n, interleaved=1)],
         {"x": rand(b, s, n * h), "pid": pid}, ["y"], cache)
    half = {k: v[:, :2] for k, v in cache.items()}
    good("rotary_embedding_partial",
         [ms("RotaryEmbedding", ["x", "pid", "cos", "sin"], ["y"], rotary_embedding_dim=4,
             num_heads=n)],
         {"x": rand(b, s, n * h), "pid": pid}, ["y"], half)
    bad("rotary_embedding_offset", [ms("RotaryEmbedding", ["x", "off", "cos", "sin"], ["y"])],
        {"x": rand(b, n, s, h), "off": np.array([2], np.int64)}, ["y"],
        "position_ids must be [batch, seq] (an offset of shape [1] is not supported)", cache)


def gqa():
    b, s, n, nkv, h, p = 2, 3, 4, 2, 16, 4
    q, k, v = rand(b, s, n * h), rand(b, s, nkv * h), rand(b, s, nkv * h)
    pk, pv = rand(b, nkv, p, h), rand(b, nkv, p, h)
    full = np.full(b, p + s - 1, np.int32)
    total = np.array(p + s, np.int32)
    ins = ["q", "k", "v", "pk", "pv", "seqlens", "total"]
    outs = ["y", "present_key", "present_value"]
    # ORT takes a past with more than one new token only at batch 1
    good("group_query_attention", [ms("GroupQueryAttention", ins, outs, num_heads=n,
                                      kv_num_heads=nkv)],
         {"q": q[:1], "k": k[:1], "v": v[:1], "pk": pk[:1], "pv": pv[:1], "seqlens": full[:1],
          "total": total}, outs)
    q1, k1, v1 = q[:, :1], k[:, :1], v[:, :1]
    full1, total1 = np.full(b, p, np.int32), np.array(p + 1, np.int32)
    good("group_query_attention_decode", [ms("GroupQueryAttention", ins, outs, num_heads=n,
                                             kv_num_heads=nkv)],
         {"q": q1, "k": k1, "v": v1, "pk": pk, "pv": pv, "seqlens": full1, "total": total1},
         outs)
    good("group_query_attention_prompt",
         [ms("GroupQueryAttention", ["q", "k", "v", "", "", "seqlens", "total"], outs,
             num_heads=n, kv_num_heads=nkv, scale=0.25, softcap=3.0)],
         {"q": q, "k": k, "v": v, "seqlens": np.array([s - 1, s - 2], np.int32),
          "total": np.array(s, np.int32)}, outs)
    pos = np.arange(16)[:, None] * (1.0 / 10000 ** (np.arange(0, h, 2) / h))[None, :]
    cache = {"cos": np.cos(pos).astype(np.float32), "sin": np.sin(pos).astype(np.float32)}
    good("group_query_attention_rotary",
         [ms("GroupQueryAttention", ins + ["cos", "sin"], outs, num_heads=n, kv_num_heads=nkv,
             do_rotary=1)],
         {"q": q1, "k": k1, "v": v1, "pk": pk, "pv": pv, "seqlens": full1, "total": total1},
         outs, cache)
    bad("group_query_attention_packed",
        [ms("GroupQueryAttention", ["q", "", "", "", "", "seqlens", "total"], ["y"], num_heads=n,
            kv_num_heads=nkv)],
        {"q": rand(b, s, (n + 2 * nkv) * h), "seqlens": full, "total": total}, ["y"],
        "packed Q/K/V (no 'key' or 'value') is not supported")


def attention_cache():
    """Attention's and MultiHeadAttention's past and present, drawn after the rest."""
    b, s, hid, n, p = 2, 3, 16, 2, 4
    x = rand(b, s, hid)
    w = {"w": rand(hid, 3 * hid, scale=0.3), "bias": rand(3 * hid, scale=0.1)}
    past = rand(2, b, n, p, hid // n)
    mask = np.ones((b, p + s), np.int32)
    mask[1, :2] = 0
    good("attention_past", [ms("Attention", ["x", "w", "bias", "m", "past"], ["y", "present"],
                               num_heads=n, unidirectional=1)],
         {"x": x, "m": mask, "past": past}, ["y", "present"], w)
    good("attention_present", [ms("Attention", ["x", "w", "bias"], ["y", "present"],
                                  num_heads=n)],
         {"x": x}, ["y", "present"], w)
    q, k, v = rand(b, s, hid), rand(b, s, hid), rand(b, s, hid)
    pk, pv = rand(b, n, p, hid // n), rand(b, n, p, hid // n)
    outs = ["y", "present_key", "present_value"]
    good("multi_head_attention_past",
         [ms("MultiHeadAttention", ["q", "k", "v", "", "m", "", "pk", "pv"], outs, num_heads=n,
             unidirectional=1)],
         {"q": q, "k": k, "v": v, "m": mask, "pk": pk, "pv": pv}, outs)
    good("multi_head_attention_present",
         [ms("MultiHeadAttention", ["q", "k", "v"], outs, num_heads=n)],
         {"q": q, "k": k, "v": v}, outs)


def refused():
    x = rand(2, 3, 8)
    bad("unknown_op", [ms("Inverse", ["x"], ["y"])], {"x": rand(3, 3)}, ["y"],
        "com.microsoft op 'Inverse' is not supported")
    bad("unknown_attribute", [ms("FastGelu", ["x"], ["y"], approximate="tanh")], {"x": x},
        ["y"], "attribute 'approximate' is not supported")
    bad("skip_simplified_inv_std", [ms("SkipSimplifiedLayerNormalization", ["x", "x", "g"],
                                       ["y", "", "inv"])],
        {"x": x}, ["y", "inv"], "output 2 'inv_std_var' is not supported", {"g": rand(8)})
    bad("fused_matmul_trans_batch", [ms("FusedMatMul", ["x", "x"], ["y"], transBatchA=1)],
        {"x": x}, ["y"], "transBatchA and transBatchB are not supported")


def bert_export(name="bert_contrib", seed=33, vocab=96, hidden=32, heads=2, layers=2, ffn=64,
                seq=16, types=2):
    """A small BERT as a PyTorch export writes it, which ORT's optimizer fuses whole."""
    b = Builder(name, seed)
    words = b.randn((vocab, hidden), 0.02)
    positions = b.randn((seq, hidden), 0.02)
    tokens = b.randn((types, hidden), 0.02)
    sh = b.node("Shape", ["input_ids"])
    s1 = b.node("Gather", [sh, b.tensor(np.array(1, np.int64))], axis=0)
    r = b.node("Range", [b.tensor(np.array(0, np.int64)), s1, b.tensor(np.array(1, np.int64))])
    pos_ids = b.node("Expand", [b.node("Unsqueeze", [r, b.tensor(np.array([0], np.int64))]), sh])
    e = b.node("Add", [b.node("Gather", [words, "input_ids"], axis=0),
                       b.node("Gather", [tokens, "token_type_ids"], axis=0)])
    e = b.node("Add", [e, b.node("Gather", [positions, pos_ids], axis=0)])
    h = layernorm(b, e, hidden)
    m = b.node("Unsqueeze", ["attention_mask", b.tensor(np.array([1], np.int64))])
    m = b.node("Unsqueeze", [m, b.tensor(np.array([2], np.int64))])
    m = b.node("Cast", [m], to=TensorProto.FLOAT)
    mask = b.node("Mul", [b.node("Sub", [scalar(b, 1.0), m]), scalar(b, -10000.0)])
    split, merge = head_shapes(b, seq, heads, hidden)
    for _ in range(layers):
        q = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 1, 3])
        k = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 3, 1])
        v = split_heads(b, dense(b, h, hidden, hidden), split, [0, 2, 1, 3])
        a = dense(b, attend(b, q, k, v, hidden // heads, merge, mask), hidden, hidden)
        h = layernorm(b, b.node("Add", [a, h]), hidden)
        g = gelu_erf(b, dense(b, h, hidden, ffn))
        h = layernorm(b, b.node("Add", [dense(b, g, ffn, hidden), h]), hidden)
    b.node("Identity", [h], name="last_hidden_state")
    first = b.node("Gather", [h, b.tensor(np.array(0, np.int64))], axis=1)
    pooled = b.node("Tanh", [dense(b, first, hidden, hidden)])
    ids = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", seq])
    return b.finish([ids("input_ids"), ids("token_type_ids"), ids("attention_mask")],
                    [f32("last_hidden_state", ["batch", seq, hidden]),
                     f32("pooler_output", ["batch", hidden])], {pooled: "pooler_output"})


def bert_optimized(tmp):
    from onnxruntime.transformers.optimizer import optimize_model
    import logging
    logging.disable(logging.WARNING)
    src = os.path.join(tmp, "bert_export.onnx")
    onnx.save(bert_export(), src)
    opt = optimize_model(src, model_type="bert", num_heads=2, hidden_size=32, opt_level=0)
    m = opt.model
    ops = sorted({n.op_type for n in m.graph.node if n.domain == MS})
    want = ["Attention", "BiasGelu", "EmbedLayerNormalization", "SkipLayerNormalization"]
    if ops != want:
        sys.exit("gen_contrib_tests.py: the optimizer wrote %s, not %s" % (ops, want))
    ids = RNG.integers(0, 96, (2, 16)).astype(np.int64)
    types = (np.arange(32).reshape(2, 16) % 16 >= 9).astype(np.int64)
    mask = np.ones((2, 16), np.int64)
    mask[1, 11:] = 0
    inputs = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
    GOOD.append(("bert_optimized", m, inputs, run_ort(m, inputs)))


def gpt2_optimized(tmp):
    """gen_zoo.py's GPT-2 (pre-LayerNorm, tanh GELU) at a small size through the
    optimizer's 'gpt2' fusions: SkipLayerNormalization with its
    input_skip_bias_sum output, FastGelu."""
    from onnxruntime.transformers.optimizer import optimize_model
    import gen_zoo
    src = os.path.join(tmp, "gpt2_export.onnx")
    onnx.save(gen_zoo.gpt2(vocab=96, hidden=32, heads=2, layers=2, ffn=64, seq=16), src)
    m = optimize_model(src, model_type="gpt2", num_heads=2, hidden_size=32, opt_level=0).model
    ops = sorted({n.op_type for n in m.graph.node if n.domain == MS})
    if ops != ["FastGelu", "SkipLayerNormalization"]:
        sys.exit("gen_contrib_tests.py: the optimizer wrote %s for GPT-2" % ops)
    inputs = {"input_ids": RNG.integers(0, 96, (2, 16)).astype(np.int64)}
    GOOD.append(("gpt2_optimized", m, inputs, run_ort(m, inputs)))
    os.remove(src)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_contrib_tests.py OUTDIR")
    norms()
    activations()
    matmuls()
    embed()
    attention()
    mha()
    rotary()
    refused()
    os.makedirs(sys.argv[1], exist_ok=True)
    bert_optimized(sys.argv[1])
    gpt2_optimized(sys.argv[1])
    gqa()
    attention_cache()
    nodetest.write(sys.argv[1], GOOD, BAD)
    os.remove(os.path.join(sys.argv[1], "bert_export.onnx"))


main()
