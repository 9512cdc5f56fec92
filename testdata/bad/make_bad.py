#!/usr/bin/python3
"""Builds the models of collagec's command-line tests (tests/cli.sh).

usage: make_bad.py OUTDIR

Writes into OUTDIR:
  NAME.onnx       one bad model per testdata/bad/NAME.expect (the exact
                  stderr and exit status `collagec compile` must give)
  good/good.onnx  Add+Relu with a symbolic batch dim 'N'; two outputs
                  ('sum', 'y'); node names 'add_bias' and 'relu_out'
  good/data/      input_0.pb, output_0.pb, output_1.pb for N=2 (--check)
  good/slash.onnx Relu whose output is named 'out/relu' (file names from
                  output names: --output-dir then --check must round-trip)
  ext/ext.onnx    MatMul+Add whose weights live in ext/weights.bin
                  (external data); ext/data/ holds its check data

The models are generated at test time and are not kept in git. Needs
Debian's python3-onnx and python3-numpy only; every byte is deterministic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13)]


def model(graph, opset=None):
    m = helper.make_model(graph, producer_name="collagec-cli-test",
                          opset_imports=opset or OPSET)
    m.ir_version = 8
    return m


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def save_tensor(array, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def good_model():
    bias = numpy_helper.from_array(np.array([0.5, -0.25, 1.0], np.float32), "bias")
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["sum"], name="add_bias"),
        helper.make_node("Relu", ["sum"], ["y"], name="relu_out"),
    ]
    g = helper.make_graph(nodes, "good", [f32("x", ["N", 3])],
                          [f32("sum", ["N", 3]), f32("y", ["N", 3])], [bias])
    return model(g)


def slash_model():
    nodes = [helper.make_node("Relu", ["x"], ["out/relu"], name="/relu/Relu")]
    return model(helper.make_graph(nodes, "slash", [f32("x", [2])], [f32("out/relu", [2])]))


def good_data(d):
    os.makedirs(d, exist_ok=True)
    x = np.array([[-1.0, 0.0, 0.5], [2.0, 0.125, -3.0]], np.float32)
    s = x + np.array([0.5, -0.25, 1.0], np.float32)
    save_tensor(x, "x", os.path.join(d, "input_0.pb"))
    save_tensor(s, "sum", os.path.join(d, "output_0.pb"))
    save_tensor(np.maximum(s, 0), "y", os.path.join(d, "output_1.pb"))


def ext_model(d):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["y"], name="add"),
    ]
    g = helper.make_graph(nodes, "ext", [f32("x", [2, 4])], [f32("y", [2, 5])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = model(g)
    os.makedirs(d, exist_ok=True)
    onnx.save_model(m, os.path.join(d, "ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    save_tensor(x, "x", os.path.join(d, "data", "input_0.pb"))
    save_tensor((x @ w + b).astype(np.float32), "y", os.path.join(d, "data", "output_0.pb"))


def bad_models():
    """name -> serialised bytes (or a ModelProto)."""
    out = {}
    valid = good_model().SerializeToString()
    out["truncated"] = valid[:len(valid) // 2]
    out["random"] = np.random.default_rng(1234).integers(0, 256, 512, np.uint8).tobytes()
    out["empty"] = b""

    # a <-> b: two Adds feeding each other
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
        helper.make_node("Add", ["x", "a"], ["b"], name="add_b"),
    ]
    out["cycle"] = model(helper.make_graph(nodes, "cycle", [f32("x", [2])], [f32("b", [2])]))

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "ghost"], ["y"], name="add_ghost"),
    ]
    out["undefined_input"] = model(helper.make_graph(nodes, "undef", [f32("x", [2])],
                                                     [f32("y", [2])]))

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    out["huge_dim"] = model(helper.make_graph(nodes, "huge", [f32("x", [1, 1 << 40])],
                                              [f32("y", [1, 1 << 40])]))

    nodes = [
        helper.make_node("FooBar", ["x"], ["f"], name="foo"),
        helper.make_node("Relu", ["f"], ["r"], name="relu"),
        helper.make_node("BazQux", ["r"], ["y"], name="baz"),
    ]
    out["unsupported_ops"] = model(helper.make_graph(nodes, "unsup", [f32("x", [2])],
                                                     [f32("y", [2])]))

    nodes = [helper.make_node("Identity", ["s"], ["y"], name="ident")]
    out["string_input"] = model(helper.make_graph(
        nodes, "str", [helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])]))

    nodes = [helper.make_node("StringNormalizer", ["s"], ["y"], name="norm",
                              case_change_action="LOWER", locale="tr_TR")]
    out["string_locale"] = model(helper.make_graph(
        nodes, "str", [helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])]))

    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="add_mismatch")]
    out["shape_mismatch"] = model(helper.make_graph(nodes, "mismatch",
                                                    [f32("a", [2, 3]), f32("b", [4, 5])],
                                                    [f32("y", [2, 3])]))

    shape = numpy_helper.from_array(np.array([4, 2], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_bad")]
    out["bad_reshape"] = model(helper.make_graph(nodes, "reshape", [f32("x", [2, 3])],
                                                 [f32("y", [4, 2])], [shape]))

    # 8 minus the batch may be negative: no symbol stands for it, so it is
    # known only at run time, and SplitToSequence, which needs a scalar
    # split at compile time, refuses it (a Reshape, Split or DFT by it
    # computes its shape at run time: tests/dynamic.sh)
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Sub", ["eight", "n"], ["m"], name="eight_minus_batch"),
        helper.make_node("SplitToSequence", ["x", "m"], ["y"], name="split", axis=1),
    ]
    out["symbolic_shape_inexpressible"] = model(helper.make_graph(
        nodes, "inexpressible", [f32("x", ["N", 6, 1])],
        [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)],
        [ints("zero", 0), ints("eight", 8)]), [helper.make_opsetid("", 17)])

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    out["no_outputs"] = model(helper.make_graph(nodes, "noout", [f32("x", [2])], []))

    # external data that is not there: each initializer fails once, and
    # nothing else (the nodes that use them must not add "not defined" noise)
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    external_data_helper.set_external_data(w, location="missing_weights.bin", offset=0,
                                           length=16)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")]
    out["missing_weights"] = model(helper.make_graph(nodes, "missing", [f32("x", [2, 2])],
                                                     [f32("y", [2, 2])], [w]))

    # strict checking against the op's version in the model's opset: every
    # problem of every node, each naming the node and the version
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[0],
                         noop_with_empty_axes=0),                # opset 18's attribute
        helper.make_node("Softmax", ["m"], ["s"], name="softmax", axis=0.5),   # FLOAT, not INT
        helper.make_node("Cast", ["s"], ["c"], name="cast"),     # 'to' is required
        helper.make_node("Gelu", ["c"], ["y"], name="gelu"),     # opset 20 and later
    ]
    out["bad_attributes"] = model(helper.make_graph(nodes, "attrs", [f32("x", [2])],
                                                    [f32("y", [1])]),
                                  opset=[helper.make_opsetid("", 13)])

    # control flow: a body's unsupported op names the Loop and the body's node
    # (loop[0]/foo: iteration 0); a trip count read at run time is refused
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("FooBar", ["h_in"], ["h_out"], name="foo")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), f32("h_in", [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32("h_out", [2])])
    nodes = [helper.make_node("Loop", ["three", "", "x"], ["y"], name="loop", body=body)]
    out["control_unsupported"] = model(helper.make_graph(
        nodes, "control", [f32("x", [2])], [f32("y", [2])], [ints("three", 3)]))
    # a loop run at run time (its trip count an input) carrying a string tensor
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("Identity", ["h_in"], ["h_out"], name="copy")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.STRING, [2])])
    nodes = [helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop", body=body)]
    out["control_runtime_loop_string"] = model(helper.make_graph(
        nodes, "control", [helper.make_tensor_value_info("x", TensorProto.STRING, [2]),
                           helper.make_tensor_value_info("m", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])]))
    # a Scan over a symbolic axis (a run-time Loop) with a reversed scan output
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"], name="accumulate"),
         helper.make_node("Identity", ["s_out"], ["y"], name="copy")],
        "body", [f32("s_in", [2]), f32("row", [2])], [f32("s_out", [2]), f32("y", [2])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan", body=body,
                              num_scan_inputs=1, scan_output_directions=[1])]
    out["control_scan_reversed_runtime"] = model(helper.make_graph(
        nodes, "control", [f32("s0", [2]), f32("x", ["T", 2])],
        [f32("s", [2]), f32("ys", ["T", 2])]))
    # a run-time If whose branches disagree in rank
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"], name="same")],
                               "then", [], [f32("t", [2, 3])])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], name="sum",
                                                 keepdims=0)],
                               "else", [], [f32("e", [])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="if_shapes", then_branch=then_g,
                              else_branch=else_g)]
    out["control_if_shapes"] = model(helper.make_graph(
        nodes, "control", [f32("x", [2, 3]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [f32("y", None)]))

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    out["opset99"] = model(helper.make_graph(nodes, "opset99", [f32("x", [2])],
                                             [f32("y", [2])]),
                           opset=[helper.make_opsetid("", 99)])
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: make_bad.py OUTDIR\n")
        return 2
    outdir = sys.argv[1]
    os.makedirs(os.path.join(outdir, "good"), exist_ok=True)
    for name, m in bad_models().items():
        path = os.path.join(outdir, name + ".onnx")
        if isinstance(m, bytes):
            with open(path, "wb") as f:
                f.write(m)
        else:
            save(m, path)
    save(good_model(), os.path.join(outdir, "good", "good.onnx"))
    good_data(os.path.join(outdir, "good", "data"))
    save(slash_model(), os.path.join(outdir, "good", "slash.onnx"))
    ext_model(os.path.join(outdir, "ext"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
