#!/bin/sh
# imagedecoder.sh - ImageDecoder (opset 20; core/ops/ops_image.c, its shape
# function runtime/rt_imgprobe.c, its decoders runtime/rt_image.h):
# 1. onnx 1.23.2's nine node tests of it (testdata/imagedecoder/onnx, as
#    copy_onnx_node_tests.py writes them) at conformance's tolerances;
# 2. testdata/gen_imagedecoder_tests.py's cases (testdata/imagedecoder/good):
#    every format at odd sizes and in its other forms (gray, palette, RGBA,
#    16-bit, plain PNM, compressed TIFF, lossless WebP, a JPEG 2000
#    codestream), every pixel format, and the decoder followed by Cast,
#    Transpose, Conv, Slice and ReduceMean, at rtol and atol 1e-4 (the
#    pixels themselves exactly: uint8);
# 3. testdata/imagedecoder/bad: refused at compile time with their message;
# 4. testdata/imagedecoder/runfail: bytes no decoder takes (corrupt,
#    truncated, an unknown format, too many pixels) fail the run with exit
#    status 1 and exactly the one line in expect (two decoders: the one that
#    failed named);
# 5. only a model with an ImageDecoder links the image libraries;
# 6. a Collage search over the Conv chain says nothing of the decoder (no
#    candidate holding it is measured, no plan timed whole, on made-up
#    bytes) and the model it builds passes;
# 7. memcheck (when valgrind is installed) over runs of every runfail case
#    and, in the full tier, of every good case of one node: no error, no
#    definite leak.
SUITE=imagedecoder
. "$(dirname "$0")/nodetests.sh"
D=$ROOT/testdata/imagedecoder

{
	nt_conformance 1e-3 1e-7 "$D"/onnx/*
	nt_conformance 1e-4 1e-4 "$D"/good/*
} | sort

cp -R "$D/bad" "$T/bad"
nt_bad

# runfail: one model for the cases of one decoder (the same model.onnx),
# its own for the others; one run a case, fed the case's inputs
"$COLLAGEC" compile -q --search none --target c --cpu x86-64-v2 \
	"$D/runfail/empty/model.onnx" -o "$T/dec.so" 2>"$T/dec.err" ||
	fail runfail/compile "$(head -n 1 "$T/dec.err")"
# so_of DIR: the compiled model of runfail case DIR (compiled now when its own)
so_of() {
	if cmp -s "$1/model.onnx" "$D/runfail/empty/model.onnx"; then
		echo "$T/dec.so"
		return
	fi
	"$COLLAGEC" compile -q --search none --target c --cpu x86-64-v2 "$1/model.onnx" \
		-o "$T/$(basename "$1").so" 2>/dev/null
	echo "$T/$(basename "$1").so"
}
# inputs_of DIR: the --input arguments of runfail case DIR
inputs_of() {
	sed "s|^\([^=]*\)=|--input \1=$1/|" "$1/inputs"
}
for d in "$D"/runfail/*/; do
	d=${d%/}
	n=$(basename "$d")
	so=$(so_of "$d")
	"$COLLAGEC" run "$so" $(inputs_of "$d") --output-dir "$T/out.$n" >/dev/null 2>"$T/$n.err"
	st=$?
	want="collagec: error: run: kernel failure: $(cat "$d/expect")"
	if [ "$st" -ne 1 ]; then
		fail "runfail/$n" "exit status $st, expected 1"
	elif [ "$(cat "$T/$n.err")" != "$want" ]; then
		fail "runfail/$n" "stderr is \"$(head -n 1 "$T/$n.err")\", expected \"$want\""
	elif [ -n "$(ls -A "$T/out.$n" 2>/dev/null)" ]; then
		fail "runfail/$n" "outputs written"
	else
		ok "runfail/$n"
	fi
done

# the libraries: in OUT.json's ldlibs and OUT.so's NEEDED, with an ImageDecoder only
needed() {
	readelf -d "$1" | grep -c 'NEEDED.*lib\(jpeg\|png16\|tiff\|webp\|openjp2\)\.'
}
"$COLLAGEC" compile -q --search none --target c "$ROOT/testdata/ml/onnx/$(ls \
	"$ROOT/testdata/ml/onnx" | head -n 1)/model.onnx" -o "$T/plain.so" 2>"$T/plain.err" ||
	fail links/compile "$(head -n 1 "$T/plain.err")"
if [ "$(needed "$T/dec.so")" -ne 5 ]; then
	fail links/image "OUT.so needs $(needed "$T/dec.so") of the five image libraries"
elif ! grep -q -- '-ljpeg -lpng -ltiff -lwebp -lopenjp2' "$T/dec.json"; then
	fail links/image "OUT.json's ldlibs lack the image libraries"
else
	ok links/image
fi
if [ "$(needed "$T/plain.so")" -ne 0 ] || grep -q -- '-ljpeg' "$T/plain.json"; then
	fail links/plain "a model without ImageDecoder links an image library"
else
	ok links/plain
fi

# the Collage search over the Conv chain: quiet, and its model right
c=$D/good/chain_conv_png
if ! "$COLLAGEC" compile "$c/model.onnx" -o "$T/chain.so" --cache "$T/cache" \
	>"$T/chain.out" 2>&1; then
	fail collage "compile: $(head -n 1 "$T/chain.out")"
elif grep -q "'dec'\|end to end" "$T/chain.out"; then
	fail collage "the compile said: $(grep -m1 "'dec'\|end to end" "$T/chain.out")"
elif ! "$COLLAGEC" run "$T/chain.so" --check "$c/test_data_set_0" --rtol 1e-4 --atol 1e-4 \
	>/dev/null 2>"$T/chain.err"; then
	fail collage "run: $(head -n 1 "$T/chain.err")"
else
	ok collage
fi

# memcheck over the decoders' success and failure paths
if command -v valgrind >/dev/null; then
	VG="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
--errors-for-leak-kinds=definite --show-leak-kinds=definite -q"
	for d in "$D"/runfail/*/; do
		d=${d%/}
		n=$(basename "$d")
		so=$T/dec.so
		[ -f "$T/$n.so" ] && so=$T/$n.so
		$VG --log-file="$T/$n.vg" "$COLLAGEC" run "$so" $(inputs_of "$d") >/dev/null 2>&1
		st=$?
		if [ "$st" -eq 1 ] && [ ! -s "$T/$n.vg" ]; then
			ok "memcheck/runfail/$n"
		else
			fail "memcheck/runfail/$n" "exit status $st: $(head -n 1 "$T/$n.vg")"
		fi
	done
	if tier full; then
		for d in "$D"/good/*/; do
			n=$(basename "$d")
			case $n in chain_*) continue ;; esac
			if ! "$COLLAGEC" compile -q --search none --target c --cpu x86-64-v2 \
				"$d/model.onnx" -o "$T/g.so" 2>"$T/g.err"; then
				fail "memcheck/good/$n" "compile: $(head -n 1 "$T/g.err")"
			elif ! $VG --log-file="$T/$n.vg" "$COLLAGEC" run "$T/g.so" \
				--check "$d/test_data_set_0" >/dev/null 2>&1 || [ -s "$T/$n.vg" ]; then
				fail "memcheck/good/$n" "$(head -n 1 "$T/$n.vg")"
			else
				ok "memcheck/good/$n"
			fi
		done
	fi
fi
t_exit
