#!/bin/sh
# backends.sh - the backends other than c, each tested differentially against
# the c target: a model compiled for "KIND,c" must place its nodes on KIND
# (partition "target" in OUT.json) and compute what the same model compiled
# for "c" computes on the same inputs, plus KIND's ONNX conformance tests.
#
# Models come from testdata/backends/make_models.py at test time. Needs
# $COLLAGEC (absolute path of the binary; default build/collagec) and
# $TEST_TMP (a scratch directory; default a fresh one, removed afterwards).
# One line per check: "ok   backends/NAME" or "FAIL backends/NAME: why";
# exits 1 when anything failed (the quick tier: the differential checks at
# one seed and one thread count). A backend that `collagec targets` reports
# unavailable gets one "ok ... skipped" line instead of its checks.
#
# Each backend has its own section below ("# --- KIND ---"); add new sections
# before "# --- end ---". $BACKENDS (e.g. "dnnl" or "blas dnnl") runs only
# the sections it names, to iterate on one backend; unset, all of them.

SUITE=backends
. "$(dirname "$0")/lib.sh"
ONNXDATA=/usr/share/libonnx-testdata/data
mkdir -p "$T/models"
M=$T/models
# wanted KIND: true when $BACKENDS is unset or names KIND
wanted() {
	[ -z "$BACKENDS" ] && return 0
	case " $(echo "$BACKENDS" | tr ',' ' ') " in *" $1 "*) return 0 ;; esac
	return 1
}
# available KIND: true when `collagec targets` lists KIND as available
available() {
	"$C" targets 2>/dev/null | awk -v k="$1" '
		index($0, k " (") == 1 { on = 1; next }
		on && /^  status: / { print $2; exit }' | grep -qx available
}
# compile MODEL TARGETS OUT [ARGS...]: compiles, recording failures
compile() {
	_m=$1 _t=$2 _o=$3
	shift 3
	"$C" compile --search none "$_m" -o "$_o" --target "$_t" "$@" >"$T/out" 2>"$T/err" ||
		bad "compile $(basename "$_m") --target $_t: $(head -n 1 "$T/err")"
}
# one_thread SO: a bench of SO on one thread is one thread once it runs
# (within 2 s; OpenBLAS's own threads, started when it loads, stopped)
one_thread() {
	"$C" bench "$1" --threads 1 --runs 100000000 >/dev/null 2>&1 &
	_p=$!
	_n=
	for _i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.2
		kill -0 $_p 2>/dev/null || break
		_n=$(ls /proc/$_p/task 2>/dev/null | wc -l)
		[ "$_n" = 1 ] && break
	done
	kill $_p 2>/dev/null
	wait $_p 2>/dev/null
	[ "$_n" = 1 ] || bad "a bench of $(basename "$1") runs on $_n threads, not 1"
}
# run SO DIR [ARGS...]: runs SO, outputs as .npy under DIR
run() {
	_s=$1 _d=$2
	shift 2
	rm -rf "$_d"
	"$C" run "$_s" --output-dir "$_d" --npy "$@" >"$T/out" 2>"$T/err" ||
		bad "run $(basename "$_s"): $(head -n 1 "$T/err")"
}
# same DIR_A DIR_B: every .npy of DIR_A matches DIR_B's (rtol 1e-4, atol 1e-5)
same() {
	r=$("$PY" - "$1" "$2" <<'EOF'
import glob, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(a, "*.npy")))
if not files:
    print("no outputs in " + a)
for f in files:
    x = np.load(f)
    y = np.load(os.path.join(b, os.path.basename(f)))
    if x.shape != y.shape or x.dtype != y.dtype:
        print("%s: %s %s vs %s %s" % (os.path.basename(f), x.dtype, x.shape, y.dtype, y.shape))
    elif not np.allclose(x, y, rtol=1e-4, atol=1e-5):
        print("%s: %s vs %s" % (os.path.basename(f), x.ravel()[:4], y.ravel()[:4]))
EOF
)
	[ -z "$r" ] || bad "outputs differ: $r"
}
# targets_are JSON OP TARGET...: the partitions running an ONNX node of op
# type OP (alone or fused with others) are on TARGET...
targets_are() {
	_j=$1 _op=$2
	shift 2
	r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join(p["target"] for p in ps
               if any(n["op"] == sys.argv[2] for n in p["onnx_nodes"])))' "$_j" "$_op" 2>&1)
	[ "$r" = "$*" ] || bad "$(basename "$_j"): $_op partitions on '$r', expected '$*'"
}

if ! "$PY" "$ROOT/testdata/backends/make_models.py" "$M" >"$T/gen.log" 2>&1; then
	echo "FAIL backends/make-models: $(tail -n 1 "$T/gen.log")"
	exit 1
fi

# --- lapack ---
# Det on LAPACKE sgetrf/dgetrf: f32 and f64, batches, exactly singular
# matrices (det 0), two Det partitions in one model (helpers emitted once),
# symbolic batches left to c unless bound by --shape.

if ! wanted lapack; then
	:
elif ! available lapack; then
	echo "ok   backends/lapack skipped: $("$C" targets | awk '/^lapack \(/ { on = 1; next }
		on && /^  status: / { sub(/^  status: */, ""); print; exit }')"
