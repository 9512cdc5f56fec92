#!/usr/bin/env python3
"""Builds a LLaMA-style decoder with a KV cache and its greedy decode by
ONNX Runtime (tests/decode.sh, make bench-decode).

usage: gen_decoder.py OUTDIR [--layers L] [--hidden H] [--heads N]
                      [--kv-heads K] [--vocab V] [--tokens T]

Writes OUTDIR/decoder.onnx and, unless --tokens 0, OUTDIR/tokens.txt: the
prompt on its first line and ONNX Runtime's greedy continuation (T tokens)
on its second, space-separated; with --long N also OUTDIR/tokens_long.txt,
the same for a prompt of N tokens (a cache longer than a kernel's block).

The model is written the way exporters of today's LLMs write one at opset
23: token embedding (Gather), per layer RMSNormalization, Q/K/V MatMuls,
RotaryEmbedding on Q and K by position_ids, Attention with past_key and
past_value (GQA: fewer KV heads than query heads, is_causal offset by the
past length) giving present_key and present_value, the output projection
and a residual Add, then RMSNormalization and a SiLU-gated MLP
(Sigmoid, Mul, Mul) with its residual; a final RMSNormalization and the LM
head give logits. batch, seq and past are symbolic; the cache is
[batch, kv_heads, past, head_dim] per layer. Random weights (seeded), scaled
so that the logits spread and greedy decoding does not settle on one token.

Needs onnx >= 1.18 (opset 23) and, for the tokens, onnxruntime: a venv's
python, not Debian's.
"""
import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

MAX_POS = 4096


