#!/usr/bin/python3
"""Builds the tests of the ai.onnx.ml ops (tests/ml.sh).

usage: gen_ml_tests.py OUTDIR      (the committed data is testdata/ml)

Needs onnxruntime, onnx and numpy, which the tests themselves do not: the
expected outputs are ONNX Runtime's, computed here once and committed.
Writes, in the layout of testdata/nodetest.py:
  OUTDIR/good/NAME   models of ai.onnx.ml ops beyond onnx's own node tests:
      tree ensembles of random trees (TreeEnsembleRegressor of ai.onnx.ml 3
      and 1, TreeEnsemble of 5) over every branch mode, NaN features either
      way, several targets, each aggregate function and post_transform,
      base_values, a one-leaf tree, set membership; LabelEncoder's forms
      (1's classes_strings both ways, 2's lists, 4's tensors, NaN and
      repeated keys); ArrayFeatureExtractor of vectors, strings and 3-D
      data; Binarizer of integers and NaN; and sklearn-style pipelines with
      default-domain ops around them, some with a symbolic batch
  OUTDIR/bad/NAME    models collagec must refuse, with the message
ONNX Runtime has no TreeEnsembleRegressor of int64 data (that case expects
its outputs for the same data as float) and no Binarizer of int64 or double
(those expect onnx's reference evaluator's). Deterministic for a given onnxruntime (1.32
wrote the committed data).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodetest  # noqa: E402

import onnxruntime as ort  # noqa: E402

ML = "ai.onnx.ml"
RNG = np.random.default_rng(77)
GOOD = []
BAD = []


def model(nodes, inputs, outputs, ml_opset=3, opset=None):
    """inputs: [(name, onnx type, shape)]; outputs: names."""
    g = helper.make_graph(nodes, "ml", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_empty_tensor_value_info(o) for o in outputs])
    ops = [helper.make_opsetid(ML, ml_opset)]
    if opset:
        ops.append(helper.make_opsetid("", opset))
    m = helper.make_model(g, producer_name="collagec-testdata", opset_imports=ops)
    m.ir_version = 8
    return m


def run_ort(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def run_reference(m, feeds):
    from onnx.reference import ReferenceEvaluator
    r = ReferenceEvaluator(m)
    outs = r.run(None, feeds)
    return {o.name: np.asarray(v) for o, v in zip(m.graph.output, outs)}


def good(name, m, feeds, reference=False):
    """reference: onnx's reference evaluator, for what ONNX Runtime has no kernel of."""
    GOOD.append((name, m, feeds, run_reference(m, feeds) if reference else run_ort(m, feeds)))


def ml(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, domain=ML, name=op.lower(), **attrs)


MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_tree(tree, features, depth, n_targets, rng, modes=MODES, grid=None):
    """Node lists of one tree of TreeEnsembleRegressor: a full tree of the depth
    given, node ids shuffled, thresholds on grid (so EQ/NEQ and ties happen)."""
    n_int = 2 ** depth - 1
    n_all = 2 ** (depth + 1) - 1
    ids = rng.permutation(n_all)
    t = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "true",
                         "false", "missing")}
    targets = []
    for k in range(n_all):
        t["treeids"].append(tree)
        t["nodeids"].append(int(ids[k]))
        if k < n_int:
            t["featureids"].append(int(rng.integers(0, features)))
            t["modes"].append(str(rng.choice(modes)))
            t["values"].append(float(rng.choice(grid)) if grid is not None
                               else float(rng.standard_normal()))
            t["true"].append(int(ids[2 * k + 1]))
            t["false"].append(int(ids[2 * k + 2]))
            t["missing"].append(int(rng.integers(0, 2)))
        else:
            t["featureids"].append(0)
            t["modes"].append("LEAF")
            t["values"].append(0.0)
            t["true"].append(0)
            t["false"].append(0)
            t["missing"].append(0)
            for target in rng.choice(n_targets, size=int(rng.integers(1, n_targets + 1)),
                                     replace=False):
                targets.append((tree, int(ids[k]), int(target), float(rng.standard_normal())))
    return t, targets