else
	L=$T/lapack
	mkdir -p "$L"

	# differential: same random inputs (two seeds) through c and lapack,c
	for m in det_3x3 det_2x4x4 det_5x5 det_f64 det_two; do
		compile "$M/$m.onnx" c "$L/$m.c.so"
		compile "$M/$m.onnx" lapack,c "$L/$m.lapack.so"
		for seed in $(t_list "1 7" 1); do
			[ -n "$why" ] && break
			run "$L/$m.c.so" "$L/$m.c.out" --seed $seed
			run "$L/$m.lapack.so" "$L/$m.lapack.out" --seed $seed
			[ -n "$why" ] || same "$L/$m.lapack.out" "$L/$m.c.out"
		done
		verdict lapack/$m-matches-c
		if [ -f "$L/$m.lapack.json" ]; then
			case $m in
			det_two) targets_are "$L/$m.lapack.json" Det lapack lapack
				 targets_are "$L/$m.lapack.json" Add c ;;
			*) targets_are "$L/$m.lapack.json" Det lapack ;;
			esac
			targets_are "$L/$m.c.json" Det "$([ $m = det_two ] && echo c c || echo c)"
		else
			bad "no $m.lapack.json"
		fi
		verdict lapack/$m-partitions
	done

	# exactly singular matrices: det 0 from info > 0, same as c
	compile "$M/det_singular.onnx" c "$L/sing.c.so"
	compile "$M/det_singular.onnx" lapack,c "$L/sing.lapack.so"
	run "$L/sing.c.so" "$L/sing.c.out" --input "x=$M/det_singular.x.npy"
	run "$L/sing.lapack.so" "$L/sing.lapack.out" --input "x=$M/det_singular.x.npy"
	if [ -z "$why" ]; then
		same "$L/sing.lapack.out" "$L/sing.c.out"
		r=$("$PY" -c 'import sys, numpy as np
y = np.load(sys.argv[1])
if y[:3].tolist() != [0, 0, 0] or not np.isclose(y[3], 4, rtol=1e-5): print(y.tolist())' "$L/sing.lapack.out/y.npy" 2>&1)
		[ -z "$r" ] || bad "singular batch gave $r, expected [0, 0, 0, 4]"
		targets_are "$L/sing.lapack.json" Det lapack
	fi
	verdict lapack/singular

	# LAPACK is OpenBLAS's here: its threads, started when it loads, are
	# stopped at the first Det as blas's are (they spun beside the model's
	# pool): a bench of a lapack model on one thread is one thread once it runs
	[ -n "$why" ] || one_thread "$L/det_5x5.lapack.so"
	verdict lapack/openblas-threads-stopped

	# a symbolic batch is not static: Det stays on c, unless --shape binds it
	compile "$M/det_sym.onnx" lapack,c "$L/sym.so"
	[ -n "$why" ] || targets_are "$L/sym.json" Det c
	compile "$M/det_sym.onnx" lapack,c "$L/sym2.so" --shape N=2
	compile "$M/det_sym.onnx" c "$L/sym2.c.so" --shape N=2
	if [ -z "$why" ]; then
		targets_are "$L/sym2.json" Det lapack
		run "$L/sym2.so" "$L/sym2.out"
		run "$L/sym2.c.so" "$L/sym2.c.out"
		[ -n "$why" ] || same "$L/sym2.out" "$L/sym2.c.out"
	fi
	verdict lapack/symbolic-batch

	# lapack alone cannot run the Add: exit 1 naming the node
	"$C" compile --search none "$M/det_two.onnx" -o "$L/alone.so" --target lapack >"$T/out" 2>"$T/err"
	st=$?
	[ $st -eq 1 ] || bad "exit $st, expected 1"
	grep -q "add0.*no target in the list supports this op" "$T/err" ||
		bad "stderr: $(head -n 1 "$T/err")"
	[ ! -e "$L/alone.so" ] || bad "alone.so was written"
	verdict lapack/alone-rejects-add

	# the ONNX backend tests of Det, on lapack
	"$C" conformance --target lapack,c "$ONNXDATA"/node/test_det* >"$T/conf" 2>&1
	st=$?
	[ $st -eq 0 ] || bad "exit $st: $(grep -v '^PASS' "$T/conf" | head -n 1)"
	grep -qx "conformance: 2 passed, 0 failed" "$T/conf" || bad "$(tail -n 1 "$T/conf")"
	verdict lapack/conformance
fi

# --- blas ---
# MatMul (vectors, batches, numpy batch broadcasting, symbolic batches), Gemm
# (transA/transB, alpha/beta, C of every broadcast shape, no C) and Conv
# (group 1/2/C, strides, dilations, asymmetric and SAME_UPPER pads, 1x1, bias
# or not, symbolic batch) through OpenBLAS. Every model of
# testdata/backends/make_blas_models.py is compiled for c and for blas,c and
# run on the same inputs: both must match the float64 numpy reference and each
# other (rtol 1e-4, atol 1e-4), and the op's partitions must be on blas
# (float64 on c). Symbolic models also run on random inputs at several --shape
# N=... (c and blas,c alike), the *_par models (big enough to split) with 2, 3
# and 1 threads against numpy. The epi_* models add the elementwise ops that
# patterns/blas.pat fuses as epilogues (bias vectors, per-channel and
# residual adds, Relu, Clip, Sigmoid, LeakyRelu, HardSigmoid, Tanh) and
# those it must not fuse (an Add that widens the result, a result that is
# also a graph output); their blas partitions must come from the expected
# rules. blas alone must refuse what it cannot fuse, a user rule given with
# --patterns must fuse a Neg, and the ONNX backend tests of MatMul, Gemm and
# Conv pass on blas,c.

# blas_same WANT GOT WHAT: every WANT/*.npy matches GOT/ (rtol 1e-4, atol 1e-4)
blas_same() {
	r=$("$PY" "$ROOT/testdata/backends/make_blas_models.py" compare "$1" "$2" 2>&1) ||
		bad "$3: $r"
}

if ! wanted blas; then
	:
elif ! available blas; then
	echo "ok   backends/blas skipped: $("$C" targets | awk '/^blas \(/ { on = 1; next }
		on && /^  status: / { sub(/^  status: */, ""); print; exit }')"
elif ! "$PY" "$ROOT/testdata/backends/make_blas_models.py" "$T/blas/models" \
	>"$T/blas-gen.log" 2>&1; then
	echo "FAIL backends/blas/make-models: $(tail -n 1 "$T/blas-gen.log")"
	t_failed=$((t_failed + 1))
else
	B=$T/blas
	for d in "$B"/models/*; do
		m=$(basename "$d")
		op=$(cat "$d/op")
		want=$(cat "$d/expect")
		ins=
		for f in "$d"/in/*.npy; do
			ins="$ins --input $(basename "$f" .npy)=$f"
		done
		compile "$d/model.onnx" c "$B/$m.c.so"
		compile "$d/model.onnx" blas,c "$B/$m.blas.so"
		if [ -z "$why" ]; then
			# shellcheck disable=SC2086
			run "$B/$m.c.so" "$B/$m.c.out" $ins
			# shellcheck disable=SC2086
			run "$B/$m.blas.so" "$B/$m.blas.out" $ins
		fi
		if [ -z "$why" ]; then
			blas_same "$d/ref" "$B/$m.blas.out" "blas,c vs numpy"
			blas_same "$d/ref" "$B/$m.c.out" "c vs numpy"
			blas_same "$B/$m.c.out" "$B/$m.blas.out" "blas,c vs c"
			r=$("$PY" "$ROOT/testdata/backends/make_blas_models.py" target \
				"$B/$m.blas.json" "$op" 2>&1)
			[ "$r" = "$want" ] || bad "$op partitions on '$r', expected '$want'"
			r=$("$PY" "$ROOT/testdata/backends/make_blas_models.py" target \
				"$B/$m.c.json" "$op" 2>&1)
			[ "$r" = c ] || bad "--target c: $op partitions on '$r'"
		fi
		if [ -z "$why" ] && [ -f "$d/rules" ]; then
			r=$("$PY" "$ROOT/testdata/backends/make_blas_models.py" rules \
				"$B/$m.blas.json" 2>&1)
			[ "$r" = "$(cat "$d/rules")" ] ||
				bad "blas partitions by rules '$r', expected '$(cat "$d/rules")'"
		fi
		verdict "blas/$m"
	done

	# symbolic batches on random inputs: same seed, same inputs through both
	for m in mm_sym mm_sym_fold conv_sym conv_sym_par epi_mm_sym_sig epi_conv_sym_tanh; do
		for n in 5 1 3; do
			[ -n "$why" ] && break
			run "$B/$m.c.so" "$B/$m.c.r$n" --shape N=$n --seed 11
			run "$B/$m.blas.so" "$B/$m.blas.r$n" --shape N=$n --seed 11
			[ -n "$why" ] || blas_same "$B/$m.c.r$n" "$B/$m.blas.r$n" "N=$n: blas,c vs c"
		done
		verdict "blas/$m-random-N"
	done

	# the work splits over the kernel's threads: the products of a batch, the
	# groups of a conv's image (the (image, group) pairs of a 1x1 conv), column
	# or row blocks of one product, the im2col rows; 2 and 3 threads (uneven
	# blocks) against numpy, then 1 again
	for d in "$B"/models/*_par "$B"/models/conv_g1 "$B"/models/mm_bcast_mixed; do
		m=$(basename "$d")
		ins=
		for f in "$d"/in/*.npy; do
			ins="$ins --input $(basename "$f" .npy)=$f"
		done
		for th in $(t_list "2 3 1" 3); do
			[ -n "$why" ] && break
			# shellcheck disable=SC2086
			run "$B/$m.blas.so" "$B/$m.blas.t$th" --threads $th $ins
			[ -n "$why" ] || blas_same "$d/ref" "$B/$m.blas.t$th" "--threads $th"
		done
		verdict "blas/$m-threads"
	done

	# a conv's im2col scratch is planned in the workspace (OUT.json lists it
	# as the kernel's scratch: C*kh*kw*OH*OW floats), not allocated by a run;
	# a 1x1 conv, which multiplies its input itself, has none
	r=$("$PY" -c 'import json, sys
for f in sys.argv[1:]:
    ks = [k for p in json.load(open(f))["partitions"] for k in p["kernels"]
          if "blas_conv2d" in k["name"]]
    print(" ".join(str(s["shape"]) for k in ks for s in k.get("scratch", [])) or "none")
' "$B/conv_7x7_s2.blas.json" "$B/conv_1x1.blas.json" 2>&1 | tr '\n' ' ')
	[ "$r" = "[14700] none " ] || bad "im2col scratch '$r', expected '[14700] none '"
	verdict blas/im2col-scratch-planned

	# OpenBLAS's own threads are stopped at the first call (they spin for a
	# tenth of a second after the library loads, against the model's pool:
	# mlp ran its 2-thread kernels at half speed meanwhile): a bench of a
	# blas model on one thread is one thread once it runs
	one_thread "$B/conv_1x1.blas.so"
	verdict blas/openblas-threads-stopped

	# a residual Add and a Relu or Clip after the anchor are the helper's:
	# it applies them to each block of the output it has just computed,
	# while the block is in cache (the models above check the values), so
	# the kernel is the call alone; other epilogues stay the ops' own loops
	# over the whole output, after the call
	for m in epi_conv_tiles_par epi_mm_res_tiles_par epi_gemm_tiles_par epi_conv_res_relu \
		epi_conv_bias_relu epi_gemm_clip epi_conv_bias_res_leaky epi_mm_bias_relu; do
		[ -n "$why" ] && break
		compile "$B/models/$m/model.onnx" blas,c "$B/$m.ir.so" --dump-ir "$B/$m.ir"
		[ -n "$why" ] && break
		r=$(awk '/^kernel k[0-9]*_blas_/ { on = 1; next } on && /^}/ { exit }
			on && /collagec_blas_/ { c++ } on && /^\tfor / { l++ }
			END { print c + 0, l + 0 }' "$B/$m.ir/10-lower.tir")
		case $m in
		epi_conv_bias_res_leaky|epi_mm_bias_relu) w="1 2" ;;
		*) w="1 0" ;;
		esac
		[ "$r" = "$w" ] || bad "$m: blas kernel has (calls, loops) '$r', expected '$w'"
	done
	verdict blas/epilogue-in-blocks

	# blas alone cannot run an Add that widens the MatMul's result: exit 1
	# naming it; the Relu between two MatMuls it fuses into the first
	"$C" compile --search none "$B/models/epi_mm_widen/model.onnx" -o "$B/alone.so" --target blas \
		>"$T/out" 2>"$T/err"
	st=$?
	[ $st -eq 1 ] || bad "exit $st, expected 1"
	grep -q "'widen' (Add): no target in the list supports this op" "$T/err" ||
		bad "stderr: $(head -n 1 "$T/err")"
	[ ! -e "$B/alone.so" ] || bad "alone.so was written"
	compile "$B/models/mm_two/model.onnx" blas "$B/alone2.so"
	[ -n "$why" ] || [ "$("$PY" "$ROOT/testdata/backends/make_blas_models.py" rules \
		"$B/alone2.json")" = "blas.matmul blas.matmul_act" ] ||
		bad "mm_two on blas alone: rules $("$PY" \
			"$ROOT/testdata/backends/make_blas_models.py" rules "$B/alone2.json")"
	verdict blas/alone-rejects-what-it-cannot-fuse

	# a user rule (--patterns) fuses the Neg no built-in rule takes
	d=$B/models/epi_mm_neg
	printf 'target blas\nmm_neg = Neg(MatMul(*, *))\n' >"$B/user.pat"
	"$C" compile --search none "$d/model.onnx" -o "$B/user.so" --target blas,c --patterns "$B/user.pat" \
		>"$T/out" 2>"$T/err" || bad "compile: $(head -n 1 "$T/err")"
	[ -n "$why" ] || run "$B/user.so" "$B/user.out" --input "a=$d/in/a.npy"
	[ -n "$why" ] || blas_same "$d/ref" "$B/user.out" "user rule vs numpy"
	[ -n "$why" ] || [ "$("$PY" "$ROOT/testdata/backends/make_blas_models.py" rules \
		"$B/user.json")" = "blas.mm_neg" ] || bad "rules: $("$PY" \
			"$ROOT/testdata/backends/make_blas_models.py" rules "$B/user.json")"
	verdict blas/user-patterns

	# 'clear' drops the built-in rules: with only a MatMul rule, Conv stays on c
	d=$B/models/epi_conv_bias_relu
	printf 'target blas\nclear\nonly_mm = MatMul(*, *)\n' >"$B/clear.pat"
	compile "$d/model.onnx" blas,c "$B/clear.so" --patterns "$B/clear.pat"
	[ -n "$why" ] || targets_are "$B/clear.json" Conv c
	verdict blas/user-patterns-clear

	# the ONNX backend tests of MatMul, Gemm and float Conv, on blas
	"$C" conformance --target blas,c "$ONNXDATA"/node/test_matmul_[0-9]d \
		"$ONNXDATA"/node/test_gemm_* "$ONNXDATA"/node/test_basic_conv_with_* \
		"$ONNXDATA"/node/test_basic_conv_without_* "$ONNXDATA"/node/test_conv_with_* \
		>"$T/conf" 2>&1
	st=$?
	[ $st -eq 0 ] || bad "exit $st: $(grep -v '^PASS' "$T/conf" | head -n 1)"
	grep -qx "conformance: 20 passed, 0 failed" "$T/conf" || bad "$(tail -n 1 "$T/conf")"
	verdict blas/conformance
fi

# --- dnnl ---
# Conv (1-D to 3-D, grouped, depthwise, dilated, padded, strided, 1x1,
# symbolic batch),
# MatMul (2-D, a batch folded into the rows, a batch on both inputs) and Gemm
# (transA/transB, C as the bias, alpha without C) as oneDNN primitives, each
# followed by the epilogue ops patterns/dnnl.pat fuses as post-ops: every
# activation kind, Clip, a constant per-channel bias, a residual, a
# per-channel input, a scalar; and the standalone ops, one primitive each:
# MaxPool and AveragePool (1-3 spatial dims, pads, strides, dilations,
# ceil_mode, count_include_pad), the global pools, BatchNormalization,
# LayerNormalization, Softmax and LogSoftmax, LRN, each eltwise op and
# ConvTranspose (1-D and 2-D, groups, strides, pads, dilations,
# output_padding); and chains of them (chain_*) whose values between dnnl
# kernels stay in oneDNN's blocked layout, unless a graph output, through
# squeeze-and-excitation's per-channel scale (se_*, scale_edges); pools of a
# Conv's blocked output (bpool_*: kernels 1-D, 2x2 to 5x5, strides 1 to 3,
# pads, dilations, ceil_mode, count_include_pad, NaNs, a blocked or plain
# y), which run rt_dnnl.h's own kernel, or oneDNN's where the channels are
# no whole blocks; 3x3 stride-1 Convs (wino_*: padded channels, uneven
# pads, plain and blocked x, y and residuals, each post-op the transforms
# apply) that run by Winograd, oneDNN's or collagec's around a oneDNN
# matmul, and with -winograd=0 direct.
# Every model of
# testdata/backends/make_dnnl_models.py is compiled for c and for dnnl,c: the
# dnnl,c build must reproduce the c build's outputs (collagec run --check,
# rtol 1e-3, atol 1e-4) and numpy's, its partitions must be on the target in
# 'expect' (dnnl; c for what the rule refuses: a Gemm with beta 2, a
# broadcast MatMul batch, an Add that broadcasts along W, an AveragePool
# whose ceil_mode overhang count_include_pad would count, a LayerNorm Scale
# that broadcasts, a Clip bound computed at run time, an even LRN size, a
# ConvTranspose with output_shape) and come from the
# expected rules. Then the symbolic models at several --shape N=... against
# c, the *_par models on 2, 3 and 1 threads, and the ONNX backend tests of
# MatMul, Gemm and Conv and of the standalone ops on dnnl,c.

if ! wanted dnnl; then
	:
elif ! available dnnl; then
	echo "ok   backends/dnnl skipped: $("$C" targets | awk '/^dnnl \(/ { on = 1; next }
		on && /^  status: / { sub(/^  status: */, ""); print; exit }')"
