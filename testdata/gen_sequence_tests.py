#!/usr/bin/env python3
"""Builds the sequence and optional tests (tests/sequence.sh).

usage: gen_sequence_tests.py [OUTDIR]     (default: testdata/sequence)

Writes OUTDIR/NAME/model.onnx, OUTDIR/NAME/args (the compile options the
model needs, e.g. --elements for a sequence input) and
OUTDIR/NAME/test_data_set_K/{input,output}_I.pb, one file per tensor of the
compiled model: a sequence input or output is one tensor per element, in
order; a sequence output whose length is only known at run time (RtSeq) is
NAME[K].pb per element instead, and takes its 2 or 3 tensors' indexes. Expected outputs are computed with numpy here. Runs with Debian's
python3-onnx (1.12) and numpy; the output is committed.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(6)
OPSET = 17


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def seq(name, shape=None):
    return helper.make_tensor_sequence_value_info(name, TensorProto.FLOAT, shape)


def opt_f32(name, shape):
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, shape)
    return helper.make_value_info(name, helper.make_optional_type_proto(t))


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "sequence", inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="collagec-sequence-test",
                          opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return m


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def construct_at():
    """SequenceConstruct, SequenceAt(-1), SequenceLength."""
    x, y, z = rand(2, 3), rand(2, 3), rand(2, 3)
    m = model([helper.make_node("SequenceConstruct", ["x", "y", "z"], ["s"], name="make"),
               helper.make_node("SequenceAt", ["s", "last"], ["a"], name="at"),
               helper.make_node("Relu", ["a"], ["r"], name="relu"),
               helper.make_node("SequenceLength", ["s"], ["n"], name="length")],
              [f32("x", [2, 3]), f32("y", [2, 3]), f32("z", [2, 3])],
              [f32("r", [2, 3]), helper.make_tensor_value_info("n", TensorProto.INT64, [])],
              [const("last", np.int64(-1))])
    return m, [], [x, y, z], [np.maximum(z, 0), np.int64(3)]


def insert_erase():
    """A sequence input of 2 and a sequence output: Insert at 1, Erase at 0."""
    s0, s1, t = rand(4), rand(4), rand(4)
    m = model([helper.make_node("SequenceInsert", ["s", "t", "one"], ["u"], name="insert"),
               helper.make_node("SequenceErase", ["u", "zero"], ["v"], name="erase")],
              [seq("s", [4]), f32("t", [4])], [seq("v", [4])],
              [const("one", np.int64(1)), const("zero", np.int64(0))])
    return m, ["--elements", "s=2"], [s0, s1, t], [t, s1]


def split_concat():
    """SplitToSequence by sizes and by ones; ConcatFromSequence, with new_axis too."""
    x = rand(6, 2)
    m = model([helper.make_node("SplitToSequence", ["x", "sizes"], ["s"], name="split", axis=0),
               helper.make_node("ConcatFromSequence", ["s"], ["c"], name="concat", axis=1),
               helper.make_node("SplitToSequence", ["x"], ["p"], name="rows", axis=0,
                                keepdims=0),
               helper.make_node("ConcatFromSequence", ["p"], ["t"], name="stack", axis=1,
                                new_axis=1)],
              [f32("x", [6, 2])], [f32("c", [3, 4]), f32("t", [2, 6])],
              [const("sizes", np.array([3, 3], np.int64))])
    return m, [], [x], [np.concatenate([x[:3], x[3:]], axis=1), x.T.copy()]


def position_from_shape():
    """SequenceAt whose position is shape arithmetic: Shape(x)[0] - 2."""
    x, y = rand(3, 2), rand(3, 2)
    m = model([helper.make_node("SequenceConstruct", ["x", "y", "x"], ["s"], name="make"),
               helper.make_node("Shape", ["x"], ["sh"], name="shape"),
               helper.make_node("Gather", ["sh", "zero"], ["d0"], name="dim0", axis=0),
               helper.make_node("Sub", ["d0", "two"], ["pos"], name="minus2"),
               helper.make_node("SequenceAt", ["s", "pos"], ["a"], name="at")],
              [f32("x", [3, 2]), f32("y", [3, 2])], [f32("a", [3, 2])],
              [const("zero", np.int64(0)), const("two", np.int64(2))])
    return m, [], [x, y], [y]


def optional_present():
    """Optional(x), OptionalHasElement, OptionalGetElement; an optional input present."""
    x, o = rand(4), rand(4)
    bool_out = helper.make_tensor_value_info("has", TensorProto.BOOL, [])
    m = model([helper.make_node("Optional", ["x"], ["ox"], name="wrap"),
               helper.make_node("OptionalHasElement", ["ox"], ["has"], name="has"),
               helper.make_node("OptionalGetElement", ["ox"], ["gx"], name="get"),
               helper.make_node("OptionalGetElement", ["o"], ["go"], name="get_input"),
               helper.make_node("Add", ["gx", "go"], ["y"], name="add")],
              [f32("x", [4]), opt_f32("o", [4])], [bool_out, f32("y", [4])])
    return m, [], [x, o], [np.bool_(True), x + o]


def optional_absent():
    """An optional input the model is compiled without (--elements o=none)."""
    x = rand(4)
    bool_out = helper.make_tensor_value_info("has", TensorProto.BOOL, [])
    m = model([helper.make_node("OptionalHasElement", ["o"], ["has"], name="has"),
               helper.make_node("Relu", ["x"], ["y"], name="relu")],
              [f32("x", [4]), opt_f32("o", [4])], [bool_out, f32("y", [4])])
    return m, ["--elements", "o=none"], [x], [np.bool_(False), np.maximum(x, 0)]


def sequence_map():
    """SequenceMap over a sequence input of 3, with a tensor input to every step."""
    s, b = [rand(2, 2) for _ in range(3)], rand(2, 2)
    body = helper.make_graph(
        [helper.make_node("Add", ["e", "b_in"], ["o"], name="add"),
         helper.make_node("Tanh", ["o"], ["t"], name="tanh")],
        "body", [f32("e", [2, 2]), f32("b_in", [2, 2])], [f32("t", [2, 2])])
    m = model([helper.make_node("SequenceMap", ["s", "b"], ["r"], name="map", body=body)],
              [seq("s", [2, 2]), f32("b", [2, 2])], [seq("r", [2, 2])])
    return m, ["--elements", "s=3"], s + [b], [np.tanh(e + b) for e in s]


def loop_seq():
    """A Loop with a known trip count that carries a sequence: appends x * i."""
    x = rand(3)
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["xi"], name="scale"),
         helper.make_node("SequenceInsert", ["s_in", "xi"], ["s_out"], name="append"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), seq("s_in")],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")])
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["three", "", "empty"], ["r"], name="loop",
                                body=body),
               helper.make_node("ConcatFromSequence", ["r"], ["y"], name="concat", axis=0)],
              [f32("x", [3])], [f32("y", [9])], [const("three", np.int64(3))])
    return m, [], [x], [np.concatenate([x * 0, x * 1, x * 2])]


def ragged_concat():
    """A sequence input whose elements differ in size (type [N]): each its own N."""
    a, b = rand(2), rand(3)
    m = model([helper.make_node("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0)],
              [seq("s", ["N"])], [f32("y", ["M"])])
    return m, ["--elements", "s=2"], [a, b], [np.concatenate([a, b])]


def runtime_positions():
    """SequenceAt, SequenceInsert (an int32 [1] position) and SequenceErase at positions
    that are graph inputs: in range, negative, and outside the range (the nearest end)."""
    x, y, z, t = rand(2, 3), rand(2, 3), rand(2, 3), rand(2, 3)
    i64 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [])
    m = model([helper.make_node("SequenceConstruct", ["x", "y", "z"], ["s"], name="make"),
               helper.make_node("SequenceAt", ["s", "pa"], ["a"], name="at"),
               helper.make_node("SequenceInsert", ["s", "t", "pi"], ["u"], name="insert"),
               helper.make_node("SequenceErase", ["s", "pe"], ["v"], name="erase")],
              [f32("x", [2, 3]), f32("y", [2, 3]), f32("z", [2, 3]), f32("t", [2, 3]),
               i64("pa"), helper.make_tensor_value_info("pi", TensorProto.INT32, [1]),
               i64("pe")],
              [f32("a", [2, 3]), seq("u", [2, 3]), seq("v", [2, 3])])
    elems, sets = [x, y, z], []
    for pa, pi, pe in ((1, 0, -1), (-3, 3, 0), (2, -1, 1), (7, -9, 5), (-8, 11, -6)):
        def norm(p, hi):
            return min(max(p + 3 if p < 0 else p, 0), hi)
        u = list(elems)
        u.insert(norm(pi, 3), t)
        v = list(elems)
        del v[norm(pe, 2)]
        sets.append(([x, y, z, t, np.int64(pa), np.array([pi], np.int32), np.int64(pe)],
                     [elems[norm(pa, 2)]] + u + v))
    return m, [], sets


def runtime_ragged():
    """Run-time positions over elements of different lengths (a sequence input whose
    elements have dims of their own): SequenceInsert, SequenceAt, SequenceErase."""
    a, b, c, t = rand(4), rand(3), rand(5), rand(2)
    i64 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [])
    m = model([helper.make_node("SequenceInsert", ["s", "t", "pi"], ["u"], name="insert"),
               helper.make_node("SequenceAt", ["u", "pa"], ["x"], name="at"),
               helper.make_node("SequenceErase", ["s", "pe"], ["v"], name="erase")],
              [seq("s", ["N"]), f32("t", ["T"]), i64("pi"), i64("pa"), i64("pe")],
              [seq("u", ["M"]), f32("x", ["K"]), seq("v", ["L"])])
    elems, sets = [a, b, c], []
    for pi, pa, pe in ((0, 2, 1), (-1, -4, -1), (3, 9, -7)):
        def norm(p, n, hi):
            return min(max(p + n if p < 0 else p, 0), hi)
        u = list(elems)
        u.insert(norm(pi, 3, 3), t)
        v = list(elems)
        del v[norm(pe, 3, 2)]
        sets.append(([a, b, c, t, np.int64(pi), np.int64(pa), np.int64(pe)],
                     u + [u[norm(pa, 4, 3)]] + v))
    return m, ["--elements", "s=3"], sets


def runtime_split():
    """SplitToSequence by sizes that are a graph input, on an axis of symbolic length;
    the pieces' lengths are known at run time only."""
    m = model([helper.make_node("SplitToSequence", ["x", "sizes"], ["s"], name="split"),
               helper.make_node("SequenceAt", ["s", "one"], ["mid"], name="middle"),
               helper.make_node("ConcatFromSequence", ["s"], ["c"], name="concat", axis=0),
               helper.make_node("SequenceLength", ["s"], ["n"], name="length")],
              [f32("x", ["N", 2]), helper.make_tensor_value_info("sizes", TensorProto.INT64,
                                                                  [3])],
              [seq("s"), f32("mid", None), f32("c", None),
               helper.make_tensor_value_info("n", TensorProto.INT64, [])],
              [const("one", np.int64(1))])
    sets = []
    for sizes in ((2, 0, 5), (1, 2, 1)):
        x = rand(sum(sizes), 2)
        cut = np.cumsum(sizes)[:-1]
        parts = np.split(x, cut)
        sets.append(([x, np.array(sizes, np.int64)], parts + [parts[1], x, np.int64(3)]))
    return m, [], sets


