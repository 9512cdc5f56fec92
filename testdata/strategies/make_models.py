#!/usr/bin/python3
"""Models and inputs for tests/strategies.sh (Debian's python3-onnx, numpy).

usage: make_models.py OUTDIR
  matmul_sym.onnx   MatMul [M, 32] x const [32, 24], M symbolic: the c target's
                    strategy gives two variants (matmul.micro, matmul.gemv)
                    and a run-time dispatcher
  matmul_kn.onnx    MatMul of two inputs [M, K] x [K, 24], M and K symbolic:
                    all three specializations as variants
  matmul_batched.onnx  MatMul [B, 20, 32] x [B, 32, 24], B symbolic: B packed
                    matrix by matrix (matmul.micro_batched)
  conv_kinds.onnx   a depthwise Conv, a 1x1 Conv and a 3x3 Conv: one static
                    choice each
  conv_sym.onnx     a grouped 3x3 Conv, a 1x1 stride-2 Conv and a 3x3 Conv with
                    2 output channels, batch N symbolic
  micro_edges.onnx  shapes at the edges of the c target's micro-kernel GEMM
                    (rt_cgemm.h: 16-column panels, row tiles, blocks of 72
                    rows of A packed, K blocks of at most 256): Gemms with M,
                    N, K of 1 or not a multiple of the tile, transposed A or B,
                    alpha, beta, every bias broadcast, a constant B (packed at
                    compile time) or an input B (packed at run time), A packed
                    (transposed, or 4 panels or more) or read in place; a
                    batched MatMul folded into M; a batch of B matrices, A
                    broadcast over it, and one against a broadcast batch of A;
                    a grouped, strided, dilated, asymmetrically padded Conv
                    with bias on 2 images, a 1-D one, one of more panels than
                    rt_cconv.h's slots, one strided and dilated, a pointwise
                    one; MatMuls of 1 to 3 rows and a Gemm of 4 against a
                    constant B (rt_cgemm's GEMV form: several K blocks, a
                    narrow last panel alone or in a pair); two 1-D Convs of
                    conv.im2col_tiles (rt_im2col2d as one row); inputs me_*.npy,
                    expected outputs in me_exp/
  rows_edges.onnx   depthwise Convs and MaxPools of the c target's row form
                    (strides, dilations, asymmetric pads, ceil_mode, a 5x5
                    kernel) on x [2, 5, 10, 36] (output rows of 32 or more:
                    narrower depthwise ones are conv.depthwise_vec's):
                    re_x.npy, expected in re_exp/
  dw_edges.onnx     depthwise Convs of conv.depthwise_vec (rt_cdw.h, 8
                    channels a vector), batch N symbolic: 11 channels (a
                    block and a tail of 3) and 3 (a tail alone), strides,
                    dilations, asymmetric pads, 5x5 and 7x1 kernels, strips
                    of the padded buffer (7x7 and 5x5 stride 2 on 45 rows),
                    with Sigmoid * x, Relu, and a per-channel Add + Relu
                    after them: de_x*_N.npy, expected in de_exp_N/ (N = 1, 3)
  pwc_edges.onnx    pointwise Convs of conv.1x1_chan (rt_cpw.h's rt_cpwc,
                    the channels a vector) over images of 49, 25, 9 and 63
                    pixels, and 196 of 256 channels (of 255: conv.1x1_tiles):
                    a block of 48 channels and a tail, two blocks,
                    one vector, every tile's channel tail, with Sigmoid * x,
                    Relu, and a per-channel Add + Relu after them, batch N
                    symbolic: pc_p*_N.npy, expected in pc_exp_N/ (N = 1, 3)
  pool_edges.onnx   MaxPools and AveragePools of rt_cpool.h (maxpool.vrows,
                    averagepool.vrows) at the edges of its row buffer: odd
                    sizes, strides 1, 2, 3, dilations, asymmetric pads,
                    ceil_mode, count_include_pad, auto_pad, windows wholly in
                    the padding, 1-D, a row of 300 columns, NaN inputs, one
                    large enough for the thread team; float64 ones for the
                    loop forms (maxpool.rows, averagepool.window): pe_*.npy,
                    expected in pe_exp/
  gap_edges.onnx    GlobalAveragePools by rows (globalaveragepool.rows): 7x7
                    planes, 3-D, 1-D, one large enough for threads, and a
                    float64 one (the loop form), batch N symbolic:
                    ge_*_N.npy, expected in ge_exp_N/ (N = 1, 3)
  epi_edges.onnx    fused epilogues rt_cgemm.h applies on write-back: Convs
                    (conv.micro) + Relu, + Clip(0, 6), + residual Add (either
                    operand order) with Relu, none or Clip, a Gemm + Relu and
                    a MatMul + Add + Clip of one bound (gemm.micro,
                    matmul.micro), at edge tiles (M = 40, 99 pixels), with a
                    NaN input; and a Conv + Relu whose Conv output is read
                    too (the epilogue loop stays); depthwise Convs
                    (conv.depthwise_vec: the chain per block of planes) +
                    Clip, strided + residual Add + Relu, and + a per-channel
                    Add + Relu (a broadcast: the loop after the nest stays);
                    the blocked GEMM's Convs (conv.1x1, conv.im2col: the
                    chain per block of pixels) + Clip, + residual Add +
                    Relu, and + a per-channel Add + Relu; one row through
                    the GEMV form (matmul.gemv + residual Add + Relu,
                    gemm.micro + Clip): ee_*.npy, expected in ee_exp/
  softmax_edges.onnx  Softmax and LogSoftmax rows (softmax.rows) with attention
                    masks (-1e4, -FLT_MAX, -inf), a NaN row, an all -inf row,
                    a row with +inf,
                    K = 21 and K = 5, and one along a middle axis (loops);
                    softmax_v11.onnx the same at opset 11 (rows from the axis
                    on): se_x.npy, se_x5.npy, expected in se_exp/, se11_exp/
  wino_edges.onnx   3x3 stride-1 Convs of conv.winograd (rt_cwino.h, F(4x4, 3x3)):
                    one panel of 16 tiles; odd sizes with asymmetric pads and
                    2 images (edge tiles, a partial last panel, M and C not
                    multiples of the row tile or the channel chunk); 300
                    channels (two K blocks); 306 tiles (blocks of panels, a
                    team of threads); no padding (every patch inside);
                    auto_pad SAME_UPPER; + Relu, + Clip, + residual Add +
                    Relu; and one of 4 tiles that stays on conv.micro;
                    wino_sym.onnx one with the batch N symbolic: we_*.npy,
                    expected in we_exp/, ws_x_N.npy, ws_exp_N/ for N in 1, 3
  lnorm_edges.onnx  LayerNormalization (opset 17) by rows (layernorm.rows): K =
                    21 with a NaN row and a constant row, the last two axes
                    with Mean and InvStdDev and no bias, 64 rows of 256 (a
                    team of threads), and a scale broadcast inside the
                    normalised axes (loops): ln_x.npy, ln_xb.npy, in ln_exp/
  rmsnorm_edges.onnx RMSNormalization (opset 23) by rows (rmsnorm.rows), the
                    same cases with a zero row for the constant one and no
                    bias: rms_x.npy, rms_xb.npy, expected in rms_exp/
  transpose_edges.onnx Transposes that move the last axis (transpose.blocks,
                    rt_cvec.h's squares): BERT's key transpose (0, 2, 3, 1)
                    and the reversal of a [2, 37, 3, 53] x (squares cut at
                    both edges, the other axes a parallel region), a 37 x 53
                    matrix, a 300 x 260 one (columns split between threads),
                    and (0, 2, 1, 3), which keeps the last axis (loops):
                    tr_x.npy, tr_m.npy, tr_b.npy, expected in tr_exp/
and their inputs and expected outputs (numpy, in float64): a_M.npy/y_M.npy
for M in MS, kn_a_M_K.npy, kn_b_M_K.npy, kn_y_M_K.npy, bt_a.npy, bt_b.npy,
bt_y.npy, x.npy/conv_y.npy and cs_x_N.npy/cs_y_N.npy for N in 1 and 3.
"""

