#!/bin/sh
# update-conformance.sh - rewrites tests/conformance.pass from a full run.
# Review the diff: a test disappearing from the list is a regression.
set -e
BUILD=${BUILD:-build}
D=/usr/share/libonnx-testdata/data
out=$(mktemp)
"$BUILD/collagec" conformance -j2 "$D/node" "$D/pytorch-converted" "$D/pytorch-operator" \
	"$D/simple" >"$out" || true
{
	echo "# ONNX backend tests (libonnx-testdata) that must pass; regenerate with"
	echo "# tools/update-conformance.sh after adding ops, and review the diff."
	grep '^PASS' "$out" | awk '{print $2}' | sort
} >tests/conformance.pass
tail -1 "$out"
rm -f "$out"
