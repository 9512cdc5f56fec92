#!/usr/bin/env python3
"""gen_big.py OUTDIR [MIB] - a model whose weights are more than protobuf's
2 GiB can hold, in ONNX external data, as exporters write such models
(tests/weights.sh, issue 33).

y = relu(relu(x @ W1) @ W2) @ W3, x of shape [1, n], W1 and W2 [n, n], W3
[n, 16]; n is chosen so that the weights take about MIB mebibytes (default
2112: 2.06 GiB). Writes OUTDIR/big.onnx, its weights in OUTDIR/big.data
(written a block at a time, never held whole), the input OUTDIR/x.npy and
the expected output OUTDIR/check/y.npy (computed in float64 from the
weights mapped back, then rounded). The weights are a fixed pseudo-random
pattern in [-1, 1) / sqrt(n), so every layer keeps the scale of its input.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

BLOCK_ROWS = 256


def weight_rows(seed, rows, cols, scale):
    """The rows [r0, r0 + rows) of a weight: its own stream per seed."""
    rng = np.random.default_rng(seed)
    for r0 in range(0, rows, BLOCK_ROWS):
        k = min(BLOCK_ROWS, rows - r0)
        yield (rng.random((k, cols), dtype=np.float32) * 2 - 1) * scale


def external(name, dims, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[0])
    out = sys.argv[1]
    mib = float(sys.argv[2]) if len(sys.argv) == 3 else 2112
    # 2 n^2 + 16 n floats of weights
    n = int((mib * 2**20 / 4 / 2) ** 0.5) // 64 * 64
    shapes = [("W1", (n, n)), ("W2", (n, n)), ("W3", (n, 16))]
    os.makedirs(os.path.join(out, "check"), exist_ok=True)
    inits, offset = [], 0
    with open(os.path.join(out, "big.data"), "wb") as f:
        for seed, (name, (r, c)) in enumerate(shapes):
            for block in weight_rows(seed, r, c, 1 / np.sqrt(r)):
                f.write(block.tobytes())
            length = r * c * 4
            inits.append(external(name, [r, c], "big.data", offset, length))
            offset += length
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h1"], name="mm1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="mm2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
        helper.make_node("MatMul", ["r2", "W3"], ["y"], name="mm3"),
    ]
    graph = helper.make_graph(nodes, "big", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="collagec gen_big.py")
    model.ir_version = 8
    with open(os.path.join(out, "big.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    xv = (np.random.default_rng(99).random((1, n), dtype=np.float32) * 2 - 1)
    np.save(os.path.join(out, "x.npy"), xv)
    data = np.memmap(os.path.join(out, "big.data"), dtype=np.float32, mode="r")
    h, at = xv.astype(np.float64), 0
    for i, (name, (r, c)) in enumerate(shapes):
        w = data[at:at + r * c].reshape(r, c)
        at += r * c
        # a block of rows at a time: the weight is never held whole in float64
        h = sum(h[:, k:k + 4096] @ w[k:k + 4096].astype(np.float64) for k in range(0, r, 4096))
        if i < 2:
            h = np.maximum(h, 0)
    np.save(os.path.join(out, "check", "y.npy"), h.astype(np.float32))
    print("n %d, weights %.2f GiB" % (n, offset / 2**30))


if __name__ == "__main__":
    main()
