#!/bin/sh
# examples.sh - the build-system side: `make install` into a staging
# directory (every file, collagec.pc naming the prefix and version), the
# example projects built with the installed collagec and collagec.h found
# through pkg-config: examples/make (two models with different --prefix in
# one program) and examples/cmake (add_custom_command with collagec's
# depfile), each run, rebuilt as a no-op, and rebuilt when only a model's
# external weights change; and the bash completion (tools/collagec.bash)
# called as bash calls it. Needs $BUILD (default build) and $TEST_TMP.
# One line per check: "ok   examples/NAME" or "FAIL examples/NAME: why".
SUITE=examples
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}

# ---- make install ----
D=$T/root P=/opt/collagec
if make -C "$ROOT" -s BUILD="$BUILD" DESTDIR="$D" PREFIX=$P install >"$T/install.log" 2>&1; then
	ok install
else
	fail install "$(tail -n 1 "$T/install.log")"
	exit 1
fi
(cd "$D" && find . -type f | sort) >"$T/files"
missing=
for f in bin/collagec share/man/man1/collagec.1 include/collagec.h \
	share/pkgconfig/collagec.pc share/bash-completion/completions/collagec \
	share/collagec/patterns/blas.pat; do
	grep -qx "\./${P#/}/$f" "$T/files" || missing="$missing $f"
done
if [ -z "$missing" ]; then ok install/files; else fail install/files "missing:$missing"; fi
C=$D$P/bin/collagec

# collagec.pc, read as a staged install is: PKG_CONFIG_SYSROOT_DIR=DESTDIR
PKG_CONFIG_PATH=$D$P/share/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$D
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
got=$(pkg-config --cflags collagec 2>&1 | sed 's/ *$//')
if [ "$got" = "-I$D$P/include" ]; then ok pkg-config/cflags; else
	fail pkg-config/cflags "got '$got', expected '-I$D$P/include'"; fi
got=$(pkg-config --modversion collagec 2>&1)
want=$("$C" --version | sed 's/^collagec //')
if [ -n "$want" ] && [ "$got" = "$want" ]; then ok pkg-config/version; else
	fail pkg-config/version "got '$got', collagec --version says '$want'"; fi
got=$(pkg-config --variable=prefix collagec 2>&1)
if [ "$got" = "$D$P" ]; then ok pkg-config/prefix; else
	fail pkg-config/prefix "got '$got', expected '$D$P'"; fi

# ---- examples/make: two models, two prefixes, one program ----
M=$T/make
mk() { make -C "$ROOT/examples/make" O="$M" COLLAGEC="$C" "$@"; }
want='y [2,2]: 6 10 22 26'
if mk >"$T/make.log" 2>&1; then
	got=$("$M/two_models" 2>&1)
	if [ "$got" = "$want" ]; then ok make/two-models-run; else
		fail make/two-models-run "got '$got', expected '$want'"; fi
else
	fail make/build "$(grep -m1 -i 'error' "$T/make.log" || tail -n 1 "$T/make.log")"
fi
# one program, both models: each exports only its own prefix
for p in scale project; do
	nm -D --defined-only "$M/$p.so" 2>/dev/null | awk '{print $3}' >"$T/$p.syms"
	if grep -q "^${p}_run$" "$T/$p.syms" && ! grep -qv "^${p}_" "$T/$p.syms"; then
		ok "make/$p-exports-only-$p"
	else
		fail "make/$p-exports-only-$p" "exports: $(tr '\n' ' ' <"$T/$p.syms")"
	fi
done
if mk -q >/dev/null 2>&1; then ok make/second-build-is-a-no-op; else
	fail make/second-build-is-a-no-op "make -q says something is out of date"; fi
# only the external weights change: the depfile makes the .so stale
sleep 1
touch "$M/project.weights"
if ! mk -q >/dev/null 2>&1 && mk >"$T/make2.log" 2>&1 &&
	grep -q "compile .*project.onnx" "$T/make2.log" && ! grep -q "compile .*scale.onnx" "$T/make2.log" &&
	[ "$("$M/two_models" 2>&1)" = "$want" ]; then
	ok make/weights-change-rebuilds-that-model
