#!/bin/sh
# cuda.sh - the cuda target (backends/cuda). Compiling needs nvcc and CUDA's
# headers, running a GPU; without nvcc every test says it was skipped, and
# without a GPU (this machine kind) the run-time tests say so, one line
# each, while everything that compiles is checked:
#   targets             `collagec targets` says whether cuda runs here, and
#                       the default target list leaves it out when it cannot
#   MODEL-kernels       testdata/backends/make_opencl_models.py's models
#                       compiled with --target cuda,c: every node on cuda,
#                       every stage a grid-stride range, and the kept
#                       kernels.cu compiled again by nvcc (sm_80) with every
#                       warning an error
#   host-code-clean     model.c (rt_cuda.h and the launch code) compiled by
#                       cc with -Wall -Wextra -Werror
#   fatbin              OUT.so holds the fatbin nvcc made (sm_80, sm_90 code
#                       and compute_90 PTX), as a local symbol
#   values-stay-on-device  mnist_cnn all on cuda: what each launch is told
#                       (the flags of rt_cu_launch) uploads the model input
#                       once and copies back one output, the rest stays on
#                       the device; with --target cuda,c and c partitions
#                       between, the values that cross are copied and
#                       waited for at those boundaries only
#   deterministic       two compiles without caches give the same OUT.so
#   search-estimates    the default search over cuda,c: cuda's costs come
#                       from the analytic estimator, never measured, and
#                       OUT.json (search.not_measured) and -v say so;
#                       search-states-cap: past COLLAGEC_SEARCH_STATES
#                       states the search drops transitions and compiles;
#                       search-family: over cudnn,cublas,cuda the Convs go
#                       to cudnn, the MatMul to cublas (nominal rooflines)
#   cublas-mlp, cublas-bert_tiny  MatMul and Gemm on cublas (cuBLASLt) with
#                       their bias and Relu fused, the flags each call is
#                       given (values stay in the device memory cuda and
#                       cublas share), the host code clean
#   cudnn-mnist_cnn     Convs on cudnn with their bias and Relu fused, a
#                       MatMul and its bias on cublas, the flags of each
#                       call, nvcc and cc clean; cudnn-grouped: depthwise
#                       and residual Convs placed on cudnn; cudnn-clip: a
#                       Clip to [0, 6] as cuDNN's clipped Relu
#   mock-*              without a GPU too: models on cuda, cublas and cudnn
#                       run through mock libcuda, libcublasLt and libcudnn
#                       (testdata/cuda_mock: the CPU does the device's
#                       work), their outputs the c target's, one download
#                       per model output
#   run-MODEL           with a GPU, each model's outputs match the c
#                       target's; without one, "skipped: no GPU"
#   open-without-gpu    without a GPU, opening the model fails with the
#                       driver's absence named, exit 1, no crash
SUITE=cuda
. "$(dirname "$0")/lib.sh"

status=$("$C" targets 2>/dev/null | awk '/^cuda \(/ { on = 1; next }
	on && /^  status: / { sub(/^  status: */, ""); print; exit }')
case $status in
unavailable*)
	echo "ok   cuda skipped: $status"
	t_exit
	;;
esac
gpu=yes
case $status in "compiles, cannot run here"*) gpu= ;; esac

# --- what `targets` says, and the default list ---
"$PY" "$ROOT/testdata/gen_models.py" "$T" mnist_cnn bert_tiny >"$T/gen.log" 2>&1 ||
	bad "gen_models: $(tail -n 1 "$T/gen.log")"
if [ -z "$gpu" ]; then
	"$C" compile "$T/mnist_cnn.onnx" -o "$T/default.so" --search none -q 2>"$T/err" ||
		bad "default compile: $(head -n 1 "$T/err")"
	"$PY" -c 'import json, sys
