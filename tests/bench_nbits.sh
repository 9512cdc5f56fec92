#!/bin/sh
# bench_nbits.sh - make bench-nbits: a decoder-sized MatMulNBits (K = N =
# 4096, blocks of 32, packed zero points; ONNX Runtime's layout) at M = 1
# (decode) and M = 64 (prefill), collagec's c build (matmulnbits.gemm)
# against ONNX Runtime in the same run at one thread: ROUNDS interleaved
# rounds (collagec, then ONNX Runtime, per model), each side's median of its
# round medians, in ms, and collagec / ONNX Runtime. A measurement, not a
# test: it checks nothing but that both sides ran.
#
# Needs ORT_PY (default python3) with onnxruntime, onnx and numpy.
BUILD=${BUILD:-build}
C=$(pwd)/$BUILD/collagec
PY=${ORT_PY:-python3}
ROUNDS=${ROUNDS:-5}
T=$(mktemp -d "${TMPDIR:-/tmp}/collagec-bench-nbits-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

if ! "$PY" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
	echo "bench-nbits: $PY has no onnxruntime, onnx and numpy (set ORT_PY)" >&2
	exit 4
fi
"$PY" - "$T" <<'EOF' || exit 1
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

K = N = 4096
BS = 32
rng = np.random.default_rng(4)
kb = K // BS
B = rng.integers(0, 256, (N, kb, BS // 2), dtype=np.uint8)
S = (rng.random(N * kb) * 0.02 + 0.001).astype(np.float32)
Z = rng.integers(0, 256, N * ((kb + 1) // 2), dtype=np.uint8)
for m in (1, 64):
    node = helper.make_node("MatMulNBits", ["A", "B", "scales", "zp"], ["Y"],
                            domain="com.microsoft", K=K, N=N, bits=4, block_size=BS)
    g = helper.make_graph([node], "nbits", [helper.make_tensor_value_info(
        "A", TensorProto.FLOAT, [m, K])], [helper.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [m, N])],
        [numpy_helper.from_array(B, "B"), numpy_helper.from_array(S, "scales"),
         numpy_helper.from_array(Z, "zp")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    save(model, "%s/m%d.onnx" % (sys.argv[1], m))
EOF

# median of the numbers on stdin
median() {
	sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

field() {
	sed -n 's/.*"median_ms": *\([0-9.e+-]*\).*/\1/p'
}

echo "bench-nbits: $(lscpu | sed -n 's/^Model name: *//p'), 1 thread, $ROUNDS rounds"
for m in 1 64; do
	if ! "$C" compile -q --search none --target c "$T/m$m.onnx" -o "$T/m$m.so" 2>"$T/err"; then
		echo "bench-nbits: compile m$m: $(head -n 1 "$T/err")" >&2
		exit 1
	fi
	runs=$((m == 1 ? 200 : 20))
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		"$C" bench "$T/m$m.so" --threads 1 --runs $runs --warmup 5 --json | field >>"$T/c$m"
		"$PY" tools/ort.py bench "$T/m$m.onnx" --threads 1 --runs $runs --warmup 5 |
			field >>"$T/o$m"
		r=$((r + 1))
	done
	c=$(median <"$T/c$m") o=$(median <"$T/o$m")
	[ -n "$c" ] && [ -n "$o" ] || { echo "bench-nbits: no timing for m$m" >&2; exit 1; }
	echo "M=$m K=4096 N=4096 block 32: collagec $c ms, onnxruntime $o ms, ratio $(echo "$c $o" |
		awk '{ printf "%.2f", $1 / $2 }')"
done
