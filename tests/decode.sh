#!/bin/sh
# decode.sh - greedy decoding with a KV cache through the C API: the
# LLaMA-style decoder of testdata/gen_decoder.py (testdata/decoder:
# RMSNormalization, RotaryEmbedding, Attention-23 with past and present
# key/value, 4 query heads on 2 KV heads, a SiLU-gated MLP; batch, seq and
# past symbolic) is compiled once, and examples/decode.c, linked against it,
# runs the 8-token prompt at once and then 63 single-token steps, each
# past_*/present_* pair kept in place in one buffer (collagec_bind_cache;
# OUT.json must list every layer's two caches) and, with -C, each present_*
# bound (collagec_bind_output) to the buffer the next step reads as its
# past_*. The 64 tokens must be ONNX Runtime's (tokens.txt, from the
# generator), at 1 and 2 threads, and so must those after a prompt of 1100
# tokens (tokens_long.txt: a cache longer than attention.rows's block of
# 1024 keys); the full tier does the same with the default Collage search
# over every available target. testdata/cache_api.c checks the caches kept
# in place against dense ones bit for bit, that a step writes only its new
# position (the past made read-only), and the API's refusals.
# The same for testdata/torch_decoder: the network written as transformers'
# LlamaModel is (RMSNorm, rotary embeddings, GQA by repeated KV heads,
# scaled_dot_product_attention under a causal mask offset by the past, a
# SiLU-gated MLP) and exported by PyTorch's default exporter
# (testdata/gen_torch_decoder.py, torch 2.15: opset 20, attention as
# MatMul, Softmax and the exporter's NaN guards), with its own ONNX Runtime
# tokens.
SUITE=decode
. "$(dirname "$0")/lib.sh"

D=$ROOT/testdata/decoder

# decode_with NAME COMPILE-OPTIONS...: compile, link decode.c, decode at 1 and 2 threads
decode_with() {
	name=$1
	shift
	mkdir -p "$T/$name"
	if ! "$C" compile -q "$@" "$D/decoder.onnx" -o "$T/$name/libdecoder.so" \
		2>"$T/$name.err"; then
		fail "$name/compile" "$(head -n 1 "$T/$name.err")"
		return
	fi
	if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/examples/decode.c" \
		-L"$T/$name" -ldecoder -Wl,-rpath,"$T/$name" -o "$T/$name/decode" \
		>"$T/$name.cc" 2>&1; then
		fail "$name/cc" "$(head -n 1 "$T/$name.cc")"
		return
	fi
	caches=$(/usr/bin/python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["caches"]))' "$T/$name/libdecoder.json")
	for f in tokens tokens_long; do
		prompt=$(sed -n 1p "$D/$f.txt")
		want=$(sed -n 2p "$D/$f.txt")
		for t in 1 2; do
			for mode in in-place copy; do
				[ "$mode" = copy ] && flag=-C || flag=
				[ "$mode" = in-place ] && [ "$caches" = 0 ] && continue
				# shellcheck disable=SC2086 # the prompt is a list of tokens
				got=$("$T/$name/decode" -t $t -n 64 $flag $prompt 2>"$T/$name.run")
				if [ "$got" = "$want" ]; then
					ok "$name/$f/threads-$t/$mode/64-tokens-as-onnxruntime"
				else
					fail "$name/$f/threads-$t/$mode/64-tokens-as-onnxruntime" \
						"got '$(echo "$got" | cut -c1-60)...' $(head -n 1 "$T/$name.run")"
				fi
			done
		done
	done
}

# caches_are NAME N: OUT.json of build NAME lists N caches
caches_are() {
	got=$(/usr/bin/python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["caches"]))' "$T/$1/libdecoder.json" 2>&1)
	if [ "$got" = "$2" ]; then
		ok "$1/caches-listed"
	else
		fail "$1/caches-listed" "OUT.json lists $got caches, expected $2"
	fi
}

# cache_api NAME: testdata/cache_api.c linked against build NAME
cache_api() {
	if ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" \
		"$ROOT/testdata/cache_api.c" -L"$T/$1" -ldecoder -Wl,-rpath,"$T/$1" \
		-o "$T/$1/cache_api" >"$T/$1/cache_api.cc" 2>&1; then
		"$T/$1/cache_api" >"$T/$1/cache_api.out" 2>&1
		sed "s|decode/cache-api/|decode/$1/cache-api/|" "$T/$1/cache_api.out"
		# a crash (the past made read-only) prints no verdict for its check
		grep -q '^FAIL' "$T/$1/cache_api.out" && t_failed=$((t_failed + 1))
		[ "$(grep -c '^ok' "$T/$1/cache_api.out")" = 9 ] ||
			fail "$1/cache-api/all-checks-ran" "$(tail -n 1 "$T/$1/cache_api.out")"
	else
		fail "$1/cache-api/cc" "$(head -n 1 "$T/$1/cache_api.cc")"
	fi
}

decode_with c --search none --target c
caches_are c 4
cache_api c
tier full && decode_with default
D=$ROOT/testdata/torch_decoder
decode_with torch-c --search none --target c
# the exporter's Concat of past and new keys, taken into the Attention
caches_are torch-c 4
cache_api torch-c
tier full && decode_with torch-default

t_exit