class RtSeq(list):
    """An expected sequence whose length is only known at run time: the
    compiled model gives it as NAME.data, NAME.dims (and NAME.present for an
    optional), and `collagec run --check` reads its elements as NAME[K].pb."""

    def __init__(self, name, elems, optional=False):
        super().__init__(elems)
        self.name = name
        self.optional = optional


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def growing_body(extra=(), outs=()):
    """A run-time Loop's body: appends x[0:i+1] to the carried sequence s."""
    return helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["end0"], name="end"),
         helper.make_node("Unsqueeze", ["end0", "axis0"], ["end1"], name="end1"),
         helper.make_node("Slice", ["x", "zero1", "end1"], ["piece"], name="piece"),
         helper.make_node("SequenceInsert", ["s_in", "piece"], ["s_out"], name="append"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")] + list(extra),
        "body", [i64("i", []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 seq("s_in")] + [i for i, _ in outs],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")] +
        [o for _, o in outs])


GROW_INITS = [const("one", np.int64(1)), const("axis0", np.int64([0])),
              const("zero1", np.int64([0]))]


def loop_runtime_seq():
    """A Loop of run-time trip count m carries a sequence that grows by x[0:i+1]
    (elements of different lengths; m = 0 gives the empty one) and a sum that
    reads SequenceLength and SequenceAt of it inside the body."""
    x = rand(5)
    body = growing_body(
        [helper.make_node("SequenceLength", ["s_in"], ["n"], name="length"),
         helper.make_node("Cast", ["n"], ["fn"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("SequenceAt", ["s_out", "minus1"], ["last"], name="last"),
         helper.make_node("ReduceSum", ["last"], ["ls"], name="sum", keepdims=0),
         helper.make_node("Add", ["acc_in", "ls"], ["acc1"], name="add"),
         helper.make_node("Add", ["acc1", "fn"], ["acc_out"], name="count")],
        [(f32("acc_in", []), f32("acc_out", []))])
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty", "acc0"], ["r", "acc"], name="loop",
                                body=body),
               helper.make_node("SequenceLength", ["r"], ["n"], name="length")],
              [f32("x", [5]), i64("m", [])],
              [seq("r"), f32("acc", []), i64("n", [])],
              GROW_INITS + [const("minus1", np.int64(-1)), const("acc0", np.float32(0))])
    sets = []
    for trips in (0, 2, 5):
        pieces = [x[:i + 1] for i in range(trips)]
        acc = np.float32(sum(float(p.sum()) + i for i, p in enumerate(pieces)))
        sets.append(([x, np.int64(trips)], [RtSeq("r", pieces), acc, np.int64(trips)]))
    return m, [], sets


