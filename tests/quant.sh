#!/bin/sh
# quant.sh - quantization and 16-bit floats.
# 1. Node tests of testdata/gen_quant_tests.py (what libonnx-testdata
#    lacks: blocked and 16-bit quantization, ties, saturation, float16 and
#    bfloat16 Casts at ties/subnormals/overflow/NaN): exact matches (rtol 0,
#    atol 0), "near" ones within an ulp of float16 (rtol 1e-3); a Cast to
#    float16 and back must round inside a fused kernel (--search greedy);
#    bad models are refused with exit status 1 and the expected message;
#    float16 and bfloat16 MatMul, Gemm and Conv (the fold pass computes them
#    in float32 between Casts), and the float16 MatMul's and Softmax's
#    kernels the float32 ones (matmul.micro, softmax.rows); their 16-bit
#    weights of 4 KB and more stay 16-bit in OUT.so, widened and packed
#    when the model opens (c, blas and dnnl); a bfloat16 model's Gemms on
#    dnnl multiply bfloat16 where the host has AVX512-BF16.
#    The integer GEMM's and convolution's cases again at --cpu generic (its
#    portable loops).
# 2. Models quantized by ONNX Runtime's quantizer (testdata/quant, made by
#    testdata/gen_quant_models.py with ONNX Runtime's outputs): within one
#    quantization step of the output (testdata/quant/NAME/atol; the
#    generator's docstring says why); qlinearadd_*, one com.microsoft
#    QLinearAdd each, exactly (ONNX Runtime's kernel), at --cpu generic too;
#    qlinearpool_*, qlinearconcat_* and qlinearfold_* (the same of
#    initializers, folded through the ops' own loops), one com.microsoft
#    QLinearAveragePool, QLinearGlobalAveragePool or QLinearConcat each.
# 3. The qdq pass on cnn_qdq and cnn_qdq_tensor: their Conv and MatMul
#    groups become QLinearConv and QLinearMatMul (the integer kernels'
#    strategies in OUT.json, no float conv.* or matmul.* kernel); on
#    resblock_qdq and the qdq_add_* node tests its Add groups become
#    QLinearAdd (qlinearadd.vec where a and b have y's shape or one
#    element, the op's own loops under other broadcasts); the qdq_gemm_*
#    node tests' Gemm (transB, an int32 bias) QLinearMatMul on its GEMM.
# 4. The qdq pass's pools and Concats (qdq_maxpool_*, qdq_averagepool_*,
#    qdq_globalaveragepool_*, qdq_concat_* node tests): the integer nodes
#    and kernels they become, no float pool or (De)QuantizeLinear left.
# 5. OUT.so holds a quantized model's 8-bit weights once: the weights blob
#    (OUT.json's weights_bytes) of each testdata/quant model at most its
#    ONNX file's size plus 10% and 512 bytes of alignment (the integer
#    GEMM's packed panels are made
#    when the model opens, from the weights as the model has them).
# 6. QLinearConv on dnnl (oneDNN's int8 convolution) on hosts with VNNI:
#    gen_quant_tests.py's qconv cases within a unit, placed on dnnl, and
#    two QDQ models' convolutions placed there within their step, uint8
#    values between two of them channels-last; MatMulInteger on dnnl's
#    int8 matmul exactly, QLinearMatMul within a unit; without VNNI, all
#    left to c.
SUITE=quant
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_quant_tests.py
{
	nt_conformance 0 0 "$T/good"
	nt_conformance 1e-3 0 "$T/near"
} | sort

f="$T/good/cast_float16_roundtrip_fused"
if ! "$COLLAGEC" compile --search greedy --target c --no-cache -q "$f/model.onnx" \
	-o "$T/fused.so" 2>"$T/fused.err"; then
	echo "FAIL quant/fused: compile: $(head -n 1 "$T/fused.err")"
elif ! grep -q '"k0_0_fused"' "$T/fused.json"; then
	echo "FAIL quant/fused: the Casts were not fused into one kernel"
elif ! "$COLLAGEC" run "$T/fused.so" --check "$f/test_data_set_0" --rtol 0 --atol 0 \
	>/dev/null 2>"$T/fused.err"; then
	echo "FAIL quant/fused: $(head -n 1 "$T/fused.err")"
else
	echo "ok   quant/fused"
fi

