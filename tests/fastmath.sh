#!/bin/sh
# fastmath.sh - the vector math and Pow strength reduction of generated c
# code, end to end. One model applies Exp, Log, Tanh, Erf, Sigmoid and Pow by
# constant exponents 2, 3, 0.5, -1, 1 (strength-reduced) and 1.7 (not) and
# by the same exponents as graph inputs (never reduced: powf) to 4201 floats
# (a vector loop and a remainder): every 2^20-th bit pattern of both signs,
# the specials (+-0, +-Inf, NaN, subnormals, FLT_MAX, the exp overflow and
# underflow thresholds) and ordinary values. Built for --cpu generic, native
# and (where this CPU has AVX2) x86-64-v3, each output must be within its
# bound of a float64 numpy reference (NaN where it is NaN, the same
# infinities and signed zeros), each reduced Pow within 1 ulp (3: 2 ulp) of
# the unreduced one and bit-identical on the specials, and the levels must
# agree within 4 ulp. The lowered loop IR must call powf for exactly the
# unreduced Pows. Where the opencl target is available, its reduced Pows
# (the same lowering) must keep pow's specials and stay within 3 ulp.
#
# Needs $COLLAGEC (default build/collagec) and $TEST_TMP (default a fresh
# directory, removed afterwards). One line per check: "ok   fastmath/NAME" or
# "FAIL fastmath/NAME: why"; exits 1 when anything failed.

SUITE=fastmath
. "$(dirname "$0")/lib.sh"

# the model and its inputs
why=$("$PY" - "$T" <<'EOF' 2>&1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T = sys.argv[1]
N = 4201
EXPS = [("p2", 2.0), ("p3", 3.0), ("p05", 0.5), ("pm1", -1.0), ("p1", 1.0), ("p17", 1.7)]
nodes, outs, inits = [], [], []
ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])]
for op in ["Exp", "Log", "Tanh", "Erf", "Sigmoid"]:
    nodes.append(helper.make_node(op, ["x"], [op.lower()], name=op.lower()))
    outs.append(op.lower())
for name, e in EXPS:
    inits.append(numpy_helper.from_array(np.array(e, np.float32), "c_" + name))
    nodes.append(helper.make_node("Pow", ["x", "c_" + name], [name], name="pow_" + name))
    ins.append(helper.make_tensor_value_info("e_" + name, TensorProto.FLOAT, [1]))
    nodes.append(helper.make_node("Pow", ["x", "e_" + name], ["q" + name[1:]],
                                  name="powin_" + name))
    outs += [name, "q" + name[1:]]
    np.save("%s/e_%s.npy" % (T, name), np.array([e], np.float32))
g = helper.make_graph(nodes, "fastmath", ins,
                      [helper.make_tensor_value_info(o, TensorProto.FLOAT, [N]) for o in outs],
                      inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), T + "/fm.onnx")

bits = [u for u in range(0, 1 << 32, 1 << 20)]
specials = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
            0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x7f7fffff,
            0xff7fffff, 0x42b17217, 0x42b17218, 0xc2cff1b4, 0xc2cff1b5, 0xc2aeac50]
x = np.array(bits + specials, np.uint32).view(np.float32)
rest = np.random.default_rng(7).normal(0, 3, N - len(x)).astype(np.float32)
np.save(T + "/x.npy", np.concatenate([x, rest]).astype(np.float32))
np.save(T + "/special.npy", np.array(specials, np.uint32).view(np.float32))
print("ok")
EOF
)
[ "$(echo "$why" | tail -n 1)" = ok ] || { verdict model "$(echo "$why" | tail -n 1)"; exit 1; }

