# nodetests.sh - sourced by opset.sh, rnn.sh, quant.sh and random.sh, whose node tests a
# generator writes (testdata/nodetest.py's layout): OUT/good/NAME with the
# generator's outputs, OUT/bad/NAME with the message it expects. The suite
# sets SUITE first; T is its private directory (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

# nt_generate GENERATOR: runs it into $T, or fails the suite
nt_generate() {
	if ! /usr/bin/python3 "$1" "$T" 2>"$T/gen.log"; then
		echo "FAIL $SUITE/generate: $(tail -n 1 "$T/gen.log")"
		exit 1
	fi
}

# nt_conformance RTOL ATOL DIR...: each test folder under DIR is one ok/FAIL line
nt_conformance() {
	rtol=$1 atol=$2
	shift 2
	"$COLLAGEC" conformance -j2 --rtol "$rtol" --atol "$atol" "$@" >"$T/conf.out" 2>&1
	sed -n "s/^PASS \([^ ]*\).*/ok   $SUITE\/\1/p; s/^FAIL \([^:]*\): /FAIL $SUITE\/\1: /p" \
		"$T/conf.out"
}

# nt_bad: every $T/bad/NAME is refused with exit status 1, the expected
# message and no output left behind
nt_bad() {
	for d in "$T"/bad/*/; do
		n=$(basename "$d")
		"$COLLAGEC" compile --search none --target c "$d/model.onnx" -o "$T/$n.so" \
			>/dev/null 2>"$T/$n.err"
		st=$?
		want=$(cat "$d/expect")
		if [ "$st" -ne 1 ]; then
			echo "FAIL $SUITE/bad/$n: exit status $st, expected 1"
		elif ! grep -qF -- "$want" "$T/$n.err"; then
			echo "FAIL $SUITE/bad/$n: stderr lacks \"$want\" (got: $(head -n 1 "$T/$n.err"))"
		elif [ -e "$T/$n.so" ]; then
			echo "FAIL $SUITE/bad/$n: left $n.so behind"
		else
			echo "ok   $SUITE/bad/$n"
		fi
	done
}
