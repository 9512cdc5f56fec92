#!/usr/bin/python3
"""Models and checks for the random ops (tests/random.sh). Their values
come from collagec's own generator (runtime/rt_random.h), so no reference
outputs exist: the checks are statistical and structural instead.

usage: gen_random_tests.py OUTDIR            writes the cases
       gen_random_tests.py --check OUTDIR    checks the runs random.sh made

Writes OUTDIR/cases/NAME/model.onnx, its inputs as input_K.pb (if any) and
`runs` (the collagec run invocations random.sh makes: one line each,
"TAG THREADS INPUT_SET"; an input set is a folder of input_K.pb), and
OUTDIR/bad/NAME/{model.onnx,expect} for nodetests.sh's nt_bad. random.sh
writes each run's outputs to OUTDIR/cases/NAME/TAG/*.pb; --check also loads
model.so with ctypes to run one handle twice and a second handle once, and
prints one "ok   random/NAME" or "FAIL random/NAME: why" line per case.

Bounds: a mean, variance or frequency over n samples must lie within 6
standard errors of its expected value (a false failure about once in 10^8
checks), so a generator off by a small fraction of a sigma fails.
"""
import ctypes
import math
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CASES = {}     # name -> (model, {input name: array}, check function, runs)
BAD = []
Z = 6.0        # standard errors allowed


def vinfo(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, "random", inputs, outputs)
    m = helper.make_model(g, producer_name="collagec-random-test",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(array), name))


def case(name, m, inputs, check, runs=("a 1 0", "b 1 0")):
    CASES[name] = (m, inputs, check, runs)


# ---- checks ----