MS = (1, 4, 16, 17, 64)
KN = ((4, 8), (4, 32), (64, 32), (19, 40))
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    w = rng.standard_normal((32, 24)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")], "matmul_sym",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["M", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 24])],
        [numpy_helper.from_array(w, "w")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "matmul_sym.onnx"))
    for m in MS:
        a = rng.standard_normal((m, 32)).astype(np.float32)
        np.save(os.path.join(out, "a_%d.npy" % m), a)
        np.save(os.path.join(out, "y_%d.npy" % m), (a.astype(np.float64) @ w).astype(np.float32))

    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    dw = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    pw = rng.standard_normal((16, 8, 1, 1)).astype(np.float32)
    full = rng.standard_normal((4, 16, 3, 3)).astype(np.float32)
    b16 = rng.standard_normal(16).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "dw"], ["h1"], name="depthwise", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["h1", "pw", "b16"], ["h2"], name="pointwise"),
        helper.make_node("Conv", ["h2", "full"], ["y"], name="full3x3", strides=[2, 2]),
    ]
    g = helper.make_graph(nodes, "conv_kinds",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
                          [numpy_helper.from_array(v, n) for n, v in
                           [("dw", dw), ("pw", pw), ("full", full), ("b16", b16)]])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "conv_kinds.onnx"))
    np.save(os.path.join(out, "x.npy"), x)

    def conv(x, w, b=None, stride=1, pad=0, group=1):
        n, c, h, wd = x.shape
        m, cg, kh, kw = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
        y = np.zeros((n, m, oh, ow))
        for o in range(m):
            g0 = o // (m // group) * cg
            for i in range(oh):
                for j in range(ow):
                    patch = xp[:, g0:g0 + cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                    y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
            if b is not None:
                y[:, o] += b[o]
        return y

    y = conv(conv(conv(x.astype(np.float64), dw, pad=1, group=8), pw, b16), full, stride=2)
    np.save(os.path.join(out, "conv_y.npy"), y.astype(np.float32))

    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "matmul_kn",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["M", "K"]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["K", 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 24])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "matmul_kn.onnx"))
    for m, k in KN:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, 24)).astype(np.float32)
        np.save(os.path.join(out, "kn_a_%d_%d.npy" % (m, k)), a)
        np.save(os.path.join(out, "kn_b_%d_%d.npy" % (m, k)), b)
        np.save(os.path.join(out, "kn_y_%d_%d.npy" % (m, k)),
                (a.astype(np.float64) @ b).astype(np.float32))

    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "matmul_batched",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["B", 20, 32]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["B", 32, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 20, 24])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "matmul_batched.onnx"))
    a = rng.standard_normal((3, 20, 32)).astype(np.float32)
    b = rng.standard_normal((3, 32, 24)).astype(np.float32)
    np.save(os.path.join(out, "bt_a.npy"), a)
    np.save(os.path.join(out, "bt_b.npy"), b)
    np.save(os.path.join(out, "bt_y.npy"), (a.astype(np.float64) @ b).astype(np.float32))

    gw = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    sw = rng.standard_normal((8, 8, 1, 1)).astype(np.float32)
    tw = rng.standard_normal((2, 8, 3, 3)).astype(np.float32)
    b8 = rng.standard_normal(8).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "gw", "b8"], ["h1"], name="grouped", group=2,
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["h1", "sw"], ["h2"], name="strided1x1", strides=[2, 2]),
        helper.make_node("Conv", ["h2", "tw"], ["y"], name="two_out", pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "conv_sym",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 5, 5])],
                          [numpy_helper.from_array(v, n) for n, v in
                           [("gw", gw), ("sw", sw), ("tw", tw), ("b8", b8)]])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "conv_sym.onnx"))
    for n in (1, 3):
        x = rng.standard_normal((n, 8, 10, 10)).astype(np.float32)
        y = conv(conv(conv(x.astype(np.float64), gw, b8, pad=1, group=2), sw, stride=2), tw, pad=1)
        np.save(os.path.join(out, "cs_x_%d.npy" % n), x)
        np.save(os.path.join(out, "cs_y_%d.npy" % n), y.astype(np.float32))

    micro_edges(out, rng)
    rows_edges(out, rng)
    dw_edges(out, rng)
    pwc_edges(out, rng)
    gap_edges(out, rng)
    pool_edges(out, rng)
    epi_edges(out, rng)
    softmax_edges(out, rng)
    wino_edges(out, rng)
    lnorm_edges(out, rng)
    rmsnorm_edges(out, rng)
    transpose_edges(out, rng)