def regressor(trees, features, depth, n_targets, agg="SUM", post="NONE", base=None,
              as_tensor=False, grid=None, missing=True, seed=0):
    rng = np.random.default_rng(seed)
    att = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "true",
                           "false", "missing")}
    targets = []
    for tr in range(trees):
        t, tg = random_tree(tr * 3 + 1, features, depth, n_targets, rng, grid=grid)
        for k in att:
            att[k] += t[k]
        targets += tg
    kw = dict(n_targets=n_targets, nodes_treeids=att["treeids"], nodes_nodeids=att["nodeids"],
              nodes_featureids=att["featureids"], nodes_modes=att["modes"],
              nodes_truenodeids=att["true"], nodes_falsenodeids=att["false"],
              target_treeids=[t[0] for t in targets], target_nodeids=[t[1] for t in targets],
              target_ids=[t[2] for t in targets], aggregate_function=agg, post_transform=post)
    if missing:
        kw["nodes_missing_value_tracks_true"] = att["missing"]
    if as_tensor:
        kw["nodes_values_as_tensor"] = numpy_helper.from_array(
            np.array(att["values"], np.float64), "v")
        kw["target_weights_as_tensor"] = numpy_helper.from_array(
            np.array([t[3] for t in targets], np.float64), "w")
    else:
        kw["nodes_values"] = att["values"]
        kw["target_weights"] = [t[3] for t in targets]
    if base is not None:
        kw["base_values"] = base
    return ml("TreeEnsembleRegressor", ["X"], ["Y"], **kw)


def with_nans(x, rng, p=0.15):
    x = x.copy()
    x[rng.random(x.shape) < p] = np.nan
    return x


def regressors():
    rng = np.random.default_rng(5)
    x = with_nans(rng.standard_normal((40, 6)).astype(np.float32), rng)
    for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
        n = regressor(7, 6, 4, 3, agg=agg, base=[0.5, -1.0, 2.0], seed=len(agg))
        good("regressor_%s" % agg.lower(), model([n], [("X", TensorProto.FLOAT, [40, 6])],
                                                 ["Y"]), {"X": x})
    for post in ("LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"):
        n = regressor(5, 6, 3, 4, post=post, seed=11)
        good("regressor_post_%s" % post.lower(),
             model([n], [("X", TensorProto.FLOAT, [40, 6])], ["Y"]), {"X": x})
    # PROBIT takes values in (0, 1): one target of weights in (0, 1/trees)
    n = regressor(4, 6, 3, 1, post="PROBIT", seed=12)
    for a in n.attribute:
        if a.name == "target_weights":
            a.floats[:] = [abs(w) % 0.24 + 0.001 for w in a.floats]
    good("regressor_post_probit", model([n], [("X", TensorProto.FLOAT, [40, 6])], ["Y"]),
         {"X": x})
    # thresholds on a grid of few values and integer data: EQ and NEQ decide
    grid = np.arange(-3, 4)
    xi = rng.integers(-3, 4, (30, 5)).astype(np.int64)
    n = regressor(6, 5, 4, 2, grid=grid, missing=False, seed=13)
    good("regressor_float_grid", model([n], [("X", TensorProto.FLOAT, [30, 5])], ["Y"]),
         {"X": xi.astype(np.float32)})
    # the same of int64 data: ONNX Runtime's outputs for the float data
    GOOD.append(("regressor_int64_grid", model([n], [("X", TensorProto.INT64, [30, 5])], ["Y"]),
                 {"X": xi}, GOOD[-1][3]))
    xd = with_nans(rng.standard_normal((25, 4)), rng)
    n = regressor(3, 4, 5, 2, as_tensor=True, seed=14)
    good("regressor_double_as_tensor", model([n], [("X", TensorProto.DOUBLE, [25, 4])], ["Y"]),
         {"X": xd})
    n = regressor(3, 6, 3, 2, agg="AVERAGE", seed=15)
    good("regressor_opset1", model([n], [("X", TensorProto.FLOAT, [40, 6])], ["Y"], ml_opset=1),
         {"X": x})


