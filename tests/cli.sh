#!/bin/sh
# cli.sh - collagec's command line: help and usage errors (exit 2), the bad
# models of testdata/bad (exact stderr and exit status from NAME.expect, and
# no output or temporary file left behind), quiet and reproducible compiles,
# --depfile (external data included), --dump-ir, `collagec run` (random
# inputs, --output-dir, --npy, --check, symbolic batch sizes, --kernels),
# `collagec bench` (--json, --profile), `collagec targets`, pattern files (--patterns: listed by targets, errors with
# FILE:LINE:COL and a caret, exit 2, nothing written), `collagec cache`
# (stats, export/import round trip, malformed imports, clear, the default
# path), `collagec explain` (the table, --json, --dot through graphviz, the
# metadata embedded in the .so) and toolchain/environment failures (exit 4).
#
# Models come from testdata/bad/make_bad.py at test time. Needs $COLLAGEC
# (absolute path of the binary; default build/collagec) and $TEST_TMP (a
# scratch directory; default a fresh one, removed afterwards).
# One line per check: "ok   cli/NAME" or "FAIL cli/NAME: why"; exits 1 when
# anything failed.

SUITE=cli
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/models" "$T/tmp"
# compile's private build directories go here; it must be empty after every
# compile, good or bad
TMPDIR=$T/tmp
export TMPDIR
M=$T/models

# ---- helpers ----