LEVELS="generic native"
grep -qw avx2 /proc/cpuinfo && LEVELS="$LEVELS x86-64-v3"
for lvl in $LEVELS; do
	why=
	mkdir -p "$T/$lvl"
	"$C" compile --search none --target c "$T/fm.onnx" -o "$T/$lvl/fm.so" --cpu "$lvl" \
		--dump-ir "$T/$lvl/ir" >"$T/$lvl/err" 2>&1 || why="compile: $(head -n 1 "$T/$lvl/err")"
	if [ -z "$why" ]; then
		set -- --input "x=$T/x.npy"
		for e in p2 p3 p05 pm1 p1 p17; do
			set -- "$@" --input "e_$e=$T/e_$e.npy"
		done
		"$C" run "$T/$lvl/fm.so" "$@" --output-dir "$T/$lvl/out" --npy >"$T/$lvl/err" 2>&1 ||
			why="run: $(head -n 1 "$T/$lvl/err")"
	fi
	verdict "$lvl/compile-run" "$why"
	[ -z "$why" ] || continue

	# powf only where the exponent is not a reducible constant
	got=$(awk '/^\/\/ partition/ { p = $6 } /powf\(/ { print p }' "$T/$lvl/ir/10-lower.tir" |
		LC_ALL=C sort -u | tr '\n' ' ')
	want="pow_p17(Pow) powin_p05(Pow) powin_p1(Pow) powin_p17(Pow) powin_p2(Pow) powin_p3(Pow) "
	want="${want}powin_pm1(Pow) "
	[ "$got" = "$want" ] && why= || why="powf in '$got', expected '$want'"
	verdict "$lvl/pow-strength-reduced" "$why"

	why=$("$PY" - "$T" "$lvl" <<'EOF' 2>&1
import sys
import numpy as np

T, lvl = sys.argv[1], sys.argv[2]
x = np.load(T + "/x.npy")
xd = x.astype(np.float64)
out = lambda n: np.load("%s/%s/out/%s.npy" % (T, lvl, n))

def ulps(got, ref):
    """|got - ref| in float32 ulps at ref; 0 for matching NaN/Inf, inf on a mismatch"""
    ref = np.asarray(ref, np.float64)
    got = got.astype(np.float64)
    a = np.minimum(np.abs(ref), np.finfo(np.float32).max)
    e = np.floor(np.log2(np.where(a < 2.0**-126, 2.0**-126, a)))
    err = np.abs(got - ref) / 2.0**(e - 23)
    with np.errstate(invalid="ignore"):
        r32 = ref.astype(np.float32)
    same = (np.isnan(got) & np.isnan(ref)) | (np.isinf(got) & (got == r32))
    bad = (np.isnan(got) != np.isnan(ref)) | (np.isinf(got) & (got != r32))
    return np.where(same, 0, np.where(bad, np.inf, err))

def cpow(e):
    """C99 pow(x, e) elementwise (numpy's power gives sqrt's -0 and NaN for exponent 0.5)"""
    def one(v):
        try:
            return math.pow(v, e)
        except ValueError:
            return math.nan
    return np.array([one(v) for v in xd])

import math
with np.errstate(all="ignore"):
    refs = {
        "exp": (np.exp(xd), 4), "log": (np.log(xd), 4), "tanh": (np.tanh(xd), 4),
        "sigmoid": (1 / (1 + np.exp(-xd)), 5),
        "p2": (xd * xd, 1), "p3": (xd * xd * xd, 2), "p05": (cpow(0.5), 1),
        "pm1": (1 / xd, 1), "p1": (xd, 0), "p17": (cpow(float(np.float32(1.7))), 4),
    }
    refs["erf"] = (np.array([math.erf(v) for v in xd]), 4)
problems = []
for name, (ref, bound) in refs.items():
    err = ulps(out(name), ref)
    if name == "sigmoid":
        # exp(-x) overflows below -88.72: 0 for a reference under FLT_MIN
        err[(out(name) == 0) & (np.abs(ref) < 2.0**-126)] = 0
    i = int(np.argmax(err))
    if err[i] > bound:
        problems.append("%s(%r) = %r, reference %r: %g ulp > %d"
                        % (name, float(x[i]), float(out(name)[i]), float(ref[i]), err[i], bound))
# signed zeros and infinities as numpy (C99 pow) has them
for name, ref in [("p05", cpow(0.5)), ("pm1", 1 / xd), ("p3", xd * xd * xd)]:
    got = out(name)
    z = (ref == 0) | np.isinf(ref)
    if np.any(np.signbit(got[z]) != np.signbit(ref[z])):
        problems.append("%s: wrong sign of a zero or infinity" % name)
# reduced against unreduced (powf): close everywhere, identical on the specials
spec = np.isin(x.view(np.uint32), np.load(T + "/special.npy").view(np.uint32))
for name, bound in [("p2", 1), ("p3", 2), ("p05", 1), ("pm1", 1), ("p1", 0)]:
    r, q = out(name), out("q" + name[1:])
    err = ulps(r, q.astype(np.float64))
    if err.max() > bound:
        i = int(np.argmax(err))
        problems.append("Pow %s: reduced %r, powf %r at x=%r" % (name[1:], float(r[i]),
                        float(q[i]), float(x[i])))
    if not np.array_equal(r[spec].view(np.uint32), q[spec].view(np.uint32)) and \
       not all((np.isnan(a) and np.isnan(b)) or a.view(np.uint32) == b.view(np.uint32)
               for a, b in zip(r[spec], q[spec])):
        problems.append("Pow %s: specials differ from powf's" % name[1:])
print("; ".join(problems[:3]) if problems else "ok")
EOF
)
	[ "$(echo "$why" | tail -n 1)" = ok ] && why= || why=$(echo "$why" | tail -n 1)
	verdict "$lvl/accuracy" "$why"
