#!/bin/sh
# bench_search.sh - make bench-search: what the default compile (Collage over
# every available target, cold cost cache, no other options) costs and what
# it builds (issue 29), on the five reference models (testdata/gen_models.py)
# and the zoo's ResNet-50, EfficientNet-B0, BERT-Base, GPT-2 and ViT-B/16
# (testdata/gen_zoo.py); MODELS selects some. One row per model:
#   none_s      `compile --search none` wall seconds, fresh caches
#   cold_s      the default compile, fresh caches (`--cache DIR/costs.sqlite`,
#               the kernel-object cache beside it), wall seconds
#   limit_s ok  max(3 x none_s, 30) and whether cold_s is within it
#   rss_MB      the cold compile's peak RSS (GNU time's %M: the largest of
#               collagec and the measuring workers it waited for, not their sum)
#   weights_MB  the model's initializer bytes; ok: rss_MB <= 2 x weights_MB + 300
#   meas est    candidates measured and estimated (--stats' cost_cache.measured
#               and .estimated; "-" where this collagec does not count them)
#   warm_s same a recompile from the cache the cold compile filled, same
#               options and -o (the first outputs moved aside): seconds, and
#               whether OUT.so and OUT.json are byte-identical to the cold ones
#   plan        whether the unlimited search's build placed every node as the
#               budgeted one did (same partitions: targets, rules and nodes),
#               "same" or "diff" ("-" without it): with the same placement the
#               two builds run the same code, and their b/unl below is noise
# then per thread count (THREADS, default "1 2"; empty: none): the median milliseconds of
# the budgeted (default) build, of an unlimited search's build
# (`--search-budget 0`, same cache; "-" where collagec has no such option, or
# with UNLIMITED=0, which skips that search: on the zoo's large models it runs long)
# and of ONNX Runtime (tools/ort.py, optional: pip install onnxruntime numpy;
# "-" without it), measured in turns, REPEAT rounds (default 5) of RUNS runs
# (default 20) each, and the ratios budgeted/unlimited and budgeted/ort, each
# the median of the rounds' ratios. mlp runs at N=64, and its default and
# unlimited builds are told so (--tune-shape N=64: a user names the size the
# model runs at); symbolic dims elsewhere run at 1.
# The cpu and core count come first. Not part of make test: the zoo's models
# take minutes each and their weights up to 500 MB (in $BUILD/bench-search).
COLLAGEC=${BUILD:-build}/collagec
D=${BUILD:-build}/bench-search
MODELS=${MODELS:-mnist_cnn resnet18 mobilenetv2 bert_tiny mlp resnet50 efficientnet_b0 \
bert_base gpt2 vit_base}
THREADS=${THREADS-1 2}
UNLIMITED=${UNLIMITED:-1}
REPEAT=${REPEAT:-5}
RUNS=${RUNS:-20}
TIME=/usr/bin/time
. tests/bench_lib.sh
if ! "$TIME" -f %M true >/dev/null 2>&1; then
	echo "bench_search.sh: needs GNU time as $TIME (apt-get install time)" >&2
	exit 1
fi
ref="" zoo=""
for m in $MODELS; do
	case $m in
	mnist_cnn | resnet18 | mobilenetv2 | bert_tiny | mlp) ref="$ref $m" ;;
	*) zoo="$zoo $m" ;;
	esac
done
mkdir -p "$D"
if [ -n "$ref" ]; then /usr/bin/python3 testdata/gen_models.py "$D" $ref >/dev/null || exit 1; fi
if [ -n "$zoo" ]; then /usr/bin/python3 testdata/gen_zoo.py "$D" $zoo >/dev/null || exit 1; fi
ort=0
have_ort && ort=1
budget=0
"$COLLAGEC" compile --help 2>&1 | grep -q -e --search-budget && budget=1
echo "$(cpu_line); threads $THREADS; $REPEAT x $RUNS runs per build per thread count" \
	"in turns; ONNX Runtime $([ $ort = 1 ] && echo yes || echo "no (-)");" \
	"--search-budget $([ $budget = 1 ] && echo yes || echo "no (-)")"
printf '%-15s %7s %7s %7s %3s %6s %10s %3s %5s %5s %6s %4s %4s' model none_s cold_s limit_s ok \
	rss_MB weights_MB ok meas est warm_s same plan
for t in $THREADS; do
	printf ' | %9s %9s %9s %6s %6s' "budget_$t" "unlim_$t" "ort_$t" b/unl b/ort
done
echo