class Fail(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Fail(why)


def near(what, got, want, se):
    """got within Z standard errors se of want."""
    expect(abs(got - want) <= Z * se,
           "%s %.6g, expected %.6g +- %.3g" % (what, got, want, Z * se))


def uniform_stats(y, low, high):
    v = y.astype(np.float64).ravel()
    n, w = v.size, high - low
    expect(v.min() >= low and v.max() <= high,
           "values outside [%g, %g]: %g .. %g" % (low, high, v.min(), v.max()))
    near("mean", v.mean(), (low + high) / 2, w / math.sqrt(12 * n))
    near("variance", v.var(), w * w / 12, w * w * math.sqrt(1 / 80 - 1 / 144) / math.sqrt(n))
    # every tenth of the range holds a tenth of the values
    h, _ = np.histogram(v, bins=10, range=(low, high))
    for k, c in enumerate(h):
        near("bin %d's count" % k, c, n / 10, math.sqrt(n * 0.1 * 0.9))


def normal_stats(y, mean, scale):
    v = y.astype(np.float64).ravel()
    n = v.size
    near("mean", v.mean(), mean, scale / math.sqrt(n))
    near("variance", v.var(), scale * scale, scale * scale * math.sqrt(2 / n))
    z = (v - mean) / scale
    for k, p in ((1, 0.682689492), (2, 0.954499736), (3, 0.997300204)):
        near("fraction within %d sigma" % k, np.mean(np.abs(z) < k), p, math.sqrt(p * (1 - p) / n))
    expect(np.isfinite(v).all(), "non-finite values")


def raw(a):
    """An output's bytes (handle_runs gives bytes already)."""
    return a if isinstance(a, bytes) else a.tobytes()


def same(a, b, what):
    expect(raw(a) == raw(b) and (isinstance(a, bytes) or
                                 (a.dtype == b.dtype and a.shape == b.shape)),
           "%s differ" % what)


def differ(a, b, what):
    expect(raw(a) != raw(b), "%s are identical" % what)


def layout(y, dtype, shape):
    expect(y.dtype == np.dtype(dtype), "dtype %s, expected %s" % (y.dtype, np.dtype(dtype)))
    expect(y.shape == tuple(shape), "shape %s, expected %s" % (y.shape, tuple(shape)))


# ---- the cases ----

def random_uniform():
    m = model([helper.make_node("RandomUniform", [], ["y"], shape=[400, 500], low=-2.0,
                                high=3.0)], [], [vinfo("y", TensorProto.FLOAT, [400, 500])])

    def check(r):
        layout(r["a"]["y"], np.float32, (400, 500))
        uniform_stats(r["a"]["y"], -2.0, 3.0)
        differ(r["a"]["y"], r["b"]["y"], "two processes' unseeded outputs")
        differ(r["h1"][0], r["h2"][0], "one handle's two runs")
        differ(r["h1"][0], r["g1"][0], "two handles' runs")
    case("uniform_unseeded", m, {}, check)


def random_uniform_seeded():
    m = model([helper.make_node("RandomUniform", [], ["y"], shape=[100000], seed=3.5)], [],
              [vinfo("y", TensorProto.FLOAT, [100000])])

    def check(r):
        uniform_stats(r["a"]["y"], 0.0, 1.0)
        same(r["a"]["y"], r["b"]["y"], "two processes' seeded outputs")
        same(r["a"]["y"], r["t"]["y"], "1 and 2 threads' seeded outputs")
        expect(r["h1"][0] == r["h2"][0] == r["g1"][0] == r["a"]["y"].tobytes(),
               "seeded outputs differ between runs or handles")
    case("uniform_seeded", m, {}, check, ("a 1 0", "b 1 0", "t 2 0"))


def random_uniform_double():
    m = model([helper.make_node("RandomUniform", [], ["y"], shape=[200, 1000], dtype=11,
                                low=10.0, high=10.5, seed=1.0)], [],
              [vinfo("y", TensorProto.DOUBLE, [200, 1000])])

    def check(r):
        layout(r["a"]["y"], np.float64, (200, 1000))
        uniform_stats(r["a"]["y"], 10.0, 10.5)
        # 53 random bits: far more distinct values than a float's 24 would give
        expect(np.unique(r["a"]["y"]).size > 199000, "too few distinct doubles")
    case("uniform_double", m, {}, check)


def random_normal():
    m = model([helper.make_node("RandomNormal", [], ["y"], shape=[500, 400], mean=1.5,
                                scale=2.0)], [], [vinfo("y", TensorProto.FLOAT, [500, 400])])

    def check(r):
        layout(r["a"]["y"], np.float32, (500, 400))
        normal_stats(r["a"]["y"], 1.5, 2.0)
        differ(r["a"]["y"], r["b"]["y"], "two processes' unseeded outputs")
    case("normal_unseeded", m, {}, check)


def random_normal_seeded_threads():
    m = model([helper.make_node("RandomNormal", [], ["y"], shape=[300000], seed=-7.0)], [],
              [vinfo("y", TensorProto.FLOAT, [300000])])

    def check(r):
        normal_stats(r["a"]["y"], 0.0, 1.0)
        same(r["a"]["y"], r["b"]["y"], "two processes' seeded outputs")
        same(r["a"]["y"], r["t"]["y"], "1 and 2 threads' seeded outputs")
    case("normal_seeded", m, {}, check, ("a 1 0", "b 1 0", "t 2 0"))


def random_normal_types():
    for name, dt, np_dt in (("normal_double", 11, np.float64), ("normal_float16", 10, np.float16)):
        m = model([helper.make_node("RandomNormal", [], ["y"], shape=[100000], dtype=dt,
                                    mean=-3.0, scale=0.5)], [], [vinfo("y", dt, [100000])])

        def check(r, np_dt=np_dt):
            layout(r["a"]["y"], np_dt, (100000,))
            normal_stats(r["a"]["y"], -3.0, 0.5)
        case(name, m, {}, check)


def random_like():
    x = np.zeros((2, 3, 40), np.float16)
    m = model([helper.make_node("RandomUniformLike", ["x"], ["y"], low=5.0, high=6.0)],
              [vinfo("x", TensorProto.FLOAT16, [2, 3, 40])],
              [vinfo("y", TensorProto.FLOAT16, [2, 3, 40])])

    def check(r):
        layout(r["a"]["y"], np.float16, (2, 3, 40))
        y = r["a"]["y"].astype(np.float64)
        expect(y.min() >= 5.0 and y.max() <= 6.0, "values outside [5, 6]")
    case("uniform_like_float16", m, {"x": x}, check)

    x = np.arange(150 * 1000, dtype=np.int32).reshape(150, 1000)
    m = model([helper.make_node("RandomNormalLike", ["x"], ["y"], dtype=11, seed=2.0)],
              [vinfo("x", TensorProto.INT32, [150, 1000])],
              [vinfo("y", TensorProto.DOUBLE, [150, 1000])])

    def check2(r):
        layout(r["a"]["y"], np.float64, (150, 1000))
        normal_stats(r["a"]["y"], 0.0, 1.0)
    case("normal_like_int32_to_double", m, {"x": x}, check2)


def two_like_nodes():
    """Two unseeded RandomUniformLike nodes on one input are two draws, never one."""
    x = np.zeros((1000,), np.float32)
    nodes = [helper.make_node("RandomUniformLike", ["x"], ["y1"], name="r1"),
             helper.make_node("RandomUniformLike", ["x"], ["y2"], name="r2"),
             helper.make_node("RandomUniformLike", ["x"], ["s1"], name="s1", seed=4.0),
             helper.make_node("RandomUniformLike", ["x"], ["s2"], name="s2", seed=4.0)]
    outs = [vinfo(n, TensorProto.FLOAT, [1000]) for n in ("y1", "y2", "s1", "s2")]
    m = model(nodes, [vinfo("x", TensorProto.FLOAT, [1000])], outs)

    def check(r):
        differ(r["a"]["y1"], r["a"]["y2"], "two unseeded nodes' outputs")
        same(r["a"]["s1"], r["a"]["s2"], "two nodes' outputs with one seed")
    case("two_unseeded_like_nodes", m, {"x": x}, check)


def bernoulli():
    ps = np.array([0.0, 0.05, 0.25, 0.5, 0.9, 1.0])
    n = 20000
    for name, dt, attrs, want in (("bernoulli_float", np.float32, {}, np.float32),
                                  ("bernoulli_double_to_bool", np.float64, {"dtype": 9}, np.bool_),
                                  ("bernoulli_int64_seeded", np.float32,
                                   {"dtype": 7, "seed": 11.0}, np.int64)):
        p = np.repeat(ps, n).reshape(len(ps), n).astype(dt)
        ot = helper.np_dtype_to_tensor_dtype(np.dtype(want)) if hasattr(
            helper, "np_dtype_to_tensor_dtype") else \
            __import__("onnx").mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(want)]
        it = TensorProto.FLOAT if dt == np.float32 else TensorProto.DOUBLE
        m = model([helper.make_node("Bernoulli", ["p"], ["y"], **attrs)],
                  [vinfo("p", it, list(p.shape))], [vinfo("y", ot, list(p.shape))], opset=15)

        def check(r, want=want):
            y = r["a"]["y"]
            layout(y, want, (len(ps), n))
            expect(set(np.unique(y.astype(np.float64))) <= {0.0, 1.0}, "values other than 0, 1")
            for k, pk in enumerate(ps):
                f = y[k].astype(np.float64).mean()
                if pk in (0.0, 1.0):
                    expect(f == pk, "p = %g gave a frequency of %g" % (pk, f))
                else:
                    near("frequency at p = %g" % pk, f, pk, math.sqrt(pk * (1 - pk) / n))
        case(name, m, {"p": p}, check)


