#!/usr/bin/python3
"""Builds the node tests of Attention-23 that ONNX's own node tests
(testdata/attention/onnx) leave out, for tests/attention.sh.

usage: gen_attention_tests.py OUTDIR

Writes, in the ONNX backend-test layout that `collagec conformance` reads:
  OUTDIR/good/NAME       float32 and float64 models: the KV cache
      (past_key/past_value in, present_key/present_value out) with every
      mask form and is_causal, qk_matmul_output in each of its four modes,
      GQA on 3-D and 4-D inputs, softcap, scale, softmax_precision,
      numeric and bool masks of every rank, masks shorter than the total
      sequence, fully masked rows
  OUTDIR/half/NAME       float16 and bfloat16 models whose expected outputs
      are the float64 result rounded once to the 16-bit type (to be matched
      exactly: collagec computes in float32 and rounds at the outputs), on
      inputs drawn so that no output lies within float32's error of a
      rounding midpoint (ambiguous())
  OUTDIR/bad/NAME        models collagec must refuse; expect holds a line
      of the message
  OUTDIR/sdpa/NAME       attention written out as MatMul, Softmax and MatMul
      (PyTorch's export of scaled_dot_product_attention and simpler forms),
      with numpy's outputs of the written-out ops: sdpa_merge_* the layernorm
      pass merges into one Attention, sdpa_keep_* it must leave
  OUTDIR/decode/NAME     decoder steps: past_key/past_value of a symbolic
      length "past", one query (or "seq" of them), is_causal;
      test_data_set_K at different past lengths (0 among them), all from
      the one compiled model

The expected outputs come from attention() below, written from the
Attention-23 spec (onnx/defs/nn/defs.cc and its function body), in
float64. Where ONNX's Python reference (onnx/reference/ops/op_attention.py)
differs from the spec and the function body, the spec wins: with a
softcap, qk_matmul_output mode 0 is the scaled product before the softcap
(the function body and ONNX Runtime agree; the Python reference gives the
softcapped one).

Debian's python3-onnx (1.12) knows opsets up to 17 only, so the models are
written with onnx.helper and an explicit opset_import, without the checker.
Needs python3-onnx and python3-numpy only; every byte is deterministic.
"""
import math
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import nodetest

RNG = np.random.default_rng(2323)
F32, F64, F16, BF16, BOOL, I64 = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                                  TensorProto.BFLOAT16, TensorProto.BOOL, TensorProto.INT64)
GOOD, HALF, BAD, DECODE, SDPA = [], [], [], [], []


# ---- 16-bit floats: numpy has float16; bfloat16 is kept as float64 values ----

