#!/bin/sh
# function.sh - model-local functions (testdata/gen_function_tests.py):
# every good model compiles, runs and matches the numpy outputs of its
# generator (rtol 1e-5, atol 1e-6); every bad model is refused with exit
# status 1 and the expected message; the kernels of an inlined function
# name the call in their spans.
SUITE=function
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_function_tests.py
nt_conformance 1e-5 1e-6 "$T/good" | sort
nt_bad

# spans: a kernel of Gelu2's body, called as g1, names g1, then the inner nodes
d=$T/good/called_twice
if ! "$COLLAGEC" compile -q --search none --target c "$d/model.onnx" -o "$T/span.so" \
	2>"$T/span.err"; then
	echo "FAIL function/span: compile: $(head -n 1 "$T/span.err")"
elif tr -d ' \t\n' <"$T/span.json" |
	grep -qF '[{"name":"g1","op":"Gelu2"},{"name":"Mul_1","op":"Mul"},'; then
	echo "ok   function/span"
else
	echo "FAIL function/span: OUT.json names no kernel after the call g1"
fi
