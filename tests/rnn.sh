#!/bin/sh
# rnn.sh - node tests of RNN, GRU and LSTM (testdata/gen_rnn_tests.py) for
# what libonnx-testdata lacks: every good model compiles, runs and matches
# the numpy outputs of its generator (collagec conformance, rtol 1e-4, atol
# 1e-5); every bad model is refused with exit status 1 and the expected message.
COLLAGEC=${COLLAGEC:-build/collagec}
T=${TEST_TMP:-/tmp}/rnn
rm -rf "$T"
mkdir -p "$T"

if ! /usr/bin/python3 testdata/gen_rnn_tests.py "$T" 2>"$T/gen.log"; then
	echo "FAIL rnn/generate: $(tail -n 1 "$T/gen.log")"
	exit 1
fi
"$COLLAGEC" conformance -j2 --rtol 1e-4 --atol 1e-5 "$T/good" >"$T/conf.out" 2>&1
sed -n 's/^PASS \([^ ]*\).*/ok   rnn\/\1/p; s/^FAIL \([^:]*\): /FAIL rnn\/\1: /p' \
	"$T/conf.out" | sort
for d in "$T"/bad/*/; do
	n=$(basename "$d")
	"$COLLAGEC" compile --search none --target c "$d/model.onnx" -o "$T/$n.so" >/dev/null 2>"$T/$n.err"
	st=$?
	want=$(cat "$d/expect")
	if [ "$st" -ne 1 ]; then
		echo "FAIL rnn/bad/$n: exit status $st, expected 1"
	elif ! grep -qF -- "$want" "$T/$n.err"; then
		echo "FAIL rnn/bad/$n: stderr lacks \"$want\" (got: $(head -n 1 "$T/$n.err"))"
	else
		echo "ok   rnn/bad/$n"
	fi
done