t = json.load(open(sys.argv[1]))["compiler"]["targets"]
sys.exit("cuda" in [x.split()[0] for x in t])' "$T/default.json" 2>"$T/err" ||
		bad "cuda is in the default target list without a GPU: $(cat "$T/err")"
fi
verdict targets

# compile MODEL TARGETS OUT [ARGS...]: records failures; the kept build
# directory (--keep-temps) in $kept
compile() {
	_m=$1 _t=$2 _o=$3
	shift 3
	kept=
	"$C" compile --search none "$_m" -o "$_o" --target "$_t" "$@" >"$T/out" 2>"$T/err" ||
		bad "compile $(basename "$_m") --target $_t: $(head -n 1 "$T/err")"
	kept=$(sed -n 's/.*build directory kept: //p' "$T/err")
}
# run SO DIR: runs SO, outputs as .npy under DIR
run() {
	rm -rf "$2"
	"$C" run "$1" --output-dir "$2" --npy >"$T/out" 2>"$T/err" ||
		bad "run $(basename "$1"): $(head -n 1 "$T/err")"
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
    if x.shape != y.shape or not np.allclose(x, y, rtol=1e-4, atol=1e-5):
        print("%s differs" % os.path.basename(f))
        break
EOF
)
	[ -z "$r" ] || bad "$r"
}
nvcc=${COLLAGEC_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# nvcc_clean DIR: DIR/kernels.cu compiles with every warning an error
nvcc_clean() {
	"$nvcc" -cubin -std=c++17 -Werror all-warnings -arch=sm_80 -o "$T/check.cubin" \
		"$1/kernels.cu" \
		>"$T/nvcc.log" 2>&1 || bad "nvcc -Werror: $(grep -m1 'error\|warning' "$T/nvcc.log")"
}
# launches MODEL_C: per rt_cu_launch, its flags (inputs first) as
# "n_in:f0,f1,..."; one line each
launches() {
	"$PY" - "$1" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
for m in re.finditer(r"static const unsigned char flags\[\d+\] = \{([^}]*)\};.*?"
                     r"rt_cu_launch\(\"[^\"]*\", bufs, bytes, flags, (\d+), (\d+),", src, re.S):
    flags = [int(x) for x in m.group(1).replace(",", " ").split()]
    print("%s:%s" % (m.group(3), ",".join(map(str, flags[:int(m.group(2))]))))
EOF
}

# --- the opencl suite's models, on cuda ---
OM=$T/models
if ! "$PY" "$ROOT/testdata/backends/make_opencl_models.py" "$OM" >"$T/gen.log" 2>&1; then
	fail models "$(tail -n 1 "$T/gen.log")"
	t_exit
fi
for m in $(t_list "add_bcast act_chain reduce softmax pool conv conv_dw matmul shape_ops sym_batch" \
	"act_chain softmax conv matmul sym_batch"); do
	compile "$OM/$m.onnx" cuda,c "$T/$m.cu.so" --keep-temps
	r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join(sorted(set(p["target"] for p in ps if p["target"] != "cuda"))))' "$T/$m.cu.json" 2>&1)
	[ -z "$r" ] || bad "partitions not on cuda: $r"
	if [ -n "$kept" ] && [ -f "$kept/kernels.cu" ]; then
		k=$(grep -c '__global__ void' "$kept/kernels.cu")
		nd=$(grep -c 'rt_t += (int64_t)gridDim.x \* blockDim.x' "$kept/kernels.cu")
		[ "$k" -gt 0 ] && [ "$k" = "$nd" ] || bad "$nd of $k CUDA kernels are ranges"
		nvcc_clean "$kept"
		if [ "$m" = conv ]; then
			cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -I"$kept" \
				-I"$(dirname "$nvcc")/../include" "$kept/model.c" \
				>"$T/cc.log" 2>&1 || host="$(grep -m1 'error' "$T/cc.log")"
		fi
		if [ "$m" = matmul ]; then
			# the fatbin's entries (kind 2 ELF, 1 PTX; the arch at byte 28 of each)
			r=$("$PY" - "$kept/kernels.fatbin" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
magic, _, hs, size = struct.unpack_from("<IHHQ", b, 0)
got, off = [], hs
while magic == 0xBA55ED50 and off < hs + size:
    kind, _, ehs, esize = struct.unpack_from("<HHIQ", b, off)
    got.append("%s_%d" % ({1: "compute", 2: "sm"}.get(kind, "?"),
                          struct.unpack_from("<I", b, off + 28)[0]))
    off += ehs + esize
print("" if sorted(got) == ["compute_90", "sm_80", "sm_90"] else "entries %s" % got)
EOF
)
			[ -z "$r" ] || fat=$r
			nm "$T/$m.cu.so" | grep -q ' r rt_cuda_fatbin$' ||
				fat="${fat:-rt_cuda_fatbin is not a local symbol of OUT.so}"
		fi
		rm -rf "$kept"
	else
		bad "no kernels.cu kept"
	fi
	verdict $m-kernels
	if [ -n "$gpu" ]; then
		compile "$OM/$m.onnx" c "$T/$m.c.so"
		run "$T/$m.c.so" "$T/$m.c.out"
		run "$T/$m.cu.so" "$T/$m.cu.out"
		[ -n "$why" ] || same "$T/$m.cu.out" "$T/$m.c.out"
		verdict run-$m
	else
		echo "ok   cuda/run-$m skipped: no GPU (${status#*: })"
	fi
