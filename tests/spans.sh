#!/bin/sh
# spans.sh - every ONNX node is accounted for (issue 12 item 1). The five
# reference models, the PyTorch-style encoder (and shift.onnx) and a sample of the ONNX
# conformance models are compiled; then, from the model file read by the
# onnx package (not by collagec), each ONNX node must be named by a kernel's
# onnx_nodes in OUT.json or be listed there as removed by a pass ("passes",
# into null); no partition or kernel may have an empty span, and every
# "passes" entry must name a node of the model (the quick tier: a third of
# the conformance models' sample). Nodes without a name are
# called OpType_index, as collagec names them. (The graph IR's own check,
# graph_verify, refuses a live node with an empty span after every pass.)
# Needs $COLLAGEC and $TEST_TMP. One line per model: "ok spans/NAME" or
# "FAIL spans/NAME: why".
SUITE=spans
. "$(dirname "$0")/lib.sh"
D=/usr/share/libonnx-testdata/data/node
mkdir -p "$T/m"
/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" >"$T/gen.log" 2>&1 &&
	/usr/bin/python3 "$ROOT/testdata/gen_encoder.py" "$T/m" >>"$T/gen.log" 2>&1 || {
	echo "FAIL spans/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
list="$T/list"
: >"$list"
for m in mnist_cnn mlp bert_tiny mobilenetv2 resnet18 encoder shift; do
	echo "$m $T/m/$m.onnx" >>"$list"
done
# a fixed sample of the conformance models: every 12th that compiles; the
# quick tier a shard of a third of those
n=0
for d in "$D"/test_*; do
	n=$((n + 1))
	[ $((n % 12)) -eq 0 ] && [ -f "$d/model.onnx" ] && echo "$(basename "$d") $d/model.onnx"
done >"$T/sample"
if tier full; then
	cat "$T/sample" >>"$list"
else
	t_shard "$SEED" 1/3 <"$T/sample" >>"$list"
fi
while read -r name model; do
	out="$T/$name.so"
	if ! "$COLLAGEC" compile "$model" -o "$out" --search none --target c -q \
		>"$T/$name.log" 2>&1; then
		# a reference model must compile; a conformance model may be unsupported
		case $model in "$T"/m/*)
			echo "FAIL spans/$name: $(head -n 1 "$T/$name.log")"
			t_failed=$((t_failed + 1)) ;;
		esac
		continue
	fi
	/usr/bin/python3 - "$model" "$T/$name.json" "$name" <<'EOF' || t_failed=$((t_failed + 1))
import json, sys
import onnx

model_path, json_path, name = sys.argv[1:4]
g = onnx.load(model_path, load_external_data=False).graph
onnx_nodes = {}
for i, n in enumerate(g.node):
    onnx_nodes[n.name or "%s_%d" % (n.op_type, i)] = n.op_type
meta = json.load(open(json_path))
in_kernels, why = set(), []
for p in meta["partitions"]:
    if not p["onnx_nodes"]:
        why.append("partition %d has an empty span" % p["id"])
    for k in p["kernels"]:
        if not k["onnx_nodes"]:
            why.append("kernel %s has an empty span" % k["name"])
        in_kernels.update(x["name"] for x in k["onnx_nodes"])
removed = {f["name"] for f in meta["passes"] if f["into"] is None}
for f in meta["passes"]:
    if f["name"] not in onnx_nodes:
        why.append("passes names '%s', not a node of the model" % f["name"])
    elif f["op"] != onnx_nodes[f["name"]]:
        why.append("passes calls '%s' a %s, the model a %s" % (f["name"], f["op"],
                   onnx_nodes[f["name"]]))
lost = [n for n in onnx_nodes if n not in in_kernels and n not in removed]
if lost:
    why.append("%d ONNX node(s) neither in a kernel nor removed by a pass: %s"
               % (len(lost), ", ".join(lost[:5])))
if why:
    print("FAIL spans/%s: %s" % (name, "; ".join(why[:3])))
    sys.exit(1)
print("ok   spans/%s (%d nodes: %d in kernels, %d removed by passes)"
      % (name, len(onnx_nodes), len([n for n in onnx_nodes if n in in_kernels]),
         len([n for n in onnx_nodes if n not in in_kernels])))
EOF
done <"$list"
t_exit
