#!/bin/sh
# demo.sh - make demo: builds the five reference models, compiles each with
# collagec for the c target and for blas,c, runs it, checks the result
# against ONNX Runtime's outputs and times it.
set -e
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/models
mkdir -p "$D"
echo "generating the reference models in $D"
/usr/bin/python3 testdata/gen_models.py "$D"
"$COLLAGEC" targets | grep -E '^[a-z]|status'
for target in c blas,c; do
	echo "== --target $target"
	for m in mnist_cnn mlp bert_tiny mobilenetv2 resnet18; do
		so="$D/$m.$(echo "$target" | tr -d ,).so"
		t0=$(date +%s.%N)
		"$COLLAGEC" compile --search none "$D/$m.onnx" -o "$so" --target "$target"
		t1=$(date +%s.%N)
		printf '%-12s compiled in %.2f s, ' "$m" "$(echo "$t1 - $t0" | bc)"
		"$COLLAGEC" run "$so" --check "testdata/models/$m" --rtol 1e-3 --atol 1e-4 \
			| tr '\n' ' '
		"$COLLAGEC" bench "$so" --runs 5 --warmup 1 | sed 's/.*: /  /'
	done
done
echo "artifacts: $D/*.so and $D/*.json"
