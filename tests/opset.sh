#!/bin/sh
# opset.sh - node tests for opsets 18 to 23 and for the modes of older ops
# that the ONNX test data misses (testdata/gen_opset_tests.py):
# every good model compiles, runs and matches the numpy outputs committed
# in its generator (collagec conformance, rtol 1e-4, atol 1e-5); every bad
# model is refused with exit status 1 and the expected message.
SUITE=opset
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_opset_tests.py
nt_conformance 1e-4 1e-5 "$T/good" | sort
nt_bad
