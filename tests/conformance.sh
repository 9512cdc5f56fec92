#!/bin/sh
# conformance.sh - the ONNX backend tests of Debian's libonnx-testdata. Every
# test listed in tests/conformance.pass must pass (one ok/FAIL line each);
# tests not listed are reported only in the totals.
COLLAGEC=${COLLAGEC:-build/collagec}
D=/usr/share/libonnx-testdata/data
T=${TEST_TMP:-/tmp}
"$COLLAGEC" conformance -j2 "$D/node" "$D/pytorch-converted" "$D/pytorch-operator" "$D/simple" \
	>"$T/conformance.out" 2>&1
awk -v list=tests/conformance.pass '
	BEGIN { while ((getline l < list) > 0) if (l != "" && l !~ /^#/) want[l] = 1 }
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