def bf16_round(x):
    """float64 -> the nearest bfloat16 (ties to even), as float64."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    return np.where(np.isfinite(x) & (x != 0), np.ldexp(np.rint(m * 256), e - 8), x)


def round_to(t, x):
    """x (float64) rounded once to type t, as float64 again."""
    if t == F16:
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)
    if t == BF16:
        return bf16_round(x)
    if t == F32:
        return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)
    return np.asarray(x, np.float64)


def ambiguous(t, x):
    """Whether an element of x (float64) lies so near a midpoint between two
    neighbours of type t that float32 arithmetic may round it either way:
    closer than 2^-19 of its size (a few float32 ulps of accumulated error)."""
    x = np.asarray(x, np.float64).ravel()
    x = x[np.isfinite(x) & (x != 0)]
    r = round_to(t, x)
    if t == F16:
        ulp = np.spacing(np.abs(r).astype(np.float16)).astype(np.float64)
    else:
        ulp = np.ldexp(1.0, np.frexp(np.abs(r))[1] - 8)
    return bool(np.any(ulp / 2 - np.abs(x - r) < np.abs(x) * 2.0 ** -19))


def tensor(name, t, x):
    """A TensorProto of type t holding x (float64 values exact in t, or bools)."""
    x = np.asarray(x)
    if t == BF16:
        bits = (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return helper.make_tensor(name, t, x.shape, bits.tobytes(), raw=True)
    np_type = {F32: np.float32, F64: np.float64, F16: np.float16, BOOL: np.bool_,
               I64: np.int64}[t]
    return numpy_helper.from_array(x.astype(np_type), name)


def randn(t, *shape):
    return round_to(t, RNG.standard_normal(shape))


# ---- the reference ----

def heads(x, n):
    """[B, S, n * D] -> [B, n, S, D]; 4-D as it is."""
    if x.ndim == 4:
        return x
    return x.reshape(x.shape[0], x.shape[1], n, -1).transpose(0, 2, 1, 3)


def attention(q, k, v, mask=None, past_k=None, past_v=None, is_causal=0, scale=None,
              softcap=0.0, q_num_heads=0, kv_num_heads=0, qk_matmul_output_mode=0,
              **_):
    """Y, present_key, present_value, qk_matmul_output in float64."""
    flat = q.ndim == 3
    q, k, v = heads(q, q_num_heads), heads(k, kv_num_heads), heads(v, kv_num_heads)
    past = 0 if past_k is None else past_k.shape[2]
    if past_k is not None:
        k = np.concatenate([past_k, k], axis=2)
        v = np.concatenate([past_v, v], axis=2)
    present_k, present_v = k, v
    b, hq, sq, d = q.shape
    total = k.shape[2]
    rep = hq // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    scale = scale if scale is not None else 1 / math.sqrt(d)
    raw = q @ k.transpose(0, 1, 3, 2) * scale
    capped = softcap * np.tanh(raw / softcap) if softcap > 0 else raw
    bias = np.zeros((sq, total))
    if mask is not None:
        if mask.shape[-1] not in (1, total):
            # a mask shorter than the sequence: the keys it misses are masked
            pad = np.full(mask.shape[:-1] + (total - mask.shape[-1],),
                          False if mask.dtype == bool else -np.inf)
            mask = np.concatenate([mask, pad.astype(mask.dtype)], axis=-1)
        bias = bias + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    if is_causal:
        # query i sits at position past + i: bottom-right only with a cache
        allowed = np.arange(total)[None, :] <= np.arange(sq)[:, None] + past
        bias = bias + np.where(allowed, 0.0, -np.inf)
    s = capped + bias
    mx = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(mx)
    e = np.where(dead, 0.0, np.exp(s - np.where(dead, 0.0, mx)))
    tot = e.sum(axis=-1, keepdims=True)
    p = e / np.where(tot == 0, 1, tot)
    y = p @ v
    if flat:
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, -1)
    qk = [raw, capped, s, p][qk_matmul_output_mode]
    return y, present_k, present_v, qk


# ---- models ----

IN_NAMES = ["q", "k", "v", "mask", "past_key", "past_value"]
OUT_NAMES = ["y", "present_key", "present_value", "qk"]


def attn_model(name, ins, outs, attrs, dims=None):
    """ins: {name: (type, array)}; outs: {name: (type, array)}; dims: symbolic input shapes."""
    node_ins = [n if n in ins else "" for n in IN_NAMES]
    while node_ins[-1] == "":
        node_ins.pop()
    node_outs = [n if n in outs else "" for n in OUT_NAMES]
    while node_outs[-1] == "":
        node_outs.pop()
    node = helper.make_node("Attention", node_ins, node_outs, name="attention", **attrs)
    dims = dims or {}
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, t, dims.get(n, a.shape)) for n, (t, a) in ins.items()],
        [helper.make_tensor_value_info(n, t, None if dims else a.shape)
         for n, (t, a) in outs.items()])
    m = helper.make_model(g, producer_name="collagec-attention-test",
                          opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 9
    return m


def protos(arrays):
    return [tensor(n, t, a) for n, (t, a) in arrays.items()]


def case(name, t, q, k, v, mask=None, past=None, outs=("y",), mask_t=None, **attrs):
    """One test: Attention of q, k, v (type t) with the optional inputs and outputs."""
    ins = {"q": (t, q), "k": (t, k), "v": (t, v)}
    if mask is not None:
        ins["mask"] = (mask_t or (BOOL if mask.dtype == bool else t), mask)
    if past is not None:
        ins["past_key"], ins["past_value"] = (t, past[0]), (t, past[1])
    got = attention(q, k, v, mask, *(past or (None, None)), **attrs)
    res = {}
    for i, n in enumerate(OUT_NAMES):
        if n in outs:
            if t in (F16, BF16) and ambiguous(t, got[i]):
                return False
            res[n] = (t, round_to(t, got[i]))
    m = attn_model(name, ins, res, attrs)
    (HALF if t in (F16, BF16) else GOOD).append((name, m, protos(ins), protos(res)))
    return True


def half_case(name, t, shapes, mask=None, past=None, **kw):
    """A 16-bit case, its inputs drawn (deterministically) until no expected
    output is ambiguous (ambiguous()): exact matching asks that of them."""
    for _ in range(100):
        q, k, v = (randn(t, *s) for s in shapes[:3])
        m = mask() if mask else None
        pkv = (randn(t, *past[0]), randn(t, *past[1])) if past else None
        if case(name, t, q, k, v, m, pkv, **kw):
            return
    raise SystemExit("%s: no unambiguous inputs in 100 draws" % name)


def bad(name, ins, outs, attrs, expect):
    BAD.append((name, attn_model(name, ins, outs, attrs), expect))


ALL = ("y", "present_key", "present_value", "qk")


def good_cases():
    # the cache with a float mask of the total length, causal, GQA, every output
    q, k, v = randn(F32, 2, 4, 3, 8), randn(F32, 2, 2, 3, 8), randn(F32, 2, 2, 3, 6)
    past = (randn(F32, 2, 2, 5, 8), randn(F32, 2, 2, 5, 6))
    case("past_gqa_float_mask_causal_qk2", F32, q, k, v, randn(F32, 3, 8), past, ALL,
         is_causal=1, qk_matmul_output_mode=2)
    # 3-D with the cache, a bool rank-4 mask broadcast over heads, weights out
    q, k, v = randn(F32, 1, 4, 4 * 8), randn(F32, 1, 4, 2 * 8), randn(F32, 1, 4, 2 * 5)
    past = (randn(F32, 1, 2, 4, 8), randn(F32, 1, 2, 4, 5))
    bmask = RNG.random((1, 1, 4, 8)) > 0.4
    bmask[0, 0, :, 0] = True
    case("past_3d_gqa_bool_mask_qk3", F32, q, k, v, bmask, past, ALL,
         q_num_heads=4, kv_num_heads=2, qk_matmul_output_mode=3)
    # the causal frontier moves by the past length: query i sees keys j <= i + P
    q, k, v = randn(F32, 1, 2, 2, 4), randn(F32, 1, 2, 2, 4), randn(F32, 1, 2, 2, 4)
    past = (randn(F32, 1, 2, 4, 4), randn(F32, 1, 2, 4, 4))
    case("past_causal_scale_qk0", F32, q, k, v, None, past, ALL, is_causal=1, scale=0.3,
         qk_matmul_output_mode=0)
    # present without past: K and V in the 4-D form
    q, k, v = randn(F32, 2, 3, 2 * 4), randn(F32, 2, 5, 2 * 4), randn(F32, 2, 5, 2 * 3)
    case("present_without_past_3d", F32, q, k, v, None, None, ("y", "present_key",
                                                               "present_value"),
         q_num_heads=2, kv_num_heads=2)
    # each qk_matmul_output mode with softcap, a float mask and causal
    q, k, v = randn(F32, 1, 2, 4, 8) * 2, randn(F32, 1, 2, 5, 8), randn(F32, 1, 2, 5, 8)
    fmask = randn(F32, 1, 2, 4, 5)
    for mode in range(4):
        case("qk_mode%d_softcap_mask_causal" % mode, F32, q, k, v, fmask, None, ALL,
             is_causal=1, softcap=1.5, qk_matmul_output_mode=mode)
    # masks of rank 1 and 3, a mask shorter than the sequence, an int64 mask
    q, k, v = randn(F32, 2, 3, 4, 4), randn(F32, 2, 3, 6, 4), randn(F32, 2, 3, 6, 4)
    case("mask_rank1", F32, q, k, v, randn(F32, 6))
    case("mask_rank3_bool_causal", F32, q, k, v, RNG.random((3, 4, 6)) > 0.3, None,
         ("y", "qk"), is_causal=1, qk_matmul_output_mode=2)
    case("mask_short_float", F32, q, k, v, randn(F32, 4, 4), None, ("y", "qk"),
         qk_matmul_output_mode=3)
    case("mask_short_bool_past", F32, q, k, v, RNG.random((2, 1, 4, 7)) > 0.2,
         (randn(F32, 2, 3, 3, 4), randn(F32, 2, 3, 3, 4)), ALL)
    case("mask_int64", F32, q, k, v, RNG.integers(-3, 1, (4, 6)).astype(np.float64), None,
         mask_t=I64)
    # fully masked rows: bool mask rows all false, and causal with a query before every key
    bmask = RNG.random((2, 3, 4, 6)) > 0.5
    bmask[0, 1, 2, :] = False
    bmask[1, :, 0, :] = False
    case("fully_masked_rows_qk3", F32, q, k, v, bmask, None, ("y", "qk"),
         qk_matmul_output_mode=3)
    # softcap with GQA 3-D, softmax_precision, float64
    q, k, v = randn(F32, 2, 3, 6 * 4), randn(F32, 2, 5, 2 * 4), randn(F32, 2, 5, 2 * 4)
    case("softcap_3d_gqa_sp_double", F32, q, k, v, None, None, q_num_heads=6,
         kv_num_heads=2, softcap=0.8, softmax_precision=F64)
    case("softmax_precision_float16", F32, q, k, v, None, None, q_num_heads=6,
         kv_num_heads=2, softmax_precision=F16)
    q, k, v = randn(F64, 1, 2, 3, 8), randn(F64, 1, 1, 4, 8), randn(F64, 1, 1, 4, 3)
    case("double_past_causal", F64, q, k, v, None,
         (randn(F64, 1, 1, 2, 8), randn(F64, 1, 1, 2, 3)), ALL, is_causal=1,
         qk_matmul_output_mode=1, softcap=3.0)


def half_cases():
    for t, tn in ((F16, "fp16"), (BF16, "bf16")):
        half_case(tn + "_past_gqa_mask_causal_qk3", t, [(2, 4, 3, 8), (2, 2, 3, 8), (2, 2, 3, 8)],
                  lambda: randn(t, 3, 8), [(2, 2, 5, 8), (2, 2, 5, 8)], outs=ALL,
                  is_causal=1, qk_matmul_output_mode=3)
        half_case(tn + "_3d_softcap_bool_mask", t, [(1, 5, 3 * 16), (1, 7, 3 * 16), (1, 7, 3 * 16)],
                  lambda: RNG.random((5, 7)) > 0.3, outs=("y", "qk"), q_num_heads=3,
                  kv_num_heads=3, softcap=2.0, qk_matmul_output_mode=1)
        half_case(tn + "_softmax_precision_float", t, [(1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8)],
                  outs=("y", "qk"), softmax_precision=F32, qk_matmul_output_mode=0)
    # a head wider than the accumulators: Y's columns in two passes over the keys
    half_case("fp16_wide_v_head", F16, [(1, 1, 3, 16), (1, 1, 5, 16), (1, 1, 5, 136)])


def bad_cases():
    q, k, v = randn(F32, 1, 2, 3, 4), randn(F32, 1, 2, 3, 4), randn(F32, 1, 2, 3, 4)
    y = {"y": (F32, q)}
    bad("past_key_alone", {"q": (F32, q), "k": (F32, k), "v": (F32, v),
                           "past_key": (F32, k)}, y, {},
        "past_key and past_value must be given together")
    bad("past_head_size", {"q": (F32, q), "k": (F32, k), "v": (F32, v),
                           "past_key": (F32, randn(F32, 1, 2, 2, 5)),
                           "past_value": (F32, randn(F32, 1, 2, 2, 4))}, y, {},
        "past_key and past_value must be [batch, kv_heads, past_seq, head_size]")
    bad("qk_mode_4", {"q": (F32, q), "k": (F32, k), "v": (F32, v)},
        {"y": (F32, q), "present_key": (F32, k), "present_value": (F32, v),
         "qk": (F32, q)}, {"qk_matmul_output_mode": 4},
        "qk_matmul_output_mode 4 is not 0, 1, 2 or 3")
    bad("mask_shape", {"q": (F32, q), "k": (F32, k), "v": (F32, v),
                       "mask": (F32, randn(F32, 3, 3, 3))}, y, {},
        "attn_mask must broadcast to [batch, q_heads, q_seq, past_seq + kv_seq]")
    bad("mask_too_long", {"q": (F32, q), "k": (F32, k), "v": (F32, v),
                          "mask": (F32, randn(F32, 3, 4))}, y, {},
        "attn_mask must broadcast to")
    bad("softmax_precision_int", {"q": (F32, q), "k": (F32, k), "v": (F32, v)}, y,
        {"softmax_precision": 7}, "softmax_precision 7 is not a float type")


def decode_cases():
    """Decoder steps: queries against the cache of a symbolic length."""
    hq, hkv, d = 4, 2, 8
    for name, seq, with_mask, steps in (
            ("decode_causal", 1, False, ((1, 3), (1, 7), (1, 12))),
            ("decode_mask", 1, True, ((1, 3), (1, 7), (1, 12))),
            # a prompt into an empty cache, then chunks of it: seq symbolic too
            ("chunks_causal", "seq", False, ((4, 0), (2, 4), (1, 6)))):
        dims = {"q": [1, hq, seq, d], "k": [1, hkv, seq, d], "v": [1, hkv, seq, d],
                "past_key": [1, hkv, "past", d], "past_value": [1, hkv, "past", d],
                "mask": [1, "total"]}
        sets = []
        for s, p in steps:
            q, k, v = randn(F32, 1, hq, s, d), randn(F32, 1, hkv, s, d), randn(F32, 1, hkv, s, d)
            past = (randn(F32, 1, hkv, p, d), randn(F32, 1, hkv, p, d))
            mask = None
            ins = {"q": (F32, q), "k": (F32, k), "v": (F32, v)}
            if with_mask:
                mask = RNG.random((1, p + s)) > 0.3
                mask[0, p] = True
                ins["mask"] = (BOOL, mask)
            ins["past_key"], ins["past_value"] = (F32, past[0]), (F32, past[1])
            got = attention(q, k, v, mask, *past, is_causal=1)
            outs = {n: (F32, round_to(F32, got[i])) for i, n in enumerate(OUT_NAMES[:3])}
            sets.append((ins, outs))
        m = attn_model(name, sets[0][0], sets[0][1], {"is_causal": 1}, dims)
        DECODE.append((name, m, sets))


def sdpa_cases():
    """Attention written out as MatMul, Softmax and MatMul, which the layernorm
    pass merges into one Attention (core/passes/pass_attention.c); the expected
    outputs are numpy's float64 of the written-out ops. sdpa_merge_* must merge,
    sdpa_keep_* must not (tests/attention.sh checks both)."""
    b, hq, hkv, s, t, d = 2, 4, 2, 3, 5, 8
    q, k, v = randn(F32, b, hq, s, d), randn(F32, b, hkv, t, d), randn(F32, b, hkv, t, d)
    allow = np.tril(np.ones((s, t), bool), t - s)
    allow[0, :] = False   # a fully masked row: the exporter's guard makes it 0
    c = np.float32(1 / math.sqrt(math.sqrt(d)))

    def softmax(x):
        with np.errstate(invalid="ignore"):   # a fully masked row: NaN, as the ops give
            e = np.exp(x - x.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

    def rep(x):
        return np.repeat(x, hq // hkv, axis=1)

    def add(name, nodes, ins, outs, inits=()):
        g = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, F32, a.shape) for n, a in ins],
                              [helper.make_tensor_value_info(n, F32, a.shape) for n, a in outs],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
        m = helper.make_model(g, producer_name="collagec-attention-test",
                              opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        SDPA.append((name, m, [tensor(n, F32, a) for n, a in ins],
                     [tensor(n, F32, a.astype(np.float32)) for n, a in outs]))

    # PyTorch's exporter: heads repeated (Unsqueeze, Expand, Reshape), k
    # transposed through [B * H, T, D], sqrt(scale) on both sides, an additive
    # mask from Where, Softmax, the NaN guard, MatMul
    sc = (q.astype(np.float64) * c) @ (rep(k).astype(np.float64).transpose(0, 1, 3, 2) * c)
    p = softmax(np.where(allow, sc, -np.inf))
    y = np.nan_to_num(p, nan=0.0) @ rep(v).astype(np.float64)
    nodes = []
    for x in ("k", "v"):
        nodes += [helper.make_node("Unsqueeze", [x, "ax2"], [x + "u"]),
                  helper.make_node("Expand", [x + "u", "shape5"], [x + "e"]),
                  helper.make_node("Reshape", [x + "e", "shape4"], [x + "r"])]
    nodes += [helper.make_node("Reshape", ["kr", "flat3"], ["k3"]),
              helper.make_node("Transpose", ["k3"], ["kt3"], perm=[0, 2, 1]),
              helper.make_node("Reshape", ["kt3", "kt4"], ["kt"]),
              helper.make_node("Mul", ["q", "c"], ["qs"]),
              helper.make_node("Mul", ["kt", "c"], ["kts"]),
              helper.make_node("Where", ["allow", "zero", "ninf"], ["mask"]),
              helper.make_node("MatMul", ["qs", "kts"], ["s0"]),
              helper.make_node("Add", ["s0", "mask"], ["s1"]),
              helper.make_node("Softmax", ["s1"], ["p"], axis=-1),
              helper.make_node("IsNaN", ["p"], ["nan"]),
              helper.make_node("Where", ["nan", "zero", "p"], ["pg"]),
              helper.make_node("MatMul", ["pg", "vr"], ["y"])]
    inits = [("ax2", np.array([2], np.int64)),
             ("shape5", np.array([b, hkv, hq // hkv, t, d], np.int64)),
             ("shape4", np.array([b, hq, t, d], np.int64)),
             ("flat3", np.array([-1, t, d], np.int64)),
             ("kt4", np.array([b, hq, d, t], np.int64)), ("c", c),
             ("allow", allow), ("zero", np.float32(0)), ("ninf", np.float32(-np.inf))]
    add("sdpa_merge_torch_export", nodes, [("q", q), ("k", k), ("v", v)], [("y", y)], inits)
    # the scale after the MatMul (Div by sqrt(d)), k by Transpose, no mask
    kf, vf = randn(F32, b, hq, t, d), randn(F32, b, hq, t, d)
    y = softmax(q.astype(np.float64) @ kf.astype(np.float64).transpose(0, 1, 3, 2)
                / math.sqrt(d)) @ vf.astype(np.float64)
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"]),
             helper.make_node("Div", ["s0", "r"], ["s1"]),
             helper.make_node("Softmax", ["s1"], ["p"], axis=3),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    add("sdpa_merge_div_transpose", nodes, [("q", q), ("k", kf), ("v", vf)], [("y", y)],
        [("r", np.float32(math.sqrt(d)))])
    # the same with Softmax over the queries, and with the scores an output too
    p2 = softmax((q.astype(np.float64) @ kf.astype(np.float64).transpose(0, 1, 3, 2)
                  / math.sqrt(d)).transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    nodes[3] = helper.make_node("Softmax", ["s1"], ["p"], axis=2)
    add("sdpa_keep_softmax_axis", nodes, [("q", q), ("k", kf), ("v", vf)],
        [("y", p2 @ vf.astype(np.float64))], [("r", np.float32(math.sqrt(d)))])
    nodes[3] = helper.make_node("Softmax", ["s1"], ["p"], axis=-1)
    s1 = q.astype(np.float64) @ kf.astype(np.float64).transpose(0, 1, 3, 2) / math.sqrt(d)
    add("sdpa_keep_scores_read", nodes, [("q", q), ("k", kf), ("v", vf)],
        [("y", softmax(s1) @ vf.astype(np.float64)), ("s1", s1)],
        [("r", np.float32(math.sqrt(d)))])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_attention_tests.py OUTDIR")
    out = sys.argv[1]
    good_cases()
    half_cases()
    bad_cases()
    decode_cases()
    sdpa_cases()
    for sub, cases in (("good", GOOD), ("half", HALF), ("sdpa", SDPA)):
        for name, m, ins, outs in cases:
            nodetest.write_case(os.path.join(out, sub, name), m, ins, outs)
    for name, m, expect in BAD:
        nodetest.write_bad(os.path.join(out, "bad", name), m, expect)
    for name, m, sets in DECODE:
        d = os.path.join(out, "decode", name)
        os.makedirs(d, exist_ok=True)
        nodetest.save(os.path.join(d, "model.onnx"), m)
        for i, (ins, outs) in enumerate(sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds, exist_ok=True)
            for kind, arrays in (("input", ins), ("output", outs)):
                for j, t in enumerate(protos(arrays)):
                    nodetest.save(os.path.join(ds, "%s_%d.pb" % (kind, j)), t)


if __name__ == "__main__":
    main()