def ensemble_v5(trees, features, depth, n_targets, dtype, agg=1, post=0, member=False,
                leaf_tree=False, seed=0):
    """TreeEnsemble of ai.onnx.ml 5: nodes by index, leaves by index, random trees."""
    rng = np.random.default_rng(seed)
    feat, modes, splits, tid, fid, tleaf, fleaf, miss = [], [], [], [], [], [], [], []
    members, lt, lw, roots = [], [], [], []

    def leaf():
        lt.append(int(rng.integers(0, n_targets)))
        lw.append(float(rng.standard_normal()))
        return len(lw) - 1

    def grow(d):
        k = len(feat)
        for lst in (feat, modes, splits, tid, fid, tleaf, fleaf, miss):
            lst.append(0)
        feat[k] = int(rng.integers(0, features))
        modes[k] = int(rng.integers(0, 7 if member else 6))
        splits[k] = float(rng.standard_normal())
        miss[k] = int(rng.integers(0, 2))
        if modes[k] == 6:
            # in 0..30, where ONNX Runtime tests membership exactly (its sets
            # of other values compare the feature truncated to an integer)
            members.extend([float(v) for v in rng.integers(0, 3, 3)] + [np.nan])
            splits[k] = 0.0
        for side, ids, leafs in ((0, tid, tleaf), (1, fid, fleaf)):
            if d == 0 or rng.random() < 0.2:
                ids[k], leafs[k] = leaf(), 1
            else:
                ids[k], leafs[k] = grow(d - 1), 0
        return k

    for _ in range(trees):
        roots.append(grow(depth))
    if leaf_tree:
        k = len(feat)
        lf = leaf()
        for lst, v in ((feat, 0), (modes, 0), (splits, 0.0), (tid, lf), (fid, lf), (tleaf, 1),
                       (fleaf, 1), (miss, 0)):
            lst.append(v)
        roots.append(k)
    np_t = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64}[dtype]
    kw = dict(n_targets=n_targets, nodes_featureids=feat,
              nodes_modes=numpy_helper.from_array(np.array(modes, np.uint8), "m"),
              nodes_splits=numpy_helper.from_array(np.array(splits, np_t), "s"),
              nodes_truenodeids=tid, nodes_falsenodeids=fid, nodes_trueleafs=tleaf,
              nodes_falseleafs=fleaf, nodes_missing_value_tracks_true=miss,
              leaf_targetids=lt, leaf_weights=numpy_helper.from_array(np.array(lw, np_t), "w"),
              tree_roots=roots, aggregate_function=agg, post_transform=post)
    if member:
        kw["membership_values"] = numpy_helper.from_array(np.array(members, np_t), "mv")
    return ml("TreeEnsemble", ["X"], ["Y"], **kw)


def ensembles():
    rng = np.random.default_rng(6)
    x = with_nans(rng.integers(-2, 3, (30, 5)).astype(np.float32)
                  + (rng.random((30, 5)) < 0.5) * rng.standard_normal((30, 5)).astype(np.float32),
                  rng)
    for agg, name in ((0, "average"), (1, "sum"), (2, "min"), (3, "max")):
        n = ensemble_v5(6, 5, 4, 3, TensorProto.FLOAT, agg=agg, member=True, seed=20 + agg)
        good("ensemble_%s" % name, model([n], [("X", TensorProto.FLOAT, [30, 5])], ["Y"],
                                         ml_opset=5), {"X": x})
    # TreeEnsemble's post_transform codes are the spec's (1 SOFTMAX, 2 LOGISTIC);
    # ONNX Runtime 1.32 reads 1 as LOGISTIC and 2 as SOFTMAX (the order of its
    # older string enum), so these expect its scores without a transform,
    # transformed here
    def transformed(name, post, xtype, feeds, softmax, **kw):
        raw = run_ort(model([ensemble_v5(post=0, **kw)], [("X", xtype, [30, 5])], ["Y"],
                            ml_opset=5), feeds)["Y"].astype(np.float64)
        if softmax:
            e = np.exp(raw - raw.max(axis=1, keepdims=True))
            y = e / e.sum(axis=1, keepdims=True)
        else:
            y = 1 / (1 + np.exp(-raw))
        m = model([ensemble_v5(post=post, **kw)], [("X", xtype, [30, 5])], ["Y"], ml_opset=5)
        GOOD.append((name, m, feeds, {"Y": y.astype(feeds["X"].dtype)}))
    transformed("ensemble_double_logistic_leaf_tree", 2, TensorProto.DOUBLE,
                {"X": x.astype(np.float64)}, False, trees=4, features=5, depth=3, n_targets=2,
                dtype=TensorProto.DOUBLE, leaf_tree=True, seed=25)
    transformed("ensemble_softmax", 1, TensorProto.FLOAT, {"X": x}, True, trees=4, features=5,
                depth=3, n_targets=3, dtype=TensorProto.FLOAT, seed=26)


