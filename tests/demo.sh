#!/bin/sh
# demo.sh - make demo: builds the five reference models, compiles each with
# collagec, runs it and checks the result against ONNX Runtime's outputs.
set -e
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/models
mkdir -p "$D"
echo "generating the reference models in $D"
/usr/bin/python3 testdata/gen_models.py "$D"
for m in mnist_cnn mlp bert_tiny mobilenetv2 resnet18; do
	t0=$(date +%s.%N)
	"$COLLAGEC" compile "$D/$m.onnx" -o "$D/$m.so"
	t1=$(date +%s.%N)
	printf '%-12s compiled in %.2f s, ' "$m" "$(echo "$t1 - $t0" | bc)"
	"$COLLAGEC" run "$D/$m.so" --check "testdata/models/$m" --rtol 1e-3 --atol 1e-4 \
		| tr '\n' ' '
	"$COLLAGEC" bench "$D/$m.so" --runs 5 --warmup 1 | sed 's/.*: /  /'
done
echo "artifacts: $D/*.so and $D/*.json"
