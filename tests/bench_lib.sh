# bench_lib.sh - what the benchmark scripts share (bench.sh, bench_compile.sh
# and bench_search.sh source it; it is no test suite): the machine's line,
# wall seconds of a command, the median of numbers, and one timing of a
# compiled model by `collagec bench` or of its ONNX model by ONNX Runtime
# (tools/ort.py bench), in milliseconds. Each function runs in a subshell, so
# it sets none of its caller's variables, and needs $COLLAGEC.

# cpu_line: "cpu: MODEL NAME, N cores"
cpu_line() (
	cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
	[ -n "$cpu" ] || cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
	echo "cpu: $cpu, $(nproc) cores"
)

# secs CMD...: wall seconds of one run of CMD (its output dropped)
secs() (
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || echo "collagec failed: $*" >&2
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
)

# median: the median of the numbers on stdin (spaces or lines; anything else
# is skipped); the lower middle one of an even count, nothing for none
median() {
	tr ' ' '\n' | grep -E '^[0-9.eE+-]+$' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# have_ort: whether ONNX Runtime can be imported (pip install onnxruntime numpy)
have_ort() { python3 -c "import onnxruntime" 2>/dev/null; }

# collagec_ms SO THREADS RUNS [ARGS...]: the median milliseconds of RUNS runs
# (after 3 warm-up runs) of `collagec bench SO`; nothing if it fails
collagec_ms() (
	so=$1 threads=$2 runs=$3
	shift 3
	"$COLLAGEC" bench "$so" --runs "$runs" --warmup 3 --threads "$threads" "$@" --json |
		sed -n 's/.*"median_ms":\([0-9.]*\).*/\1/p'
)

# ort_ms ONNX THREADS RUNS [ARGS...]: the same for ONNX Runtime (ARGS: --shape)
ort_ms() (
	onnx=$1 threads=$2 runs=$3
	shift 3
	python3 tools/ort.py bench "$onnx" --runs "$runs" --warmup 3 --threads "$threads" "$@" |
		sed -n 's/.*"median_ms": \([0-9.]*\).*/\1/p'
)
