#!/bin/sh
# gpu_check.sh - issue 34's checks on a machine with a GPU. Not part of make
# test: CI has no GPU, and nothing here runs without one.
#
# usage, from the project root of a built checkout on the GPU machine:
#   . .device/env.sh    # collagec, our libraries, NVIDIA's OpenCL ICD
#   sh tests/gpu_check.sh [OUTDIR]
# (.device/ is what ../shared/tools/device_bundle.sh packs; give it
# /usr/include/CL so that models compile there: .device/CL is found, or
# DEVICE_CPATH names the directory above CL/.)
#
# For the five reference models (testdata/gen_models.py) and the zoo's
# ResNet-50 and BERT-Base (testdata/gen_zoo.py), for each of TARGETS
# (default "opencl cuda family default"): opencl -device=$DEVICE (default
# gpu: the first GPU over all OpenCL platforms), cuda (device 0), the CUDA
# family (cudnn,cublas,cuda: cuDNN convolutions and cuBLASLt matmuls,
# loops on cuda), each with --search none and every other node on c, and
# the default compile (Collage over every target that runs here, the GPU
# kinds and the CPU ones, measured):
#   ok       the outputs of one run of collagec's default random inputs
#            against ONNX Runtime's CPU run of the same inputs (tools/ort.py
#            refs), rtol 1e-3, atol 1e-4
#   up down  the copies between host and device of one run
#            (COLLAGEC_OPENCL_TRACE, COLLAGEC_CUDA_TRACE; constants,
#            uploaded once, apart): values
#            stay on the device, so these are the model's inputs and outputs
#            and the boundaries with c
#   ms       collagec's median of RUNS runs (default 20, after 3 warm-ups) at
#            batch 1 and, for ResNet-50 and BERT-Base, 32, in ROUNDS turns
#            (default 3; the median of the rounds' medians) with PyTorch
#            eager float32, TF32 off (torchvision's resnet50 and
#            transformers' BertModel of BERT-Base's configuration at the same
#            shapes: a timing, not a check; "-" without torch or CUDA), and
#            the ratio (the issue asks for at most 2x on these two)
# MODELS picks some of them (resnet50_b: ResNet-50 at batch 32). Needs
# python3 with onnx, numpy and onnxruntime; torch, torchvision and
# transformers for the timings. Exits 1 when a check fails.
set -u
COLLAGEC=${COLLAGEC:-collagec}
DEVICE=${DEVICE:-gpu}
TARGETS=${TARGETS:-opencl cuda family default}
RUNS=${RUNS:-20}
ROUNDS=${ROUNDS:-3}
MODELS=${MODELS:-mnist_cnn mlp bert_tiny mobilenetv2 resnet18 resnet50 bert_base resnet50_b}
O=${1:-${TMPDIR:-/tmp}/collagec-gpu-check}
PY=${PY:-python3}
[ -z "${DEVICE_CPATH:-}" ] && [ -f .device/CL/cl.h ] && DEVICE_CPATH=$PWD/.device
[ -n "${DEVICE_CPATH:-}" ] && export CPATH="$DEVICE_CPATH${CPATH:+:$CPATH}"
mkdir -p "$O/lib"
# the models link -lOpenCL: the bundle carries libOpenCL.so.1 only
if ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so '; then
	for d in $(echo "${LD_LIBRARY_PATH:-}" | tr : ' ') /usr/lib/x86_64-linux-gnu; do
		if [ -e "$d/libOpenCL.so.1" ]; then
			ln -sf "$d/libOpenCL.so.1" "$O/lib/libOpenCL.so"
			break
		fi
	done
	export LIBRARY_PATH="$O/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
fi
echo "gpu_check: $(date -u +%Y-%m-%dT%H:%MZ); $("$COLLAGEC" targets | sed -n '/^opencl (/,/^[a-z]/s/^  device:   //p' | tr '\n' ';')"
"$PY" -c 'import onnx, numpy, onnxruntime' 2>/dev/null ||
	{ echo "gpu_check: needs python3 with onnx, numpy and onnxruntime" >&2; exit 2; }
ref="" zoo=""
for m in $MODELS; do
	case $m in
	mnist_cnn | mlp | bert_tiny | mobilenetv2 | resnet18) ref="$ref $m" ;;
	resnet50 | resnet50_b) zoo="$zoo resnet50" ;;
	bert_base) zoo="$zoo bert_base" ;;
	*) echo "gpu_check: no model $m" >&2; exit 2 ;;
	esac
done
{ [ -z "$ref" ] || "$PY" testdata/gen_models.py "$O" $ref >/dev/null; } &&
	{ [ -z "$zoo" ] || "$PY" testdata/gen_zoo.py "$O" $zoo >/dev/null; } ||
	{ echo "gpu_check: cannot make the models" >&2; exit 2; }
