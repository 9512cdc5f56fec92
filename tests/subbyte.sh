#!/bin/sh
# subbyte.sh - the sub-byte element types (int4, uint4, int2, uint2,
# float4e2m1) and Quantize/DequantizeLinear of them and of the 8-bit
# floats, against onnx.reference's outputs, which testdata/gen_subbyte_tests.py
# computed once into testdata/subbyte (it needs onnx 1.23.2; the tests need
# no onnx):
# 1. every good model compiles, runs and matches, the quantized outputs
#    bit for bit (collagec conformance compares them exactly; rtol 1e-3,
#    atol 1e-7 for the float ones): Cast from float32 and float16 at each
#    type's edge values (ties, saturation, infinities, NaN, +-0, integers
#    out of range, which wrap), every value of each type back to float, a
#    round trip, CastLike, Transpose, Reshape, Flatten, Squeeze, Unsqueeze,
#    Identity and Shape across the packing, QuantizeLinear per axis,
#    blocked and with output_dtype, DequantizeLinear per axis and blocked
#    to float16, saturate 0 to the 8-bit floats; again at --cpu generic;
# 2. every bad model is refused with exit status 1 and the expected message.
# The C API's packed layout is runtime.sh's (testdata/runtime/subbyte.c).
SUITE=subbyte
. "$(dirname "$0")/nodetests.sh"
D=testdata/subbyte

nt_conformance 1e-3 1e-7 "$D/good" | sort
"$COLLAGEC" conformance -j2 --cpu generic --rtol 1e-3 --atol 1e-7 "$D/good" \
	>"$T/generic.out" 2>&1
verdict generic "$(grep '^FAIL' "$T/generic.out" | head -n 1)"

cp -R "$D/bad" "$T/bad"
nt_bad

t_exit
