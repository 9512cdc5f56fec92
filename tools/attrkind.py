"""attrkind.py - the ONNX attribute types collagec reads, as the ATTR_*
kinds of core/ir/ir.h; shared by gen-op-attrs.py and gen-op-versions.py."""
import onnx

KIND = {
    onnx.AttributeProto.INT: "ATTR_INT", onnx.AttributeProto.FLOAT: "ATTR_FLOAT",
    onnx.AttributeProto.STRING: "ATTR_STRING", onnx.AttributeProto.INTS: "ATTR_INTS",
    onnx.AttributeProto.FLOATS: "ATTR_FLOATS", onnx.AttributeProto.STRINGS: "ATTR_STRINGS",
    onnx.AttributeProto.TENSOR: "ATTR_TENSOR", onnx.AttributeProto.GRAPH: "ATTR_GRAPH",
    onnx.AttributeProto.GRAPHS: "ATTR_GRAPH", onnx.AttributeProto.TYPE_PROTO: "ATTR_TYPE",
}