def multinomial():
    logits = np.array([[0.0, 1.0, 2.0, -1.0, 0.5],
                       [3.0, -2.0, 0.0, 0.0, 1.0],
                       [-50.0, -50.0, -51.0, -49.0, -50.0]], np.float32)
    s = 60000
    for name, attrs, want in (("multinomial_int32", {}, np.int32),
                              ("multinomial_int64_seeded", {"dtype": 7, "seed": 9.0}, np.int64)):
        ot = TensorProto.INT32 if want == np.int32 else TensorProto.INT64
        m = model([helper.make_node("Multinomial", ["x"], ["y"], sample_size=s, **attrs)],
                  [vinfo("x", TensorProto.FLOAT, [3, 5])], [vinfo("y", ot, [3, s])])

        def check(r, want=want):
            y = r["a"]["y"]
            layout(y, want, (3, s))
            expect(y.min() >= 0 and y.max() < 5, "class indices outside [0, 5)")
            for b in range(3):
                e = np.exp(logits[b].astype(np.float64) - logits[b].max())
                p = e / e.sum()
                f = np.bincount(y[b], minlength=5) / s
                for c in range(5):
                    near("row %d class %d's frequency" % (b, c), f[c], p[c],
                         math.sqrt(p[c] * (1 - p[c]) / s))
        case(name, m, {"x": logits}, check)


