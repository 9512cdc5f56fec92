#!/bin/sh
# determinism.sh - a compiled model gives the same outputs every time (issue
# 11 item 6). The five reference models, built for each available target
# (c, blas, dnnl and opencl, each with c for the rest), run on the same
# random inputs at 1 thread twice and at 2 and 4 threads:
#  - at one thread count, two runs are bit-identical, on every target;
#  - c and opencl kernels split work between threads but never a reduction,
#    so their outputs are bit-identical at 1, 2 and 4 threads;
#  - OpenBLAS and oneDNN pick their kernels (and summation order) by thread
#    count, so blas and dnnl builds may differ across thread counts, by at
#    most 1e-5 of the output's largest magnitude (collagec(1), ACCURACY).
# The quick tier runs opencl (PoCL builds its programs at every open, about
# a minute a large model) on mnist_cnn and mlp only.
# Needs $COLLAGEC and $TEST_TMP. One line per model and target: "ok
# determinism/MODEL/TARGET" or "FAIL determinism/MODEL/TARGET: why".
SUITE=determinism
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/m"
/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" >"$T/gen.log" 2>&1 || {
	echo "FAIL determinism/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
targets=c
for k in blas dnnl opencl; do
	"$COLLAGEC" targets 2>/dev/null | grep -A1 "^$k " | grep -q 'status: *available' &&
		targets="$targets $k"
done
# the largest difference between two output folders, relative to the
# largest magnitude of each output; 0 when bit-identical
diff_of() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import os, sys
import numpy as np
worst = 0.0
for f in sorted(os.listdir(sys.argv[1])):
    a = np.load(os.path.join(sys.argv[1], f))
    b = np.load(os.path.join(sys.argv[2], f))
    if a.shape != b.shape or a.dtype != b.dtype:
        print("inf")
        sys.exit(0)
    if a.tobytes() == b.tobytes():
        continue
    a, b = a.astype(np.float64), b.astype(np.float64)
    worst = max(worst, float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)))
print("%.3g" % worst)
EOF
}
for m in mnist_cnn mlp bert_tiny mobilenetv2 resnet18; do
	for t in $targets; do
		case $t:$m in opencl:mnist_cnn | opencl:mlp) ;; opencl:*) tier full || continue ;; esac
		list=$t
		[ $t = c ] || list=$t,c
		so="$T/${m}_$t.so"
		if ! "$COLLAGEC" compile "$T/m/$m.onnx" -o "$so" --search none --target $list -q \
			>"$T/c.log" 2>&1; then
			echo "FAIL determinism/$m/$t: $(head -n 1 "$T/c.log")"
			t_failed=$((t_failed + 1))
			continue
		fi
		why=
		for run in 1 1b 2 4; do
			"$COLLAGEC" run "$so" --seed 7 --threads ${run%b} --npy \
				--output-dir "$T/out_$run" >"$T/r.log" 2>&1 ||
				why="run at ${run%b} thread(s): $(head -n 1 "$T/r.log")"
		done
		if [ -z "$why" ]; then
			d=$(diff_of "$T/out_1" "$T/out_1b")
			[ "$d" = 0 ] || why="two runs at 1 thread differ by $d"
		fi
		for n in 2 4; do
			[ -z "$why" ] || break
			d=$(diff_of "$T/out_1" "$T/out_$n")
			case $t in
			c | opencl) [ "$d" = 0 ] || why="1 and $n threads differ by $d" ;;
			*) awk -v d="$d" 'BEGIN { exit !(d <= 1e-5) }' ||
				why="1 and $n threads differ by $d (more than 1e-5)" ;;
			esac
			eval "d$n=\$d"
		done
		rm -rf "$T"/out_*
		if [ -n "$why" ]; then
			echo "FAIL determinism/$m/$t: $why"
			t_failed=$((t_failed + 1))
		else
			echo "ok   determinism/$m/$t (1 vs 2, 4 threads: $d2, $d4)"
		fi
	done
done
t_exit
