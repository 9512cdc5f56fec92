#!/bin/sh
# random.sh - the random ops (RandomUniform, RandomNormal, their Like
# variants, Bernoulli, Multinomial, training-mode Dropout). Their values come
# from collagec's own generator, so instead of reference outputs
# testdata/gen_random_tests.py checks distributions (means, variances,
# frequencies within 6 standard errors), ranges, dtypes and shapes, Dropout's
# y = x * mask / (1 - ratio) exactly, and reproducibility: a seeded op gives
# the same values in two processes, two handles, two runs and at 1 and 2
# threads; an unseeded one differs each time. Its bad models are refused
# with the expected message (nt_bad).
SUITE=random
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_random_tests.py
for d in "$T"/cases/*/; do
	n=$(basename "$d")
	if ! "$COLLAGEC" compile --search none --target c -q "$d/model.onnx" -o "$d/model.so" \
		>"$d/compile.log" 2>&1; then
		echo "FAIL $SUITE/$n: compile: $(head -n 1 "$d/compile.log")"
		continue
	fi
	# each line of runs: TAG THREADS INPUT_SET, one process each
	while read -r tag threads set; do
		ins=""
		for f in "$d/in$set"/input_*.pb; do
			[ -f "$f" ] && ins="$ins --input $f"
		done
		# shellcheck disable=SC2086
		"$COLLAGEC" run "$d/model.so" $ins --threads "$threads" --output-dir "$d/$tag.tmp" \
			>"$d/$tag.log" 2>&1 && mv "$d/$tag.tmp" "$d/$tag"
	done <"$d/runs"
done
/usr/bin/python3 testdata/gen_random_tests.py --check "$T"
nt_bad
