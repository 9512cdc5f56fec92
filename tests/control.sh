#!/bin/sh
# control.sh - If, Loop and Scan (testdata/gen_control_tests.py writes
# testdata/control: models whose sub-graphs read outer values, several input
# sets each, outputs from ONNX Runtime). Each model is compiled once and run
# with `collagec run --check` on every set: an If's sets take both branches,
# a Loop's stop at different iterations. loop_runtime_* are Loops run at run
# time, each body compiled on its own (loop_runtime_grow's body grows a
# carried value), scan_runtime_length a Scan over a symbolic axis that
# becomes one; if_runtime_shapes has branches of different shapes, each
# compiled on its own; if_nested_pad_lstm reflect-pads audio of a symbolic
# length in an If's branch and runs an LSTM on it in a nested If's. OUT.json
# must name the body's nodes after the control node (spans). The bad models (a body's unsupported op, a string tensor
# carried by a run-time loop, a reversed scan output of a run-time length,
# branches of different ranks) are in testdata/bad.
SUITE=control
. "$(dirname "$0")/lib.sh"

for d in testdata/control/*/; do
	n=$(basename "$d")
	if ! "$COLLAGEC" compile -q --search none --target c "$d/model.onnx" -o "$T/$n.so" \
		2>"$T/$n.err"; then
		echo "FAIL control/$n: compile: $(head -n 1 "$T/$n.err")"
		continue
	fi
	for s in "$d"test_data_set_*; do
		k=$(basename "$s")
		if "$COLLAGEC" run "$T/$n.so" --check "$s" >"$T/$n.out" 2>"$T/$n.err"; then
			echo "ok   control/$n/$k"
		else
			echo "FAIL control/$n/$k: $(head -n 1 "$T/$n.err")"
		fi
	done
done

# spans: the Loop's tanh and the Scan's accumulate keep their ONNX names: a
# kernel's node list starts with the control node and names the inner node
# (with the nodes fused into the same kernel between them)
span_has() {
	if tr -d ' \t\n' <"$T/$1.json" |
		grep -qE "\[$2(,\{\"name\":\"[^\"]*\",\"op\":\"[A-Za-z]*\"\})*,$3[],]"; then
		echo "ok   control/span/$1"
	else
		echo "FAIL control/span/$1: OUT.json has no kernel of $2 and $3"
	fi
}
span_has loop_accumulate '\{"name":"loop","op":"Loop"\}' '\{"name":"tanh","op":"Tanh"\}'
span_has scan_running_sum '\{"name":"scan","op":"Scan"\}' '\{"name":"accumulate","op":"Add"\}'