done
verdict host-code-clean "$host"
verdict fatbin "$fat"

# --- what each launch is told: values stay on the device ---
compile "$T/mnist_cnn.onnx" cuda,c "$T/mnist.cu.so" --keep-temps
if [ -n "$kept" ]; then
	launches "$kept/model.c" >"$T/launches"
	n=$(wc -l <"$T/launches")
	# inputs flagged 0 come from host code: only the model's own input
	up=$(awk -F: '{ n = split($2, f, ","); for (i = 1; i <= $1; i++) if (f[i] == 0) u++ }
		END { print u + 0 }' "$T/launches")
	[ "$n" -gt 3 ] || bad "$n launches in mnist_cnn"
	[ "$up" = 1 ] || bad "$up inputs copied from the host, expected 1 (the model input)"
	# every output: kept (4) for the next kernel, or the model output (16)
	grep -c 'flags\[[0-9]*\] = {[^}]* 8,' "$kept/model.c" >"$T/n" || true
	[ "$(cat "$T/n")" = 0 ] || bad "$(cat "$T/n") launches wait for an output"
	rm -rf "$kept"
fi
# bert_tiny with its int64 nodes on c: a value crossing to c is waited for
compile "$T/bert_tiny.onnx" cuda,c "$T/bert.cu.so" --keep-temps
if [ -n "$kept" ]; then
	"$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
k = set(p["target"] for p in ps)
sys.exit(0 if k == {"c", "cuda"} else "targets %s" % sorted(k))' "$T/bert.cu.json" 2>"$T/e" ||
		bad "bert_tiny: $(cat "$T/e")"
	nvcc_clean "$kept"
	rm -rf "$kept"
fi
verdict values-stay-on-device

# --- cublas: MatMul and Gemm through cuBLASLt, on cuda's device memory ---
# rt_cublas_mm's last four arguments before threads: the flags of a, b, bias, y
cublas_flags() {
	sed -n 's/.*rt_cublas_mm(&cache, "\([^"]*\)", .*, \([0-9]*\), \([0-9]*\), \([0-9]*\), \([0-9]*\), threads);/\1 \2 \3 \4 \5/p' "$1"
}
"$PY" "$ROOT/testdata/gen_models.py" "$T" mlp >"$T/gen.log" 2>&1 || bad "gen_models mlp"
compile "$T/mlp.onnx" cublas,cuda,c "$T/mlp.cub.so" --keep-temps
if [ -n "$kept" ]; then
	r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join(p["rule"] + "@" + p["target"] for p in ps))' "$T/mlp.cub.json" 2>&1)
	# mlp: Gemm, Relu, Gemm, Relu, Gemm: bias (C) and Relu fused in two of them
	[ "$r" = "cublas.matmul_relu@cublas cublas.matmul_relu@cublas cublas.matmul@cublas" ] ||
		bad "partitions: $r"
	cublas_flags "$kept/model.c" >"$T/cub"
	# the input uploaded once, then on the device; weights constant; only the
	# last output copied back (by the run's end)
	[ "$(cat "$T/cub" | tr '\n' '|')" = "k0_cublas_gemm_bias_relu 0 2 2 4|k1_cublas_gemm_bias_relu 1 2 2 4|k2_cublas_gemm_bias 1 2 2 16|" ] ||
		bad "flags: $(cat "$T/cub" | tr '\n' '|')"
	cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -I"$kept" \
		-I"$(dirname "$nvcc")/../include" "$kept/model.c" >"$T/cc.log" 2>&1 ||
		bad "model.c: $(grep -m1 'error' "$T/cc.log")"
	rm -rf "$kept"
