#!/bin/sh
# decode.sh - greedy decoding with a KV cache through the C API: the
# LLaMA-style decoder of testdata/gen_decoder.py (testdata/decoder:
# RMSNormalization, RotaryEmbedding, Attention-23 with past and present
# key/value, 4 query heads on 2 KV heads, a SiLU-gated MLP; batch, seq and
# past symbolic) is compiled once, and examples/decode.c, linked against it,
# runs the 8-token prompt at once and then 63 single-token steps, each
# present_* bound (collagec_bind_output) to the buffer the next step reads
# as its past_*. The 64 tokens must be ONNX Runtime's (tokens.txt, from the
# generator), at 1 and 2 threads, and so must those after a prompt of 1100
# tokens (tokens_long.txt: a cache longer than attention.rows's block of
# 1024 keys); the full tier does the same with the default Collage search
# over every available target.
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
	for f in tokens tokens_long; do
		prompt=$(sed -n 1p "$D/$f.txt")
		want=$(sed -n 2p "$D/$f.txt")
		for t in 1 2; do
			# shellcheck disable=SC2086 # the prompt is a list of tokens
			got=$("$T/$name/decode" -t $t -n 64 $prompt 2>"$T/$name.run")
			if [ "$got" = "$want" ]; then
				ok "$name/$f/threads-$t/64-tokens-as-onnxruntime"
			else
				fail "$name/$f/threads-$t/64-tokens-as-onnxruntime" \
					"got '$(echo "$got" | cut -c1-60)...' $(head -n 1 "$T/$name.run")"
			fi
		done
	done
}

decode_with c --search none --target c
tier full && decode_with default
D=$ROOT/testdata/torch_decoder
decode_with torch-c --search none --target c
tier full && decode_with torch-default

t_exit
