#!/bin/sh
# sequence.sh - sequences and optionals (testdata/gen_sequence_tests.py
# writes testdata/sequence: each model with the compile options it needs in
# `args`, and one input/output file per tensor of the compiled model, a
# sequence being one tensor per element). Each model is compiled and run
# with `collagec run --check` on each of its data sets (run-time positions
# and split sizes have several); OUT.json must name the sequence nodes (spans)
# and the bad_* models must be refused with the exact messages below, leaving
# no output. loop_runtime_* carry sequences through Loops run at run time
# and if_runtime_lengths chooses between lengths: their sequence outputs are
# read element by element (NAME[K].pb).
SUITE=sequence
. "$(dirname "$0")/lib.sh"

for d in testdata/sequence/*/; do
	n=$(basename "$d")
	case $n in bad_*) continue ;; esac
	# shellcheck disable=SC2046
	if ! "$COLLAGEC" compile -q --search none --target c $(cat "$d/args") "$d/model.onnx" \
		-o "$T/$n.so" 2>"$T/$n.err"; then
		echo "FAIL sequence/$n: compile: $(head -n 1 "$T/$n.err")"
		continue
	fi
	for ds in "$d"test_data_set_*; do
		k=${ds##*_}
		name=$n
		[ "$k" = 0 ] || name=$n/set$k
		if "$COLLAGEC" run "$T/$n.so" --check "$ds" >"$T/$n.$k.out" 2>"$T/$n.err"
		then
			echo "ok   sequence/$name"
		else
			echo "FAIL sequence/$name: $(head -n 1 "$T/$n.err")"
		fi
	done
done

# spans: the nodes a sequence op becomes name it; a Loop body's node names the Loop
span_has() {
	if tr -d ' \t\n' <"$T/$1.json" | grep -qF "$2"; then
		echo "ok   sequence/span/$1/$3"
	else
		echo "FAIL sequence/span/$1/$3: OUT.json lacks $2"
	fi
}
span_has split_concat '[{"name":"split","op":"SplitToSequence"}]' split
span_has split_concat '[{"name":"stack","op":"ConcatFromSequence"}]' stack
span_has loop_seq '[{"name":"loop","op":"Loop"},{"name":"scale","op":"Mul"}]' loop
span_has construct_at '{"name":"length","op":"SequenceLength","pass":"infer","into":null}' length

# refusals: one precise line each
refused() {
	d=testdata/sequence/$1
	# shellcheck disable=SC2046
	if "$COLLAGEC" compile -q --search none --target c $(cat "$d/args") "$d/model.onnx" \
		-o "$T/$1.so" 2>"$T/$1.err"; then
		echo "FAIL sequence/$1: compiled"
	elif [ -e "$T/$1.so" ] || [ -e "$T/$1.json" ]; then
		echo "FAIL sequence/$1: refused, but left an output"
	elif [ "$(cat "$T/$1.err")" = "collagec: error: model.onnx: $2" ]; then
		echo "ok   sequence/$1"
	else
		echo "FAIL sequence/$1: $(cat "$T/$1.err")"
	fi
}
refused bad_no_length "input 's' is a sequence; its length must be known when compiling: give it with --elements 's=N'"
refused bad_runtime_position "node 1 'at' (SequenceAt): position 'p' is only known at run time, so the tensors it chooses between need one dtype and rank: 'x' is float32 of rank 1, 'y' is float32 of rank 2"
refused bad_runtime_split "node 0 'split' (SplitToSequence): split 'k' is only known at run time; it must then be a 1-D int32 or int64 tensor of static length (up to 1024)"
refused bad_absent_get "node 0 'get' (OptionalGetElement): the optional 'o' has no element"
refused bad_tensor_op "node 1 'relu' (Relu): input 0 's' is a sequence; only the sequence and optional ops take one"
refused bad_runtime_mixed_at "node 2 'at' (SequenceAt): the sequence's length is only known at run time and its elements may differ in rank, so SequenceAt's rank is not known"
refused bad_runtime_map "node 2 'map' (SequenceMap): input 0 'r' is a sequence whose length is only known at run time; SequenceMap does not take one"
refused bad_runtime_mixed_concat "node 2 'concat' (ConcatFromSequence): the sequence's length is only known at run time and its elements may differ in rank; ConcatFromSequence needs one rank"
# metadata "collagec.sequence" makes run-time sequences of a Loop body's inputs only
refused bad_port_metadata "input 's' is a sequence; its length must be known when compiling: give it with --elements 's=N'"

# --elements: a bad count is a usage error (exit 2)
"$COLLAGEC" compile -q testdata/sequence/insert_erase/model.onnx --elements s=x \
	-o "$T/usage.so" 2>"$T/usage.err"
rc=$?
if [ $rc -eq 2 ] && grep -qF "expected NAME=N (0 to 1024) or NAME=none" "$T/usage.err"; then
	echo "ok   sequence/usage"
else
	echo "FAIL sequence/usage: exit $rc: $(cat "$T/usage.err")"
fi

# explain imports the model again with the compile's --elements (OUT.json's
# model.elements): a sequence input needs them
if "$COLLAGEC" explain "$T/insert_erase.so" --dot "$T/insert_erase.dot" >/dev/null \
	2>"$T/explain.err" && grep -q 'SequenceInsert' "$T/insert_erase.dot"; then
	echo "ok   sequence/explain-elements"
else
	echo "FAIL sequence/explain-elements: $(cat "$T/explain.err")"
fi

# an element that cannot be written is an environment error (exit 4), as a
# tensor output is: here a directory stands where its file would go
mkdir -p "$T/unwritable/r[0].pb"
"$COLLAGEC" run "$T/loop_runtime_seq.so" --check testdata/sequence/loop_runtime_seq/test_data_set_1 \
	--output-dir "$T/unwritable" >/dev/null 2>"$T/write.err"
rc=$?
if [ $rc -eq 4 ] && grep -qF "r[0].pb" "$T/write.err"; then
	echo "ok   sequence/element-write-fails"
else
	echo "FAIL sequence/element-write-fails: exit $rc: $(cat "$T/write.err")"
fi
