#!/bin/sh
# run.sh [SUITE...] - the test suite of one tier (make test, make test-full,
# make test-all; tests/lib.sh says what the tiers are), or the suites named.
# Every suite prints one line per test, "ok   NAME" or "FAIL NAME: why"; this
# script runs them,
# JOBS at a time (2 unless told: the longest first, each taking the next
# suite when it ends), prints each suite's lines and wall time when it ends,
# a table of the times, and last "N passed, N failed". It exits non-zero
# when anything failed. The times also go to $BUILD/test-times-TIER.txt
# ("SECONDS SUITE TESTS" a line), from which the tiers were set.
BUILD=${BUILD:-build}
export BUILD
COLLAGEC=$(pwd)/$BUILD/collagec
export COLLAGEC
COLLAGEC_TEST_TIER=${COLLAGEC_TEST_TIER:-quick}
export COLLAGEC_TEST_TIER
JOBS=${JOBS:-2}
out=$(mktemp -d "${TMPDIR:-/tmp}/collagec-test-XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM
export TEST_TMP="$out"
# compiles without --cache use the default caches: never the user's own
XDG_CACHE_HOME="$out/xdg-cache"
export XDG_CACHE_HOME

# The suites, longest first (from the quick tier's times on a 2-core
# host). The unit tests run as one suite; ones that only make sense in
# the higher tiers are added below.
SUITES="conformance backends collage strategies models cli oom fastmath killsafe cuda
sharing examples determinism opset opset24 snapshots dynamic control fusion sequence
rnn quant random attention decode function contrib imagedecoder ml nbits subbyte runtime weights spans explorer fuzz
unit"
case $COLLAGEC_TEST_TIER in
all) SUITES="valgrind fuzzing $SUITES" ;;
esac
# suites named on the command line run instead (sh tests/run.sh dynamic control),
# and the times table is not saved
only=
if [ $# -gt 0 ]; then
	for s in "$@"; do
		if [ "$s" != unit ] && [ ! -f "tests/$s.sh" ]; then
			echo "run.sh: no suite '$s' (tests/$s.sh)" >&2
			exit 2
		fi
	done
	SUITES="$*" only=1
fi

# run_suite NAME: runs it, its lines in $out/NAME.log, its time in $out/NAME.time
run_suite() {
	name=$1
	t0=$(date +%s)
	case $name in
	unit)
		for t in "$BUILD"/tests/*_test; do
			[ -x "$t" ] || continue
			"$t" >"$out/unit.one" 2>&1
			rc=$?
			cat "$out/unit.one"
			[ $rc -eq 0 ] || grep -q '^FAIL' "$out/unit.one" ||
				echo "FAIL unit/$(basename "$t"): exited with status $rc"
		done >"$out/$name.log"
		rc=0
		;;
	*)
		sh "tests/$name.sh" >"$out/$name.log" 2>&1
		rc=$?
		;;
	esac
	# a suite that died without reporting its own failure still fails
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' "$out/$name.log"; then
		echo "FAIL $name: exited with status $rc" >>"$out/$name.log"
	fi
	echo $(($(date +%s) - t0)) >"$out/$name.time"
}

# take: the next suite of the queue, or nothing
take() {
	{
		flock -x 9
		head -n 1 "$out/queue"
		sed -i 1d "$out/queue"
	} 9>"$out/queue.lock"
}

# lane: runs suites until the queue is empty, printing each when it ends
lane() {
	while s=$(take) && [ -n "$s" ]; do
		run_suite "$s"
		{
			flock -x 9
			echo "== $s ($(cat "$out/$s.time") s)"
			cat "$out/$s.log"
		} 9>"$out/print.lock"
	done
}

t0=$(date +%s)
for s in $SUITES; do echo "$s"; done >"$out/queue"
i=0
while [ $i -lt "$JOBS" ]; do
	lane &
	i=$((i + 1))
done
wait

echo "== times ($COLLAGEC_TEST_TIER tier, $JOBS at a time, $(($(date +%s) - t0)) s wall)"
for s in $SUITES; do
	[ -f "$out/$s.time" ] || continue
	echo "$(cat "$out/$s.time") $s $(grep -c '^ok \|^FAIL' "$out/$s.log")"
done | sort -rn >"$out/times"
awk '{ printf "%6d s  %-12s %5d tests\n", $1, $2, $3 }' "$out/times"
[ -n "$only" ] || cp "$out/times" "$BUILD/test-times-$COLLAGEC_TEST_TIER.txt" 2>/dev/null
passed=$(cat "$out"/*.log | grep -c '^ok ')
failed=$(cat "$out"/*.log | grep -c '^FAIL')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