def loop_runtime_seq_at():
    """SequenceAt at a run-time position of the sequence a run-time Loop made."""
    x = rand(5)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=growing_body()),
               helper.make_node("SequenceAt", ["r", "p"], ["a"], name="at"),
               helper.make_node("Neg", ["a"], ["y"], name="neg")],
              [f32("x", [5]), i64("m", []), i64("p", [])], [f32("y", None)], GROW_INITS)
    sets = [([x, np.int64(m), np.int64(p)], [-x[:(p % m) + 1]])
            for m, p in ((3, 1), (4, -1), (5, 0))]
    return m, [], sets


def loop_runtime_seq_at_zero():
    """loop_runtime_seq_at on elements [k, 0]: the element SequenceAt gives
    keeps its 0 dim (its Reshape has allowzero)."""
    x = np.zeros((5, 0), np.float32)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=growing_body()),
               helper.make_node("SequenceAt", ["r", "p"], ["a"], name="at"),
               helper.make_node("Neg", ["a"], ["y"], name="neg")],
              [f32("x", [5, 0]), i64("m", []), i64("p", [])], [f32("y", None)], GROW_INITS)
    sets = [([x, np.int64(m), np.int64(p)], [-x[:(p % m) + 1]])
            for m, p in ((3, 1), (4, -1))]
    return m, [], sets


