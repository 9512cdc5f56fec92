#!/bin/sh
# conformance.sh - the ONNX backend tests of Debian's libonnx-testdata. Every
# test listed in tests/conformance.pass must pass (one ok/FAIL line each);
# tests not listed are reported only in the totals. The full tier runs them
# all; the quick tier a fixed shard of CONF_SHARD of them (tests/lib.sh's
# t_shard), the same one for the same COLLAGEC_TEST_SEED.
SUITE=conformance
. "$(dirname "$0")/lib.sh"
D=/usr/share/libonnx-testdata/data
CONF_SHARD=${CONF_SHARD:-1/4}
set -- "$D/node" "$D/pytorch-converted" "$D/pytorch-operator" "$D/simple"
if ! tier full; then
	# the shard: a folder of links to the chosen test folders
	mkdir -p "$T/shard"
	for d in "$@"; do
		ls "$d"
	done | t_shard "$SEED" "$CONF_SHARD" >"$T/shard.list"
	for d in "$@"; do
		for t in "$d"/*/; do
			n=$(basename "$t")
			grep -qxF "$n" "$T/shard.list" && ln -s "${t%/}" "$T/shard/$n"
		done
	done
	set -- "$T/shard"
	echo "$SUITE: the quick tier's shard $CONF_SHARD, seed $SEED: $(ls "$T/shard" | wc -l) tests"
fi
"$COLLAGEC" conformance -j2 "$@" >"$T/conformance.out" 2>&1
awk -v list=tests/conformance.pass -v shard="$T/shard.list" '
	BEGIN {
		while ((getline l < list) > 0) if (l != "" && l !~ /^#/) want[l] = 1
		# in the quick tier, only the listed tests of the shard
		if ((getline l < shard) > 0) {
			do in_shard[l] = 1; while ((getline l < shard) > 0)
			for (t in want) if (!(t in in_shard)) delete want[t]
		}
	}
	/^PASS / { got[$2] = "ok" }
	/^FAIL / { n = $2; sub(/:$/, "", n); r = $0; sub(/^FAIL [^:]*: /, "", r); got[n] = r }
	/^conformance:/ { total = $0 }
	END {
		for (t in want) {
			if (got[t] == "ok") print "ok   conformance/" t
			else print "FAIL conformance/" t ": " (t in got ? got[t] : "not run")
		}
		print total
	}' "$T/conformance.out" | sort