fi
verdict cublas-mlp
# bert_tiny: its projections with their biases on cublas, between cuda kernels
compile "$T/bert_tiny.onnx" cublas,cuda,c "$T/bert.cub.so" --keep-temps
if [ -n "$kept" ]; then
	n=$(cublas_flags "$kept/model.c" | wc -l)
	[ "$n" -ge 6 ] || bad "$n cublas matmuls"
	# what a cuda kernel made reaches cublas on the device (flag 1), never uploaded
	cublas_flags "$kept/model.c" | awk '$2 == 0 { u++ } END { exit u > 1 }' ||
		bad "more than one cublas input uploaded from the host"
	rm -rf "$kept"
fi
verdict cublas-bert_tiny
if [ -n "$gpu" ]; then
	for m in mlp bert; do
		"$C" compile --search none "$T/$( [ $m = bert ] && echo bert_tiny || echo mlp).onnx" \
			--target c -o "$T/$m.c.so" -q 2>"$T/err" || bad "compile c: $(head -n 1 "$T/err")"
		run "$T/$m.c.so" "$T/$m.c.out"
		run "$T/$m.cub.so" "$T/$m.cub.out"
		[ -n "$why" ] || same "$T/$m.cub.out" "$T/$m.c.out"
	done
	verdict run-cublas
else
	echo "ok   cuda/run-cublas skipped: no GPU (${status#*: })"
fi

# --- cudnn: Conv with its bias, residual and Relu through cuDNN ---
# rt_cudnn_conv's five flags before threads: x, w, bias, z, y
cudnn_flags() {
	sed -n 's/.*rt_cudnn_conv(&cache, "\([^"]*\)", .*, \([0-9]*\), \([0-9]*\), \([0-9]*\), \([0-9]*\), \([0-9]*\), threads);/\1 \2 \3 \4 \5 \6/p' "$1"
}
compile "$T/mnist_cnn.onnx" cudnn,cublas,cuda,c "$T/mnist.dnn.so" --keep-temps
if [ -n "$kept" ]; then
	# mnist_cnn: Pad, Conv + bias + Relu, MaxPool twice, then Gemm-like MatMul + bias
	cudnn_flags "$kept/model.c" >"$T/dnn"
	[ "$(cat "$T/dnn" | tr '\n' '|')" = "k1_cudnn_conv_bias_relu 1 2 2 0 4|k4_cudnn_conv_bias_relu 1 2 2 0 4|" ] ||
		bad "cudnn calls and flags: $(cat "$T/dnn" | tr '\n' '|')"
	[ "$(cublas_flags "$kept/model.c" | tr '\n' '|')" = "k7_cublas_matmul_bias 1 2 2 16|" ] ||
		bad "cublas calls and flags: $(cublas_flags "$kept/model.c" | tr '\n' '|')"
	nvcc_clean "$kept"
	cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -I"$kept" \
		-I"$(dirname "$nvcc")/../include" "$kept/model.c" >"$T/cc.log" 2>&1 ||
		bad "model.c: $(grep -m1 'error' "$T/cc.log")"
	rm -rf "$kept"
