#!/bin/sh
# ml.sh - the ops of domain ai.onnx.ml (core/ops/ops_ml.c, runtime/rt_ml.h):
# 1. onnx 1.23.2's own node tests of them (testdata/ml/onnx, the 8 that
#    copy_onnx_node_tests.py writes: ArrayFeatureExtractor, Binarizer,
#    LabelEncoder, TreeEnsemble) at conformance's default tolerances;
# 2. testdata/gen_ml_tests.py's models against ONNX Runtime's outputs,
#    computed once into testdata/ml/good (rtol 1e-4, atol 1e-5): random
#    tree ensembles over every branch mode, NaN features, each aggregate
#    function and post_transform, set membership, one-leaf trees;
#    LabelEncoder's three forms; sklearn-style pipelines;
# 3. every testdata/ml/bad model is refused with exit status 1, its message
#    and no output;
# 4. one compiled pipeline (a symbolic batch) runs at N = 1 and N = 33;
#    (full tier) the same with the Collage search over every available
#    target.
SUITE=ml
. "$(dirname "$0")/nodetests.sh"

{
	nt_conformance 1e-3 1e-7 testdata/ml/onnx
	nt_conformance 1e-4 1e-5 testdata/ml/good
} | sort

cp -R testdata/ml/bad "$T/bad"
nt_bad

# pipeline SEARCH: one build of the pipeline, checked at both batch sizes
pipeline() {
	p=testdata/ml/good
	if ! "$COLLAGEC" compile -q --search "$1" "$p/pipeline_n1/model.onnx" -o "$T/pipe_$1.so" \
		--cache "$T/pipe.cache" 2>"$T/pipe.err"; then
		echo "FAIL ml/pipeline/$1: compile: $(head -n 1 "$T/pipe.err")"
		return
	fi
	for n in n1 n33; do
		if ! "$COLLAGEC" run "$T/pipe_$1.so" --check "$p/pipeline_$n/test_data_set_0" \
			--rtol 1e-4 --atol 1e-5 >/dev/null 2>"$T/pipe.err"; then
			echo "FAIL ml/pipeline/$1/$n: $(head -n 1 "$T/pipe.err")"
			return
		fi
	done
	echo "ok   ml/pipeline/$1"
}
pipeline none
if tier full; then
	pipeline collage
fi
