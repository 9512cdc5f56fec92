#!/bin/sh
# quant.sh - quantization and 16-bit floats.
# 1. Node tests of testdata/gen_quant_tests.py (what libonnx-testdata
#    lacks: blocked and 16-bit quantization, ties, saturation, float16 and
#    bfloat16 Casts at ties/subnormals/overflow/NaN): exact matches (rtol 0,
#    atol 0), "near" ones within an ulp of float16 (rtol 1e-3); a Cast to
#    float16 and back must round inside a fused kernel (--search greedy);
#    bad models are refused with exit status 1 and the expected message.
# 2. Models quantized by ONNX Runtime's quantizer (testdata/quant, made by
#    testdata/gen_quant_models.py with ONNX Runtime's outputs): within one
#    quantization step of the output (testdata/quant/NAME/atol; the
#    generator's docstring says why).
COLLAGEC=${COLLAGEC:-build/collagec}
T=${TEST_TMP:-/tmp}/quant
rm -rf "$T"
mkdir -p "$T"

if ! /usr/bin/python3 testdata/gen_quant_tests.py "$T" 2>"$T/gen.log"; then
	echo "FAIL quant/generate: $(tail -n 1 "$T/gen.log")"
	exit 1
fi
conf() {	# conformance with tolerances $1 $2 over dirs $3...; prefix quant/
	rtol=$1 atol=$2
	shift 2
	"$COLLAGEC" conformance -j2 --rtol "$rtol" --atol "$atol" "$@" >"$T/conf.out" 2>&1
	sed -n 's/^PASS \([^ ]*\).*/ok   quant\/\1/p; s/^FAIL \([^:]*\): /FAIL quant\/\1: /p' \
		"$T/conf.out"
}
{
	conf 0 0 "$T/good"
	conf 1e-3 0 "$T/near"
} | sort

f="$T/good/cast_float16_roundtrip_fused"
if ! "$COLLAGEC" compile --search greedy --target c --no-cache -q "$f/model.onnx" \
	-o "$T/fused.so" 2>"$T/fused.err"; then
	echo "FAIL quant/fused: compile: $(head -n 1 "$T/fused.err")"
elif ! grep -q '"k0_0_fused"' "$T/fused.json"; then
	echo "FAIL quant/fused: the Casts were not fused into one kernel"
elif ! "$COLLAGEC" run "$T/fused.so" --check "$f/test_data_set_0" --rtol 0 --atol 0 \
	>/dev/null 2>"$T/fused.err"; then
	echo "FAIL quant/fused: $(head -n 1 "$T/fused.err")"
else
	echo "ok   quant/fused"
fi

for d in "$T"/bad/*/; do
	n=$(basename "$d")
	"$COLLAGEC" compile --search none --target c "$d/model.onnx" -o "$T/$n.so" >/dev/null 2>"$T/$n.err"
	st=$?
	want=$(cat "$d/expect")
	if [ "$st" -ne 1 ]; then
		echo "FAIL quant/bad/$n: exit status $st, expected 1"
	elif ! grep -qF -- "$want" "$T/$n.err"; then
		echo "FAIL quant/bad/$n: stderr lacks \"$want\" (got: $(head -n 1 "$T/$n.err"))"
	elif [ -e "$T/$n.so" ]; then
		echo "FAIL quant/bad/$n: left $n.so behind"
	else
		echo "ok   quant/bad/$n"
	fi
done

for d in testdata/quant/*/; do
	conf 0 "$(cat "$d/atol")" "${d%/}"
done