def conv_ref(x, w, b, strides, dil, pads, group):
    """Conv in float64: pads as ONNX [top, left, bottom, right]."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    for o in range(m):
        g0 = o // (m // group) * cg
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * strides[0], j * strides[1]
                patch = xp[:, g0:g0 + cg, r0:r0 + dil[0] * (kh - 1) + 1:dil[0],
                           c0:c0 + dil[1] * (kw - 1) + 1:dil[1]]
                y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
        if b is not None:
            y[:, o] += b[o]
    return y


def micro_edges(out, rng):
    """micro_edges.onnx: one node per case, each with inputs and outputs of its own."""
    f = np.float32
    nodes, inits, ins, outs, feeds, exp = [], [], [], [], {}, {}

    def inp(name, arr):
        ins.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(arr.shape)))
        feeds[name] = arr

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))

    def output(name, y):
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(y.shape)))
        exp[name] = y.astype(f)

    # name, M, K, N, transA, transB, alpha, beta, C shape or None, B constant
    gemms = [("g_tiny", 1, 5, 3, 0, 0, 1.0, 1.0, None, True),
             ("g_edges", 17, 33, 19, 0, 1, 0.5, 2.0, (19,), True),
             ("g_kblocks", 7, 300, 40, 1, 0, 1.0, -1.0, (7, 1), False),
             ("g_full_c", 13, 20, 16, 0, 1, 1.0, 0.5, (13, 16), False),
             ("g_scalar_c", 25, 129, 33, 1, 1, 2.0, 1.0, (1,), True),
             ("g_blocks", 80, 520, 70, 0, 0, 1.5, 0.5, (70,), True),
             # last tiles of 4 and 3 rows (AVX2's 6-row tiles), 6 and 3 (AVX-512's 8)
             ("g_rows4", 22, 48, 40, 0, 1, 1.0, 1.0, (40,), True),
             ("g_rows3", 27, 64, 33, 0, 0, 1.0, 1.0, None, True)]
    for name, m, k, n, ta, tb, alpha, beta, cs, bconst in gemms:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(f)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(f)
        inp(name + "_a", a)
        (const if bconst else inp)(name + "_b", b)
        names = [name + "_a", name + "_b"]
        y = alpha * ((a.T if ta else a).astype(np.float64) @ (b.T if tb else b))
        if cs is not None:
            c = rng.standard_normal(cs).astype(f)
            const(name + "_c", c)
            names.append(name + "_c")
            y = y + beta * c
        nodes.append(helper.make_node("Gemm", names, [name + "_y"], name=name, alpha=alpha,
                                      beta=beta, transA=ta, transB=tb))
        output(name + "_y", y)
    # a batch of A folded into M against one constant B; an input B packed per run
    a = rng.standard_normal((2, 3, 9, 40)).astype(f)
    b = rng.standard_normal((40, 21)).astype(f)
    inp("mm_batch_a", a)
    const("mm_batch_b", b)
    nodes.append(helper.make_node("MatMul", ["mm_batch_a", "mm_batch_b"], ["mm_batch_y"],
                                  name="mm_batch"))
    output("mm_batch_y", a.astype(np.float64) @ b)
    a = rng.standard_normal((20, 24)).astype(f)
    b = rng.standard_normal((24, 18)).astype(f)
    inp("mm_input_a", a)
    inp("mm_input_b", b)
    nodes.append(helper.make_node("MatMul", ["mm_input_a", "mm_input_b"], ["mm_input_y"],
                                  name="mm_input"))
    output("mm_input_y", a.astype(np.float64) @ b)
    # a batch of B (packed matrix by matrix at run time), A broadcast over it
    a = rng.standard_normal((1, 17, 20)).astype(f)
    b = rng.standard_normal((3, 20, 19)).astype(f)
    inp("mm_bbatch_a", a)
    inp("mm_bbatch_b", b)
    nodes.append(helper.make_node("MatMul", ["mm_bbatch_a", "mm_bbatch_b"], ["mm_bbatch_y"],
                                  name="mm_bbatch"))
    output("mm_bbatch_y", a.astype(np.float64) @ b)
    # a batch of B against a broadcast batch of A: [2, 1, 17, 40] x [3, 40, 21]
    a = rng.standard_normal((2, 1, 17, 40)).astype(f)
    b = rng.standard_normal((3, 40, 21)).astype(f)
    inp("mm_bcast_a", a)
    inp("mm_bcast_b", b)
    nodes.append(helper.make_node("MatMul", ["mm_bcast_a", "mm_bcast_b"], ["mm_bcast_y"],
                                  name="mm_bcast"))
    output("mm_bcast_y", a.astype(np.float64) @ b)
    # grouped (35 output channels each: tiles with an edge row), strided,
    # dilated, asymmetric pads, bias, two images, 5 x 6 = 30 pixels
    x = rng.standard_normal((2, 16, 11, 9)).astype(f)
    w = rng.standard_normal((70, 8, 3, 3)).astype(f)
    bias = rng.standard_normal(70).astype(f)
    inp("cv_x", x)
    const("cv_w", w)
    const("cv_bias", bias)
    nodes.append(helper.make_node("Conv", ["cv_x", "cv_w", "cv_bias"], ["cv_y"], name="cv",
                                  group=2, strides=[2, 1], dilations=[1, 2],
                                  pads=[1, 0, 2, 1]))
    output("cv_y", conv_ref(x.astype(np.float64), w, bias, (2, 1), (1, 2), (1, 0, 2, 1), 2))
    # 1-D (a row of one pixel high), strided, asymmetric pads, 19 pixels;
    # 667 pixels: more panels than rt_cconv2d's slots, no bias; stride 2 and
    # dilation 2 with a run of pixels across output rows in every panel
    x = rng.standard_normal((2, 12, 37)).astype(f)
    w = rng.standard_normal((33, 12, 7)).astype(f)
    bias = rng.standard_normal(33).astype(f)
    inp("cv1d_x", x)
    const("cv1d_w", w)
    const("cv1d_bias", bias)
    nodes.append(helper.make_node("Conv", ["cv1d_x", "cv1d_w", "cv1d_bias"], ["cv1d_y"],
                                  name="cv1d", strides=[2], pads=[3, 2]))
    output("cv1d_y", conv_ref(x[:, :, None, :].astype(np.float64), w[:, :, None, :], bias,
                              (1, 2), (1, 1), (0, 3, 0, 2), 1)[:, :, 0, :])
    x = rng.standard_normal((1, 8, 23, 29)).astype(f)
    w = rng.standard_normal((40, 8, 3, 3)).astype(f)
    inp("cvwide_x", x)
    const("cvwide_w", w)
    nodes.append(helper.make_node("Conv", ["cvwide_x", "cvwide_w"], ["cvwide_y"], name="cvwide",
                                  pads=[1, 1, 1, 1]))
    output("cvwide_y", conv_ref(x.astype(np.float64), w, None, (1, 1), (1, 1), (1, 1, 1, 1), 1))
    x = rng.standard_normal((1, 16, 15, 13)).astype(f)
    w = rng.standard_normal((32, 16, 3, 3)).astype(f)
    inp("cvs2_x", x)
    const("cvs2_w", w)
    nodes.append(helper.make_node("Conv", ["cvs2_x", "cvs2_w"], ["cvs2_y"], name="cvs2",
                                  strides=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1]))
    output("cvs2_y", conv_ref(x.astype(np.float64), w, None, (2, 2), (2, 2), (1, 1, 1, 1), 1))
    # pointwise, 35 pixels: conv.1x1_chan, 40 channels in a tile of 48
    x = rng.standard_normal((2, 64, 5, 7)).astype(f)
    w = rng.standard_normal((40, 64, 1, 1)).astype(f)
    bias = rng.standard_normal(40).astype(f)
    inp("cvpw_x", x)
    const("cvpw_w", w)
    const("cvpw_bias", bias)
    nodes.append(helper.make_node("Conv", ["cvpw_x", "cvpw_w", "cvpw_bias"], ["cvpw_y"],
                                  name="cvpw"))
    output("cvpw_y", conv_ref(x.astype(np.float64), w, bias, (1, 1), (1, 1), (0, 0, 0, 0), 1))
    # rt_cgemm's GEMV form (rows <= RT_CG_GV_MR: 1 with SSE, 3 with AVX2, 4
    # with AVX-512) against a constant B: K blocks (600: three of 200),
    # panel pairs with a single narrow last one (49, 40 columns), a batch
    # folded into 3 rows, a Gemm of 4 rows with its bias, alpha and beta
    gr = np.random.default_rng(41)
    for name, ashape, k, n in [("gv_m1", (1, 600), 600, 49), ("gv_m2", (2, 300), 300, 40),
                               ("gv_m3", (1, 3, 70), 70, 33)]:
        a = gr.standard_normal(ashape).astype(f)
        b = gr.standard_normal((k, n)).astype(f)
        inp(name + "_a", a)
        const(name + "_b", b)
        nodes.append(helper.make_node("MatMul", [name + "_a", name + "_b"], [name + "_y"],
                                      name=name))
        output(name + "_y", a.astype(np.float64) @ b)
    a = gr.standard_normal((4, 100)).astype(f)
    b = gr.standard_normal((37, 100)).astype(f)
    c = gr.standard_normal(37).astype(f)
    inp("gv_g4_a", a)
    const("gv_g4_b", b)
    const("gv_g4_c", c)
    nodes.append(helper.make_node("Gemm", ["gv_g4_a", "gv_g4_b", "gv_g4_c"], ["gv_g4_y"],
                                  name="gv_g4", alpha=0.5, beta=2.0, transB=1))
    output("gv_g4_y", 0.5 * (a.astype(np.float64) @ b.T) + 2.0 * c)
    # 1-D Convs of C x kernel < 64 (conv.im2col_tiles, rt_im2col2d as one row):
    # a speech front end's (one channel, kernel 10, stride 5), and a dilated
    # one of stride 2 with asymmetric pads
    for name, (c1, ln, m1, k1, st, dl, pd) in (("cv1d_col", (1, 203, 16, 10, 5, 1, (0, 0))),
                                               ("cv1d_dil", (3, 61, 8, 5, 2, 2, (3, 1)))):
        x = rng.standard_normal((2, c1, ln)).astype(f)
        w = rng.standard_normal((m1, c1, k1)).astype(f)
        inp(name + "_x", x)
        const(name + "_w", w)
        nodes.append(helper.make_node("Conv", [name + "_x", name + "_w"], [name + "_y"],
                                      name=name, strides=[st], dilations=[dl], pads=list(pd)))
        output(name + "_y", conv_ref(x[:, :, None, :].astype(np.float64), w[:, :, None, :],
                                     None, (1, st), (1, dl), (0, pd[0], 0, pd[1]),
                                     1)[:, :, 0, :])
    g = helper.make_graph(nodes, "micro_edges", ins, outs, inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "micro_edges.onnx"))
    os.makedirs(os.path.join(out, "me_exp"), exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(out, "me_%s.npy" % k), v)
    for k, v in exp.items():
        np.save(os.path.join(out, "me_exp", k + ".npy"), v)


def maxpool_ref(x, k, strides, dil, pads, out_hw):
    """MaxPool in float64 to an output of out_hw, -inf past every edge."""
    n, c, h, w = x.shape
    extra = [max(0, (out_hw[i] - 1) * strides[i] + dil[i] * (k[i] - 1) + 1 -
                 (x.shape[2 + i] + pads[i])) for i in range(2)]
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], extra[0]), (pads[1], extra[1])),
                constant_values=-np.inf)
    y = np.full((n, c) + tuple(out_hw), -np.inf)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            r0, c0 = i * strides[0], j * strides[1]
            win = xp[:, :, r0:r0 + dil[0] * (k[0] - 1) + 1:dil[0],
                     c0:c0 + dil[1] * (k[1] - 1) + 1:dil[1]]
            y[:, :, i, j] = win.max(axis=(2, 3))
    return y


def rows_edges(out, rng):
    """rows_edges.onnx: depthwise Convs and MaxPools side by side on one x."""
    f = np.float32
    x = rng.standard_normal((2, 5, 10, 36)).astype(f)
    xd = x.astype(np.float64)
    w3 = rng.standard_normal((5, 1, 3, 3)).astype(f)
    w5 = rng.standard_normal((5, 1, 5, 5)).astype(f)
    bias = rng.standard_normal(5).astype(f)
    nodes = [
        helper.make_node("Conv", ["x", "w3", "bias"], ["dw_strided"], name="dw_strided",
                         group=5, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1]),
        helper.make_node("Conv", ["x", "w5"], ["dw_5x5"], name="dw_5x5", group=5,
                         pads=[2, 2, 2, 2]),
        helper.make_node("MaxPool", ["x"], ["mp_resnet"], name="mp_resnet",
                         kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["mp_ceil"], name="mp_ceil", kernel_shape=[3, 2],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("MaxPool", ["x"], ["mp_dilated"], name="mp_dilated",
                         kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1]),
    ]
    exp = {
        "dw_strided": conv_ref(xd, w3, bias, (2, 1), (1, 2), (1, 0, 2, 1), 5),
        "dw_5x5": conv_ref(xd, w5, None, (1, 1), (1, 1), (2, 2, 2, 2), 5),
        "mp_resnet": maxpool_ref(xd, (3, 3), (2, 2), (1, 1), (1, 1), (5, 18)),
        "mp_ceil": maxpool_ref(xd, (3, 2), (2, 2), (1, 1), (0, 0), (5, 18)),
        "mp_dilated": maxpool_ref(xd, (2, 2), (1, 1), (2, 2), (1, 1), (10, 36)),
    }
    g = helper.make_graph(
        nodes, "rows_edges", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 10, 36])],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()],
        [numpy_helper.from_array(v, n) for n, v in [("w3", w3), ("w5", w5), ("bias", bias)]])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "rows_edges.onnx"))
    np.save(os.path.join(out, "re_x.npy"), x)
    os.makedirs(os.path.join(out, "re_exp"), exist_ok=True)
    for k, v in exp.items():
        np.save(os.path.join(out, "re_exp", k + ".npy"), v.astype(f))


def pool_out(n, k, s, d, pb, pe, ceil):
    """An output extent as window_plan computes it (ONNX's rule)."""
    span = n + pb + pe - ((k - 1) * d + 1)
    o = (span + s - 1) // s + 1 if ceil else span // s + 1
    if ceil and (o - 1) * s >= n + pb:
        o -= 1
    return o


def pool_ref(x, k, s=None, d=None, pads=None, ceil=0, kind="max", incl=0):
    """MaxPool or AveragePool of x [N, C, spatial...] in float64, 1-D or 2-D.

    An average divides by the taps inside the image, or with incl by those
    inside the padded image (a ceil_mode window past it counts less).
    """
    r = x.ndim - 2
    s = s or [1] * r
    d = d or [1] * r
    pads = pads or [0] * (2 * r)
    if r == 1:
        return pool_ref(x[:, :, None, :], [1] + list(k), [1] + list(s), [1] + list(d),
                        [0, pads[0], 0, pads[1]], ceil, kind, incl)[:, :, 0, :]
    n, c, h, w = x.shape
    out = [pool_out(x.shape[2 + i], k[i], s[i], d[i], pads[i], pads[i + 2], ceil)
           for i in range(2)]
    y = np.zeros((n, c) + tuple(out))
    for i in range(out[0]):
        for j in range(out[1]):
            taps, cnt = [], [0, 0]
            rows = [i * s[0] - pads[0] + a * d[0] for a in range(k[0])]
            cols = [j * s[1] - pads[1] + b * d[1] for b in range(k[1])]
            lim = [h + pads[2], w + pads[3]] if incl else [h, w]
            cnt = [sum(1 for p in rows if p < lim[0] and (incl or p >= 0)),
                   sum(1 for p in cols if p < lim[1] and (incl or p >= 0))]
            for p in rows:
                for q in cols:
                    if 0 <= p < h and 0 <= q < w:
                        taps.append(x[:, :, p, q])
            if kind == "max":
                y[:, :, i, j] = np.max(taps, axis=0) if taps else -np.inf
            else:
                with np.errstate(invalid="ignore"):
                    y[:, :, i, j] = (np.sum(taps, axis=0) if taps else 0.0) / (cnt[0] * cnt[1])
    return y


def pool_edges(out, rng):
    """pool_edges.onnx: pools of every window geometry rt_cpool.h takes."""
    f = np.float32
    xs = {
        "x": rng.standard_normal((2, 3, 11, 13)).astype(f),
        "xn": rng.standard_normal((1, 2, 7, 9)).astype(f),
        "x1": rng.standard_normal((2, 3, 17)).astype(f),
        "xw": rng.standard_normal((1, 2, 3, 300)).astype(f),
        "xb": rng.standard_normal((1, 8, 64, 64)).astype(f),
        "xd": rng.standard_normal((2, 3, 11, 13)),
    }
    xs["xn"][0, 0, 3, 4] = np.nan	# one window's NaN: every output reading it is NaN
    xs["xn"][0, 1, 0, :] = np.inf
    # name: (op, input, attributes, reference arguments)
    cases = {
        "mp_s1": ("MaxPool", "x", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  dict(k=[3, 3], pads=[1, 1, 1, 1])),
        "mp_resnet": ("MaxPool", "x", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                      dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1])),
        "mp_s3": ("MaxPool", "x", dict(kernel_shape=[3, 2], strides=[3, 3], pads=[0, 2, 1, 0]),
                  dict(k=[3, 2], s=[3, 3], pads=[0, 2, 1, 0])),
        "mp_dil": ("MaxPool", "x", dict(kernel_shape=[3, 3], strides=[2, 1], dilations=[2, 3],
                                        pads=[2, 1, 0, 3]),
                   dict(k=[3, 3], s=[2, 1], d=[2, 3], pads=[2, 1, 0, 3])),
        "mp_ceil": ("MaxPool", "x", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 0],
                                         ceil_mode=1),
                    dict(k=[3, 3], s=[2, 2], pads=[0, 0, 1, 0], ceil=1)),
        "mp_big": ("MaxPool", "x", dict(kernel_shape=[5, 7], strides=[2, 3], ceil_mode=1),
                   dict(k=[5, 7], s=[2, 3], ceil=1)),
        "mp_padonly": ("MaxPool", "x", dict(kernel_shape=[2, 2], strides=[3, 4], pads=[2, 2, 2, 2]),
                       dict(k=[2, 2], s=[3, 4], pads=[2, 2, 2, 2])),
        "mp_same": ("MaxPool", "x", dict(kernel_shape=[4, 3], strides=[3, 2], auto_pad="SAME_UPPER"),
                    dict(k=[4, 3], s=[3, 2], pads=[1, 1, 1, 1])),
        "mp_nan": ("MaxPool", "xn", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                   dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1])),
        "mp_1d": ("MaxPool", "x1", dict(kernel_shape=[4], strides=[3], pads=[1, 2], ceil_mode=1),
                  dict(k=[4], s=[3], pads=[1, 2], ceil=1)),
        "mp_wide": ("MaxPool", "xw", dict(kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0]),
                    dict(k=[2, 3], s=[1, 2], pads=[0, 1, 1, 0])),
        "mp_team": ("MaxPool", "xb", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                    dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1])),
        "ap_excl": ("AveragePool", "x", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                    dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1], kind="avg")),
        "ap_incl": ("AveragePool", "x", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                             count_include_pad=1),
                    dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1], kind="avg", incl=1)),
        "ap_ceil_incl": ("AveragePool", "x", dict(kernel_shape=[3, 2], strides=[2, 3],
                                                  pads=[1, 0, 0, 2], ceil_mode=1,
                                                  count_include_pad=1),
                         dict(k=[3, 2], s=[2, 3], pads=[1, 0, 0, 2], ceil=1, kind="avg", incl=1)),
        "ap_dil": ("AveragePool", "x", dict(kernel_shape=[2, 3], strides=[1, 3], dilations=[3, 2],
                                            pads=[1, 2, 2, 1]),
                   dict(k=[2, 3], s=[1, 3], d=[3, 2], pads=[1, 2, 2, 1], kind="avg")),
        "ap_s1": ("AveragePool", "xn", dict(kernel_shape=[2, 2]), dict(k=[2, 2], kind="avg")),
        "ap_1d": ("AveragePool", "x1", dict(kernel_shape=[3], strides=[2], pads=[2, 1]),
                  dict(k=[3], s=[2], pads=[2, 1], kind="avg")),
        "ap_team": ("AveragePool", "xb", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                              count_include_pad=1),
                    dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1], kind="avg", incl=1)),
        "mpd_resnet": ("MaxPool", "xd", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                       dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1])),
        "mpd_ceil": ("MaxPool", "xd", dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
                     dict(k=[3, 2], s=[2, 2], ceil=1)),
        "mpd_dil": ("MaxPool", "xd", dict(kernel_shape=[3, 3], strides=[2, 1], dilations=[2, 3],
                                          pads=[2, 1, 0, 3]),
                    dict(k=[3, 3], s=[2, 1], d=[2, 3], pads=[2, 1, 0, 3])),
        "apd_excl": ("AveragePool", "xd", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                     dict(k=[3, 3], s=[2, 2], pads=[1, 1, 1, 1], kind="avg")),
    }
    nodes, exp = [], {}
    for name, (op, xin, attrs, ref) in cases.items():
        nodes.append(helper.make_node(op, [xin], [name], name=name, **attrs))
        y = pool_ref(xs[xin].astype(np.float64), **ref)
        exp[name] = y.astype(xs[xin].dtype)
    ty = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE}
    g = helper.make_graph(
        nodes, "pool_edges",
        [helper.make_tensor_value_info(k, ty[v.dtype], list(v.shape)) for k, v in xs.items()],
        [helper.make_tensor_value_info(k, ty[v.dtype], list(v.shape)) for k, v in exp.items()])
    # opset 19 for AveragePool's dilations, which Debian's onnx (1.12, opset
    # 17) cannot check: saved unchecked
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    onnx.save(m, os.path.join(out, "pool_edges.onnx"))
    os.makedirs(os.path.join(out, "pe_exp"), exist_ok=True)
    for k, v in xs.items():
        np.save(os.path.join(out, "pe_%s.npy" % k), v)
    for k, v in exp.items():
        np.save(os.path.join(out, "pe_exp", k + ".npy"), v)