# a float16 MatMul runs on the float32 GEMM between Casts (the fold pass's
# widening, core/passes/pass_widen.c): its kernel is matmul.micro, where the
# 16-bit loop nest converted every element it loaded (the case's outputs:
# the conformance run above)
f="$T/good/matmul_add_relu_float16_widened"
if ! "$COLLAGEC" compile --search none --target c -q "$f/model.onnx" -o "$T/widen.so" \
	2>"$T/widen.err"; then
	echo "FAIL quant/widened-matmul-on-the-float32-gemm: compile: $(head -n 1 "$T/widen.err")"
else
	v=$(/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(" ".join(v["implementation"] for p in j["partitions"] for k in p["kernels"]
               for v in k["variants"] if k["name"].endswith("_MatMul")))' "$T/widen.json")
	if [ "$v" = matmul.micro ]; then echo "ok   quant/widened-matmul-on-the-float32-gemm"
	else echo "FAIL quant/widened-matmul-on-the-float32-gemm: the MatMul's kernels: '$v'"; fi
fi
# has_impl NAME MODEL OUT IMPL: MODEL compiled on c (--search none) into
# OUT.so has a kernel whose implementation is IMPL
has_impl() {
	if ! "$COLLAGEC" compile --search none --target c -q "$2" -o "$3.so" 2>"$3.err"; then
		echo "FAIL quant/$1: compile: $(head -n 1 "$3.err")"
	elif grep -qF "\"$4\"" "$3.json"; then
		echo "ok   quant/$1"
	else
		echo "FAIL quant/$1: no $4 kernel"
	fi
}
# ... and with 3 rows on rt_cgemm16's GEMV form over its 16-bit weights
# (matmul.gemv16; the case's outputs: the conformance run above)
has_impl float16-matmul-gemv16 "$T/near/matmul_float16_gemv16/model.onnx" "$T/gemv16" \
	matmul.gemv16
# ... and by a float16 weight past the folder's 4M elements (2100 x 2048,
# widened when the model opens, not by a Cast every run; lazily at compile
# time): on matmul.gemv16 too, within a float16 ulp of numpy's product
/usr/bin/python3 - "$T/bigw" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
os.makedirs(d + "/exp", exist_ok=True)
rng = np.random.default_rng(7)
w = (rng.standard_normal((2100, 2048)) / 46).astype(np.float16)
x = rng.standard_normal((2, 2100)).astype(np.float16)
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "bigw",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 2100])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 2048])],
                      [numpy_helper.from_array(w, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.save(m, d + "/model.onnx")
np.save(d + "/x.npy", x)
np.save(d + "/exp/y.npy", (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float16))
PY
has_impl float16-large-weight-gemv16 "$T/bigw/model.onnx" "$T/bigw" matmul.gemv16
if [ ! -f "$T/bigw.so" ]; then
	echo "FAIL quant/float16-large-weight-matches-numpy: not compiled"
elif "$COLLAGEC" run "$T/bigw.so" --input "x=$T/bigw/x.npy" --check "$T/bigw/exp" \
	--rtol 2e-3 --atol 2e-3 >/dev/null 2>"$T/bigw.err"; then
	echo "ok   quant/float16-large-weight-matches-numpy"
else
	echo "FAIL quant/float16-large-weight-matches-numpy: $(head -n 1 "$T/bigw.err")"
fi
# ... and a float16 Softmax on the float32 row kernel (softmax.rows)
has_impl widened-softmax-on-the-row-kernel "$T/near/matmul_softmax_float16/model.onnx" \
	"$T/widen2" softmax.rows

# the integer GEMM's portable loops (rt_cquant.h without AVX2), beside the
# vector paths the host's --cpu level took above
# (the quick tier: a fixed 6 of the convolutions, which compile slowest)
names=$(cd "$T/good" && echo convinteger_const_* qlinearconv_const_*)
convs=$(for n in $(t_list "$names" "$(t_pick "$SEED" 6 $names)"); do echo "$T/good/$n"; done)
"$COLLAGEC" conformance -j2 --cpu generic --rtol 0 --atol 0 "$T"/good/matmulinteger_const_* \
	"$T"/good/qlinearmatmul_const_* $convs "$T"/good/dynamicquantizelinear_* \
	"$T"/good/qdq_add_* "$T"/good/qdq_gemm_* testdata/quant/qlinearadd_* \
	"$T"/good/qdq_*pool_* "$T"/good/qdq_concat_* "$T"/good/maxpool_*_onnx \
	>"$T/generic.out" 2>&1
sed -n "s/^PASS \([^ ]*\).*/ok   $SUITE\/generic\/\1/p; s/^FAIL \([^:]*\): /FAIL $SUITE\/generic\/\1: /p" \
	"$T/generic.out"

nt_bad

for d in testdata/quant/*/; do
	nt_conformance 0 "$(cat "$d/atol")" "${d%/}"
done

# the qdq pass: cnn_qdq's Conv and MatMul groups run as QLinearConv and
# QLinearMatMul on the integer kernels, no float Conv or MatMul left (its
# outputs within a step of ONNX Runtime's: the loop above)
for m in cnn_qdq cnn_qdq_tensor; do
	if ! "$COLLAGEC" compile --target c --search none -q "testdata/quant/$m/model.onnx" \
		-o "$T/$m.so" 2>"$T/$m.err"; then
		echo "FAIL quant/qdq/$m: compile: $(head -n 1 "$T/$m.err")"
	elif [ "$(grep -c '"qlinearconv\.gemm"' "$T/$m.json")" != 2 ] ||
		! grep -q '"qlinearmatmul\.gemm"' "$T/$m.json" ||
		grep -q '"conv\.\|"matmul\.' "$T/$m.json"; then
		echo "FAIL quant/qdq/$m: the Conv and MatMul groups are not QLinearConv and QLinearMatMul"
	else
		echo "ok   quant/qdq/$m"
	fi
done

# the qdq pass's Adds: QLinearAdd on rt_qadd (qlinearadd.vec) where a and b
# have y's shape or one element, the op's own loops otherwise; no float Add
# left (the outputs: the conformance runs above)
for c in "qdq_add_u8_large vec" "qdq_add_u8_scalar_b vec" "qdq_add_s8 vec" \
	"qdq_add_s8_bcast loops" "resblock_qdq vec"; do
	set -- $c
	m="$T/good/$1/model.onnx"
	[ -f "$m" ] || m="testdata/quant/$1/model.onnx"
	if ! "$COLLAGEC" compile --target c --search none -q "$m" -o "$T/$1.so" \
		2>"$T/$1.err"; then
		echo "FAIL quant/qdq_add/$1: compile: $(head -n 1 "$T/$1.err")"
	elif ! grep -q "\"qlinearadd\.$2\"" "$T/$1.json" || grep -q '"k[0-9_]*Add"' "$T/$1.json"; then
		echo "FAIL quant/qdq_add/$1: the Add groups are not QLinearAdd on qlinearadd.$2"
	else
		echo "ok   quant/qdq_add/$1"
	fi
done

# a QDQ Gemm with transB and a bias: QLinearMatMul on the integer GEMM, no Gemm left
for m in qdq_gemm_transb_bias_u8s8 qdq_gemm_transb_bias_s8s8; do
	if ! "$COLLAGEC" compile --target c --search none -q "$T/good/$m/model.onnx" \
		-o "$T/$m.so" 2>"$T/$m.err"; then
		echo "FAIL quant/qdq_gemm/$m: compile: $(head -n 1 "$T/$m.err")"
	elif ! grep -q '"qlinearmatmul\.gemm"' "$T/$m.json" || grep -q '"gemm\.' "$T/$m.json"; then
		echo "FAIL quant/qdq_gemm/$m: the Gemm group is not QLinearMatMul on its GEMM"
	else
		echo "ok   quant/qdq_gemm/$m"
	fi
done

# 16-bit weights widened to float32 stay 16-bit in OUT.so: the model widens
# them when it opens, then packs them for the GEMM or convolution (a pack
# made from a pack, core/emit/plan.c), on each CPU target that takes them;
# the blob at most the ONNX file + 10%, packed_bytes nonzero, the outputs
# exactly the spec's
for n in conv3x3_float16_widened_at_open gemm_relu_gemm_bfloat16_widened_at_open; do
	f="$T/good/$n"
	for t in c blas,c dnnl,c; do
		o="$T/open_${n}_$t"
		if ! "$COLLAGEC" targets 2>/dev/null | awk -v k="${t%%,*}" '
			index($0, k " (") == 1 { on = 1; next }
			on && /^  status: / { print $2; exit }' | grep -qx available; then
			echo "ok   quant/widened-at-open/$n/$t skipped: ${t%%,*} is unavailable"
		elif ! "$COLLAGEC" compile --search none --target "$t" -q "$f/model.onnx" \
			-o "$o.so" 2>"$o.err"; then
			echo "FAIL quant/widened-at-open/$n/$t: compile: $(head -n 1 "$o.err")"
		elif ! "$COLLAGEC" run "$o.so" --check "$f/test_data_set_0" --rtol 0 --atol 0 \
			>/dev/null 2>"$o.err"; then
			echo "FAIL quant/widened-at-open/$n/$t: $(head -n 1 "$o.err")"
		else
			w=$(sed -n 's/.*"weights_bytes":[^0-9]*\([0-9]*\).*/\1/p' "$o.json")
			p=$(sed -n 's/.*"packed_bytes":[^0-9]*\([0-9]*\).*/\1/p' "$o.json")
			sz=$(wc -c <"$f/model.onnx")
			if [ -z "$w" ] || [ "$w" -gt $((sz + sz / 10 + 512)) ]; then
				echo "FAIL quant/widened-at-open/$n/$t: $w bytes of weights for a $sz-byte model"
			elif [ -z "$p" ] || [ "$p" -eq 0 ]; then
				echo "FAIL quant/widened-at-open/$n/$t: nothing made at open"
			else
				echo "ok   quant/widened-at-open/$n/$t"
			fi
		fi
	done
done

# a bfloat16 model's Gemms on dnnl multiply bfloat16 (kernels *_bf16) where
# the host has AVX512-BF16, float32 elsewhere; exactly the spec's outputs
# either way (the widened-at-open runs above; these products sum exactly)
n=gemm_relu_gemm_bfloat16_widened_at_open
o="$T/open_${n}_dnnl,c"
if [ ! -f "$o.json" ]; then
	echo "ok   quant/dnnl-bf16-gemm skipped: dnnl is unavailable"
else
	k=$(grep -c '"k[0-9]*_dnnl_matmul_bf16"' "$o.json")
	if grep -qw avx512_bf16 /proc/cpuinfo; then want=2; else want=0; fi
	if [ "$k" -eq "$want" ]; then
		echo "ok   quant/dnnl-bf16-gemm ($k bfloat16 matmuls)"
	else
		echo "FAIL quant/dnnl-bf16-gemm: $k kernels *_dnnl_matmul_bf16, expected $want"
	fi
fi

# the qdq pass's pools and concatenations: an 8-bit MaxPool on its byte
# kernel (maxpool.q8rows; with differing scales then a one-input
# QLinearConcat requantizing the max), QLinearAveragePool and
# QLinearGlobalAveragePool on rt_cqpool.h's rows, QLinearConcat's copies
# (a Concat of the integers when the scales agree), no float pool, Concat,
# DequantizeLinear or QuantizeLinear kernel left (the outputs: the
# conformance runs above); ONNX MaxPool-12 of int8 on the byte kernel too
for c in "qdq_maxpool_u8_stem maxpool.q8rows" "qdq_maxpool_s8_dil_ceil maxpool.q8rows" \
	"qdq_maxpool_u8_requant maxpool.q8rows qlinearconcat.copy" \
	"qdq_maxpool_s8_requant_1d maxpool.q8rows qlinearconcat.copy" \
	"maxpool_s8_onnx maxpool.q8rows" \
	"qdq_averagepool_u8_pad qlinearaveragepool.rows" \
	"qdq_averagepool_s8_1d_incl qlinearaveragepool.rows" \
	"qdq_averagepool_u8_3d qlinearaveragepool.loops" \
	"qdq_globalaveragepool_s8 qlinearglobalaveragepool.rows" \
	"qdq_concat_s8_requant qlinearconcat.copy" "qdq_concat_u8_same"; do
	set -- $c
	m=$1
	shift
	if ! "$COLLAGEC" compile --target c --search none -q "$T/good/$m/model.onnx" \
		-o "$T/$m.so" 2>"$T/$m.err"; then
		echo "FAIL quant/qdq_pool/$m: compile: $(head -n 1 "$T/$m.err")"
		continue
	fi
	have=$(grep -o '"implementation":[^"]*"[^"]*"' "$T/$m.json" | sed 's/.*"\([^"]*\)"$/\1/' |
		tr '\n' ' ')
	bad=
	for k in "$@"; do
		case " $have " in *" $k "*) ;; *) bad="no $k" ;; esac
	done
	case " $have " in
	*" maxpool.vrows "*|*" maxpool.rows "*|*" maxpool.window "*|*" averagepool."*|\
	*" globalaveragepool."*|*"quantizelinear."*) bad="a float kernel left: $have" ;;
	esac
	if grep -q '"k[0-9_]*\(DequantizeLinear\|QuantizeLinear\|AveragePool\)"' "$T/$m.json"; then
		bad="a float node left: $have"
	fi
	if [ -n "$bad" ]; then echo "FAIL quant/qdq_pool/$m: $bad"
	else echo "ok   quant/qdq_pool/$m"; fi
