#!/bin/sh
# runtime.sh - a compiled model checks what it is given: testdata/runtime/
# checks.c, linked against a model from testdata/runtime/make_model.py,
# passes bad indexes, NULL pointers, bad ranks, negative and overflowing
# dims, a wrong dtype, shapes that do not fit (a symbol bound to two values
# included), runs before every input is set, and wants the documented
# status and message each time, then a good run. Needs $COLLAGEC and
# $TEST_TMP (defaults: build/collagec, /tmp). Then string tensors through
# the C API: testdata/runtime/strings.c against make_strings.py's model (run
# under valgrind when it is installed: no leak, no bad access), and a sequence
# output of run-time length: testdata/runtime/sequences.c against
# testdata/sequence/loop_runtime_seq's model. One line per check: "ok
# runtime/NAME" or "FAIL runtime/NAME: why".
SUITE=runtime
. "$(dirname "$0")/lib.sh"
# a step that fails stops the suite: the next ones build on it
die() { fail "$@"; exit 1; }

/usr/bin/python3 "$ROOT/testdata/runtime/make_model.py" "$T/checks.onnx" >"$T/gen.log" 2>&1 ||
	die make-model "$(tail -n 1 "$T/gen.log")"
"$COLLAGEC" compile --search none --target c "$T/checks.onnx" -o "$T/libchecks.so" \
	>"$T/compile.log" 2>&1 || die compile "$(head -n 1 "$T/compile.log")"
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/checks.c" \
	-L"$T" -lchecks -Wl,-rpath,"$T" -o "$T/checks" >"$T/cc.log" 2>&1 ||
	die cc "$(head -n 1 "$T/cc.log")"
# every check prints its own line; a crash prints none for the rest
"$T/checks"
st=$?
[ $st -eq 0 ] || [ $st -eq 1 ] || die checks-exit "checks died with status $st"

# a sequence output of run-time length (testdata/sequence/loop_runtime_seq)
"$COLLAGEC" compile --search none --target c "$ROOT/testdata/sequence/loop_runtime_seq/model.onnx" \
	-o "$T/libsequences.so" >"$T/compile.log" 2>&1 ||
	die sequences-compile "$(head -n 1 "$T/compile.log")"
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/sequences.c" \
	-L"$T" -lsequences -Wl,-rpath,"$T" -o "$T/sequences" >"$T/cc.log" 2>&1 ||
	die sequences-cc "$(head -n 1 "$T/cc.log")"
"$T/sequences"
s3=$?
[ $s3 -eq 0 ] || [ $s3 -eq 1 ] || die sequences-exit "sequences died with status $s3"

/usr/bin/python3 "$ROOT/testdata/runtime/make_strings.py" "$T/strings.onnx" >"$T/gen.log" 2>&1 ||
	die strings-make-model "$(tail -n 1 "$T/gen.log")"
# x86-64-v2: the program runs under valgrind, which has no AVX-512 (native
# code on such a host dies there with SIGILL)
"$COLLAGEC" compile --search none --target c --cpu x86-64-v2 "$T/strings.onnx" \
	-o "$T/libstrings.so" >"$T/compile.log" 2>&1 ||
	die strings-compile "$(head -n 1 "$T/compile.log")"
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/strings.c" \
	-L"$T" -lstrings -Wl,-rpath,"$T" -o "$T/strings" -lm >"$T/cc.log" 2>&1 ||
	die strings-cc "$(head -n 1 "$T/cc.log")"
if command -v valgrind >/dev/null 2>&1; then
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=3 "$T/strings" 2>"$T/valgrind.log"
else
	"$T/strings"
fi
s2=$?
[ $s2 -eq 3 ] && die strings-valgrind "$(grep -m1 '==' "$T/valgrind.log")"
[ $s2 -eq 0 ] || [ $s2 -eq 1 ] || die strings-exit "strings died with status $s2"

[ $st -eq 0 ] && [ $s2 -eq 0 ] && [ $s3 -eq 0 ]
