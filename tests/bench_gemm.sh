#!/bin/sh
# bench_gemm.sh - make bench-gemm: ResNet-18's convolutions on the c target
# against OpenBLAS's sgemm on the same GEMM shapes, same machine, same run,
# same thread count (THREADS, default 1).
#
# Per Conv node of testdata/gen_models.py's resnet18 (M = output channels,
# K = input channels x kernel, N = output pixels): its kernel time in
# `collagec bench --profile` (the median over RUNS runs; its partition, so
# im2col and the fused BatchNormalization/Add/Relu are in it) as GFLOP/s
# of its 2 M N K, then build/tests/gemm_bench's GFLOP/s for the same
# M x N x K: rt_cgemm alone and OpenBLAS's cblas_sgemm (the medians of RUNS
# runs each). Both are measured REPEAT times (default 3), taking turns, and
# each number is the median of those. The last line sums over every Conv:
# all FLOPs over all kernel times, against all FLOPs over the sgemm times;
# "ratio" is conv GFLOP/s / OpenBLAS GFLOP/s (issue 8 asks for >= 0.60).
COLLAGEC=${BUILD:-build}/collagec
BENCH=${BUILD:-build}/tests/gemm_bench
D=${BUILD:-build}/models
THREADS=${THREADS:-1}
RUNS=${RUNS:-20}
REPEAT=${REPEAT:-3}
mkdir -p "$D"
/usr/bin/python3 testdata/gen_models.py "$D" >/dev/null || exit 1
"$COLLAGEC" compile "$D/resnet18.onnx" -o "$D/resnet18_c.so" --target c --search none \
	--threads "$THREADS" || exit 1
/usr/bin/python3 - "$D/resnet18.onnx" "$D/resnet18_c.so" "$COLLAGEC" "$BENCH" "$THREADS" "$RUNS" \
	"$REPEAT" <<'PY'
import json, statistics, subprocess, sys
import onnx
from onnx import shape_inference

model, so, collagec, bench, threads, runs, repeat = sys.argv[1:8]
g = shape_inference.infer_shapes(onnx.load(model)).graph
shapes = {}
for vi in list(g.value_info) + list(g.output) + list(g.input):
    shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
for t in g.initializer:
    shapes[t.name] = list(t.dims)
rows = []
for n in g.node:
    if n.op_type != "Conv":
        continue
    group = next((a.i for a in n.attribute if a.name == "group"), 1)
    w, y = shapes[n.input[1]], shapes[n.output[0]]
    m, k, npix = w[0] // group, w[1] * w[2] * w[3], y[0] * y[2] * y[3]
    rows.append((n.name, m, npix, k, group))
todo = sorted({"%dx%dx%d" % (m, npix, k) for _, m, npix, k, _ in rows})
ms, gfs = {}, {}
for r in range(int(repeat)):
    out = subprocess.run([collagec, "bench", so, "--runs", runs, "--warmup", "3", "--threads",
                          threads, "--profile", "--json"], check=True, capture_output=True,
                         text=True).stdout
    for p in json.loads(out)["profile"]["partitions"]:
        convs = [n["name"] for n in p["onnx_nodes"] if n["op"] == "Conv"]
        if len(convs) == 1:
            ms.setdefault(convs[0], []).append(p["median_ms"])
    out = subprocess.run([bench, "-t", threads, "-r", runs] + todo, check=True,
                         capture_output=True, text=True).stdout
    for line in out.strip().split("\n"):
        m, npix, k, blas, cg = line.split()
        gfs.setdefault("%sx%sx%s" % (m, npix, k), []).append((float(blas), float(cg)))
med = statistics.median
ms = {c: med(v) for c, v in ms.items()}
gf = {s: (med(b for b, _ in v), med(c for _, c in v)) for s, v in gfs.items()}
print("resnet18 convolutions, target c, %s thread(s), GFLOP/s (2 M N K / time), "
      "medians of %s x %s runs" % (threads, repeat, runs))
print("%-10s %5s %6s %5s %9s %10s %9s %9s %6s" % ("conv", "M", "N", "K", "c_ms", "conv_gf",
                                                   "cgemm_gf", "blas_gf", "ratio"))
flops = tc = tb = 0.0
for name, m, npix, k, group in rows:
    t = ms.get(name)
    f = 2.0 * m * npix * k * group
    blas, cg = gf["%dx%dx%d" % (m, npix, k)]
    if t is None:
        print("%-10s %5d %6d %5d %9s %10s %9.1f %9.1f %6s" % (name, m, npix, k, "-", "-", cg,
                                                             blas, "-"))
        continue
    flops += f
    tb += f / (blas * 1e9)
    tc += t * 1e-3
    c = f / (t * 1e-3) * 1e-9
    print("%-10s %5d %6d %5d %9.3f %10.1f %9.1f %9.1f %6.2f" % (name, m, npix, k, t, c, cg, blas,
                                                               c / blas))
if tc:
    print("%-10s %5s %6s %5s %9.3f %10.1f %9s %9.1f %6.2f" % ("all", "", "", "", tc * 1e3,
          flops / tc * 1e-9, "", flops / tb * 1e-9, (flops / tc) / (flops / tb)))
PY
