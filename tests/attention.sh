#!/bin/sh
# attention.sh - Attention-23 complete: the KV cache, qk_matmul_output,
# every mask form, GQA, softcap, scale, softmax_precision, 16-bit types.
# 1. ONNX 1.23's own node tests of Attention at opset 23
#    (testdata/attention/onnx, copied from onnx/backend/test/data/node):
#    float32 ones within rtol 1e-5, atol 1e-6; the float16 and bfloat16
#    ones within rtol 1e-2, because ONNX's reference computed their
#    expected outputs in 16-bit arithmetic, 1 to 2 ulps from the exact
#    result that collagec rounds to (part 3 checks that exactly);
# 2. testdata/gen_attention_tests.py's float32/float64 models (numpy,
#    float64, from the spec): rtol 1e-5, atol 1e-6;
# 3. its float16/bfloat16 models: exactly the float64 result rounded once;
# 4. its bad models: refused with exit status 1 and the expected message;
# 5. decoder steps: one .so per model, compiled with the cache length
#    symbolic, run with --check at past lengths 3, 7 and 12 (one query),
#    and 0, 4 and 6 (a prompt of 4 queries, then chunks of 2 and 1: the
#    query count symbolic too); a mask longer than past + 1 fails the run
#    with the node's name;
# 6. float and bool masks (broadcast, with is_causal, under GQA, a fully
#    masked row) on attention.rows, the row kernel, against ONNX's outputs;
# 7. attention written out as MatMul, Softmax and MatMul (PyTorch's export
#    of scaled_dot_product_attention among them): merged into one Attention
#    where it may be (sdpa_merge_*), left where it may not (sdpa_keep_*),
#    against numpy.
# The quick tier takes a fixed sample of parts 1 to 3 (t_shard): an eighth
# of parts 1 and 2, a third of part 3.
SUITE=attention
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_attention_tests.py

# sample K/N DIR...: the test folders the tier runs, about K in N of
# them in the quick tier (a shard by name, not by path: $T changes from
# run to run)
sample() {
	_f=$1
	shift
	if tier full; then
		for d in "$@"; do echo "$d"; done
		return
	fi
	_keep=$(for d in "$@"; do basename "$d"; done | t_shard "$SEED" "$_f")
	for d in "$@"; do
		echo "$_keep" | grep -qxF "$(basename "$d")" && echo "$d"
	done
}

# conf K/N RTOL ATOL DIR...: nt_conformance of the sample, when it is not empty
conf() {
	_k=$1 _r=$2 _a=$3
	shift 3
	set -- $(sample "$_k" "$@")
	[ $# -eq 0 ] || nt_conformance "$_r" "$_a" "$@" | sort
}

o=testdata/attention/onnx
conf 1/8 1e-5 1e-6 $(ls -d $o/* | grep -v -e _fp16 -e _bf16)
conf 1/8 1e-2 0 $o/*_fp16 $o/*_bf16
conf 1/8 1e-5 1e-6 "$T"/good/*
conf 1/3 0 0 "$T"/half/*
nt_bad

for m in decode_causal decode_mask chunks_causal; do
	if ! "$COLLAGEC" compile -q --search none --target c "$T/decode/$m/model.onnx" \
		-o "$T/$m.so" 2>"$T/$m.err"; then
		fail "$m/compile" "$(head -n 1 "$T/$m.err")"
		continue
	fi
	for d in "$T/decode/$m"/test_data_set_*; do
		k=$(basename "$d")
		if "$COLLAGEC" run "$T/$m.so" --check "$d" --rtol 1e-5 --atol 1e-6 \
			>"$T/$m.$k.out" 2>&1; then
			ok "$m/$k"
		else
			fail "$m/$k" "$(grep -v ': ok$' "$T/$m.$k.out" | head -n 1)"
		fi
	done
done

# a mask of 3 keys where the cache holds 1 + 1: the run fails, naming the node
if [ -f "$T/decode_mask.so" ]; then
	"$PY" -c '
import sys, numpy as np
from onnx import numpy_helper
def w(n, a):
    with open("%s/%s.pb" % (sys.argv[1], n), "wb") as f:
        f.write(numpy_helper.from_array(a, n).SerializeToString())
w("q", np.ones((1, 4, 1, 8), np.float32))
w("k", np.ones((1, 2, 1, 8), np.float32))
w("v", np.ones((1, 2, 1, 8), np.float32))
w("past_key", np.ones((1, 2, 1, 8), np.float32))
w("past_value", np.ones((1, 2, 1, 8), np.float32))
w("mask", np.ones((1, 3), np.bool_))
' "$T"
	"$COLLAGEC" run "$T/decode_mask.so" --input q="$T/q.pb" --input k="$T/k.pb" \
		--input v="$T/v.pb" --input past_key="$T/past_key.pb" \
		--input past_value="$T/past_value.pb" --input mask="$T/mask.pb" \
		>/dev/null 2>"$T/long_mask.err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "node 'attention' needs total <= (past+1)" "$T/long_mask.err"
	then ok "decode_mask/too-long"
	else fail "decode_mask/too-long" "exit $rc: $(head -n 1 "$T/long_mask.err")"; fi
fi

# rows_case NAME DIR WANT: DIR's model on --target c has WANT attention.rows
# kernels and matches its outputs (rtol 1e-5, atol 1e-6)
rows_case() {
	if ! "$COLLAGEC" compile --search none --target c -q "$2/model.onnx" -o "$T/rc.so" \
		2>"$T/rc.err"; then
		fail "$1" "compile: $(head -n 1 "$T/rc.err")"
	elif [ "$(grep -c '"attention\.rows"' "$T/rc.json")" -ne "$3" ]; then
		fail "$1" "$(grep -c '"attention\.rows"' "$T/rc.json") attention.rows kernels, expected $3"
	elif ! "$COLLAGEC" run "$T/rc.so" --check "$2/test_data_set_0" --rtol 1e-5 --atol 1e-6 \
		>/dev/null 2>"$T/rc.err"; then
		fail "$1" "$(head -n 1 "$T/rc.err")"
	else
		ok "$1"
	fi
}

# masks on the row kernel: a float mask of 2 and 4 dims (one with is_causal),
# GQA under a mask and a bool mask with a fully masked row run on
# attention.rows, reading the mask in place, and match ONNX's outputs
for t in test_attention_4d_attn_mask test_attention_4d_attn_mask_4d_causal \
	test_attention_3d_gqa_attn_mask test_attention_23_boolmask_fullymasked_row_nan_robustness; do
	rows_case "mask-on-rows/$t" "$ROOT/testdata/attention/onnx/$t" 1
done

# attention written out (the layernorm pass's merge): sdpa_merge_* become one
# Attention on attention.rows, sdpa_keep_* stay as they are; all match numpy
for d in "$T"/sdpa/*/; do
	t=$(basename "$d")
	case $t in sdpa_merge_*) rows_case "sdpa/$t" "$d" 1 ;; *) rows_case "sdpa/$t" "$d" 0 ;; esac
done
t_exit