else
	fail make/weights-change-rebuilds-that-model "$(tr '\n' '|' <"$T/make2.log" 2>/dev/null)"
fi

# ---- examples/cmake: add_custom_command with DEPFILE ----
B=$T/cmake
want='y [2,4]: 1 3 5 7 9 11 13 15'
if cmake -S "$ROOT/examples/cmake" -B "$B" -DCOLLAGEC="$C" >"$T/cmake.log" 2>&1 &&
	cmake --build "$B" >>"$T/cmake.log" 2>&1; then
	got=$("$B/scale_app" 2>&1)
	if [ "$got" = "$want" ]; then ok cmake/run; else
		fail cmake/run "got '$got', expected '$want'"; fi
else
	fail cmake/build "$(grep -m1 -i 'error' "$T/cmake.log" || tail -n 1 "$T/cmake.log")"
fi
cmake --build "$B" >"$T/cmake2.log" 2>&1
if grep -q "Compiling scale.onnx" "$T/cmake2.log"; then
	fail cmake/second-build-is-a-no-op "collagec ran again"
else
	ok cmake/second-build-is-a-no-op
fi
sleep 1
touch "$B/scale.weights"
cmake --build "$B" >"$T/cmake3.log" 2>&1
if grep -q "Compiling scale.onnx" "$T/cmake3.log" && [ "$("$B/scale_app" 2>&1)" = "$want" ]; then
	ok cmake/depfile-weights-change-rebuilds
else
	fail cmake/depfile-weights-change-rebuilds "$(tr '\n' '|' <"$T/cmake3.log")"
fi

# ---- bash completion ----
W=$T/complete
mkdir -p "$W/dir"
: >"$W/a.onnx"
: >"$W/b.onnx"
: >"$W/m.so"
: >"$W/notes.txt"
# comp WORDS...: what completing the last word offers, sorted, one line
cat >"$T/comp.bash" <<'EOF2'
. "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_collagec
printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
EOF2
comp() {
	(cd "$W" && bash "$T/comp.bash" "$D$P/share/bash-completion/completions/collagec" "$@")
}
# case NAME WANT WORDS...
ccase() {
	name=$1 want=$2
	shift 2
	got=$(comp "$@" 2>&1)
	if [ "$got" = "$want" ]; then ok "complete/$name"; else
		fail "complete/$name" "got '$got', expected '$want'"; fi
}
ccase subcommands "compile conformance" collagec co
ccase subcommand-all "--help --version bench cache compile conformance explain run targets" collagec ""
ccase option "--prefix --progress" collagec compile m.onnx --pr
ccase target-kind "blas" collagec compile a.onnx --target bl
ccase target-after-comma "blas,opencl" collagec compile a.onnx --target blas,o
ccase search "greedy" collagec compile a.onnx --search g
ccase onnx-files "a.onnx b.onnx dir" collagec compile ""
ccase so-files "dir m.so" collagec run ""
ccase so-for-explain "dir m.so" collagec explain ""
ccase cache-actions "clear" collagec cache cl
ccase json-flag-in-bench "--json" collagec bench m.so --js
# every option `collagec CMD --help` shows is offered
for cmd in compile run bench conformance targets explain cache; do
	"$C" "$cmd" --help | grep -o -- '-[-a-z]*' | grep -v '^-$' | sort -u >"$T/help-opts"
	comp collagec "$cmd" x - | tr ' ' '\n' | sort -u >"$T/comp-opts"
	miss=$(comm -23 "$T/help-opts" "$T/comp-opts" | tr '\n' ' ')
	if [ -z "$miss" ]; then ok "complete/$cmd-every-option"; else
		fail "complete/$cmd-every-option" "not completed: $miss"; fi
done
# the kinds offered are collagec targets' kinds
"$C" targets | sed -n 's/^\([a-z]*\) (.*/\1/p' | sort | tr '\n' ' ' | sed 's/ $//' >"$T/kinds"
got=$(comp collagec compile a.onnx --target "")
if [ "$got" = "$(cat "$T/kinds")" ]; then ok complete/target-kinds-are-the-registry; else
	fail complete/target-kinds-are-the-registry "got '$got', collagec targets has '$(cat "$T/kinds")'"; fi

t_exit