# x CMD...: runs CMD; stdout in $T/out, stderr in $T/err, status in $st
x() {
	"$@" >"$T/out" 2>"$T/err"
	st=$?
}
first_err() {
	head -n 1 "$T/err"
}
status_is() {
	[ "$st" = "$1" ] || bad "exit status $st, expected $1 (stderr: $(first_err))"
}
err_has() {
	grep -qF -- "$1" "$T/err" || bad "stderr lacks \"$1\" (got: $(first_err))"
}
out_has() {
	grep -qF -- "$1" "$T/out" || bad "stdout lacks \"$1\" (got: $(head -n 1 "$T/out"))"
}
out_empty() {
	[ ! -s "$T/out" ] || bad "unexpected stdout: $(head -n 1 "$T/out")"
}
err_empty() {
	[ ! -s "$T/err" ] || bad "unexpected stderr: $(first_err)"
}
# dir_is DIR "NAME NAME...": DIR holds exactly these entries (sorted)
dir_is() {
	got=$(ls -A "$1" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$2" ] || bad "$1 holds '${got}', expected '$2'"
}
# no temporary build directory left by compile
tmp_clean() {
	left=$(ls -A "$TMPDIR" | head -n 1)
	[ -z "$left" ] || { bad "left a temporary file behind: $TMPDIR/$left"; rm -rf "${TMPDIR:?}"/*; }
}
fresh() {
	rm -rf "$1"
	mkdir -p "$1"
}

# ---- the models ----

if ! "$PY" "$ROOT/testdata/bad/make_bad.py" "$M" >"$T/gen.log" 2>&1; then
	echo "FAIL cli/make-models: make_bad.py failed: $(tail -n 1 "$T/gen.log")"
	exit 1
fi
GOOD=$M/good/good.onnx

# ---- help and usage ----

x "$C" --help
status_is 0; out_has "usage: collagec COMMAND"; err_empty
for cmd in compile run bench conformance targets cache explain; do
	grep -q "^  $cmd " "$T/out" || bad "--help does not list '$cmd'"
done
verdict help

x "$C" help
status_is 0; out_has "usage: collagec COMMAND"
verdict help-word

x "$C" --version
status_is 0; err_empty
grep -qE '^collagec [0-9]+\.[0-9]+\.[0-9]+$' "$T/out" || bad "stdout is '$(cat "$T/out")'"
verdict version

x "$C"
status_is 2; out_empty; err_has "usage: collagec COMMAND"
verdict no-arguments

x "$C" frobnicate
status_is 2; out_empty; err_has "collagec: error: unknown command 'frobnicate'"
err_has "usage: collagec COMMAND"
verdict unknown-command

for cmd in compile run bench conformance targets cache explain; do
	x "$C" "$cmd" --help
	status_is 0; err_empty
	head -n 1 "$T/out" | grep -q "^usage: collagec $cmd" || bad "stdout is '$(head -n 1 "$T/out")'"
	verdict "help/$cmd"
done

# ---- compile: usage errors (exit 2, nothing written) ----

U=$T/usage
# usage_case NAME EXPECTED-STDERR-TEXT ARGS...
usage_case() {
	name=$1 text=$2
	shift 2
	fresh "$U"
	x "$C" compile --search none --target c "$@"
	status_is 2; out_empty; err_has "$text"; dir_is "$U" ""; tmp_clean
	verdict "compile/usage/$name"
}
usage_case no-output "compile: expected one MODEL.onnx and -o OUT.so" "$GOOD"
usage_case no-model "compile: expected one MODEL.onnx and -o OUT.so" -o "$U/OUT.so"
usage_case two-models "compile: expected one MODEL.onnx and -o OUT.so" "$GOOD" "$GOOD" \
	-o "$U/OUT.so"
usage_case unknown-option "compile: unknown or incomplete option '--frobnicate'" "$GOOD" \
	-o "$U/OUT.so" --frobnicate
usage_case option-without-argument "compile: unknown or incomplete option '-o'" "$GOOD" -o
usage_case shape-without-equals "--shape 'N': expected NAME=DIMS" "$GOOD" -o "$U/OUT.so" \
	--shape N
usage_case shape-not-a-number "--shape 'N=abc': dimensions must be integers" "$GOOD" \
	-o "$U/OUT.so" --shape N=abc
usage_case shape-negative "--shape 'N=-1': dimensions must be integers" "$GOOD" \
	-o "$U/OUT.so" --shape N=-1
usage_case shape-unknown-name "--shape 'Q=3': the model has no input or symbolic dim named 'Q'" \
	"$GOOD" -o "$U/OUT.so" --shape Q=3
usage_case shape-wrong-rank "--shape 'x=2': input 'x' has rank 2" "$GOOD" -o "$U/OUT.so" \
	--shape x=2
usage_case shape-fixed-dim "--shape 'x=2,4': dimension 1 of 'x' is fixed at 3" "$GOOD" \
	-o "$U/OUT.so" --shape x=2,4
usage_case tune-shape-unknown-name \
	"--tune-shape 'Q=3': the model has no symbolic dim named 'Q' (it has N)" "$GOOD" \
	-o "$U/OUT.so" --tune-shape Q=3
usage_case tune-shape-bound-by-shape \
	"--tune-shape 'N=3': the model has no symbolic dim named 'N' (it has none)" "$GOOD" \
	-o "$U/OUT.so" --shape N=2 --tune-shape N=3
usage_case tune-shape-zero "--tune-shape 'N=0': the size must be a whole number from 1 to" \
	"$GOOD" -o "$U/OUT.so" --tune-shape N=0
usage_case tune-shape-without-equals "--tune-shape 'N': expected NAME=VALUE" "$GOOD" \
	-o "$U/OUT.so" --tune-shape N
usage_case unknown-target "unknown target kind 'bogus' (known: c" "$GOOD" -o "$U/OUT.so" \
	--target bogus
usage_case search-unknown "compile: unknown --search 'best' (collage, greedy or none)" \
	"$GOOD" -o "$U/OUT.so" --search best
usage_case estimator-unknown "compile: unknown --estimator 'guess' (measure, analytic or mock)" \
	"$GOOD" -o "$U/OUT.so" --search collage --estimator guess
usage_case max-depth-zero "compile: --max-depth takes a whole number from 1 to 64, not '0'" \
	"$GOOD" -o "$U/OUT.so" --max-depth 0
usage_case threads-word "compile: --threads takes a whole number from 1 to 1024, not 'two'" \
	"$GOOD" -o "$U/OUT.so" --threads two

# a model file that is not there: bad input (1), the message names the path
fresh "$U"
x "$C" compile --search none --target c "$M/nonexistent.onnx" -o "$U/OUT.so"
status_is 1; out_empty
err_has "collagec: error: $M/nonexistent.onnx: cannot read: No such file or directory"
dir_is "$U" ""; tmp_clean
verdict compile/missing-model-file

# ---- bad models: exact stderr and status, nothing left behind ----

n_expect=0
for e in "$ROOT"/testdata/bad/*.expect; do
	name=$(basename "$e" .expect)
	n_expect=$((n_expect + 1))
	want_st=$(head -n 1 "$e" | sed -n 's/^# status \([0-9][0-9]*\)$/\1/p')
	tail -n +2 "$e" >"$T/want"
	D=$T/bad/$name
	fresh "$D"
	if [ ! -f "$M/$name.onnx" ]; then
		bad "make_bad.py wrote no $name.onnx"
	elif [ -z "$want_st" ]; then
		bad "$e: first line is not '# status N'"
	else
		x "$C" compile --search none --target c "$M/$name.onnx" -o "$D/OUT.so"
		[ "$st" = "$want_st" ] || bad "exit status $st, expected $want_st"
		if ! cmp -s "$T/want" "$T/err"; then
			bad "stderr differs from $name.expect: $(diff "$T/want" "$T/err" |
				grep '^[<>]' | head -n 4 | tr '\n' ' ')"
		fi
		out_empty
		dir_is "$D" ""
		tmp_clean
	fi
	verdict "bad-model/$name"
done
# every bad model has its .expect
for m in "$M"/*.onnx; do
	[ -f "$ROOT/testdata/bad/$(basename "$m" .onnx).expect" ] ||
		bad "$(basename "$m") has no testdata/bad/$(basename "$m" .onnx).expect"
done
[ "$n_expect" -ge 12 ] || bad "only $n_expect .expect files"
verdict bad-model/every-model-has-expect

# ---- a good model: quiet, reproducible ----

G1=$T/good1 G2=$T/good2
fresh "$G1"
fresh "$G2"
x "$C" compile --search none --target c "$GOOD" -o "$G1/OUT.so"
status_is 0; out_empty; err_empty; dir_is "$G1" "OUT.json OUT.so"; tmp_clean
verdict compile/good-is-quiet

x "$C" compile --search none --target c "$GOOD" -o "$G2/OUT.so"
status_is 0
cmp -s "$G1/OUT.so" "$G2/OUT.so" || bad "the two OUT.so differ"
cmp -s "$G1/OUT.json" "$G2/OUT.json" || bad "the two OUT.json differ"
verdict compile/reproducible

# the runtime (rt.c) compiles to one object for every model, prefix and
# output kind: a compile into an empty object cache compiles it, the next
# ones (another prefix, an archive) take it from there, and the output is
# byte-identical to that of a compile that compiled it
G3=$T/good3
fresh "$G3"
x "$C" compile --search none --target c "$GOOD" -o "$G3/OUT.so" --cache "$G3/c/costs.sqlite" -v
status_is 0; err_has "the runtime's object: compiled"
cmp -s "$G1/OUT.so" "$G3/OUT.so" || bad "OUT.so differs from the first compile's"
x "$C" compile --search none --target c "$GOOD" -o "$G3/p.so" --prefix other \
	--cache "$G3/c/costs.sqlite" -v
status_is 0; err_has "the runtime's object: from the object cache"
x "$C" compile --search none --target c "$GOOD" -o "$G3/p.a" --prefix other \
	--cache "$G3/c/costs.sqlite" -v
status_is 0; err_has "the runtime's object: from the object cache"
x "$C" compile --search none --target c "$GOOD" -o "$G3/OUT2.so" --cache "$G3/c/costs.sqlite" -v
status_is 0; err_has "the runtime's object: from the object cache"
cmp -s "$G3/OUT.so" "$G3/OUT2.so" || bad "OUT.so with the cached runtime differs"
n=$(ls -A "$G3/c/objects" | grep -c '\.o$')
[ "$n" = 1 ] || bad "the object cache holds $n objects, expected the runtime's alone"
verdict compile/runtime-object-compiled-once
rm -rf "$G3"

# --cpu: a usage error for an unknown level; the level and its flags in
# OUT.json; reproducible; generic and native code both run and agree
GC=$T/cpu
fresh "$GC"
x "$C" compile --search none --target c "$GOOD" -o "$GC/OUT.so" --cpu x86-64-v9
status_is 2; out_empty; err_has "unknown --cpu 'x86-64-v9' (native, x86-64-v2"
dir_is "$GC" ""; tmp_clean
verdict compile/cpu-unknown-is-usage-error

# json_field FILE KEY: compiler.KEY of OUT.json
json_field() {
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["compiler"][sys.argv[2]])' "$1" "$2"
}
[ "$(json_field "$G1/OUT.json" cpu)" = native ] || bad "default cpu is '$(json_field "$G1/OUT.json" cpu)'"
[ "$(json_field "$G1/OUT.json" cpu_flags)" = "-march=native" ] ||
	bad "native cpu_flags are '$(json_field "$G1/OUT.json" cpu_flags)'"
for lvl in generic x86-64-v2; do
	fresh "$GC/$lvl"
	x "$C" compile --search none --target c "$GOOD" -o "$GC/$lvl/OUT.so" --cpu $lvl
	status_is 0; err_empty
	[ "$(json_field "$GC/$lvl/OUT.json" cpu)" = $lvl ] || bad "$lvl: cpu not recorded"
done
[ "$(json_field "$GC/generic/OUT.json" cpu_flags)" = "-march=x86-64 -mtune=generic" ] ||
	bad "generic cpu_flags are '$(json_field "$GC/generic/OUT.json" cpu_flags)'"
[ "$(json_field "$GC/x86-64-v2/OUT.json" cpu_flags)" = "-march=x86-64-v2 -mtune=generic" ] ||
	bad "x86-64-v2 cpu_flags are '$(json_field "$GC/x86-64-v2/OUT.json" cpu_flags)'"
[ "$(json_field "$GC/generic/OUT.json" cpu_resolved)" = "-march=x86-64 -mtune=generic" ] ||
	bad "generic cpu_resolved is '$(json_field "$GC/generic/OUT.json" cpu_resolved)'"
# what GCC makes of -march=native: a named CPU
if ${CC:-cc} -v 2>&1 | grep -q '^gcc version'; then
	json_field "$G1/OUT.json" cpu_resolved | grep -qE '^-march=[a-z0-9_-]+ -mtune=' &&
		! json_field "$G1/OUT.json" cpu_resolved | grep -q native ||
		bad "native cpu_resolved is '$(json_field "$G1/OUT.json" cpu_resolved)'"
fi
verdict compile/cpu-in-metadata

x "$C" compile --search none --target c "$GOOD" -o "$GC/again.so" --json "$GC/again.json" \
	--cpu generic
status_is 0
cmp -s "$GC/generic/OUT.so" "$GC/again.so" || bad "two --cpu generic OUT.so differ"
cmp -s "$G1/OUT.so" "$GC/generic/OUT.so" && bad "--cpu generic gives the native OUT.so"
verdict compile/cpu-reproducible

x "$C" run "$GC/generic/OUT.so" --check "$M/good/data"
status_is 0
printf 'sum: ok\ny: ok\n' | cmp -s - "$T/out" || bad "generic: stdout is '$(tr '\n' '|' <"$T/out")'"
x "$C" run "$GC/generic/OUT.so"
cp "$T/out" "$T/run-generic"
x "$C" run "$G1/OUT.so"
cmp -s "$T/out" "$T/run-generic" || bad "generic and native outputs differ"
verdict run/cpu-generic-and-native-agree

G3=$T/good3
fresh "$G3"
x "$C" compile --search none --target c "$GOOD" -o "$G3/model.so" --json "$G3/meta.json"
status_is 0; err_empty; dir_is "$G3" "meta.json model.so"
cmp -s "$G1/OUT.json" "$G3/meta.json" || bad "--json wrote other metadata than OUT.json"
verdict compile/json-option

# --depfile: a Make rule for the .so and .json on the model
G4=$T/good4
fresh "$G4"
x "$C" compile --search none --target c "$GOOD" -o "$G4/OUT.so" --depfile "$G4/OUT.d"
status_is 0; err_empty; dir_is "$G4" "OUT.d OUT.json OUT.so"
printf '%s %s: \\\n %s\n' "$G4/OUT.so" "$G4/OUT.json" "$GOOD" >"$T/want"
cmp -s "$T/want" "$G4/OUT.d" || bad "depfile is '$(tr '\n' '|' <"$G4/OUT.d")'"
verdict compile/depfile

# OUT.json records the version --version prints
v=$("$C" --version | sed 's/^collagec //')
grep -q "\"version\":[[:space:]]*\"$v\"" "$G1/OUT.json" || bad "OUT.json lacks \"version\": \"$v\""
grep -q '"prefix":[[:space:]]*"collagec"' "$G1/OUT.json" || bad "OUT.json lacks \"prefix\": \"collagec\""
verdict compile/json-has-version-and-prefix

# --prefix NAME: the .so exports exactly collagec.h's functions renamed
# NAME_*, nothing else; OUT.h declares them; run, bench, explain find NAME
usage_case prefix-not-identifier "compile: --prefix takes a C identifier of at most 64 characters, not '9lives'" \
	"$GOOD" -o "$U/OUT.so" --prefix 9lives
usage_case prefix-dash "compile: --prefix takes a C identifier of at most 64 characters, not 'my-model'" \
	"$GOOD" -o "$U/OUT.so" --prefix my-model
usage_case prefix-empty "compile: --prefix takes a C identifier of at most 64 characters, not ''" \
	"$GOOD" -o "$U/OUT.so" --prefix ''
# the API as collagec.h and runtime/api.def spell it, and as a model exports it
sed -n 's/^[a-z_ ]*[ *]\(collagec_[a-z_]*\)(.*/\1/p' "$ROOT/runtime/collagec.h" | sort >"$T/api.h"
sed -n 's/^API("[^"]*", "\([a-z_]*\)".*/collagec_\1/p' "$ROOT/runtime/api.def" | sort >"$T/api.def"
nm -D --defined-only "$G1/OUT.so" | awk '{print $3}' | sort >"$T/api.so"
[ -s "$T/api.h" ] || bad "no function found in collagec.h"
cmp -s "$T/api.h" "$T/api.def" || bad "runtime/api.def and collagec.h differ: $(diff "$T/api.h" "$T/api.def" | grep '^[<>]' | tr '\n' ' ')"
cmp -s "$T/api.h" "$T/api.so" || bad "a model exports other than collagec.h: $(diff "$T/api.h" "$T/api.so" | grep '^[<>]' | tr '\n' ' ')"
verdict compile/exports-exactly-the-api

P=$T/prefix
fresh "$P"
x "$C" compile --search none --target c "$GOOD" -o "$P/OUT.so" --prefix my_net --depfile "$P/OUT.d"
status_is 0; err_empty; dir_is "$P" "OUT.d OUT.h OUT.json OUT.so"; tmp_clean
sed 's/^collagec_/my_net_/' "$T/api.h" >"$T/want"
nm -D --defined-only "$P/OUT.so" | awk '{print $3}' | sort >"$T/got"
cmp -s "$T/want" "$T/got" || bad "exports differ from my_net_*: $(diff "$T/want" "$T/got" | grep '^[<>]' | tr '\n' ' ')"
grep -q '"prefix":[[:space:]]*"my_net"' "$P/OUT.json" || bad "OUT.json lacks \"prefix\": \"my_net\""
printf '%s %s %s: \\\n %s\n' "$P/OUT.so" "$P/OUT.json" "$P/OUT.h" "$GOOD" >"$T/want"
cmp -s "$T/want" "$P/OUT.d" || bad "depfile is '$(tr '\n' '|' <"$P/OUT.d")'"
verdict compile/prefix

# OUT.h declares every renamed function with collagec.h's types: a program
# that takes each one's address as a pointer of collagec.h's type compiles
{
	echo '#include "OUT.h"'
	echo 'int main(void) {'
	# one prototype a line: join collagec.h's continuation lines
	tr '\n\t' '  ' <"$ROOT/runtime/collagec.h" | sed 's/;/;\n/g; s/\*\//*\/\n/g' |
		sed 's/^ *//; s/  */ /g' |
		sed -n 's/^\([a-z_ ]*[ *]\)collagec_\([a-z_]*\)(\(.*\));$/\1(*p_\2)(\3) = my_net_\2; (void)p_\2;/p' 
	echo 'return 0; }'
} >"$P/use.c"
x cc -std=c11 -Wall -Werror -I"$ROOT/runtime" -I"$P" -c "$P/use.c" -o "$P/use.o"
status_is 0
[ "$(grep -c '= my_net_' "$P/use.c")" = "$(wc -l <"$T/api.h")" ] || bad "use.c does not take every function's address (multi-line prototypes?)"
verdict compile/prefix-header-compiles
rm -f "$P/use.c" "$P/use.o"

x "$C" compile --search none --target c "$GOOD" -o "$P/OUT2.so" --prefix my_net
status_is 0
cmp -s "$P/OUT.h" "$P/OUT2.h" || bad "the two OUT.h differ"
cmp -s "$P/OUT.so" "$P/OUT2.so" || bad "the two OUT.so differ"
verdict compile/prefix-reproducible

x "$C" run "$P/OUT.so" --input "x=$M/good/data/input_0.pb" --check "$M/good/data"
status_is 0; out_has "y"
verdict run/prefixed-model
x "$C" bench "$P/OUT.so" --runs 2 --warmup 1 --shape x=2,3
status_is 0; out_has "median"
verdict bench/prefixed-model
rm "$P/OUT.json"
x "$C" explain "$P/OUT.so"
status_is 0; out_has "add_bias"; out_has ", search none, prefix my_net"
verdict explain/prefixed-model-embedded-metadata

# -o OUT.a: a static archive whose only global symbols are the API; two
# models with different prefixes link statically into one program and run
S=$T/static
fresh "$S"
x "$C" compile --search none --target c "$GOOD" -o "$S/one.a" --prefix one
status_is 0; err_empty; dir_is "$S" "one.a one.h one.json"; tmp_clean
x "$C" compile --search none --target c "$GOOD" -o "$S/two.a" --prefix two
status_is 0
sed 's/^collagec_/one_/' "$T/api.h" >"$T/want"
nm --defined-only -g "$S/one.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort >"$T/got"
cmp -s "$T/want" "$T/got" || bad "one.a's globals differ from one_*: $(diff "$T/want" "$T/got" | grep '^[<>]' | tr '\n' ' ')"
grep -q '"ldlibs":[[:space:]]*"' "$S/one.json" || bad "OUT.json lacks compiler.ldlibs"
ldlibs=$(sed -n 's/.*"ldlibs":[[:space:]]*"\([^"]*\)".*/\1/p' "$S/one.json")
cat >"$S/main.c" <<'EOF2'
#include <stdio.h>
#include "one.h"
#include "two.h"
int main(void)
{
	float x[6] = { 1, 2, 3, -4, -5, -6 };
	const int64_t dims[2] = { 2, 3 };
	const float *y1, *y2;
	collagec_model *a, *b;

	if (one_open(&a) || two_open(&b) || one_set_input(a, 0, x, dims, 2) ||
	    two_set_input(b, 0, x, dims, 2) || one_run(a) || two_run(b) ||
	    one_get_output(a, 1, (const void **)&y1, NULL, NULL) ||
	    two_get_output(b, 1, (const void **)&y2, NULL, NULL))
		return 1;
	for (int i = 0; i < 6; i++)
		printf("%g %g\n", y1[i], y2[i]);
	one_close(a);
	two_close(b);
	return 0;
}
EOF2
# shellcheck disable=SC2086
x cc -std=c11 -Wall -Werror -I"$ROOT/runtime" -I"$S" "$S/main.c" "$S/one.a" "$S/two.a" $ldlibs -lm \
	-o "$S/main"
status_is 0
x "$S/main"
status_is 0
printf '1.5 1.5\n1.75 1.75\n4 4\n0 0\n0 0\n0 0\n' >"$T/want"
cmp -s "$T/want" "$T/out" || bad "outputs: $(tr '\n' '|' <"$T/out")"
verdict compile/static-archives-link-into-one-program

x "$C" run "$S/one.a"
status_is 1; err_has "$S/one.a: cannot load the model"
verdict run/static-archive-is-refused

# two prefixes that differ only in case: both headers in one file
mkdir -p "$P/case"
x "$C" compile --search none --target c "$GOOD" -o "$P/case/OUT.so" --prefix MY_NET
status_is 0
printf '#include "OUT.h"\n#include "case/OUT.h"\nint main(void) { collagec_status (*f[2])(collagec_model *) = { my_net_run, MY_NET_run }; return f[0] == f[1]; }\n' \
	>"$P/two.c"
x cc -std=c11 -Wall -Werror -I"$ROOT/runtime" -I"$P" -c "$P/two.c" -o "$P/two.o"
status_is 0
verdict compile/prefix-headers-differing-in-case

# --dump-ir: NN-pass.ir per pass from 00-import.ir, then the loop IR after
# each lowering step, NN-lower.K-step.tir, and NN-lower.tir; each names the
# ONNX nodes (span comments)
G5=$T/good5
fresh "$G5"
x "$C" compile --search none --target c "$GOOD" -o "$G5/OUT.so" --dump-ir "$G5/ir"
status_is 0; err_empty
files=$(ls "$G5/ir" 2>/dev/null)
[ -f "$G5/ir/00-import.ir" ] || bad "no 00-import.ir (got: $(echo $files))"
n_ir=$(echo "$files" | grep -c '^[0-9][0-9]-[a-z0-9-]*\.ir$')
[ "$n_ir" -ge 2 ] || bad "only $n_ir .ir files"
tir=$(echo "$files" | grep '\.tir$' | tr '\n' ' ')
want=$(printf '%02d-lower.1-ops.tir %02d-lower.2-strategy.tir %02d-lower.3-fuse.tir %02d-lower.4-share.tir %02d-lower.5-parallel.tir %02d-lower.tir ' \
	"$n_ir" "$n_ir" "$n_ir" "$n_ir" "$n_ir" "$n_ir")
[ "$tir" = "$want" ] || bad "tir files are '$tir' after $n_ir .ir files"
i=0
for f in $files; do
	case $f in
	$(printf '%02d' $i)-*.ir) i=$((i + 1)) ;;
	$(printf '%02d' $i)-lower.*tir) ;;
	*) bad "file $f out of sequence (expected number $i)" ;;
	esac
	for node in "add_bias(Add)" "relu_out(Relu)"; do
		grep -qF "$node" "$G5/ir/$f" || bad "$f does not name node $node"
	done