elif ! "$PY" "$ROOT/testdata/backends/make_dnnl_models.py" "$T/dnnl/models" \
	>"$T/dnnl-gen.log" 2>&1; then
	echo "FAIL backends/dnnl/make-models: $(tail -n 1 "$T/dnnl-gen.log")"
	t_failed=$((t_failed + 1))
else
	D=$T/dnnl
	GEN=$ROOT/testdata/backends/make_dnnl_models.py
	# dnnl_verbose SO M: SO run on model M's inputs, oneDNN's log in $T/verbose
	dnnl_verbose() {
		_ins=
		for _f in "$D/models/$2"/in/*.npy; do
			_ins="$_ins --input $(basename "$_f" .npy)=$_f"
		done
		# shellcheck disable=SC2086
		ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$1" $_ins >"$T/verbose" 2>&1 ||
			bad "$2: verbose run: $(tail -n 1 "$T/verbose")"
	}
	# threads_identical M: M's dnnl,c build (input x) writes the same y on 1, 2 and 3 threads
	threads_identical() {
		for _th in 1 2 3; do
			[ -n "$why" ] && break
			run "$D/$1.dnnl.so" "$D/$1.t$_th" --threads $_th --input x="$D/models/$1/in/x.npy"
			[ -n "$why" ] || [ "$_th" = 1 ] || cmp -s "$D/$1.t1/y.npy" "$D/$1.t$_th/y.npy" ||
				bad "$_th threads differ from 1"
		done
	}
	for d in "$D"/models/*; do
		m=$(basename "$d")
		op=$(cat "$d/op")
		ins=
		for f in "$d"/in/*.npy; do
			ins="$ins --input $(basename "$f" .npy)=$f"
		done
		compile "$d/model.onnx" c "$D/$m.c.so"
		compile "$d/model.onnx" dnnl,c "$D/$m.dnnl.so"
		# shellcheck disable=SC2086
		[ -n "$why" ] || run "$D/$m.c.so" "$D/$m.c.out" $ins
		# shellcheck disable=SC2086
		[ -n "$why" ] || "$C" run "$D/$m.dnnl.so" $ins --check "$D/$m.c.out" --rtol 1e-3 \
			--atol 1e-4 >"$T/out" 2>"$T/err" || bad "dnnl,c vs c: $(head -n 1 "$T/err")"
		# shellcheck disable=SC2086
		[ -n "$why" ] || run "$D/$m.dnnl.so" "$D/$m.dnnl.out" $ins
		[ -n "$why" ] || blas_same "$d/ref" "$D/$m.dnnl.out" "dnnl,c vs numpy"
		if [ -z "$why" ]; then
			r=$("$PY" "$GEN" target "$D/$m.dnnl.json" "$op" 2>&1)
			[ "$r" = "$(cat "$d/expect")" ] ||
				bad "$op partitions on '$r', expected '$(cat "$d/expect")'"
			r=$("$PY" "$GEN" rules "$D/$m.dnnl.json" 2>&1)
			[ "$r" = "$(cat "$d/rules")" ] ||
				bad "dnnl partitions by rules '$r', expected '$(cat "$d/rules")'"
		fi
		verdict "dnnl/$m"
	done

	# symbolic dims on random inputs: same seed, same inputs through both
	for m in conv_sym_clip mm_sym_fold_tanh avgpool_sym_incl gap_sym bnorm_sym lnorm_sym \
		logsoftmax_sym elt_elu_sym deconv_g2_dil_sym chain_blocked chain_padded \
		wino_chain wino_sym; do
		for n in 5 1 3; do
			[ -n "$why" ] && break
			run "$D/$m.c.so" "$D/$m.c.r$n" --shape N=$n --seed 11
			[ -n "$why" ] || "$C" run "$D/$m.dnnl.so" --shape N=$n --seed 11 \
				--check "$D/$m.c.r$n" --rtol 1e-3 --atol 1e-4 >"$T/out" 2>"$T/err" ||
				bad "N=$n: dnnl,c vs c: $(head -n 1 "$T/err")"
		done
		verdict "dnnl/$m-random-N"
	done
	# at N=160 wino_chain's Convs take their tiles in 2 and 3 chunks (rt_dnnl.h's
	# 8 MiB workspace), the last of 3 short
	run "$D/wino_chain.c.so" "$D/wino_chain.c.r160" --shape N=160 --seed 11
	[ -n "$why" ] || "$C" run "$D/wino_chain.dnnl.so" --shape N=160 --seed 11 \
		--check "$D/wino_chain.c.r160" --rtol 1e-3 --atol 1e-4 >"$T/out" 2>"$T/err" ||
		bad "N=160: dnnl,c vs c: $(head -n 1 "$T/err")"
	verdict "dnnl/wino_chain-chunks"

	# oneDNN's OpenMP team follows the kernel's threads: 2, 3, then 1 again
	for d in "$D"/models/*_par "$D"/models/mm_batch_res_leaky; do
		m=$(basename "$d")
		ins=
		for f in "$d"/in/*.npy; do
			ins="$ins --input $(basename "$f" .npy)=$f"
		done
		for th in $(t_list "2 3 1" 3); do
			[ -n "$why" ] && break
			# shellcheck disable=SC2086
			run "$D/$m.dnnl.so" "$D/$m.dnnl.t$th" --threads $th $ins
			[ -n "$why" ] || blas_same "$d/ref" "$D/$m.dnnl.t$th" "--threads $th"
		done
		verdict "dnnl/$m-threads"
	done

	# the values between chain_blocked's kernels stay in oneDNN's blocked
	# layout: its verbose log shows reorders of the input (2x8x12x12) and of
	# the pooled output (2x16x1), none of the values between (2x16x12x12,
	# 2x16x6x6)
	ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$D/chain_blocked.dnnl.so" \
		--input x="$D/models/chain_blocked/in/x.npy" >"$T/verbose" 2>&1 ||
		bad "verbose run: $(tail -n 1 "$T/verbose")"
	grep -q "exec,cpu,convolution" "$T/verbose" || bad "no oneDNN verbose log"
	if grep "exec,cpu,reorder" "$T/verbose" | grep -q -e ",2x16x12x12," -e ",2x16x6x6,"; then
		bad "a value between dnnl kernels was reordered"
	fi
	verdict dnnl/chain_blocked-layouts

	# chain_padded's values of 12 and 24 channels (t4: c3's summed operand)
	# stay blocked too, stored
	# padded to 16 and 32 channels (--dump-ir says so): no reorders of them;
	# the 20 channels that its grouped Conv reads stay plain
	"$C" compile --search none "$D/models/chain_padded/model.onnx" --target dnnl,c -o "$T/padded.so" \
		--dump-ir "$T/padded-ir" >"$T/out" 2>&1 || bad "compile: $(head -n 1 "$T/out")"
	for v in s1:16 a2:16 t4:32 r:32 p:32; do
		grep -q "'${v%%:*}' in dnnl's layout 1 (plan_layouts), stored with ${v#*:} channels" \
			"$T"/padded-ir/* || bad "--dump-ir: ${v%%:*} not blocked in ${v#*:} channels"
	done
	if grep -q "'t5' in dnnl's layout" "$T"/padded-ir/*; then
		bad "the grouped Conv's x was blocked"
	fi
	ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$D/chain_padded.dnnl.so" \
		--input x="$D/models/chain_padded/in/x.npy" >"$T/verbose" 2>&1 ||
		bad "verbose run: $(tail -n 1 "$T/verbose")"
	grep -q "exec,cpu,convolution" "$T/verbose" || bad "no oneDNN verbose log"
	if grep "exec,cpu,reorder" "$T/verbose" |
		grep -q -e ",2x12x10x10," -e ",2x24x10x10," -e ",2x24x5x5,"; then
		bad "a padded value between dnnl kernels was reordered"
	fi
	if grep -q "exec,cpu,pooling" "$T/verbose"; then
		bad "the padded blocked x ran oneDNN's pooling"
	fi
	verdict dnnl/chain_padded-layouts

	# chain_runtime_w's middle Conv takes its weights at run time (an
	# input, as pass_fold_scale makes them): the values it reads and writes
	# (a1, t2) stay blocked like the others' edges, its weights are
	# reordered by each run, and oneDNN runs no reference convolution
	# (ref:any, with a blocked x and plain weights: 200 times slower)
	"$C" compile --search none "$D/models/chain_runtime_w/model.onnx" --target dnnl,c \
		-o "$T/rtw.so" --dump-ir "$T/rtw-ir" >"$T/out" 2>&1 ||
		bad "compile: $(head -n 1 "$T/out")"
	for v in a1 t2; do
		grep -q "'$v' in dnnl's layout" "$T"/rtw-ir/* || bad "$v was not blocked"
	done
	ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$T/rtw.so" \
		--input x="$D/models/chain_runtime_w/in/x.npy" \
		--input w2="$D/models/chain_runtime_w/in/w2.npy" >"$T/verbose" 2>&1 ||
		bad "verbose run: $(tail -n 1 "$T/verbose")"
	grep -q "exec,cpu,convolution" "$T/verbose" || bad "no oneDNN verbose log"
	! grep -q "exec,cpu,convolution,ref" "$T/verbose" || bad "a reference convolution ran"
	grep "exec,cpu,reorder" "$T/verbose" | grep -q ",8x16x1x1," ||
		bad "the run-time weights were not reordered"
	! grep "exec,cpu,reorder" "$T/verbose" | grep -q -e ",2x16x10x10," ||
		bad "a value between dnnl kernels was reordered"
	verdict dnnl/chain_runtime_w-layouts

	# squeeze-and-excitation (se_*): the depthwise Conv's output, the
	# scaled one (and se_block_c12's second scale, padded to 16 channels)
	# stay blocked from the Conv through the dnnl.se kernel (or se_leaky's
	# pool, Convs and scale) into the projection: only the graph input x is
	# reordered; se_fold's and se_hswish_fold's projections take their
	# scaled weights at run time, and run no reference convolution;
	# scale_edges' Muls read a plain input and write a plain output,
	# blocked at their other edge, with no reorder at all
	for m in se_block:a1,m:2x16x10x10 se_block_c12:a1,m,mk:2x12x10x10 \
		se_fold:a1:1x16x10x10 se_silu_hsig:a1,m:2x24x10x10 \
		se_hswish_fold:a1:1x24x10x10 se_leaky:a1,m:2x16x10x10 \
		scale_edges:m,a:2x12x5x5; do
		vals=${m#*:}
		shape=${vals#*:}
		vals=${vals%%:*}
		m=${m%%:*}
		"$C" compile --search none "$D/models/$m/model.onnx" --target dnnl,c \
			-o "$T/$m.so" --dump-ir "$T/$m-ir" >"$T/out" 2>&1 ||
			bad "$m: compile: $(head -n 1 "$T/out")"
		for v in $(echo "$vals" | tr , ' '); do
			grep -q "'$v' in dnnl's layout" "$T/$m-ir"/* || bad "$m: $v was not blocked"
		done
		dnnl_verbose "$T/$m.so" "$m"
		grep -q "exec,cpu,convolution" "$T/verbose" || bad "$m: no oneDNN verbose log"
		! grep -q "exec,cpu,convolution,ref" "$T/verbose" ||
			bad "$m: a reference convolution ran"
		n=$(grep "exec,cpu,reorder" "$T/verbose" | grep -c ",$shape,")
		want=1
		[ "$m" = scale_edges ] && want=0
		[ "$n" = "$want" ] || bad "$m: $n reorders of $shape values, expected $want"
	done
	verdict dnnl/se-layouts

	# a dnnl.se kernel's result is the same on any number of threads: each
	# channel pooled, each GEMV row summed and each product made by one
	# thread in a fixed order (se_only_par splits all of them at 2 and 3)
	threads_identical se_only_par
	verdict dnnl/se-threads-identical

	# a swish ending a Conv's post-ops runs as rt_dnnl.h's pass over the
	# primitive's dst (rt_dnnl_own_swish), not as oneDNN's post-op: none
	# in oneDNN's log, while silu_chain's a1 and a2 stay blocked (padded to
	# 32 channels on AVX-512: the padding must stay zero for the next Conv)
	# and mm_silu's MatMul takes it too; its result is the same on 1, 2
	# and 3 threads
	m=silu_chain
	"$C" compile --search none "$D/models/$m/model.onnx" --target dnnl,c -o "$T/$m.so" \
		--dump-ir "$T/$m-ir" >"$T/out" 2>&1 || bad "compile: $(head -n 1 "$T/out")"
	for v in a1 a2; do
		grep -q "'$v' in dnnl's layout" "$T/$m-ir"/* || bad "$v was not blocked"
	done
	for m in silu_chain mm_silu conv_res_silu; do
		dnnl_verbose "$D/$m.dnnl.so" "$m"
		grep -q -e "exec,cpu,convolution" -e "exec,cpu,matmul" "$T/verbose" ||
			bad "$m: no oneDNN verbose log"
		! grep -q "eltwise_swish" "$T/verbose" || bad "$m: oneDNN ran the swish"
	done
	threads_identical silu_chain
	verdict dnnl/swish-pass

	# a pool of a blocked x runs rt_dnnl.h's kernel, not oneDNN's pooling
	# (oneDNN's verbose log shows none): on whole blocks of channels (16
	# and 32: whole with AVX2's 8 and AVX-512's 16) and on a padded last
	# block (12, and 24 with AVX-512), writing y plain (bpool_max_c12) or
	# blocked (the _tail ones)
	for m in bpool_max_k3s2p1 bpool_max_k3s2p1_tail bpool_avg_excl_k5s1p2 bpool_max_1d \
		bpool_max_par bpool_max_nan bpool_gmp bpool_max_c12 bpool_avg_c12_tail \
		bpool_max_k5s3_dil_tail; do
		ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$D/$m.dnnl.so" \
			--input x="$D/models/$m/in/x.npy" >"$T/verbose" 2>&1 ||
			bad "$m: verbose run: $(tail -n 1 "$T/verbose")"
		grep -q "exec,cpu,convolution" "$T/verbose" || bad "$m: no oneDNN verbose log"
		if grep -q "exec,cpu,pooling" "$T/verbose"; then
			bad "$m: a blocked x ran oneDNN's pooling"
		fi
	done
	verdict dnnl/bpool-kernel

	# 3x3 stride-1 Convs run by Winograd: oneDNN's where it has one (AVX-512
	# hosts; its verbose log names the algorithm), else collagec's around a
	# oneDNN matmul of 36 batches (rt_dnnl_wino), the only such matmuls in
	# these models; their 'wino' file says how many Convs must, and
	# -winograd=0 runs them all direct
	for d in "$D"/models/wino_*; do
		m=$(basename "$d")
		ins=
		for f in "$d"/in/*.npy; do
			ins="$ins --input $(basename "$f" .npy)=$f"
		done
		for opt in "" " -winograd=0"; do
			so=$D/$m.dnnl.so want=$(cat "$d/wino")
			if [ -n "$opt" ]; then
				so=$D/$m.direct.so want=0
				compile "$d/model.onnx" "dnnl$opt,c" "$so"
			fi
			# shellcheck disable=SC2086
			[ -n "$why" ] || ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$C" run "$so" $ins \
				>"$T/verbose" 2>&1 || bad "$m$opt: verbose run: $(tail -n 1 "$T/verbose")"
			[ -n "$why" ] && break
			n=$(grep -c -e "exec,cpu,convolution,.*alg:convolution_winograd" \
				-e "exec,cpu,matmul,.*,36x[0-9]*x[0-9]*:36x" "$T/verbose")
			[ "$n" = "$want" ] || bad "$m$opt: $n Convs ran by Winograd, expected $want"
			[ -n "$opt" ] || continue
			# shellcheck disable=SC2086
			run "$so" "$D/$m.direct.out" $ins
			[ -n "$why" ] || blas_same "$d/ref" "$D/$m.direct.out" "direct vs numpy"
		done
		verdict "dnnl/$m-winograd"
	done

	# one handle at several batch sizes in turn (testdata/backends/dnnl_shapes.c):
	# each size gets primitives of its own, kept side by side, so every item's
	# output stays what the first run gave it
	cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" \
		"$ROOT/testdata/backends/dnnl_shapes.c" -o "$D/shapes" -ldl -lm >"$T/cc.log" 2>&1 ||
		bad "cc dnnl_shapes.c: $(head -n 1 "$T/cc.log")"
	for m in chain_blocked chain_padded mm_sym_fold_tanh conv_sym_clip wino_sym; do
		[ -n "$why" ] && break
		"$D/shapes" "$D/$m.dnnl.so" 2 5 2 5 3 1 >"$T/out" 2>&1 ||
			bad "$m: $(head -n 1 "$T/out")"
	done
	verdict dnnl/shapes-one-handle

	# closing the last handle gives back the kernels' primitives and
	# reordered weights (rt_dnnl_release_all): mm_big_w's 2 MiB of weights
	# reordered, at most 1 MiB left (oneDNN's engine, its primitive cache),
	# and open, run, close twice more neither grows it nor changes an output
	[ -n "$why" ] || "$D/shapes" -reopen 1048576 "$D/mm_big_w.dnnl.so" 2 5 2 5 3 1 \
		>"$T/out" 2>&1 || bad "$(head -n 1 "$T/out")"
	verdict dnnl/close-releases-caches

	# and it makes them once per size: the primitives oneDNN creates (its
	# verbose level 2) for N=2,5,2,5,2 are those for N=2,5; each run reorders
	# its edges alone: chain_blocked's input (at most 1 reorder a run: none
	# where the first Conv reads plain x itself; its global pool writes its
	# plain output itself). The constant weights are reordered once
	# per layout oneDNN picks for them, whatever the sizes: the entries of a
	# kernel share them (rt_dnnl.h, struct rt_dnnl_wei). wsig lists the weight
	# reorders of a log (any reorder but of an [N, ...] value), as layouts and
	# dims; a weight reordered into the same layout for N=2 and N=5 (with AVX2,
	# oneDNN 2.6 picks ABcd8b8a and Abcde8a for both) is reordered once in
	# all, one into two layouts once per layout: so the reorders of N=2,5 and
	# of N=2,5,2,5,2, and their creations, are per line of wsig the most that
	# N=2 alone or N=5 alone did, but for a Winograd layout, which is one per
	# size (both counts). Two weights alike (c3's and c5's 16x16x1x1) count
	# twice.
	for ns in 2 5 "2 5" "2 5 2 5 2"; do
		# shellcheck disable=SC2086
		ONEDNN_VERBOSE=2 DNNL_VERBOSE=2 "$D/shapes" "$D/chain_blocked.dnnl.so" $ns \
			>"$T/v.$(echo $ns | tr ' ' _)" 2>&1 || bad "verbose run N=$ns failed"
	done
	v2=$T/v.2_5
	v5=$T/v.2_5_2_5_2
	c2=$(grep -c '^onednn_verbose,create' "$v2")
	c5=$(grep -c '^onednn_verbose,create' "$v5")
	[ "$c2" -gt 0 ] || bad "no oneDNN create lines in the verbose log"
	[ "$c2" = "$c5" ] || bad "N=2,5 created $c2 primitives, N=2,5,2,5,2 $c5"
	# wsig LOG exec|create
	wsig() {
		grep "^onednn_verbose,$2[^,]*,cpu,reorder," "$1" |
			awk -F, '$(NF-1) !~ /^[25]x/ { gsub(/ /, "|", $7); print $7 "," $(NF-1) }' |
			sort
	}
	# (a Winograd layout, "wino", depends on the batch too: oneDNN picks it
	# on AVX-512, and it is one layout per size, which verbose prints alike)
	want=$({ wsig "$T/v.2" exec | uniq -c; wsig "$T/v.5" exec | uniq -c; } |
		awk '$2 ~ /::wino:/ { m[$2] += $1; next }
		     $1 > m[$2] { m[$2] = $1 } END { for (s in m) n += m[s]; print n + 0 }')
	[ "$want" -gt 0 ] || bad "no weights reordered for N=2"
	for v in "$v2" "$v5"; do
		for what in exec create; do
			got=$(wsig "$v" $what | wc -l)
			[ "$got" = "$want" ] ||
				bad "$(basename "$v"): weight reorders ($what) $got, expected $want"
		done
	done
	# the edges: what one run reorders (the input, at most: where the first
	# Conv wants it blocked), every run again
	e1=$(grep 'exec,cpu,reorder' "$T/v.2" | awk -F, '$(NF-1) ~ /^[25]x/' | wc -l)
	e5=$(grep 'exec,cpu,reorder' "$v5" | awk -F, '$(NF-1) ~ /^[25]x/' | wc -l)
	[ "$e1" -le 1 ] && [ "$e5" = $((5 * e1)) ] ||
		bad "5 runs reordered values at the edges $e5 times, one run $e1, expected 5 x (0 or 1)"
	verdict dnnl/cache-per-shape

	# every primitive but the reorders runs on the model's shared scratchpad
	# (oneDNN's user scratchpad mode), none on one of oneDNN's own
	grep '^onednn_verbose,create' "$v2" | grep -v ',reorder,' >"$T/creates"
	[ -s "$T/creates" ] || bad "no primitives created"
	if grep -v 'attr-scratchpad:user' "$T/creates" >"$T/libpad"; then
		bad "library-managed scratchpad: $(head -n 1 "$T/libpad")"
	fi
	verdict dnnl/scratchpad-user

	# oneDNN's OpenMP calls bind to the model's own entry points
	# (rt_dnnl.h), so its parallel regions run on the model's thread pool:
	# the dynamic linker's log shows libdnnl's GOMP_parallel and
	# omp_get_max_threads bound to the model; two runs on 2 threads give
	# the same bits (which thread runs a member's share does not change
	# it), and agree with the 1-thread run (oneDNN's kernels may split the
	# work differently for another thread count, so not bit for bit)
	m=chain_blocked
	mkdir -p "$T/omp"
	for th in 1 2 2b; do
		rm -rf "$T/omp/t$th"
		LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T/omp/bind$th" "$C" run "$D/$m.dnnl.so" \
			--output-dir "$T/omp/t$th" --npy --threads "${th%b}" \
			--input x="$D/models/$m/in/x.npy" >"$T/out" 2>"$T/err" ||
			bad "run --threads $th: $(head -n 1 "$T/err")"
	done
	for sym in GOMP_parallel omp_get_max_threads; do
		cat "$T"/omp/bind2.* 2>/dev/null | grep -q \
			"binding file [^ ]*libdnnl[^ ]* \[[0-9]*\] to [^ ]*/$m\.dnnl\.so \[[0-9]*\]: normal symbol .$sym'" ||
			bad "libdnnl's $sym is not bound to the model"
	done
	for f in "$T"/omp/t2/*.npy; do
		cmp -s "$f" "$T/omp/t2b/$(basename "$f")" ||
			bad "$(basename "$f"): two runs on 2 threads differ"
	done
	[ -n "$why" ] || same "$T/omp/t1" "$T/omp/t2"
	verdict dnnl/omp-team

	# two models with dnnl kernels in one process, loaded with dlopen: both
	# run on 2 threads, the first is unloaded while libdnnl (bound to it)
	# stays loaded for the second, which runs again, then the first is
	# loaded again (testdata/runtime/omp_two.c)
	if cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/omp_two.c" \
		-ldl -o "$T/omp/two" >"$T/omp/cc.log" 2>&1; then
		"$T/omp/two" "$D/chain_blocked.dnnl.so" "$D/chain_padded.dnnl.so" ||
			echo "FAIL backends/dnnl/omp-two-models: exit $?"
	else
		echo "FAIL backends/dnnl/omp-two-models: cc: $(head -n 1 "$T/omp/cc.log")"
	fi

	# a program with OpenMP code of its own, the model linked ahead of
	# libgomp: the model's entry points forward to libgomp, and the
	# program's dynamic loop and single block still run as OpenMP says
	# (testdata/runtime/omp_app.c); then the same program with the model
	# as a static archive, which defines no OpenMP functions
	cp "$D/chain_blocked.dnnl.so" "$T/omp/libompmodel.so"
	if cc -std=gnu11 -fopenmp -Wall -Wextra -Werror -I"$ROOT/runtime" \
		"$ROOT/testdata/runtime/omp_app.c" -L"$T/omp" -lompmodel -Wl,-rpath,"$T/omp" \
		-o "$T/omp/app" >"$T/omp/cc.log" 2>&1; then
		"$T/omp/app" || echo "FAIL backends/dnnl/omp-app: exit $?"
	else
		echo "FAIL backends/dnnl/omp-app: cc: $(head -n 1 "$T/omp/cc.log")"
	fi
	why=
	compile "$D/models/chain_blocked/model.onnx" dnnl,c "$T/omp/model.a"
	libs=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["compiler"]["ldlibs"])' \
		"$T/omp/model.json" 2>&1) || bad "OUT.json: $libs"
	# shellcheck disable=SC2086
	[ -n "$why" ] || cc -std=gnu11 -fopenmp -Wall -Wextra -Werror -I"$ROOT/runtime" \
		"$ROOT/testdata/runtime/omp_app.c" "$T/omp/model.a" $libs -lm \
		-o "$T/omp/app-a" >"$T/omp/cc.log" 2>&1 || bad "cc: $(head -n 1 "$T/omp/cc.log")"
	[ -n "$why" ] || "$T/omp/app-a" >"$T/omp/app-a.out" 2>&1 ||
		bad "$(head -n 1 "$T/omp/app-a.out")"
	if nm "$T/omp/model.a" 2>/dev/null | grep -q ' T \(GOMP_\|omp_\)'; then
		bad "the archive defines OpenMP functions"
	fi
	verdict dnnl/omp-archive

	# the ONNX backend tests of MatMul, Gemm and float Conv (1-D to 3-D), on dnnl
	"$C" conformance -j2 --target dnnl,c "$ONNXDATA"/node/test_matmul_[0-9]d \
		"$ONNXDATA"/node/test_gemm_* "$ONNXDATA"/node/test_basic_conv_with_* \
		"$ONNXDATA"/node/test_basic_conv_without_* "$ONNXDATA"/node/test_conv_with_* \
		"$ONNXDATA"/pytorch-converted/test_Conv[123]d* >"$T/conf" 2>&1
	st=$?
	[ $st -eq 0 ] || bad "exit $st: $(grep -v '^PASS' "$T/conf" | head -n 1)"
	grep -qx "conformance: 46 passed, 0 failed" "$T/conf" || bad "$(tail -n 1 "$T/conf")"
	verdict dnnl/conformance

	# the ONNX backend tests of the standalone ops (not training-mode
	# BatchNormalization nor MaxPool's Indices, which c refuses too)
	# shellcheck disable=SC2046
	"$C" conformance -j2 --target dnnl,c $(ls "$ONNXDATA/node" | grep -E \
		'^test_(maxpool|averagepool|globalaveragepool|globalmaxpool|batchnorm|layer_normalization|softmax|logsoftmax|lrn|relu|leakyrelu|clip|sigmoid|tanh|elu|hardsigmoid|hardswish|exp|sqrt|abs|round|gelu|convtranspose)(_|$)' |
		grep -v -e training_mode -e with_argmax | sed "s|^|$ONNXDATA/node/|") >"$T/conf" 2>&1
	st=$?
	[ $st -eq 0 ] || bad "exit $st: $(grep -v '^PASS' "$T/conf" | head -n 1)"
	grep -qx "conformance: 143 passed, 0 failed" "$T/conf" || bad "$(tail -n 1 "$T/conf")"
	verdict dnnl/conformance-ops
fi

# --- opencl ---
# Loop IR printed as OpenCL C and run through the OpenCL runtime (PoCL on the
# CPU): the models of testdata/backends/make_opencl_models.py (broadcasting,
# activations, reductions, softmax, pooling, conv, depthwise conv, batched
# MatMul, transpose/concat/gather, a symbolic batch) through c and opencl,c on
# the same random inputs (two seeds), every node on opencl, every kernel an
# NDRange; a missing device or platform (compile, collagec_open); handles
# sharing the program from C (testdata/backends/opencl_handles.c); and the
# ONNX node tests of those ops: each one passing on c passes on opencl,c.

# ocl_same_as_c M SEEDS SHAPES: $O/M.c.so and $O/M.ocl.so give the same
# outputs on random inputs of each seed, at each --shape (- = none)
ocl_same_as_c() {
	_om=$1 _seeds=$2 _shapes=$3
	for seed in $(t_list "$_seeds" "${_seeds%% *}"); do
		for sh in $_shapes; do
			[ -n "$why" ] && return
			set -- --seed "$seed"
			[ "$sh" = - ] || set -- "$@" --shape "$sh"
			run "$O/$_om.c.so" "$O/$_om.c.out" "$@"
			run "$O/$_om.ocl.so" "$O/$_om.ocl.out" "$@"
			[ -n "$why" ] || same "$O/$_om.ocl.out" "$O/$_om.c.out"
		done
	done
}

if ! wanted opencl; then
	:
elif ! available opencl; then
	echo "ok   backends/opencl skipped: $("$C" targets | awk '/^opencl \(/ { on = 1; next }
		on && /^  status: / { sub(/^  status: */, ""); print; exit }')"