done

# per-axis parameters keep the float path: a float MaxPool kernel, no byte one
m=qdq_maxpool_u8_per_axis_float
if ! "$COLLAGEC" compile --target c --search none -q "$T/good/$m/model.onnx" -o "$T/$m.so" \
	2>"$T/$m.err"; then
	echo "FAIL quant/qdq_pool/$m: compile: $(head -n 1 "$T/$m.err")"
elif grep -q '"maxpool\.q8rows"' "$T/$m.json" || ! grep -q '"maxpool\.vrows"' "$T/$m.json"; then
	echo "FAIL quant/qdq_pool/$m: per-axis parameters were made an 8-bit MaxPool"
else
	echo "ok   quant/qdq_pool/$m"
fi

# the weights blob of a quantized model: no larger than its ONNX file + 10%
for d in testdata/quant/*/; do
	m=$(basename "$d")
	if ! "$COLLAGEC" compile --target c --search none -q "$d/model.onnx" -o "$T/w_$m.so" \
		2>"$T/w_$m.err"; then
		echo "FAIL quant/weights/$m: compile: $(head -n 1 "$T/w_$m.err")"
		continue
	fi
	w=$(sed -n 's/.*"weights_bytes":[^0-9]*\([0-9]*\).*/\1/p' "$T/w_$m.json")
	f=$(wc -c <"$d/model.onnx")
	# + 512: the blob aligns each constant to 64 bytes, more than a model
	# of a few one-element parameters (qlinearadd_*) holds
	if [ -z "$w" ] || [ "$w" -gt $((f + f / 10 + 512)) ]; then
		echo "FAIL quant/weights/$m: $w bytes of weights for a $f-byte model"
	else
		echo "ok   quant/weights/$m"
	fi
