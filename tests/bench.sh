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
# MODELS picks models: the five reference ones (the default) and the zoo's
# (testdata/gen_zoo.py: resnet50, bert_base, efficientnet_b0, ...).
# BUSY=unpinned (or BUSY=pinned) runs it all beside one CPU-bound process
# that the scheduler places (or that is pinned to CPU 0), as a model meets
# other work on a real machine (make bench-busy: THREADS=2, SEARCH=collage,
# every target, the zoo's BERT-Base and ResNet-50 too); the rounds of the two
# sides alternate, and max/min is each side's spread over its rounds.
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/models
THREADS=${THREADS:-1}
TARGET=${TARGET:-c}
SEARCH=${SEARCH:-none}
REPEAT=${REPEAT:-3}
RUNS=${RUNS:-20}
MODELS=${MODELS:-mnist_cnn mlp bert_tiny mobilenetv2 resnet18}
BUSY=${BUSY:-}
. tests/bench_lib.sh
mkdir -p "$D"
/usr/bin/python3 testdata/gen_models.py "$D" || exit 1
zoo=""
for m in $MODELS; do
	case $m in mnist_cnn|mlp|bert_tiny|mobilenetv2|resnet18) ;; *) zoo="$zoo $m" ;; esac
done
if [ -n "$zoo" ]; then /usr/bin/python3 testdata/gen_zoo.py "$D" $zoo >/dev/null || exit 1; fi
have_ort=0
have_ort && have_ort=1
hog=
case $BUSY in
"") ;;
unpinned) sh -c 'while :; do :; done' & hog=$! ;;
pinned) taskset -c 0 sh -c 'while :; do :; done' & hog=$! ;;
*) echo "bench.sh: BUSY is unpinned or pinned" >&2; exit 2 ;;
esac
[ -n "$hog" ] && trap 'kill $hog 2>/dev/null' EXIT INT TERM
cpu_line
echo "target $TARGET, search $SEARCH, $THREADS thread(s), $REPEAT x $RUNS runs per side${BUSY:+, beside one busy process ($BUSY)}"
printf '%-15s %9s %12s %13s %7s %12s %13s %7s %7s\n' model compile_s collagec_ms spread \
	max/min ort_ms spread max/min ratio
for m in $MODELS; do
	t0=$(date +%s.%N)
	# TARGET=default, SEARCH=default: the default compile's (every target, Collage)
	set --
	[ "$TARGET" = default ] || set -- "$@" --target "$TARGET"
	[ "$SEARCH" = default ] || set -- "$@" --search "$SEARCH"
	"$COLLAGEC" compile "$D/$m.onnx" -o "$D/$m.so" "$@" --threads "$THREADS" || continue
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
line = "%-15s %9.2f %12.3f %13s %7.2f" % (m, comp, cm, "%.2f..%.2f" % (min(c), max(c)),
                                           max(c) / min(c))
if o:
    om = statistics.median(o)
    line += " %12.3f %13s %7.2f %7.2f" % (om, "%.2f..%.2f" % (min(o), max(o)), max(o) / min(o),
                                          cm / om)
print(line)
PY
done
if [ "$TARGET" = c ] && [ "${GEMM:-1}" != 0 ] && [ -z "$BUSY" ]; then
	echo
	BUILD=${BUILD:-build} THREADS=$THREADS RUNS=$RUNS sh tests/bench_gemm.sh
fi