def dropout_const():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((200, 500)).astype(np.float32)
    for name, ratio, seed in (("dropout_training", 0.3, None), ("dropout_training_seeded", 0.75, 12)):
        attrs = {} if seed is None else {"seed": seed}
        m = model([const("r", np.float32(ratio)), const("t", np.bool_(True)),
                   helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], **attrs)],
                  [vinfo("x", TensorProto.FLOAT, [200, 500])],
                  [vinfo("y", TensorProto.FLOAT, [200, 500]),
                   vinfo("mask", TensorProto.BOOL, [200, 500])], opset=13)

        def check(r, ratio=ratio, seed=seed):
            y, mask = r["a"]["y"], r["a"]["mask"]
            layout(y, np.float32, (200, 500))
            layout(mask, np.bool_, (200, 500))
            scale = np.float32(1 / (1 - np.float32(ratio)))
            same(y, np.where(mask, x * scale, np.float32(0)), "y and x * mask / (1 - ratio)")
            near("fraction dropped", 1 - mask.mean(), ratio,
                 math.sqrt(ratio * (1 - ratio) / mask.size))
            if seed is None:
                differ(r["a"]["mask"], r["b"]["mask"], "two processes' unseeded masks")
            else:
                same(r["a"]["mask"], r["b"]["mask"], "two processes' seeded masks")
        case(name, m, {"x": x}, check)


