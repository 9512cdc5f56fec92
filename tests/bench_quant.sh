#!/bin/sh
# bench_quant.sh - make bench-quant: issue 31's measure of quantized models.
# testdata/gen_bench_quant.py writes them into $BUILD/bench-quant (once; kept
# for later runs), each beside the float32 model it was made from:
# quantize_dynamic of bert_tiny and of a BERT-Base-sized encoder,
# quantize_static QDQ of resnet18 and of a ResNet-50-sized network, and a
# 4-bit MatMulNBits decoder layer, and bert_tiny and the BERT-Base-sized
# encoder converted to float16 whole (MODELS picks some). collagec compiles
# each, quantized and float32, with the default compile for each thread
# count it is timed at (--threads 1, --threads 2: the plan its search
# measured for that count, as a user deploying at that count builds it).
# Per model and thread count:
#   agreement  on one input (collagec run's and tools/ort.py's default
#              inputs, batch 1, but for an attention_mask of ones: their
#              integers to 99 made the float16 encoders' mask term overflow
#              to infinity, NaN through Softmax as ONNX's float16 Mul
#              rounds, where ONNX Runtime computes that region in float32):
#              the largest difference of collagec's output
#              from ONNX Runtime's optimized run (default session options)
#              beside the largest between ONNX Runtime's optimized and
#              unoptimized (ORT_DISABLE_ALL: the graph as written) runs, and
#              the mean difference of each from the float32 model's output
#              (ONNX Runtime's); "ok" when collagec is within ONNX Runtime's
#              own two runs' difference, else "f32" when it is at least as
#              close to the float32 output as ONNX Runtime is, else "NO"
#              ("NaN" where an output of either has a NaN the other lacks)
#   times      at 1 and 2 threads (THREADS), ROUNDS (default 5) interleaved
#              rounds of collagec's quantized build, ONNX Runtime on the same
#              ONNX file and collagec's float32 build, each a median of RUNS
#              runs after 2 warm-ups: the medians of the rounds, their
#              spread (max/min over the rounds), collagec / ONNX Runtime (the
#              median of the rounds' ratios) and float32 / int8 (collagec's
#              speedup from quantizing)
#   size       OUT.so over the ONNX file
# CPU=LEVEL compiles collagec's builds with --cpu LEVEL and caps oneDNN at
# that level's vectors (ONEDNN_MAX_CPU_ISA: AVX2 for x86-64-v3, SSE41 below
# it), so that an AVX-512 host measures the code an AVX2 host would run
# (dnnl then takes no int8 op: no --cpu level has VNNI); ONNX Runtime has
# no such cap and keeps the host's full ISA, so c/ort is then no AVX2
# host's ratio, but f32/c is.
# One table. A measurement, not a test: it fails only when something does
# not compile or run.
# Needs ORT_PY (default python3) with onnxruntime, onnx and numpy.
BUILD=${BUILD:-build}
COLLAGEC=$BUILD/collagec
PY=${ORT_PY:-python3}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-1 2}
MODELS=${MODELS:-bert_tiny bert_base resnet18 resnet50 decoder_nbits bert_tiny_f16 bert_base_f16}
CPU=${CPU:-native}
case $CPU in
native|x86-64-v4) ;;
x86-64-v3) export ONEDNN_MAX_CPU_ISA=AVX2 ;;
x86-64-v2|generic) export ONEDNN_MAX_CPU_ISA=SSE41 ;;
*) echo "bench-quant: CPU is native, x86-64-v4, x86-64-v3, x86-64-v2 or generic" >&2; exit 2 ;;
esac
D=$BUILD/bench-quant
. tests/bench_lib.sh

if ! "$PY" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
	echo "bench-quant: skipped: $PY has no onnxruntime, onnx and numpy" \
		"(set ORT_PY to a python with them)" >&2
	exit 0
