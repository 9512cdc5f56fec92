#!/usr/bin/env python3
"""ONNX Runtime side of collagec's checks and benchmarks (optional tool).

  ort.py refs MODEL.onnx OUTDIR [--shape NAME=D0,D1,...] [--seed S]
      runs ONNX Runtime on the inputs `collagec run` generates by default
      (same generator and seed) and writes OUTDIR/<output>.npy
  ort.py bench MODEL.onnx [--threads N] [--runs R] [--warmup W] [--shape ...]
      prints one JSON line: median/p90/min milliseconds
  ort.py decode DECODER.onnx --past P [--threads N] [--runs R] [--warmup W]
      times one single-token step of testdata/gen_decoder.py's decoder at
      past length P, inputs and outputs bound once (IOBinding: the present
      cache is written into buffers made beforehand, as examples/decode.c
      binds them); prints the median milliseconds

Needs: pip install onnxruntime numpy (not needed by the build or `make test`).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np


def fnv1a32(s):
    h = 0x811C9DC5
    for byte in s.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def mulberry32(state):
    """The generator `collagec run` uses for random inputs: uniform [0, 1)."""
    while True:
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + ((t ^ (t >> 7)) * (t | 61) & 0xFFFFFFFF)) & 0xFFFFFFFF
        yield ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296.0


TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
         "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
         "tensor(bool)": np.bool_}


def make_inputs(sess, shapes, seed):
    feeds = {}
    for meta in sess.get_inputs():
        if meta.name in shapes:
            shape = shapes[meta.name]
        else:
            shape = [d if isinstance(d, int) else shapes.get(d, [1])[0] for d in meta.shape]
        n = int(np.prod(shape)) if shape else 1
        gen = mulberry32(seed ^ fnv1a32(meta.name))
        r = np.fromiter((next(gen) for _ in range(n)), dtype=np.float64, count=n)
        t = TYPES[meta.type]
        if t is np.bool_:
            vals = np.floor(r * 2) != 0
        elif np.issubdtype(t, np.integer):
            vals = np.floor(r * 100).astype(t)
        else:
            vals = (-1 + r * 2).astype(t)
        feeds[meta.name] = vals.reshape(shape)
    return feeds


def parse_shapes(items):
    out = {}
    for item in items:
        name, _, dims = item.partition("=")
        out[name] = [int(d) for d in dims.split(",") if d]
    return out


def session(path, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def decode_step_ms(sess, past, runs, warmup):
    """Median ms of a one-token step at past length past, through IOBinding."""
    import onnxruntime as ort
    ins, outs = sess.get_inputs(), sess.get_outputs()
    kv, hd = ins[2].shape[1], ins[2].shape[3]
    vocab = outs[0].shape[2]
    b = sess.io_binding()
    b.bind_cpu_input(ins[0].name, np.array([[1]], np.int64))
    b.bind_cpu_input(ins[1].name, np.array([[past]], np.int64))
    for meta in ins[2:]:
        b.bind_cpu_input(meta.name, np.zeros((1, kv, past, hd), np.float32))
    keep = [np.zeros((1, 1, vocab), np.float32)]
    keep += [np.zeros((1, kv, past + 1, hd), np.float32) for _ in outs[1:]]
    for meta, arr in zip(outs, keep):
        b.bind_output(meta.name, "cpu", 0, np.float32, list(arr.shape),
                      arr.__array_interface__["data"][0])
    for _ in range(warmup):
        sess.run_with_iobinding(b)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run_with_iobinding(b)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[(len(times) - 1) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["refs", "bench", "decode"])
    p.add_argument("model")
    p.add_argument("outdir", nargs="?")
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--past", type=int, default=128)
    a = p.parse_args()
    sess = session(a.model, a.threads)
    if a.mode == "decode":
        print("%.4f" % decode_step_ms(sess, a.past, a.runs, a.warmup))
        return
    feeds = make_inputs(sess, parse_shapes(a.shape), a.seed)
    if a.mode == "refs":
        os.makedirs(a.outdir, exist_ok=True)
        for meta, value in zip(sess.get_outputs(), sess.run(None, feeds)):
            np.save(os.path.join(a.outdir, meta.name + ".npy"), value)
        return
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(math.ceil(q * len(times))) - 1)]
    print(json.dumps({"model": os.path.basename(a.model), "runtime": "onnxruntime",
                      "threads": a.threads, "runs": a.runs, "median_ms": round(pick(0.5), 4),
                      "p90_ms": round(pick(0.9), 4), "min_ms": round(times[0], 4)}))


if __name__ == "__main__":
    sys.exit(main())