done
[ "$(echo "$files" | wc -l)" = $((n_ir + 6)) ] || bad "unexpected files: $(echo $files)"
verdict compile/dump-ir

# ---- external data ----

E=$T/ext
fresh "$E"
x "$C" compile --search none --target c "$M/ext/ext.onnx" -o "$E/OUT.so" --depfile "$E/OUT.d"
status_is 0; out_empty; err_empty; tmp_clean
verdict external-data/compile

printf '%s %s: \\\n %s \\\n %s\n' "$E/OUT.so" "$E/OUT.json" "$M/ext/ext.onnx" \
	"$M/ext/weights.bin" >"$T/want"
cmp -s "$T/want" "$E/OUT.d" 2>/dev/null || bad "depfile is '$(tr '\n' '|' <"$E/OUT.d")'"
verdict external-data/depfile-lists-weights

x "$C" run "$E/OUT.so" --check "$M/ext/data"
status_is 0; err_empty; out_has "y: ok"
verdict external-data/runs-correctly

# ---- run ----

SO=$G1/OUT.so
x "$C" run "$SO"
status_is 0; err_empty
sed -n 1p "$T/out" | grep -q '^sum: float32 \[1,3\] ' || bad "line 1 is '$(sed -n 1p "$T/out")'"
sed -n 2p "$T/out" | grep -q '^y: float32 \[1,3\] ' || bad "line 2 is '$(sed -n 2p "$T/out")'"
[ "$(wc -l <"$T/out")" -eq 2 ] || bad "$(wc -l <"$T/out") lines of output, expected 2"
cp "$T/out" "$T/run1"
verdict run/random-inputs

