#!/usr/bin/python3
"""Writes ONNX's own node tests of Attention at opset 23 into
testdata/attention/onnx (committed; tests/attention.sh runs them).

usage: copy_onnx_attention_tests.py OUTDIR

Needs onnx 1.23 or later (pip, in a venv; Debian's 1.12 has no Attention)
and its test-case dependencies (ml_dtypes). The wheel ships no node test
data, so the cases are exported from onnx.backend.test.case.node, as
`backend-test-tools generate-data` does, keeping only the Attention ones
whose model imports opset 23 (the later ones use attributes and inputs of
Attention-24 and -25) and not the _expanded function-body variants.
"""
import os
import sys

import onnx
import onnx.backend.test.case.node as node
from onnx import numpy_helper


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: copy_onnx_attention_tests.py OUTDIR")
    for c in node.collect_testcases("Attention"):
        opset = [o.version for o in c.model.opset_import if o.domain in ("", "ai.onnx")]
        if c.name.endswith("_expanded") or "_expanded_" in c.name or opset != [23]:
            continue
        d = os.path.join(sys.argv[1], c.name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(c.model.SerializeToString())
        ins, outs = c.data_sets[0]
        for kind, arrays, vis in (("input", ins, c.model.graph.input),
                                  ("output", outs, c.model.graph.output)):
            for j, a in enumerate(arrays):
                path = os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, j))
                with open(path, "wb") as f:
                    f.write(numpy_helper.from_array(a, vis[j].name).SerializeToString())


if __name__ == "__main__":
    main()
