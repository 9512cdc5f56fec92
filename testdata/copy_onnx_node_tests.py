#!/usr/bin/python3
"""Writes ONNX's own node tests whose model imports a default-domain opset
of at least MIN (24: the ones onnx 1.23 added after opset 23) into OUTDIR,
one folder per case in the layout of onnx/backend/test/data/node
(model.onnx, test_data_set_N/input_K.pb, output_K.pb), committed as
testdata/onnx24 (tests/opset24.sh runs them). testdata/onnx_rt_shapes holds
26 cases of `all` (CenterCropPad, Col2Im, DFT, AffineGrid and antialiased
Resize with shape inputs fed at run time; tests/dynamic.sh runs them).

usage: copy_onnx_node_tests.py OUTDIR [MIN [all]]

With "all" (MIN is then ignored) it writes every one of onnx's node tests:
the _expanded variants and the models of no default-domain opset
(ai.onnx.ml, ai.onnx.preview.training) too, 1,884 with onnx 1.23.2 (1,389
without them at MIN 1), as issue 33 counts them.

Needs onnx 1.23.2 (pip, in a venv; Debian's 1.12 stops at opset 17) and
its test-case dependencies (ml_dtypes). The wheel ships no node test data,
so the cases are exported from onnx.backend.test.case.node, as
`backend-test-tools generate-data` (onnx/backend/test/cmd_tools.py)
does, leaving out the _expanded
function-body variants (the same op through its function, which the
importer expands itself). Sequence and optional values are written as
SequenceProto and OptionalProto, as that tool writes them.
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnx.backend.test.case.node as node
from onnx import numpy_helper


def proto_of(value, vi):
    """The .pb message of one input or output value vi."""
    kind = vi.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, vi.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, vi.name)
    if isinstance(value, onnx.TensorProto):	# the sub-byte and float8 cases
        return value
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return numpy_helper.from_array(np.asarray(value), vi.name)
    raise ValueError("%s: cannot write a %s" % (vi.name, type(value).__name__))


def write_case(outdir, c):
    d = os.path.join(outdir, c.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(c.model.SerializeToString())
    for i, (ins, outs) in enumerate(c.data_sets):
        s = os.path.join(d, "test_data_set_%d" % i)
        os.makedirs(s)
        for kind, values, vis in (("input", ins, c.model.graph.input),
                                  ("output", outs, c.model.graph.output)):
            for j, v in enumerate(values):
                with open(os.path.join(s, "%s_%d.pb" % (kind, j)), "wb") as f:
                    f.write(proto_of(v, vis[j]).SerializeToString())


def main():
    if len(sys.argv) not in (2, 3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "all"):
        sys.exit("usage: copy_onnx_node_tests.py OUTDIR [MIN [all]]")
    lo = int(sys.argv[2]) if len(sys.argv) >= 3 else 24
    every = len(sys.argv) == 4
    warnings.simplefilter("ignore")	# the cases' own overflow warnings
    n = 0
    for c in node.collect_testcases():
        opset = [o.version for o in c.model.opset_import if o.domain in ("", "ai.onnx")]
        if c.kind != "node":
            continue
        if not every and (not opset or opset[0] < lo or c.name.endswith("_expanded") or
                          "_expanded_" in c.name):
            continue
        write_case(sys.argv[1], c)
        n += 1
    print("copy_onnx_node_tests.py: %d cases (onnx %s, %s)"
          % (n, onnx.__version__, "all" if every else "opset >= %d" % lo))


if __name__ == "__main__":
    main()
