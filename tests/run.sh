#!/bin/sh
# run.sh - the whole test suite (make test). Every suite prints one line per
# test, "ok   NAME" or "FAIL NAME: why"; this script runs them all and ends
# with "N passed, N failed". It exits non-zero when anything failed.
BUILD=${BUILD:-build}
export BUILD
COLLAGEC=$(pwd)/$BUILD/collagec
export COLLAGEC
out=$(mktemp -d "${TMPDIR:-/tmp}/collagec-test-XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM
export TEST_TMP="$out"
# compiles without --cache use the default caches: never the user's own
XDG_CACHE_HOME="$out/xdg-cache"
export XDG_CACHE_HOME

run_suite() {
	name=$1
	shift
	echo "== $name"
	"$@" >"$out/$name.log" 2>&1
	rc=$?
	cat "$out/$name.log"
	# a suite that died without reporting its own failure still fails
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' "$out/$name.log"; then
		echo "FAIL $name: exited with status $rc"
		echo "FAIL $name: exited with status $rc" >>"$out/$name.log"
	fi
}

for t in "$BUILD"/tests/*_test; do
	[ -x "$t" ] || continue
	run_suite "unit-$(basename "$t")" "$t"
done
for s in tests/cli.sh tests/killsafe.sh tests/oom.sh tests/fuzz.sh tests/spans.sh \
	tests/snapshots.sh tests/explorer.sh \
	tests/determinism.sh tests/sharing.sh \
	tests/runtime.sh tests/examples.sh tests/fastmath.sh tests/opset.sh tests/random.sh \
	tests/rnn.sh tests/function.sh tests/control.sh tests/sequence.sh tests/dynamic.sh tests/quant.sh tests/models.sh tests/strategies.sh \
	tests/fusion.sh \
	tests/backends.sh tests/collage.sh tests/conformance.sh; do
	[ -f "$s" ] && run_suite "$(basename "$s" .sh)" sh "$s"
done

passed=$(cat "$out"/*.log | grep -c '^ok ')
failed=$(cat "$out"/*.log | grep -c '^FAIL')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
