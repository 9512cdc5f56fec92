#!/usr/bin/env python3
"""bench_collage.py - make bench-collage: Collage against every single-target build,
greedy placement and ONNX Runtime on the five reference models, same machine,
same run, same thread count (THREADS, default "1 2").

Builds per model and thread count:
  c       --search none --target c
  blas    --search none --target blas,c        (blas cannot run every op)
  opencl  --search none --target opencl,c
  dnnl    --search none --target dnnl,c
  greedy  --search greedy --target blas,opencl,c
  collage --target blas,opencl,c --threads T   (a fresh cost cache: cold search
          time, candidates measured; then a warm recompile: its time and whether
          it is byte-identical to a second warm one)
  all     collage over every available target (lapack,blas,dnnl,opencl,c), the
          default, with its own fresh cache
Models are compiled (and ONNX Runtime run) at the shapes of gen_models.py's header:
mlp with --shape N=64, bert_tiny with batch 1. The last column also names the plan
phase 5 built (collage, or the baseline it found faster).
Every build is benchmarked REPEAT times (collagec bench, RUNS runs each,
round-robin over the builds so drift hits all alike), ONNX Runtime likewise
(tools/ort.py, optional: pip install onnxruntime numpy). The table shows
medians of the medians in ms and the spread of collage's; the ratios compare
collage with the best single-target build among c, blas and opencl, with greedy
and with ONNX Runtime (the issue's comparison, targets blas,opencl,c), and
dnnl,c and the default search over every target with ONNX Runtime. A ratio to
ONNX Runtime is the median over the rounds of each round's ratio: on a shared
machine whose speed drifts from second to second, a round's builds and ONNX
Runtime are timed close together.
"""
import json
import os
import statistics
import subprocess
import sys
import time

BUILD = os.environ.get("BUILD", "build")
C = os.path.join(BUILD, "collagec")
D = os.path.join(BUILD, "bench-collage")
THREADS = [int(t) for t in os.environ.get("THREADS", "1 2").split()]
REPEAT = int(os.environ.get("REPEAT", "3"))
RUNS = int(os.environ.get("RUNS", "20"))
MODELS = os.environ.get("MODELS", "mnist_cnn mlp bert_tiny mobilenetv2 resnet18").split()
# the shapes ../shared/tools/gen_models.py's header gives: mlp at N=64, bert_tiny at batch 1
SHAPES = {"mlp": ["N=64"], "bert_tiny": ["batch=1"]}
BUILDS = [
    ("c", ["--search", "none", "--target", "c"]),
    ("blas", ["--search", "none", "--target", "blas,c"]),
    ("opencl", ["--search", "none", "--target", "opencl,c"]),
    ("dnnl", ["--search", "none", "--target", "dnnl,c"]),
    ("greedy", ["--search", "greedy", "--target", "blas,opencl,c"]),
]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def shape_args(onnx):
    name = os.path.basename(onnx)[:-5]
    return [a for s in SHAPES.get(name, []) for a in ("--shape", s)]


def compile_model(onnx, so, args):
    t0 = time.time()
    run([C, "compile", onnx, "-o", so, "-q"] + shape_args(onnx) + args)
    return time.time() - t0


def bench(so, threads):
    out = run([C, "bench", so, "--runs", str(RUNS), "--warmup", "3", "--threads",
               str(threads), "--json"]).stdout
    return json.loads(out)["median_ms"]


def ort(onnx, threads):
    out = run([sys.executable, "tools/ort.py", "bench", onnx, "--runs", str(RUNS), "--warmup",
               "3", "--threads", str(threads)] + shape_args(onnx)).stdout
    return json.loads(out)["median_ms"]


def main():
    os.makedirs(D, exist_ok=True)
    subprocess.run(["/usr/bin/python3", "testdata/gen_models.py", D], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        import onnxruntime  # noqa: F401
        have_ort = True
    except ImportError:
        have_ort = False
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    print("cpu: %s, %d cores; %d x %d runs per build" % (cpu, os.cpu_count(), REPEAT, RUNS))
    for threads in THREADS:
        print("\n%d thread(s); times in ms (median of medians); ratios are collage / other,"
              " to ort by rounds" % threads)
        print("%-12s %8s %8s %8s %8s %8s %8s %14s %8s %8s | %7s %7s %7s %8s %7s | %s"
              % ("model", "c", "blas", "opencl", "dnnl", "greedy", "collage", "(spread)", "all",
                 "ort", "/single", "/greedy", "/ort", "dnnl/ort", "all/ort",
                 "cold_s warm_s measured same plan (collage; all)"))
        for m in MODELS:
            onnx = os.path.join(D, m + ".onnx")
            sos = {}
            info = {}
            for name, args in BUILDS:
                so = os.path.join(D, "%s.%s.%d.so" % (m, name, threads))
                compile_model(onnx, so, args)
                sos[name] = so
            for name, targets in (("collage", "blas,opencl,c"), ("all", None)):
                cache = os.path.join(D, "%s.%s.%d.costs.sqlite" % (m, name, threads))
                for f in (cache, cache + "-wal", cache + "-shm"):
                    if os.path.exists(f):
                        os.remove(f)
                so = os.path.join(D, "%s.%s.%d.so" % (m, name, threads))
                cargs = (["--target", targets] if targets else []) + \
                    ["--threads", str(threads), "--cache", cache]
                stats = so[:-3] + ".stats.json"
                cold = compile_model(onnx, so, cargs + ["--stats", stats])
                meta = json.load(open(so[:-3] + ".json"))
                measured = json.load(open(stats))["cost_cache"]["measured"]
                warm = compile_model(onnx, so, cargs)
                so2 = so[:-3] + ".again.so"
                compile_model(onnx, so2, cargs)
                same = (open(so, "rb").read() == open(so2, "rb").read() and
                        open(so[:-3] + ".json", "rb").read() ==
                        open(so2[:-3] + ".json", "rb").read())
                sos[name] = so
                info[name] = (cold, warm, measured, same,
                              meta["search"].get("plan", "collage"))
            t = {k: [] for k in sos}
            o = []
            for _ in range(REPEAT):
                for k in sos:
                    t[k].append(bench(sos[k], threads))
                if have_ort:
                    o.append(ort(onnx, threads))
            med = {k: statistics.median(v) for k, v in t.items()}
            single = min(med["c"], med["blas"], med["opencl"])
            om = statistics.median(o) if o else float("nan")

            def to_ort(k):
                return statistics.median(a / b for a, b in zip(t[k], o)) if o else float("nan")

            print("%-12s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %14s %8.3f %8.3f | %7.2f %7.2f "
                  "%7.2f %8.2f %7.2f | %s; %s"
                  % (m, med["c"], med["blas"], med["opencl"], med["dnnl"], med["greedy"],
                     med["collage"], "%.3f..%.3f" % (min(t["collage"]), max(t["collage"])),
                     med["all"], om, med["collage"] / single, med["collage"] / med["greedy"],
                     to_ort("collage"), to_ort("dnnl"), to_ort("all"),
                     "%.1f %.1f %d %s %s" % (info["collage"][0], info["collage"][1],
                                             info["collage"][2],
                                             "yes" if info["collage"][3] else "NO",
                                             info["collage"][4]),
                     "%.1f %.1f %d %s %s" % (info["all"][0], info["all"][1], info["all"][2],
                                             "yes" if info["all"][3] else "NO", info["all"][4])))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
