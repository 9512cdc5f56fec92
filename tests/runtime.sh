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
# runtime/NAME" or "FAIL runtime/NAME: why". int4 tensors through the C
# API, packed two a byte: testdata/runtime/subbyte.c against
# testdata/subbyte/good/moves_int4's model. Last, the model's own thread
# count: testdata/runtime/threads.c against the model compiled with
# --threads 2 (opens on 2) and without (the physical cores of this
# process's affinity mask, SMT siblings once: 1 under taskset to one CPU),
# set_threads overriding either, and what bench says it ran on.
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

# int4 through the C API, packed (testdata/subbyte's moves_int4, testdata/runtime/subbyte.c)
"$COLLAGEC" compile --search none --target c "$ROOT/testdata/subbyte/good/moves_int4/model.onnx" \
	-o "$T/libsubbyte.so" >"$T/compile.log" 2>&1 ||
	die subbyte-compile "$(head -n 1 "$T/compile.log")"
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/subbyte.c" \
	-L"$T" -lsubbyte -Wl,-rpath,"$T" -o "$T/subbyte" >"$T/cc.log" 2>&1 ||
	die subbyte-cc "$(head -n 1 "$T/cc.log")"
"$T/subbyte"
s4=$?
[ $s4 -eq 0 ] || [ $s4 -eq 1 ] || die subbyte-exit "subbyte died with status $s4"

# the thread count a model was compiled for is its default at open
"$COLLAGEC" compile --search none --target c --threads 2 "$T/checks.onnx" -o "$T/libthr2.so" \
	>"$T/compile.log" 2>&1 || die threads-compile "$(head -n 1 "$T/compile.log")"
for lib in thr2 checks; do
	cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/runtime" "$ROOT/testdata/runtime/threads.c" \
		-L"$T" -l$lib -Wl,-rpath,"$T" -o "$T/threads-$lib" >"$T/cc.log" 2>&1 ||
		die threads-cc "$(head -n 1 "$T/cc.log")"
done
# physical cores: distinct (package, core) among the CPUs this process may use
set -- $(/usr/bin/python3 -c '
import os
cpus = sorted(os.sched_getaffinity(0))
def topo(c, f):
    try:
        return open("/sys/devices/system/cpu/cpu%d/topology/%s" % (c, f)).read().strip()
    except OSError:
        return "cpu%d" % c
print(len({(topo(c, "physical_package_id"), topo(c, "core_id")) for c in cpus}), cpus[0])')
cores=$1 cpu0=$2
"$T/threads-thr2" 2 threads/compiled-for-2 || st=1
"$T/threads-checks" "$cores" threads/physical-cores-$cores || st=1
if command -v taskset >/dev/null 2>&1; then
	taskset -c "$cpu0" "$T/threads-checks" 1 threads/pinned-to-one-cpu || st=1
fi
"$COLLAGEC" bench "$T/libthr2.so" --runs 1 --warmup 0 >"$T/b1" 2>&1 &&
	"$COLLAGEC" bench "$T/libthr2.so" --runs 1 --warmup 0 --threads 1 --json >"$T/b2" 2>&1 &&
	"$COLLAGEC" bench "$T/libchecks.so" --runs 1 --warmup 0 --json >"$T/b3" 2>&1
why=
grep -q '(1 runs, 0 warm-up, 2 threads)$' "$T/b1" || bad "bench: '$(head -n 1 "$T/b1")'"
grep -q '"threads":1,' "$T/b2" || bad "bench --threads 1: '$(head -n 1 "$T/b2")'"
grep -q "\"threads\":$cores," "$T/b3" || bad "bench without --threads: '$(head -n 1 "$T/b3")'"
grep -q '"threads":	2,' "$T/libthr2.json" && grep -q '"threads":	0,' "$T/libchecks.json" ||
	bad "OUT.json's compiler.threads is not 2 and 0"
verdict threads/bench-and-metadata || st=1

[ $st -eq 0 ] && [ $s2 -eq 0 ] && [ $s3 -eq 0 ] && [ $s4 -eq 0 ]