elif ! "$PY" "$ROOT/testdata/backends/make_opencl_models.py" "$T/opencl/models" \
	>"$T/gen.log" 2>&1; then
	echo "FAIL backends/opencl/make-models: $(tail -n 1 "$T/gen.log")"
	t_failed=$((t_failed + 1))
else
	O=$T/opencl
	OM=$O/models

	# only_on JSON TARGET: every partition of the model is on TARGET
	only_on() {
		r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join(sorted(set(p["rule"] + "@" + p["target"] for p in ps
                          if p["target"] != sys.argv[2]))))' "$1" "$2" 2>&1)
		[ -z "$r" ] || bad "$(basename "$1"): not on $2: $r"
	}

	for m in add_bcast act_chain reduce softmax pool conv conv_dw matmul shape_ops sym_batch; do
		compile "$OM/$m.onnx" c "$O/$m.c.so"
		compile "$OM/$m.onnx" opencl,c "$O/$m.ocl.so" --keep-temps
		# the kept build directory: model.c with the OpenCL kernels
		kept=$(sed -n 's/.*build directory kept: //p' "$T/err")
		shapes=-
		[ $m = sym_batch ] && shapes="N=1 N=5"
		ocl_same_as_c "$m" "1 7" "$shapes"
		verdict opencl/$m-matches-c
		if [ -f "$O/$m.ocl.json" ]; then
			only_on "$O/$m.ocl.json" opencl
			only_on "$O/$m.c.json" c
		else
			bad "no $m.ocl.json"
		fi
		verdict opencl/$m-partitions
		# parallel loops (marked or proven) become NDRanges: no single work-item
		if [ -n "$kept" ] && [ -f "$kept/model.c" ]; then
			k=$(grep -c '"__kernel void' "$kept/model.c")
			nd=$(grep -c 'get_global_id(0)' "$kept/model.c")
			[ "$k" -gt 0 ] && [ "$k" = "$nd" ] ||
				bad "$nd of $k OpenCL kernels are NDRanges"
			# OpenCL C spellings: long, uchar, exp() and tanh() (overloaded)
			sed -n '/"__kernel/,/^\trt_ocl_[0-9A-Za-z_]*_consts, NULL, NULL/p' "$kept/model.c" >"$O/kernels.txt"
			! grep -q 'int64_t\|uint8_t\|expf(\|tanhf(' "$O/kernels.txt" ||
				bad "C spellings in the OpenCL kernels"
			rm -rf "$kept"
		else
			bad "no kept build directory"
		fi
		verdict opencl/$m-ndrange
	done

	# work-groups as GPUs get them (COLLAGEC_OPENCL_WORKGROUP: PoCL's CPU
	# device takes the driver's choice): NDRanges rounded up to whole groups
	# of 64 or of 4 (7 rounds down to a power of two), each kernel returning
	# past its loop's end; the outputs stay c's
	for g in 64 7; do
		export COLLAGEC_OPENCL_WORKGROUP=$g
		for m in conv conv_dw pool reduce softmax matmul shape_ops sym_batch; do
			shapes=-
			[ $m = sym_batch ] && shapes="N=1 N=5"
			ocl_same_as_c "$m" 1 "$shapes"
		done
		COLLAGEC_OPENCL_TRACE=1 "$C" run "$O/conv.ocl.so" >"$T/out" 2>"$T/err"
		grep -q "^collagec opencl: device .*, work-groups of up to $g$" "$T/err" ||
			bad "group $g: $(head -n 1 "$T/err")"
		unset COLLAGEC_OPENCL_WORKGROUP
	done
	verdict opencl/work-groups-rounded-up

	# the OpenCL C builds without a single compiler warning: with an empty
	# PoCL cache each model's program is compiled at open, and anything its
	# compiler says lands on the user's stderr
	for m in act_chain conv pool softmax; do
		[ -n "$why" ] && break
		rm -rf "$T/pocl-fresh"
		POCL_CACHE_DIR=$T/pocl-fresh "$C" run "$O/$m.ocl.so" >"$T/out" 2>"$T/err" ||
			bad "run $m: $(head -n 1 "$T/err")"
		[ -s "$T/err" ] && bad "$m: the OpenCL build said: $(head -n 1 "$T/err")"
	done
	verdict opencl/builds-without-warnings

	# a device that is not there, by index or kind (this machine has no GPU
	# in CI: PoCL's CPU device only): exit 4 at compile time, nothing written
	for d in 9 gpu; do
		"$C" compile --search none "$OM/act_chain.onnx" -o "$O/dev$d.so" \
			--target "opencl -device=$d,c" >"$T/out" 2>"$T/err"
		st=$?
		[ $st -eq 4 ] || bad "-device=$d: exit $st, expected 4"
		grep -q "no OpenCL device '$d' (.* found; collagec targets lists them)" "$T/err" ||
			bad "stderr: $(head -n 1 "$T/err")"
		[ ! -e "$O/dev$d.so" ] || bad "dev$d.so was written"
	done
	verdict opencl/missing-device

	# -device by kind and by part of the name `collagec targets` lists
	# ('_' for a blank): the same device, the same outputs. The part: the
	# name up to its first character that -device does not take (PoCL's
	# "pthread-skylake-avx512-Intel(R) Xeon(R) Processor" gives
	# pthread-skylake-avx512-Intel; "pthread-znver3-AMD EPYC 7B13 64-Core
	# Processor" all of it, blanks as '_')
	dev=$("$C" targets | sed -n 's/^  device:   0: \([A-Za-z0-9_. -]*\).*/\1/p' |
		sed 's/ *$//; s/ /_/g')
	[ -n "$dev" ] || bad "targets lists no device 0: $("$C" targets | grep -A14 '^opencl')"
	for d in cpu "$dev"; do
		[ -n "$why" ] && break
		compile "$OM/act_chain.onnx" "opencl -device=$d,c" "$O/act_$d.so"
		grep -q "\"opencl -device=$d\"" "$O/act_$d.json" ||
			bad "-device=$d: not in act_$d.json"
		run "$O/act_$d.so" "$O/act_$d.out" --seed 1
		run "$O/act_chain.c.so" "$O/act_chain.c.out" --seed 1
		[ -n "$why" ] || same "$O/act_$d.out" "$O/act_chain.c.out"
	done
	verdict opencl/device-by-kind-and-name

	# values stay on the device (COLLAGEC_OPENCL_TRACE=1 prints every copy
	# and wait): 3 runs in one process (bench: 1 warm-up, 2 runs).
	# act_chain, all on opencl: per run one upload (x), one download (y)
	# without a wait, and one wait at the run's end; conv: its two constants
	# uploaded as the model opens, not by a run; boundary (opencl, TopK on c, opencl): per
	# run x and TopK's values go up, Sigmoid's output comes back waited for
	# (c reads it), Exp's and Tanh's (model outputs) come back unwaited
	# ocl_trace M: the trace's lines of 3 runs of $O/M.ocl.so, counted, in $O/M.trace
	ocl_trace() {
		COLLAGEC_OPENCL_TRACE=1 "$C" bench "$O/$1.ocl.so" --runs 2 --warmup 1 \
			>"$T/out" 2>"$T/err" || bad "bench $1: $(head -n 1 "$T/err")"
		sed -n 's/^collagec opencl: //p' "$T/err" | grep -v '^device ' |
			sed 's/^k[0-9_A-Za-z]*: //; s/ b[0-9]*, [0-9]* bytes/ BUF/
				s/^open: upload constant .*/upload constant at open/' |
			sort | uniq -c | sed 's/^ *//' >"$O/$1.trace"
	}
	ocl_trace act_chain
	printf '%s\n' "3 download BUF" "3 upload BUF" "3 wait at the run's end" |
		cmp -s - "$O/act_chain.trace" || bad "act_chain: $(tr '\n' ';' <"$O/act_chain.trace")"
	ocl_trace conv
	printf '%s\n' "3 download BUF" "3 upload BUF" "2 upload constant at open" \
		"3 wait at the run's end" | cmp -s - "$O/conv.trace" ||
		bad "conv: $(tr '\n' ';' <"$O/conv.trace")"
	compile "$OM/boundary.onnx" c "$O/boundary.c.so"
	compile "$OM/boundary.onnx" opencl,c "$O/boundary.ocl.so"
	ocl_same_as_c boundary "1 7" -
	ocl_trace boundary
	printf '%s\n' "6 download BUF" "3 download BUF, wait" "6 upload BUF" \
		"3 wait at the run's end" | cmp -s - "$O/boundary.trace" ||
		bad "boundary: $(tr '\n' ';' <"$O/boundary.trace")"
	# a timed run (profiling: the measuring estimator times candidates so)
	# waits after each opencl step, so that its time holds its device work:
	# 2 runs of boundary's 2 opencl steps
	COLLAGEC_OPENCL_TRACE=1 "$C" bench "$O/boundary.ocl.so" --profile --runs 2 --warmup 0 \
		>"$T/out" 2>"$T/err" || bad "bench --profile: $(head -n 1 "$T/err")"
	n=$(grep -c "^collagec opencl: wait after a timed step" "$T/err")
	[ "$n" = 4 ] || bad "bench --profile: $n waits after timed steps, not 4"
	verdict opencl/values-stay-on-device

	# no OpenCL platform (an ICD loader with no vendors): unavailable, and a
	# model built before fails collagec_open with the init's message
	mkdir -p "$O/no-icd"
	OCL_ICD_VENDORS=$O/no-icd "$C" targets >"$T/out" 2>&1
	grep -q "status:   unavailable: no OpenCL platform found" "$T/out" ||
		bad "targets: $(grep -A1 '^opencl' "$T/out" | tail -n 1)"
	OCL_ICD_VENDORS=$O/no-icd "$C" compile --search none "$OM/act_chain.onnx" -o "$O/noicd.so" \
		--target opencl,c >"$T/out" 2>"$T/err"
	st=$?
	[ $st -eq 4 ] || bad "compile: exit $st, expected 4"
	grep -q "target 'opencl' is unavailable: no OpenCL platform found" "$T/err" ||
		bad "compile: $(head -n 1 "$T/err")"
	OCL_ICD_VENDORS=$O/no-icd "$C" run "$O/act_chain.ocl.so" >"$T/out" 2>"$T/err"
	st=$?
	[ $st -ne 0 ] || bad "run without a platform succeeded"
	grep -q "cannot open the model: kernel failure: opencl: no OpenCL platform" "$T/err" ||
		bad "run: $(head -n 1 "$T/err")"
	verdict opencl/no-platform

	# from C: two handles share the program, reopen after the last close,
	# two threads with their own handles
	if cc -std=c11 -I"$ROOT/runtime" "$ROOT/testdata/backends/opencl_handles.c" \
		"$O/act_chain.ocl.so" -lm -pthread -o "$O/handles" >"$T/err" 2>&1; then
		r=$("$O/handles" 2>&1)
		[ "$r" = ok ] || bad "opencl_handles: $r"
	else
		bad "cc opencl_handles.c: $(head -n 1 "$T/err")"
	fi
	verdict opencl/handles

	# ONNX node tests of the ops above: each passing on c passes on opencl,c
	# (the quick tier: a seeded third of them, of which more than 30 pass)
	for p in add sub mul div relu sigmoid tanh softmax logsoftmax reduce_mean reduce_max \
		reduce_sum_ maxpool averagepool globalaveragepool conv_ matmul gemm transpose \
		concat gather_ where clip batchnorm layer_normalization_2d; do
		for d in "$ONNXDATA"/node/test_$p*; do
			[ -d "$d" ] && echo "$d"
		done
	done >"$O/conf.list"
	if ! tier full; then
		t_shard "$SEED" 1/3 <"$O/conf.list" >"$O/conf.shard"
		mv "$O/conf.shard" "$O/conf.list"
	fi
	# shellcheck disable=SC2046
	set -- $(cat "$O/conf.list")
	"$C" conformance -j2 --target c "$@" >"$O/conf.c" 2>&1
	"$C" conformance -j2 --target opencl,c "$@" >"$O/conf.ocl" 2>&1
	r=$(awk '/^PASS / { if (FILENAME ~ /conf.c$/) c[$2] = 1; else o[$2] = 1 }
		END { for (t in c) if (!(t in o)) printf "%s ", t }' "$O/conf.c" "$O/conf.ocl")
	[ -z "$r" ] || bad "pass on c, not on opencl,c: $r"
	n=$(grep -c '^PASS' "$O/conf.c")
	[ "$n" -gt "$(t_list 100 30)" ] || bad "only $n tests pass on c: $(tail -n 1 "$O/conf.c")"
	verdict opencl/conformance

	# the register-tiled MatMul, Gemm and Conv (backends/opencl/
	# opencl_strategies.c) on the models of make_models.py's
	# opencl_tiled_models: edge tiles, vectors, batch broadcasting, symbolic
	# batches (N=1, 3, 5), transA/transB with and without C, 1x1, strides,
	# pads, depthwise, groups, dilations, SAME_UPPER, 1-D and 3-D. Each
	# matches c on two seeds, runs as NDRanges, and OUT.json names the
	# implementation of every MatMul/Gemm/Conv kernel (variants joined by +).
	OT=$O/tiled
	if ! PYTHONDONTWRITEBYTECODE=1 "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1])
import make_models; make_models.opencl_tiled_models(sys.argv[2])' \
		"$ROOT/testdata/backends" "$OT" >"$T/gen.log" 2>&1; then
		bad "$(tail -n 1 "$T/gen.log")"
		verdict opencl/tiled-make-models
	fi
	while read -r m impls <&3; do
		[ -f "$OT/$m.onnx" ] || bad "no $m.onnx"
		compile "$OT/$m.onnx" c "$O/$m.c.so"
		compile "$OT/$m.onnx" opencl,c "$O/$m.ocl.so" --keep-temps
		kept=$(sed -n 's/.*build directory kept: //p' "$T/err")
		shapes=-
		case $m in *sym*) shapes="N=1 N=3 N=5" ;; esac
		ocl_same_as_c "$m" "3 8" "$shapes"
		if [ -n "$kept" ] && [ -f "$kept/model.c" ]; then
			k=$(grep -c '"__kernel void' "$kept/model.c")
			nd=$(grep -c 'get_global_id(0)' "$kept/model.c")
			[ "$k" -gt 0 ] && [ "$k" = "$nd" ] ||
				bad "$nd of $k OpenCL kernels are NDRanges"
			rm -rf "$kept"
		elif [ -z "$why" ]; then
			bad "no kept build directory"
		fi
		if [ -z "$why" ]; then
			r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join("+".join(v["implementation"] for v in k["variants"])
               for p in ps if p["target"] == "opencl" and p["rule"] in ("MatMul", "Gemm", "Conv")
               for k in p["kernels"]))' "$O/$m.ocl.json" 2>&1)
			[ "$r" = "$impls" ] || bad "implementations '$r', expected '$impls'"
		fi
		verdict "opencl/tiled-$m"
	done 3<<'EOF'
