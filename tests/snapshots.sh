#!/bin/sh
# snapshots.sh - --dump-ir's loop IR after each lowering step. For the
# reference models mnist_cnn and bert_tiny on c and on blas,c (--search
# none), mnist_cnn on dnnl,c and on opencl, and bert_tiny on c with greedy
# partitions (so that elementwise runs fuse): the step files follow the
# pass dumps in order; every kernel of every snapshot names the ONNX nodes
# it came from; no fused kernel appears before the fuse step; consecutive
# snapshots differ exactly where the step had something to do; the last
# snapshot is 10-lower.tir and matches the generated C (kernel by kernel,
# the parallel regions the parallel step decided) and OUT.json's kernels;
# dnnl's kernels name the values they hand over in its blocked layout; and
# OUT.so and OUT.json are the same without --dump-ir.
SUITE=snapshots
. "$(dirname "$0")/lib.sh"
LC_ALL=C
export LC_ALL
/usr/bin/python3 testdata/gen_models.py "$T" mnist_cnn bert_tiny >"$T/gen.log" 2>&1 ||
	{ fail generate "gen_models.py: $(tail -n 1 "$T/gen.log")"; exit 1; }
STEPS="1-ops 2-strategy 3-fuse 4-share 5-parallel"

# kernels FILE: "NAME REGIONS" per kernel function, REGIONS the parallel
# regions it opens: "kernel NAME(" blocks of a snapshot; in generated C the
# functions with the executor's kernel ABI (RT_KERNEL, or static in blas's
# translation unit), each ending where the next top-level definition starts,
# a region being a call of the thread pool (rt_par_for) with the region's
# outlined function
kernels() {
	awk 'function flush() { if (n != "") print n, r; n = "" }
	     /^kernel [A-Za-z0-9_]*\(/ ||
	     /^(RT_KERNEL|static) void [A-Za-z0-9_]*\(void \*const \*bufs/ {
		flush(); n = $1 == "kernel" ? $2 : $3; sub(/\(.*/, "", n); r = 0; next
	     }
	     /^[A-Za-z]/ { flush() }
	     /parallel region:|rt_par_for\(/ { r++ }
	     END { flush() }' "$@"
}

check() {
	name=$1 model=$2 target=$3 search=$4
	D=$T/$name
	why=
	mkdir -p "$D"
	if ! "$COLLAGEC" compile --search "$search" --target "$target" "$T/$model.onnx" \
		-o "$D/a.so" --dump-ir "$D/ir" >"$D/err" 2>&1; then
		fail "$name" "compile: $(head -n 1 "$D/err")"
		return
	fi
	"$COLLAGEC" compile --search "$search" --target "$target" "$T/$model.onnx" \
		-o "$D/b.so" >"$D/err2" 2>&1 || why="compile without --dump-ir failed"
	cmp -s "$D/a.so" "$D/b.so" || why="$why; OUT.so differs with --dump-ir"
	cmp -s "$D/a.json" "$D/b.json" || why="$why; OUT.json differs with --dump-ir"
	# the files, in order: the pass dumps, then NN-lower.K-STEP.tir, NN-lower.tir
	n=$(ls "$D/ir" | grep -c '\.ir$')
	want=
	for s in $STEPS; do
		want="$want $(printf '%02d' "$n")-lower.$s.tir"
	done
	want="$want $(printf '%02d' "$n")-lower.tir"
	got=$(ls "$D/ir" | grep '\.tir$' | tr '\n' ' ')
	[ " $got" = "$want " ] || why="$why; .tir files '$got', expected '$want' after $n .ir files"
	last=$(ls "$D/ir" | tail -n 1)
	[ "$last" = "$(printf '%02d' "$n")-lower.tir" ] || why="$why; $last sorts last"
	p=$D/ir/$(printf '%02d' "$n")-lower
	# every kernel block starts with its partition and a non-empty span
	for s in $STEPS; do
		f=$p.$s.tir
		bad=$(awk '/^\/\/ partition/ { span = ($0 ~ /: [^ ]+\([A-Za-z]+\)/) }
			   /^kernel / && !span { print $2 }' "$f" | head -n 1)
		[ -z "$bad" ] || why="$why; $s: kernel $bad has no span comment"
		[ "$(grep -c '^// partition' "$f")" -gt 0 ] || why="$why; $s: no kernels"
	done
	# fused kernels only from the fuse step on
	for s in 1-ops 2-strategy; do
		! grep -q '^kernel k[0-9]*_[0-9]*_\([A-Za-z]*_\)\{0,1\}fused(' "$p.$s.tir" ||
			why="$why; a fused kernel in the $s snapshot"
	done
	fused=$(grep -c '^kernel k[0-9]*_[0-9]*_\([A-Za-z]*_\)\{0,1\}fused(' "$p.3-fuse.tir")
	[ "$name" != fused ] || [ "$fused" -gt 0 ] || why="$why; no fused kernel"
	# each step's diff is non-empty exactly when it did something
	cmp -s "$p.1-ops.tir" "$p.2-strategy.tir"; same=$?
	if grep -q '^// variant' "$p.2-strategy.tir"; then
		[ $same = 1 ] || why="$why; strategy: variants but no change"
	else
		[ $same = 0 ] || why="$why; strategy: changed without variants"
	fi
	! grep -q '^// variant' "$p.1-ops.tir" || why="$why; variants before the strategy step"
	cmp -s "$p.2-strategy.tir" "$p.3-fuse.tir"; same=$?
	if [ "$fused" -gt 0 ]; then
		[ $same = 1 ] || why="$why; fuse: fused kernels but no change"
	else
		[ $same = 0 ] || why="$why; fuse: changed without fused kernels"
	fi
	# the share step adds a constants parameter to the kernels it shares
	cmp -s "$p.3-fuse.tir" "$p.4-share.tir"; same=$?
	! grep -q '/\* consts \*/' "$p.3-fuse.tir" || why="$why; shared constants before the share step"
	if grep -q '/\* consts \*/' "$p.4-share.tir"; then
		[ $same = 1 ] || why="$why; share: shared kernels but no change"
	else
		[ $same = 0 ] || why="$why; share: changed without shared kernels"
	fi
	cmp -s "$p.4-share.tir" "$p.5-parallel.tir"; same=$?
	! grep -q 'parallel region\|run serially' "$p.4-share.tir" ||
		why="$why; parallel decisions before the parallel step"
	if grep -q 'parallel region\|run serially' "$p.5-parallel.tir"; then
		[ $same = 1 ] || why="$why; parallel: decisions but no change"
	else
		[ $same = 0 ] || why="$why; parallel: changed without decisions"
	fi
	diff "$p.4-share.tir" "$p.5-parallel.tir" | grep '^[<>]' | grep -v 'for (int64_t' >"$D/pdiff"
	[ ! -s "$D/pdiff" ] || why="$why; the parallel step changed more than loop heads: $(head -n 1 "$D/pdiff")"
	cmp -s "$p.5-parallel.tir" "$p.tir" || why="$why; $p.tir is not the last step's"
	# the last snapshot is what the code generator printed (parallel regions;
	# opencl prints its NDRanges as stage tables)
	case $target in *opencl*) ;; *)
	"$COLLAGEC" compile --search "$search" --target "$target" "$T/$model.onnx" \
		-o "$D/c.so" --keep-temps >"$D/err3" 2>&1 || why="$why; --keep-temps compile failed"
	kept=$(sed -n 's/.*build directory kept: //p' "$D/err3")
	if [ -d "$kept" ]; then
		cat "$kept"/kernels_*.c "$kept"/model.c 2>/dev/null >"$D/gen.c"
		rm -rf "$kept"
		kernels "$p.tir" | sort >"$D/snap.k"
		kernels "$D/gen.c" | sort >"$D/gen.k"
		# every generated kernel function is a snapshot kernel with its regions
		# (dispatchers and kernels shared with an earlier identical one aside)
		missing=$(join -v 1 "$D/gen.k" "$D/snap.k" | awk '$2 != 0' | head -n 1)
		[ -z "$missing" ] || why="$why; generated kernel '$missing' not in the snapshot"
		differ=$(join "$D/gen.k" "$D/snap.k" | awk '$2 != $3' | head -n 1)
		[ -z "$differ" ] || why="$why; kernel regions (generated, snapshot) differ: $differ"
		[ "$(join "$D/gen.k" "$D/snap.k" | wc -l)" -gt 0 ] ||
			why="$why; no generated kernel found in the snapshot"
	else
		why="$why; no kept build directory"
	fi
	;;
	esac
	# and every kernel of OUT.json is in it
	/usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["partitions"]:
    for k in p["kernels"]:
        print(k["name"])' "$D/a.json" >"$D/json.k"
	while read -r k; do
		grep -q "^kernel ${k}\\((\\|_v0(\\)" "$p.tir" || { why="$why; OUT.json kernel $k not in $p.tir"; break; }
	done <"$D/json.k"
	[ -z "$why" ] && ok "$name" || fail "$name" "${why#; }"
}

check mnist-c mnist_cnn c none
check bert-c bert_tiny c none
check fused bert_tiny c greedy
if "$COLLAGEC" targets 2>/dev/null | grep -q '^blas.*unavailable'; then
	echo "ok   snapshots/blas (skipped: blas unavailable)"
else
	check mnist-blas mnist_cnn blas,c none
	check bert-blas bert_tiny blas,c none
fi
if "$COLLAGEC" targets 2>/dev/null | grep -q '^dnnl.*unavailable'; then
	echo "ok   snapshots/dnnl (skipped: dnnl unavailable)"
else
	check mnist-dnnl mnist_cnn dnnl,c none
	# the blocked layouts that plan_layouts chose, in every snapshot
	why=
	for f in "$T"/mnist-dnnl/ir/*-lower.*tir; do
		grep -q "^// writes '.*' in dnnl's layout [1-9]" "$f" &&
			grep -q "^// reads '.*' in dnnl's layout [1-9]" "$f" ||
			why="$why; $(basename "$f") names no value in a dnnl layout"
	done
	[ -z "$why" ] && ok mnist-dnnl/layouts || fail mnist-dnnl/layouts "${why#; }"
fi
if "$COLLAGEC" targets 2>/dev/null | grep -q '^opencl.*unavailable'; then
	echo "ok   snapshots/opencl (skipped: opencl unavailable)"
else
	check mnist-opencl mnist_cnn opencl none
fi
t_exit
