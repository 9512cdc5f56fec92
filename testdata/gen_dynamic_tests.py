#!/usr/bin/python3
"""Builds models whose shapes depend on tensor values (tests/dynamic.sh).

usage: gen_dynamic_tests.py OUTDIR

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_K/{input,output}_J.pb,
the ONNX backend-test layout that `collagec run --check` reads. Each model has
two data sets whose outputs differ in size, so one compiled .so must size its
tensors at run time; the expected outputs are computed here with numpy.

  nonzero_chain  x -> Greater -> NonZero -> Squeeze -> Gather(x) -> Add(1s of
                 ConstantOfShape(Shape(...))), the count as Shape of the
                 gathered values, and x reshaped to r * [1, 2] (a tensor
                 computed from an input, not from shapes)
  computed_axes  Unsqueeze at axes and Tile by repeats that are graph inputs,
                 Expand to a shape computed by Mul, Reshape to
                 Concat(ReduceMax(...), -1) and a backward Slice from that
                 maximum: all decided by values
  runtime_sizes  Resize by scales, Split by sizes and Unique (all four
                 outputs), scales, sizes and values graph inputs
  window_size    HannWindow and a symmetric BlackmanWindow of a size that is
                 a graph input (opset 17)
  symbolic_pad   Pad along a symbolic axis in all four modes, and a crop
                 (negative pads) whose length the run checks
  baked_shapes   a TorchScript-style export that baked seq = 16 in: x [seq,
                 batch, 128] reshaped to [16, 4*batch, 32] (from Shape
                 arithmetic) and to [16, -1, 32], split into [8, 8] along
                 seq, and y [seq, 4] split in two: all right only at even
                 seq or seq 16, which the run checks
  split_uneven   Split-18's num_outputs over a symbolic axis: ceil(T / 3)
                 each, the last what is left
  symbolic_conv  Conv over a symbolic length: 1-D with stride, pads and bias,
                 1-D dilated and grouped (T >= 5 at run time), 2-D over a
                 symbolic height with stride
  symbolic_window  pools and Resizes over a symbolic height and width (as an
                 image model exported with dynamic H and W): MaxPool and
                 AveragePool (padded, strided, count_include_pad and not),
                 Resize nearest by scales 2 (the output 2H x 2W) and linear
                 to constant sizes (the scale the run's: 7 / H), opset 18
  crop_pad_rt    CenterCropPad (opset 18) to a shape that is a graph input:
                 crops and pads by odd amounts, on axes 0 and 1 and on all
  col2im_rt      Col2Im (opset 18) with image_shape and block_shape graph
                 inputs, default and strided, dilated, padded geometry
  dft_rt         DFT (opset 20) with the axis (and dft_length) graph inputs:
                 onesided, of a run-time length, the inverse onesided one
                 back (numpy's rfft, fft and irfft), one whose lengths stay
                 (static dims) and one of a run-time length on the default
                 axis
  affine_grid_rt AffineGrid (opset 20) of a size that is a graph input, with
                 and without align_corners, a length 1 among them (at -1
                 under align_corners, as onnx's reference and PyTorch's
                 linspace put it; ONNX Runtime 1.32 puts it at +1)
  bad_indices    Gather on axes 0 and 1, GatherElements and GatherND with
                 indices that are graph inputs: in range (negative ones too)
                 in set 0, far outside the axes in set 1, which collagec
                 documents as reading the nearest element (never outside x)

Needs python3-onnx and python3-numpy only; every byte is deterministic.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def save(out, name, graph, sets, opset=13):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    m = helper.make_model(graph, producer_name="gen_dynamic_tests",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    ins = [i.name for i in graph.input]
    outs = [o.name for o in graph.output]
    for k, (feeds, results) in enumerate(sets):
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s, exist_ok=True)
        for j, n in enumerate(ins):
            with open(os.path.join(s, "input_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        for j, n in enumerate(outs):
            with open(os.path.join(s, "output_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(results[n], n).SerializeToString())


def nonzero_chain(out):
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"], name="positive"),
        helper.make_node("NonZero", ["pos"], ["nz"], name="nonzero"),
        helper.make_node("Squeeze", ["nz", "axis0"], ["idx"], name="squeeze"),
        helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=0),
        helper.make_node("Shape", ["g"], ["count"], name="count"),
        helper.make_node("ConstantOfShape", ["count"], ["ones"], name="ones",
                         value=numpy_helper.from_array(np.array([1], np.float32))),
        helper.make_node("Add", ["g", "ones"], ["y"], name="add"),
        helper.make_node("Mul", ["r", "one_two"], ["target"], name="target"),
        helper.make_node("Reshape", ["x", "target"], ["xr"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "nonzero_chain",
        [helper.make_tensor_value_info("x", F32, ["N"]),
         helper.make_tensor_value_info("r", I64, [2])],
        [helper.make_tensor_value_info("y", F32, None),
         helper.make_tensor_value_info("count", I64, [1]),
         helper.make_tensor_value_info("xr", F32, None)],
        [const("zero", np.float32(0)), const("axis0", np.array([0], np.int64)),
         const("one_two", np.array([1, 2], np.int64))])

    def ref(x, r):
        g = x[np.nonzero(x > 0)[0]]
        return {"y": g + np.float32(1), "count": np.array([g.size], np.int64),
                "xr": x.reshape(r * np.array([1, 2]))}

    rng = np.random.default_rng(3)
    sets = []
    for n, r in ((12, [3, 2]), (8, [1, 4])):
        x = rng.standard_normal(n).astype(np.float32)
        r = np.array(r, np.int64)
        sets.append(({"x": x, "r": r}, ref(x, r)))
    save(out, "nonzero_chain", graph, sets)


def computed_axes(out):
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsqueeze"),
        helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
        helper.make_node("Mul", ["reps", "k"], ["eshape"], name="expand_shape"),
        helper.make_node("Expand", ["one", "eshape"], ["e"], name="expand"),
        helper.make_node("ReduceMax", ["reps"], ["rows"], name="rows", keepdims=1),
        helper.make_node("Concat", ["rows", "minus_one"], ["rshape"], name="rshape", axis=0),
        helper.make_node("Reshape", ["t", "rshape"], ["tr"], name="reshape"),
        helper.make_node("Slice", ["tr", "rows", "big", "one_axis", "minus_one"], ["sl"],
                         name="slice"),
    ]
    graph = helper.make_graph(
        nodes, "computed_axes",
        [helper.make_tensor_value_info("x", F32, [2, 3]),
         helper.make_tensor_value_info("axes", I64, [2]),
         helper.make_tensor_value_info("reps", I64, [2])],
        [helper.make_tensor_value_info("u", F32, None),
         helper.make_tensor_value_info("t", F32, None),
         helper.make_tensor_value_info("e", F32, None),
         helper.make_tensor_value_info("tr", F32, None),
         helper.make_tensor_value_info("sl", F32, None)],
        [const("k", np.array([1, 2], np.int64)),
         const("big", np.array([-1000], np.int64)),
         const("one_axis", np.array([1], np.int64)),
         const("one", np.array([[1.5]], np.float32)),
         const("minus_one", np.array([-1], np.int64))])

    def ref(x, axes, reps):
        u = x
        for a in sorted(int(a) % (x.ndim + 2) for a in axes):
            u = np.expand_dims(u, a)
        t = np.tile(x, reps)
        e = np.broadcast_to(np.float32(1.5), reps * np.array([1, 2])).copy()
        tr = t.reshape(int(reps.max()), -1)
        return {"u": u, "t": t, "e": e, "tr": tr, "sl": tr[:, int(reps.max()):-1000:-1]}

    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    sets = []
    for axes, reps in (([0, -1], [2, 1]), ([1, 2], [1, 3])):
        axes, reps = np.array(axes, np.int64), np.array(reps, np.int64)
        sets.append(({"x": x, "axes": axes, "reps": reps}, ref(x, axes, reps)))
    save(out, "computed_axes", graph, sets)


def runtime_sizes(out):
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["rs"], name="resize", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Split", ["v", "parts"], ["s0", "s1"], name="split", axis=0),
        helper.make_node("Unique", ["w"], ["uy", "uidx", "uinv", "ucnt"], name="unique"),
    ]
    graph = helper.make_graph(
        nodes, "runtime_sizes",
        [helper.make_tensor_value_info("x", F32, [1, 1, 2, 3]),
         helper.make_tensor_value_info("scales", F32, [4]),
         helper.make_tensor_value_info("v", F32, [6]),
         helper.make_tensor_value_info("parts", I64, [2]),
         helper.make_tensor_value_info("w", F32, [8])],
        [helper.make_tensor_value_info(n, F32 if n in ("rs", "s0", "s1", "uy") else I64, None)
         for n in ("rs", "s0", "s1", "uy", "uidx", "uinv", "ucnt")])

    def ref(x, scales, v, parts, w):
        oh, ow = (int(np.floor(x.shape[k] * scales[k])) for k in (2, 3))
        rows = np.floor(np.arange(oh) / scales[2]).astype(int).clip(0, x.shape[2] - 1)
        cols = np.floor(np.arange(ow) / scales[3]).astype(int).clip(0, x.shape[3] - 1)
        uy, uidx, uinv, ucnt = np.unique(w, return_index=True, return_inverse=True,
                                         return_counts=True)
        return {"rs": x[:, :, rows][:, :, :, cols], "s0": v[:parts[0]], "s1": v[parts[0]:],
                "uy": uy, "uidx": uidx.astype(np.int64), "uinv": uinv.astype(np.int64),
                "ucnt": ucnt.astype(np.int64)}

    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    v = np.arange(6, dtype=np.float32) * 2
    sets = []
    for scales, parts, w in (([1, 1, 2, 1.5], [2, 4], [3, 1, 3, 2, 1, 1, 5, 2]),
                             ([1, 1, 0.5, 0.7], [6, 0], [4, 4, 4, 4, -1, 4, 4, 4])):
        feeds = {"x": x, "scales": np.array(scales, np.float32), "v": v,
                 "parts": np.array(parts, np.int64), "w": np.array(w, np.float32)}
        sets.append((feeds, ref(**feeds)))
    save(out, "runtime_sizes", graph, sets)


def window_size(out):
    nodes = [
        helper.make_node("HannWindow", ["n"], ["hann"], name="hann"),
        helper.make_node("BlackmanWindow", ["n"], ["blackman"], name="blackman", periodic=0),
    ]
    graph = helper.make_graph(
        nodes, "window_size", [helper.make_tensor_value_info("n", TensorProto.INT32, [])],
        [helper.make_tensor_value_info("hann", F32, None),
         helper.make_tensor_value_info("blackman", F32, None)])
    sets = []
    for n in (5, 9):
        i = np.arange(n, dtype=np.float64)
        hann = 0.5 - 0.5 * np.cos(2 * np.pi * i / n)
        x = 2 * np.pi * i / (n - 1)
        blackman = 0.42 - 0.5 * np.cos(x) + 0.08 * np.cos(2 * x)
        sets.append(({"n": np.array(n, np.int32)},
                     {"hann": hann.astype(np.float32), "blackman": blackman.astype(np.float32)}))
    save(out, "window_size", graph, sets, opset=17)


def symbolic_pad(out):
    """x [2, T]: reflect, edge, wrap and constant (value 7) padding of the
    symbolic axis, and a crop of 3 at its start (T >= 3 at run time)."""
    pads = {"reflect": [0, 3, 0, 2], "edge": [1, 2, 0, 1], "wrap": [0, 1, 0, 4],
            "constant": [0, 2, 1, 1]}
    nodes = [helper.make_node("Pad", ["x", "p_" + m] + (["seven"] if m == "constant" else []),
                              [m], name="pad_" + m, mode=m) for m in pads]
    nodes.append(helper.make_node("Pad", ["x", "p_crop"], ["crop"], name="crop"))
    graph = helper.make_graph(
        nodes, "symbolic_pad", [helper.make_tensor_value_info("x", F32, [2, "T"])],
        [helper.make_tensor_value_info(m, F32, None) for m in list(pads) + ["crop"]],
        [const("p_" + m, np.array(v, np.int64)) for m, v in pads.items()] +
        [const("seven", np.array(7, np.float32)),
         const("p_crop", np.array([0, -3, 0, 1], np.int64))])
    sets = []
    for t in (4, 9):
        x = np.arange(2 * t, dtype=np.float32).reshape(2, t) * 0.5 - 3
        res = {}
        for m, v in pads.items():
            width = ((v[0], v[2]), (v[1], v[3]))
            res[m] = (np.pad(x, width, mode=m, constant_values=7) if m == "constant"
                      else np.pad(x, width, mode=m))
        res["crop"] = np.pad(x[:, 3:], ((0, 0), (0, 1)))
        sets.append(({"x": x}, res))
    save(out, "symbolic_pad", graph, sets)


def baked_shapes(out):
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"], name="shape"),
        helper.make_node("Gather", ["xs", "one"], ["b"], name="batch", axis=0),
        helper.make_node("Mul", ["b", "four"], ["b4"], name="times4"),
        helper.make_node("Concat", ["sixteen", "b4", "thirtytwo"], ["target"], name="target",
                         axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="baked"),
        helper.make_node("Reshape", ["x", "minus"], ["rm"], name="baked_minus"),
        helper.make_node("Split", ["x", "eights"], ["s0", "s1"], name="halves", axis=0),
        helper.make_node("Split", ["y"], ["e0", "e1"], name="evenly", axis=0),
    ]
    graph = helper.make_graph(
        nodes, "baked_shapes",
        [helper.make_tensor_value_info("x", F32, ["seq", "batch", 128]),
         helper.make_tensor_value_info("y", F32, ["seq", 4])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("r", "rm", "s0", "s1", "e0", "e1")],
        [const("one", np.array([1], np.int64)), const("four", np.array([4], np.int64)),
         const("sixteen", np.array([16], np.int64)), const("thirtytwo", np.array([32], np.int64)),
         const("minus", np.array([16, -1, 32], np.int64)),
         const("eights", np.array([8, 8], np.int64))])
    sets = []
    for batch in (1, 3):
        x = np.arange(16 * batch * 128, dtype=np.float32).reshape(16, batch, 128) * 0.01
        y = np.arange(64, dtype=np.float32).reshape(16, 4)
        r = x.reshape(16, 4 * batch, 32)
        sets.append(({"x": x, "y": y}, {"r": r, "rm": r, "s0": x[:8], "s1": x[8:],
                                        "e0": y[:8], "e1": y[8:]}))
    save(out, "baked_shapes", graph, sets)


def conv_ref(x, w, b, strides, pads, dil, group):
    """ONNX Conv in float64 loops (explicit pads, no auto_pad)."""
    r = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] +
                [(pads[i], pads[i + r]) for i in range(r)])
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - ((k[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(r)]
    n, m = x.shape[0], w.shape[0]
    cg, mg = w.shape[1], m // group
    y = np.zeros([n, m] + out)
    for o in np.ndindex(*out):
        for kk in np.ndindex(*k):
            pos = tuple(o[i] * strides[i] + kk[i] * dil[i] for i in range(r))
            for g in range(group):
                xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]
                ws = w[(slice(g * mg, (g + 1) * mg), slice(None)) + kk]
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xs @ ws.T
    if b is not None:
        y += b.reshape([1, m] + [1] * r)
    return y.astype(np.float32)


def symbolic_conv(out):
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((3, 2, 5)).astype(np.float32)
    b1 = rng.standard_normal(3).astype(np.float32)
    w2 = rng.standard_normal((4, 1, 3)).astype(np.float32)
    w3 = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["y1"], name="strided", strides=[2],
                         pads=[2, 1]),
        helper.make_node("Conv", ["x", "w2"], ["y2"], name="dilated", dilations=[2], group=2),
        helper.make_node("Conv", ["z", "w3"], ["y3"], name="image", strides=[2, 1],
                         pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "symbolic_conv",
        [helper.make_tensor_value_info("x", F32, [1, 2, "T"]),
         helper.make_tensor_value_info("z", F32, [1, 1, "H", 6])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("y1", "y2", "y3")],
        [const("w1", w1), const("b1", b1), const("w2", w2), const("w3", w3)])
    sets = []
    for t, h in ((9, 5), (20, 8)):
        x = rng.standard_normal((1, 2, t)).astype(np.float32)
        z = rng.standard_normal((1, 1, h, 6)).astype(np.float32)
        sets.append(({"x": x, "z": z},
                     {"y1": conv_ref(x, w1, b1, [2], [2, 1], [1], 1),
                      "y2": conv_ref(x, w2, None, [1], [0, 0], [2], 2),
                      "y3": conv_ref(z, w3, None, [2, 1], [1, 1, 1, 1], [1, 1], 1)}))
    save(out, "symbolic_conv", graph, sets)


def pool_ref(x, k, s, pads, mode, incl=False):
    """MaxPool / AveragePool of NCHW x, pads [top, left, bottom, right]."""
    n, c, h, w = x.shape
    fill = -np.inf if mode == "max" else 0.0
    xp = np.full((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]), fill, np.float32)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w] = x
    inside = np.zeros(xp.shape[2:], bool)
    inside[pads[0]:pads[0] + h, pads[1]:pads[1] + w] = True
    oh, ow = (xp.shape[2] - k[0]) // s[0] + 1, (xp.shape[3] - k[1]) // s[1] + 1
    y = np.zeros((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            if mode == "max":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = k[0] * k[1] if incl else \
                    inside[i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum()
                y[:, :, i, j] = win.sum(axis=(2, 3), dtype=np.float64) / cnt
    return y


def linear_ref(x, oh, ow):
    """Resize linear, half_pixel, of NCHW x to oh x ow (indices clamped at the edges)."""
    def taps(n_in, n_out):
        o = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
        i0 = np.floor(o)
        f = o - i0
        i0 = i0.astype(np.int64)
        return np.clip(i0, 0, n_in - 1), np.clip(i0 + 1, 0, n_in - 1), f
    a0, a1, fa = taps(x.shape[2], oh)
    b0, b1, fb = taps(x.shape[3], ow)
    x = x.astype(np.float64)
    rows = x[:, :, a0, :] * (1 - fa)[:, None] + x[:, :, a1, :] * fa[:, None]
    return (rows[:, :, :, b0] * (1 - fb) + rows[:, :, :, b1] * fb).astype(np.float32)


def symbolic_window(out):
    rng = np.random.default_rng(9)
    nodes = [
        helper.make_node("MaxPool", ["x"], ["mp"], name="maxpool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["x"], ["ap"], name="avgpool_incl",
                         kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=1),
        helper.make_node("AveragePool", ["x"], ["ae"], name="avgpool_excl",
                         kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Resize", ["x", "", "s2"], ["up"], name="upsample", mode="nearest",
                         coordinate_transformation_mode="asymmetric"),
        helper.make_node("Resize", ["x", "", "", "sz"], ["rs"], name="resize", mode="linear"),
    ]
    graph = helper.make_graph(
        nodes, "symbolic_window", [helper.make_tensor_value_info("x", F32, [1, 2, "H", "W"])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("mp", "ap", "ae", "up", "rs")],
        [const("s2", np.array([1, 1, 2, 2], np.float32)),
         const("sz", np.array([1, 2, 7, 5], np.int64))])
    sets = []
    for h, w in ((5, 6), (9, 4)):
        x = rng.standard_normal((1, 2, h, w)).astype(np.float32)
        sets.append(({"x": x},
                     {"mp": pool_ref(x, [3, 3], [2, 2], [1, 1, 1, 1], "max"),
                      "ap": pool_ref(x, [3, 3], [2, 2], [1, 1, 1, 1], "avg", True),
                      "ae": pool_ref(x, [2, 2], [1, 1], [0, 0, 1, 1], "avg"),
                      "up": x.repeat(2, axis=2).repeat(2, axis=3),
                      "rs": linear_ref(x, 7, 5)}))
    save(out, "symbolic_window", graph, sets, opset=18)


def split_uneven(out):
    graph = helper.make_graph(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], name="thirds", axis=0,
                          num_outputs=3)],
        "split_uneven", [helper.make_tensor_value_info("x", F32, ["T", 2])],
        [helper.make_tensor_value_info(n, F32, None) for n in "abc"])
    sets = []
    for t in (7, 9):
        x = np.arange(2 * t, dtype=np.float32).reshape(t, 2)
        k = -(-t // 3)
        sets.append(({"x": x}, {"a": x[:k], "b": x[k:2 * k], "c": x[2 * k:]}))
    save(out, "split_uneven", graph, sets, opset=18)


def bad_indices(out):
    nodes = [
        helper.make_node("Gather", ["x", "i"], ["g0"], name="gather0", axis=0),
        helper.make_node("Gather", ["x", "j"], ["g1"], name="gather1", axis=1),
        helper.make_node("GatherElements", ["x", "e"], ["ge"], name="gatherelements", axis=1),
        helper.make_node("GatherND", ["x", "nd"], ["gn"], name="gathernd"),
    ]
    graph = helper.make_graph(
        nodes, "bad_indices",
        [helper.make_tensor_value_info("x", F32, [4, 5]),
         helper.make_tensor_value_info("i", I64, [3]),
         helper.make_tensor_value_info("j", I64, [2, 2]),
         helper.make_tensor_value_info("e", I64, [4, 5]),
         helper.make_tensor_value_info("nd", I64, [2, 2])],
        [helper.make_tensor_value_info("g0", F32, [3, 5]),
         helper.make_tensor_value_info("g1", F32, [4, 2, 2]),
         helper.make_tensor_value_info("ge", F32, [4, 5]),
         helper.make_tensor_value_info("gn", F32, [2])])

    def fix(k, n):
        k = np.where(k < 0, k + n, k)
        return np.clip(k, 0, n - 1)

    x = np.arange(20, dtype=np.float32).reshape(4, 5) * 0.5 - 3
    rng = np.random.RandomState(7)
    sets = []
    for big in (False, True):
        if big:
            i = np.array([100, -100, 1 << 40], np.int64)
            j = np.array([[5, -6], [-(1 << 40), 2]], np.int64)
            e = rng.randint(-9, 14, size=(4, 5)).astype(np.int64)
            nd = np.array([[4, -5], [-100, 100]], np.int64)
        else:
            i = np.array([3, -1, 0], np.int64)
            j = np.array([[4, -5], [1, 2]], np.int64)
            e = rng.randint(-5, 5, size=(4, 5)).astype(np.int64)
            nd = np.array([[3, -5], [-4, 4]], np.int64)
        ref = {"g0": x[fix(i, 4)], "g1": x[:, fix(j, 5)],
               "ge": np.take_along_axis(x, fix(e, 5), axis=1),
               "gn": x[fix(nd[:, 0], 4), fix(nd[:, 1], 5)]}
        sets.append(({"x": x, "i": i, "j": j, "e": e, "nd": nd}, ref))
    save(out, "bad_indices", graph, sets)


def crop_pad_rt(out):
    nodes = [
        helper.make_node("CenterCropPad", ["x", "hw"], ["y"], name="ccp", axes=[0, 1]),
        helper.make_node("CenterCropPad", ["x", "all"], ["z"], name="ccp_all"),
    ]
    graph = helper.make_graph(
        nodes, "crop_pad_rt",
        [helper.make_tensor_value_info("x", F32, [6, 5, 3]),
         helper.make_tensor_value_info("hw", I64, [2]),
         helper.make_tensor_value_info("all", I64, [3])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("y", "z")])

    def ccp(x, shape, axes):
        # the ONNX operator's definition: crop from (in - out) // 2, pad with
        # (out - in) // 2 zeros first
        y = x
        for a, n in zip(axes, shape):
            d = y.shape[a]
            if n < d:
                y = np.take(y, range((d - n) // 2, (d - n) // 2 + n), axis=a)
            elif n > d:
                pad = [(0, 0)] * y.ndim
                pad[a] = ((n - d) // 2, n - d - (n - d) // 2)
                y = np.pad(y, pad)
        return y

    x = np.arange(90, dtype=np.float32).reshape(6, 5, 3)
    sets = []
    for hw, al in (([3, 8], [7, 2, 3]), ([9, 2], [2, 6, 1])):
        sets.append(({"x": x, "hw": np.array(hw, np.int64), "all": np.array(al, np.int64)},
                     {"y": ccp(x, hw, [0, 1]), "z": ccp(x, al, [0, 1, 2])}))
    save(out, "crop_pad_rt", graph, sets, opset=18)


def col2im_ref(x, img, blk, strides, dil, pads):
    """Col2Im by its definition: each column's block added into the padded image."""
    r = len(img)
    bsz = int(np.prod(blk))
    n, cb, _ = x.shape
    padded = [img[i] + pads[i] + pads[i + r] for i in range(r)]
    nb = [(padded[i] - dil[i] * (blk[i] - 1) - 1) // strides[i] + 1 for i in range(r)]
    y = np.zeros([n, cb // bsz] + padded, np.float64)
    for c in range(cb // bsz):
        for k in np.ndindex(*blk):
            row = c * bsz + int(np.ravel_multi_index(k, blk))
            for b in np.ndindex(*nb):
                pos = tuple(b[i] * strides[i] + k[i] * dil[i] for i in range(r))
                y[(slice(None), c) + pos] += x[:, row, int(np.ravel_multi_index(b, nb))]
    crop = tuple(slice(pads[i], pads[i] + img[i]) for i in range(r))
    return y[(slice(None), slice(None)) + crop].astype(np.float32)


def col2im_rt(out):
    # x [1, 12, 6] holds 3 channels of 2x2 blocks over 3x4, or 6 of 1x2 over
    # 2x4; with strides 2, dilations [1, 2] and pads [1, 0, 0, 1], 3 channels
    # of 2x2 blocks over 3x7, or 6 of 1x2 over 5x4
    nodes = [
        helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], name="col2im"),
        helper.make_node("Col2Im", ["x", "img2", "blk2"], ["z"], name="col2im_sdp",
                         strides=[2, 2], dilations=[1, 2], pads=[1, 0, 0, 1]),
    ]
    graph = helper.make_graph(
        nodes, "col2im_rt",
        [helper.make_tensor_value_info("x", F32, [1, 12, 6])] +
        [helper.make_tensor_value_info(n, I64, [2]) for n in ("img", "blk", "img2", "blk2")],
        [helper.make_tensor_value_info(n, F32, None) for n in ("y", "z")])
    x = np.random.default_rng(5).standard_normal((1, 12, 6)).astype(np.float32)
    sets = []
    for img, blk, img2, blk2 in (([3, 4], [2, 2], [3, 7], [2, 2]),
                                 ([2, 4], [1, 2], [5, 4], [1, 2])):
        feeds = {"x": x, "img": np.array(img, np.int64), "blk": np.array(blk, np.int64),
                 "img2": np.array(img2, np.int64), "blk2": np.array(blk2, np.int64)}
        sets.append((feeds, {"y": col2im_ref(x, img, blk, [1, 1], [1, 1], [0, 0, 0, 0]),
                             "z": col2im_ref(x, img2, blk2, [2, 2], [1, 2], [1, 0, 0, 1])}))
    save(out, "col2im_rt", graph, sets, opset=18)


def dft_rt(out):
    nodes = [
        helper.make_node("DFT", ["x", "", "axis"], ["rfft"], name="rfft", onesided=1),
        helper.make_node("DFT", ["x", "n", "axis"], ["fft"], name="fft"),
        helper.make_node("DFT", ["rfft", "", "axis"], ["back"], name="irfft", inverse=1,
                         onesided=1),
        helper.make_node("DFT", ["x", "", "axis"], ["same"], name="same"),
        helper.make_node("DFT", ["x", "n"], ["last"], name="last"),
    ]
    graph = helper.make_graph(
        nodes, "dft_rt",
        [helper.make_tensor_value_info("x", F32, [2, 4, 6, 1]),
         helper.make_tensor_value_info("axis", I64, []),
         helper.make_tensor_value_info("n", I64, [])],
        [helper.make_tensor_value_info(n, F32, None)
         for n in ("rfft", "fft", "back", "same", "last")])

    def ri(c):
        return np.stack([c.real, c.imag], -1).astype(np.float32)

    x = np.random.default_rng(7).standard_normal((2, 4, 6, 1)).astype(np.float32)
    sets = []
    for axis, n in ((1, 3), (-2, 8)):
        a = axis % 4
        r = np.fft.rfft(x[..., 0].astype(np.float64), axis=a)
        sets.append(({"x": x, "axis": np.array(axis, np.int64), "n": np.array(n, np.int64)},
                     {"rfft": ri(r),
                      "fft": ri(np.fft.fft(x[..., 0].astype(np.float64), n=n, axis=a)),
                      "back": np.fft.irfft(r, axis=a)[..., None].astype(np.float32),
                      "same": ri(np.fft.fft(x[..., 0].astype(np.float64), axis=a)),
                      "last": ri(np.fft.fft(x[..., 0].astype(np.float64), n=n, axis=2))}))
    save(out, "dft_rt", graph, sets, opset=20)


def affine_grid_rt(out):
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine"),
        helper.make_node("AffineGrid", ["theta", "size"], ["grid_ac"], name="affine_ac",
                         align_corners=1),
    ]
    graph = helper.make_graph(
        nodes, "affine_grid_rt",
        [helper.make_tensor_value_info("theta", F32, [2, 2, 3]),
         helper.make_tensor_value_info("size", I64, [4])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("grid", "grid_ac")])

    def grid(theta, size, align):
        base = []
        for n in size[2:]:
            if align:
                base.append(np.linspace(-1, 1, n) if n > 1 else np.array([-1.0]))
            else:
                base.append((2 * np.arange(n) + 1) / n - 1)
        hy, wx = np.meshgrid(base[0], base[1], indexing="ij")
        pts = np.stack([wx, hy, np.ones_like(wx)], -1)
        return np.einsum("hwk,njk->nhwj", pts, theta.astype(np.float64)).astype(np.float32)

    theta = np.random.default_rng(11).standard_normal((2, 2, 3)).astype(np.float32)
    sets = []
    for size in ([2, 3, 4, 5], [2, 1, 1, 3]):
        sets.append(({"theta": theta, "size": np.array(size, np.int64)},
                     {"grid": grid(theta, size, False), "grid_ac": grid(theta, size, True)}))
    save(out, "affine_grid_rt", graph, sets, opset=20)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    nonzero_chain(sys.argv[1])
    computed_axes(sys.argv[1])
    runtime_sizes(sys.argv[1])
    window_size(sys.argv[1])
    bad_indices(sys.argv[1])
    symbolic_pad(sys.argv[1])
    baked_shapes(sys.argv[1])
    split_uneven(sys.argv[1])
    symbolic_conv(sys.argv[1])
    symbolic_window(sys.argv[1])
    crop_pad_rt(sys.argv[1])
    col2im_rt(sys.argv[1])
    dft_rt(sys.argv[1])
    affine_grid_rt(sys.argv[1])


if __name__ == "__main__":
    main()