fi
verdict cudnn-mnist_cnn
# grouped (depthwise) and residual convolutions of the opencl models
for m in conv conv_dw; do
	compile "$OM/$m.onnx" cudnn,cuda,c "$T/$m.dnn.so"
	r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print("" if any(p["target"] == "cudnn" for p in ps) else "no Conv on cudnn")' "$T/$m.dnn.json" 2>&1)
	[ -z "$r" ] || bad "$m: $r"
done
verdict cudnn-grouped
# a Conv, its bias and a Clip to [0, 6] (MobileNet's Relu6): one clipped-Relu call
"$PY" - "$T/conv_clip.onnx" <<'EOF' || bad "cannot make conv_clip.onnx"
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 4, 3, 3).astype(np.float32), "w")
b = numpy_helper.from_array(np.arange(8, dtype=np.float32), "b")
lo = numpy_helper.from_array(np.array(0, dtype=np.float32), "lo")
hi = numpy_helper.from_array(np.array(6, dtype=np.float32), "hi")
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], "conv_clip",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w, b, lo, hi])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
open(sys.argv[1], "wb").write(m.SerializeToString())
EOF
compile "$T/conv_clip.onnx" cudnn,cuda,c "$T/conv_clip.dnn.so" --keep-temps
if [ -n "$kept" ]; then
	grep -q 'rt_cudnn_conv(&cache, "k0_cudnn_conv_bias_clip", .*, 1, 6.0, 0, 2, 2, 0, 16, threads);' \
		"$kept/model.c" || bad "no clipped-Relu cudnn call: $(grep -m1 'rt_cudnn_conv(&cache' "$kept/model.c")"
	rm -rf "$kept"
fi
verdict cudnn-clip
if [ -n "$gpu" ]; then
	"$C" compile --search none "$T/mnist_cnn.onnx" --target c -o "$T/mnist.c.so" -q 2>"$T/err" ||
		bad "compile c: $(head -n 1 "$T/err")"
	run "$T/mnist.c.so" "$T/mnist.c.out"
	run "$T/mnist.dnn.so" "$T/mnist.dnn.out"
	[ -n "$why" ] || same "$T/mnist.dnn.out" "$T/mnist.c.out"
	for m in conv conv_dw conv_clip; do
		om=$OM/$m.onnx
		[ $m = conv_clip ] && om=$T/$m.onnx
		compile "$om" c "$T/$m.c.so"
		run "$T/$m.c.so" "$T/$m.c.out"
		run "$T/$m.dnn.so" "$T/$m.dnn.out"
		[ -n "$why" ] || same "$T/$m.dnn.out" "$T/$m.c.out"
	done
	verdict run-cudnn
else
	echo "ok   cuda/run-cudnn skipped: no GPU (${status#*: })"
fi

# --- the runtime halves end to end, on mock libraries that run on the CPU ---
# testdata/cuda_mock: libcuda.so.1 (device memory is host memory; a launch
# runs the kernel's host build, kernels.cu compiled by g++, once per block
# and thread), libcublasLt.so.13 and libcudnn.so.9 (plain loops). A model
# run through them must give the c target's outputs, with one download
# per model output: everything rt_cuda.h, rt_cublas.h and rt_cudnn.h do
# but the GPU's own arithmetic.
MK=$T/mock
mkdir -p "$MK"
inc=$(dirname "$nvcc")/../include
mock=yes
for lib in cuda:libcuda.so.1 cublaslt:libcublasLt.so.13 cudnn:libcudnn.so.9; do
	cc -shared -fPIC -O1 -I"$inc" "$ROOT/testdata/cuda_mock/mock_${lib%%:*}.c" \
		-o "$MK/${lib#*:}" -ldl >"$T/cc.log" 2>&1 || mock=
