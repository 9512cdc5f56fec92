#!/bin/sh
# bench_compile.sh - make bench-compile: how long `collagec compile` takes on
# model-zoo-sized graphs (testdata/gen_zoo.py: DenseNet-121 and -264, ResNet-50) and
# the reference ResNet-18 and BERT-tiny, for TARGET (default c) with --search
# none: cold (empty caches), warm (the same model again), after a change of
# weights (one initializer scaled), after a change of one layer's attribute
# (the last float attribute halved: an epsilon, an alpha; "-" when the model
# has none), and with --no-cache; whether the warm
# and cold outputs are byte-identical. Wall-clock seconds, the median of
# REPEAT (default 3) runs each; the machine's CPU and cores first.
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/bench-compile
TARGET=${TARGET:-c}
REPEAT=${REPEAT:-3}
. tests/bench_lib.sh
mkdir -p "$D"
/usr/bin/python3 testdata/gen_zoo.py "$D" densenet121 densenet264 resnet50 >/dev/null || exit 1
/usr/bin/python3 testdata/gen_models.py "$D" resnet18 bert_tiny >/dev/null || exit 1
echo "$(cpu_line); target $TARGET, median of $REPEAT"
printf '%-12s %6s %8s %8s %10s %8s %9s %10s\n' model nodes cold_s warm_s weights_s attr_s \
	no_cache same
for m in densenet121 densenet264 resnet50 resnet18 bert_tiny; do
	rm -f "$D/$m.a.onnx"
	/usr/bin/python3 - "$D/$m.onnx" "$D/$m.w.onnx" "$D/$m.a.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
w = m.graph.initializer[0]
w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(0.5), w.name))
onnx.save(m, sys.argv[2])
# one layer's attribute: the last node with a float attribute (epsilon, alpha)
m = onnx.load(sys.argv[1])
for n in reversed(m.graph.node):
    fl = [a for a in n.attribute if a.type == onnx.AttributeProto.FLOAT]
    if fl:
        fl[0].f *= 0.5
        onnx.save(m, sys.argv[3])
        break
PY
	nodes=$(/usr/bin/python3 -c 'import onnx, sys; print(len(onnx.load(sys.argv[1]).graph.node))' \
		"$D/$m.onnx")
	cold="" warm="" wts="" attr="" none=""
	for r in $(seq "$REPEAT"); do
		rm -rf "$D/cache"
		set -- "$COLLAGEC" compile --search none --target "$TARGET" --cache "$D/cache/costs.sqlite"
		cold="$cold $(secs "$@" "$D/$m.onnx" -o "$D/$m.cold.so")"
		warm="$warm $(secs "$@" "$D/$m.onnx" -o "$D/$m.warm.so")"
		wts="$wts $(secs "$@" "$D/$m.w.onnx" -o "$D/$m.w.so")"
		[ -f "$D/$m.a.onnx" ] && attr="$attr $(secs "$@" "$D/$m.a.onnx" -o "$D/$m.a.so")"
		none="$none $(secs "$COLLAGEC" compile --search none --target "$TARGET" --no-cache \
			"$D/$m.onnx" -o "$D/$m.none.so")"
	done
	same=no
	cmp -s "$D/$m.cold.so" "$D/$m.warm.so" && cmp -s "$D/$m.cold.so" "$D/$m.none.so" && same=yes
	a=-
	[ -n "$attr" ] && a=$(printf '%.2f' "$(echo $attr | median)")
	printf '%-12s %6d %8.2f %8.2f %10.2f %8s %9.2f %10s\n' "$m" "$nodes" \
		"$(echo $cold | median)" "$(echo $warm | median)" "$(echo $wts | median)" "$a" \
		"$(echo $none | median)" "$same"
done