fi
mkdir -p "$D"
for m in $MODELS; do
	[ -f "$D/$m.onnx" ] && [ -f "$D/$m.f32.onnx" ] && continue
	PATH=$(dirname "$PY"):$PATH "$PY" testdata/gen_bench_quant.py "$D" "$m" >/dev/null 2>"$D/gen.err" ||
		{ echo "bench-quant: generating $m: $(tail -n 1 "$D/gen.err")" >&2; exit 1; }
done

# runs per timing: fewer for the large models
runs() {
	case $1 in
	bert_base*|resnet50) echo "${RUNS:-5}" ;;
	*) echo "${RUNS:-20}" ;;
	esac
}

# the --shape arguments of model $1: batch 1 for the encoders' symbolic batch
shape() {
	case $1 in
	bert_*) echo "--shape batch=1" ;;
	esac
}

# ort_q ONNX THREADS RUNS [ARGS...]: ONNX Runtime's median milliseconds
ort_q() (
	onnx=$1 threads=$2 runs=$3
	shift 3
	"$PY" tools/ort.py bench "$onnx" --runs "$runs" --warmup 2 --threads "$threads" "$@" |
		sed -n 's/.*"median_ms": \([0-9.]*\).*/\1/p'
)

# the agreement columns of model $1 (its collagec outputs in $2)
agree() {
	"$PY" - "$D/$1.onnx" "$D/$1.f32.onnx" "$2" <<'EOF'
import os
import sys
import numpy as np
import onnxruntime as ort
sys.path.insert(0, "tools")
import ort as O  # noqa: E402

q, f, cdir = sys.argv[1:4]
opts = ort.SessionOptions()
opt = ort.InferenceSession(q, opts, providers=["CPUExecutionProvider"])
plain = ort.SessionOptions()
plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
un = ort.InferenceSession(q, plain, providers=["CPUExecutionProvider"])
fl = ort.InferenceSession(f, opts, providers=["CPUExecutionProvider"])
feeds = O.make_inputs(opt, {"batch": [1]}, 1)
if "attention_mask" in feeds:
    feeds["attention_mask"] = np.load(os.path.join(cdir, "mask.npy"))
co = ou = cf = of = 0.0
nan = False
for meta, a, b, r in zip(opt.get_outputs(), opt.run(None, feeds), un.run(None, feeds),
                         fl.run(None, feeds)):
    c = np.load(os.path.join(cdir, meta.name + ".npy")).astype(np.float64)
    a, b, r = a.astype(np.float64), b.astype(np.float64), r.astype(np.float64)
    nan |= bool((np.isnan(c) != np.isnan(a)).any())
    # max() would drop a NaN difference (NaN compares false): fmax keeps the number
    co, ou = np.fmax(co, np.abs(c - a).max()), np.fmax(ou, np.abs(a - b).max())
    cf, of = np.fmax(cf, np.abs(c - r).mean()), np.fmax(of, np.abs(a - r).mean())
verdict = "NaN" if nan else "ok" if co <= ou * 1.0001 + 1e-5 else \
    "f32" if cf <= of * 1.0001 else "NO"
print("%.3g %.3g %.3g %.3g %s" % (co, ou, cf, of, verdict))
EOF
}

cpu="$(cpu_line) ($(${CC:-cc} -march=native -Q --help=target 2>/dev/null |
	sed -n 's/^[[:space:]]*-march=[[:space:]]*\([^[:space:]]*\).*/\1/p' | head -n 1):$(grep -o -w \
	'avx2\|fma\|avx512f\|avx_vnni\|avx512_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ' |
	sed 's/ $//'))"
echo "bench-quant: $(date -u '+%Y-%m-%d %H:%M UTC'), $cpu, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"onnxruntime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)'), $ROUNDS" \
	"rounds${ONEDNN_MAX_CPU_ISA:+, collagec --cpu $CPU with oneDNN capped at $ONEDNN_MAX_CPU_ISA (ONNX Runtime is not)}"
