#!/bin/sh
# run.sh - make fuzz: builds the libFuzzer harnesses with clang and
# AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) in
# build-fuzz, seeds each one's corpus, runs each for FUZZ_SECONDS and
# prints its executions, coverage and findings, then the total. A crash,
# leak or sanitizer report leaves its input in build-fuzz/crashes/; fix the
# bug and copy the input into tests/fuzz/corpus/HARNESS/, where make test
# replays it (tests/fuzz.sh).
#   compile  an ONNX model's whole compile up to model.c (no C compiler)
#   tensor   the .pb / .npy tensor readers
#   pattern  the pattern-file parser
#   meta     the OUT.json readers of explain, run and bench (seeded with
#            the metadata of compiled reference models)
#   capi     a compiled model's C API (testdata/runtime/make_model.py's
#            model, itself built with the sanitizers)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
COLLAGEC=$ROOT/${BUILD:-build}/collagec
F=build-fuzz
S=${FUZZ_SECONDS:-10}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
DATA=/usr/share/libonnx-testdata/data
command -v clang >/dev/null || { echo "make fuzz: needs clang (apt-get install clang)"; exit 1; }
mkdir -p $F/corpus $F/seeds $F/crashes
make -s BUILD=$F CC=clang CFLAGS="-O1 -g $SAN -fsanitize=fuzzer-no-link" \
	$(for h in tests/fuzz/fuzz_*.c; do echo "$F/fuzz/$(basename "$h" .c)"; done) || exit 1

# the C API harness links a model built by collagec with the same sanitizers
/usr/bin/python3 testdata/runtime/make_model.py $F/capi.onnx &&
	"$COLLAGEC" compile $F/capi.onnx -o $F/libcapi.a --search none --target c -q \
		--cc clang --opt "-O1 -g $SAN -fsanitize=fuzzer-no-link" --cpu x86-64-v2 &&
	clang -O1 -g $SAN -fsanitize=fuzzer -D_GNU_SOURCE -Iruntime -o $F/fuzz/capi tests/fuzz/capi.c \
		$F/libcapi.a $(sed -n 's/.*"ldlibs": "\(.*\)".*/\1/p' $F/libcapi.json) -lm ||
	exit 1

# seeds: the repository's and the ONNX test data's models, tensors, patterns
seed() {
	d=$F/seeds/$1
	[ -d "$d" ] && return
	mkdir -p "$d"
	case $1 in
	fuzz_compile)
		/usr/bin/python3 testdata/gen_models.py "$d.tmp" mnist_cnn mlp >/dev/null 2>&1
		cp "$d.tmp"/*.onnx "$d" 2>/dev/null
		rm -rf "$d.tmp"
		n=0
		for m in "$DATA"/node/*/model.onnx "$DATA"/pytorch-operator/*/model.onnx \
			testdata/contrib/good/*/model.onnx; do
			n=$((n + 1))
			cp "$m" "$d/$n.onnx"
		done ;;
	fuzz_tensor)
		n=0
		for t in "$DATA"/node/test_[a-c]*/test_data_set_0/*.pb; do
			n=$((n + 1))
			cp "$t" "$d/$n.pb"
		done
		/usr/bin/python3 -c '
import numpy as np, sys
for i, a in enumerate([np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 4), np.int64),
                       np.array(3.5), np.ones((2, 2), np.bool_)]):
    np.save("%s/%d.npy" % (sys.argv[1], i), a)' "$d" ;;
	fuzz_pattern)
		cp patterns/*.pat "$d" ;;
	fuzz_meta)
		/usr/bin/python3 testdata/gen_models.py "$d.tmp" mnist_cnn mlp >/dev/null 2>&1
		for m in mnist_cnn mlp; do
			for how in "--search none --target c" "--target blas,c --estimator analytic"; do
				n=$(ls "$d" | wc -l)
				# shellcheck disable=SC2086
				"$COLLAGEC" compile "$d.tmp/$m.onnx" -o "$d.tmp/o.so" $how --no-cache -q \
					>/dev/null 2>&1 && cp "$d.tmp/o.json" "$d/$n.json"
			done
		done
		rm -rf "$d.tmp" ;;
	capi)
		printf '\000\000\002\000\000\003\001\000\002\001\001\003\002\000\003\000' >"$d/1" ;;
	esac
}
# a dictionary for the model harness: op names, and ONNX field tags
dict=$F/onnx.dict
sed -n 's/^OP([A-Z0-9_]*, *"\([A-Za-z0-9]*\)".*/"\1"/p' core/ops/*.def | sort -u >$dict
# ONNX Runtime's contrib ops (core/onnx/onnx_contrib.c's table) and their domain
sed -n 's/^	{ "\([A-Za-z]*\)", \(true\|false\),.*/"\1"/p' core/onnx/onnx_contrib.c >>$dict
echo '"com.microsoft"' >>$dict
printf '"\\x08"\n"\\x12"\n"\\x1a"\n"\\x22"\n"\\x2a"\n"\\x3a"\n"\\x42"\n"\\x4a"\n' >>$dict
# and one for the metadata harness: the keys OUT.json has, quoted as in JSON
mdict=$F/meta.dict
sed -n 's/.*cJSON_Add[A-Za-z]*ToObject([^,]*, *"\([a-z_0-9]*\)".*/"\\"\1\\""/p' core/emit/metadata.c |
	sort -u >$mdict
printf '"{"\n"}"\n"["\n"]"\n"null"\n"true"\n"1e308"\n"\\"inf\\""\n"\\"collagec-metadata/1\\""\n' >>$mdict

total=0
fail=0
for h in $(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done) capi; do
	seed $h
	mkdir -p $F/corpus/$h
	extra=
	[ $h = fuzz_compile ] && extra="-dict=$dict"
	# explain prints to stdout and stderr; libFuzzer keeps its own report
	[ $h = fuzz_meta ] && extra="-dict=$mdict -close_fd_mask=3"
	kept=
	[ -d tests/fuzz/corpus/$h ] && kept=tests/fuzz/corpus/$h
	ASAN_OPTIONS=allocator_may_return_null=1 $F/fuzz/$h -max_total_time=$S -print_final_stats=1 \
		-timeout=20 -rss_limit_mb=4096 $extra -artifact_prefix=$F/crashes/$h- \
		$F/corpus/$h $F/seeds/$h $kept >$F/$h.log 2>&1
	st=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' $F/$h.log)
	cov=$(grep -o 'cov: [0-9]*' $F/$h.log | tail -n 1)
	echo "$h: ${execs:-0} executions in ${S}s, ${cov:-cov: ?} edges, exit $st"
	total=$((total + ${execs:-0}))
	if [ $st -ne 0 ]; then
		grep -m 3 -E 'ERROR|SUMMARY|runtime error' $F/$h.log
		fail=1
	fi
done
echo "fuzz: $total executions in all; findings in $F/crashes/"
exit $fail