x "$C" run "$SO"
cmp -s "$T/out" "$T/run1" || bad "two runs with the default seed differ"
x "$C" run "$SO" --seed 2
status_is 0
cmp -s "$T/out" "$T/run1" && bad "--seed 2 gives the same outputs as seed 1"
verdict run/seeded

x "$C" run "$SO" --check "$M/good/data"
status_is 0; err_empty
printf 'sum: ok\ny: ok\n' | cmp -s - "$T/out" || bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/check-values-batch-2

R=$T/run
fresh "$R"
x "$C" run "$SO" --output-dir "$R/pb"
status_is 0; out_empty; err_empty; dir_is "$R/pb" "sum.pb y.pb"
verdict run/output-dir-pb

x "$C" run "$SO" --output-dir "$R/npy" --npy
status_is 0; out_empty; err_empty; dir_is "$R/npy" "sum.npy y.npy"
verdict run/output-dir-npy

# the files hold the right tensors (ONNX and numpy read them; same values),
# and a tampered copy is made for --check
res=$("$PY" - "$R" <<'EOF' 2>&1
import os, sys
import numpy as np
from onnx import TensorProto, numpy_helper
r = sys.argv[1]
for name in ("sum", "y"):
    t = TensorProto()
    with open(os.path.join(r, "pb", name + ".pb"), "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    b = np.load(os.path.join(r, "npy", name + ".npy"))
    if t.name != name or a.shape != (1, 3) or a.dtype != np.float32:
        sys.exit("%s.pb: name %r shape %s %s" % (name, t.name, a.shape, a.dtype))
    if b.shape != (1, 3) or b.dtype != np.float32 or not np.array_equal(a, b):
        sys.exit("%s.npy: shape %s %s, equal %s" % (name, b.shape, b.dtype, np.array_equal(a, b)))
    if name == "y":
        a = a.copy()
        a[0, 1] += 0.5
    os.makedirs(os.path.join(r, "tampered"), exist_ok=True)
    with open(os.path.join(r, "tampered", name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict run/output-files-readable

x "$C" run "$SO" --check "$R/pb"
status_is 0; err_empty
printf 'sum: ok\ny: ok\n' | cmp -s - "$T/out" || bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/check-pb-outputs

x "$C" run "$SO" --check "$R/npy"
status_is 0; err_empty
printf 'sum: ok\ny: ok\n' | cmp -s - "$T/out" || bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/check-npy-outputs

x "$C" run "$SO" --check "$R/tampered"
status_is 1
err_has "collagec: error: check: output 'y': 1 of 3 values differ; first at 1"
grep -q "output 'sum'" "$T/err" && bad "the untouched output 'sum' is reported"
out_has "sum: ok"
verdict run/check-tampered-fails

# string tensors: printed quoted, written as .pb string_data, checked exactly
SN=/usr/share/libonnx-testdata/data/node/test_strnormalizer_export_monday_casesensintive_upper
x "$C" compile -q --search none --target c "$SN/model.onnx" -o "$R/strings.so"
status_is 0
x "$C" run "$R/strings.so" --input "$SN/test_data_set_0/input_0.pb" --output-dir "$R/str"
status_is 0; out_empty; err_empty; dir_is "$R/str" "y.pb"
x "$C" run "$R/strings.so" --input "$SN/test_data_set_0/input_0.pb"
status_is 0; err_empty
printf 'y: string [3] "TUESDAY" "WEDNESDAY" "THURSDAY"\n' | cmp -s - "$T/out" ||
	bad "stdout is '$(cat "$T/out")'"
x "$C" run "$R/strings.so" --input "$SN/test_data_set_0/input_0.pb" --check "$R/str"
status_is 0; err_empty; out_has "y: ok"
res=$("$PY" - "$R" <<'EOF' 2>&1
import os, sys
import numpy as np
from onnx import TensorProto, numpy_helper
r = sys.argv[1]
t = TensorProto()
with open(os.path.join(r, "str", "y.pb"), "rb") as f:
    t.ParseFromString(f.read())
a = numpy_helper.to_array(t)
if t.data_type != TensorProto.STRING or list(a) != ["TUESDAY", "WEDNESDAY", "THURSDAY"]:
    sys.exit("y.pb: type %d %r" % (t.data_type, a))
os.makedirs(os.path.join(r, "strbad"), exist_ok=True)
with open(os.path.join(r, "strbad", "y.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.array(["TUESDAY", "wednesday", "THURSDAY"], dtype=object),
                                    "y").SerializeToString())
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
x "$C" run "$R/strings.so" --input "$SN/test_data_set_0/input_0.pb" --check "$R/strbad"
status_is 1
err_has "check: output 'y': 1 of 3 strings differ; first at 1: got \"WEDNESDAY\", expected \"wednesday\""
verdict run/strings

fresh "$R/empty"
x "$C" run "$SO" --check "$R/empty"
status_is 1; err_has "check: no expected file for output 0 'sum' in $R/empty"
verdict run/check-missing-expected-fails

# file names come from output names ('/' -> '_'); --check must find them
fresh "$R/slash"
x "$C" compile --search none --target c "$M/good/slash.onnx" -o "$R/slash/OUT.so"
status_is 0
x "$C" run "$R/slash/OUT.so" --output-dir "$R/slash/out"
status_is 0
x "$C" run "$R/slash/OUT.so" --check "$R/slash/out"
status_is 0; err_empty; out_has "out/relu: ok"
verdict run/check-finds-output-dir-files-for-names-with-slash

# one .so, several batch sizes
x "$C" run "$SO" --shape N=1
status_is 0; err_empty
grep -q '^sum: float32 \[1,3\] ' "$T/out" && grep -q '^y: float32 \[1,3\] ' "$T/out" ||
	bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/symbolic-batch-1

x "$C" run "$SO" --shape N=64
status_is 0; err_empty
grep -q '^sum: float32 \[64,3\] ' "$T/out" && grep -q '^y: float32 \[64,3\] ' "$T/out" ||
	bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/symbolic-batch-64

x "$C" run "$SO" --shape x=5,3
status_is 0
grep -q '^y: float32 \[5,3\] ' "$T/out" || bad "stdout is '$(tr '\n' '|' <"$T/out")'"
verdict run/shape-by-input-name

# --kernels: one tab-separated line per kernel of OUT.json, in its order
x "$C" run "$SO" --kernels
status_is 0; err_empty
res=$("$PY" - "$G1/OUT.json" "$T/out" <<'EOF' 2>&1
import json, sys
meta = json.load(open(sys.argv[1]))
want = []
for p in meta["partitions"]:
    for k in p["kernels"]:
        nodes = " ".join("%s(%s)" % (n["name"], n["op"]) for n in k["onnx_nodes"])
        v = k["variants"][-1]
        want.append([k["name"], str(p["id"]), v["implementation"], v["condition"], nodes])
got = [l.split("\t") for l in open(sys.argv[2]).read().splitlines() if l.startswith("kernel\t")]
if [g[0] for g in got] != ["kernel"] * len(want) or [g[1] for g in got] != [str(i) for i in range(len(want))]:
    sys.exit("kernel lines %r" % got)
if [g[2:] for g in got] != want:
    sys.exit("got %r, expected %r" % ([g[2:] for g in got], want))
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
grep -q '^sum: float32 \[1,3\] ' "$T/out" || bad "the outputs are no longer printed"
verdict run/kernels-lists-every-kernel

# run: usage and bad shared objects
x "$C" run
status_is 2; err_has "run: expected one compiled model (OUT.so)"
verdict run/usage/no-model

x "$C" run "$SO" --frobnicate
status_is 2; err_has "run: unknown or incomplete option '--frobnicate'"
verdict run/usage/unknown-option

x "$C" run "$SO" --threads 0
status_is 2; err_has "run: --threads takes a number >= 1"
verdict run/usage/threads-0

x "$C" run "$T/missing.so"
status_is 1; out_empty
err_has "collagec: error: $T/missing.so: cannot load the model"
err_has "No such file or directory"
[ "$(wc -l <"$T/err")" -eq 1 ] || bad "$(wc -l <"$T/err") lines of stderr"
verdict run/missing-so

printf 'this is not a shared object\n' >"$T/garbage.so"
x "$C" run "$T/garbage.so"
status_is 1; out_empty
err_has "collagec: error: $T/garbage.so: cannot load the model"
verdict run/garbage-so

cp "$G1/OUT.json" "$T/json.so"
x "$C" run "$T/json.so"
status_is 1; out_empty; err_has "collagec: error: $T/json.so: cannot load the model"
verdict run/text-file-so

# a real shared object that is not a collagec model
printf 'int not_a_model(void) { return 0; }\n' >"$T/notmodel.c"
if ${CC:-cc} -shared -fPIC -o "$T/notmodel.so" "$T/notmodel.c" 2>/dev/null; then
	x "$C" run "$T/notmodel.so"
	status_is 1; out_empty; err_has "collagec: error: $T/notmodel.so: not a collagec model"
else
	bad "cannot build a test shared object with ${CC:-cc}"
fi
verdict run/foreign-so

# a NAME_abi_version alone is no prefix; with NAME_run, NAME_open must be there too
printf 'int foo_abi_version(void) { return 3; }\n' >"$T/half.c"
${CC:-cc} -shared -fPIC -o "$T/half.so" "$T/half.c" 2>/dev/null
x "$C" run "$T/half.so"
status_is 1; err_has "$T/half.so: not a collagec model: it exports no collagec_abi_version"
abi=$(sed -n 's/^#define COLLAGEC_ABI_VERSION \([0-9]*\).*/\1/p' "$ROOT/runtime/collagec.h")
printf 'int foo_abi_version(void) { return %s; }\nint foo_run(void) { return 0; }\n' "$abi" \
	>"$T/half.c"
${CC:-cc} -shared -fPIC -o "$T/half.so" "$T/half.c" 2>/dev/null
x "$C" run "$T/half.so"
status_is 1; err_has "$T/half.so: not a collagec model: missing foo_open"
verdict run/foreign-so-with-a-prefix-look-alike

# ---- bench ----

x "$C" bench "$SO" --runs 3 --warmup 1
status_is 0; err_empty
grep -qE '^.*OUT\.so: median [0-9.]+ ms, p90 [0-9.]+ ms, min [0-9.]+ ms \(3 runs, 1 warm-up, [0-9]+ threads?\)$' \
	"$T/out" || bad "stdout is '$(head -n 1 "$T/out")'"
[ "$(wc -l <"$T/out")" -eq 1 ] || bad "$(wc -l <"$T/out") lines without --profile"
verdict bench/summary-line

# --profile: every partition of OUT.json once, with its target, rule and
# nodes, slowest first, times >= 0, shares adding up to about 100%; every
# kernel under its partition. No timing thresholds.
x "$C" bench "$SO" --runs 5 --warmup 1 --profile
status_is 0; err_empty
res=$("$PY" - "$G1/OUT.json" "$T/out" <<'EOF' 2>&1
import json, re, sys
meta = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
if not re.match(r"profile: %d partitions?, %d kernels?, [0-9.]+ ms in kernels" % (
        len(meta["partitions"]), sum(len(p["kernels"]) for p in meta["partitions"])), lines[1]):
    sys.exit("line 2 is %r" % lines[1])
parts, kernels, cur = [], {}, None
for l in lines[2:]:
    m = re.match(r"^partition (\d+): ([0-9.]+) ms, ([0-9.]+)%, target (.*), rule (.*), nodes (.*)$", l)
    k = re.match(r"^  kernel (\S+): ([0-9.]+) ms, (\S+) if (.+)$", l)
    if m:
        cur = int(m.group(1))
        parts.append((cur, float(m.group(2)), float(m.group(3)), m.group(4), m.group(5), m.group(6)))
        kernels[cur] = []
    elif k and cur is not None:
        kernels[cur].append(k.group(1))
    else:
        sys.exit("unexpected line %r" % l)
ids = [p[0] for p in parts]
if sorted(ids) != sorted(p["id"] for p in meta["partitions"]) or len(set(ids)) != len(ids):
    sys.exit("partitions %r" % ids)
if [p[1] for p in parts] != sorted((p[1] for p in parts), reverse=True):
    sys.exit("not slowest first: %r" % parts)
if abs(sum(p[2] for p in parts) - 100) > 0.1 * len(parts):
    sys.exit("shares add up to %g" % sum(p[2] for p in parts))
for p in meta["partitions"]:
    got = [q for q in parts if q[0] == p["id"]][0]
    nodes = " ".join("%s(%s)" % (n["name"], n["op"]) for n in p["onnx_nodes"])
    if got[3:] != (p["target"], p["rule"], nodes):
        sys.exit("partition %d: %r" % (p["id"], got))
    if kernels[p["id"]] != [k["name"] for k in p["kernels"]]:
        sys.exit("partition %d kernels %r" % (p["id"], kernels[p["id"]]))
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict bench/profile-lists-every-partition

x "$C" bench "$SO" --runs 5 --warmup 1 --profile --json
status_is 0; err_empty
res=$("$PY" - "$G1/OUT.json" "$T/out" <<'EOF' 2>&1
import json, sys
meta = json.load(open(sys.argv[1]))
r = json.loads(open(sys.argv[2]).read())
for key in ("median_ms", "p90_ms", "min_ms", "mean_ms"):
    if not isinstance(r.get(key), (int, float)):
        sys.exit("no %s" % key)
prof = r["profile"]
parts = prof["partitions"]
if sorted(p["id"] for p in parts) != sorted(p["id"] for p in meta["partitions"]):
    sys.exit("partitions %r" % [p["id"] for p in parts])
if abs(sum(p["share_pct"] for p in parts) - 100) > 0.01 * len(parts) + 0.01:
    sys.exit("shares add up to %g" % sum(p["share_pct"] for p in parts))
if prof["kernels_ms"] < 0 or [p["median_ms"] for p in parts] != sorted((p["median_ms"] for p in parts), reverse=True):
    sys.exit("times %r" % parts)
for p in parts:
    m = [q for q in meta["partitions"] if q["id"] == p["id"]][0]
    if (p["target"], p["rule"], p["onnx_nodes"]) != (m["target"], m["rule"], m["onnx_nodes"]):
        sys.exit("partition %d: %r" % (p["id"], p))
    if [k["name"] for k in p["kernels"]] != [k["name"] for k in m["kernels"]]:
        sys.exit("partition %d kernels" % p["id"])
    for k in p["kernels"]:
        if k["median_ms"] < 0 or not k["implementation"] or not k["condition"]:
            sys.exit("kernel %r" % k)
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict bench/profile-json

x "$C" bench "$SO" --runs 2 --warmup 0 --json
status_is 0
grep -q '"profile"' "$T/out" && bad "--json without --profile has a profile"
verdict bench/json-without-profile

# ---- targets ----

x "$C" targets
status_is 0; err_empty
awk '/^c \(/ { c = 1; next } c && /^  status: / { print $2; exit }' "$T/out" >"$T/cstatus"
[ "$(cat "$T/cstatus")" = available ] || bad "target c: status '$(cat "$T/cstatus")'"
verdict targets/c-available

x "$C" targets extra
status_is 2; err_has "targets: unexpected argument 'extra'"
verdict targets/usage

# the built-in pattern table of blas, listed rule by rule
x "$C" targets
out_has "  hooks:    partition_rule=patterns relay_to_tir=own"
out_has "  patterns: 10 rules, built in: patterns/blas.pat"
out_has "  rule:     blas.matmul = \$mm  (patterns/blas.pat:"
verdict targets/blas-patterns

# ---- pattern files (--patterns) ----

P=$T/pat
fresh "$P"
printf 'target c\n# a user rule\nneg_relu = Relu(Neg(*))\n' >"$P/good.pat"
x "$C" targets --patterns "$P/good.pat"
status_is 0; err_empty
out_has "  rule:     c.neg_relu = Relu(Neg(*))  ($P/good.pat:3)"
awk '/^c \(/ { c = 1; next } c && /^  patterns: / { print; exit }' "$T/out" >"$T/cpat"
[ "$(cat "$T/cpat")" = "  patterns: 1 rule" ] || bad "c: '$(cat "$T/cpat")'"
verdict patterns/targets-lists-user-rules

# a syntax error: FILE:LINE:COL, the line and a caret; exit 2, nothing written
printf 'target blas\nmm_act = Relu(MatMul(*, *)\nother = Tanh(*)\n' >"$P/open.pat"
fresh "$P/out"
x "$C" compile --search none --target c "$GOOD" -o "$P/out/m.so" --patterns "$P/open.pat"
status_is 2; out_empty
printf "collagec: error: %s:2:14: '(' is not closed (found 'other' at line 3)\n%s\n%s\n" \
	"$P/open.pat" "    mm_act = Relu(MatMul(*, *)" "                 ^" >"$T/want"
cmp -s "$T/want" "$T/err" || bad "stderr: $(diff "$T/want" "$T/err" | head -n 3 | tr '\n' ' ')"
dir_is "$P/out" ""
tmp_clean
verdict patterns/syntax-error-line-col-caret

for c in "Conv(*, *)[grup == 1]|2:16: Conv has no attribute 'grup'" \
	 "Conv(*, *)[group == 1.5, auto_pad == VALID]|2:42: Conv.auto_pad is a string" \
	 "Sigmoidd(*)|2:5: unknown op 'Sigmoidd'; did you mean 'Sigmoid'?" \
	 "Relu(\$act)|2:11: no 'let act' above"; do
	printf 'target c\nx = %s\n' "${c%%|*}" >"$P/one.pat"
	x "$C" compile --search none --target c "$GOOD" -o "$P/out/m.so" --patterns "$P/one.pat"
	status_is 2; err_has "$P/one.pat:${c#*|}"
	dir_is "$P/out" ""
	verdict "patterns/error-$(echo "${c%%|*}" | tr -c 'a-zA-Z0-9\n' '-' | cut -c1-24)"
done

x "$C" compile --search none --target c "$GOOD" -o "$P/out/m.so" --patterns "$P/missing.pat"
status_is 2; err_has "collagec: error: --patterns '$P/missing.pat': No such file or directory"
dir_is "$P/out" ""
verdict patterns/missing-file

# the README's example pattern file is valid and its rules are listed
awk '/^A pattern file names a target/ { on = 1; next } on && /^```$/ { if (in_) exit; in_ = 1; next }
	in_ { print }' "$ROOT/README.md" >"$P/readme.pat"
x "$C" targets --patterns "$P/readme.pat"
status_is 0; err_empty
out_has "  rule:     blas.mm_neg = Neg(\$mm)  ($P/readme.pat:3)"
out_has "  rule:     blas.conv3 = Relu(Conv(*, const, const?)[kernel_shape == [3, 3], group == 1])"
verdict patterns/readme-example

x "$C" conformance --patterns "$P/open.pat" "$M/good"
status_is 2; err_has "$P/open.pat:2:14: '(' is not closed"
verdict patterns/conformance-checks-files-first

# ---- cache: the cost cache as JSON lines ----

K=$T/cache
fresh "$K"
# three rows out of key order, +inf, a null and a missing label, a blank line
cat >"$K/rows.jsonl" <<'EOF'
{"structure":"bb","target":"c","threads":1,"machine":"CPU X|avx,avx2|2cpu","version":"0.1.0","seconds":0.00125,"label":"Conv+Relu 1x8x8x8"}
{"structure":"aa","target":"blas","threads":4,"machine":"CPU X|avx,avx2|2cpu","version":"0.1.0","seconds":"inf","label":null}

{"structure":"aa","target":"blas","threads":4,"machine":"CPU Y|-|8cpu","version":"0.0.9","seconds":1.2345678901234567e-7}
EOF
x "$C" cache import "$K/rows.jsonl" --cache "$K/a.sqlite"
status_is 0; err_empty; out_has "cache: imported 3 rows into $K/a.sqlite"
verdict cache/import

x "$C" cache export --cache "$K/a.sqlite"
status_is 0; err_empty
cp "$T/out" "$K/a.jsonl"
res=$("$PY" - "$K/a.jsonl" <<'EOF' 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
keys = ["structure", "target", "threads", "machine", "version", "seconds", "label"]
if any(list(r) != keys for r in rows):
    sys.exit("keys %r" % [list(r) for r in rows])
if [(r["structure"], r["machine"]) for r in rows] != [("aa", "CPU X|avx,avx2|2cpu"),
                                                      ("aa", "CPU Y|-|8cpu"),
                                                      ("bb", "CPU X|avx,avx2|2cpu")]:
    sys.exit("order %r" % rows)
if rows[0]["seconds"] != "inf" or rows[0]["label"] is not None or rows[1]["label"] is not None:
    sys.exit("inf/null: %r" % rows)
if rows[1]["seconds"] != 1.2345678901234567e-7 or rows[2]["seconds"] != 0.00125:
    sys.exit("values %r" % rows)
if rows[2]["threads"] != 1 or rows[2]["label"] != "Conv+Relu 1x8x8x8":
    sys.exit("row 3 %r" % rows[2])
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict cache/export-json-lines-in-key-order

# export -> import (stdin) into a second file -> export: byte-identical
x "$C" cache export --cache "$K/a.sqlite" -o "$K/a2.jsonl"
status_is 0; out_empty; err_empty
cmp -s "$K/a.jsonl" "$K/a2.jsonl" || bad "-o wrote other rows than stdout"
"$C" cache import - --cache "$K/b.sqlite" <"$K/a.jsonl" >/dev/null 2>"$T/err" ||
	bad "import -: $(first_err)"
x "$C" cache export --cache "$K/b.sqlite"
status_is 0
cmp -s "$K/a.jsonl" "$T/out" ||
	bad "the round trip differs: $(diff "$K/a.jsonl" "$T/out" | head -n 3 | tr '\n' ' ')"
verdict cache/export-import-round-trip

# a malformed line: FILE:LINE, exit 1, and not even the good lines go in
{
	echo '{"structure":"new","target":"c","threads":1,"machine":"m","version":"v","seconds":1}'
	echo '{"structure":"new2","target":"c","threads":1.5,"machine":"m","version":"v","seconds":-1}'
	echo 'not json'
} >"$K/bad.jsonl"
x "$C" cache import "$K/bad.jsonl" --cache "$K/b.sqlite"
status_is 1; out_empty
err_has "collagec: error: $K/bad.jsonl:2: 'threads' must be an integer >= 0"
err_has "collagec: error: $K/bad.jsonl:2: 'seconds' must be a number >= 0 or \"inf\""
err_has "collagec: error: $K/bad.jsonl:3: not valid JSON"
err_has "collagec: error: $K/bad.jsonl: nothing imported"
"$C" cache export --cache "$K/b.sqlite" >"$T/out" 2>/dev/null
cmp -s "$K/a.jsonl" "$T/out" || bad "rows changed after a refused import"
verdict cache/import-malformed-imports-nothing

x "$C" cache import "$K/missing.jsonl" --cache "$K/b.sqlite"
status_is 1; err_has "collagec: error: $K/missing.jsonl: cannot read: No such file or directory"
verdict cache/import-missing-file

x "$C" cache stats --cache "$K/a.sqlite"
status_is 0; err_empty
out_has "cache: $K/a.sqlite"
out_has "rows: 3 (1 +inf: cannot build or run)"
grep -qE '^size: [0-9]+ bytes$' "$T/out" || bad "no size line"
grep -qE '^this machine: .+\|.+\|[0-9]+cpu\|cpu=native$' "$T/out" || bad "no machine fingerprint line"
grep -qE '^this collagec: [0-9]+\.[0-9]+\.[0-9]+\+[0-9a-f]{12}$' "$T/out" || bad "no code identifier line"
# section TITLE: the lines under "by TITLE:", spaces squeezed
section() {
	awk -v t="by $1:" '$0 == t { on = 1; next } /^by / { on = 0 } on' "$T/out" | tr -s ' '
}
[ "$(section target | tr '\n' '|')" = " blas 2| c 1|" ] || bad "by target: $(section target)"
[ "$(section machine | tr '\n' '|')" = " CPU X|avx,avx2|2cpu 2| CPU Y|-|8cpu 1|" ] ||
	bad "by machine: $(section machine)"
[ "$(section 'collagec version' | tr '\n' '|')" = " 0.0.9 1| 0.1.0 2|" ] ||
	bad "by version: $(section 'collagec version')"
verdict cache/stats

# reading a cache that is not there creates nothing
x "$C" cache stats --cache "$K/none/costs.sqlite"
status_is 0; out_has "rows: 0"
[ -e "$K/none" ] && bad "stats created $K/none"
x "$C" cache export --cache "$K/none/costs.sqlite"
status_is 0; out_empty
[ -e "$K/none" ] && bad "export created $K/none"
verdict cache/missing-cache-reads-empty

x "$C" cache clear --version 0.0.9 --cache "$K/a.sqlite"
status_is 0; out_has "cache: deleted 1 row from $K/a.sqlite"
x "$C" cache clear --older-than 1 --cache "$K/a.sqlite"
status_is 0; out_has "cache: deleted 0 rows"
x "$C" cache clear --cache "$K/a.sqlite"
status_is 0; out_has "cache: deleted 2 rows"
x "$C" cache export --cache "$K/a.sqlite"
status_is 0; out_empty
verdict cache/clear

# the default file: $XDG_CACHE_HOME/collagec/costs.sqlite, directories made
x env XDG_CACHE_HOME="$K/xdg" "$C" cache import "$K/rows.jsonl"
status_is 0; out_has "into $K/xdg/collagec/costs.sqlite"
[ -f "$K/xdg/collagec/costs.sqlite" ] || bad "no $K/xdg/collagec/costs.sqlite"
x env -u XDG_CACHE_HOME HOME="$K/home" "$C" cache stats
status_is 0; out_has "cache: $K/home/.cache/collagec/costs.sqlite (not created yet)"
verdict cache/default-path

# a cache that cannot be made (under a regular file, even for root): exit 4
printf 'x' >"$K/afile"
x "$C" cache import "$K/rows.jsonl" --cache "$K/afile/sub/costs.sqlite"
status_is 4
err_has "collagec: error: cannot open the cost cache '$K/afile/sub/costs.sqlite': cannot create its directory: Not a directory"
verdict cache/unwritable

# a newer schema is refused
cp "$K/b.sqlite" "$K/new.sqlite"
"$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE schema_version SET version = 99")
c.commit()' "$K/new.sqlite" || bad "cannot set the schema version"
x "$C" cache stats --cache "$K/new.sqlite"
status_is 4; err_has "its schema version 99 is newer than this collagec's"
verdict cache/newer-schema-refused

for c in "|cache: expected an action" "frob|cache: unknown action 'frob'" \
	 "stats extra|cache: unexpected argument 'extra'" \
	 "import|cache: import expects one FILE" "stats -o x|cache: -o is for 'cache export' only" \
	 "export --version 1|cache: --version is for 'cache clear' only" \
	 "clear --older-than x|cache: --older-than takes a number >= 0" \
	 "stats --frob|cache: unknown or incomplete option '--frob'"; do
	# shellcheck disable=SC2086
	x "$C" cache ${c%%|*} --cache "$K/u.sqlite"
	status_is 2; out_empty; err_has "${c#*|}"
	[ -e "$K/u.sqlite" ] && bad "a usage error created the cache"
	verdict "cache/usage/$(echo "${c%%|*}" | tr -c 'a-z0-9\n' '-' | sed 's/^$/none/')"
done

# ---- explain: partitions, costs and search of a compiled model ----

X=$T/explain
fresh "$X"
if ! "$PY" "$ROOT/testdata/gen_models.py" "$X" mnist_cnn >"$T/gen.log" 2>&1; then
	bad "gen_models.py mnist_cnn failed: $(tail -n 1 "$T/gen.log")"
fi
x "$C" compile --search none --target c "$X/mnist_cnn.onnx" -o "$X/mnist.so" --target blas,c
status_is 0; err_empty
verdict explain/compile-mnist

x "$C" explain "$X/mnist.so"
status_is 0; err_empty
cp "$T/out" "$X/table.txt"
res=$("$PY" - "$X/mnist.json" "$X/table.txt" <<'EOF' 2>&1
import json, re, sys
meta = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
parts = meta["partitions"]
if lines[0] != "model: " + meta["model"]["path"]:
    sys.exit("line 1 is %r" % lines[0])
mode = meta["search"].get("mode") or meta["compiler"]["search"]
if lines[1] != "compiler: collagec %s, targets blas,c, search %s" % (meta["compiler"]["version"], mode):
    sys.exit("line 2 is %r" % lines[1])
if not re.match(r"^id +target +rule +nodes +estimated +measured +share$", lines[2]):
    sys.exit("header is %r" % lines[2])
rows = lines[3:3 + len(parts)]
for p, l in zip(parts, rows):
    m = re.match(r"^ *(\d+)  (\S+) +(\S+) +(\d+): (.*?) +(\S+(?: [num]?s)?) +(\S+(?: [num]?s)?) +(\S+)$", l)
    if not m:
        sys.exit("row %r" % l)
    want_nodes = " ".join("%s(%s)" % (n["name"], n["op"]) for n in p["onnx_nodes"][:3])
    if (int(m.group(1)), m.group(2), m.group(3), int(m.group(4))) != (
            p["id"], p["target"], p["rule"], len(p["onnx_nodes"])) or not m.group(5).startswith(want_nodes):
        sys.exit("row %r for %r" % (l, p))
    if p["estimated_cost"] is None and (m.group(6), m.group(8)) != ("-", "-"):
        sys.exit("unknown cost not '-': %r" % l)
n_c = sum(p["target"] == "c" for p in parts)
n_blas = sum(p["target"] == "blas" for p in parts)
if n_c == 0 or n_blas == 0:
    sys.exit("targets c %d, blas %d" % (n_c, n_blas))
order = []
for p in parts:
    if p["target"] not in order:
        order.append(p["target"])
counts = ", ".join("%s %d" % (t, sum(p["target"] == t for p in parts)) for t in order)
want = "%d partitions (%s), %d ONNX nodes" % (len(parts), counts,
                                             len({n["name"] for p in parts for n in p["onnx_nodes"]}))
if lines[3 + len(parts)] != want:
    sys.exit("summary %r, expected %r" % (lines[3 + len(parts)], want))
s = lines[4 + len(parts)]
if not s.startswith("search %s: estimator " % mode) or "candidates %d" % meta["search"]["candidates"] not in s:
    sys.exit("search line %r" % s)
if len(lines) != 5 + len(parts):
    sys.exit("%d lines" % len(lines))
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict explain/table

x "$C" explain "$X/mnist.so" --json
status_is 0; err_empty
res=$("$PY" - "$X/mnist.json" "$T/out" <<'EOF' 2>&1
import json, sys
meta = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
if len(d["partitions"]) != len(meta["partitions"]):
    sys.exit("%d partitions, OUT.json has %d" % (len(d["partitions"]), len(meta["partitions"])))
if d["model"] != meta["model"]:
    sys.exit("model %r" % d["model"])
for p, m in zip(d["partitions"], meta["partitions"]):
    if [p[k] for k in ("id", "target", "rule", "nodes")] != [m[k] for k in ("id", "target", "rule", "onnx_nodes")]:
        sys.exit("partition %r" % p)
    if p["estimated_cost"] != m["estimated_cost"] or p["measured_cost"] != m["measured_cost"]:
        sys.exit("costs %r" % p)
    if not (p["share"] is None or 0 <= p["share"] <= 1):
        sys.exit("share %r" % p)
s = d["search"]
if sorted(s) != sorted(["mode", "estimator", "candidates", "max_depth", "estimated_total", "plan",
                        "plan_cost", "plans", "tune_shape", "tune_shape_source",
                        "tune_wide", "tune_shape_wide"]):
    sys.exit("search keys %r" % sorted(s))
# mnist_cnn is static: no symbol measured at any size
if s["tune_shape"] is not None or s["tune_shape_source"] is not None or \
        s["tune_wide"] is not None or s["tune_shape_wide"] is not None:
    sys.exit("tune_shape %r, %r, %r, %r" % (s["tune_shape"], s["tune_shape_source"],
                                            s["tune_wide"], s["tune_shape_wide"]))
if s["mode"] != (meta["search"].get("mode") or meta["compiler"]["search"]) or \
        s["candidates"] != meta["search"]["candidates"]:
    sys.exit("search %r" % s)
if s["plan"] != meta["search"].get("plan") or s["plans"] != meta["search"].get("plans", []):
    sys.exit("plans %r" % s)
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict explain/json

# --dot: graphviz accepts it; one box per ONNX node (Constant nodes are
# weights), each in the cluster of its partition, coloured by its target
x "$C" explain "$X/mnist.so" --dot "$X/mnist.dot"
status_is 0; err_empty
cmp -s "$T/out" "$X/table.txt" || bad "--dot changed the table"
if ! command -v dot >/dev/null; then
	bad "no graphviz 'dot' (tools/deps.sh installs it)"
elif ! dot -Tsvg "$X/mnist.dot" >"$X/mnist.svg" 2>"$T/err"; then
	bad "dot -Tsvg refused it: $(first_err)"
fi
res=$("$PY" - "$X/mnist_cnn.onnx" "$X/mnist.json" "$X/mnist.dot" <<'EOF' 2>&1
import json, re, sys
import onnx
nodes = [n for n in onnx.load(sys.argv[1]).graph.node if n.op_type != "Constant"]
meta = json.load(open(sys.argv[2]))
dot = open(sys.argv[3]).read()
boxes = re.findall(r'^\s*n\d+ \[label="([^"\\]*)\\n([^"\\]*)", ([^\]]*)\];$', dot, re.M)
if sorted((b[0], b[1]) for b in boxes) != sorted((n.name, n.op_type) for n in nodes):
    sys.exit("boxes %r" % boxes)
fill = {"c": "#a6cee3", "blas": "#b2df8a"}
target = {n["name"]: p["target"] for p in meta["partitions"] for n in p["onnx_nodes"]}
for name, op, attrs in boxes:
    if 'fillcolor="%s"' % fill[target[name]] not in attrs:
        sys.exit("%s: %s" % (name, attrs))
clusters = re.findall(r'subgraph cluster_p\d+ \{\n\t\tlabel="p(\d+) (\S+) (\S+)";', dot)
if clusters != [(str(p["id"]), p["target"], p["rule"]) for p in meta["partitions"]]:
    sys.exit("clusters %r" % clusters)
if "subgraph cluster_legend" not in dot or not dot.startswith("digraph "):
    sys.exit("no legend")
print("ok")
EOF
)
[ "$res" = ok ] || bad "$(echo "$res" | tail -n 1)"
verdict explain/dot

# a node folded away by a pass is in no partition: grey, dashed, in the legend
"$PY" -c 'import sys
from onnx import helper, TensorProto, save
n = [helper.make_node("Relu", ["x"], ["r"], name="relu1"),
     helper.make_node("Shape", ["x"], ["s"], name="shape1"),
     helper.make_node("Reshape", ["r", "s"], ["y"], name="reshape1")]
g = helper.make_graph(n, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])' \
	"$X/fold.onnx" || bad "cannot make fold.onnx"
x "$C" compile --search none --target c "$X/fold.onnx" -o "$X/fold.so"
status_is 0
x "$C" explain "$X/fold.so" --dot "$X/fold.dot"
status_is 0; err_empty
out_has "2 partitions (c 2), 2 ONNX nodes"
grep -q '^	n1 \[label="shape1\\nShape", style="rounded,dashed,filled", fillcolor="#eeeeee"' \
	"$X/fold.dot" || bad "shape1 is not grey and dashed outside the clusters"
grep -q 'legend_none' "$X/fold.dot" || bad "no legend entry for nodes in no partition"
dot -Tsvg "$X/fold.dot" >/dev/null 2>&1 || bad "dot -Tsvg refused fold.dot"
verdict explain/dot-folded-node

# without OUT.json the metadata embedded in OUT.so says the same
mv "$X/mnist.json" "$X/mnist.json.away"
x "$C" explain "$X/mnist.so"
status_is 0; err_empty
cmp -s "$T/out" "$X/table.txt" || bad "the table from OUT.so differs"
mv "$X/mnist.json.away" "$X/mnist.json"
verdict explain/metadata-from-so

x "$C" explain "$X/missing.so"
status_is 1; out_empty
err_has "collagec: error: $X/missing.so: cannot read: No such file or directory (nor its metadata '$X/missing.json')"
verdict explain/missing-model

printf 'not json\n' >"$X/garbage.json"
x "$C" explain "$X/garbage.so"
status_is 1; out_empty
err_has "collagec: error: $X/garbage.json: not collagec metadata"
verdict explain/not-metadata

x "$C" explain "$X/mnist.so" --dot "$X/m2.dot" --model "$X/none.onnx"
status_is 1; err_has "--dot: cannot read the model '$X/none.onnx': No such file or directory"
[ -e "$X/m2.dot" ] && bad "a dot file was written"
verdict explain/dot-model-missing

x "$C" explain "$X/mnist.so" --dot "$X/nodir/m.dot"
status_is 4; err_has "collagec: error: cannot write '$X/nodir/m.dot'"
verdict explain/dot-unwritable

x "$C" explain
status_is 2; out_empty; err_has "explain: expected one compiled model (OUT.so)"
verdict explain/usage/no-model
x "$C" explain "$X/mnist.so" --model "$X/mnist_cnn.onnx"
status_is 2; out_empty; err_has "explain: --model is for --dot and --html only"
verdict explain/usage/model-without-dot
x "$C" explain "$X/mnist.so" --frob
status_is 2; out_empty; err_has "explain: unknown or incomplete option '--frob'"
verdict explain/usage/unknown-option

# ---- environment and toolchain failures (exit 4), nothing left behind ----

F=$T/env
fresh "$F"
x env CC=/nonexistent "$C" compile --search none --target c "$GOOD" -o "$F/OUT.so"
status_is 4; out_empty
err_has "collagec: error: cannot run the C compiler '/nonexistent' (set CC)"
dir_is "$F" ""; tmp_clean
verdict env/cc-missing

fresh "$F"
x "$C" compile --search none --target c "$GOOD" -o "$F/OUT.so" --cc false
status_is 4; out_empty; err_has "collagec: error: the C compiler failed (exit 1)"
dir_is "$F" ""; tmp_clean
verdict env/cc-fails

fresh "$F"
x "$C" compile --search none --target c "$GOOD" -o "$F/nodir/OUT.so"
status_is 4; err_has "collagec: error: cannot write '$F/nodir/OUT.so'"
dir_is "$F" ""; tmp_clean
verdict env/output-dir-missing

fresh "$F"
x "$C" compile --search none --target c "$GOOD" -o "$F/OUT.so" --json "$F/nodir/OUT.json"
status_is 4; err_has "collagec: error: cannot write '$F/nodir/OUT.json'"
dir_is "$F" ""; tmp_clean
verdict env/json-unwritable-leaves-nothing

fresh "$F"
x "$C" compile --search none --target c "$GOOD" -o "$F/OUT.so" --depfile "$F/nodir/OUT.d"
status_is 4; err_has "collagec: error: cannot write '$F/nodir/OUT.d'"
dir_is "$F" ""; tmp_clean
verdict env/depfile-unwritable-leaves-nothing

fresh "$F"
x "$C" compile --search none --target c "$GOOD" -o "$F/OUT.so" --dump-ir "$F/nodir/ir"
status_is 4; err_has "collagec: error: cannot create '$F/nodir/ir'"
dir_is "$F" ""; tmp_clean
verdict env/dump-ir-unwritable

t_exit