def loop_runtime_optional():
    """A run-time Loop that carries an optional sequence, absent at first: the
    body starts it with [zeros(1)] (If on OptionalHasElement) and appends."""
    x = rand(4)
    then_g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["zeros1"], ["fresh"], name="fresh")],
        "then", [], [seq("fresh")])
    else_g = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["o_in"], ["held"], name="held")],
        "else", [], [seq("held")])
    opt_seq = helper.make_optional_type_proto(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    body = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["o_in"], ["has"], name="has"),
         helper.make_node("Not", ["has"], ["none"], name="none"),
         helper.make_node("If", ["none"], ["s_in"], name="start", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Add", ["i", "one"], ["end0"], name="end"),
         helper.make_node("Unsqueeze", ["end0", "axis0"], ["end1"], name="end1"),
         helper.make_node("Slice", ["x", "zero1", "end1"], ["piece"], name="piece"),
         helper.make_node("SequenceInsert", ["s_in", "piece"], ["s_out"], name="append"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [i64("i", []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 helper.make_value_info("o_in", opt_seq)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")])
    m = model([helper.make_node("Optional", [], ["o0"], name="none0",
                                type=opt_seq.optional_type.elem_type),
               helper.make_node("Loop", ["m", "", "o0"], ["r"], name="loop", body=body),
               helper.make_node("SequenceAt", ["r", "last"], ["y"], name="at")],
              [f32("x", [4]), i64("m", [])], [seq("r"), f32("y", None)],
              GROW_INITS + [const("zeros1", np.zeros(1, np.float32)),
                            const("last", np.int64(-1))])
    sets = [([x, np.int64(m)],
             [RtSeq("r", [np.zeros(1, np.float32)] + [x[:i + 1] for i in range(m)]),
              x[:m]]) for m in (1, 3)]
    return m, [], sets


def if_runtime_lengths():
    """An If on a run-time condition whose branches give sequences of 2 and 1
    elements of different lengths: the sequence's length is decided at run time."""
    x, y = rand(3), rand(2)
    then_g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x", "y"], ["two"], name="two")],
        "then", [], [seq("two")])
    else_g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["y"], ["one"], name="one")],
        "else", [], [seq("one")])
    m = model([helper.make_node("If", ["c"], ["s"], name="choose", then_branch=then_g,
                                else_branch=else_g),
               helper.make_node("SequenceLength", ["s"], ["n"], name="length")],
              [f32("x", [3]), f32("y", [2]),
               helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
              [seq("s"), i64("n", [])])
    sets = [([x, y, np.bool_(True)], [RtSeq("s", [x, y]), np.int64(2)]),
            ([x, y, np.bool_(False)], [RtSeq("s", [y]), np.int64(1)])]
    return m, [], sets


def scaling_body(shape):
    """A run-time Loop's body: appends x * i (elements of x's shape) to s."""
    return helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["xi"], name="scale"),
         helper.make_node("SequenceInsert", ["s_in", "xi"], ["s_out"], name="append"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [i64("i", []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 seq("s_in")],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")])


def columns_body():
    """A run-time Loop's body: appends x[:, 0:i+1] ([2, i+1]) to s."""
    return helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["end0"], name="end"),
         helper.make_node("Unsqueeze", ["end0", "axis0"], ["end1"], name="end1"),
         helper.make_node("Slice", ["x", "zero1", "end1", "one1"], ["piece"], name="piece"),
         helper.make_node("SequenceInsert", ["s_in", "piece"], ["s_out"], name="append"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [i64("i", []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 seq("s_in")],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")])


def empty_like(rank):
    """What an empty run-time sequence concatenates or stacks to: every dim 0."""
    return np.zeros((0,) * rank, np.float32)


def loop_runtime_concat():
    """ConcatFromSequence of the sequence a run-time Loop made of x[0:i+1] (1-D
    elements of different lengths), on axis 0 and -1; m = 0 gives [0]."""
    x = rand(5)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=growing_body()),
               helper.make_node("ConcatFromSequence", ["r"], ["y"], name="concat", axis=0),
               helper.make_node("ConcatFromSequence", ["r"], ["z"], name="last", axis=-1)],
              [f32("x", [5]), i64("m", [])], [f32("y", None), f32("z", None)], GROW_INITS)
    sets = []
    for trips in (0, 1, 4):
        c = np.concatenate([x[:i + 1] for i in range(trips)] or [empty_like(1)])
        sets.append(([x, np.int64(trips)], [c, c]))
    return m, [], sets


