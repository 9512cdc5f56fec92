#!/bin/sh
# killsafe.sh - collagec compile stopped at random moments (issue 11 item 4).
# From outputs of one compile (model A) in place, a compile of model B to the
# same OUT.so, OUT.json, OUT.h and depfile is killed with SIGKILL or SIGINT
# (to the process alone, or to its process group as Ctrl-C in make does)
# after a random delay within its usual run time. After each kill:
#  - every output is absent or byte-identical to A's or B's (never partial);
#  - an OUT.so from B has B's OUT.json, OUT.h and depfile beside it, and one
#    from A has A's (never a new OUT.so with stale metadata);
#  - after SIGINT no temporary is left (collagec-* in $TMPDIR, OUT*.tmp.*),
#    and the exit status says the signal;
# then a Collage search writing a cost cache is killed in the middle, and
# the cache still opens and serves a full compile. Needs $COLLAGEC and
# $TEST_TMP; KILLS (default 24) sets the number of kills. One line per
# check: "ok killsafe/NAME" or "FAIL killsafe/NAME: why".
SUITE=killsafe
. "$(dirname "$0")/lib.sh"
# quick: 8 kills; full: 24
KILLS=${KILLS:-8}
tier full && KILLS=${KILLS_FULL:-24}
mkdir -p "$T/tmp" "$T/out" "$T/A" "$T/B" "$T/m"

/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" mnist_cnn mlp >"$T/gen.log" 2>&1 || {
	echo "FAIL killsafe/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
O="$T/out/m"
# --no-cache: every compile does the same work, so a delay lands anywhere in it
compile() {
	TMPDIR="$T/tmp" exec "$COLLAGEC" compile "$1" -o "$O.so" --search none --target c \
		--no-cache --prefix km --depfile "$O.d" -q
}
save() {
	for e in so json h d; do cp "$O.$e" "$T/$1/m.$e" || return 1; done
}
restore() {
	for e in so json h d; do cp "$T/$1/m.$e" "$O.$e"; done
}
t0=$(date +%s%N)
(compile "$T/m/mlp.onnx") >"$T/b.log" 2>&1 && save B || {
	echo "FAIL killsafe/compile-b: $(head -n 1 "$T/b.log")"
	exit 1
}
t1=$(date +%s%N)
(compile "$T/m/mnist_cnn.onnx") >"$T/a.log" 2>&1 && save A || {
	echo "FAIL killsafe/compile-a: $(head -n 1 "$T/a.log")"
	exit 1
}
if cmp -s "$T/A/m.so" "$T/B/m.so" || cmp -s "$T/A/m.json" "$T/B/m.json"; then
	echo "FAIL killsafe/setup: the two compiles' outputs do not differ"
	exit 1
fi
# the delays: 0 .. 1.1 x the compile's time, from a fixed seed
ms=$(( (t1 - t0) / 1000000 ))
delays=$(awk -v n="$KILLS" -v ms="$ms" 'BEGIN { srand(11); for (i = 0; i < n; i++)
	printf "%.3f\n", rand() * ms * 1.1 / 1000 }')

# state of one output: absent, A, B, AB (A's and B's are the same) or "other"
state() {
	a=; b=
	cmp -s "$O.$1" "$T/A/m.$1" && a=A
	cmp -s "$O.$1" "$T/B/m.$1" && b=B
	if [ ! -e "$O.$1" ]; then echo absent
	elif [ -n "$a$b" ]; then echo "$a$b"
	else echo other
	fi
}
# whether output state $2 belongs with an OUT.so from $1
with() { [ "$2" = "$1" ] || [ "$2" = AB ]; }

i=0
int_ok=0 kill_ok=0 group=0
for d in $delays; do
	i=$((i + 1))
	restore A
	rm -rf "$T/tmp"/* "$T/out"/*.tmp.* 2>/dev/null
	case $((i % 4)) in
	0) sig=KILL how=process ;;
	1) sig=INT how=process ;;
	2) sig=INT how=group ;;
	3) sig=TERM how=group ;;
	esac
	# a non-interactive sh starts background jobs with SIGINT ignored
	TMPDIR="$T/tmp" env --default-signal=INT setsid "$COLLAGEC" compile "$T/m/mlp.onnx" -o "$O.so" --search none --target c \
		--no-cache --prefix km --depfile "$O.d" -q >"$T/k.log" 2>&1 &
	pid=$!
	sleep "$d"
	if [ $how = group ]; then kill -s $sig -- "-$pid" 2>/dev/null
	else kill -s $sig "$pid" 2>/dev/null; fi
	{ wait "$pid"; } 2>/dev/null
	st=$?
	so=$(state so) json=$(state json) h=$(state h) dep=$(state d)
	what="kill $i (SIG$sig to the $how after ${d}s, exit $st): so=$so json=$json h=$h d=$dep"
	case "$so $json $h $dep" in
	*other*) fail "kill-$i" "a partial output: $what"; continue ;;
	esac
	if [ $so != absent ] && ! { with $so $json && with $so $h && with $so $dep; }; then
		fail "kill-$i" "stale outputs: $what"
		continue
	fi
	if [ $sig != KILL ] && [ $st -ne 0 ]; then
		# stopped by the signal (not finished first): nothing of its own left
		left=$(ls "$T/tmp" | grep '^collagec-'; ls "$T/out" | grep '\.tmp\.')
		[ -z "$left" ] || { fail "kill-$i" "temporaries left: $left ($what)"; continue; }
		[ $st -gt 128 ] || { fail "kill-$i" "exit status $st does not say the signal ($what)"; continue; }
		int_ok=$((int_ok + 1))
	fi
	[ $sig = KILL ] && [ $st -ne 0 ] && kill_ok=$((kill_ok + 1))
done
[ $t_failed -eq 0 ] && ok "outputs-consistent ($i kills: $kill_ok by SIGKILL, $int_ok by SIGINT/SIGTERM mid-compile)"
[ $int_ok -gt 0 ] || fail signals-landed "no SIGINT/SIGTERM landed before the compile ended"

# a cost cache written by a search that is killed mid-measurement
C="$T/cache.sqlite"
for d in 1.5 3 4.5; do
	setsid "$COLLAGEC" compile "$T/m/mnist_cnn.onnx" -o "$T/c.so" --target c,blas \
		--cache "$C" -q >"$T/c.log" 2>&1 &
	pid=$!
	sleep $d
	kill -KILL "$pid" 2>/dev/null
	{ wait "$pid"; } 2>/dev/null
done
if "$COLLAGEC" cache stats --cache "$C" >"$T/stats.log" 2>&1 &&
	TMPDIR="$T/tmp" "$COLLAGEC" compile "$T/m/mnist_cnn.onnx" -o "$T/c.so" --target c,blas \
		--cache "$C" -q >"$T/c.log" 2>&1 && [ -s "$T/c.so" ]; then
	ok cache-survives-kill
else
	fail cache-survives-kill "$(head -n 1 "$T/stats.log") $(head -n 1 "$T/c.log")"
fi
t_exit
