#!/usr/bin/env python3
"""Exports a LLaMA-style decoder with a KV cache through PyTorch's default
ONNX exporter (torch.onnx.export, torch.export underneath), with ONNX
Runtime's greedy decode beside it (tests/decode.sh, make bench-decode
GEN=torch).

usage: gen_torch_decoder.py OUTDIR [--layers L] [--hidden H] [--heads N]
                            [--kv-heads K] [--vocab V] [--tokens T] [--long N]

Writes OUTDIR/decoder.onnx and OUTDIR/tokens.txt (the prompt on its first
line, ONNX Runtime's greedy continuation of T tokens on its second), with
--long N also OUTDIR/tokens_long.txt for a prompt of N tokens: the layout
of testdata/gen_decoder.py, whose model writes the same network with
onnx.helper; here it is the exporter's graph, as a user who exports a
Hugging Face-style model gets it.

The network, written as transformers' LlamaModel is: token embedding; per
layer an RMSNorm (x * rsqrt(mean(x^2) + eps) * w), Q/K/V projections,
rotary embeddings by position_ids (rotate-half form, cos/sin from an
inverse-frequency buffer), the new keys and values concatenated to
past_key_L/past_value_L (given out as present_key_L/present_value_L), GQA
by repeating each KV head, scaled_dot_product_attention under a causal
mask offset by the past length, the output projection and a residual, an
RMSNorm and a SiLU-gated MLP (down(silu(gate(x)) * up(x))) with its
residual; a final RMSNorm and the LM head give logits. batch, seq and past
are dynamic (torch.export.Dim); the cache is [batch, kv_heads, past,
head_dim]. Inputs input_ids, position_ids, then past_key_L, past_value_L
per layer; outputs logits, then present_key_L, present_value_L: the
interface examples/decode.c drives.

Needs torch (with onnxscript, its exporter's dependency), onnx and
onnxruntime: a venv's python. Random weights, seeded; deterministic for a
given torch.
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_decoder import parse_args, write_tokens  # noqa: E402  (and ONNX Runtime's decode)


class RMSNorm(nn.Module):
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Layer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.heads, self.kv_heads = a.heads, a.kv_heads
        self.d = a.hidden // a.heads
        self.norm1, self.norm2 = RMSNorm(a.hidden), RMSNorm(a.hidden)
        self.q = nn.Linear(a.hidden, a.hidden, bias=False)
        self.k = nn.Linear(a.hidden, a.kv_heads * self.d, bias=False)
        self.v = nn.Linear(a.hidden, a.kv_heads * self.d, bias=False)
        self.o = nn.Linear(a.hidden, a.hidden, bias=False)
        self.gate = nn.Linear(a.hidden, 4 * a.hidden, bias=False)
        self.up = nn.Linear(a.hidden, 4 * a.hidden, bias=False)
        self.down = nn.Linear(4 * a.hidden, a.hidden, bias=False)

    def forward(self, x, cos, sin, past_k, past_v):
        b, s, _ = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
        rep = self.heads // self.kv_heads
        kr = k.repeat_interleave(rep, dim=1)
        vr = v.repeat_interleave(rep, dim=1)
        past = past_k.shape[2]
        total = past + s
        # query i (at position past + i) sees keys 0 .. past + i
        mask = (torch.arange(total, device=x.device)[None, :]
                <= torch.arange(s, device=x.device)[:, None] + past)
        att = nn.functional.scaled_dot_product_attention(q, kr, vr, attn_mask=mask)
        x = x + self.o(att.transpose(1, 2).reshape(b, s, -1))
        h = self.norm2(x)
        x = x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return x, k, v


class Decoder(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.hidden)
        self.layers = nn.ModuleList(Layer(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.hidden)
        self.head = nn.Linear(a.hidden, a.vocab, bias=False)
        d = a.hidden // a.heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)),
                             persistent=False)

    def forward(self, input_ids, position_ids, *past):
        x = self.embed(input_ids)
        ang = position_ids[..., None].float() * self.inv_freq
        ang = torch.cat((ang, ang), dim=-1)
        cos, sin = ang.cos()[:, None], ang.sin()[:, None]
        present = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.norm(x)), *present)


def export(a, path):
    torch.manual_seed(11)
    m = Decoder(a).eval()
    with torch.no_grad():
        # weights scaled so that the logits spread and greedy decoding moves on
        for p in m.parameters():
            if p.dim() == 2:
                p.mul_(1.5)
    d = a.hidden // a.heads
    b, s, past = 1, 3, 2
    args = [torch.randint(0, a.vocab, (b, s)), torch.arange(past, past + s)[None]]
    names = ["input_ids", "position_ids"]
    outs = ["logits"]
    batch, seq, pl = torch.export.Dim("batch"), torch.export.Dim("seq"), torch.export.Dim("past")
    dyn = [{0: batch, 1: seq}, {0: batch, 1: seq}]
    for i in range(a.layers):
        for kind in ("key", "value"):
            args.append(torch.randn(b, a.kv_heads, past, d))
            names.append("past_%s_%d" % (kind, i))
            outs.append("present_%s_%d" % (kind, i))
            dyn.append({0: batch, 2: pl})
    # the cache is forward's *past: one entry of dynamic_shapes for the tuple
    prog = torch.onnx.export(m, tuple(args), input_names=names, output_names=outs,
                             dynamic_shapes=(dyn[0], dyn[1], tuple(dyn[2:])), dynamo=True,
                             optimize=True)
    prog.save(path)


def main():
    a = parse_args("gen_torch_decoder.py", 64, 4)
    path = os.path.join(a.outdir, "decoder.onnx")
    export(a, path)
    write_tokens(path, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
