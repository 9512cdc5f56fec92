#!/usr/bin/python3
"""gen-op-attrs.py - writes core/ops/attrs.def: every attribute of every op in
core/ops/*.def as the ONNX schema (opset 17, Debian's python3-onnx) defines
it, with its default, plus the attributes that opsets 18 to 28 added (the
LATER table below, written by hand from docs/Changelog.md of onnx, since
python3-onnx 1.12 knows no schema after opset 17). The pattern language
checks attribute names against it and compares an absent attribute as its
default.

usage: /usr/bin/python3 tools/gen-op-attrs.py > core/ops/attrs.def
"""
import glob
import os
import re
import sys

import onnx
import onnx.defs

from attrkind import KIND

OPSET = 17
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


F32_1E_5 = repr(float(__import__("numpy").float32(1e-5)))

# (op type, attribute, kind, default as pattern-literal text or None) for
# attributes that opsets 18 to 28 added to known ops or that new ops have
LATER = [
    ("AffineGrid", "align_corners", "ATTR_INT", "0"),                       # 20
    ("Attention", "is_causal", "ATTR_INT", "0"),                            # 23
    ("Attention", "kv_num_heads", "ATTR_INT", None),
    ("Attention", "left_window_size", "ATTR_INT", "-1"),                    # 25
    ("Attention", "q_num_heads", "ATTR_INT", None),
    ("Attention", "qk_matmul_output_mode", "ATTR_INT", "0"),
    ("Attention", "right_window_size", "ATTR_INT", "-1"),                   # 25
    ("Attention", "scale", "ATTR_FLOAT", None),
    ("Attention", "softcap", "ATTR_FLOAT", "0.0"),
    ("Attention", "softmax_precision", "ATTR_INT", None),
    ("AveragePool", "dilations", "ATTR_INTS", None),                        # 19
    ("BitCast", "to", "ATTR_INT", None),                                    # 26
    ("Cast", "round_mode", "ATTR_STRING", '"up"'),                          # 24
    ("Cast", "saturate", "ATTR_INT", "1"),                                  # 19
    ("CastLike", "round_mode", "ATTR_STRING", '"up"'),                      # 24
    ("CastLike", "saturate", "ATTR_INT", "1"),                              # 19
    ("CausalConvWithState", "activation", "ATTR_STRING", '"none"'),         # 27
    ("CenterCropPad", "axes", "ATTR_INTS", None),                           # 18
    ("Col2Im", "dilations", "ATTR_INTS", None),                             # 18
    ("Col2Im", "pads", "ATTR_INTS", None),
    ("Col2Im", "strides", "ATTR_INTS", None),
    ("CumProd", "exclusive", "ATTR_INT", "0"),                              # 26
    ("CumProd", "reverse", "ATTR_INT", "0"),
    ("DequantizeLinear", "block_size", "ATTR_INT", "0"),                    # 21
    ("DequantizeLinear", "output_dtype", "ATTR_INT", "0"),                  # 23
    ("Gelu", "approximate", "ATTR_STRING", '"none"'),                       # 20
    ("GroupNormalization", "epsilon", "ATTR_FLOAT", F32_1E_5),              # 18
    ("GroupNormalization", "num_groups", "ATTR_INT", None),
    ("GroupNormalization", "stash_type", "ATTR_INT", "1"),                  # 21
    ("ImageDecoder", "pixel_format", "ATTR_STRING", '"RGB"'),               # 20
    ("LinearAttention", "chunk_size", "ATTR_INT", "64"),                    # 27
    ("LinearAttention", "kv_num_heads", "ATTR_INT", None),
    ("LinearAttention", "q_num_heads", "ATTR_INT", None),
    ("LinearAttention", "scale", "ATTR_FLOAT", "0.0"),
    ("LinearAttention", "update_rule", "ATTR_STRING", '"gated_delta"'),
    ("LpPool", "ceil_mode", "ATTR_INT", "0"),                               # 18
    ("QuantizeLinear", "block_size", "ATTR_INT", "0"),                      # 21
    ("QuantizeLinear", "output_dtype", "ATTR_INT", "0"),
    ("QuantizeLinear", "precision", "ATTR_INT", "0"),                       # 23
    ("QuantizeLinear", "saturate", "ATTR_INT", "1"),                        # 19
    ("Range", "stash_type", "ATTR_INT", "1"),                               # 27
    ("RegexFullMatch", "pattern", "ATTR_STRING", None),                     # 20
    ("RMSNormalization", "axis", "ATTR_INT", "-1"),                         # 23
    ("RMSNormalization", "epsilon", "ATTR_FLOAT", F32_1E_5),
    ("RMSNormalization", "stash_type", "ATTR_INT", "1"),
    ("StringSplit", "delimiter", "ATTR_STRING", None),                      # 20
    ("StringSplit", "maxsplit", "ATTR_INT", None),
    ("Resize", "antialias", "ATTR_INT", "0"),                               # 18
    ("Resize", "axes", "ATTR_INTS", None),
    ("Resize", "keep_aspect_ratio_policy", "ATTR_STRING", '"stretch"'),
    ("RotaryEmbedding", "interleaved", "ATTR_INT", "0"),                    # 23
    ("RotaryEmbedding", "num_heads", "ATTR_INT", None),
    ("RotaryEmbedding", "rotary_embedding_dim", "ATTR_INT", "0"),
    ("SpaceToDepth", "mode", "ATTR_STRING", '"DCR"'),                       # 28
    ("Split", "num_outputs", "ATTR_INT", None),                             # 18
    ("SwiGLU", "alpha", "ATTR_FLOAT", "1.0"),                               # 28
    ("Swish", "alpha", "ATTR_FLOAT", "1.0"),                                # 24
    ("TensorScatter", "axis", "ATTR_INT", "-2"),                            # 24
    ("TensorScatter", "mode", "ATTR_STRING", '"linear"'),
] + [(op, "noop_with_empty_axes", "ATTR_INT", "0")                          # 18
     for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare")]


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default(a):
    """The default as pattern-literal text, or NULL."""
    d = a.default_value
    if not d.name:
        return "NULL"
    if d.type == onnx.AttributeProto.INT:
        return cstr(str(d.i))
    if d.type == onnx.AttributeProto.FLOAT:
        return cstr(repr(d.f))
    if d.type == onnx.AttributeProto.STRING:
        return cstr('"%s"' % d.s.decode())
    if d.type == onnx.AttributeProto.INTS:
        return cstr("[" + ", ".join(str(i) for i in d.ints) + "]")
    if d.type == onnx.AttributeProto.FLOATS:
        return cstr("[" + ", ".join(repr(f) for f in d.floats) + "]")
    return "NULL"


def main():
    ops = []
    for path in sorted(glob.glob(os.path.join(ROOT, "core/ops/*.def"))):
        for m in re.finditer(r'^OP\((\w+),\s*"(\w+)"', open(path).read(), re.M):
            ops.append((m.group(1), m.group(2)))
    out = sys.stdout
    out.write("/*\n * attrs.def - generated by tools/gen-op-attrs.py from the ONNX schemas\n"
              " * (opset %d, onnx %s) and its table of attributes of opsets 18 to 23;\n"
              " * do not edit.\n"
              " * ATTR(OP id, \"name\", kind, default as pattern-literal text or NULL)\n */\n"
              % (OPSET, onnx.__version__))
    ids = dict((name, op_id) for op_id, name in ops)
    rows = {}
    for op_id, name in ops:
        try:
            s = onnx.defs.get_schema(name, OPSET)
        except onnx.defs.SchemaError:
            continue
        for an, a in s.attributes.items():
            rows[(name, an)] = (op_id, KIND[a.type], default(a))
    for name, an, kind, dflt in LATER:
        if name in ids:
            rows[(name, an)] = (ids[name], kind, cstr(dflt) if dflt is not None else "NULL")
    for (name, an) in sorted(rows):
        op_id, kind, dflt = rows[(name, an)]
        out.write("ATTR(%s, %s, %s, %s)\n" % (op_id, cstr(an), kind, dflt))


main()