def loop_runtime_stack():
    """ConcatFromSequence of the sequence a run-time Loop made of x * i ([2, 3]
    each): stacked on axes 0, 1 and -1, concatenated on axes 0 and 1."""
    x = rand(2, 3)
    cfs = lambda name, out, axis, new: helper.make_node(
        "ConcatFromSequence", ["r"], [out], name=name, axis=axis, new_axis=new)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=scaling_body([2, 3])),
               cfs("stack0", "s0", 0, 1), cfs("stack1", "s1", 1, 1),
               cfs("stack_last", "s2", -1, 1), cfs("concat0", "c0", 0, 0),
               cfs("concat1", "c1", 1, 0)],
              [f32("x", [2, 3]), i64("m", [])],
              [f32(n, None) for n in ("s0", "s1", "s2", "c0", "c1")])
    sets = []
    for trips in (0, 1, 3):
        e = [x * np.float32(i) for i in range(trips)]
        if not e:
            outs = [empty_like(3)] * 3 + [empty_like(2)] * 2
        else:
            outs = [np.stack(e, 0), np.stack(e, 1), np.stack(e, -1),
                    np.concatenate(e, 0), np.concatenate(e, 1)]
        sets.append(([x, np.int64(trips)], outs))
    return m, [], sets


def loop_runtime_concat_columns():
    """ConcatFromSequence on axis 1 (and -1) of elements of different lengths
    there: a run-time Loop appends x[:, 0:i+1]."""
    x = rand(2, 5)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=columns_body()),
               helper.make_node("ConcatFromSequence", ["r"], ["y"], name="concat", axis=1),
               helper.make_node("ConcatFromSequence", ["r"], ["z"], name="last", axis=-1)],
              [f32("x", [2, 5]), i64("m", [])], [f32("y", None), f32("z", None)],
              GROW_INITS + [const("one1", np.int64([1]))])
    sets = []
    for trips in (0, 1, 4):
        e = [x[:, :i + 1] for i in range(trips)]
        c = np.concatenate(e, 1) if e else empty_like(2)
        sets.append(([x, np.int64(trips)], [c, c]))
    return m, [], sets


