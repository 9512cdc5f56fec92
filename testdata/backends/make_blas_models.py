#!/usr/bin/python3
"""Models, inputs and numpy references for the blas backend's tests.

usage: make_blas_models.py OUTDIR            writes OUTDIR/NAME/{model.onnx,
                                             in/INPUT.npy, ref/OUTPUT.npy, op}
       make_blas_models.py compare WANT GOT  every WANT/*.npy against GOT/
       make_blas_models.py target JSON OP    the target of OP's partition(s)
       make_blas_models.py rules JSON        the rules of the blas partitions

Every model is one MatMul, Gemm or Conv (float32, opset 13) with fixed-seed
inputs, or (epi_*) one followed by elementwise ops that patterns/blas.pat
fuses into it as an epilogue; the reference is computed in float64 with
numpy. 'op' holds the ONNX op type whose partition must land on blas ('c' in
'expect' for the models the blas rule must leave alone); 'rules', when
present, the sorted rules of the blas partitions. compare uses rtol 1e-4,
atol 1e-4 and exits 1 with a reason on the first mismatch.
Needs Debian's python3-onnx and python3-numpy only.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RTOL = 1e-4
ATOL = 1e-4
F32 = TensorProto.FLOAT


def vinfo(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def save(outdir, name, node, inputs, outputs, feeds, refs, inits=(), op=None,
         expect="blas", ref_dtype=np.float32, rules=None):
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref"), exist_ok=True)
    nodes = node if isinstance(node, list) else [node]
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(graph, producer_name="collagec-testdata",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in feeds.items():
        np.save(os.path.join(d, "in", k + ".npy"), v)
    for k, v in refs.items():
        np.save(os.path.join(d, "ref", k + ".npy"), v.astype(ref_dtype))
    with open(os.path.join(d, "op"), "w") as f:
        f.write((op or node.op_type) + "\n")
    with open(os.path.join(d, "expect"), "w") as f:
        f.write(expect + "\n")
    if rules is not None:
        with open(os.path.join(d, "rules"), "w") as f:
            f.write(" ".join(sorted(rules)) + "\n")


# ---- MatMul ----

def matmul(outdir, rng, name, sa, sb, dims_a=None, dims_b=None, dtype=np.float32,
           elem=F32, expect="blas"):
    a = rng.uniform(-1, 1, sa).astype(dtype)
    b = rng.uniform(-1, 1, sb).astype(dtype)
    y = np.matmul(a.astype(np.float64), b.astype(np.float64))
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    out_dims = [None] * y.ndim if dims_a or dims_b else list(y.shape)
    save(outdir, name, node,
         [vinfo("a", dims_a or list(sa), elem), vinfo("b", dims_b or list(sb), elem)],
         [vinfo("y", out_dims, elem)], {"a": a, "b": b}, {"y": y}, expect=expect,
         ref_dtype=dtype)


def matmuls(outdir, rng):
    matmul(outdir, rng, "mm_2d", (7, 12), (12, 9))
    matmul(outdir, rng, "mm_1d_2d", (12,), (12, 9))
    matmul(outdir, rng, "mm_2d_1d", (7, 12), (12,))
    matmul(outdir, rng, "mm_1d_1d", (12,), (12,))
    matmul(outdir, rng, "mm_3d_2d", (3, 7, 12), (12, 9))
    matmul(outdir, rng, "mm_2d_3d", (7, 12), (3, 12, 9))
    matmul(outdir, rng, "mm_3d_3d", (3, 7, 12), (3, 12, 9))
    matmul(outdir, rng, "mm_bcast_4d", (2, 1, 5, 6), (1, 3, 6, 4))
    matmul(outdir, rng, "mm_bcast_mixed", (2, 3, 1, 4, 5, 6), (3, 2, 1, 6, 7))
    matmul(outdir, rng, "mm_bcast_1d_4d", (6,), (2, 3, 6, 4))
    # symbolic batch: the references are at N=5 (the input files fix it)
    matmul(outdir, rng, "mm_sym", (5, 2, 4, 6), (1, 2, 6, 3),
           dims_a=["N", 2, 4, 6], dims_b=[1, 2, 6, 3])
    matmul(outdir, rng, "mm_sym_fold", (5, 4, 6), (6, 3), dims_a=["N", 4, 6], dims_b=[6, 3])
    # big enough to run on several threads (names ending in _par)
    matmul(outdir, rng, "mm_batch_par", (8, 32, 24), (8, 24, 20))
    matmul(outdir, rng, "mm_split_par", (2, 48, 40), (40, 36))
    matmul(outdir, rng, "mm_bcast_split_par", (40, 48), (2, 48, 36))
    # two MatMul partitions around a Relu on c: the helpers are emitted once
    a = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    b = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    c = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    y = np.maximum(a.astype(np.float64) @ b, 0) @ c
    nodes = [helper.make_node("MatMul", ["a", "b"], ["t"], name="mm0"),
             helper.make_node("Relu", ["t"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "c"], ["y"], name="mm1")]
    save(outdir, "mm_two", nodes, [vinfo("a", [4, 6]), vinfo("c", [5, 3])],
         [vinfo("y", [4, 3])], {"a": a, "c": c}, {"y": y}, [("b", b)], op="MatMul")
    # float64 stays on c
    matmul(outdir, rng, "mm_f64", (4, 5), (5, 3), dtype=np.float64,
           elem=TensorProto.DOUBLE, expect="c")


# ---- Gemm ----

def gemm(outdir, rng, name, m, n, k, ta=0, tb=0, alpha=1.0, beta=1.0, c_shape=None,
         b_const=False):
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    y = alpha * ((a64.T if ta else a64) @ (b64.T if tb else b64))
    feeds, inputs, names, inits = {"a": a}, [vinfo("a", list(a.shape))], ["a", "b"], []
    if b_const:
        inits.append(("b", b))
    else:
        feeds["b"] = b
        inputs.append(vinfo("b", list(b.shape)))
    if c_shape is not None:
        c = rng.uniform(-1, 1, c_shape).astype(np.float32)
        y = y + beta * c.astype(np.float64)
        feeds["c"] = c
        inputs.append(vinfo("c", list(c_shape)))
        names.append("c")
    node = helper.make_node("Gemm", names, ["y"], name="gemm", transA=ta, transB=tb,
                            alpha=alpha, beta=beta)
    save(outdir, name, node, inputs, [vinfo("y", [m, n])], feeds, {"y": y}, inits)


def gemms(outdir, rng):
    gemm(outdir, rng, "gemm_plain", 6, 5, 7, c_shape=None)
    gemm(outdir, rng, "gemm_ta", 6, 5, 7, ta=1, c_shape=(5,))
    gemm(outdir, rng, "gemm_tb", 6, 5, 7, tb=1, c_shape=(6, 5), b_const=True)
    gemm(outdir, rng, "gemm_ta_tb_alpha_beta", 6, 5, 7, ta=1, tb=1, alpha=0.5, beta=-2.0,
         c_shape=(5,))
    gemm(outdir, rng, "gemm_c_mn", 6, 5, 7, alpha=1.5, beta=0.25, c_shape=(6, 5))
    gemm(outdir, rng, "gemm_c_scalar", 6, 5, 7, beta=3.0, c_shape=())
    gemm(outdir, rng, "gemm_c_m1", 6, 5, 7, c_shape=(6, 1))
    gemm(outdir, rng, "gemm_c_1n", 6, 5, 7, c_shape=(1, 5))
    gemm(outdir, rng, "gemm_beta0", 6, 5, 7, beta=0.0, c_shape=(6, 5))
    # a row or column vector result (gemv inside), every transposition
    gemm(outdir, rng, "gemm_m1", 1, 5, 7, c_shape=(5,))
    gemm(outdir, rng, "gemm_m1_ta_tb", 1, 5, 7, ta=1, tb=1, alpha=2.0, c_shape=(1, 5))
    gemm(outdir, rng, "gemm_n1_ta", 6, 1, 7, ta=1, beta=0.5, c_shape=(6, 1))
    gemm(outdir, rng, "gemm_n1_tb", 6, 1, 7, tb=1, c_shape=())
    gemm(outdir, rng, "gemm_m1_n1_ta_tb", 1, 1, 7, ta=1, tb=1)
    gemm(outdir, rng, "gemm_cols_par", 64, 70, 30, tb=1, c_shape=(70,))
    gemm(outdir, rng, "gemm_rows_par", 70, 20, 60, ta=1, beta=0.5, c_shape=(70, 20))
    gemm(outdir, rng, "gemm_m1_par", 1, 2048, 64, tb=1, c_shape=(2048,))
    gemm(outdir, rng, "gemm_m1_ta_par", 1, 2048, 64, ta=1, c_shape=(2048,))
    gemm(outdir, rng, "gemm_n1_par", 2048, 1, 64, ta=1, c_shape=(2048, 1))
    gemm(outdir, rng, "gemm_n1_tb_par", 2048, 1, 64, tb=1, c_shape=())


# ---- Conv ----

def conv_ref(x, w, b, strides, pads, dilations, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * mg:(g + 1) * mg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, ws[:, :, i, j])
    if b is not None:
        y += b.reshape(1, m, 1, 1)
    return y


def conv(outdir, rng, name, n, c, h, wd, m, kh, kw, strides=(1, 1), pads=(0, 0, 0, 0),
         dilations=(1, 1), group=1, bias=True, sym=False, auto_pad=None):
    x = rng.uniform(-1, 1, (n, c, h, wd)).astype(np.float32)
    w = rng.uniform(-1, 1, (m, c // group, kh, kw)).astype(np.float32)
    b = rng.uniform(-1, 1, (m,)).astype(np.float32) if bias else None
    attrs = dict(strides=list(strides), dilations=list(dilations), group=group,
                 kernel_shape=[kh, kw])
    if auto_pad:
        # SAME_UPPER: total pad so that out = ceil(in / stride), the extra at the end
        attrs["auto_pad"] = auto_pad
        tot = []
        for size, k, s, d in ((h, kh, strides[0], dilations[0]), (wd, kw, strides[1],
                                                                    dilations[1])):
            o = -(-size // s)
            tot.append(max(0, (o - 1) * s + (k - 1) * d + 1 - size))
        pads = (tot[0] // 2, tot[1] // 2, tot[0] - tot[0] // 2, tot[1] - tot[1] // 2)
    else:
        attrs["pads"] = list(pads)
    y = conv_ref(x.astype(np.float64), w.astype(np.float64),
                 None if b is None else b.astype(np.float64), strides, pads, dilations, group)
    names = ["x", "w"] + (["b"] if bias else [])
    inits = [("w", w)] + ([("b", b)] if bias else [])
    node = helper.make_node("Conv", names, ["y"], name="conv", **attrs)
    xdims = ["N", c, h, wd] if sym else [n, c, h, wd]
    ydims = ["N"] + list(y.shape[1:]) if sym else list(y.shape)
    save(outdir, name, node, [vinfo("x", xdims)], [vinfo("y", ydims)], {"x": x}, {"y": y},
         inits)


def convs(outdir, rng):
    conv(outdir, rng, "conv_g1", 1, 3, 9, 10, 4, 3, 3, pads=(1, 1, 1, 1))
    conv(outdir, rng, "conv_g1_nobias", 2, 3, 9, 10, 4, 3, 3, pads=(1, 1, 1, 1), bias=False)
    conv(outdir, rng, "conv_depthwise", 1, 6, 8, 8, 6, 3, 3, pads=(1, 1, 1, 1), group=6)
    conv(outdir, rng, "conv_depthwise_mult", 1, 4, 8, 8, 8, 3, 3, pads=(1, 1, 1, 1), group=4,
         bias=False)
    conv(outdir, rng, "conv_g2_s2", 2, 4, 11, 9, 6, 3, 3, strides=(2, 2), pads=(1, 1, 1, 1),
         group=2)
    conv(outdir, rng, "conv_dil2", 1, 3, 12, 11, 5, 3, 3, dilations=(2, 2), pads=(2, 2, 2, 2))
    conv(outdir, rng, "conv_dil_s_mixed", 1, 3, 13, 12, 5, 3, 2, strides=(2, 1),
         dilations=(1, 3), pads=(1, 0, 0, 2))
    conv(outdir, rng, "conv_asym_pads", 1, 3, 10, 9, 4, 3, 3, strides=(2, 2),
         pads=(0, 1, 2, 0))
    conv(outdir, rng, "conv_same_upper", 1, 3, 10, 9, 4, 4, 4, strides=(2, 2),
         auto_pad="SAME_UPPER")
    conv(outdir, rng, "conv_1x1", 2, 8, 7, 6, 5, 1, 1, bias=False)
    conv(outdir, rng, "conv_1x1_bias", 1, 8, 7, 6, 5, 1, 1)
    conv(outdir, rng, "conv_1x1_s2", 1, 8, 7, 6, 5, 1, 1, strides=(2, 2))
    conv(outdir, rng, "conv_1x1_pad", 1, 8, 5, 4, 5, 1, 1, pads=(1, 0, 0, 1))
    conv(outdir, rng, "conv_7x7_s2", 1, 3, 20, 20, 8, 7, 7, strides=(2, 2), pads=(3, 3, 3, 3))
    conv(outdir, rng, "conv_sym", 3, 3, 8, 8, 4, 3, 3, pads=(1, 1, 1, 1), sym=True)
    conv(outdir, rng, "conv_g1_par", 1, 16, 24, 24, 8, 3, 3, pads=(1, 1, 1, 1))
    conv(outdir, rng, "conv_batch_par", 3, 16, 12, 12, 8, 3, 3, strides=(2, 2),
         pads=(1, 0, 1, 2), bias=False)
    conv(outdir, rng, "conv_depthwise_par", 1, 32, 24, 24, 32, 3, 3, pads=(1, 1, 1, 1),
         group=32)
    conv(outdir, rng, "conv_1x1_par", 1, 64, 20, 20, 48, 1, 1)
    conv(outdir, rng, "conv_sym_par", 4, 16, 16, 16, 8, 3, 3, pads=(1, 1, 1, 1),
         dilations=(2, 2), sym=True)


# ---- fused epilogues: an anchor and the elementwise ops after it ----
# Each model's "rules" file lists the rules of its blas partitions (sorted);
# "op" names the last epilogue op and "expect" where it must run.

def u(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def epilogues(outdir, rng):
    f64 = lambda v: v.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    # MatMul + bias vector + Relu
    a, w, b = u(rng, (5, 12)), u(rng, (12, 9)), u(rng, (9,))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
             helper.make_node("Relu", ["t2"], ["y"], name="relu")]
    save(outdir, "epi_mm_bias_relu", nodes, [vinfo("a", [5, 12])], [vinfo("y", [5, 9])],
         {"a": a}, {"y": relu(f64(a) @ w + b)}, [("w", w), ("b", b)], op="Relu",
         rules=["blas.matmul_add_act"])
    # Gemm with C, then Clip with constant bounds (a Relu6-like epilogue)
    a, w, c = u(rng, (6, 10)), u(rng, (10, 7)), u(rng, (7,))
    lo, hi = np.array(-0.2, np.float32), np.array(0.3, np.float32)
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["t"], name="gemm", alpha=0.5),
             helper.make_node("Clip", ["t", "lo", "hi"], ["y"], name="clip")]
    save(outdir, "epi_gemm_clip", nodes, [vinfo("a", [6, 10])], [vinfo("y", [6, 7])],
         {"a": a}, {"y": np.clip(0.5 * (f64(a) @ w) + c, lo, hi)},
         [("w", w), ("c", c), ("lo", lo), ("hi", hi)], op="Clip", rules=["blas.matmul_act"])
    # batched MatMul over a symbolic batch + bias + Sigmoid (references at N=3)
    a, w, b = u(rng, (3, 4, 8)), u(rng, (8, 5)), u(rng, (5,))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["b", "t"], ["t2"], name="bias"),
             helper.make_node("Sigmoid", ["t2"], ["y"], name="sig")]
    save(outdir, "epi_mm_sym_sig", nodes, [vinfo("a", ["N", 4, 8])], [vinfo("y", ["N", 4, 5])],
         {"a": a}, {"y": 1 / (1 + np.exp(-(f64(a) @ w + b)))}, [("w", w), ("b", b)],
         op="Sigmoid", rules=["blas.matmul_add_act"])
    # Conv without bias + per-channel constant bias (becomes the conv's) + Relu
    x, w, b = u(rng, (1, 4, 9, 9)), u(rng, (6, 4, 3, 3)), u(rng, (6, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
             helper.make_node("Relu", ["t2"], ["y"], name="relu")]
    y = relu(conv_ref(f64(x), f64(w), None, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b)
    save(outdir, "epi_conv_bias_relu", nodes, [vinfo("x", [1, 4, 9, 9])],
         [vinfo("y", list(y.shape))], {"x": x}, {"y": y}, [("w", w), ("b", b)], op="Relu",
         rules=["blas.conv_add_act"])
    # Conv with bias + residual (its own input) + Relu, and a bigger one to split
    for name, n, c, hw in (("epi_conv_res_relu", 2, 4, 8), ("epi_conv_res_par", 1, 16, 24)):
        x, w, b = u(rng, (n, c, hw, hw)), u(rng, (c, c, 3, 3)), u(rng, (c,))
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv",
                                  pads=[1, 1, 1, 1]),
                 helper.make_node("Add", ["t", "x"], ["t2"], name="res"),
                 helper.make_node("Relu", ["t2"], ["y"], name="relu")]
        y = relu(conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1) + x)
        save(outdir, name, nodes, [vinfo("x", list(x.shape))], [vinfo("y", list(y.shape))],
             {"x": x}, {"y": y}, [("w", w), ("b", b)], op="Relu", rules=["blas.conv_add_act"])
    # The epilogues the helpers finish block by block while the block is in
    # cache (a residual, then Relu or Clip), on outputs of more than one
    # block (64K floats): a Conv's column blocks, a batched MatMul's row
    # blocks (the 256-row minimum), a Gemm's row blocks initialised from C
    x, r = u(rng, (1, 16, 72, 72)), u(rng, (1, 16, 72, 72))
    w, b = u(rng, (16, 16, 3, 3)), u(rng, (16,))
    lo, hi = np.array(-0.1, np.float32), np.array(0.4, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "r"], ["t2"], name="res"),
             helper.make_node("Clip", ["t2", "lo", "hi"], ["y"], name="clip")]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 1) + r
    save(outdir, "epi_conv_tiles_par", nodes,
         [vinfo("x", list(x.shape)), vinfo("r", list(r.shape))], [vinfo("y", list(t.shape))],
         {"x": x, "r": r}, {"y": np.clip(t, lo, hi)}, [("w", w), ("b", b), ("lo", lo), ("hi", hi)],
         op="Clip", rules=["blas.conv_add_act"])
    a, w, r = u(rng, (2, 300, 40)), u(rng, (40, 260)), u(rng, (2, 300, 260))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["r", "t"], ["t2"], name="res"),
             helper.make_node("Relu", ["t2"], ["y"], name="relu")]
    save(outdir, "epi_mm_res_tiles_par", nodes,
         [vinfo("a", list(a.shape)), vinfo("r", list(r.shape))], [vinfo("y", [2, 300, 260])],
         {"a": a, "r": r}, {"y": relu(f64(a) @ w + r)}, [("w", w)], op="Relu",
         rules=["blas.matmul_add_act"])
    a, w, c = u(rng, (700, 24)), u(rng, (24, 120)), u(rng, (120,))
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["t"], name="gemm", beta=0.5),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    save(outdir, "epi_gemm_tiles_par", nodes, [vinfo("a", [700, 24])], [vinfo("y", [700, 120])],
         {"a": a}, {"y": relu(f64(a) @ w + 0.5 * c)}, [("w", w), ("c", c)], op="Relu",
         rules=["blas.matmul_act"])
    # Conv + constant bias [1,M,1,1] + residual input + LeakyRelu: a ResNet block end
    x, r = u(rng, (2, 3, 7, 7)), u(rng, (2, 5, 4, 4))
    w, b = u(rng, (5, 3, 3, 3)), u(rng, (1, 5, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "b"], ["t2"], name="bias"),
             helper.make_node("Add", ["r", "t2"], ["t3"], name="res"),
             helper.make_node("LeakyRelu", ["t3"], ["y"], name="leaky", alpha=0.2)]
    t = conv_ref(f64(x), f64(w), None, (2, 2), (1, 1, 1, 1), (1, 1), 1) + b + r
    save(outdir, "epi_conv_bias_res_leaky", nodes,
         [vinfo("x", [2, 3, 7, 7]), vinfo("r", [2, 5, 4, 4])], [vinfo("y", [2, 5, 4, 4])],
         {"x": x, "r": r}, {"y": np.where(t > 0, t, 0.2 * t)}, [("w", w), ("b", b)],
         op="LeakyRelu", rules=["blas.conv_bias_add_act"])
    # depthwise Conv + HardSigmoid; Conv + Tanh over a symbolic batch
    x, w, b = u(rng, (1, 6, 8, 8)), u(rng, (6, 1, 3, 3)), u(rng, (6,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", group=6,
                              pads=[1, 1, 1, 1]),
             helper.make_node("HardSigmoid", ["t"], ["y"], name="hsig", alpha=0.3, beta=0.4)]
    t = conv_ref(f64(x), f64(w), f64(b), (1, 1), (1, 1, 1, 1), (1, 1), 6)
    save(outdir, "epi_conv_hsig", nodes, [vinfo("x", [1, 6, 8, 8])], [vinfo("y", [1, 6, 8, 8])],
         {"x": x}, {"y": np.clip(0.3 * t + 0.4, 0, 1)}, [("w", w), ("b", b)],
         op="HardSigmoid", rules=["blas.conv_act"])
    x, w = u(rng, (2, 3, 6, 6)), u(rng, (4, 3, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv"),
             helper.make_node("Tanh", ["t"], ["y"], name="tanh")]
    t = conv_ref(f64(x), f64(w), None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    save(outdir, "epi_conv_sym_tanh", nodes, [vinfo("x", ["N", 3, 6, 6])],
         [vinfo("y", ["N", 4, 6, 6])], {"x": x}, {"y": np.tanh(t)}, [("w", w)], op="Tanh",
         rules=["blas.conv_act"])
    # an Add that widens the MatMul's output cannot run in place: it stays on c
    a, w, c = u(rng, (4, 6)), u(rng, (6, 1)), u(rng, (4, 5))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Add", ["t", "c"], ["y"], name="widen")]
    save(outdir, "epi_mm_widen", nodes, [vinfo("a", [4, 6])], [vinfo("y", [4, 5])], {"a": a},
         {"y": f64(a) @ w + c}, [("w", w), ("c", c)], op="Add", expect="c",
         rules=["blas.matmul"])
    # the MatMul's result is also a graph output: no epilogue (one exit)
    a, w = u(rng, (3, 5)), u(rng, (5, 4))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    save(outdir, "epi_mm_tap", nodes, [vinfo("a", [3, 5])],
         [vinfo("y", [3, 4]), vinfo("t", [3, 4])], {"a": a},
         {"y": relu(f64(a) @ w), "t": f64(a) @ w}, [("w", w)], op="Relu", expect="c",
         rules=["blas.matmul"])


    # Neg is in no built-in rule: on c, unless a user rule (--patterns) fuses it
    a, w = u(rng, (4, 7)), u(rng, (7, 3))
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Neg", ["t"], ["y"], name="neg")]
    save(outdir, "epi_mm_neg", nodes, [vinfo("a", [4, 7])], [vinfo("y", [4, 3])], {"a": a},
         {"y": -(f64(a) @ w)}, [("w", w)], op="Neg", expect="c", rules=["blas.matmul"])


def rules(json_path):
    with open(json_path) as f:
        meta = json.load(f)
    return " ".join(sorted(p["rule"] for p in meta["partitions"] if p["target"] == "blas"))


# ---- checks ----

def compare(want_dir, got_dir):
    files = sorted(f for f in os.listdir(want_dir) if f.endswith(".npy"))
    if not files:
        return "no reference files in %s" % want_dir
    for f in files:
        want = np.load(os.path.join(want_dir, f))
        path = os.path.join(got_dir, f)
        if not os.path.exists(path):
            return "missing output %s" % f
        got = np.load(path)
        if got.shape != want.shape:
            return "%s: shape %s, expected %s" % (f, got.shape, want.shape)
        if got.dtype != want.dtype:
            return "%s: dtype %s, expected %s" % (f, got.dtype, want.dtype)
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            return "%s: max abs error %g at %s" % (f, err.max(),
                                                   np.unravel_index(err.argmax(), err.shape))
    return None


def targets(json_path, op):
    with open(json_path) as f:
        meta = json.load(f)
    found = sorted({p["target"] for p in meta["partitions"]
                    if any(nd["op"] == op for nd in p["onnx_nodes"])})
    return ",".join(found) or "none"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        why = compare(sys.argv[2], sys.argv[3])
        if why:
            print(why)
            sys.exit(1)
        return
    if len(sys.argv) == 4 and sys.argv[1] == "target":
        print(targets(sys.argv[2], sys.argv[3]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "rules":
        print(rules(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = np.random.default_rng(20261122)
    matmuls(sys.argv[1], rng)
    gemms(sys.argv[1], rng)
    convs(sys.argv[1], rng)
    epilogues(sys.argv[1], rng)


if __name__ == "__main__":
    main()
