#!/bin/sh
# fusion.sh - fused kernels of the c target. Each model of
# testdata/fusion/make_models.py is compiled with --search none twice: fused
# (the default) and with -fuse=0 (one kernel per node). Both must match
# numpy; the fused build must have the expected kernels (epilogues after
# anchors, elementwise prologues inlined into reductions and softmax,
# LayerNormalization and RMSNormalization spelled out merged into one node,
# each written form, and left alone where they must be), each fused kernel
# naming every ONNX node in it (OUT.json kernels[].onnx_nodes), and a
# memory plan no larger than the unfused one (smaller where a fused
# intermediate was the biggest live buffer); float16 models fuse as float32
# ones do (layernorm_half, matmul_gelu_half). conv_sym runs at two batch
# sizes; bias_gelu_sym (a broadcast bias, batch symbolic) fuses into one
# kernel that is a parallel region and gives the same bytes on 1 and 2
# threads; qkv_interleaved's chains fuse though the graph interleaves
# them. The same fusion happens to a multi-node c partition of the Collage
# search: conv_bias_relu compiled with the collage search gets its fused
# kernel. With OpenCL available, opencl builds fuse the same way.
SUITE=fusion
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 testdata/fusion/make_models.py "$T" || { fail generate "make_models.py"; exit 1; }

# info.py OUT.json: "KERNELS ARENA_BYTES|kernel:node,node|..."
cat >"$T/info.py" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ks = [k for p in j["partitions"] for k in p["kernels"]]
print(len(ks), j["memory"]["arena_bytes"],
      "|".join(k["name"] + ":" + ",".join(n["name"] for n in k["onnx_nodes"]) for k in ks))
PY

# check NAME SUFFIX SO: runs SO on NAME_xSUFFIX.npy against NAME_expSUFFIX
# (within TOL, default 1e-4)
check() {
	"$COLLAGEC" run "$3" --input "x=$T/$1_x$2.npy" --check "$T/$1_exp$2" --rtol "${TOL:-1e-4}" \
		--atol "${TOL:-1e-4}" >"$T/run.log" 2>&1
}

# model KERNELS SMALLER FUSED_KERNEL_NODES: SMALLER is "lt" when the fused
# arena must be smaller, "le" when no larger
model() {
	name=$1 want_k=$2 cmp=$3 want_nodes=$4
	for f in 1 0; do
		if ! "$COLLAGEC" compile --search none --target "c -fuse=$f" "$T/$name.onnx" \
			-o "$T/$name.f$f.so" -q >"$T/compile.log" 2>&1; then
			fail "$name/compile-fuse=$f" "$(head -1 "$T/compile.log")"
			return
		fi
		case $name in *_sym)
			if check "$name" _1 "$T/$name.f$f.so" && check "$name" _3 "$T/$name.f$f.so"; then
				ok "$name/fuse=$f-matches-numpy-at-N=1,3"
			else
				fail "$name/fuse=$f-matches-numpy" "$(head -1 "$T/run.log")"
			fi ;;
		*)
			if check "$name" "" "$T/$name.f$f.so"; then
				ok "$name/fuse=$f-matches-numpy"
			else
				fail "$name/fuse=$f-matches-numpy" "$(head -1 "$T/run.log")"
			fi ;;
		esac
	done
	set -- $(/usr/bin/python3 "$T/info.py" "$T/$name.f1.json")
	k1=$1 a1=$2 names=$3
	set -- $(/usr/bin/python3 "$T/info.py" "$T/$name.f0.json")
	k0=$1 a0=$2
	[ "$k1" = "$want_k" ] && ok "$name/kernels-$k1-of-$k0" ||
		fail "$name/kernels" "got $k1 fused kernels ($k0 unfused), expected $want_k"
	case "|$names|" in
	*"$want_nodes"*) ok "$name/fused-kernel-names-its-nodes" ;;
	*) fail "$name/fused-kernel-names-its-nodes" "kernels $names, expected $want_nodes" ;;
	esac
	if [ "$a1" -"$cmp" "$a0" ]; then
		ok "$name/arena-$a1-vs-unfused-$a0"
	else
		fail "$name/arena" "fused $a1 bytes, unfused $a0 (expected -$cmp)"
	fi
}

model conv_bias_relu 1 lt "k0_0_Conv_fused:conv,bias,relu|"
model conv_res_relu 1 lt "k0_0_Conv_fused:conv,residual,relu|"
model matmul_gelu 1 lt \
	"k0_0_MatMul_fused:mm,bias,gelu_div,gelu_erf,gelu_add,gelu_mul,gelu_half|"