def loop_runtime_erase_insert():
    """SequenceErase (at a run-time position, and without one: the last) and
    SequenceInsert at a run-time position on the sequence a run-time Loop made
    of x[0:i+1]: in range, negative, out of range (the nearest end), empty."""
    x, t = rand(5), rand(2)
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                body=growing_body()),
               helper.make_node("SequenceErase", ["r", "pe"], ["e"], name="erase"),
               helper.make_node("SequenceErase", ["r"], ["l"], name="erase_last"),
               helper.make_node("SequenceInsert", ["r", "t", "pi"], ["u"], name="insert"),
               helper.make_node("ConcatFromSequence", ["u"], ["c"], name="concat", axis=0),
               helper.make_node("SequenceInsert", ["r", "t", "minus1"], ["v"],
                                name="insert_last")],
              [f32("x", [5]), i64("m", []), f32("t", [2]), i64("pe", []),
               helper.make_tensor_value_info("pi", TensorProto.INT32, [1])],
              [seq("e"), seq("l"), seq("u"), f32("c", None), seq("v")],
              GROW_INITS + [const("minus1", np.int64(-1))])

    def norm(p, n, hi):
        return min(max(p + n if p < 0 else p, 0), hi)
    sets = []
    for trips, pe, pi in ((0, 0, 0), (1, 0, -1), (3, 1, 1), (4, -1, -2), (4, 9, 7),
                          (4, -9, -9)):
        elems = [x[:i + 1] for i in range(trips)]
        e = list(elems)
        if e:
            del e[norm(pe, trips, trips - 1)]
        u = list(elems)
        u.insert(norm(pi, trips, trips), t)
        v = list(elems)
        v.insert(norm(-1, trips, trips), t)
        sets.append(([x, np.int64(trips), t, np.int64(pe), np.array([pi], np.int32)],
                     [RtSeq("e", e), RtSeq("l", elems[:-1]), RtSeq("u", u),
                      np.concatenate(u), RtSeq("v", v)]))
    return m, [], sets