done

# the opencl target shares the lowering: its reduced Pows must keep pow's
# NaNs, infinities and signed zeros too, and stay within 3 ulp (OpenCL's
# division bound is 2.5)
if "$C" targets 2>/dev/null | awk 'index($0, "opencl (") == 1 { on = 1; next }
	on && /^  status: / { print $2; exit }' | grep -qx available; then
	why=
	mkdir -p "$T/opencl"
	set -- --input "x=$T/x.npy"
	for e in p2 p3 p05 pm1 p1 p17; do
		set -- "$@" --input "e_$e=$T/e_$e.npy"
	done
	"$C" compile --search none --target opencl,c "$T/fm.onnx" -o "$T/opencl/fm.so" \
		>"$T/opencl/err" 2>&1 || why="compile: $(head -n 1 "$T/opencl/err")"
	[ -n "$why" ] || "$C" run "$T/opencl/fm.so" "$@" --output-dir "$T/opencl/out" --npy \
		>"$T/opencl/err" 2>&1 || why="run: $(head -n 1 "$T/opencl/err")"
	[ -n "$why" ] || why=$("$PY" - "$T" <<'EOF' 2>&1
import json, math, sys
import numpy as np
T = sys.argv[1]
parts = json.load(open(T + "/opencl/fm.json"))["partitions"]
if any(p["target"] != "opencl" for p in parts if "Pow" in json.dumps(p)):
    print("a Pow is not on opencl")
    sys.exit()
x = np.load(T + "/x.npy").astype(np.float64)
def cpow(e):
    def one(v):
        try:
            return math.pow(v, e)
        except ValueError:
            return math.nan
    return np.array([one(v) for v in x])
bad = []
with np.errstate(all="ignore"):
    for name, ref in [("p2", x * x), ("p3", x * x * x), ("p05", cpow(0.5)), ("pm1", 1 / x),
                      ("p1", x)]:
        got = np.load("%s/opencl/out/%s.npy" % (T, name)).astype(np.float64)
        r32 = ref.astype(np.float32).astype(np.float64)
        special = ~np.isfinite(r32) | (r32 == 0)
        same = (np.isnan(got) & np.isnan(r32)) | ((got == r32) &
                                                  (np.signbit(got) == np.signbit(r32)))
        ulp = 2.0**(np.floor(np.log2(np.maximum(np.abs(r32), 2.0**-126))) - 23)
        close = np.isfinite(got) & (np.abs(got - ref) <= 3 * ulp)
        wrong = np.where(special, ~same, ~(same | close))
        if wrong.any():
            i = int(np.argmax(wrong))
            bad.append("%s(%r) = %r, expected %r" % (name, x[i], got[i], r32[i]))
print("; ".join(bad[:3]) if bad else "ok")
EOF
)
	[ "$(echo "$why" | tail -n 1)" = ok ] && why= || why=$(echo "$why" | tail -n 1)
	verdict opencl/pow-strength-reduced "$why"
fi

# every level against generic: the same results within the vector math's bound
why=$("$PY" - "$T" $LEVELS <<'EOF' 2>&1
import sys, os
import numpy as np
T, levels = sys.argv[1], sys.argv[2:]
bad = []
for lvl in levels[1:]:
    for f in sorted(os.listdir("%s/generic/out" % T)):
        a = np.load("%s/generic/out/%s" % (T, f))
        b = np.load("%s/%s/out/%s" % (T, lvl, f))
        ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
        ia = np.where(ia < 0, -2**31 - ia, ia)       # monotone integer order of floats
        ib = np.where(ib < 0, -2**31 - ib, ib)
        nan = np.isnan(a) | np.isnan(b)
        if np.any(np.isnan(a) != np.isnan(b)) or np.abs(ia - ib)[~nan].max(initial=0) > 4:
            bad.append("%s %s" % (lvl, f))
print("differ from generic: " + ", ".join(bad[:4]) if bad else "ok")
EOF
)
[ "$(echo "$why" | tail -n 1)" = ok ] && why= || why=$(echo "$why" | tail -n 1)
verdict levels-agree "$why"

t_exit