def dropout_inputs():
    """ratio and training_mode fed at run time: the same .so trains or not."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((100, 1000)).astype(np.float64)
    m = model([helper.make_node("Dropout", ["x", "ratio", "training_mode"], ["y", "mask"])],
              [vinfo("x", TensorProto.DOUBLE, [100, 1000]),
               vinfo("ratio", TensorProto.DOUBLE, []),
               vinfo("training_mode", TensorProto.BOOL, [])],
              [vinfo("y", TensorProto.DOUBLE, [100, 1000]),
               vinfo("mask", TensorProto.BOOL, [100, 1000])], opset=13)
    sets = [{"x": x, "ratio": np.float64(0.4), "training_mode": np.bool_(True)},
            {"x": x, "ratio": np.float64(0.4), "training_mode": np.bool_(False)},
            {"x": x, "ratio": np.float64(0.0), "training_mode": np.bool_(True)}]

    def check(r):
        y, mask = r["train"]["y"], r["train"]["mask"]
        layout(y, np.float64, (100, 1000))
        same(y, np.where(mask, x * (1 / (1 - 0.4)), 0.0), "y and x * mask / (1 - ratio)")
        near("fraction dropped", 1 - mask.mean(), 0.4, math.sqrt(0.24 / mask.size))
        for tag in ("infer", "zero"):
            same(r[tag]["y"], x, "%s: y and x" % tag)
            expect(r[tag]["mask"].all(), "%s: the mask is not all true" % tag)
    case("dropout_runtime_inputs", m, sets, check, ("train 1 0", "infer 1 1", "zero 1 2"))


def bad_cases():
    def add(name, nodes, inputs, outputs, expect_msg, opset=17):
        BAD.append((name, model(nodes, inputs, outputs, opset), expect_msg))
    add("uniform_int_dtype",
        [helper.make_node("RandomUniform", [], ["y"], shape=[2], dtype=7)], [],
        [vinfo("y", TensorProto.INT64, [2])],
        "output type 7 is not one the op gives (float16, bfloat16, float or double)")
    add("uniform_like_int_input",
        [helper.make_node("RandomUniformLike", ["x"], ["y"])],
        [vinfo("x", TensorProto.INT32, [2])], [vinfo("y", TensorProto.INT32, [2])],
        "is not one the op gives (float16, bfloat16, float or double)")
    add("uniform_negative_dim",
        [helper.make_node("RandomUniform", [], ["y"], shape=[2, -1])], [],
        [vinfo("y", TensorProto.FLOAT, [2, 1])], "attr 'shape': dim 1 is negative (-1)")
    add("multinomial_float_dtype",
        [helper.make_node("Multinomial", ["x"], ["y"], dtype=1)],
        [vinfo("x", TensorProto.FLOAT, [2, 3])], [vinfo("y", TensorProto.FLOAT, [2, 1])],
        "attr 'dtype': output must be int32 or int64, not float32")
    add("multinomial_rank3",
        [helper.make_node("Multinomial", ["x"], ["y"])],
        [vinfo("x", TensorProto.FLOAT, [2, 3, 4])], [vinfo("y", TensorProto.INT32, [2, 1])],
        "needs an input of rank 2 ([batch, class], not rank 3)")
    add("bernoulli_int_input",
        [helper.make_node("Bernoulli", ["x"], ["y"])],
        [vinfo("x", TensorProto.INT32, [4])], [vinfo("y", TensorProto.INT32, [4])],
        "input must be float16, bfloat16, float or double, not int32", opset=15)
    add("dropout_training_int_data",
        [helper.make_node("Dropout", ["x", "", "t"], ["y"])],
        [vinfo("x", TensorProto.INT32, [4]), vinfo("t", TensorProto.BOOL, [])],
        [vinfo("y", TensorProto.INT32, [4])],
        "training mode needs float 'data' and 'ratio' and a bool 'training_mode'", opset=13)


# ---- writing and checking ----

def save(path, proto):
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def build():
    """Fills CASES and BAD."""
    for f in (random_uniform, random_uniform_seeded, random_uniform_double, random_normal,
              random_normal_seeded_threads, random_normal_types, random_like, two_like_nodes,
              bernoulli, multinomial, dropout_const, dropout_inputs, bad_cases):
        f()


def write(outdir):
    for name, (m, inputs, _, runs) in CASES.items():
        d = os.path.join(outdir, "cases", name)
        os.makedirs(d)
        save(os.path.join(d, "model.onnx"), m)
        sets = inputs if isinstance(inputs, list) else [inputs]
        for k, s in enumerate(sets):
            os.makedirs(os.path.join(d, "in%d" % k))
            for i, (n, a) in enumerate(s.items()):
                save(os.path.join(d, "in%d" % k, "input_%d.pb" % i),
                     numpy_helper.from_array(np.asarray(a), n))
        with open(os.path.join(d, "runs"), "w") as f:
            f.write("".join(r + "\n" for r in runs))
    for name, m, msg in BAD:
        d = os.path.join(outdir, "bad", name)
        os.makedirs(d)
        save(os.path.join(d, "model.onnx"), m)
        with open(os.path.join(d, "expect"), "w") as f:
            f.write(msg + "\n")


def read_outputs(d):
    out = {}
    for f in os.listdir(d):
        if f.endswith(".pb"):
            t = TensorProto()
            with open(os.path.join(d, f), "rb") as fh:
                t.ParseFromString(fh.read())
            out[f[:-3]] = numpy_helper.to_array(t)
    return out


def handle_runs(so, nbytes):
    """Output 0 of a model without inputs: one handle run twice, a second run once."""
    lib = ctypes.CDLL(so)
    vp = ctypes.c_void_p

    def run(m):
        data = vp()
        if lib.collagec_run(m) != 0 or lib.collagec_get_output(m, 0, ctypes.byref(data),
                                                             None, None) != 0:
            raise Fail("collagec_run failed")
        return ctypes.string_at(data, nbytes)
    m1, m2 = vp(), vp()
    if lib.collagec_open(ctypes.byref(m1)) or lib.collagec_open(ctypes.byref(m2)):
        raise Fail("collagec_open failed")
    r = {"h1": [run(m1)], "h2": [run(m1)], "g1": [run(m2)]}
    lib.collagec_close(m1)
    lib.collagec_close(m2)
    return r


def check(outdir):
    failed = 0
    for name, (m, inputs, fn, runs) in sorted(CASES.items()):
        d = os.path.join(outdir, "cases", name)
        try:
            r = {}
            for line in runs:
                tag = line.split()[0]
                if not os.path.isdir(os.path.join(d, tag)):
                    raise Fail("run %s gave no outputs (see %s.log)" % (tag, tag))
                r[tag] = read_outputs(os.path.join(d, tag))
            if not inputs:
                first = r[runs[0].split()[0]][m.graph.output[0].name]
                r.update(handle_runs(os.path.join(d, "model.so"), first.nbytes))
            fn(r)
            print("ok   random/%s" % name)
        except Fail as e:
            print("FAIL random/%s: %s" % (name, e))
            failed += 1
        except Exception as e:     # a broken output file or check: still one line
            print("FAIL random/%s: %s: %s" % (name, type(e).__name__, e))
            failed += 1
    return failed


if __name__ == "__main__":
    build()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    elif len(sys.argv) == 2:
        write(sys.argv[1])
    else:
        sys.exit(__doc__)
