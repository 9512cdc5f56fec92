#!/bin/sh
# bench_decode.sh - make bench-decode: a decode step of a LLaMA-style
# decoder with a KV cache (issue 33), against ONNX Runtime in the same run.
# testdata/gen_decoder.py writes the model into $BUILD/bench-decode (hidden
# 512, 4 layers, 8 query heads on 2 KV heads, vocabulary 2048: LAYERS,
# HIDDEN, VOCAB) with ONNX Runtime's 64-token greedy decode; collagec
# compiles it with the default Collage search, told the sizes a decode step
# runs at (--tune-shape seq=1 past=512), and examples/decode.c linked
# against it must decode the same 64 tokens. Then, per thread count
# (THREADS, default "1 2") and past length (PASTS, default "128 1024"),
# REPEAT rounds (default 5) take turns: decode.c's median step (20 steps
# after 3 warm-up ones, every cache kept in place: collagec_bind_cache; and
# the same with -C, present bound to the buffer the next step reads, which
# the model fills with a copy of the past each step) and tools/ort.py decode's (IOBinding, outputs bound to buffers made
# beforehand). It prints each side's median milliseconds, the median of the
# rounds' ratios and the spread of each side (max/min over the rounds).
# Needs python3 with onnx >= 1.18 and onnxruntime (a venv's: pip install
# onnx onnxruntime numpy); not part of make test. GEN=torch exports the
# same sizes through PyTorch's default exporter instead
# (testdata/gen_torch_decoder.py, run by TORCH_PYTHON, default python3: one
# with torch and onnxscript), into $BUILD/bench-decode-torch.
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/bench-decode${GEN:+-$GEN}
THREADS=${THREADS-1 2}
PASTS=${PASTS:-128 1024}
REPEAT=${REPEAT:-5}
. tests/bench_lib.sh
if ! python3 -c "import onnx, onnxruntime; assert onnx.defs.onnx_opset_version() >= 23" \
	2>/dev/null; then
	echo "bench_decode.sh: needs python3 with onnx >= 1.18 and onnxruntime" \
		"(pip install onnx onnxruntime numpy, in a venv)" >&2
	exit 1
fi
mkdir -p "$D"
case ${GEN:-helper} in
torch) gen="${TORCH_PYTHON:-python3} testdata/gen_torch_decoder.py" ;;
helper) gen="python3 testdata/gen_decoder.py" ;;
*) echo "bench_decode.sh: GEN is torch or empty, not '$GEN'" >&2; exit 2 ;;
esac
$gen "$D" --layers "${LAYERS:-4}" --hidden "${HIDDEN:-512}" \
	--heads 8 --kv-heads 2 --vocab "${VOCAB:-2048}" >"$D/gen.log" 2>&1 ||
	{ tail -n 5 "$D/gen.log" >&2; exit 1; }
t0=$(date +%s.%N)
"$COLLAGEC" compile -q "$D/decoder.onnx" -o "$D/libdecoder.so" --cache "$D/costs.sqlite" \
	--tune-shape seq=1 --tune-shape past=512 || exit 1
t1=$(date +%s.%N)
${CC:-cc} -std=c11 -O2 -Iruntime examples/decode.c -L"$D" -ldecoder -Wl,-rpath,"$D" \
	-o "$D/decode" || exit 1
echo "$(cpu_line); ${GEN:-gen_decoder.py}'s model; compile $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
	"(default search, --tune-shape seq=1 past=512); $REPEAT rounds in turns"
# shellcheck disable=SC2046 # the prompt is a list of tokens
got=$("$D/decode" -n 64 $(sed -n 1p "$D/tokens.txt"))
if [ "$got" = "$(sed -n 2p "$D/tokens.txt")" ]; then
	echo "64-token greedy decode: the same tokens as ONNX Runtime"
else
	echo "64-token greedy decode: DIFFERENT from ONNX Runtime's"
fi
caches=$(python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["caches"]))' "$D/libdecoder.json")
echo "caches kept in place (collagec_bind_cache): $caches; copy_ms: the same build with -C" \
	"(present bound to the buffer the next step reads, the past copied into it each step)"
printf '%-8s %-6s %10s %8s %10s %8s %8s %8s\n' threads past collagec_ms copy_ms ort_ms ratio \
	spread_c spread_o
for t in $THREADS; do
	for p in $PASTS; do
		cs="" ks="" os="" rs=""
		for r in $(seq "$REPEAT"); do
			c=$("$D/decode" -t "$t" -b "$p" 1)
			k=$("$D/decode" -t "$t" -b "$p" -C 1)
			o=$(python3 tools/ort.py decode "$D/decoder.onnx" --past "$p" --threads "$t" \
				--runs 20 --warmup 3)
			cs="$cs $c" ks="$ks $k" os="$os $o"
			rs="$rs $(awk -v a="$c" -v b="$o" 'BEGIN { printf "%.4f", a / b }')"
		done
		spread() { tr ' ' '\n' | grep . | sort -n |
			awk '{ v[NR] = $1 } END { printf "%.2f", v[NR] / v[1] }'; }
		printf '%-8s %-6s %10s %8s %10s %8s %8s %8s\n' "$t" "$p" "$(echo "$cs" | median)" \
			"$(echo "$ks" | median)" "$(echo "$os" | median)" "$(echo "$rs" | median)" \
			"$(echo "$cs" | spread)" "$(echo "$os" | spread)"
	done
done
