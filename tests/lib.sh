# lib.sh - what every suite of tests/ shares, sourced after the suite sets
# SUITE (its name: the prefix of its test names):
#
#	SUITE=fusion
#	. tests/lib.sh
#
# It sets ROOT (the checkout), COLLAGEC and C (the binary, an absolute
# path), PY (Debian's python3, which has onnx and numpy), TIER, SEED and T (the
# suite's own empty scratch directory, under $TEST_TMP, which a suite run
# alone gets fresh and removed at exit), and gives:
#
#	ok NAME			prints "ok   SUITE/NAME"
#	fail NAME [WHY]		prints "FAIL SUITE/NAME: WHY" and counts it
#	bad WHY; verdict NAME	for a check of several steps: bad records the
#				first reason it fails, verdict prints ok or FAIL
#	verdict NAME WHY	ok when WHY is empty, else FAIL
#	t_exit			exits 1 when anything failed, else 0
#	tier full		true in the tiers that run it (below)
#	t_list FULL QUICK	prints FULL in the full tiers, QUICK in quick
#	t_pick SEED K ITEM...	prints a fixed K of the items, one a line: the
#				same K for the same SEED, whatever else runs
#	t_shard SEED K/N	prints about K in N of the lines of stdin: a
#				shard that changes with nothing but SEED
#	t_peak_rss FILE CMD...	runs CMD (its exit status) and writes to FILE
#				the largest peak RSS, in KB, of CMD and the
#				processes it started (GNU time's %M)
#
# The tier comes from COLLAGEC_TEST_TIER (make test, make test-full, make
# test-all set it; a suite run alone is quick unless told otherwise):
#   quick  every suite, sampled where the full run is exhaustive
#   full   everything
#   all    full, and the slow walks (the whole OOM walk)
# One line a test: "ok   SUITE/NAME" or "FAIL SUITE/NAME: why"; tests/run.sh
# counts them.

ROOT=$(cd "$(dirname "$0")/.." && pwd)
COLLAGEC=${COLLAGEC:-$ROOT/build/collagec}
case $COLLAGEC in /*) ;; *) COLLAGEC=$(pwd)/$COLLAGEC ;; esac
C=$COLLAGEC
PY=/usr/bin/python3
TIER=${COLLAGEC_TEST_TIER:-quick}
# the seed of every sample the quick tier takes (t_shard, t_pick)
SEED=${COLLAGEC_TEST_SEED:-1}
case $TIER in
quick | full | all) ;;
*)
	echo "FAIL $SUITE/tier: COLLAGEC_TEST_TIER is '$TIER', not quick, full or all"
	exit 1
	;;
esac
if [ -z "$TEST_TMP" ]; then
	TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/collagec-$SUITE-XXXXXX") || exit 1
	trap 'rm -rf "$TEST_TMP"' EXIT INT TERM
fi
T=$TEST_TMP/$SUITE
rm -rf "$T"
mkdir -p "$T"
t_failed=0
why=

ok() {
	echo "ok   $SUITE/$1"
}
fail() {
	echo "FAIL $SUITE/$1${2:+: $2}"
	t_failed=$((t_failed + 1))
}
bad() {
	[ -n "$why" ] || why=$1
}
verdict() {
	[ $# -ge 2 ] && why=$2
	if [ -z "$why" ]; then
		ok "$1"
	else
		fail "$1" "$why"
	fi
	why=
}
t_exit() {
	[ "$t_failed" -eq 0 ] && exit 0
	exit 1
}

# tier T: true when the current tier runs what tier T runs
tier() {
	case $1:$TIER in
	quick:* | full:full | full:all | all:all) return 0 ;;
	esac
	return 1
}

t_list() {
	if tier full; then echo "$1"; else echo "$2"; fi
}

# the hash t_shard and t_pick share: of "SEED:LINE" for each line of
# stdin, "HASH LINE" (djb2 modulo 2^31-1, exact in any awk's doubles)
t_hashes() {
	awk -v seed="$1" '
		BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
		{
			s = seed ":" $0
			x = 5381
			for (i = 1; i <= length(s); i++)
				x = (x * 33 + ord[substr(s, i, 1)]) % 2147483647
			print x, $0
		}'
}

t_shard() {
	_k=${2%/*} _n=${2#*/}
	t_hashes "$1" | awk -v k="$_k" -v n="$_n" '$1 % n < k { sub(/^[0-9]+ /, ""); print }'
}

# getrusage's ru_maxrss of the children, which the kernel keeps as the
# largest of any descendant waited for (a forked child counts the pages it
# shares with its parent)
t_peak_rss() {
	_f=$1
	shift
	"$PY" -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$_f" "$@"
}

# the K items with the smallest hashes, in the order given
t_pick() {
	_seed=$1 _k=$2
	shift 2
	for _i in "$@"; do echo "$_i"; done | t_hashes "$_seed" | sort -n | head -n "$_k" |
		cut -d' ' -f2- >"$T/.pick"
	for _i in "$@"; do
		grep -qxF -- "$_i" "$T/.pick" && echo "$_i"
	done
	rm -f "$T/.pick"
}

# t_weights_once NAME OUT.so MODEL.onnx: each weight once in OUT.so (issue
# 32: however many strategy variants read it), so it is no larger than the
# ONNX file and 5% (kernels' code, tables and alignment)
t_weights_once() {
	_s=$(wc -c <"$2" 2>/dev/null || echo 0)
	verdict "$1" "$(awk -v s="$_s" -v o="$(wc -c <"$3")" 'BEGIN {
		if (!(s > 0) || s > 1.05 * o)
			printf "OUT.so %d bytes, the ONNX file %d (%+.1f%%)", s, o, 100 * (s - o) / o }')"
}
