#!/usr/bin/env python3
"""Builds the control-flow tests (tests/control.sh): If, Loop and Scan with
sub-graphs that read outer-scope values.

usage: gen_control_tests.py [OUTDIR]     (default: testdata/control)

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_K/{input,output}_I.pb:
several input sets per model (an If's sets take both branches, a Loop's
stop at different iterations), the expected outputs computed by ONNX
Runtime (by numpy for a model ONNX Runtime refuses). The output is committed; rerun after changing a model here.
Needs python3 with onnx and onnxruntime (not Debian's python3-onnx 1.12:
the expected outputs come from ONNX Runtime).
"""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(10)
OPSET = 17


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def scalar(name, t):
    return helper.make_tensor_value_info(name, t, [])


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, name, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="collagec-control-test",
                          opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return m


def if_computed():
    """An If on ReduceSum(x) > 0 whose branches read x, h = Relu(x) and W."""
    then_g = helper.make_graph(
        [helper.make_node("Add", ["h", "W"], ["t0"], name="then_add"),
         helper.make_node("Mul", ["t0", "x"], ["t"], name="then_mul")],
        "then", [], [f32("t", [3, 4])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "W"], ["e0"], name="else_sub"),
         helper.make_node("Abs", ["e0"], ["e"], name="else_abs")],
        "else", [], [f32("e", [3, 4])])
    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="relu"),
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
        helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                         else_branch=else_g),
    ]
    m = model(nodes, "if_computed", [f32("x", [3, 4])], [f32("y", [3, 4])],
              [const("W", RNG.standard_normal(4).astype(np.float32)),
               const("zero", np.float32(0))])
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    return m, [{"x": np.abs(x)}, {"x": -np.abs(x)}, {"x": x}]


def if_folded():
    """An If on Shape(x)[1] == 6 (folds with a symbolic batch); the branches
    give different shapes, which only a folded condition allows."""
    then_g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["t"], name="then_reshape")],
        "then", [], [f32("t", ["N", 3, 2])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"], name="else_neg")],
        "else", [], [f32("e", ["N", 6])])
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"], name="shape_of_x"),
        helper.make_node("Gather", ["sh", "one"], ["d1"], name="dim1", axis=0),
        helper.make_node("Equal", ["d1", "six"], ["c"], name="is_six"),
        helper.make_node("If", ["c"], ["y"], name="fold_me", then_branch=then_g,
                         else_branch=else_g),
    ]
    m = model(nodes, "if_folded", [f32("x", ["N", 6])], [f32("y", ["N", 3, 2])],
              [const("one", np.int64(1)), const("six", np.int64(6)),
               const("shape", np.array([0, 3, 2], np.int64))])
    return m, [{"x": RNG.standard_normal((2, 6)).astype(np.float32)},
               {"x": RNG.standard_normal((5, 6)).astype(np.float32)}]


