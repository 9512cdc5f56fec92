#!/bin/sh
# nbits.sh - weight-only 4-bit models (issue 31, item 3) against ONNX
# Runtime's outputs, which testdata/gen_nbits_tests.py computed once into
# testdata/nbits (the tests need no onnxruntime):
# 1. every good model compiles, runs and matches (rtol 1e-4, atol 1e-4):
#    MatMulNBits built by hand (zero points packed, float or absent, bias,
#    blocks of 16 to 512, K past the last whole block, M = 1 to 64, a
#    batch, float16, 8 bits, a plain g_idx), DequantizeLinear(int4/uint4)
#    -> MatMul, and MatMulNBitsQuantizer's QOperator and QDQ forms of one
#    float MatMul; again at --cpu generic (the plain loops of rt_cnbits.h);
# 2. the 4-bit kernel runs them (matmulnbits.gemm in OUT.json; the 8-bit
#    model takes the op's own loops), and at 2 threads matches too (the
#    few-rows and the panel paths both split N between threads);
# 3. OUT.so keeps the weights in 4 bits: the quantized models' weights
#    bytes are B's 4 bits, the scales and the zero points (no float copy),
#    under a sixth of the float model's, the QDQ form the same as the
#    QOperator one;
# 4. every bad model is refused with exit status 1 and the expected message;
# 5. (full tier) where Debian's python3 (or COLLAGEC_ORT_PYTHON, such as a
#    venv's) has onnxruntime with its quantization tools, the generator runs
#    again and its models match their fresh outputs.
SUITE=nbits
. "$(dirname "$0")/nodetests.sh"
D=testdata/nbits

nt_conformance 1e-4 1e-4 "$D/good" | sort
"$COLLAGEC" conformance -j2 --cpu generic --rtol 1e-4 --atol 1e-4 "$D/good" \
	>"$T/generic.out" 2>&1
verdict generic "$(grep '^FAIL' "$T/generic.out" | head -n 1)"

# build NAME [ARGS...]: $T/NAME.so and .json of good model NAME, or a FAIL line
build() {
	n=$1
	shift
	"$COLLAGEC" compile -q --search none --target c "$@" "$D/good/$n/model.onnx" \
		-o "$T/$n.so" 2>"$T/$n.err" && return 0
	fail "$n" "compile: $(head -n 1 "$T/$n.err")"
	return 1
}

# weights NAME: the weights_bytes of $T/NAME.json
weights() {
	tr -d ' \t\n' <"$T/$1.json" | sed -n 's/.*"weights_bytes":\([0-9]*\).*/\1/p'
}

# kernel: the strategy each model's MatMulNBits took, and 2 threads
for n in m1_bs32_zp m5_bs16_two_groups m64_bs32_gemm dq_int4_bs32_ktail m4_bits8 \
	m1_k1024_threads m3_k512_threads; do
	build "$n" || continue
	want=matmulnbits.gemm
	[ "$n" = m4_bits8 ] && want=matmulnbits.loops
	if ! grep -q "\"$want\"" "$T/$n.json"; then
		bad "its MatMulNBits did not take $want"
	elif ! "$COLLAGEC" run "$T/$n.so" --threads 2 --check "$D/good/$n/test_data_set_0" \
		--rtol 1e-4 --atol 1e-4 >"$T/$n.run" 2>&1; then
		bad "2 threads: $(grep -v ': ok$' "$T/$n.run" | head -n 1)"
	fi
	verdict "kernel/$n"
done

# sizes: K = N = 256, blocks of 32: B 256 * 256 / 2 bytes, 8 blocks a
# column of float32 scales, 4 bytes of zero points a column
if build float_ref && build quantizer_qop && build quantizer_qdq; then
	f=$(weights float_ref) q=$(weights quantizer_qop) d=$(weights quantizer_qdq)
	want=$((256 * 256 / 2 + 256 * 8 * 4 + 256 * 4))
	echo "nbits sizes: float $f, 4-bit $q (QDQ $d) bytes of weights, $((q * 100 / f))% of float"
	if [ "$f" -lt $((256 * 256 * 4)) ]; then
		bad "the float model holds $f bytes of weights, less than its 256 x 256 floats"
	elif [ "$q" -lt "$want" ] || [ "$q" -gt $((want + 1024)) ]; then
		bad "the 4-bit model holds $q bytes of weights, expected $want (+ 1 KiB at most)"
	elif [ $((q * 6)) -gt "$f" ]; then
		bad "the 4-bit model's $q bytes of weights are more than a sixth of the float $f"
	elif [ "$d" -ne "$q" ]; then
		bad "the QDQ form holds $d bytes of weights, the QOperator form $q"
	fi
	verdict sizes
fi

cp -R "$D/bad" "$T/bad"
nt_bad

if tier full; then
	ort_py=${COLLAGEC_ORT_PYTHON:-$PY}
	if ! "$ort_py" -c 'import onnxruntime.quantization.matmul_nbits_quantizer' 2>/dev/null; then
		echo "ok   nbits/regenerate skipped: $ort_py has no onnxruntime quantization tools"
	elif ! "$ort_py" testdata/gen_nbits_tests.py "$T/gen" >"$T/gen.log" 2>&1; then
		echo "FAIL nbits/regenerate: $(tail -n 1 "$T/gen.log")"
	else
		"$COLLAGEC" conformance -j2 --rtol 1e-4 --atol 1e-4 "$T/gen/good" \
			>"$T/regen.out" 2>&1
		verdict regenerate "$(grep '^FAIL' "$T/regen.out" | head -n 1)"
	fi
fi

t_exit