def chain_after(nodes, inits, rng, name, y, after, c):
    """The nodes after a Conv's output y named name: Sigmoid * x, Relu, a per-channel
    Add + Relu (a constant of c channels into inits) or none."""
    if after == "silu":
        nodes.append(helper.make_node("Sigmoid", [y], [name + "_sg"]))
        nodes.append(helper.make_node("Mul", [y, name + "_sg"], [name]))
    elif after == "relu":
        nodes.append(helper.make_node("Relu", [y], [name]))
    elif after == "addrelu":
        inits[name + "_c"] = rng.standard_normal((c, 1, 1)).astype(np.float32)
        nodes.append(helper.make_node("Add", [y, name + "_c"], [name + "_s"]))
        nodes.append(helper.make_node("Relu", [name + "_s"], [name]))


def ref_after(v, after, inits, name):
    """chain_after's nodes on v in numpy."""
    if after == "silu":
        return v / (1 + np.exp(-v))
    if after == "relu":
        return np.maximum(v, 0)
    if after == "addrelu":
        return np.maximum(v + inits[name + "_c"], 0)
    return v


def save_edges(out, nodes, name, shapes, outs, inits, xs, exp, prefix):
    """The model of batch N symbolic, its inputs PREFIX_X_N.npy and outputs in PREFIX_exp_N/."""
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N"] + list(sh))
         for n, sh in shapes.items()], outs,
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, name + ".onnx"))
    for i, b in enumerate((1, 3)):
        for n in shapes:
            np.save(os.path.join(out, "%s_%s_%d.npy" % (prefix, n, b)), xs[n][i])
        d = os.path.join(out, "%s_exp_%d" % (prefix, b))
        os.makedirs(d, exist_ok=True)
        for k, v in exp[i].items():
            np.save(os.path.join(d, k + ".npy"), v.astype(np.float32))


