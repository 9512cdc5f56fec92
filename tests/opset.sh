#!/bin/sh
# opset.sh - node tests for opsets 18 to 23 and for the modes of older ops
# that the ONNX test data misses (testdata/gen_opset_tests.py):
# every good model compiles, runs and matches the numpy outputs committed
# in its generator (collagec conformance, rtol 1e-4, atol 1e-5); every bad
# model is refused with exit status 1 and the expected message.
COLLAGEC=${COLLAGEC:-build/collagec}
T=${TEST_TMP:-/tmp}/opset
rm -rf "$T"
mkdir -p "$T"

if ! /usr/bin/python3 testdata/gen_opset_tests.py "$T" 2>"$T/gen.log"; then
	echo "FAIL opset/generate: $(tail -n 1 "$T/gen.log")"
	exit 1
fi
"$COLLAGEC" conformance -j2 --rtol 1e-4 --atol 1e-5 "$T/good" >"$T/conf.out" 2>&1
sed -n 's/^PASS \([^ ]*\).*/ok   opset\/\1/p; s/^FAIL \([^:]*\): /FAIL opset\/\1: /p' \
	"$T/conf.out" | sort
for d in "$T"/bad/*/; do
	n=$(basename "$d")
	"$COLLAGEC" compile --search none --target c "$d/model.onnx" -o "$T/$n.so" >/dev/null 2>"$T/$n.err"
	st=$?
	want=$(cat "$d/expect")
	if [ "$st" -ne 1 ]; then
		echo "FAIL opset/bad/$n: exit status $st, expected 1"
	elif ! grep -qF -- "$want" "$T/$n.err"; then
		echo "FAIL opset/bad/$n: stderr lacks \"$want\" (got: $(head -n 1 "$T/$n.err"))"
	else
		echo "ok   opset/bad/$n"
	fi
done
