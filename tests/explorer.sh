#!/bin/sh
# explorer.sh - collagec explain --html (issue 12 items 3 and 4). Two pages:
# MNIST on blas,c with a profile and the loop IR (--profile, --source), and
# the PyTorch-style encoder, whose shape nodes the passes remove. Each page
# must be self-contained (nothing fetched: no external script, style, image
# or font). Then Debian's chromium, headless, loads each page with
# #select=NODE, which clicks that node; the DOM it dumps must show every
# ONNX node drawn (the model's nodes less its Constant nodes, counted by the
# onnx package), every partition's frame, and the clicked node's span chain:
# its partition, target and kernel for a node that runs, the pass for one
# that was removed. A screenshot is kept in $BUILD/artifacts/explorer.png.
# Without chromium the browser checks say "skip" (never ok). Needs
# $COLLAGEC and $TEST_TMP. Lines "ok explorer/NAME" or "FAIL explorer/NAME: why".
SUITE=explorer
. "$(dirname "$0")/lib.sh"
ART=$ROOT/${BUILD:-build}/artifacts
mkdir -p "$T/m" "$ART"

/usr/bin/python3 "$ROOT/testdata/gen_models.py" "$T/m" mnist_cnn >"$T/gen.log" 2>&1 &&
	/usr/bin/python3 "$ROOT/testdata/gen_encoder.py" "$T/m" >>"$T/gen.log" 2>&1 || {
	echo "FAIL explorer/models: $(tail -n 1 "$T/gen.log")"
	exit 1
}
# MNIST: blas where it is available, with a profile and the kernels' loop IR
targets=c
"$COLLAGEC" targets 2>/dev/null | grep -A1 '^blas ' | grep -q 'status: *available' &&
	targets=blas,c
"$COLLAGEC" compile "$T/m/mnist_cnn.onnx" -o "$T/mnist.so" --search none --target $targets \
	--dump-ir "$T/ir" -q >"$T/c1.log" 2>&1 &&
	"$COLLAGEC" bench "$T/mnist.so" --profile --json --runs 3 --warmup 1 >"$T/prof.json" \
		2>"$T/b.log" &&
	"$COLLAGEC" explain "$T/mnist.so" --html "$T/mnist.html" --profile "$T/prof.json" \
		--source "$T/ir" >"$T/e1.log" 2>&1 ||
	fail mnist-page "$(cat "$T/c1.log" "$T/b.log" "$T/e1.log" | grep -m1 error)"
"$COLLAGEC" compile "$T/m/encoder.onnx" -o "$T/enc.so" --search none --target c -q \
	>"$T/c2.log" 2>&1 &&
	"$COLLAGEC" explain "$T/enc.so" --html "$T/enc.html" >"$T/e2.log" 2>&1 ||
	fail encoder-page "$(cat "$T/c2.log" "$T/e2.log" | grep -m1 error)"
[ $t_failed -eq 0 ] || exit 1

# self-contained: the only URLs are the SVG namespaces
for p in mnist enc; do
	ext=$(grep -o -i -E '(src|href)="[a-z]+:[^"]*"|url\(["'"'"']?[a-z]+:|@import|<link[^>]*>' \
		"$T/$p.html" | grep -v -E 'href="data:' | head -n 3)
	if [ -n "$ext" ]; then fail "$p/self-contained" "refers outside the page: $ext"
	else ok "$p/self-contained"; fi
done
# the page's data: the kernel source and the profile made it in
grep -q 'kernel k[0-9]*_' "$T/mnist.html" && grep -q '"profile_ms":[0-9]' "$T/mnist.html" &&
	ok mnist/source-and-profile || fail mnist/source-and-profile "no loop IR or profile time in the page"

chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -z "$chrome" ]; then
	echo "skip explorer/browser: chromium is not installed (apt-get install chromium)"
	t_exit
fi
# expected counts, from the model files and OUT.json, not from collagec's page
expect() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import json, sys
import onnx
g = onnx.load(sys.argv[1]).graph
meta = json.load(open(sys.argv[2]))
print(len([n for n in g.node if n.op_type != "Constant"]), len(meta["partitions"]))
EOF
}
# one page in the browser: PAGE NODE then what the span chain must say
browse() {
	page=$1 node=$2
	shift 2
	timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--user-data-dir="$T/chrome-$page" --virtual-time-budget=5000 --dump-dom \
		"file://$T/$page.html#select=$node" >"$T/$page.dom" 2>"$T/$page.chrome.log"
	if ! grep -q 'data-ready="1"' "$T/$page.dom"; then
		fail "$page/renders" "the page's script did not finish: $(grep -m1 -i error "$T/$page.chrome.log")"
		return
	fi
	set -- $(expect "$T/m/$page_model.onnx" "$T/$page_json.json") "$@"
	nodes=$(sed -n 's/.*data-nodes="\([0-9]*\)".*/\1/p' "$T/$page.dom" | head -n 1)
	parts=$(sed -n 's/.*data-partitions="\([0-9]*\)".*/\1/p' "$T/$page.dom" | head -n 1)
	load=$(sed -n 's/.*data-load-ms="\([0-9]*\)".*/\1/p' "$T/$page.dom" | head -n 1)
	[ "$nodes" = "$1" ] && [ "$parts" = "$2" ] &&
		ok "$page/renders ($nodes nodes, $parts partitions, ready after $load ms)" ||
		fail "$page/renders" "drew $nodes nodes and $parts partitions, want $1 and $2"
	shift 2
	chain=$(sed -n 's/.*<ol class="chain" id="chain">\(.*\)<\/ol>.*/\1/p' "$T/$page.dom")
	for want in "$@"; do
		case $chain in
		*"$want"*) ;;
		*) fail "$page/click-$node" "span chain lacks '$want': $chain"; return ;;
		esac
	done
	ok "$page/click-$node"
}
page_model=mnist_cnn page_json=mnist
browse mnist conv_12 "ONNX node conv_12, a Conv" "partition" "on ${targets%%,*}" "kernel k"
page_model=encoder page_json=enc
removed=$(/usr/bin/python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print([f["name"] for f in m["passes"] if f["into"] is None and f["op"] == "Shape"][0])' "$T/enc.json")
browse enc "$removed" "ONNX node $removed, a Shape" "removed by the dce pass"

timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--user-data-dir="$T/chrome-shot" --virtual-time-budget=5000 --window-size=1400,900 \
	--screenshot="$ART/explorer.png" "file://$T/mnist.html#select=conv_12" \
	>"$T/shot.log" 2>&1
[ -s "$ART/explorer.png" ] && ok "screenshot ($ART/explorer.png)" ||
	fail screenshot "chromium wrote no screenshot: $(grep -m1 -i error "$T/shot.log")"
t_exit