def loop_runtime_prepend():
    """A run-time Loop whose body inserts at position 0 (and erases nothing):
    the sequence comes out reversed, then is stacked."""
    x = rand(3)
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["xi"], name="scale"),
         helper.make_node("SequenceInsert", ["s_in", "xi", "zero"], ["s_out"],
                          name="prepend"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
        "body", [i64("i", []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 seq("s_in")],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), seq("s_out")])
    m = model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
               helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop", body=body),
               helper.make_node("ConcatFromSequence", ["r"], ["y"], name="stack", axis=0,
                                new_axis=1)],
              [f32("x", [3]), i64("m", [])], [f32("y", None)],
              [const("zero", np.int64(0))])
    sets = [([x, np.int64(trips)], [np.stack([x * np.float32(i)
                                              for i in reversed(range(trips))])])
            for trips in (1, 4)]
    return m, [], sets


# the refusals: model, compile options; tests/sequence.sh holds the messages
def bad_no_length():
    return model([helper.make_node("SequenceLength", ["s"], ["n"], name="length")],
                 [seq("s", [2])], [helper.make_tensor_value_info("n", TensorProto.INT64, [])]), []


def bad_port_metadata():
    """A user's model with the metadata through which collagec's own Loop
    bodies name their run-time sequences: it means nothing here."""
    m, args = bad_no_length()
    e = m.metadata_props.add()
    e.key, e.value = "collagec.sequence", "in s 1 1 -"
    return m, args


def bad_runtime_position():
    return model([helper.make_node("SequenceConstruct", ["x", "y"], ["s"], name="make"),
                  helper.make_node("SequenceAt", ["s", "p"], ["a"], name="at")],
                 [f32("x", [2]), f32("y", [2, 1]),
                  helper.make_tensor_value_info("p", TensorProto.INT64, [])],
                 [f32("a", None)]), []


