#!/usr/bin/python3
"""Builds node tests for RNN, GRU and LSTM (tests/rnn.sh).

usage: gen_rnn_tests.py OUTDIR

Writes, in the ONNX backend-test layout that `collagec conformance` reads:
  OUTDIR/good/NAME/model.onnx and test_data_set_0/{input,output}_K.pb
      the cases libonnx-testdata leaves out (reverse, bidirectional,
      layout 1, sequence_lens, clip, the other activations with their
      alphas and betas, input_forget, linear_before_reset, Y_c, outputs
      left out, float64, symbolic dims), expected outputs computed here
      with numpy from the operator specs (in float64)
  OUTDIR/bad/NAME/model.onnx and expect
      models collagec must refuse; expect holds a line of the message

Needs python3-onnx and python3-numpy only; every byte is deterministic.
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import nodetest

RNG = np.random.default_rng(14)
GOOD = []
BAD = []

# name -> (how many of alpha, beta it takes, default alpha, default beta, f)
ACTS = {
    "relu": (0, 0, 0, lambda x, a, b: np.maximum(x, 0)),
    "tanh": (0, 0, 0, lambda x, a, b: np.tanh(x)),
    "sigmoid": (0, 0, 0, lambda x, a, b: 1 / (1 + np.exp(-x))),
    "affine": (2, 1.0, 0.0, lambda x, a, b: a * x + b),
    "leakyrelu": (1, 0.01, 0, lambda x, a, b: np.where(x >= 0, x, a * x)),
    "thresholdedrelu": (1, 1.0, 0, lambda x, a, b: np.where(x > a, x, 0)),
    "scaledtanh": (2, 1.0, 1.0, lambda x, a, b: a * np.tanh(b * x)),
    "hardsigmoid": (2, 0.2, 0.5, lambda x, a, b: np.clip(a * x + b, 0, 1)),
    "elu": (1, 1.0, 0, lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1))),
    "softsign": (0, 0, 0, lambda x, a, b: x / (1 + np.abs(x))),
    "softplus": (0, 0, 0, lambda x, a, b: np.log1p(np.exp(x))),
}
DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def randn(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 0.6).astype(dtype)


def functions(op, dirs, attrs):
    """The activations as (f, alpha, beta), dirs * per-direction of them."""
    names = attrs.get("activations", DEFAULTS[op])
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    fns = []
    for name in names:
        n_params, da, db, f = ACTS[name.lower()]
        a = alphas.pop(0) if n_params >= 1 and alphas else da
        b = betas.pop(0) if n_params >= 2 and betas else db
        fns.append((f, a, b))
    per = len(DEFAULTS[op])
    if len(fns) == per and dirs == 2:
        fns = fns + fns
    return [fns[d * per:(d + 1) * per] for d in range(dirs)]


def reference(op, inputs, attrs):
    """Y, Y_h (and Y_c for LSTM) of op from the spec, in float64."""
    x, w, r = (inputs[k].astype(np.float64) for k in ("X", "W", "R"))
    layout = attrs.get("layout", 0)
    direction = attrs.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    if layout:
        x = x.transpose(1, 0, 2)
    seq, batch, _ = x.shape
    hid = r.shape[2]
    g = GATES[op]
    bias = inputs.get("B", np.zeros((dirs, 2 * g * hid))).astype(np.float64)
    lens = inputs.get("sequence_lens", np.full(batch, seq, np.int32))
    h0, c0 = (inputs[k].astype(np.float64).transpose((1, 0, 2) if layout else (0, 1, 2))
              if k in inputs else np.zeros((dirs, batch, hid))
              for k in ("initial_h", "initial_c"))
    p = inputs.get("P", np.zeros((dirs, 3 * hid))).astype(np.float64)
    clip = attrs.get("clip")
    fns = functions(op, dirs, attrs)
    y = np.zeros((seq, dirs, batch, hid))
    yh = np.zeros((dirs, batch, hid))
    yc = np.zeros((dirs, batch, hid))

    def act(d, k, v):
        f, a, b = fns[d][k]
        # clip bounds the gates' inputs, not the cell state LSTM's h reads
        if clip is not None and not (op == "LSTM" and k == 2):
            v = np.clip(v, -clip, clip)
        return f(v, a, b)

    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wb, rb = bias[d, :g * hid], bias[d, g * hid:]
        wd, rd = w[d], r[d]
        for bi in range(batch):
            n = int(lens[bi])
            h, c = h0[d, bi].copy(), c0[d, bi].copy()
            for t in (range(n - 1, -1, -1) if reverse else range(n)):
                xw = wd @ x[t, bi] + wb
                if op == "RNN":
                    h = act(d, 0, xw + rd @ h + rb)
                elif op == "GRU":
                    z = act(d, 0, xw[:hid] + rd[:hid] @ h + rb[:hid])
                    rr = act(d, 0, xw[hid:2 * hid] + rd[hid:2 * hid] @ h + rb[hid:2 * hid])
                    if attrs.get("linear_before_reset", 0):
                        hh = act(d, 1, xw[2 * hid:] + rr * (rd[2 * hid:] @ h + rb[2 * hid:]))
                    else:
                        hh = act(d, 1, xw[2 * hid:] + rd[2 * hid:] @ (rr * h) + rb[2 * hid:])
                    h = (1 - z) * hh + z * h
                else:
                    gates = xw + rd @ h + rb
                    pi, po, pf = p[d, :hid], p[d, hid:2 * hid], p[d, 2 * hid:]
                    i = act(d, 0, gates[:hid] + pi * c)
                    if attrs.get("input_forget", 0):
                        f = 1 - i
                    else:
                        f = act(d, 0, gates[2 * hid:3 * hid] + pf * c)
                    cc = act(d, 1, gates[3 * hid:])
                    c = f * c + i * cc
                    o = act(d, 0, gates[hid:2 * hid] + po * c)
                    h = o * act(d, 2, c)
                y[t, d, bi] = h
            yh[d, bi], yc[d, bi] = h, c
    if layout:
        y = y.transpose(2, 0, 1, 3)
        yh = yh.transpose(1, 0, 2)
        yc = yc.transpose(1, 0, 2)
    dt = inputs["X"].dtype
    out = {"Y": y.astype(dt), "Y_h": yh.astype(dt)}
    if op == "LSTM":
        out["Y_c"] = yc.astype(dt)
    return out


def vinfo(name, array, dims=None):
    a = np.asarray(array)
    return helper.make_tensor_value_info(name, numpy_helper.from_array(a).data_type,
                                         dims if dims is not None else a.shape)


def make_inputs(op, seq, batch, inp, hid, dirs, layout, extras, dtype):
    g = GATES[op]
    ins = {"X": randn(*((batch, seq, inp) if layout else (seq, batch, inp)), dtype=dtype),
           "W": randn(dirs, g * hid, inp, dtype=dtype),
           "R": randn(dirs, g * hid, hid, dtype=dtype)}
    hshape = (batch, dirs, hid) if layout else (dirs, batch, hid)
    if "B" in extras:
        ins["B"] = randn(dirs, 2 * g * hid, dtype=dtype)
    if "sequence_lens" in extras:
        ins["sequence_lens"] = RNG.integers(0, seq + 1, batch).astype(np.int32)
        ins["sequence_lens"][0] = seq
    if "initial_h" in extras:
        ins["initial_h"] = randn(*hshape, dtype=dtype)
    if "initial_c" in extras:
        ins["initial_c"] = randn(*hshape, dtype=dtype)
    if "P" in extras:
        ins["P"] = randn(dirs, 3 * hid, dtype=dtype)
    return ins


def case(name, op, seq=4, batch=3, inp=5, hid=4, extras=(), outs=None, opset=14,
         dtype=np.float32, symbolic=False, consts=(), **attrs):
    """A good test of op: inputs drawn at random, outputs from reference();
    the inputs named in consts are initializers."""
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    ins = make_inputs(op, seq, batch, inp, hid, dirs, layout, extras, dtype)
    ref = reference(op, ins, attrs)
    outs = outs or list(ref)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    last = max(i for i, k in enumerate(order) if k in ins)
    node_in = [k if k in ins else "" for k in order[:last + 1]]
    all_outs = ["Y", "Y_h", "Y_c"][:len(ref)]
    last = max(i for i, k in enumerate(all_outs) if k in outs)
    node_out = [k if k in outs else "" for k in all_outs[:last + 1]]
    nd = helper.make_node(op, node_in, node_out, name=name, hidden_size=hid, **attrs)
    sym = {}
    if symbolic:
        hdims = ["batch", dirs, hid] if layout else [dirs, "batch", hid]
        sym = {"X": ["batch", "seq", inp] if layout else ["seq", "batch", inp],
               "sequence_lens": ["batch"], "initial_h": hdims, "initial_c": hdims}
    graph = helper.make_graph([nd], name,
                              [vinfo(k, ins[k], sym.get(k)) for k in ins if k not in consts],
                              [vinfo(k, ref[k]) for k in outs],
                              [numpy_helper.from_array(ins[k], k) for k in consts])
    m = helper.make_model(graph, producer_name="collagec-rnn-test",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    GOOD.append((name, m, {k: v for k, v in ins.items() if k not in consts},
                 {k: ref[k] for k in outs}))


def bad(name, op, expect, inputs=None, **attrs):
    """A model collagec must refuse with a message containing expect."""
    ins = inputs or make_inputs(op, 2, 1, 3, 2, 1, 0, (), np.float32)
    nd = helper.make_node(op, list(ins), ["Y"], name=name, **attrs)
    graph = helper.make_graph([nd], name, [vinfo(k, v) for k, v in ins.items()],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, producer_name="collagec-rnn-test",
                          opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    BAD.append((name, m, expect))


def rnn_tests():
    case("rnn_reverse", "RNN", direction="reverse", extras=("B", "initial_h"))
    case("rnn_bidirectional_seq_lens", "RNN", direction="bidirectional",
         extras=("B", "sequence_lens", "initial_h"))
    case("rnn_layout1_bidirectional", "RNN", direction="bidirectional", layout=1,
         extras=("B", "initial_h", "sequence_lens"))
    case("rnn_relu_clip", "RNN", activations=["Relu"], clip=0.7, extras=("B",))
    case("rnn_leakyrelu_alpha_bidirectional", "RNN", direction="bidirectional",
         activations=["LeakyRelu", "ThresholdedRelu"], activation_alpha=[0.2, 0.3])
    case("rnn_y_h_only", "RNN", outs=["Y_h"], direction="reverse", extras=("B",))
    case("rnn_float64_opset7", "RNN", opset=7, dtype=np.float64, extras=("B", "initial_h"))
    case("rnn_const_weights_bidirectional", "RNN", direction="bidirectional",
         consts=("W", "R", "B"), extras=("B", "initial_h", "sequence_lens"))
    case("rnn_symbolic_dims", "RNN", symbolic=True, direction="bidirectional",
         extras=("B", "initial_h", "sequence_lens"))


def gru_tests():
    case("gru_reverse", "GRU", direction="reverse", extras=("B", "initial_h"))
    case("gru_bidirectional_seq_lens", "GRU", direction="bidirectional",
         extras=("B", "sequence_lens", "initial_h"))
    case("gru_linear_before_reset_reverse", "GRU", direction="reverse", linear_before_reset=1,
         extras=("B", "initial_h", "sequence_lens"))
    case("gru_linear_before_reset_bidirectional", "GRU", direction="bidirectional",
         linear_before_reset=1, extras=("B",))
    case("gru_layout1_bidirectional", "GRU", direction="bidirectional", layout=1,
         extras=("B", "initial_h", "sequence_lens"))
    case("gru_activations_clip", "GRU", direction="bidirectional", clip=1.5,
         activations=["HardSigmoid", "Softsign", "Sigmoid", "ScaledTanh"],
         activation_alpha=[0.3, 0.8], activation_beta=[0.4, 1.2], extras=("B",))
    case("gru_const_weights_layout1", "GRU", direction="bidirectional", layout=1,
         consts=("W", "R", "B"), extras=("B", "initial_h", "sequence_lens"))
    case("gru_const_weights_linear_before_reset", "GRU", direction="reverse",
         linear_before_reset=1, consts=("W",), extras=("B",))
    case("gru_bidirectional_one_list", "GRU", direction="bidirectional",
         activations=["HardSigmoid", "Tanh"], activation_alpha=[0.3],
         activation_beta=[0.4], extras=("B", "initial_h"))
    case("gru_y_only", "GRU", outs=["Y"], extras=("B", "initial_h"))
    case("gru_float64_symbolic", "GRU", dtype=np.float64, symbolic=True, layout=1,
         extras=("B", "initial_h"))


def lstm_tests():
    case("lstm_reverse", "LSTM", direction="reverse", extras=("B", "initial_h", "initial_c"))
    case("lstm_bidirectional_peepholes_seq_lens", "LSTM", direction="bidirectional",
         extras=("B", "sequence_lens", "initial_h", "initial_c", "P"))
    case("lstm_layout1_bidirectional", "LSTM", direction="bidirectional", layout=1,
         extras=("B", "initial_h", "initial_c", "P", "sequence_lens"))
    case("lstm_input_forget_clip", "LSTM", input_forget=1, clip=0.25,
         extras=("B", "initial_c", "P"))
    case("lstm_activations", "LSTM", direction="bidirectional",
         activations=["HardSigmoid", "Affine", "Elu", "Sigmoid", "Softplus", "relu"],
         activation_alpha=[0.25, 0.5, 0.9], activation_beta=[0.45, 0.1], extras=("B",))
    case("lstm_const_weights_peepholes", "LSTM", direction="bidirectional",
         consts=("W", "R", "B", "P"), extras=("B", "sequence_lens", "initial_c", "P"))
    case("lstm_const_weights_symbolic_layout1", "LSTM", symbolic=True, layout=1,
         consts=("W", "R"), extras=("B", "initial_h"))
    case("lstm_y_c_only", "LSTM", outs=["Y_c"], extras=("B", "sequence_lens", "initial_c"))
    case("lstm_y_h_y_c", "LSTM", outs=["Y_h", "Y_c"], direction="reverse", extras=("B", "P"))
    case("lstm_symbolic_dims_layout1", "LSTM", symbolic=True, layout=1,
         direction="bidirectional", extras=("B", "initial_h", "initial_c", "P"))


def bad_tests():
    bad("rnn_bad_direction", "RNN", "attr 'direction' is 'sideways'", hidden_size=2,
        direction="sideways")
    bad("gru_bad_activation", "GRU", "unsupported activation 'Swish'", hidden_size=2,
        activations=["Sigmoid", "Swish"],
        inputs=make_inputs("GRU", 2, 1, 3, 2, 1, 0, (), np.float32))
    bad("lstm_bad_activation_count", "LSTM", "attr 'activations' has 2 names, expected 3",
        hidden_size=2, activations=["Sigmoid", "Tanh"],
        inputs=make_inputs("LSTM", 2, 1, 3, 2, 1, 0, (), np.float32))
    bad("rnn_bad_layout", "RNN", "attr 'layout' is 2 (expected 0 or 1)", hidden_size=2,
        layout=2)
    bad("rnn_bad_r_shape", "RNN", "input 2 'R' (R) has dim 2 of 3, expected 2",
        hidden_size=2, inputs={"X": randn(2, 1, 3), "W": randn(1, 2, 3),
                               "R": randn(1, 2, 3)})
    bad("rnn_int_input", "RNN", "has type int32 (expected float32 or float64)", hidden_size=2,
        inputs={"X": np.zeros((2, 1, 3), np.int32), "W": randn(1, 2, 3), "R": randn(1, 2, 2)})



def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_rnn_tests.py OUTDIR")
    rnn_tests()
    gru_tests()
    lstm_tests()
    bad_tests()
    nodetest.write(sys.argv[1], GOOD, BAD)


main()