def build(a):
    rng = np.random.default_rng(7)
    d = a.hidden // a.heads
    hk = a.kv_heads * d
    inits, nodes = [], []

    def w(name, shape, scale):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def node(op, ins, outs, **kw):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0] + "_" + op.lower(), **kw))
        return outs[0]

    inv = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    ang = np.arange(MAX_POS)[:, None] * inv[None, :]
    inits += [numpy_helper.from_array(np.cos(ang).astype(np.float32), "cos_cache"),
              numpy_helper.from_array(np.sin(ang).astype(np.float32), "sin_cache")]
    x = node("Gather", [w("embed", (a.vocab, a.hidden), 1.0), "input_ids"], ["x0"])
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
           helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                          ["batch", "seq", a.vocab])]
    for layer in range(a.layers):
        p = "l%d_" % layer
        ones = lambda n: numpy_helper.from_array(np.ones(a.hidden, np.float32), n)
        inits += [ones(p + "ln1"), ones(p + "ln2")]
        h = node("RMSNormalization", [x, p + "ln1"], [p + "h"], axis=-1, epsilon=1e-5)
        s = a.hidden ** -0.5
        q = node("MatMul", [h, w(p + "wq", (a.hidden, a.hidden), s)], [p + "q"])
        k = node("MatMul", [h, w(p + "wk", (a.hidden, hk), s)], [p + "k"])
        v = node("MatMul", [h, w(p + "wv", (a.hidden, hk), s)], [p + "v"])
        q = node("RotaryEmbedding", [q, "cos_cache", "sin_cache", "position_ids"], [p + "qr"],
                 num_heads=a.heads)
        k = node("RotaryEmbedding", [k, "cos_cache", "sin_cache", "position_ids"], [p + "kr"],
                 num_heads=a.kv_heads)
        pk, pv = "past_key_%d" % layer, "past_value_%d" % layer
        ck, cv = "present_key_%d" % layer, "present_value_%d" % layer
        for n in (pk, pv):
            ins.append(helper.make_tensor_value_info(
                n, TensorProto.FLOAT, ["batch", a.kv_heads, "past", d]))
        for n in (ck, cv):
            outs.append(helper.make_tensor_value_info(
                n, TensorProto.FLOAT, ["batch", a.kv_heads, "total", d]))
        nodes.append(helper.make_node(
            "Attention", [q, k, v, "", pk, pv], [p + "att", ck, cv], name=p + "attention",
            q_num_heads=a.heads, kv_num_heads=a.kv_heads, is_causal=1))
        o = node("MatMul", [p + "att", w(p + "wo", (a.hidden, a.hidden), s)], [p + "o"])
        x = node("Add", [x, o], [p + "x1"])
        h2 = node("RMSNormalization", [x, p + "ln2"], [p + "h2"], axis=-1, epsilon=1e-5)
        ff = 4 * a.hidden
        g = node("MatMul", [h2, w(p + "wg", (a.hidden, ff), s)], [p + "g"])
        u = node("MatMul", [h2, w(p + "wu", (a.hidden, ff), s)], [p + "u"])
        sg = node("Sigmoid", [g], [p + "sg"])
        act = node("Mul", [node("Mul", [g, sg], [p + "silu"]), u], [p + "act"])
        dn = node("MatMul", [act, w(p + "wd", (ff, a.hidden), ff ** -0.5)], [p + "dn"])
        x = node("Add", [x, dn], [p + "x2"])
    inits.append(numpy_helper.from_array(np.ones(a.hidden, np.float32), "ln_f"))
    h = node("RMSNormalization", [x, "ln_f"], ["hf"], axis=-1, epsilon=1e-5)
    node("MatMul", [h, w("lm_head", (a.hidden, a.vocab), 4 * a.hidden ** -0.5)], ["logits"])
    g = helper.make_graph(nodes, "decoder", ins, outs, inits)
    m = helper.make_model(g, producer_name="collagec-gen-decoder",
                          opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m


def decode(path, a, prompt):
    """ONNX Runtime's greedy decode: the prompt at once, then a token a step."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    d = a.hidden // a.heads
    past = {}
    for layer in range(a.layers):
        for n in ("past_key_%d", "past_value_%d"):
            past[n % layer] = np.zeros((1, a.kv_heads, 0, d), np.float32)
    ids, pos, out = np.array([prompt], np.int64), 0, []
    for _ in range(a.tokens):
        feeds = {"input_ids": ids,
                 "position_ids": np.arange(pos, pos + ids.shape[1], dtype=np.int64)[None]}
        feeds.update(past)
        res = s.run(None, feeds)
        tok = int(np.argmax(res[0][0, -1]))
        out.append(tok)
        pos += ids.shape[1]
        for layer in range(a.layers):
            past["past_key_%d" % layer] = res[1 + 2 * layer]
            past["past_value_%d" % layer] = res[2 + 2 * layer]
        ids = np.array([[tok]], np.int64)
    return out


def parse_args(prog, hidden, heads):
    """The command line (see the usage above), checked; OUTDIR made. Also
    gen_torch_decoder.py's, with its own default sizes."""
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=hidden)
    ap.add_argument("--heads", type=int, default=heads)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--long", type=int, default=0)
    a = ap.parse_args()
    if a.hidden % a.heads or a.heads % a.kv_heads or (a.hidden // a.heads) % 2:
        sys.exit("%s: hidden must split into heads of even size, heads into kv-heads" % prog)
    os.makedirs(a.outdir, exist_ok=True)
    return a


def main():
    a = parse_args("gen_decoder.py", 128, 8)
    path = os.path.join(a.outdir, "decoder.onnx")
    m = build(a)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(m.SerializeToString())
    os.replace(tmp, path)
    write_tokens(path, a)
    return 0


def write_tokens(path, a):
    """tokens.txt (and with --long tokens_long.txt): a prompt and ONNX Runtime's
    greedy continuation of the model at path (gen_torch_decoder.py's too)."""
    if a.tokens:
        prompt = [t % a.vocab for t in (1, 17, 42, 99, 7, 200, 5, 63)]
        toks = decode(path, a, prompt)
        with open(os.path.join(a.outdir, "tokens.txt"), "w") as f:
            f.write(" ".join(map(str, prompt)) + "\n" + " ".join(map(str, toks)) + "\n")
    if a.tokens and a.long:
        prompt = [int(t) for t in np.random.default_rng(3).integers(0, a.vocab, a.long)]
        toks = decode(path, a, prompt)
        with open(os.path.join(a.outdir, "tokens_long.txt"), "w") as f:
            f.write(" ".join(map(str, prompt)) + "\n" + " ".join(map(str, toks)) + "\n")


if __name__ == "__main__":
    sys.exit(main())