done
command -v g++ >/dev/null 2>&1 || mock=
# mock_run NAME MODEL TARGETS: compiles MODEL for TARGETS and for c, runs
# both, compares, and checks the downloads of the run
mock_run() {
	compile "$2" "$3" "$T/$1.mk.so" --keep-temps
	hk=$MK/none.so
	if [ -n "$kept" ] && [ -f "$kept/kernels.cu" ]; then
		hk=$MK/$1.kernels.so
		"$PY" "$ROOT/testdata/cuda_mock/host_kernels.py" "$kept/kernels.cu" "$MK/$1.cpp" &&
			g++ -O1 -shared -fPIC -include "$ROOT/testdata/cuda_mock/host_cuda.h" \
				"$MK/$1.cpp" -o "$hk" >"$T/cc.log" 2>&1 ||
			bad "host build of $1's kernels: $(grep -m1 error "$T/cc.log")"
	fi
	[ -z "$kept" ] || rm -rf "$kept"
	compile "$2" c "$T/$1.mkc.so"
	run "$T/$1.mkc.so" "$T/$1.mkc.out"
	rm -f "$MK/stats"
	rm -rf "$T/$1.mk.out"
	LD_LIBRARY_PATH=$MK MOCK_CUDA_KERNELS=$hk MOCK_CUDA_STATS=$MK/stats \
		"$C" run "$T/$1.mk.so" --output-dir "$T/$1.mk.out" --npy >"$T/out" 2>"$T/err" ||
		bad "run $1 on the mocks: $(head -n 1 "$T/err")"
	[ -n "$why" ] || same "$T/$1.mk.out" "$T/$1.mkc.out"
	outs=$(ls "$T/$1.mkc.out" | wc -l)
	grep -q " dtoh $outs " "$MK/stats" 2>/dev/null ||
		bad "$1: $(cat "$MK/stats" 2>/dev/null) ($outs outputs)"
}
if [ -z "$mock" ]; then
	echo "ok   cuda/mock skipped: no g++, or the mocks do not build: $(head -n 1 "$T/cc.log")"
else
	for m in $(t_list "add_bcast act_chain reduce softmax pool conv conv_dw matmul shape_ops sym_batch" \
		"act_chain reduce pool conv_dw sym_batch"); do
		mock_run "$m" "$OM/$m.onnx" cuda,c
		verdict mock-cuda-$m
	done
	mock_run mnist_cnn "$T/mnist_cnn.onnx" cuda,c
	verdict mock-cuda-mnist_cnn
	mock_run mlp "$T/mlp.onnx" cublas,cuda,c
	verdict mock-cublas-mlp
	mock_run bert_tiny "$T/bert_tiny.onnx" cublas,cuda,c
	verdict mock-cublas-bert_tiny
	mock_run mnist_family "$T/mnist_cnn.onnx" cudnn,cublas,cuda,c
	verdict mock-family-mnist_cnn
	for m in conv conv_dw; do
		mock_run "$m.dnn" "$OM/$m.onnx" cudnn,cuda,c
		verdict mock-cudnn-$m
	done
	mock_run conv_clip "$T/conv_clip.onnx" cudnn,cuda,c
	verdict mock-cudnn-conv_clip
fi

# --- deterministic, with the object cache out of the way ---
"$C" compile --search none "$OM/conv.onnx" --target cuda,c -o "$T/d1.so" --no-cache -q \
	2>"$T/err" || bad "compile: $(head -n 1 "$T/err")"
