#!/bin/sh
# strategies.sh - op strategies of the c target: a symbolic MatMul gets one
# kernel per specialization and a run-time dispatcher, and one .so run at
# sizes that hit each specialization matches numpy each time; static Convs
# get their specialization chosen at compile time, and a symbolic-batch one
# matches numpy at two batch sizes. Implementations that need a scratch
# buffer (matmul.packed, conv.im2col) list it in OUT.json.
COLLAGEC=${COLLAGEC:-build/collagec}
T=${TEST_TMP:-/tmp}/strategies
mkdir -p "$T"
ok() { echo "ok   strategies/$1"; }
fail() { echo "FAIL strategies/$1: $2"; }
/usr/bin/python3 testdata/strategies/make_models.py "$T" || { fail generate "make_models.py"; exit 1; }

# kernels.py OUT.json: per kernel "NODE DISPATCH IMPL if COND,... scratch=SHAPES"
cat >"$T/kernels.py" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1]))["partitions"]:
    for k in p["kernels"]:
        print(p["onnx_nodes"][0]["name"], k["dispatch"],
              ",".join("%s if %s" % (v["implementation"], v["condition"]) for v in k["variants"]),
              "scratch=" + ";".join("x".join(str(d) for d in s["shape"])
                                    for s in k.get("scratch", [])))
EOF
kernels() { /usr/bin/python3 "$T/kernels.py" "$1" | tr '\n' '|'; }
# check NAME SO EXPECTED_DIR INPUT...: runs SO on the inputs, compares with numpy
check() {
	name=$1 so=$2 exp=$3 log=$T/$(echo "$1" | tr '/,=' '___').log
	shift 3
	args=""
	for i in "$@"; do args="$args --input $i"; done
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$so" $args --check "$exp" --rtol 1e-4 --atol 1e-4 \
		>"$log" 2>&1; then
		ok "$name-matches-numpy"
	else
		fail "$name-matches-numpy" "$(head -1 "$log")"
	fi
}
expect() {
	mkdir -p "$T/$1"
	cp "$2" "$T/$1/y.npy"
}

# MatMul by a constant [32, 24], M symbolic: K = 32 is static, so "K > 16"
# always holds and matmul.ijk is never needed; packed B lives in scratch
"$COLLAGEC" compile "$T/matmul_sym.onnx" -o "$T/mm.so" --dump-ir "$T/ir" ||
	fail matmul/compile "exit $?"
v=$(kernels "$T/mm.json")
want="mm run-time matmul.packed if M >= 16 && K > 16,matmul.ikj if always scratch=1024|"
if [ "$v" = "$want" ]; then ok matmul/metadata-lists-variants; else
	fail matmul/metadata-lists-variants "got '$v'"; fi
# M = 1, 4: matmul.ikj; 16, 64: packed tiles; 17: packed with an edge row
for m in 1 4 16 17 64; do
	expect "exp$m" "$T/y_$m.npy"
	check "matmul/M=$m" "$T/mm.so" "$T/exp$m" "a=$T/a_$m.npy"
done
# each variant is a function of its own in the lowered IR
for f in k0_0_MatMul_v0 k0_0_MatMul_v1; do
	grep -q "kernel $f(" "$T/ir/06-lower.tir" && ok "matmul/variant-$f" ||
		fail "matmul/variant-$f" "not in 06-lower.tir"
done

# M and K symbolic: all three specializations at run time, no scratch (a
# symbolic K gives matmul.packed no constant panel)
"$COLLAGEC" compile "$T/matmul_kn.onnx" -o "$T/kn.so" || fail matmul-kn/compile "exit $?"
v=$(kernels "$T/kn.json")
want="mm run-time matmul.packed if M >= 16 && K > 16,matmul.ikj if K > 16,matmul.ijk \
if always scratch=|"
if [ "$v" = "$want" ]; then ok matmul-kn/metadata-lists-variants; else
	fail matmul-kn/metadata-lists-variants "got '$v'"; fi
# (4, 8): ijk; (4, 32): ikj; (64, 32), (19, 40): the large-batch variant
for mk in 4_8 4_32 64_32 19_40; do
	expect "kn$mk" "$T/kn_y_$mk.npy"
	check "matmul-kn/M,K=$mk" "$T/kn.so" "$T/kn$mk" "a=$T/kn_a_$mk.npy" "b=$T/kn_b_$mk.npy"
done

# a batch of B matrices: packed one at a time into one 32 x 32 scratch
"$COLLAGEC" compile "$T/matmul_batched.onnx" -o "$T/bt.so" || fail matmul-batched/compile "exit $?"
v=$(kernels "$T/bt.json")
want="mm compile-time matmul.packed if always scratch=1024|"
if [ "$v" = "$want" ]; then ok matmul-batched/metadata; else
	fail matmul-batched/metadata "got '$v'"; fi
expect btexp "$T/bt_y.npy"
check matmul-batched/B=3 "$T/bt.so" "$T/btexp" "a=$T/bt_a.npy" "b=$T/bt_b.npy"

"$COLLAGEC" compile "$T/conv_kinds.onnx" -o "$T/conv.so" || fail conv/compile "exit $?"
v=$(kernels "$T/conv.json")
want="depthwise compile-time conv.depthwise if always scratch=|pointwise compile-time conv.1x1 \
if always scratch=|full3x3 compile-time conv.im2col if always scratch=2304|"
if [ "$v" = "$want" ]; then ok conv/static-choices; else fail conv/static-choices "got '$v'"; fi
expect convexp "$T/conv_y.npy"
check conv/static "$T/conv.so" "$T/convexp" "x=$T/x.npy"

# batch N symbolic: im2col per image (grouped; 1x1 with stride 2), direct for
# 2 output channels; the scratch does not grow with N
"$COLLAGEC" compile "$T/conv_sym.onnx" -o "$T/cs.so" || fail conv-sym/compile "exit $?"
v=$(kernels "$T/cs.json")
want="grouped compile-time conv.im2col if always scratch=7200|strided1x1 compile-time \
conv.im2col if always scratch=200|two_out compile-time conv.direct if always scratch=|"
if [ "$v" = "$want" ]; then ok conv-sym/static-choices; else
	fail conv-sym/static-choices "got '$v'"; fi
for n in 1 3; do
	expect "csexp$n" "$T/cs_y_$n.npy"
	check "conv-sym/N=$n" "$T/cs.so" "$T/csexp$n" "x=$T/cs_x_$n.npy"
done