# ResNet-50 at batch 32 too: its input's first dim made symbolic
[ ! -f "$O/resnet50.onnx" ] || "$PY" - "$O/resnet50.onnx" "$O/resnet50_b.onnx" <<'PY' || exit 2
import sys
import onnx
m = onnx.load(sys.argv[1])
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.shape.dim[0].dim_param = "batch"
del m.graph.value_info[:]
onnx.save(m, sys.argv[2])
PY

# torch_ms MODEL BATCH: PyTorch eager's median milliseconds, or "-"
torch_ms() {
	"$PY" - "$1" "$2" "$RUNS" 2>/dev/null <<'PY' || echo -
import statistics, sys, time
import torch
name, batch, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if not torch.cuda.is_available():
    raise SystemExit(1)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
if name.startswith("resnet50"):
    import torchvision
    model = torchvision.models.resnet50().eval().to(dev)
    args = (torch.rand(batch, 3, 224, 224, device=dev),)
else:
    import transformers
    model = transformers.BertModel(transformers.BertConfig()).eval().to(dev)
    args = (torch.randint(0, 30522, (batch, 128), device=dev),
            torch.ones(batch, 128, dtype=torch.int64, device=dev))
times = []
with torch.no_grad():
    for i in range(3 + runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(*args)
        torch.cuda.synchronize()
        if i >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
print("%.3f" % statistics.median(times))
PY
}

# compile_for TARGETS MODEL OUT: compiles MODEL for one of TARGETS' sets
compile_for() {
	case $1 in
	opencl) "$COLLAGEC" compile "$2" -o "$3" -q --search none --target "opencl -device=$DEVICE,c" ;;
	family) "$COLLAGEC" compile "$2" -o "$3" -q --search none --target cudnn,cublas,cuda,c ;;
	default) "$COLLAGEC" compile "$2" -o "$3" -q ;;
	*) "$COLLAGEC" compile "$2" -o "$3" -q --search none --target "$1,c" ;;
	esac
}

fails=0
printf '%-7s %-12s %5s %4s %5s %4s %4s %10s %10s %6s\n' target model batch ok const up down \
	collagec_ms torch_ms ratio
# median of the numbers on stdin, or "-"
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for tgt in $TARGETS; do
for m in $MODELS; do
	so=$O/$m.$tgt.so
	if ! compile_for "$tgt" "$O/$m.onnx" "$so" 2>"$O/$m.err"; then
		echo "$tgt $m: compile: $(head -n 1 "$O/$m.err")"
		fails=$((fails + 1))
		continue
	fi
	ok=-
	const=- up=- down=-
	if [ $m != resnet50_b ]; then
		"$PY" tools/ort.py refs "$O/$m.onnx" "$O/$m.ref" >/dev/null 2>"$O/$m.err" &&
			COLLAGEC_OPENCL_TRACE=1 COLLAGEC_CUDA_TRACE=1 "$COLLAGEC" run "$so" --check "$O/$m.ref" --rtol 1e-3 \
				--atol 1e-4 >"$O/$m.out" 2>"$O/$m.trace" && ok=yes || ok=NO
		[ $ok = yes ] || fails=$((fails + 1))
		const=$(grep -c ': upload constant' "$O/$m.trace")
		up=$(grep -c ': upload b' "$O/$m.trace")
		down=$(grep -c ': download' "$O/$m.trace")
	fi
	case $m in
	resnet50) batches=1 ;;
	resnet50_b | bert_base) batches=32 ;;
	*) batches=1 ;;
	esac
	[ $m = bert_base ] && batches="1 32"
	for b in $batches; do
		set -- --runs "$RUNS" --warmup 3
		case $m in
		mlp) set -- "$@" --shape N=64 ;;
		bert_tiny | bert_base | resnet50_b) set -- "$@" --shape "batch=$b" ;;
		esac
		: >"$O/c.ms"
		: >"$O/t.ms"
		r=0
		while [ $r -lt "$ROUNDS" ]; do
			"$COLLAGEC" bench "$so" "$@" 2>/dev/null |
				sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' >>"$O/c.ms"
			case $m in
			resnet50 | resnet50_b | bert_base) torch_ms "$m" "$b" | grep -v '^-' >>"$O/t.ms" ;;
			esac
			r=$((r + 1))
		done
		cm=$(median <"$O/c.ms")
		tm=$(median <"$O/t.ms")
		ratio=-
		[ "$cm" != - ] && [ "$tm" != - ] && ratio=$(awk -v a="$cm" -v b="$tm" 'BEGIN { printf "%.2f", a / b }')
		[ $m = mlp ] && b=64
		printf '%-7s %-12s %5s %4s %5s %4s %4s %10s %10s %6s\n' "$tgt" "$m" "$b" "$ok" "$const" \
			"$up" "$down" "$cm" "$tm" "$ratio"
	done
done
done
echo "gpu_check: $fails failed"
[ $fails -eq 0 ]