model gemm_relu 1 lt "k0_0_Gemm_fused:gemm,relu|"
model maxpool_relu 1 lt "k0_0_MaxPool_fused:pool,scale,relu|"
model conv_swish 1 lt "k0_0_Conv_fused:conv,sigmoid,swish|"
model softmax_scale 1 lt "k0_0_Softmax_fused:temperature,softmax,scale|"
model logsumexp 1 lt "k0_0_ReduceSum_fused:scale,exp,sum,log|"
# LayerNormalization spelled out is one node after the layernorm pass
model layernorm 1 le \
	"k0_0_LayerNormalization:mean,center,square,variance,add_eps,stddev,normalize,gamma,beta|"
model layernorm_2axes 1 le \
	"k0_0_LayerNormalization:mean,center,square,variance,add_eps,stddev,normalize,gamma|"
model layernorm_plain 1 le \
	"k0_0_LayerNormalization:mean,center,square,variance,add_eps,stddev,normalize|"
# the centred x read outside the chain: no LayerNormalization; what
# follows the centring is the RMSNormalization of the centred x
model layernorm_shared 4 le \
	"|k2_0_RMSNormalization:square,variance,add_eps,stddev,normalize|"
# RMSNormalization spelled out, each way exporters write it, is one node
model rmsnorm 1 le "k0_0_RMSNormalization:square,meansq,add_eps,rms,normalize,gamma|"
model rmsnorm_recip 1 le \
	"k0_0_RMSNormalization:square,meansq,add_eps,rms,inv,normalize,gamma|"
model rmsnorm_div1 1 le \
	"k0_0_RMSNormalization:square,meansq,add_eps,rms,inv,normalize,gamma|"
model rmsnorm_pow 1 le "k0_0_RMSNormalization:square,meansq,add_eps,inv,normalize|"
# float16 around it: the Casts to float32 and back to float16 go into the
# node, the first and the last Cast (the model's own) stay
TOL=1e-3 model rmsnorm_cast 3 le \
	"|k1_0_RMSNormalization:to_float,square,meansq,add_eps,rms,inv,normalize,to_input_dtype,gamma|"
# not merged: a reduction over axis 1, the reciprocal read again; a scale
# over another axis stays a Mul after the merged node
model rmsnorm_axis1 2 lt "k0_0_ReduceMean_fused:square,meansq,add_eps,rms,inv|"
model rmsnorm_shared 2 lt "k0_0_ReduceMean_fused:square,meansq,add_eps,rms,inv|"
model rmsnorm_wbcast 2 le \
	"k0_0_RMSNormalization:square,meansq,add_eps,rms,inv,normalize|k1_0_Mul:gamma|"
model conv_sym 1 lt "k0_0_Conv_fused:conv,bias,relu|"
model bias_gelu_sym 1 lt "k0_0_fused:bias,gelu_div,gelu_erf,gelu_add,gelu_mul,gelu_half|"
# a fused run whose loops follow the output's shape (a broadcast bias) with
# a symbolic batch is a parallel region as a flat run is, and gives the
# same bytes on 1 and 2 threads
rm -rf "$T/bias_gelu_sym.ir"
if "$COLLAGEC" compile --search none --target c "$T/bias_gelu_sym.onnx" -o "$T/bgs.so" -q \
	--dump-ir "$T/bias_gelu_sym.ir" >"$T/compile.log" 2>&1; then
	if awk '/^kernel k0_0_fused\(/ { k = 1; next } /^kernel / { k = 0 }
		k && /parallel region/ { found = 1 } END { exit !found }' \
		"$T"/bias_gelu_sym.ir/*-lower.tir; then
		ok "bias_gelu_sym/fused-kernel-is-a-parallel-region"
	else
		fail "bias_gelu_sym/fused-kernel-is-a-parallel-region" \
			"$(grep -A4 '^kernel k0_0_fused' "$T"/bias_gelu_sym.ir/*-lower.tir | grep 'for (')"
	fi
	for t in 1 2; do
		"$COLLAGEC" run "$T/bgs.so" --input "x=$T/bias_gelu_sym_x_3.npy" --threads $t \
			--output-dir "$T/bgs.t$t" --npy >"$T/run.log" 2>&1 || break
	done
	if cmp -s "$T/bgs.t1/y.npy" "$T/bgs.t2/y.npy"; then
		ok "bias_gelu_sym/threads-1-2-identical"
	else
		fail "bias_gelu_sym/threads-1-2-identical" "$(head -1 "$T/run.log")"
	fi
else
	fail "bias_gelu_sym/fused-kernel-is-a-parallel-region" "$(head -1 "$T/compile.log")"
