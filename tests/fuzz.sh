#!/bin/sh
# fuzz.sh - make test's share of the fuzzing (make fuzz runs the fuzzers):
# every input in tests/fuzz/corpus/HARNESS/ (the inputs that once crashed a
# harness, kept after the fix, and a minimized corpus of what the fuzzers
# reached) is replayed through the harness built without libFuzzer
# ($BUILD/tests/replay_HARNESS; capi is linked here against the model it
# drives). The replay must not crash. Needs $COLLAGEC and $TEST_TMP. One
# line per harness: "ok fuzz/HARNESS (N inputs)" or "FAIL fuzz/HARNESS: why".
SUITE=fuzz
. "$(dirname "$0")/lib.sh"
B=$ROOT/${BUILD:-build}
/usr/bin/python3 "$ROOT/testdata/runtime/make_model.py" "$T/capi.onnx" >"$T/gen.log" 2>&1 &&
	"$COLLAGEC" compile "$T/capi.onnx" -o "$T/libcapi.a" --search none --target c -q \
		>"$T/c.log" 2>&1 &&
	cc -std=c11 -D_GNU_SOURCE -I"$ROOT/runtime" -o "$B/tests/replay_capi" \
		"$ROOT/tests/fuzz/replay.c" "$ROOT/tests/fuzz/capi.c" "$T/libcapi.a" -lm \
		>"$T/cc.log" 2>&1 || {
	echo "FAIL fuzz/capi: cannot build its replay: $(cat "$T/gen.log" "$T/c.log" "$T/cc.log" | head -n 1)"
	t_failed=$((t_failed + 1))
}
for c in "$ROOT"/tests/fuzz/corpus/*/; do
	h=$(basename "$c")
	r="$B/tests/replay_$h"
	[ -x "$r" ] || { [ $h = capi ] && continue; echo "FAIL fuzz/$h: no $r (make test builds it)"; t_failed=$((t_failed + 1)); continue; }
	n=$(ls "$c" | wc -l)
	# one process per batch of inputs; a crash names the batch's first file
	if ls "$c"* | xargs -n 64 "$r" >"$T/$h.log" 2>&1; then
		echo "ok   fuzz/$h ($n inputs)"
	else
		echo "FAIL fuzz/$h: replaying $c crashed: $(grep -m1 -E 'ERROR|Assertion|BUG|Segmentation|runtime error' "$T/$h.log")"
		t_failed=$((t_failed + 1))
	fi
done
t_exit
