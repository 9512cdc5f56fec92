#!/bin/sh
# contrib.sh - ONNX Runtime's contrib ops (com.microsoft), decomposed at
# import (core/onnx/onnx_contrib.c), against ONNX Runtime's outputs, which
# testdata/gen_contrib_tests.py computed once into testdata/contrib (the
# tests need no onnxruntime):
# 1. every good model compiles, runs and matches (rtol 1e-4, atol 1e-5),
#    bert_optimized among them: a BERT that onnxruntime.transformers'
#    optimizer fused into EmbedLayerNormalization, Attention,
#    SkipLayerNormalization and BiasGelu, and gpt2_optimized (its GPT-2
#    fusions: SkipLayerNormalization's input_skip_bias_sum, FastGelu);
#    GroupQueryAttention with and without a cache, padded, rotary;
# 2. every bad model is refused with exit status 1 and the expected message;
# 3. the kernels of a decomposed node name it in their spans;
# 4. bert_optimized on blas,c, and (full tier) with the default Collage
#    search over every available target;
# 5. (full tier) where Debian's python3 (or COLLAGEC_ORT_PYTHON, such as a
#    venv's) has onnxruntime, the generator runs again and its models match
#    their fresh outputs.
SUITE=contrib
. "$(dirname "$0")/nodetests.sh"

nt_conformance 1e-4 1e-5 testdata/contrib/good | sort

cp -R testdata/contrib/bad "$T/bad"
nt_bad

# spans: the Add and LayerNormalization of a SkipLayerNormalization name it
d=testdata/contrib/good/skip_layer_norm
if ! "$COLLAGEC" compile -q --search none --target "c -fuse=0" "$d/model.onnx" \
	-o "$T/span.so" 2>"$T/span.err"; then
	echo "FAIL contrib/span: compile: $(head -n 1 "$T/span.err")"
elif tr -d ' \t\n' <"$T/span.json" |
	grep -qF '[{"name":"skiplayernormalization","op":"SkipLayerNormalization"}]'; then
	echo "ok   contrib/span"
else
	echo "FAIL contrib/span: OUT.json names no kernel after the node skiplayernormalization"
fi

# bert_compile NAME ARGS...: bert_optimized compiled with ARGS matches ONNX Runtime
bert_compile() {
	n=$1
	shift
	d=testdata/contrib/good/bert_optimized
	if ! "$COLLAGEC" compile -q "$@" "$d/model.onnx" -o "$T/$n.so" 2>"$T/$n.err"; then
		echo "FAIL contrib/$n: compile: $(head -n 1 "$T/$n.err")"
	elif ! "$COLLAGEC" run "$T/$n.so" --check "$d/test_data_set_0" --rtol 1e-4 \
		--atol 1e-5 >"$T/$n.out" 2>&1; then
		echo "FAIL contrib/$n: $(grep -v ': ok$' "$T/$n.out" | head -n 1)"
	else
		echo "ok   contrib/$n"
	fi
}

if [ "$("$COLLAGEC" targets | awk '/^blas \(/ { on = 1; next }
	on && /status:/ { print $2; exit }')" = available ]; then
	bert_compile bert_blas --search none --target blas,c
else
	echo "ok   contrib/bert_blas skipped: blas unavailable"
fi
if tier full; then
	bert_compile bert_collage --cache "$T/cost.sqlite" --search-budget 30
fi

if tier full; then
	ort_py=${COLLAGEC_ORT_PYTHON:-$PY}
	if ! "$ort_py" -c 'import onnxruntime.transformers.optimizer, sympy' 2>/dev/null; then
		echo "ok   contrib/regenerate skipped: $ort_py has no onnxruntime (with sympy)"
	elif ! "$ort_py" testdata/gen_contrib_tests.py "$T/gen" >"$T/gen.log" 2>&1; then
		echo "FAIL contrib/regenerate: $(tail -n 1 "$T/gen.log")"
	else
		"$COLLAGEC" conformance -j2 --rtol 1e-4 --atol 1e-5 "$T/gen/good" \
			>"$T/regen.out" 2>&1
		verdict regenerate "$(grep '^FAIL' "$T/regen.out" | head -n 1)"
	fi
fi

t_exit
