#!/bin/sh
# calls.sh - the calls between the files of one source folder, read from
# their objects (nm: what each defines and what it takes from the others),
# so a circle of calls between files shows before anyone has to untangle
# it (issue 30: the files of core/onnx/ call each other in no circle).
#
#	sh tools/calls.sh core/onnx		# BUILD=build unless told
#
# Prints "a.c -> b.c  SYMBOL" for each function or object of b.c that a.c
# uses, sorted, then "no circle", or the files of a circle (tsort's words)
# and exits 1. Static functions do not count: they are one file's own.
# Exits 2 when the folder has no objects (build first: make).
BUILD=${BUILD:-build}
dir=${1:?usage: tools/calls.sh DIR (a folder of sources, e.g. core/onnx)}
dir=${dir%/}
objs=$(ls "$BUILD/$dir"/*.o 2>/dev/null) || {
	echo "calls.sh: no objects in $BUILD/$dir: build first" >&2
	exit 2
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/calls-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
for o in $objs; do
	f=$(basename "$o" .o).c
	nm --defined-only -g "$o" | awk -v f="$f" 'NF == 3 { print $3, f }'
done | sort >"$tmp/defs"
for o in $objs; do
	f=$(basename "$o" .o).c
	nm -u "$o" | awk -v f="$f" '{ print $2, f }'
done | sort >"$tmp/uses"
join "$tmp/uses" "$tmp/defs" | awk '{ print $2 " -> " $3 "  " $1 }' | sort >"$tmp/edges"
cat "$tmp/edges"
if awk '{ print $1, $3 }' "$tmp/edges" | sort -u | tsort >/dev/null 2>"$tmp/loop"; then
	echo "no circle"
else
	cat "$tmp/loop"
	exit 1
fi