def dw_edges(out, rng):
    """dw_edges.onnx: conv.depthwise_vec's edges, batch N symbolic (run at 1 and 3)."""
    f = np.float32
    shapes = {"xa": (11, 9, 13), "xb": (3, 6, 5), "xc": (9, 45, 31)}
    cases = [   # name, input, kernel, strides, dilations, pads, bias, after
        ("dv_tail", "xa", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), True, "silu"),
        ("dv_strided", "xa", (3, 3), (2, 1), (1, 2), (1, 0, 2, 1), True, "relu"),
        ("dv_5x5", "xa", (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), False, "addrelu"),
        ("dv_7x1", "xa", (7, 1), (1, 1), (1, 1), (3, 0, 3, 0), True, None),
        ("dv_small", "xb", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), True, "silu"),
        ("dv_strips", "xc", (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), True, "relu"),
        ("dv_strips_s2", "xc", (5, 5), (2, 2), (1, 1), (2, 2, 2, 2), False, None),
    ]
    nodes, inits, outs = [], {}, []
    xs = {n: [rng.standard_normal((b,) + sh).astype(f) for b in (1, 3)]
          for n, sh in shapes.items()}
    exp = [{}, {}]
    for name, xn, k, st, dl, pd, has_b, after in cases:
        c = shapes[xn][0]
        w = rng.standard_normal((c, 1) + k).astype(f)
        inits[name + "_w"] = w
        ins = [xn, name + "_w"]
        b = None
        if has_b:
            b = rng.standard_normal(c).astype(f)
            inits[name + "_b"] = b
            ins.append(name + "_b")
        y = name if after is None else name + "_y"
        nodes.append(helper.make_node("Conv", ins, [y], name=name, group=c, kernel_shape=list(k),
                                      strides=list(st), dilations=list(dl), pads=list(pd)))
        chain_after(nodes, inits, rng, name, y, after, c)
        for i in range(2):
            v = conv_ref(xs[xn][i].astype(np.float64), w, b, st, dl, pd, c)
            exp[i][name] = ref_after(v, after, inits, name)
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                  ["N"] + list(exp[0][name].shape[1:])))
    save_edges(out, nodes, "dw_edges", shapes, outs, inits, xs, exp, "de")


def pwc_edges(out, rng):
    """pwc_edges.onnx: conv.1x1_chan's edges, batch N symbolic (run at 1 and 3)."""
    f = np.float32
    shapes = {"pa": (40, 7, 7), "pb": (3, 5, 5), "pc": (64, 3, 3), "pd": (24, 7, 9),
              "pe": (256, 14, 14), "pf": (255, 14, 14)}
    cases = [   # name, input, output channels, bias, after
        ("pc_block_tail", "pa", 50, True, "silu"),    # a block of 48 and a tail of 2
        ("pc_blocks", "pa", 96, False, "relu"),       # two blocks
        ("pc_small", "pb", 16, True, "addrelu"),      # 25 pixels, one vector of 16
        ("pc_3x3", "pc", 100, True, None),            # 9 pixels, tails of every tile
        ("pc_odd", "pd", 33, True, "silu"),           # 63 pixels, 33 channels
        ("pc_14", "pe", 40, True, "relu"),            # 196 pixels of 256 channels
        ("pc_14_tiles", "pf", 24, True, None),        # 255 channels: conv.1x1_tiles
    ]
    nodes, inits, outs = [], {}, []
    xs = {n: [rng.standard_normal((b,) + sh).astype(f) for b in (1, 3)]
          for n, sh in shapes.items()}
    exp = [{}, {}]
    for name, xn, m, has_b, after in cases:
        c = shapes[xn][0]
        w = rng.standard_normal((m, c, 1, 1)).astype(f)
        inits[name + "_w"] = w
        ins = [xn, name + "_w"]
        b = None
        if has_b:
            b = rng.standard_normal(m).astype(f)
            inits[name + "_b"] = b
            ins.append(name + "_b")
        y = name if after is None else name + "_y"
        nodes.append(helper.make_node("Conv", ins, [y], name=name, kernel_shape=[1, 1]))
        chain_after(nodes, inits, rng, name, y, after, m)
        for i in range(2):
            v = conv_ref(xs[xn][i].astype(np.float64), w, b, (1, 1), (1, 1), (0, 0, 0, 0), 1)
            exp[i][name] = ref_after(v, after, inits, name)
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                  ["N"] + list(exp[0][name].shape[1:])))
    save_edges(out, nodes, "pwc_edges", shapes, outs, inits, xs, exp, "pc")


