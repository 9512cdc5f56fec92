#!/bin/sh
# oom.sh - allocation-failure injection (issue 11 item 3), like SQLite's
# do_faultsim_test. build-oom (make oom-build: ASan, LeakSanitizer and
# -DCOLLAGEC_FAULT_INJECTION) fails the N-th allocation when
# COLLAGEC_FAIL_ALLOC=N (core/base/fault.c). For three compiles
#   mnist_cnn  --search none --target c       --no-cache
#   mlp        --search none --target blas,c  --no-cache
#   mlp        --target blas,c --cache WARM   (Collage search, SQLite cost cache)
# COLLAGEC_FAIL_ALLOC=0 gives the number of allocations K, then N walks
# 1..K and each run must end in one of two ways:
#  - one clean error: exit status 4, exactly one stderr line (the
#    "collagec: fatal: out of memory" line, or the one error a library's
#    own out-of-memory report turned into), no sanitizer or leak report,
#    none of OUT.so, OUT.json, OUT.h, the depfile, no temporary left in the
#    output directory or in $TMPDIR;
#  - success, where a library shrugged off its failed allocation (SQLite
#    retries some): exit 0, empty stderr, OUT.json identical to the
#    reference compile's, no temporary left.
# make test walks a fixed sample (every N up to OOM_HEAD, then OOM_STEPS
# evenly spaced ones up to K, K included); make test-oom (OOM_FULL=1) walks
# every N. Needs $TEST_TMP; OOM_BUILD names the build (build-oom). One line
# per compile: "ok oom/NAME (K allocations, R runs)" or "FAIL oom/NAME: why";
# OOM_CASES picks some of cnn-c, mlp-blas, mlp-cache.
SUITE=oom
. "$(dirname "$0")/lib.sh"
COLLAGEC=$ROOT/${OOM_BUILD:-build-oom}/collagec
# the sample: quick walks fewer N than full; all walks every N
OOM_HEAD=${OOM_HEAD:-50}
OOM_STEPS=${OOM_STEPS:-25}
tier full && OOM_HEAD=${OOM_HEAD_FULL:-150} OOM_STEPS=${OOM_STEPS_FULL:-60}
tier all && OOM_FULL=1
mkdir -p "$T/tmp" "$T/out" "$T/m" "$T/xdg"
# leaks are errors; an ASan report exits 99 so it is never taken for status 4
ASAN_OPTIONS=detect_leaks=1:exitcode=99:abort_on_error=0
XDG_CACHE_HOME=$T/xdg
export ASAN_OPTIONS XDG_CACHE_HOME

if [ ! -x "$COLLAGEC" ]; then
	echo "FAIL oom/build: no $COLLAGEC (make oom-build)"
	exit 1
fi
/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" mnist_cnn mlp >"$T/gen.log" 2>&1 || {
	echo "FAIL oom/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
O="$T/out/m"

# compile NAME: one run of the compile NAME stands for, stderr in $T/err
compile() {
	rm -rf "$T/out" "$T/tmp"
	mkdir -p "$T/out" "$T/tmp"
	case $1 in
	cnn-c) set -- "$T/m/mnist_cnn.onnx" --search none --target c --no-cache ;;
	mlp-blas) set -- "$T/m/mlp.onnx" --search none --target blas,c --no-cache ;;
	mlp-cache)
		# a run that failed leaves its write-ahead log, which SQLite
		# would replay into the next run's fresh copy
		rm -f "$T/cache.db-wal" "$T/cache.db-shm"
		cp "$T/warm.db" "$T/cache.db"
		set -- "$T/m/mlp.onnx" --target blas,c --search-budget 0 --cache "$T/cache.db" ;;
	esac
	TMPDIR="$T/tmp" "$COLLAGEC" compile "$@" -o "$O.so" --depfile "$O.d" -q \
		>"$T/stdout" 2>"$T/err"
}

# check N RC: "" when run N ended one of the two allowed ways, else why
check() {
	left=$(ls -A "$T/tmp")
	[ -z "$left" ] || { echo "left in TMPDIR: $left"; return; }
	if grep -q 'Sanitizer\|ERROR: \|BUG' "$T/err"; then
		echo "sanitizer: $(grep -m1 'Sanitizer\|ERROR: \|BUG' "$T/err")"
		return
	fi
	if [ "$2" -eq 0 ]; then
		[ ! -s "$T/err" ] || { echo "exit 0 with stderr: $(head -n 1 "$T/err")"; return; }
		cmp -s "$O.json" "$T/ref.json" || echo "exit 0 with a different OUT.json"
		return
	fi
	[ "$2" -eq 4 ] || { echo "exit $2: $(head -n 1 "$T/err")"; return; }
	lines=$(wc -l <"$T/err")
	[ "$lines" -eq 1 ] || { echo "$lines stderr lines: $(tr '\n' '|' <"$T/err")"; return; }
	grep -q '^collagec: ' "$T/err" || { echo "stray stderr: $(cat "$T/err")"; return; }
	left=$(ls -A "$T/out")
	[ -z "$left" ] || echo "exit 4 left in the output directory: $left"
}

# the sample of 1..K: every N up to OOM_HEAD, OOM_STEPS more evenly spaced
# (offset half a stride), and K itself
walk() {
	k=$1
	if [ -n "$OOM_FULL" ] || [ "$k" -le $((OOM_HEAD + OOM_STEPS)) ]; then
		seq 1 "$k"
		return
	fi
	seq 1 "$OOM_HEAD"
	stride=$(((k - OOM_HEAD) / OOM_STEPS))
	seq $((OOM_HEAD + stride / 2 + 1)) "$stride" "$k"
	echo "$k"
}

for name in ${OOM_CASES:-cnn-c mlp-blas mlp-cache}; do
	if [ "$name" = mlp-cache ]; then
		# every candidate and plan measured (no budget; the walk's compile
		# has the same options and compiler, so the rows are its own), so
		# no run of the walk measures anything: what a budget left at its
		# estimate on a busy machine would be timed, and timing is not
		# repeatable
		rm -f "$T/warm.db"
		"$COLLAGEC" compile "$T/m/mlp.onnx" --target blas,c --cache "$T/warm.db" \
			--search-budget 0 -o "$T/warm.so" -q >/dev/null 2>"$T/err" || {
			echo "FAIL oom/$name: cannot warm the cache: $(head -n 1 "$T/err")"
			t_failed=$((t_failed + 1))
			continue
		}
	fi
	COLLAGEC_FAIL_ALLOC=0 compile $name
	rc=$?
	k=$(sed -n 's/^collagec: allocations: //p' "$T/err")
	if [ $rc -ne 0 ] || [ -z "$k" ]; then
		echo "FAIL oom/$name: reference compile: exit $rc: $(head -n 1 "$T/err")"
		t_failed=$((t_failed + 1))
		continue
	fi
	cp "$O.json" "$T/ref.json"
	runs=0
	bad=
	for n in $(walk "$k"); do
		COLLAGEC_FAIL_ALLOC=$n compile $name
		why=$(check "$n" $?)
		runs=$((runs + 1))
		if [ -n "$why" ]; then
			bad="N=$n: $why"
			cp "$T/err" "$T/err.$n"
			break
		fi
	done
	if [ -n "$bad" ]; then
		echo "FAIL oom/$name: $bad"
		t_failed=$((t_failed + 1))
	else
		echo "ok   oom/$name ($k allocations, $runs runs)"
	fi
done
t_exit