def encoders():
    s = np.array(["cat", "dog", "", "emu", "dog", "yak", "ant"], dtype=object)
    good("label_v1_string_to_int",
         model([ml("LabelEncoder", ["X"], ["Y"], classes_strings=["dog", "ant", "cat"],
                   default_int64=-7)], [("X", TensorProto.STRING, [7])], ["Y"], ml_opset=1),
         {"X": s})
    good("label_v1_int_to_string",
         model([ml("LabelEncoder", ["X"], ["Y"], classes_strings=["dog", "ant", "cat"],
                   default_string="none")], [("X", TensorProto.INT64, [2, 3])], ["Y"],
               ml_opset=1), {"X": np.array([[0, 2, 5], [-1, 1, 1]], np.int64)})
    # a key given twice maps to its first value, as in ONNX Runtime
    good("label_v2_float_to_string_repeated_key",
         model([ml("LabelEncoder", ["X"], ["Y"], keys_floats=[0.5, -1.0, 2.0, 0.5, 3.25],
                   values_strings=["a", "b", "c", "d", "e"], default_string="?")],
               [("X", TensorProto.FLOAT, [3, 3])], ["Y"], ml_opset=2),
         {"X": np.array([[0.5, -1, 2], [3.25, 0, -0.0], [7, 2, 0.5]], np.float32)})
    good("label_v2_int_to_float",
         model([ml("LabelEncoder", ["X"], ["Y"], keys_int64s=list(range(20, 0, -2)),
                   values_floats=[float(v) / 4 for v in range(10)], default_float=-3.5)],
               [("X", TensorProto.INT64, [12])], ["Y"], ml_opset=2),
         {"X": np.arange(12, dtype=np.int64) * 2 - 2})
    keys = numpy_helper.from_array(np.array([1.5, np.nan, -2.0], np.float64), "k")
    vals = numpy_helper.from_array(np.array([10, 20, 30], np.int64), "v")
    dflt = numpy_helper.from_array(np.array([-1], np.int64), "d")
    good("label_v4_tensor_nan_key",
         model([ml("LabelEncoder", ["X"], ["Y"], keys_tensor=keys, values_tensor=vals,
                   default_tensor=dflt)], [("X", TensorProto.DOUBLE, [5])], ["Y"], ml_opset=4),
         {"X": np.array([np.nan, 1.5, 0, -2, np.nan])})


def extractors():
    x = RNG.standard_normal((2, 3, 6)).astype(np.float32)
    good("afe_3d", model([ml("ArrayFeatureExtractor", ["X", "I"], ["Z"])],
                         [("X", TensorProto.FLOAT, [2, 3, 6]), ("I", TensorProto.INT64, [4])],
                         ["Z"], ml_opset=1),
         {"X": x, "I": np.array([5, 0, 0, 3], np.int64)})
    good("afe_vector_rows", model([ml("ArrayFeatureExtractor", ["X", "I"], ["Z"])],
                                  [("X", TensorProto.INT64, [7]), ("I", TensorProto.INT64, [1, 3])],
                                  ["Z"], ml_opset=1),
         {"X": np.arange(7, dtype=np.int64) * 3, "I": np.array([[6, 1, 2]], np.int64)})
    good("afe_strings", model([ml("ArrayFeatureExtractor", ["X", "I"], ["Z"])],
                              [("X", TensorProto.STRING, [2, 3]), ("I", TensorProto.INT64, [2])],
                              ["Z"], ml_opset=1),
         {"X": np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object),
          "I": np.array([2, 0], np.int64)})
    good("binarizer_int64", model([ml("Binarizer", ["X"], ["Y"], threshold=2.5)],
                                  [("X", TensorProto.INT64, [10])], ["Y"], ml_opset=1),
         {"X": np.arange(10, dtype=np.int64) - 3}, reference=True)
    xd = RNG.standard_normal(9)
    xd[[2, 5]] = np.nan
    good("binarizer_double_nan", model([ml("Binarizer", ["X"], ["Y"], threshold=-0.25)],
                                       [("X", TensorProto.DOUBLE, [9])], ["Y"], ml_opset=1),
         {"X": xd}, reference=True)