for m in $MODELS; do
	for t in $THREADS; do
		for v in "" .f32; do
			if ! "$COLLAGEC" compile -q --threads "$t" --cpu "$CPU" "$D/$m$v.onnx" \
				-o "$D/$m$v.t$t.so" 2>"$D/$m$v.err"; then
				echo "bench-quant: compile $m$v: $(head -n 1 "$D/$m$v.err")" >&2
				exit 1
			fi
		done
		o=$D/$m.t$t.out
		rm -rf "$o"
		mkdir -p "$o"
		mask=
		case $m in
		bert_*)
			"$PY" -c 'import numpy, sys; numpy.save(sys.argv[1], numpy.ones((1, 128), numpy.int64))' \
				"$o/mask.npy" || exit 1
			mask="--input attention_mask=$o/mask.npy" ;;
		esac
		# shellcheck disable=SC2046,SC2086
		"$COLLAGEC" run "$D/$m.t$t.so" $(shape "$m") $mask --output-dir "$o" --npy >/dev/null ||
			{ echo "bench-quant: run $m failed" >&2; exit 1; }
		agree "$m" "$o" >"$D/$m.t$t.agree" || exit 1
	done
done

printf '%-14s %3s %10s %10s %10s %6s %7s %7s %7s %7s %5s %-24s\n' model thr "c ms" "ort ms" \
	"c f32 ms" "c/ort" "f32/c" spread_c spread_o spread_f size "|c-ort| |ort-unopt| f32:|c| |ort| ok"
for m in $MODELS; do
	n=$(runs "$m")
	for t in $THREADS; do
		: >"$D/$m.$t.c"; : >"$D/$m.$t.o"; : >"$D/$m.$t.f"; : >"$D/$m.$t.r"
		r=0
		while [ $r -lt "$ROUNDS" ]; do
			# shellcheck disable=SC2046
			c=$(collagec_ms "$D/$m.t$t.so" "$t" "$n" $(shape "$m"))
			# shellcheck disable=SC2046
			o=$(ort_q "$D/$m.onnx" "$t" "$n" $(shape "$m"))
			# shellcheck disable=SC2046
			f=$(collagec_ms "$D/$m.f32.t$t.so" "$t" "$n" $(shape "$m"))
			[ -n "$c" ] && [ -n "$o" ] && [ -n "$f" ] ||
				{ echo "bench-quant: no timing for $m at $t threads" >&2; exit 1; }
			echo "$c" >>"$D/$m.$t.c"
			echo "$o" >>"$D/$m.$t.o"
			echo "$f" >>"$D/$m.$t.f"
			echo "$c $o" | awk '{ printf "%.4f\n", $1 / $2 }' >>"$D/$m.$t.r"
			r=$((r + 1))
		done
		c=$(median <"$D/$m.$t.c") o=$(median <"$D/$m.$t.o") f=$(median <"$D/$m.$t.f")
		ratio=$(median <"$D/$m.$t.r")
		size=$(awk -v a="$(wc -c <"$D/$m.t$t.so")" -v b="$(wc -c <"$D/$m.onnx")" \
			'BEGIN { printf "%.2f", a / b }')
		printf '%-14s %3s %10s %10s %10s %6s %7s %7s %7s %7s %5s %s\n' "$m" "$t" "$c" "$o" "$f" \
			"$ratio" "$(echo "$f $c" | awk '{ printf "%.2f", $1 / $2 }')" \
			"$(sort -g "$D/$m.$t.c" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f", b / a }')" \
			"$(sort -g "$D/$m.$t.o" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f", b / a }')" \
			"$(sort -g "$D/$m.$t.f" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f", b / a }')" \
			"$size" "$(cat "$D/$m.t$t.agree")"
	done
done
echo "size: OUT.so / ONNX file; spread: max/min of a side's round medians; c/ort: median of the" \
	"rounds' ratios; f32/c: collagec's float32 build over its int8 (4-bit, float16) one" \
	"(medians)"