# timed OUT.time CMD...: runs CMD, its output into OUT.log, "SECONDS KB" into OUT.time
timed() {
	_o=$1
	shift
	"$TIME" -f '%e %M' -o "$_o.time" "$@" >"$_o.log" 2>&1 && return 0
	echo "bench_search.sh: failed ($(tail -n 1 "$_o.log")): $*" >&2
	return 1
}
# stats_key FILE KEY: cost_cache.KEY of a --stats file, "-" when it has none
stats_key() {
	/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))
		.get("cost_cache", {}).get(sys.argv[2], "-"))' "$1" "$2" 2>/dev/null || echo -
}
# ratios "A1 A2 .." "B1 B2 ..": the median of the rounds' A_i / B_i ("x": a
# round that failed), "-" when there are none
ratios() (
	r=$(printf '%s\n%s\n' "$1" "$2" | awk '
		NR == 1 { for (i = 1; i <= NF; i++) a[i] = $i; n = NF }
		NR == 2 { for (i = 1; i <= NF && i <= n; i++)
				if (a[i] + 0 > 0 && $i + 0 > 0) print a[i] / $i }' | median)
	if [ -n "$r" ]; then printf '%.3f' "$r"; else echo -; fi
)
# ms "T1 T2 ..": their median to 4 significant digits, "-" for none
ms() (
	v=$(echo "$1" | median)
	if [ -n "$v" ]; then printf '%.4g' "$v"; else echo -; fi
)

for m in $MODELS; do
	x=$D/$m
	rm -rf "$x"
	mkdir -p "$x/none" "$x/default" "$x/unlimited"
	onnx=$D/$m.onnx
	tune=
	[ "$m" = mlp ] && tune="--tune-shape N=64"
	timed "$x/none/m" "$COLLAGEC" compile --search none --cache "$x/none/costs.sqlite" \
		"$onnx" -o "$x/none/$m.so" || continue
	none_s=$(cut -d' ' -f1 "$x/none/m.time")
	rm -f "$x/none/$m.so"
	# shellcheck disable=SC2086
	set -- "$COLLAGEC" compile "$onnx" -o "$x/default/$m.so" --cache "$x/default/costs.sqlite" \
		--stats "$x/default/stats.json" $tune
	timed "$x/default/cold" "$@" || continue
	read -r cold_s rss_kb <"$x/default/cold.time"
	cp "$x/default/stats.json" "$x/default/stats.cold.json"
	meas=$(stats_key "$x/default/stats.cold.json" measured)
	est=$(stats_key "$x/default/stats.cold.json" estimated)
	mv "$x/default/$m.so" "$x/default/$m.cold.so"
	mv "$x/default/$m.json" "$x/default/$m.cold.json"
	warm_s=- same=-
	if timed "$x/default/warm" "$@"; then
		warm_s=$(cut -d' ' -f1 "$x/default/warm.time")
		same=no
		cmp -s "$x/default/$m.so" "$x/default/$m.cold.so" &&
			cmp -s "$x/default/$m.json" "$x/default/$m.cold.json" && same=yes
	else
		mv "$x/default/$m.cold.so" "$x/default/$m.so"
		mv "$x/default/$m.cold.json" "$x/default/$m.json"
	fi
	rm -f "$x/default/$m.cold.so"
	unl=""
	[ $budget = 1 ] && [ "$UNLIMITED" = 1 ] && timed "$x/unlimited/m" "$COLLAGEC" compile "$onnx" \
		-o "$x/unlimited/$m.so" --cache "$x/default/costs.sqlite" --search-budget 0 $tune &&
		unl=$x/unlimited/$m.so
	plan=-
	[ -n "$unl" ] && plan=$(/usr/bin/python3 - "$x/default/$m.json" "$x/unlimited/$m.json" <<'PY'
import json, sys
def placed(f):
    return [(p["target"], p["rule"], [n["name"] for n in p["onnx_nodes"]])
            for p in json.load(open(f))["partitions"]]
print("same" if placed(sys.argv[1]) == placed(sys.argv[2]) else "diff")
PY
)
	weights=$(/usr/bin/python3 - "$onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import mapping
m = onnx.load(sys.argv[1], load_external_data=False)
print(sum(int(np.prod(t.dims)) * np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]).itemsize
          for t in m.graph.initializer))
PY
)
	awk -v m="$m" -v n="$none_s" -v c="$cold_s" -v r="$rss_kb" -v w="$weights" \
		-v me="$meas" -v e="$est" -v ws="$warm_s" -v s="$same" -v pl="$plan" 'BEGIN {
		lim = 3 * n > 30 ? 3 * n : 30; rmb = r / 1024; wmb = w / 1048576
		printf "%-15s %7.2f %7.2f %7.1f %3s %6.0f %10.1f %3s %5s %5s %6s %4s %4s", m, n, c,
			lim, c <= lim ? "yes" : "NO", rmb, wmb, rmb <= 2 * wmb + 300 ? "yes" : "NO", me,
			e, ws, s, pl }'
	shape=
	[ "$m" = mlp ] && shape="--shape N=64"
	for t in $THREADS; do
		b="" u="" o=""
		for i in $(seq "$REPEAT"); do
			v=$(collagec_ms "$x/default/$m.so" "$t" "$RUNS" $shape)
			b="$b ${v:-x}"
			if [ -n "$unl" ]; then
				v=$(collagec_ms "$unl" "$t" "$RUNS" $shape)
				u="$u ${v:-x}"
			fi
			if [ $ort = 1 ]; then
				v=$(ort_ms "$onnx" "$t" "$RUNS" $shape)
				o="$o ${v:-x}"
			fi
		done
		printf ' | %9s %9s %9s %6s %6s' "$(ms "$b")" "$(ms "$u")" "$(ms "$o")" \
			"$(ratios "$b" "$u")" "$(ratios "$b" "$o")"
	done
	echo
done