def loop_body(extra_nodes, cond_node, scan=True):
    outs = [scalar("c_out", TensorProto.BOOL), f32("h_out", [1, 4])]
    if scan:
        outs.append(f32("h_scan", [1, 4]))
    nodes = [
        helper.make_node("MatMul", ["h_in", "Wl"], ["mm"], name="matmul"),
        helper.make_node("Cast", ["i"], ["fi"], name="iter_float", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["fi", "step"], ["di"], name="iter_term"),
        helper.make_node("Add", ["mm", "di"], ["a"], name="add_iter"),
        helper.make_node("Add", ["a", "b"], ["z"], name="add_outer"),
        helper.make_node("Tanh", ["z"], ["h_out"], name="tanh"),
    ] + extra_nodes + [cond_node]
    if scan:
        nodes.append(helper.make_node("Identity", ["h_out"], ["h_scan"], name="scan_copy"))
    return helper.make_graph(
        nodes, "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                        f32("h_in", [1, 4])], outs)


def loop_accumulate():
    """A Loop of 4 iterations carrying h through tanh(h W + i * step + b);
    W, step and b = Relu(x) are outer values; h is also a scan output."""
    body = loop_body([], helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"))
    nodes = [
        helper.make_node("Relu", ["x"], ["b"], name="outer_relu"),
        helper.make_node("Loop", ["four", "yes", "h0"], ["h", "hs"], name="loop", body=body),
    ]
    m = model(nodes, "loop_accumulate", [f32("x", [1, 4]), f32("h0", [1, 4])],
              [f32("h", [1, 4]), f32("hs", [4, 1, 4])],
              [const("four", np.int64(4)), const("yes", np.bool_(True)),
               const("Wl", (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)),
               const("step", np.float32(0.25))])
    return m, [{"x": RNG.standard_normal((1, 4)).astype(np.float32),
                "h0": RNG.standard_normal((1, 4)).astype(np.float32)} for _ in range(2)]


# loop_cond's and loop_runtime_cond_scan's: W = I / 2, at most 6 iterations
COND_LOOP_INITS = [const("six", np.int64(6)), const("yes", np.bool_(True)),
                   const("Wl", np.eye(4, dtype=np.float32) * 0.5),
                   const("step", np.float32(0.25))]


def cond_loop_sets():
    """Limits that stop the loop at different iterations (or never)."""
    x = np.full((1, 4), 0.3, np.float32)
    h0 = np.zeros((1, 4), np.float32)
    return [{"x": x, "h0": h0, "limit": np.float32(v)} for v in (-1.0, 2.5, 3.4, 100.0)]


def loop_cond():
    """A Loop of at most 6 iterations that goes on while sum(h) < limit, a
    condition computed at run time: the sets stop at different iterations."""
    body = loop_body([helper.make_node("ReduceSum", ["h_out"], ["hsum"], name="hsum",
                                       keepdims=0)],
                     helper.make_node("Less", ["hsum", "limit"], ["c_out"], name="go_on"),
                     scan=False)
    nodes = [
        helper.make_node("Relu", ["x"], ["b"], name="outer_relu"),
        helper.make_node("Loop", ["six", "yes", "h0"], ["h"], name="loop", body=body),
    ]
    m = model(nodes, "loop_cond", [f32("x", [1, 4]), f32("h0", [1, 4]),
                                   helper.make_tensor_value_info("limit", TensorProto.FLOAT,
                                                                 [])],
              [f32("h", [1, 4])],
              COND_LOOP_INITS)
    return m, cond_loop_sets()


def running_sum_scans():
    """Two Scans of one body (state: the running sum; scan output: it
    scaled by the outer w), the second over the input reversed, its output
    on axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"], name="accumulate"),
         helper.make_node("Mul", ["s_out", "w"], ["scaled"], name="scale")],
        "body", [f32("s_in", [3]), f32("row", [3])],
        [f32("s_out", [3]), f32("scaled", [3])])
    return [
        helper.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan", body=body,
                         num_scan_inputs=1),
        helper.make_node("Scan", ["s0", "x"], ["s_rev", "ys_rev"], name="scan_reverse",
                         body=body, num_scan_inputs=1, scan_input_directions=[1],
                         scan_output_axes=[1]),
    ]


def scan_running_sum():
    """A Scan over 5 rows: the state is the running sum, the scan output the
    sum scaled by an outer weight; a second output reversed along axis 1."""
    nodes = running_sum_scans()
    m = model(nodes, "scan_running_sum", [f32("s0", [3]), f32("x", [5, 3])],
              [f32("s", [3]), f32("ys", [5, 3]), f32("s_rev", [3]), f32("ys_rev", [3, 5])],
              [const("w", np.array([1.0, -2.0, 0.5], np.float32))])
    return m, [{"s0": RNG.standard_normal(3).astype(np.float32),
                "x": RNG.standard_normal((5, 3)).astype(np.float32)} for _ in range(2)]


def loop_nested_if():
    """A Loop whose body holds an If on i < 2 (folds in each unrolled copy)
    reading the loop-carried h and the outer x."""
    then_g = helper.make_graph([helper.make_node("Add", ["h_in", "x"], ["t"], name="inc")],
                               "then", [], [f32("t", [2])])
    else_g = helper.make_graph([helper.make_node("Mul", ["h_in", "x"], ["e"], name="scale")],
                               "else", [], [f32("e", [2])])
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "two"], ["early"], name="early"),
         helper.make_node("If", ["early"], ["h_out"], name="pick", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("h_in", [2])], [scalar("c_out", TensorProto.BOOL), f32("h_out", [2])])
    nodes = [helper.make_node("Loop", ["four", "", "h0"], ["h"], name="loop", body=body)]
    m = model(nodes, "loop_nested_if", [f32("x", [2]), f32("h0", [2])], [f32("h", [2])],
              [const("four", np.int64(4)), const("two", np.int64(2))])
    return m, [{"x": RNG.standard_normal(2).astype(np.float32),
                "h0": RNG.standard_normal(2).astype(np.float32)} for _ in range(2)]


def loop_while():
    """A Loop without a trip count whose body's condition i < 4 folds in
    each unrolled copy: 5 iterations, and a scan output of them."""
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "four"], ["c_out"], name="more"),
         helper.make_node("Mul", ["h_in", "x"], ["h_out"], name="scale"),
         helper.make_node("Identity", ["h_out"], ["h_scan"], name="scan_copy")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("h_in", [2])],
        [scalar("c_out", TensorProto.BOOL), f32("h_out", [2]), f32("h_scan", [2])])
    nodes = [helper.make_node("Loop", ["", "yes", "h0"], ["h", "hs"], name="while",
                              body=body)]
    m = model(nodes, "loop_while", [f32("x", [2]), f32("h0", [2])],
              [f32("h", [2]), f32("hs", [5, 2])],
              [const("four", np.int64(4)), const("yes", np.bool_(True))])
    return m, [{"x": RNG.standard_normal(2).astype(np.float32),
                "h0": RNG.standard_normal(2).astype(np.float32)} for _ in range(2)]


def if_dead_branch():
    """An If on a constant whose else branch holds an op no one knows:
    collagec never imports that branch. ONNX Runtime refuses the model, so
    the expected outputs are computed here."""
    then_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["t"], name="live")],
                               "then", [], [f32("t", [4])])
    else_g = helper.make_graph([helper.make_node("FooBar", ["x"], ["e"], name="dead")],
                               "else", [], [f32("e", [4])])
    nodes = [helper.make_node("If", ["yes"], ["y"], name="constant_if", then_branch=then_g,
                              else_branch=else_g)]
    m = model(nodes, "if_dead_branch", [f32("x", [4])], [f32("y", [4])],
              [const("yes", np.bool_(True))])
    sets = [{"x": RNG.standard_normal(4).astype(np.float32)}]
    return m, sets, lambda feeds: [1 / (1 + np.exp(-feeds["x"].astype(np.float64)))]


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def loop_runtime_trip():
    """loop_accumulate's body with the trip count m a graph input: a call of
    the compiled body, the scan output [m, 1, 4]; m = 0 runs no iteration."""
    body = loop_body([], helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"))
    nodes = [
        helper.make_node("Relu", ["x"], ["b"], name="outer_relu"),
        helper.make_node("Loop", ["m", "yes", "h0"], ["h", "hs"], name="loop", body=body),
    ]
    m = model(nodes, "loop_runtime_trip", [f32("x", [1, 4]), f32("h0", [1, 4]), i64("m", [])],
              [f32("h", [1, 4]), f32("hs", ["m", 1, 4])],
              [const("yes", np.bool_(True)),
               const("Wl", (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)),
               const("step", np.float32(0.25))])
    return m, [{"x": RNG.standard_normal((1, 4)).astype(np.float32),
                "h0": RNG.standard_normal((1, 4)).astype(np.float32), "m": np.int64(k)}
               for k in (0, 1, 3, 7)]


def loop_runtime_cond_scan():
    """At most 6 iterations while sum(h) < limit, with a scan output: its
    length depends on the run-time condition, so the loop is a call."""
    body = loop_body([helper.make_node("ReduceSum", ["h_out"], ["hsum"], name="hsum",
                                       keepdims=0)],
                     helper.make_node("Less", ["hsum", "limit"], ["c_out"], name="go_on"))
    nodes = [
        helper.make_node("Relu", ["x"], ["b"], name="outer_relu"),
        helper.make_node("Loop", ["six", "yes", "h0"], ["h", "hs"], name="loop", body=body),
    ]
    m = model(nodes, "loop_runtime_cond_scan",
              [f32("x", [1, 4]), f32("h0", [1, 4]), f32("limit", [])],
              [f32("h", [1, 4]), f32("hs", ["n", 1, 4])],
              COND_LOOP_INITS)
    return m, cond_loop_sets()


def loop_runtime_batch():
    """A symbolic batch N: h [N, 4] carried through tanh(h W + x), x [N, 4]
    captured from outside, m iterations, the scan output [m, N, 4] and a
    consumer after the loop (ReduceSum over the scan)."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["mm"], name="matmul"),
         helper.make_node("Add", ["mm", "x"], ["z"], name="add_x"),
         helper.make_node("Tanh", ["z"], ["h_out"], name="tanh"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("Identity", ["h_out"], ["h_scan"], name="scan_copy")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("h_in", ["N", 4])],
        [scalar("c_out", TensorProto.BOOL), f32("h_out", ["N", 4]), f32("h_scan", ["N", 4])])
    nodes = [
        helper.make_node("Loop", ["m", "", "h0"], ["h", "hs"], name="loop", body=body),
        helper.make_node("ReduceSum", ["hs", "axis0"], ["total"], name="total", keepdims=0),
    ]
    m = model(nodes, "loop_runtime_batch", [f32("x", ["N", 4]), f32("h0", ["N", 4]),
                                            i64("m", [])],
              [f32("h", ["N", 4]), f32("hs", ["m", "N", 4]), f32("total", ["N", 4])],
              [const("W", (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)),
               const("axis0", np.array([0], np.int64))])
    return m, [{"x": RNG.standard_normal((n, 4)).astype(np.float32),
                "h0": RNG.standard_normal((n, 4)).astype(np.float32), "m": np.int64(k)}
               for n, k in ((1, 2), (3, 5), (2, 1))]


def loop_runtime_nested():
    """A run-time loop whose body holds another: the inner one runs i times
    (its trip count the outer iteration number), adding j to s; the outer
    one adds the inner sum to t. Two bodies compiled, one inside the other."""
    inner = helper.make_graph(
        [helper.make_node("Cast", ["j"], ["fj"], name="j_float", to=TensorProto.FLOAT),
         helper.make_node("Add", ["s_in", "fj"], ["s_out"], name="add_j"),
         helper.make_node("Identity", ["ci"], ["co"], name="keep_inner")],
        "inner", [scalar("j", TensorProto.INT64), scalar("ci", TensorProto.BOOL),
                  f32("s_in", [1])], [scalar("co", TensorProto.BOOL), f32("s_out", [1])])
    outer = helper.make_graph(
        [helper.make_node("Loop", ["i", "", "zero"], ["s"], name="inner_loop", body=inner),
         helper.make_node("Mul", ["s", "w"], ["ws"], name="weigh"),
         helper.make_node("Add", ["t_in", "ws"], ["t_out"], name="add_s"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "outer", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                  f32("t_in", [1])], [scalar("c_out", TensorProto.BOOL), f32("t_out", [1])])
    nodes = [helper.make_node("Loop", ["m", "", "t0"], ["t"], name="outer_loop", body=outer)]
    m = model(nodes, "loop_runtime_nested", [f32("t0", [1]), f32("w", [1]), i64("m", [])],
              [f32("t", [1])], [const("zero", np.zeros(1, np.float32))])
    return m, [{"t0": np.array([0.5], np.float32), "w": np.array([w], np.float32),
                "m": np.int64(k)} for w, k in ((1.0, 4), (-0.5, 7), (2.0, 0))]


def loop_runtime_long():
    """A constant trip count of 3000, past what is unrolled: a call, whose
    carried values count the iterations and sum i * x."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="i_float", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["fi", "x"], ["ix"], name="times_x"),
         helper.make_node("Add", ["acc_in", "ix"], ["acc_out"], name="accumulate"),
         helper.make_node("Add", ["n_in", "one"], ["n_out"], name="count"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("acc_in", [2]), i64("n_in", [])],
        [scalar("c_out", TensorProto.BOOL), f32("acc_out", [2]), i64("n_out", [])])
    nodes = [helper.make_node("Loop", ["many", "", "acc0", "n0"], ["acc", "n"], name="loop",
                              body=body)]
    m = model(nodes, "loop_runtime_long", [f32("x", [2])], [f32("acc", [2]), i64("n", [])],
              [const("many", np.int64(3000)), const("acc0", np.zeros(2, np.float32)),
               const("n0", np.int64(0)), const("one", np.int64(1))])
    return m, [{"x": np.array([1e-3, -2e-3], np.float32)}]


def loop_runtime_partial():
    """No trip count, a condition known true at first and computed by the
    body (i < limit) with a scan output: the first iteration is unrolled,
    the rest is a call from iteration 1 on; the scan output joins both."""
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "limit"], ["c_out"], name="more"),
         helper.make_node("Mul", ["h_in", "x"], ["h_out"], name="scale"),
         helper.make_node("Identity", ["h_out"], ["h_scan"], name="scan_copy")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("h_in", [2])],
        [scalar("c_out", TensorProto.BOOL), f32("h_out", [2]), f32("h_scan", [2])])
    nodes = [helper.make_node("Loop", ["", "yes", "h0"], ["h", "hs"], name="while",
                              body=body)]
    m = model(nodes, "loop_runtime_partial", [f32("x", [2]), f32("h0", [2]), i64("limit", [])],
              [f32("h", [2]), f32("hs", ["n", 2])], [const("yes", np.bool_(True))])
    return m, [{"x": RNG.standard_normal(2).astype(np.float32),
                "h0": RNG.standard_normal(2).astype(np.float32), "limit": np.int64(k)}
               for k in (0, 1, 4)]


def loop_runtime_grow():
    """A run-time trip count whose body grows the carried y (symbolic length
    L) by one element per iteration (Concat with the iteration number): the
    body takes y with a length of its own, and y's length after the loop is
    data-dependent."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="i_float", to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["fi", "axis0"], ["fi1"], name="as_row"),
         helper.make_node("Mul", ["fi1", "x"], ["ix"], name="times_x"),
         helper.make_node("Concat", ["y_in", "ix"], ["y_out"], name="append", axis=0),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
                 f32("y_in", [None])],
        [scalar("c_out", TensorProto.BOOL), f32("y_out", [None])])
    nodes = [helper.make_node("Loop", ["m", "", "y0"], ["y"], name="loop", body=body),
             helper.make_node("ReduceSum", ["y"], ["total"], name="total", keepdims=0)]
    m = model(nodes, "loop_runtime_grow", [f32("x", [1]), f32("y0", ["L"]), i64("m", [])],
              [f32("y", [None]), f32("total", [])],
              [const("axis0", np.array([0], np.int64))])
    return m, [{"x": np.array([v], np.float32), "y0": np.full(n, 0.5, np.float32),
                "m": np.int64(k)} for v, n, k in ((1.0, 1, 3), (-0.25, 2, 0), (2.0, 3, 6))]