"$C" compile --search none "$OM/conv.onnx" --target cuda,c -o "$T/d2.so" --no-cache -q \
	2>"$T/err" || bad "compile: $(head -n 1 "$T/err")"
cmp -s "$T/d1.so" "$T/d2.so" || bad "two compiles gave different OUT.so"
cmp -s "$T/d1.json" "$T/d2.json" || bad "two compiles gave different OUT.json"
verdict deterministic

# --- the default search over cuda,c ---
if [ -z "$gpu" ]; then
	"$C" compile "$T/mnist_cnn.onnx" --target cuda,c -o "$T/s.so" --cache "$T/cache.db" -v \
		>"$T/out" 2>"$T/err" || bad "compile: $(grep -m1 error "$T/err")"
	grep -q "target 'cuda' cannot run here" "$T/err" || bad "-v does not say cuda cannot run"
	r=$("$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))["search"]
nm = [x["target"] for x in s.get("not_measured", [])]
bad = [c for c in s["list"] if c["target"] == "cuda" and c["measured"]]
print("" if nm == ["cuda"] and not bad and any(c["target"] == "cuda" for c in s["list"])
      else "not_measured %s, %d cuda candidates measured" % (nm, len(bad)))' "$T/s.json" 2>&1)
	[ -z "$r" ] || bad "$r"
	verdict search-estimates
	# cuda cannot run here, so crossing to it costs its nominal transfer:
	# the search's states carry their frontier's makers. Past
	# COLLAGEC_SEARCH_STATES of them it searches on without (-v says so)
	# and still compiles; the default cap is far above mnist_cnn's states
	grep -q 'states with transitions' "$T/err" && bad "the default cap was reached"
	COLLAGEC_SEARCH_STATES=2 "$C" compile "$T/mnist_cnn.onnx" --target cuda,c -o "$T/s2.so" \
		--cache "$T/cache.db" -v --stats "$T/s2.stats" >"$T/out" 2>"$T/err" ||
		bad "compile: $(grep -m1 error "$T/err")"
	grep -q 'search: over 2 states with transitions; searching without them' "$T/err" ||
		bad "-v does not say the search dropped the transitions"
	grep -q '"transitions_dropped":[[:space:]]*true' "$T/s2.stats" ||
		bad "--stats lacks transitions_dropped: true"
	[ -s "$T/s2.so" ] && [ -s "$T/s2.json" ] || bad "no OUT.so or OUT.json"
	verdict search-states-cap
	# the CUDA family: the nominal rooflines put mnist_cnn's Convs (with their
	# bias and Relu) on cudnn and its MatMul on cublas; cuda's glue between
	# them crosses no host. Without c: c's plan is measured, and on a host
	# this fast (AVX-512) mnist_cnn on c beats the family's estimates with
	# their copies to the device, which says nothing of the family's placement
	"$C" compile "$T/mnist_cnn.onnx" --target cudnn,cublas,cuda -o "$T/f.so" \
		--cache "$T/cache.db" -q 2>"$T/err" || bad "compile: $(head -n 1 "$T/err")"
	r=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["partitions"]
print(" ".join(p["rule"] for p in ps))' "$T/f.json" 2>&1)
	[ "$r" = "cuda.op cudnn.conv_bias_add_relu cuda.op cudnn.conv_bias_add_relu cuda.op cublas.matmul_bias" ] ||
		bad "family plan: $r"
	verdict search-family
	# --- opening without a GPU ---
	"$C" run "$T/mnist.cu.so" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 1 ] || bad "exit $rc"
	grep -q 'cuda: cannot load libcuda.so.1\|cuda: no device\|cuda: cuInit' "$T/err" ||
		bad "stderr: $(head -n 1 "$T/err")"
	verdict open-without-gpu
else
	echo "ok   cuda/search-estimates skipped: a GPU is here (costs are measured)"
	run "$T/mnist.cu.so" "$T/mnist.cu.out"
	verdict open-with-gpu
fi
t_exit
