#!/bin/sh
# opset24.sh - ONNX 1.23.2's own node tests of opsets 24 to 28
# (testdata/onnx24, written by testdata/copy_onnx_node_tests.py from
# onnx.backend.test.case.node: every case whose model imports opset 24 or
# later, without the _expanded variants).
#
# Every case passes (collagec conformance, rtol 1e-3, atol 1e-7; Attention's
# float16 and bfloat16 ones within rtol 1e-2, as tests/attention.sh says
# why) except those in tests/opset24.refused, each of which must be refused
# at compile time with exactly the message listed there: one that starts
# passing, or fails otherwise, is a failure too, so that the list stays
# the truth. The quick tier runs every refused case (they stop at import)
# and a fixed third of the others.
SUITE=opset24
. "$(dirname "$0")/lib.sh"
O=$ROOT/testdata/onnx24
LIST=$ROOT/tests/opset24.refused

grep -v '^#' "$LIST" | cut -f1 | grep . >"$T/refused.names"
ls "$O" >"$T/all"
if [ "$(grep -cxFf "$T/all" "$T/refused.names")" -ne "$(wc -l <"$T/refused.names")" ]; then
	fail list "opset24.refused names a case testdata/onnx24 lacks: $(grep -vxFf "$T/all" \
		"$T/refused.names" | head -n 1)"
fi
grep -vxFf "$T/refused.names" "$T/all" >"$T/pass.names"
if ! tier full; then
	t_shard "$SEED" 1/3 <"$T/pass.names" >"$T/pass.shard"
	mv "$T/pass.shard" "$T/pass.names"
fi
half='^test_attention_.*_\(fp16\|bf16\)$'
grep -v "$half" "$T/pass.names" | cat - "$T/refused.names" | sed "s|^|$O/|" >"$T/run.32"
grep "$half" "$T/pass.names" | sed "s|^|$O/|" >"$T/run.16"
: >"$T/conf.out"
[ -s "$T/run.32" ] && "$COLLAGEC" conformance -j2 $(cat "$T/run.32") >>"$T/conf.out" 2>&1
[ -s "$T/run.16" ] && "$COLLAGEC" conformance -j2 --rtol 1e-2 --atol 0 $(cat "$T/run.16") \
	>>"$T/conf.out" 2>&1

# one line a case: a listed case must fail with "compile: MESSAGE" exactly
awk -F'\t' -v list="$LIST" -v names="$T/pass.names" -v total="$(wc -l <"$T/all")" '
	BEGIN {
		while ((getline l < list) > 0) {
			if (l == "" || l ~ /^#/) continue
			split(l, f, "\t")
			want[f[1]] = f[2]
		}
		while ((getline l < names) > 0) must[l] = 1
	}
	/^PASS / { split($0, w, " "); got[w[2]] = "" }
	/^FAIL / {
		n = $0; sub(/^FAIL /, "", n); sub(/:.*/, "", n)
		r = $0; sub(/^FAIL [^:]*: /, "", r)
		got[n] = r
	}
	END {
		for (t in want) {
			if (!(t in got)) print "FAIL opset24/" t ": not run"
			else if (got[t] == "") print "FAIL opset24/" t ": passes; take it off tests/opset24.refused"
			else if (got[t] != "compile: " want[t])
				print "FAIL opset24/" t ": " got[t] " (expected: compile: " want[t] ")"
			else print "ok   opset24/" t " (refused)"
		}
		for (t in must) {
			if (!(t in got)) print "FAIL opset24/" t ": not run"
			else if (got[t] != "") print "FAIL opset24/" t ": " got[t]
			else { print "ok   opset24/" t; passed++ }
		}
		n = 0
		for (t in want) n++
		m = 0
		for (t in must) m++
		printf "opset24: %d of the %d cases run that must pass pass, %d refused as listed; " \
			"%d cases in all\n", passed, m, n, total
	}' "$T/conf.out" | sort >"$T/lines"
cat "$T/lines"
grep -q '^FAIL' "$T/lines" && t_failed=1
t_exit
