"""nodetest.py - writes node tests in the ONNX backend-test layout that
`collagec conformance` reads, for the generators gen_opset_tests.py,
gen_rnn_tests.py and gen_quant_tests.py (their suites share
tests/nodetests.sh):

  DIR/model.onnx and DIR/test_data_set_0/{input,output}_K.pb   a good case
  DIR/model.onnx and DIR/expect                                 a bad one:
      a model collagec must refuse; expect holds a line of the message
"""
import os


def save(path, proto):
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def write_case(d, model, inputs, outputs):
    """inputs and outputs: lists of TensorProtos, in the model's order."""
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    save(os.path.join(d, "model.onnx"), model)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, t in enumerate(tensors):
            save(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), t)


def write_bad(d, model, expect):
    os.makedirs(d, exist_ok=True)
    save(os.path.join(d, "model.onnx"), model)
    with open(os.path.join(d, "expect"), "w") as f:
        f.write(expect + "\n")


def write(outdir, good, bad):
    """good: (name, model, {input: array}, {output: array}); bad: (name, model, expect)."""
    import numpy as np
    from onnx import numpy_helper

    def tensors(arrays):
        return [numpy_helper.from_array(np.asarray(v), k) for k, v in arrays.items()]

    for name, m, inputs, outputs in good:
        write_case(os.path.join(outdir, "good", name), m, tensors(inputs), tensors(outputs))
    for name, m, expect in bad:
        write_bad(os.path.join(outdir, "bad", name), m, expect)
