#!/usr/bin/python3
"""Writes dense_blocks.onnx: a small DenseNet-style model for tests/sharing.sh.

usage: gen_dense_blocks.py OUTDIR

Five dense layers, each BatchNormalization -> Relu -> Conv 1x1 (to 8
channels) -> Concat with its input, so every layer repeats the one before at
8 more channels (8, 16, ..., 48), then GlobalAveragePool. Input x [N,8,16,16]
with a symbolic batch N. Fixed-seed weights; needs Debian's python3-onnx and
python3-numpy only.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def model():
    rng = np.random.default_rng(7)
    nodes, inits = [], []

    def const(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), name))
        return name

    cur, c = "x", 8
    for i in range(5):
        p = "l%d_" % i
        nodes.append(helper.make_node(
            "BatchNormalization",
            [cur, const(p + "scale", rng.uniform(0.5, 1.5, c)),
             const(p + "bias", rng.uniform(-0.5, 0.5, c)),
             const(p + "mean", rng.uniform(-0.2, 0.2, c)),
             const(p + "var", rng.uniform(0.5, 1.5, c))],
            [p + "bn"], name=p + "bn", epsilon=1e-5))
        nodes.append(helper.make_node("Relu", [p + "bn"], [p + "relu"], name=p + "relu"))
        nodes.append(helper.make_node(
            "Conv", [p + "relu", const(p + "w", rng.normal(0, 0.3, (8, c, 1, 1)))],
            [p + "conv"], name=p + "conv"))
        nodes.append(helper.make_node("Concat", [cur, p + "conv"], [p + "cat"],
                                      name=p + "cat", axis=1))
        cur, c = p + "cat", c + 8
    nodes.append(helper.make_node("GlobalAveragePool", [cur], ["y"], name="gap"))
    g = helper.make_graph(
        nodes, "dense_blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", c, 1, 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="gen_dense_blocks")
    m.ir_version = 7
    return m


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    path = os.path.join(sys.argv[1], "dense_blocks.onnx")
    save(model(), path + ".tmp")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
