#!/bin/sh
# bench.sh - make bench: collagec next to ONNX Runtime on the five reference
# models, same machine, same run, same thread count (THREADS, default 1),
# compiled for TARGET (default c; e.g. TARGET=blas,c make bench) with SEARCH (default
# none: each target in order takes what its rules give it; SEARCH=collage measures;
# make bench-collage compares the searches). Each side is measured
# REPEAT times (collagec bench / tools/ort.py bench, RUNS runs each); the
# table shows the median of the medians, the spread (min..max of the
# medians) and the ratio collagec / ONNX Runtime. ONNX Runtime is optional
# (pip install onnxruntime numpy); without it only collagec is shown.
# With TARGET=c it then runs tests/bench_gemm.sh (make bench-gemm): ResNet-18's
# convolutions on c against OpenBLAS's sgemm on the same shapes (GEMM=0 skips).
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/models
THREADS=${THREADS:-1}
TARGET=${TARGET:-c}
SEARCH=${SEARCH:-none}
REPEAT=${REPEAT:-3}
RUNS=${RUNS:-20}
. tests/bench_lib.sh
mkdir -p "$D"
/usr/bin/python3 testdata/gen_models.py "$D" || exit 1
have_ort=0
have_ort && have_ort=1
echo "target $TARGET, search $SEARCH, $THREADS thread(s), $REPEAT x $RUNS runs per side"
printf '%-12s %10s %18s %12s %18s %8s %10s\n' model compile_s collagec_ms spread ort_ms \
	spread ratio
for m in mnist_cnn mlp bert_tiny mobilenetv2 resnet18; do
	t0=$(date +%s.%N)
	"$COLLAGEC" compile "$D/$m.onnx" -o "$D/$m.so" --target "$TARGET" --search "$SEARCH" \
		--threads "$THREADS" || continue
	t1=$(date +%s.%N)
	c=""
	o=""
	# the shapes of the reference benchmarks: mlp at N=64, bert_tiny at batch 1
	shape=
	[ $m = mlp ] && shape="--shape N=64"
	for i in $(seq "$REPEAT"); do
		c="$c $(collagec_ms "$D/$m.so" "$THREADS" "$RUNS" $shape)"
		[ $have_ort = 1 ] && o="$o $(ort_ms "$D/$m.onnx" "$THREADS" "$RUNS" $shape)"
	done
	python3 - "$m" "$(echo "$t1 - $t0" | bc)" "$c" "$o" <<'PY'
import statistics, sys
m, comp, c, o = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
c = [float(x) for x in c]; o = [float(x) for x in o]
cm = statistics.median(c)
line = "%-12s %10.2f %18.3f %12s" % (m, comp, cm, "%.2f..%.2f" % (min(c), max(c)))
if o:
    om = statistics.median(o)
    line += " %18.3f %8s %10.2f" % (om, "%.2f..%.2f" % (min(o), max(o)), cm / om)
print(line)
PY
done
if [ "$TARGET" = c ] && [ "${GEMM:-1}" != 0 ]; then
	echo
	BUILD=${BUILD:-build} THREADS=$THREADS RUNS=$RUNS sh tests/bench_gemm.sh
fi