ocl_mm_edge matmul.tile_4xn
ocl_mm_big matmul.tile_4xn
ocl_mm_vec_a matmul.tile_1xn
ocl_mm_vec_b matmul.generic
ocl_mm_small_n matmul.generic
ocl_mm_bcast matmul.tile_4xn
ocl_mm_sym matmul.tile_4xn
ocl_mm_sym_w matmul.tile_4xn
ocl_gemm_plain gemm.tile_4xn
ocl_gemm_ta gemm.tile_4xn
ocl_gemm_tb gemm.dot_1x4
ocl_gemm_tatb gemm.tile_4xn
ocl_gemm_m1 gemm.tile_1xn
ocl_gemm_sym gemm.dot_1x4 gemm.tile_4xn+gemm.tile_1xn
ocl_conv_1x1 conv.tile_1x1
ocl_conv_s2p1 conv.tile
ocl_conv_dw conv.tile_dw
ocl_conv_dw_s2 conv.tile_dw
ocl_conv_grp conv.tile
ocl_conv_dil conv.tile
ocl_conv_odd conv.tile
ocl_conv_wide conv.tile
ocl_conv_same conv.tile
ocl_conv_1d conv.tile
ocl_conv_3d conv.generic
ocl_conv_sym conv.tile
EOF
fi

# --- end ---

t_exit
