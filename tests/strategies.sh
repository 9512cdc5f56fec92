#!/bin/sh
# strategies.sh - op strategies of the c target: a symbolic MatMul gets one
# kernel per specialization and a run-time dispatcher, and one .so run at
# sizes that hit different specializations matches numpy each time; static
# Convs get their specialization chosen at compile time.
COLLAGEC=${COLLAGEC:-build/collagec}
T=${TEST_TMP:-/tmp}/strategies
mkdir -p "$T"
ok() { echo "ok   strategies/$1"; }
fail() { echo "FAIL strategies/$1: $2"; }
/usr/bin/python3 testdata/strategies/make_models.py "$T" || { fail generate "make_models.py"; exit 1; }

"$COLLAGEC" compile "$T/matmul_sym.onnx" -o "$T/mm.so" || fail matmul/compile "exit $?"
v=$(/usr/bin/python3 -c '
import json, sys
k = json.load(open(sys.argv[1]))["partitions"][0]["kernels"][0]
print(k["dispatch"], ",".join("%s if %s" % (v["implementation"], v["condition"]) for v in k["variants"]))
' "$T/mm.json")
# K = 32 is static, so "K > 16" always holds and matmul.ijk is never needed
want="run-time matmul.blocked if M >= 16 && K > 16,matmul.ikj if always"
if [ "$v" = "$want" ]; then ok matmul/metadata-lists-variants; else
	fail matmul/metadata-lists-variants "got '$v'"; fi
for m in 4 64; do
	mkdir -p "$T/exp$m"
	cp "$T/y_$m.npy" "$T/exp$m/y.npy"
	if "$COLLAGEC" run "$T/mm.so" --input "a=$T/a_$m.npy" --check "$T/exp$m" --rtol 1e-4 \
		--atol 1e-4 >"$T/run$m.log" 2>&1; then
		ok "matmul/M=$m-matches-numpy"
	else
		fail "matmul/M=$m-matches-numpy" "$(head -1 "$T/run$m.log")"
	fi
done
# each variant is a function of its own in the lowered IR
for f in k0_0_MatMul_v0 k0_0_MatMul_v1; do
	"$COLLAGEC" compile "$T/matmul_sym.onnx" -o "$T/mm2.so" --dump-ir "$T/ir" &&
	grep -q "kernel $f(" "$T/ir/06-lower.tir" && ok "matmul/variant-$f" ||
		fail "matmul/variant-$f" "not in 06-lower.tir"
done

"$COLLAGEC" compile "$T/conv_kinds.onnx" -o "$T/conv.so" || fail conv/compile "exit $?"
v=$(/usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["partitions"]:
    k = p["kernels"][0]
    print(p["onnx_nodes"][0]["name"], k["dispatch"], k["variants"][0]["implementation"])
' "$T/conv.json" | tr '\n' ';')
want="depthwise compile-time conv.depthwise;pointwise compile-time conv.1x1;full3x3 compile-time conv.direct;"
if [ "$v" = "$want" ]; then ok conv/static-choices; else fail conv/static-choices "got '$v'"; fi
mkdir -p "$T/convexp"
cp "$T/conv_y.npy" "$T/convexp/y.npy"
if "$COLLAGEC" run "$T/conv.so" --input "x=$T/x.npy" --check "$T/convexp" --rtol 1e-4 \
	--atol 1e-4 >"$T/conv.log" 2>&1; then ok conv/matches-numpy; else
	fail conv/matches-numpy "$(head -1 "$T/conv.log")"; fi