def gap_edges(out, rng):
    """gap_edges.onnx: GlobalAveragePool by rows (rt_mean_rows), batch N symbolic."""
    f = np.float32
    shapes = {"ga": (13, 7, 7), "gb": (5, 3, 4, 5), "gc": (7, 13), "gd": (40, 30, 30)}
    nodes = [helper.make_node("GlobalAveragePool", [n], ["gap_" + n], name="gap_" + n)
             for n in shapes]
    # float64: the loop form
    nodes.append(helper.make_node("GlobalAveragePool", ["gf"], ["gap_gf"], name="gap_gf"))
    xs = {n: [rng.standard_normal((b,) + sh).astype(f) for b in (1, 3)] for n, sh in shapes.items()}
    xs["gf"] = [rng.standard_normal((b, 3, 5, 5)) for b in (1, 3)]
    outs = [helper.make_tensor_value_info("gap_" + n, TensorProto.FLOAT,
                                          ["N", sh[0]] + [1] * (len(sh) - 1))
            for n, sh in shapes.items()]
    outs.append(helper.make_tensor_value_info("gap_gf", TensorProto.DOUBLE, ["N", 3, 1, 1]))
    shapes["gf"] = (3, 5, 5)
    g = helper.make_graph(nodes, "gap_edges",
                          [helper.make_tensor_value_info(
                              n, TensorProto.DOUBLE if n == "gf" else TensorProto.FLOAT,
                              ["N"] + list(sh)) for n, sh in shapes.items()], outs)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "gap_edges.onnx"))
    for i, b in enumerate((1, 3)):
        d = os.path.join(out, "ge_exp_%d" % b)
        os.makedirs(d, exist_ok=True)
        for n, sh in shapes.items():
            x = xs[n][i]
            np.save(os.path.join(out, "ge_%s_%d.npy" % (n, b)), x)
            axes = tuple(range(2, x.ndim))
            np.save(os.path.join(d, "gap_%s.npy" % n),
                    x.astype(np.float64).mean(axis=axes, keepdims=True).astype(x.dtype))


def epi_edges(out, rng):
    """epi_edges.onnx: anchors whose epilogue chain the micro-kernel takes."""
    f = np.float32
    x = rng.standard_normal((2, 16, 9, 11)).astype(f)
    x[1, 3, 4, 5] = np.nan	# NaN through Relu and Clip: NaN
    r = rng.standard_normal((2, 40, 9, 11)).astype(f)
    a = rng.standard_normal((20, 70)).astype(f)
    a3 = rng.standard_normal((3, 20, 70)).astype(f)
    r3 = rng.standard_normal((3, 20, 37)).astype(f)
    r2 = rng.standard_normal((2, 16, 5, 6)).astype(f)
    r8 = rng.standard_normal((2, 8, 9, 11)).astype(f)
    r80 = rng.standard_normal((2, 80, 9, 11)).astype(f)
    feeds = {"x": x, "r": r, "a": a, "a3": a3, "r3": r3, "r2": r2, "r8": r8, "r80": r80}
    inits, nodes, exp = {}, [], {}
    xd = x.astype(np.float64)

    def conv(name, bias):
        w = (rng.standard_normal((40, 16, 3, 3)) * 0.3).astype(f)
        inits[name + "_w"] = w
        ins = [x_name, name + "_w"]
        b = None
        if bias:
            b = rng.standard_normal(40).astype(f)
            inits[name + "_b"] = b
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name + "_y"], name=name, pads=[1, 1, 1, 1]))
        return conv_ref(xd, w, b, (1, 1), (1, 1), (1, 1, 1, 1), 1)

    def bound(name, v):
        inits[name] = np.array(v, dtype=f)
        return name

    def clip(v, lo, hi):
        with np.errstate(invalid="ignore"):
            return np.minimum(np.maximum(v, lo), hi)

    x_name = "x"
    relu = lambda v: np.maximum(v, 0)	# NaN stays NaN, as ONNX's Relu
    y = conv("cr", True)
    nodes.append(helper.make_node("Relu", ["cr_y"], ["cr"]))
    exp["cr"] = relu(y)
    y = conv("cc", False)
    nodes.append(helper.make_node("Clip", ["cc_y", bound("cc_lo", 0), bound("cc_hi", 6)], ["cc"]))
    exp["cc"] = clip(y, 0, 6)
    y = conv("car", True)
    nodes.append(helper.make_node("Add", ["car_y", "r"], ["car_s"]))
    nodes.append(helper.make_node("Relu", ["car_s"], ["car"]))
    exp["car"] = relu(y + r)
    y = conv("ca", True)
    nodes.append(helper.make_node("Add", ["r", "ca_y"], ["ca"]))
    exp["ca"] = y + r
    y = conv("cac", False)
    nodes.append(helper.make_node("Add", ["cac_y", "r"], ["cac_s"]))
    nodes.append(helper.make_node("Clip", ["cac_s", bound("cac_lo", -1), bound("cac_hi", 1)],
                                  ["cac"]))
    exp["cac"] = clip(y + r, -1, 1)
    y = conv("ck", True)
    nodes.append(helper.make_node("Relu", ["ck_y"], ["ck"]))
    exp["ck_y"] = y
    exp["ck"] = relu(y)
    bg = rng.standard_normal((70, 37)).astype(f)
    cg = rng.standard_normal(37).astype(f)
    inits.update({"g_b": bg, "g_c": cg})
    nodes.append(helper.make_node("Gemm", ["a", "g_b", "g_c"], ["g_y"], name="gr"))
    nodes.append(helper.make_node("Relu", ["g_y"], ["gr"]))
    exp["gr"] = relu(a.astype(np.float64) @ bg + cg)
    bm = rng.standard_normal((70, 37)).astype(f)
    inits["m_b"] = bm
    nodes.append(helper.make_node("MatMul", ["a3", "m_b"], ["m_y"], name="mac"))
    nodes.append(helper.make_node("Add", ["m_y", "r3"], ["m_s"]))
    nodes.append(helper.make_node("Clip", ["m_s", bound("m_lo", -0.5)], ["mac"]))
    exp["mac"] = np.maximum(a3.astype(np.float64) @ bm + r3, -0.5)

    def dw(name, strides):
        w = rng.standard_normal((16, 1, 3, 3)).astype(f)
        inits[name + "_w"] = w
        nodes.append(helper.make_node("Conv", ["x", name + "_w"], [name + "_y"], name=name,
                                      group=16, strides=strides, pads=[1, 1, 1, 1]))
        return conv_ref(xd, w, None, strides, (1, 1), (1, 1, 1, 1), 16)

    y = dw("dwc", [1, 1])
    nodes.append(helper.make_node("Clip", ["dwc_y", bound("dwc_lo", 0), bound("dwc_hi", 6)],
                                  ["dwc"]))
    exp["dwc"] = clip(y, 0, 6)
    y = dw("dwar", [2, 2])
    nodes.append(helper.make_node("Add", ["dwar_y", "r2"], ["dwar_s"]))
    nodes.append(helper.make_node("Relu", ["dwar_s"], ["dwar"]))
    exp["dwar"] = relu(y + r2)
    y = dw("dwb", [1, 1])
    cb = rng.standard_normal((16, 1, 1)).astype(f)
    inits["dwb_c"] = cb
    nodes.append(helper.make_node("Add", ["dwb_y", "dwb_c"], ["dwb_s"]))
    nodes.append(helper.make_node("Relu", ["dwb_s"], ["dwb"]))
    exp["dwb"] = relu(y + cb)

    def gconv(name, m, k):
        w = (rng.standard_normal((m, 16, k, k)) * 0.3).astype(f)
        inits[name + "_w"] = w
        p = k // 2
        nodes.append(helper.make_node("Conv", ["x", name + "_w"], [name + "_y"], name=name,
                                      pads=[p, p, p, p]))
        return conv_ref(xd, w, None, (1, 1), (1, 1), (p, p, p, p), 1)

    # 99 pixels: a block of 64 and a last one of 35 (im2col_gemm_block)
    y = gconv("pwc", 24, 1)
    nodes.append(helper.make_node("Clip", ["pwc_y", bound("pwc_lo", 0), bound("pwc_hi", 6)],
                                  ["pwc"]))
    exp["pwc"] = clip(y, 0, 6)
    y = gconv("imar", 8, 3)
    nodes.append(helper.make_node("Add", ["imar_y", "r8"], ["imar_s"]))
    nodes.append(helper.make_node("Relu", ["imar_s"], ["imar"]))
    exp["imar"] = relu(y + r8)
    y = gconv("pwb", 24, 1)
    cb24 = rng.standard_normal((24, 1, 1)).astype(f)
    inits["pwb_c"] = cb24
    nodes.append(helper.make_node("Add", ["pwb_y", "pwb_c"], ["pwb_s"]))
    nodes.append(helper.make_node("Relu", ["pwb_s"], ["pwb"]))
    exp["pwb"] = relu(y + cb24)
    # 80 output channels over 7 panels (the last narrow): at 2 and 3 threads
    # rt_cgemm splits rows, not panels, with the bias and the residual
    w80 = (rng.standard_normal((80, 16, 3, 3)) * 0.3).astype(f)
    b80 = rng.standard_normal(80).astype(f)
    inits.update({"crows_w": w80, "crows_b": b80})
    nodes.append(helper.make_node("Conv", ["x", "crows_w", "crows_b"], ["crows_y"], name="crows",
                                  pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Add", ["crows_y", "r80"], ["crows_s"]))
    nodes.append(helper.make_node("Relu", ["crows_s"], ["crows"]))
    exp["crows"] = relu(conv_ref(xd, w80, b80, (1, 1), (1, 1), (1, 1, 1, 1), 1) + feeds["r80"])
    # one row (rt_cgemm's GEMV form): the residual and Relu, the bias and Clip
    gr = np.random.default_rng(43)
    a1 = gr.standard_normal((1, 70)).astype(f)
    r1 = gr.standard_normal((1, 37)).astype(f)
    b1 = gr.standard_normal((70, 37)).astype(f)
    c1 = gr.standard_normal(37).astype(f)
    feeds.update({"a1": a1, "r1": r1})
    inits.update({"gv_b": b1, "gv_c": c1})
    nodes.append(helper.make_node("MatMul", ["a1", "gv_b"], ["gvar_y"], name="gvar"))
    nodes.append(helper.make_node("Add", ["gvar_y", "r1"], ["gvar_s"]))
    nodes.append(helper.make_node("Relu", ["gvar_s"], ["gvar"]))
    exp["gvar"] = relu(a1.astype(np.float64) @ b1 + r1)
    nodes.append(helper.make_node("Gemm", ["a1", "gv_b", "gv_c"], ["gvc_y"], name="gvc"))
    nodes.append(helper.make_node("Clip", ["gvc_y", bound("gvc_lo", -2), bound("gvc_hi", 2)],
                                  ["gvc"]))
    exp["gvc"] = clip(a1.astype(np.float64) @ b1 + c1, -2, 2)
    g = helper.make_graph(
        nodes, "epi_edges",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "epi_edges.onnx"))
    os.makedirs(os.path.join(out, "ee_exp"), exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(out, "ee_%s.npy" % k), v)
    for k, v in exp.items():
        np.save(os.path.join(out, "ee_exp", k + ".npy"), v.astype(f))


def softmax_ref(x, axis, log):
    """Softmax or LogSoftmax in float64 along axis (NaN rows where numpy's are)."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = x - x.max(axis=axis, keepdims=True)
        s = np.exp(d).sum(axis=axis, keepdims=True)
        return d - np.log(s) if log else np.exp(d) / s


def lnorm_ref(x, axis, scale, bias, eps):
    """LayerNormalization in float64: (Y, Mean, InvStdDev)."""
    ax = tuple(range(axis, x.ndim))
    m = x.mean(ax, keepdims=True)
    inv = 1.0 / np.sqrt(((x - m) ** 2).mean(ax, keepdims=True) + eps)
    y = (x - m) * inv * scale
    return (y if bias is None else y + bias), m, inv


def lnorm_edges(out, rng):
    """lnorm_edges.onnx (opset 17): the c target's layernorm.rows and its loop form."""
    f = np.float32
    x = rng.standard_normal((3, 7, 21)).astype(f)
    x[1, 2, 5] = np.nan                   # a NaN row
    x[2, 3, :] = 4.0                      # a constant row: variance 0
    xb = (3.0 + rng.standard_normal((64, 256))).astype(f)
    s21, b21 = rng.standard_normal(21).astype(f), rng.standard_normal(21).astype(f)
    s721 = rng.standard_normal((1, 7, 21)).astype(f)
    s256, b256 = rng.standard_normal(256).astype(f), rng.standard_normal(256).astype(f)
    nodes = [
        helper.make_node("LayerNormalization", ["x", "s21", "b21"], ["ln_last"], name="ln_last",
                         axis=-1, epsilon=1e-5),
        helper.make_node("LayerNormalization", ["x", "s721"], ["ln_2ax", "ln_mean", "ln_inv"],
                         name="ln_2ax", axis=1, epsilon=1e-3),
        helper.make_node("LayerNormalization", ["xb", "s256", "b256"], ["ln_big"], name="ln_big"),
        helper.make_node("LayerNormalization", ["x", "s21"], ["ln_bcast"], name="ln_bcast",
                         axis=1),
    ]
    x64 = x.astype(np.float64)
    y2, m2, i2 = lnorm_ref(x64, 1, s721, None, 1e-3)
    exp = {
        "ln_last": lnorm_ref(x64, 2, s21, b21, 1e-5)[0],
        "ln_2ax": y2, "ln_mean": m2, "ln_inv": i2,
        "ln_big": lnorm_ref(xb.astype(np.float64), 1, s256, b256, 1e-5)[0],
        "ln_bcast": lnorm_ref(x64, 1, s21, None, 1e-5)[0],
    }
    inits = [numpy_helper.from_array(v, k) for k, v in
             (("s21", s21), ("b21", b21), ("s721", s721), ("s256", s256), ("b256", b256))]
    g = helper.make_graph(
        nodes, "lnorm_edges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
         helper.make_tensor_value_info("xb", TensorProto.FLOAT, list(xb.shape))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()],
        inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(out, "lnorm_edges.onnx"))
    np.save(os.path.join(out, "ln_x.npy"), x)
    np.save(os.path.join(out, "ln_xb.npy"), xb)
    os.makedirs(os.path.join(out, "ln_exp"), exist_ok=True)
    for k, v in exp.items():
        np.save(os.path.join(out, "ln_exp", k + ".npy"), v.astype(f))


