#!/bin/sh
# sharing.sh - kernels that differ only in index constants share one C
# function (core/target/share.c, collagec(1) "Shared kernel code"), and
# --stats records what a compile cost. testdata/gen_dense_blocks.py's model
# repeats BatchNormalization/Relu/Conv/Concat at five channel counts:
#  - the c build prints fewer functions than steps, and far fewer than
#    "c -share=0", which gives every step its own;
#  - both builds give bit-identical outputs (the arithmetic is the same) at
#    1 and 2 threads and at two batch sizes, and match numpy's reference;
#  - --dump-ir shows the constants parameter from the share step on;
#  - two builds are byte-identical; --stats is valid JSON with every stage,
#    and no stats file is left by a failed compile.
# Needs $COLLAGEC and $TEST_TMP. One line per check: "ok sharing/NAME" or
# "FAIL sharing/NAME: why".
SUITE=sharing
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 "$ROOT/testdata/gen_dense_blocks.py" "$T" >"$T/gen.log" 2>&1 || {
	echo "FAIL sharing/model: $(tail -n 1 "$T/gen.log")"
	exit 1
}
M=$T/dense_blocks.onnx
build() { # build NAME TARGET: OUT in $T/NAME.so, stats in $T/NAME.stats
	"$COLLAGEC" compile "$M" -o "$T/$1.so" --search none --target "$2" --no-cache -q \
		--stats "$T/$1.stats" >"$T/$1.log" 2>&1 || {
		fail "build-$1" "$(head -n 1 "$T/$1.log")"
		return 1
	}
}
field() { # field NAME KEY: a top-level number of NAME's stats
	/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$T/$1.stats" "$2"
}
build shared c && build own "c -share=0" && build again c || exit 1

steps=$(field shared kernels)
fs=$(field shared c_functions)
fo=$(field own c_functions)
# BN, Relu, Conv, Concat and GlobalAveragePool: one function each
if [ "$fs" -le 5 ] && [ "$fo" -eq "$steps" ] && [ "$steps" -ge 20 ]; then
	ok "functions ($fs shared, $fo without, $steps steps)"
else
	fail "functions" "$fs shared, $fo without sharing, $steps steps"
fi
if cmp -s "$T/shared.so" "$T/again.so" && cmp -s "$T/shared.json" "$T/again.json"; then
	ok byte-identical
else
	fail "byte-identical" "two builds of the same model differ"
fi
if ! cmp -s "$T/shared.so" "$T/own.so"; then
	ok "share=0 builds other code"
else
	fail "share=0" "the same shared object as the default build"
fi

# --dump-ir: the share step is where the constants parameter appears
rm -rf "$T/ir"
if "$COLLAGEC" compile "$M" -o "$T/ir.so" --search none --target c --no-cache -q \
	--dump-ir "$T/ir" >"$T/ir.log" 2>&1; then
	f=$(ls "$T/ir"/*-lower.3-fuse.tir 2>/dev/null)
	n=$(grep -c '/\* consts \*/' "${f%3-fuse.tir}4-share.tir" 2>/dev/null)
	if [ -f "$f" ] && ! grep -q '/\* consts \*/' "$f" && [ "${n:-0}" -ge 15 ]; then
		ok "dump-ir share step ($n kernels read constants)"
	else
		fail "dump-ir share step" "${n:-no} kernels read constants after it, or some before"
	fi
else
	fail "dump-ir" "$(head -n 1 "$T/ir.log")"
fi

# outputs: shared vs own, bit for bit, and numpy's reference
/usr/bin/python3 - "$M" "$T" <<'PY' >"$T/ref.log" 2>&1 || fail "reference" "$(tail -n 1 "$T/ref.log")"
import sys
import numpy as np
from onnx import load, numpy_helper
m = load(sys.argv[1])
w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
for n in (1, 3):
    x = np.random.default_rng(n).uniform(-1, 1, (n, 8, 16, 16)).astype(np.float32)
    np.save("%s/x%d.npy" % (sys.argv[2], n), x)
    cur = x.astype(np.float64)
    for i in range(5):
        p = "l%d_" % i
        s = lambda k: w[p + k].astype(np.float64)[None, :, None, None]
        h = (cur - s("mean")) / np.sqrt(s("var") + 1e-5) * s("scale") + s("bias")
        h = np.maximum(h, 0)
        h = np.einsum("oc,nchw->nohw", w[p + "w"][:, :, 0, 0].astype(np.float64), h)
        cur = np.concatenate([cur, h], axis=1)
    np.save("%s/y%d.npy" % (sys.argv[2], n), cur.mean(axis=(2, 3), keepdims=True).astype(np.float32))
PY
for n in 1 3; do
	for th in 1 2; do
		for b in shared own; do
			rm -rf "$T/out.$b"
			"$COLLAGEC" run "$T/$b.so" --input "x=$T/x$n.npy" --threads $th --npy \
				--output-dir "$T/out.$b" >"$T/run.log" 2>&1 ||
				fail "run-$b-N$n-T$th" "$(head -n 1 "$T/run.log")"
		done
		if cmp -s "$T/out.shared/y.npy" "$T/out.own/y.npy"; then
			ok "bit-identical-N$n-threads$th"
		else
			fail "bit-identical-N$n-threads$th" "the shared build's output differs"
		fi
	done
	if /usr/bin/python3 -c '
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5) else 1)' \
		"$T/out.shared/y.npy" "$T/y$n.npy"; then
		ok "matches-numpy-N$n"
	else
		fail "matches-numpy-N$n" "the output is not numpy's"
	fi
done

# --stats: every stage, and nothing after a failed compile
if /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
st = ["import", "passes", "partition", "lower", "plan and emit", "cc"]
assert list(s["stages"]) == st, s["stages"]
assert s["seconds"] >= sum(s["stages"].values()) * 0.99
assert s["object_cache"] == {"enabled": False, "kernel_files": s["object_cache"]["kernel_files"], "hits": 0}
assert s["cost_cache"]["enabled"] is False and s["nodes"] >= 20' "$T/shared.stats" 2>"$T/st.log"; then
	ok stats-json
else
	fail "stats-json" "$(tail -n 1 "$T/st.log")"
fi
printf 'not a model' >"$T/bad.onnx"
rm -f "$T/bad.stats"
if ! "$COLLAGEC" compile "$T/bad.onnx" -o "$T/bad.so" --stats "$T/bad.stats" -q 2>/dev/null &&
	[ ! -e "$T/bad.stats" ]; then
	ok stats-not-written-on-failure
else
	fail "stats-not-written-on-failure" "a failed compile left $T/bad.stats"
fi
t_exit