fi
# float16 models as converters write them: the spelled-out LayerNorm is one
# node still (computed in float32 between Casts), and the widened MatMul
# takes its float16 bias and GELU as its epilogue, the Casts inside it
TOL=1e-3 model layernorm_half 3 le \
	"|k1_0_LayerNormalization:mean,center,square,variance,add_eps,stddev,normalize,gamma,beta|"
TOL=1e-3 model matmul_gelu_half 2 lt \
	"|k1_0_MatMul_fused:mm,bias,gelu_div,gelu_erf,gelu_add,gelu_mul,gelu_half,to_float|"

# a partition whose nodes the graph interleaves (three MatMuls, three Adds,
# three Muls) still fuses each MatMul with its own Add and Mul: the fuse
# step puts each elementwise consumer after its producer first (the greedy
# search makes the whole graph one c partition)
if "$COLLAGEC" compile --search greedy --target c "$T/qkv_interleaved.onnx" \
	-o "$T/qkv.so" -q --no-cache >"$T/compile.log" 2>&1 && check qkv_interleaved "" "$T/qkv.so"; then
	set -- $(/usr/bin/python3 "$T/info.py" "$T/qkv.json")
	case "$3" in
	*:mm_q,bias_q,scale_q\|*:mm_k,bias_k,scale_k,sum_qk\|*:mm_v,bias_v,scale_v,sum_v)
		[ "$1" = 3 ] && ok "qkv_interleaved/chains-fuse ($3)" ||
			fail "qkv_interleaved/chains-fuse" "$1 kernels: $3" ;;
	*) fail "qkv_interleaved/chains-fuse" "$1 kernels: $3" ;;
	esac
else
	fail "qkv_interleaved/chains-fuse" "$(head -1 "$T/compile.log") $(head -1 "$T/run.log")"
fi

# fold-scale: a squeeze-and-excitation scale moves into the 1x1 projection's
# weights where they are fewer than the scaled input (se_fold), not where
# they are more (se_nofold); both match numpy
for name in se_fold se_nofold; do
	rm -rf "$T/$name.ir"
	if "$COLLAGEC" compile --search none --target c "$T/$name.onnx" -o "$T/$name.so" -q \
		--dump-ir "$T/$name.ir" >"$T/compile.log" 2>&1 && check "$name" "" "$T/$name.so"; then
		ok "fold-scale/$name-matches-numpy"
	else
		fail "fold-scale/$name-matches-numpy" "$(head -1 "$T/compile.log") $(head -1 "$T/run.log")"
		continue
	fi
	# what the Mul makes after the pass: the weights' shape, or x's
	want="float32[1,16,4,4] = Mul(" what=x
	[ "$name" = se_fold ] && want="float32[8,16,1,1] = Mul(" what=weights
	if grep '# scale(Mul)' "$T/$name.ir"/*-fold-scale.ir | grep -qF "$want"; then
		ok "fold-scale/$name-scales-$what"
	else
		fail "fold-scale/$name-scales-$what" "$(grep '# scale(Mul)' "$T/$name.ir"/*-fold-scale.ir)"
	fi
done

# a Collage candidate of several nodes on c builds (and measures) fused
if "$COLLAGEC" compile --target c "$T/conv_bias_relu.onnx" -o "$T/collage.so" \
	--cache "$T/cache.sqlite" >"$T/collage.log" 2>&1 &&
	check conv_bias_relu "" "$T/collage.so"; then
	set -- $(/usr/bin/python3 "$T/info.py" "$T/collage.json")
	[ "$1" = 1 ] && ok "collage-fuses-its-c-partition ($3)" ||
		fail collage-fuses-its-c-partition "kernels: $3"
else
	fail collage-fuses-its-c-partition "$(head -1 "$T/collage.log") $(head -1 "$T/run.log")"
fi

# opencl prints its kernels from the same fused loop IR
if "$COLLAGEC" targets 2>/dev/null | grep -q '^opencl (cpu)'; then
	for name in conv_bias_relu logsumexp; do
		if "$COLLAGEC" compile --search none --target opencl,c "$T/$name.onnx" \
			-o "$T/$name.ocl.so" -q >"$T/compile.log" 2>&1 &&
			check "$name" "" "$T/$name.ocl.so"; then
			set -- $(/usr/bin/python3 "$T/info.py" "$T/$name.ocl.json")
			[ "$1" = 1 ] && ok "opencl/$name ($3)" || fail "opencl/$name" "kernels: $3"
		else
			fail "opencl/$name" "$(head -1 "$T/compile.log") $(head -1 "$T/run.log")"
		fi
	done
fi
t_exit