def rmsnorm_edges(out, rng):
    """rmsnorm_edges.onnx (opset 23): the c target's rmsnorm.rows and its loop form."""
    f = np.float32
    x = rng.standard_normal((3, 7, 21)).astype(f)
    x[1, 2, 5] = np.nan                   # a NaN row
    x[2, 3, :] = 0.0                      # a zero row: 0 * 1 / sqrt(eps)
    xb = (3.0 + rng.standard_normal((64, 256))).astype(f)
    s21 = rng.standard_normal(21).astype(f)
    s721 = rng.standard_normal((1, 7, 21)).astype(f)
    s256 = rng.standard_normal(256).astype(f)
    nodes = [
        helper.make_node("RMSNormalization", ["x", "s21"], ["rms_last"], name="rms_last",
                         axis=-1, epsilon=1e-5),
        helper.make_node("RMSNormalization", ["x", "s721"], ["rms_2ax"], name="rms_2ax",
                         axis=1, epsilon=1e-3),
        helper.make_node("RMSNormalization", ["xb", "s256"], ["rms_big"], name="rms_big"),
        helper.make_node("RMSNormalization", ["x", "s21"], ["rms_bcast"], name="rms_bcast",
                         axis=1),
    ]

    def ref(x, axis, scale, eps):
        axes = tuple(range(axis, x.ndim))
        return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps) * scale

    x64 = x.astype(np.float64)
    exp = {
        "rms_last": ref(x64, 2, s21, 1e-5),
        "rms_2ax": ref(x64, 1, s721, 1e-3),
        "rms_big": ref(xb.astype(np.float64), 1, s256, 1e-5),
        "rms_bcast": ref(x64, 1, s21, 1e-5),
    }
    inits = [numpy_helper.from_array(v, k) for k, v in
             (("s21", s21), ("s721", s721), ("s256", s256))]
    g = helper.make_graph(
        nodes, "rmsnorm_edges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
         helper.make_tensor_value_info("xb", TensorProto.FLOAT, list(xb.shape))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    # Debian's onnx (1.12) predates opset 23: saved without its checker
    onnx.save(m, os.path.join(out, "rmsnorm_edges.onnx"))
    np.save(os.path.join(out, "rms_x.npy"), x)
    np.save(os.path.join(out, "rms_xb.npy"), xb)
    os.makedirs(os.path.join(out, "rms_exp"), exist_ok=True)
    for k, v in exp.items():
        np.save(os.path.join(out, "rms_exp", k + ".npy"), v.astype(f))


def softmax_edges(out, rng):
    """softmax_edges.onnx (opset 13) and softmax_v11.onnx: the c target's softmax.rows."""
    f = np.float32
    x = rng.standard_normal((3, 4, 21)).astype(f)
    x[0, 0, 10:] = -1e4                   # an attention mask
    x[0, 1, ::2] = -np.finfo(f).max       # the other mask
    x[0, 2, 3:9] = -np.inf
    x[1, 0, 7] = np.nan                   # a NaN row, -inf in it too
    x[1, 0, 0] = -np.inf
    x[1, 1, :] = -np.inf                  # NaN too: -inf - -inf
    x[1, 2, :] = 80.0 * rng.standard_normal(21).astype(f)   # exp's range both ways
    x[2, 3, 4] = np.inf                   # NaN too: inf - inf (float16 masks overflow)
    x5 = rng.standard_normal((6, 5)).astype(f)   # shorter than a vector
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm_last"], name="sm_last", axis=-1),
        helper.make_node("LogSoftmax", ["x"], ["lsm_last"], name="lsm_last", axis=2),
        helper.make_node("Softmax", ["x"], ["sm_mid"], name="sm_mid", axis=1),
        helper.make_node("Softmax", ["x5"], ["sm_short"], name="sm_short"),
    ]
    x64 = x.astype(np.float64)
    exp = {
        "sm_last": softmax_ref(x64, 2, False),
        "lsm_last": softmax_ref(x64, 2, True),
        "sm_mid": softmax_ref(x64, 1, False),
        "sm_short": softmax_ref(x5.astype(np.float64), 1, False),
    }
    g = helper.make_graph(
        nodes, "softmax_edges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
         helper.make_tensor_value_info("x5", TensorProto.FLOAT, list(x5.shape))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "softmax_edges.onnx"))
    # opset 11: everything from the axis on is one row
    g = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["sm_v11"], name="sm_v11", axis=1),
         helper.make_node("LogSoftmax", ["x"], ["lsm_v11"], name="lsm_v11", axis=1)],
        "softmax_v11", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(x.shape))
         for k in ("sm_v11", "lsm_v11")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]),
         os.path.join(out, "softmax_v11.onnx"))
    exp["sm_v11"] = softmax_ref(x64.reshape(3, 84), 1, False).reshape(x.shape)
    exp["lsm_v11"] = softmax_ref(x64.reshape(3, 84), 1, True).reshape(x.shape)
    np.save(os.path.join(out, "se_x.npy"), x)
    np.save(os.path.join(out, "se_x5.npy"), x5)
    for d, names in (("se_exp", ("sm_last", "lsm_last", "sm_mid", "sm_short")),
                     ("se11_exp", ("sm_v11", "lsm_v11"))):
        os.makedirs(os.path.join(out, d), exist_ok=True)
        for k in names:
            np.save(os.path.join(out, d, k + ".npy"), exp[k].astype(f))