def bad_runtime_split():
    return model([helper.make_node("SplitToSequence", ["x", "k"], ["s"], name="split"),
                  helper.make_node("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0)],
                 [f32("x", [6]), helper.make_tensor_value_info("k", TensorProto.INT64, [])],
                 [f32("y", None)]), []


def bad_absent_get():
    return model([helper.make_node("OptionalGetElement", ["o"], ["y"], name="get")],
                 [opt_f32("o", [2])], [f32("y", [2])]), ["--elements", "o=none"]


def bad_runtime_map():
    return model([helper.make_node("SequenceEmpty", [], ["empty"], name="empty"),
                  helper.make_node("Loop", ["m", "", "empty"], ["r"], name="loop",
                                   body=growing_body()),
                  helper.make_node("SequenceMap", ["r"], ["e"], name="map",
                                   body=helper.make_graph(
                                       [helper.make_node("Neg", ["a"], ["b"], name="neg")],
                                       "map", [f32("a", None)], [f32("b", None)]))],
                 [f32("x", [5]), i64("m", [])], [seq("e")], GROW_INITS), []


def bad_runtime_mixed_concat():
    """A run-time Loop appends [1]-shaped pieces to a sequence that starts with a
    scalar: ConcatFromSequence of it needs one rank."""
    return model([helper.make_node("SequenceConstruct", ["zero"], ["start"], name="start"),
                  helper.make_node("Loop", ["m", "", "start"], ["r"], name="loop",
                                   body=growing_body()),
                  helper.make_node("ConcatFromSequence", ["r"], ["y"], name="concat",
                                   axis=0)],
                 [f32("x", [5]), i64("m", [])], [f32("y", None)],
                 GROW_INITS + [const("zero", np.float32(0))]), []


def bad_runtime_mixed_at():
    """A run-time Loop appends [1]-shaped pieces to a sequence that starts with a
    scalar: SequenceAt of it has no rank known when compiling."""
    return model([helper.make_node("SequenceConstruct", ["zero"], ["start"], name="start"),
                  helper.make_node("Loop", ["m", "", "start"], ["r"], name="loop",
                                   body=growing_body()),
                  helper.make_node("SequenceAt", ["r", "first"], ["y"], name="at")],
                 [f32("x", [5]), i64("m", [])], [f32("y", None)],
                 GROW_INITS + [const("zero", np.float32(0)), const("first", np.int64(0))]), []


def bad_tensor_op():
    return model([helper.make_node("SequenceConstruct", ["x"], ["s"], name="make"),
                  helper.make_node("Relu", ["s"], ["y"], name="relu")],
                 [f32("x", [2])], [f32("y", [2])]), []


CASES = [construct_at, insert_erase, split_concat, position_from_shape, optional_present,
         optional_absent, sequence_map, loop_seq, ragged_concat, runtime_positions,
         runtime_ragged, runtime_split, loop_runtime_seq, loop_runtime_seq_at,
         loop_runtime_seq_at_zero, loop_runtime_optional, if_runtime_lengths, loop_runtime_concat, loop_runtime_stack,
         loop_runtime_concat_columns, loop_runtime_erase_insert, loop_runtime_prepend]
BAD = [bad_no_length, bad_runtime_position, bad_runtime_split, bad_absent_get, bad_tensor_op,
       bad_runtime_map, bad_runtime_mixed_at, bad_runtime_mixed_concat, bad_port_metadata]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/sequence"
    if out.startswith("-") or len(sys.argv) > 2:
        sys.exit(__doc__)
    for case in CASES:
        r = case()
        m, args, sets = (r[0], r[1], [(r[2], r[3])]) if len(r) == 4 else r
        d = os.path.join(out, case.__name__)
        os.makedirs(d, exist_ok=True)
        write(os.path.join(d, "model.onnx"), m.SerializeToString())
        write(os.path.join(d, "args"), (" ".join(args) + "\n").encode())
        for k, (ins, outs) in enumerate(sets):
            ds = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(ds, exist_ok=True)
            for kind, arrs in (("input", ins), ("output", outs)):
                i = 0
                for a in arrs:
                    if isinstance(a, RtSeq):
                        for k, e in enumerate(a):
                            t = numpy_helper.from_array(np.asarray(e))
                            write(os.path.join(ds, "%s[%d].pb" % (a.name, k)),
                                  t.SerializeToString())
                        i += 3 if a.optional else 2
                        continue
                    t = numpy_helper.from_array(np.asarray(a))
                    write(os.path.join(ds, "%s_%d.pb" % (kind, i)), t.SerializeToString())
                    i += 1
    for case in BAD:
        m, args = case()
        d = os.path.join(out, case.__name__)
        os.makedirs(d, exist_ok=True)
        write(os.path.join(d, "model.onnx"), m.SerializeToString())
        write(os.path.join(d, "args"), (" ".join(args) + "\n").encode())


if __name__ == "__main__":
    main()