def pipelines():
    """A scaler (Sub, Mul) before a tree ensemble and a Softmax after it, batch symbolic;
    and label lookup of the ensemble's ArgMax, as a classifier pipeline writes them."""
    rng = np.random.default_rng(8)
    mean = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "mean")
    scale = numpy_helper.from_array((rng.random(6) + 0.5).astype(np.float32), "scale")
    trees = regressor(8, 6, 4, 3, seed=30)
    nodes = [helper.make_node("Sub", ["X", "mean"], ["c"]),
             helper.make_node("Mul", ["c", "scale"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             trees,
             helper.make_node("Softmax", ["Y"], ["P"], axis=-1),
             helper.make_node("ArgMax", ["P"], ["k"], axis=1, keepdims=0),
             ml("LabelEncoder", ["k"], ["label"], keys_int64s=[0, 1, 2],
                values_strings=["setosa", "versicolor", "virginica"])]
    for n in nodes[3:]:
        n.input[:] = ["r"] if n.op_type == "TreeEnsembleRegressor" else n.input
    g = helper.make_graph(nodes, "pipeline", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, ["N", 6])], [helper.make_empty_tensor_value_info("P"),
                                              helper.make_empty_tensor_value_info("label")],
        [mean, scale])
    m = helper.make_model(g, producer_name="collagec-testdata",
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)])
    m.ir_version = 8
    for n, name in ((1, "pipeline_n1"), (33, "pipeline_n33")):
        good(name, m, {"X": rng.standard_normal((n, 6)).astype(np.float32)})


def bads():
    def tree(**over):
        kw = dict(n_targets=1, nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2],
                  nodes_featureids=[0, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
                  nodes_values=[0.5, 0, 0], nodes_truenodeids=[1, 0, 0],
                  nodes_falsenodeids=[2, 0, 0], target_treeids=[0, 0],
                  target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[1.0, 2.0])
        kw.update(over)
        return model([ml("TreeEnsembleRegressor", ["X"], ["Y"], **kw)],
                     [("X", TensorProto.FLOAT, [2, 3])], ["Y"])
    BAD.append(("tree_cycle", tree(nodes_modes=["BRANCH_LEQ", "BRANCH_GT", "LEAF"],
                                   nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 2, 0],
                                   target_nodeids=[2, 2]),
                "node 0 'treeensembleregressor' (TreeEnsembleRegressor): a tree's branches "
                "form a cycle"))
    BAD.append(("tree_target", tree(target_ids=[0, 3]),
                "a leaf's target 3 is outside 0..0"))
    BAD.append(("tree_missing_node", tree(nodes_falsenodeids=[5, 0, 0]),
                "node 0 of tree 0 leads to node 5, which the tree lacks"))
    BAD.append(("tree_feature", tree(nodes_featureids=[4, 0, 0]),
                "X needs a static second dim of at least 5"))
    BAD.append(("tree_mode", tree(nodes_modes=["BRANCH_XX", "LEAF", "LEAF"]),
                "has mode 'BRANCH_XX'"))
    v5 = ensemble_v5(1, 3, 1, 1, TensorProto.FLOAT, seed=40)
    for a in v5.attribute:
        if a.name == "nodes_truenodeids":
            a.ints[0] = -3
    BAD.append(("ensemble_negative_branch",
                model([v5], [("X", TensorProto.FLOAT, [2, 3])], ["Y"], ml_opset=5),
                "(none negative)"))
    BAD.append(("ml_opset_6", model([ml("Binarizer", ["X"], ["Y"])],
                                    [("X", TensorProto.FLOAT, [3])], ["Y"], ml_opset=6),
                "ai.onnx.ml opset 6 is newer than the newest supported (5)"))
    BAD.append(("label_counts", model([ml("LabelEncoder", ["X"], ["Y"], keys_int64s=[1, 2],
                                          values_strings=["a"])],
                                      [("X", TensorProto.INT64, [3])], ["Y"], ml_opset=2),
                "needs as many keys as values (2 and 1)"))
    BAD.append(("label_key_type", model([ml("LabelEncoder", ["X"], ["Y"], keys_int64s=[1, 2],
                                            values_strings=["a", "b"])],
                                        [("X", TensorProto.FLOAT, [3])], ["Y"], ml_opset=2),
                "the keys are int64, input X float32"))
    BAD.append(("ml_attr_of_later_opset", model([ml("LabelEncoder", ["X"], ["Y"],
                                                    keys_int64s=[1], values_int64s=[2])],
                                                [("X", TensorProto.INT64, [3])], ["Y"],
                                                ml_opset=1),
                "LabelEncoder-1 (the model's opset 1) has no attribute 'keys_int64s'"))


def main():
    out = sys.argv[1]
    regressors()
    ensembles()
    encoders()
    extractors()
    pipelines()
    bads()
    nodetest.write(out, GOOD, BAD)


main()