def transpose_edges(out, rng):
    """transpose_edges.onnx: Transposes of transpose.blocks and one of the loops."""
    f = np.float32
    ins = {"x": rng.standard_normal((2, 37, 3, 53)).astype(f),
           "m": rng.standard_normal((37, 53)).astype(f),
           "b": rng.standard_normal((300, 260)).astype(f)}
    cases = (("tr_head", "x", (0, 2, 3, 1)), ("tr_rev", "x", (3, 2, 1, 0)),
             ("tr_mat", "m", (1, 0)), ("tr_big", "b", None), ("tr_mid", "x", (0, 2, 1, 3)))
    nodes, exp = [], {}
    for name, src, perm in cases:
        kw = {"perm": list(perm)} if perm else {}
        nodes.append(helper.make_node("Transpose", [src], [name], name=name, **kw))
        exp[name] = np.transpose(ins[src], perm)
    g = helper.make_graph(
        nodes, "transpose_edges",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in ins.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "transpose_edges.onnx"))
    for k, v in ins.items():
        np.save(os.path.join(out, "tr_%s.npy" % k), v)
    os.makedirs(os.path.join(out, "tr_exp"), exist_ok=True)
    for k, v in exp.items():
        np.save(os.path.join(out, "tr_exp", k + ".npy"), np.ascontiguousarray(v))


def wino_edges(out, rng):
    """wino_edges.onnx and wino_sym.onnx: the Convs conv.winograd takes, and one it leaves."""
    f = np.float32
    nodes, inits, feeds, exp = [], {}, {}, {}
    relu = lambda v: np.maximum(v, 0)

    def conv(name, x_shape, m, pads=(1, 1, 1, 1), bias=True, auto_pad=None):
        """Conv name on input name_x; weights scaled so outputs are about N(0, 1)."""
        x = rng.standard_normal(x_shape).astype(f)
        c = x_shape[1]
        w = (rng.standard_normal((m, c, 3, 3)) / np.sqrt(9 * c)).astype(f)
        feeds[name + "_x"] = x
        inits[name + "_w"] = w
        ins = [name + "_x", name + "_w"]
        b = None
        if bias:
            b = rng.standard_normal(m).astype(f)
            inits[name + "_b"] = b
            ins.append(name + "_b")
        attrs = {"auto_pad": auto_pad} if auto_pad else {"pads": list(pads)}
        nodes.append(helper.make_node("Conv", ins, [name + "_y"], name=name, **attrs))
        if auto_pad == "SAME_UPPER":
            th, tw = 2, 2	# 3x3 at stride 1: one row and column each side
            pads = (th // 2, tw // 2, th - th // 2, tw - tw // 2)
        return conv_ref(x.astype(np.float64), w, b, (1, 1), (1, 1), pads, 1)

    exp["wb_y"] = conv("wb", (1, 16, 16, 16), 16)
    exp["wodd_y"] = conv("wodd", (2, 19, 13, 22), 21, pads=(0, 2, 1, 0), bias=False)
    exp["wk_y"] = conv("wk", (1, 300, 16, 16), 24)
    exp["wbig_y"] = conv("wbig", (1, 16, 70, 66), 16)
    exp["wnopad_y"] = conv("wnopad", (1, 32, 18, 18), 32, pads=(0, 0, 0, 0))
    exp["wsame_y"] = conv("wsame", (1, 16, 17, 15), 16, auto_pad="SAME_UPPER")
    y = conv("wr", (2, 16, 20, 20), 32)
    nodes.append(helper.make_node("Relu", ["wr_y"], ["wr"]))
    exp["wr"] = relu(y)
    y = conv("wc", (1, 24, 19, 21), 18, bias=False)
    inits["wc_lo"] = np.array(-0.5, dtype=f)
    inits["wc_hi"] = np.array(0.75, dtype=f)
    nodes.append(helper.make_node("Clip", ["wc_y", "wc_lo", "wc_hi"], ["wc"]))
    exp["wc"] = np.minimum(np.maximum(y, -0.5), 0.75)
    y = conv("war", (1, 16, 24, 17), 16)
    r = rng.standard_normal(y.shape).astype(f)
    feeds["war_r"] = r
    nodes.append(helper.make_node("Add", ["war_r", "war_y"], ["war_s"]))
    nodes.append(helper.make_node("Relu", ["war_s"], ["war"]))
    exp["war"] = relu(y + r)
    exp["wfew_y"] = conv("wfew", (1, 16, 8, 8), 32)
    g = helper.make_graph(
        nodes, "wino_edges",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in exp.items()],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "wino_edges.onnx"))
    os.makedirs(os.path.join(out, "we_exp"), exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(out, "we_%s.npy" % k), v)
    for k, v in exp.items():
        np.save(os.path.join(out, "we_exp", k + ".npy"), v.astype(f))

    # the batch symbolic: one kernel, a loop over the images
    w = (rng.standard_normal((20, 17, 3, 3)) / np.sqrt(9 * 17)).astype(f)
    b = rng.standard_normal(20).astype(f)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="wsym", pads=[1, 1, 1, 1])],
        "wino_sym",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 17, 15, 18])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 20, 15, 18])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "wino_sym.onnx"))
    for n in (1, 3):
        x = rng.standard_normal((n, 17, 15, 18)).astype(f)
        np.save(os.path.join(out, "ws_x_%d.npy" % n), x)
        os.makedirs(os.path.join(out, "ws_exp_%d" % n), exist_ok=True)
        y = conv_ref(x.astype(np.float64), w, b, (1, 1), (1, 1), (1, 1, 1, 1), 1)
        np.save(os.path.join(out, "ws_exp_%d" % n, "y.npy"), y.astype(f))


if __name__ == "__main__":
    main()