def scan_runtime_length():
    """scan_running_sum over x [T, 3], T symbolic: the Scan becomes a Loop
    call of T iterations gathering row i (or T - 1 - i for the reversed
    input), the second scan output moved to axis 1 after it."""
    nodes = running_sum_scans()
    m = model(nodes, "scan_runtime_length", [f32("s0", [3]), f32("x", ["T", 3])],
              [f32("s", [3]), f32("ys", ["T", 3]), f32("s_rev", [3]), f32("ys_rev", [3, "T"])],
              [const("w", np.array([1.0, -2.0, 0.5], np.float32))])
    return m, [{"s0": RNG.standard_normal(3).astype(np.float32),
                "x": RNG.standard_normal((t, 3)).astype(np.float32)} for t in (1, 4, 7)]


def if_runtime_shapes():
    """An If on a run-time condition whose branches give y different shapes
    (x [N, 3], or its column sums [1, 3]): each branch compiled on its own
    and the one the condition takes run; z, the same shape on both sides,
    keeps N; nodes after the If read y."""
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"], name="rows"),
         helper.make_node("Relu", ["x"], ["tz"], name="relu")],
        "then", [], [f32("t", ["N", 3]), f32("tz", ["N", 3])])
    else_g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axis0"], ["e"], name="column_sums", keepdims=1),
         helper.make_node("Neg", ["x"], ["ez"], name="neg")],
        "else", [], [f32("e", [1, 3]), f32("ez", ["N", 3])])
    nodes = [helper.make_node("If", ["c"], ["y", "z"], name="pick", then_branch=then_g,
                              else_branch=else_g),
             helper.make_node("Mul", ["y", "w"], ["yw"], name="weigh")]
    m = model(nodes, "if_runtime_shapes",
              [f32("x", ["N", 3]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
              [f32("yw", [None, 3]), f32("z", ["N", 3])],
              [const("axis0", np.array([0], np.int64)),
               const("w", np.array([1.0, -2.0, 0.5], np.float32))])
    return m, [{"x": RNG.standard_normal((n, 3)).astype(np.float32), "c": np.bool_(c)}
               for n, c in ((2, True), (2, False), (4, True), (4, False))]


def if_nested_pad_lstm():
    """Speech-style (as Silero VAD's export): the outer branch reflect-pads
    the audio along its symbolic time axis; the inner If's branches read
    that padded value (a value of the outer branch, not of the graph), and
    one frames it by a strided Conv over the symbolic length, reshapes the
    frames time-major through Shape arithmetic and runs an LSTM."""
    w = np.array([0.5, -1.0, 0.25, 2.0], np.float32).reshape(1, 1, 4)
    inner_then = helper.make_graph(
        [helper.make_node("Unsqueeze", ["p", "axis1"], ["p3"], name="channels"),
         helper.make_node("Conv", ["p3", "K"], ["f"], name="frames", strides=[4]),
         helper.make_node("Shape", ["f"], ["fs"], name="fshape"),
         helper.make_node("Gather", ["fs", "two"], ["flen"], name="flen", axis=0),
         helper.make_node("Concat", ["flen", "one_one_m1"], ["tshape"], name="tshape", axis=0),
         helper.make_node("Transpose", ["f"], ["ft"], name="time_major", perm=[2, 0, 1]),
         helper.make_node("Reshape", ["ft", "tshape"], ["x3"], name="features"),
         helper.make_node("LSTM", ["x3", "W", "R", "B"], ["Y", "Yh"], name="lstm", hidden_size=4)],
        "inner_then", [], [f32("Yh", [1, 1, 4])])
    inner_else = helper.make_graph(
        [helper.make_node("ReduceSum", ["p", "axis1"], ["qs"], name="energy", keepdims=1),
         helper.make_node("Unsqueeze", ["qs", "axis2"], ["qs3"], name="qs3"),
         helper.make_node("Mul", ["qs3", "w"], ["e"], name="scale")],
        "inner_else", [], [f32("e", [1, 1, 4])])
    outer_then = helper.make_graph(
        [helper.make_node("Pad", ["audio", "pads"], ["p"], name="reflect_pad", mode="reflect"),
         helper.make_node("If", ["c2"], ["h"], name="inner", then_branch=inner_then,
                          else_branch=inner_else)],
        "outer_then", [], [f32("h", [1, 1, 4])])
    outer_else = helper.make_graph(
        [helper.make_node("Pad", ["audio", "pads"], ["z"], name="zero_pad"),
         helper.make_node("ReduceMax", ["z"], ["m"], name="peak", keepdims=1),
         helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"], name="m3"),
         helper.make_node("Mul", ["m3", "w"], ["o"], name="scale_peak")],
        "outer_else", [], [f32("o", [1, 1, 4])])
    nodes = [helper.make_node("If", ["c1"], ["y"], name="outer", then_branch=outer_then,
                              else_branch=outer_else)]
    b = lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, [])
    m = model(nodes, "if_nested_pad_lstm", [f32("audio", [1, "T"]), b("c1"), b("c2")],
              [f32("y", [1, 1, 4])],
              [const("pads", np.array([0, 4, 0, 4], np.int64)),
               const("axis1", np.array([1], np.int64)),
               const("axis2", np.array([2], np.int64)),
               const("w", w),
               const("K", RNG.standard_normal((3, 1, 8)).astype(np.float32)),
               const("two", np.array([2], np.int64)),
               const("one_one_m1", np.array([1, -1], np.int64)),
               const("W", RNG.standard_normal((1, 16, 3)).astype(np.float32)),
               const("R", RNG.standard_normal((1, 16, 4)).astype(np.float32) * 0.5),
               const("B", RNG.standard_normal((1, 32)).astype(np.float32) * 0.1)])
    return m, [{"audio": RNG.standard_normal((1, t)).astype(np.float32), "c1": np.bool_(c1),
                "c2": np.bool_(c2)} for t, c1, c2 in ((16, True, True), (37, True, True),
                                                     (16, True, False), (9, False, True))]
TESTS = [if_computed, if_folded, loop_accumulate, loop_cond, scan_running_sum,
         loop_nested_if, loop_while, if_dead_branch, loop_runtime_trip, loop_runtime_cond_scan,
         loop_runtime_batch, loop_runtime_nested, loop_runtime_long, loop_runtime_partial,
         if_runtime_shapes, loop_runtime_grow, scan_runtime_length, if_nested_pad_lstm]


def write(outdir, name, m, sets, expected=None):
    """expected(feeds) gives the outputs where ONNX Runtime cannot."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    data = m.SerializeToString()
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(data)
    sess = None if expected else ort.InferenceSession(data,
                                                      providers=["CPUExecutionProvider"])
    names = [i.name for i in m.graph.input]
    outs = [o.name for o in m.graph.output]
    for k, feeds in enumerate(sets):
        feeds = {n: np.asarray(v) for n, v in feeds.items()}
        sd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(sd, exist_ok=True)
        for i, n in enumerate(names):
            t = numpy_helper.from_array(np.asarray(feeds[n]), n)
            with open(os.path.join(sd, "input_%d.pb" % i), "wb") as f:
                f.write(t.SerializeToString())
        got = ([np.asarray(v, np.float32) for v in expected(feeds)] if expected
               else sess.run(None, feeds))
        for i, (o, v) in enumerate(zip(outs, got)):
            t = numpy_helper.from_array(v, o)
            with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
                f.write(t.SerializeToString())


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "control")
    for fn in TESTS:
        write(outdir, fn.__name__, *fn())
    return 0


if __name__ == "__main__":
    sys.exit(main())
