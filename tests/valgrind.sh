#!/bin/sh
# valgrind.sh - make test-valgrind (issue 11 item 5): memcheck over
# `collagec compile` (collagec itself; the C compiler it runs is not traced)
# and `collagec run` (collagec and the compiled model it loads) of the five
# reference models, on c and on blas,c. Any memcheck error or definite leak
# fails (--error-exitcode); the log of each is kept in $T. Slow: minutes per
# model. The models are compiled for x86-64-v2: valgrind has no AVX-512,
# which native code would use on a host that has it. MODELS and TARGETS select. One line per step: "ok valgrind/..." or
# "FAIL valgrind/...: why".
SUITE=valgrind
. "$(dirname "$0")/lib.sh"
MODELS=${MODELS:-mnist_cnn mlp bert_tiny mobilenetv2 resnet18}
TARGETS=${TARGETS:-c blas,c}
mkdir -p "$T/m"
command -v valgrind >/dev/null || { echo "FAIL valgrind/setup: valgrind is not installed"; exit 1; }
/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" $MODELS >"$T/gen.log" 2>&1 || {
	echo "FAIL valgrind/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
VG="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no -q"
for m in $MODELS; do
	for t in $TARGETS; do
		n="$m/$(echo $t | tr , _)"
		so="$T/$m.$(echo $t | tr , _).so"
		if $VG --log-file="$T/$m.$t.compile.vg" "$COLLAGEC" compile "$T/m/$m.onnx" -o "$so" \
			--search none --target "$t" --cpu x86-64-v2 --no-cache -q >"$T/c.log" 2>&1; then
			echo "ok   valgrind/$n/compile"
		else
			echo "FAIL valgrind/$n/compile: $(grep -m1 -E '==[0-9]+== [A-Z]' "$T/$m.$t.compile.vg" || head -n 1 "$T/c.log")"
			t_failed=$((t_failed + 1))
			continue
		fi
		if $VG --log-file="$T/$m.$t.run.vg" "$COLLAGEC" run "$so" --seed 1 >"$T/r.log" 2>&1; then
			echo "ok   valgrind/$n/run"
		else
			echo "FAIL valgrind/$n/run: $(grep -m1 -E '==[0-9]+== [A-Z]' "$T/$m.$t.run.vg" || head -n 1 "$T/r.log")"
			t_failed=$((t_failed + 1))
		fi
	done
done
t_exit
