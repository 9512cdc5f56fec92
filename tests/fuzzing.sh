#!/bin/sh
# fuzzing.sh - make test-all's short fuzz: every libFuzzer harness of
# tests/fuzz/ (make fuzz, tests/fuzz/run.sh) for FUZZ_SECONDS (default 30)
# each. One line per harness: "ok fuzzing/HARNESS (N executions)" or
# "FAIL fuzzing/HARNESS: exit S" (the input is in build-fuzz/crashes/).
SUITE=fuzzing
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1
FUZZ_SECONDS=${FUZZ_SECONDS:-30} sh tests/fuzz/run.sh >"$T/run.log" 2>&1
st=$?
# run.sh prints "HARNESS: N executions in Ss, cov: E edges, exit S" a harness
sed -n 's/^\([a-z_]*\): \([0-9]*\) executions in .*, exit \([0-9]*\)$/\1 \2 \3/p' "$T/run.log" \
	>"$T/harnesses"
while read -r h n s; do
	if [ "$s" -eq 0 ]; then
		ok "$h ($n executions)"
	else
		fail "$h" "exit $s: $(grep -m1 -E 'ERROR|SUMMARY|runtime error' "build-fuzz/$h.log")"
	fi
done <"$T/harnesses"
[ -s "$T/harnesses" ] || fail build "$(tail -n 1 "$T/run.log")"
[ $st -eq 0 ] || [ $t_failed -gt 0 ] || fail run "exit $st"
t_exit