done

# QLinearConv on the dnnl target (oneDNN's int8 convolution) where the host
# has VNNI: gen_quant_tests.py's qconv cases (every scale and zero point
# constant, weight zero points 0 or absent; u8/s8, per-channel, groups,
# depthwise, 1-D to 3-D, full-range weights against x near 255) placed on
# dnnl (rule dnnl.qconv in OUT.json) and within one unit of the integer
# formula (oneDNN adds y's zero point before it rounds, so a tie may go
# the other way); ResNet-style QDQ models from ONNX Runtime's quantizer
# within their step of ONNX Runtime's outputs with every QLinearConv on
# dnnl. Without VNNI the target must leave the convolutions to c (its
# vpmaddubsw path saturates where c's kernel is exact).
vnni=0
grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo 2>/dev/null && vnni=1
if ! "$COLLAGEC" targets 2>/dev/null | awk '/^dnnl \(/ { on = 1; next }
	on && /^  status: / { print $2; exit }' | grep -qx available; then
	echo "ok   quant/dnnl-qconv skipped: dnnl is unavailable"
else
	"$COLLAGEC" conformance -j2 --target dnnl,c --rtol 0 --atol 1 "$T/qconv" \
		>"$T/qconv.out" 2>&1
	sed -n "s/^PASS \([^ ]*\).*/ok   $SUITE\/dnnl-qconv\/\1/p;
		s/^FAIL \([^:]*\): /FAIL $SUITE\/dnnl-qconv\/\1: /p" "$T/qconv.out"
	for d in "$T"/qconv/*/ testdata/quant/cnn_qdq/ testdata/quant/resblock_qdq/; do
		n=$(basename "$d")
		o="$T/qconv_$n"
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q "$d/model.onnx" \
			-o "$o.so" 2>"$o.err"; then
			echo "FAIL quant/dnnl-qconv-placed/$n: compile: $(head -n 1 "$o.err")"
			continue
		fi
		on=$(grep -c '"dnnl\.qconv"' "$o.json")
		left=$(grep -c '"qlinearconv\.' "$o.json")
		if [ $vnni = 1 ] && { [ "$on" = 0 ] || [ "$left" != 0 ]; }; then
			echo "FAIL quant/dnnl-qconv-placed/$n: $on on dnnl, $left on c"
		elif [ $vnni = 0 ] && [ "$on" != 0 ]; then
			echo "FAIL quant/dnnl-qconv-placed/$n: placed on dnnl on a host without VNNI"
		elif [ -f "$d/atol" ] && ! "$COLLAGEC" run "$o.so" --check "$d/test_data_set_0" \
			--rtol 0 --atol "$(cat "$d/atol")" >/dev/null 2>"$o.err"; then
			echo "FAIL quant/dnnl-qconv-placed/$n: $(head -n 1 "$o.err")"
		else
			echo "ok   quant/dnnl-qconv-placed/$n"
		fi
	done
	# compiled for a --cpu level (any host of it, where oneDNN may find
	# no VNNI when the model runs, and its int8 sums then saturate), dnnl
	# takes none of the int8 convolutions and matmuls, whatever this host
	# has; the outputs as exact as c's
	for c in "cnn_qdq testdata/quant/cnn_qdq dnnl.qconv" \
		"qmm $T/good/matmulinteger_const_ii_17x64x33_z1 dnnl.qmatmul"; do
		set -- $c
		o="$T/portable_$1"
		if ! "$COLLAGEC" compile --target dnnl,c --search none --cpu x86-64-v4 -q \
			"$2/model.onnx" -o "$o.so" 2>"$o.err"; then
			echo "FAIL quant/dnnl-portable-cpu/$1: compile: $(head -n 1 "$o.err")"
		elif [ "$(grep -c "$3\"" "$o.json")" != 0 ]; then
			echo "FAIL quant/dnnl-portable-cpu/$1: $(grep -c "$3\"" "$o.json") $3 for --cpu x86-64-v4"
		elif ! "$COLLAGEC" run "$o.so" --check "$2/test_data_set_0" --rtol 0 \
			--atol "$(cat "$2/atol" 2>/dev/null || echo 0)" >/dev/null 2>"$o.err"; then
			echo "FAIL quant/dnnl-portable-cpu/$1: $(head -n 1 "$o.err")"
		else
			echo "ok   quant/dnnl-portable-cpu/$1"
		fi
	done
	# MatMulInteger on dnnl's int8 matmul (rule dnnl.qmatmul): the
	# constant-B node tests exactly (int32 sums; the saturating case's
	# pairs of products pass int16), those with int8 B and its zero point
	# 0 placed there (a's zero point an input, read at run time; a batch
	# folded into the rows); uint8 B and nonzero zero points of B stay on c
	"$COLLAGEC" conformance -j2 --target dnnl,c --rtol 0 --atol 0 \
		"$T"/good/matmulinteger_const_* >"$T/qmm.out" 2>&1
	sed -n "s/^PASS \([^ ]*\).*/ok   $SUITE\/dnnl-qmatmul\/\1/p;
		s/^FAIL \([^:]*\): /FAIL $SUITE\/dnnl-qmatmul\/\1: /p" "$T/qmm.out"
	for c in ii_17x64x33_z1:1 ui_2x5x9x17_z0_7bit:1 reorder:1 saturating:1 \
		uu_7x13x19_z2:0 iu_33x130x50_z0:0 ii_33x130x50_z2:0; do
		n=matmulinteger_const_${c%:*}
		o="$T/qmm_$n"
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q "$T/good/$n/model.onnx" \
			-o "$o.so" 2>"$o.err"; then
			echo "FAIL quant/dnnl-qmatmul-placed/$n: compile: $(head -n 1 "$o.err")"
		elif [ "$(grep -c '"dnnl\.qmatmul"' "$o.json")" != $((${c#*:} * vnni)) ]; then
			echo "FAIL quant/dnnl-qmatmul-placed/$n: $(grep -c '"dnnl\.qmatmul"' "$o.json") on dnnl"
		else
			echo "ok   quant/dnnl-qmatmul-placed/$n"
		fi
	done
	# QLinearMatMul on dnnl's int8 matmul (rule dnnl.qlmatmul), its
	# requantization as output scales and zero points: the node tests with
	# int8 B, its zero point 0 and A's scale per tensor within a unit (as
	# QLinearConv's), placed there; per-row scales of A and nonzero zero
	# points of B stay on c
	"$COLLAGEC" conformance -j2 --target dnnl,c --rtol 0 --atol 1 \
		"$T"/good/qlinearmatmul_const_* >"$T/qlmm.out" 2>&1
	sed -n "s/^PASS \([^ ]*\).*/ok   $SUITE\/dnnl-qlmatmul\/\1/p;
		s/^FAIL \([^:]*\): /FAIL $SUITE\/dnnl-qlmatmul\/\1: /p" "$T/qlmm.out"
	for d in "$T"/good/qlinearmatmul_const_*/; do
		n=$(basename "$d")
		o="$T/qlmm_$n"
		case $n in *_zb0*) want=$vnni ;; *) want=0 ;; esac
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q "$d/model.onnx" \
			-o "$o.so" 2>"$o.err"; then
			echo "FAIL quant/dnnl-qlmatmul-placed/$n: compile: $(head -n 1 "$o.err")"
		elif [ "$(grep -c '"dnnl\.qlmatmul"' "$o.json")" != "$want" ]; then
			echo "FAIL quant/dnnl-qlmatmul-placed/$n: $(grep -c '"dnnl\.qlmatmul"' "$o.json") on dnnl, want $want"
		else
			echo "ok   quant/dnnl-qlmatmul-placed/$n"
		fi
	done
	# the QDQ CNNs' classifier (MatMul and its bias, the qdq pass's
	# QLinearMatMul with an int32 bias) there too, within a unit of c's
	# (oneDNN adds y's zero point before it rounds, c after)
	for m in cnn_qdq resblock_qdq; do
		o="$T/qlmm_$m"
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q \
			testdata/quant/$m/model.onnx -o "$o.so" 2>"$o.err" ||
		   ! "$COLLAGEC" compile --target c --search none -q \
			testdata/quant/$m/model.onnx -o "$o.c.so" 2>>"$o.err"; then
			echo "FAIL quant/dnnl-qlmatmul-bias/$m: compile: $(head -n 1 "$o.err")"
		elif [ "$(grep -c '"dnnl\.qlmatmul"' "$o.json")" != "$vnni" ]; then
			echo "FAIL quant/dnnl-qlmatmul-bias/$m: $(grep -c '"dnnl\.qlmatmul"' "$o.json") on dnnl"
		elif ! "$COLLAGEC" run "$o.c.so" --seed 5 --output-dir "$o.c.out" >/dev/null 2>&1 ||
		     ! "$COLLAGEC" run "$o.so" --seed 5 --check "$o.c.out" --rtol 0 --atol 1 \
			>"$o.log" 2>&1; then
			echo "FAIL quant/dnnl-qlmatmul-bias/$m: $(grep -v ': ok$' "$o.log" | head -n 1)"
		else
			echo "ok   quant/dnnl-qlmatmul-bias/$m"
		fi
	done
	# channels_last NAME MODEL WHAT REORDERS PATTERN...: compiled for
	# dnnl,c, MODEL's --dump-ir lowering shows what PATTERN... (a grep
	# pipeline's patterns, in turn) finds, and a run matches ONNX Runtime
	# with REORDERS reorders of 1x7x15x15 uint8 activations
	channels_last() {
		n=$1 m=testdata/quant/$2 what=$3 want=$4 o="$T/qconv_$1"
		shift 4
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q "$m/model.onnx" \
			-o "$o.so" --dump-ir "$o.ir" 2>"$o.err"; then
			echo "FAIL quant/$n: compile: $(head -n 1 "$o.err")"
			return
		fi
		cat "$o.ir"/*lower* >"$o.found"
		for p in "$@"; do
			grep -A3 "$p" "$o.found" >"$o.next"
			mv "$o.next" "$o.found"
		done
		if ! [ -s "$o.found" ]; then
			echo "FAIL quant/$n: $what is not channels-last"
		elif ! ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$COLLAGEC" run "$o.so" \
			--check "$m/test_data_set_0" --atol "$(cat "$m/atol")" >"$o.log" 2>&1; then
			echo "FAIL quant/$n: run: $(tail -n 1 "$o.log")"
		elif [ "$(grep 'exec,cpu,reorder' "$o.log" | grep -c 'src_u8.*,1x7x15x15,')" != "$want" ]
		then
			echo "FAIL quant/$n: $(grep 'exec,cpu,reorder' "$o.log" |
				grep -c 'src_u8.*,1x7x15x15,') activation reorders, expected $want"
		else
			echo "ok   quant/$n"
		fi
	}
	if [ $vnni = 1 ]; then
		# resblock_qdq's second convolution hands its uint8 output (r1)
		# to the third only: it stays channels-last between them, and a
		# run reorders activations three times (x into the first
		# convolution, its output back to plain for the residual Add,
		# the last output), not five
		channels_last dnnl-qconv-channels-last resblock_qdq r1 3 \
			"reads 'r1_QuantizeLinear_Output' channels-last (8-bit, from dnnl"
		# resblock_chain_qdq: the residual Add (QLinearAdd on c) reads
		# both operands and writes its result channels-last, as the Conv
		# after it reads it, so a run reorders activations once (x into
		# the first convolution), not five times
		channels_last dnnl-qconv-channels-last-add resblock_chain_qdq "the Add's result" 1 \
			"^// partition .* on c: .*residual(Add)" \
			"writes 'r2_QuantizeLinear_Output' channels-last (8-bit, from c"
		# a chain that mixes targets: resblock_chain_qdq with conv1's
		# weights stored as uint8 with zero point 128 (the same values),
		# which dnnl's rule does not take, so conv1 runs on c between
		# dnnl's convolutions: it reads r0 channels-last from dnnl and
		# hands r1 on to dnnl channels-last, and a run still reorders
		# activations once
		o="$T/qconv_mixed"
		mkdir -p "$o"
		/usr/bin/python3 - testdata/quant/resblock_chain_qdq/model.onnx "$o/model.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
for t in m.graph.initializer:
    if t.name in ("w1_quantized", "w1_zero_point"):
        a = numpy_helper.to_array(t).astype(np.int16) + 128
        t.CopyFrom(numpy_helper.from_array(a.astype(np.uint8), t.name))
onnx.save(m, sys.argv[2])
PY
		m=testdata/quant/resblock_chain_qdq
		if ! "$COLLAGEC" compile --target dnnl,c --search none -q "$o/model.onnx" \
			-o "$o.so" --dump-ir "$o.ir" 2>"$o.err"; then
			echo "FAIL quant/qconv-channels-last-mixed: compile: $(head -n 1 "$o.err")"
		elif ! grep -A3 "^// partition .* on c: .*conv1(Conv)" "$o.ir/10-lower.tir" |
			grep -q "reads 'r0_QuantizeLinear_Output' channels-last (8-bit, from dnnl" ||
		     ! grep -A3 "^// partition .* on c: .*conv1(Conv)" "$o.ir/10-lower.tir" |
			grep -q "writes 'r1_QuantizeLinear_Output' channels-last (8-bit, from c"; then
			echo "FAIL quant/qconv-channels-last-mixed: conv1 on c does not hand r0, r1 over channels-last"
		elif ! ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$COLLAGEC" run "$o.so" \
			--check "$m/test_data_set_0" --atol "$(cat "$m/atol")" >"$o.log" 2>&1; then
			echo "FAIL quant/qconv-channels-last-mixed: run: $(tail -n 1 "$o.log")"
		elif [ "$(grep 'exec,cpu,reorder' "$o.log" | grep -c 'src_u8.*,1x7x15x15,')" != 1 ]
		then
			echo "FAIL quant/qconv-channels-last-mixed: $(grep 'exec,cpu,reorder' "$o.log" |
				grep -c 'src_u8.*,1x7x15x15,') activation reorders, expected 1"
		else
			echo "ok   quant/qconv-channels-last-mixed"
		fi
	fi
fi

# The c target's QLinearConvs hand their uint8 values to each other
# channels-last (core/emit/q8layout.c; rt_ciconv2d reads x by whole pixels,
# a 1x1 one in place, and writes each pixel's channels side by side), the
# residual add (QLinearAdd on c) between them too: resblock_qdq's r1 and
# resblock_chain_qdq's r0..r2 (4 values: 8 reads and writes, and the
# Add's); the results match ONNX Runtime's as the plain layout's did
for c in resblock_qdq:2 resblock_chain_qdq:9; do
	m=testdata/quant/${c%:*} o="$T/cqcl_${c%:*}"
	if ! "$COLLAGEC" compile --target c --search none -q "$m/model.onnx" -o "$o.so" \
		--dump-ir "$o.ir" 2>"$o.err"; then
		echo "FAIL quant/c-qconv-channels-last/${c%:*}: compile: $(head -n 1 "$o.err")"
	elif [ "$(grep -c "channels-last (8-bit, from c" "$o.ir/10-lower.tir")" != "${c#*:}" ]; then
		echo "FAIL quant/c-qconv-channels-last/${c%:*}: $(grep -c "channels-last (8-bit" \
			"$o.ir/10-lower.tir") channels-last hand-overs, expected ${c#*:}"
	elif ! "$COLLAGEC" run "$o.so" --check "$m/test_data_set_0" --atol "$(cat "$m/atol")" \
		>"$o.log" 2>&1; then
		echo "FAIL quant/c-qconv-channels-last/${c%:*}: run: $(tail -n 1 "$o.log")"
	else
		echo "ok   quant/c-qconv-channels-last/${c%:*}"
	fi
done
