#!/usr/bin/python3
"""gen_imagedecoder_tests.py - writes ImageDecoder's own tests (opset 20;
tests/imagedecoder.sh runs them) into OUTDIR, in testdata/nodetest.py's
layout plus one more kind:

  OUTDIR/good/NAME     an image decoded (and ops after it): the expected
                       output is onnx.reference's, whose ImageDecoder is
                       Pillow's Image.open
  OUTDIR/bad/NAME      a model collagec must refuse, with its message
  OUTDIR/runfail/NAME  model.onnx, input_K.pb (the bytes), inputs (the
                       run's NAME=input_K.pb) and expect: the one line
                       the run must fail with

Each format at an odd size (7x5), the forms that are not RGB already
(gray, palette, RGBA, 16-bit), every pixel format, and the decoder
followed by Cast, Transpose, Conv, Slice and ReduceMean, so that its run-time H and W
flow on. onnx.reference returns np.array(img) for RGB and BGR without
converting: for a gray, palette or RGBA image that is not the [H, W, 3]
the operator's spec says, so those cases' expected outputs are
Image.convert("RGB")'s, the conversion the spec implies (and Pillow's
convert("L") gives Grayscale's everywhere).

Needs onnx 1.23.2, Pillow and numpy (pip, in a venv), deterministic
output (fixed seeds).

usage: gen_imagedecoder_tests.py OUTDIR
"""
import io
import os
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodetest  # noqa: E402

OPSET = 20
rng = np.random.default_rng(20)


def model(nodes, outputs, inits=(), inputs=("data",)):
    g = helper.make_graph(
        nodes, "imagedecoder",
        [helper.make_tensor_value_info(n, TensorProto.UINT8, [None]) for n in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="collagec-testdata", ir_version=9)


def decoder(fmt="RGB", out="image"):
    return helper.make_node("ImageDecoder", ["data"], [out], name="dec", pixel_format=fmt)


def encode(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, format=fmt, **kw)
    return b.getvalue()


def pixels(h, w, mode="RGB"):
    """A random image with smooth parts (for the lossy codecs) and noise."""
    yy, xx = np.mgrid[0:h, 0:w]
    base = (xx * 255 // max(w - 1, 1) + yy * 40) % 256
    a = np.stack([base, 255 - base, (base * 3) % 256], axis=2)
    a = (a + rng.integers(0, 30, size=a.shape)) % 256
    img = Image.fromarray(a.astype(np.uint8), "RGB")
    return img if mode == "RGB" else img.convert(mode)


def expect_rgb(data, fmt):
    """What the spec's [H, W, C] holds: the reference's, or convert("RGB")'s."""
    img = Image.open(io.BytesIO(data))
    if fmt == "Grayscale":
        return np.expand_dims(np.array(img.convert("L")), 2)
    a = np.array(img.convert("RGB") if img.mode != "RGB" else img)
    return a[:, :, ::-1] if fmt == "BGR" else a


def reference(m, data):
    """onnx.reference's outputs of model m fed the bytes."""
    return ReferenceEvaluator(m).run(None, {"data": np.frombuffer(data, np.uint8)})


def bmp16(img):
    """A 16-bit BMP (5-5-5, bottom-up), which Pillow reads but cannot write."""
    a = np.array(img).astype(np.uint32)
    h, w = a.shape[:2]
    stride = (w * 2 + 3) & ~3
    rows = b""
    for y in range(h - 1, -1, -1):
        r = b"".join(struct.pack("<H", (p[0] >> 3) << 10 | (p[1] >> 3) << 5 | p[2] >> 3)
                     for p in a[y])
        rows += r + b"\0" * (stride - len(r))
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 16, 0, len(rows), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + len(rows), 0, 0, 54) + info + rows


def ppm_plain(img, magic, maxval):
    """P1, P2 or P3 text, with a comment and samples scaled to maxval."""
    a = np.array(img)
    h, w = a.shape[:2]
    out = ["%s\n# collagec\n%d %d" % (magic, w, h)]
    if magic != "P1":
        out.append("%d" % maxval)
        vals = (a.astype(np.int64) * maxval + 127) // 255
    else:
        vals = (a < 128).astype(np.int64)
    out.append(" ".join(str(v) for v in vals.flatten()))
    return ("\n".join(out) + "\n").encode()


def ppm16(img, maxval):
    """P6 with two bytes a sample (maxval above 255)."""
    a = (np.array(img).astype(np.int64) * maxval + 127) // 255
    h, w = a.shape[:2]
    return b"P6\n%d %d\n%d\n" % (w, h, maxval) + a.astype(">u2").tobytes()


def png16(img):
    """A 16-bit RGB PNG (Pillow writes 16-bit RGB only through a raw encoder)."""
    import zlib
    a = np.array(img).astype(np.uint16) * 257 + rng.integers(0, 200, size=(5, 7, 3)).astype(
        np.uint16)
    h, w = a.shape[:2]
    raw = b"".join(b"\0" + a[y].astype(">u2").tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def images():
    """(name, bytes): every format at 7x5, then the other forms."""
    rgb = pixels(5, 7)
    out = [
        ("bmp_7x5", encode(rgb, "BMP")),
        ("jpeg_7x5", encode(rgb, "JPEG", quality=90)),
        ("jpeg_7x5_420", encode(rgb, "JPEG", quality=75, subsampling=2)),
        ("jpeg_13x11_progressive", encode(pixels(11, 13), "JPEG", progressive=True)),
        ("jpeg_gray", encode(pixels(5, 7, "L"), "JPEG")),
        ("jpeg2k_7x5", encode(rgb, "JPEG2000")),
        ("jpeg2k_codestream", encode(rgb, "JPEG2000", no_jp2=True)),
        ("png_7x5", encode(rgb, "PNG")),
        ("png_gray", encode(pixels(5, 7, "L"), "PNG")),
        ("png_gray_1bit", encode(pixels(5, 7, "1"), "PNG")),
        ("png_palette", encode(pixels(5, 7, "P"), "PNG")),
        ("png_rgba", encode(pixels(5, 7, "RGBA"), "PNG")),
        ("png_16bit", png16(rgb)),
        ("pnm_p6_7x5", encode(rgb, "PPM")),
        ("pnm_p5_gray", encode(pixels(5, 7, "L"), "PPM")),
        ("pnm_p4_bits", encode(pixels(5, 7, "1"), "PPM")),
        ("pnm_p1_plain", ppm_plain(pixels(5, 7, "L"), "P1", 1)),
        ("pnm_p2_plain", ppm_plain(pixels(5, 7, "L"), "P2", 100)),
        ("pnm_p3_plain", ppm_plain(rgb, "P3", 255)),
        ("pnm_p6_maxval1000", ppm16(rgb, 1000)),
        ("pnm_p6_maxval100", b"P6 7 5 100\n" + ((np.array(rgb).astype(np.int64) * 100 + 127)
                                               // 255).astype(np.uint8).tobytes()),
        ("tiff_7x5", encode(rgb, "TIFF")),
        ("tiff_lzw", encode(rgb, "TIFF", compression="tiff_lzw")),
        ("tiff_deflate", encode(pixels(5, 7, "L"), "TIFF", compression="tiff_adobe_deflate")),
        ("webp_7x5_lossy", encode(rgb, "WEBP", quality=80)),
        ("webp_7x5_lossless", encode(rgb, "WEBP", lossless=True)),
        ("webp_rgba", encode(pixels(5, 7, "RGBA"), "WEBP", lossless=True)),
        ("bmp_palette", encode(pixels(5, 7, "P"), "BMP")),
        ("bmp_1bit", encode(pixels(5, 9, "1"), "BMP")),
        ("bmp_gray", encode(pixels(5, 7, "L"), "BMP")),
        ("bmp_16bit", bmp16(rgb)),
    ]
    return out


def good_cases():
    out = []
    for name, data in images():
        m = model([decoder()], [("image", TensorProto.UINT8)])
        out.append((name, m, {"data": np.frombuffer(data, np.uint8)},
                    {"image": expect_rgb(data, "RGB")}))
    # every pixel format of one lossless and one lossy image
    for name, data in (("png", encode(pixels(5, 7), "PNG")),
                       ("jpeg", encode(pixels(5, 7), "JPEG"))):
        for fmt in ("BGR", "Grayscale"):
            m = model([decoder(fmt)], [("image", TensorProto.UINT8)])
            want = reference(m, data)[0]
            assert (want == expect_rgb(data, fmt)).all()
            out.append(("%s_%s" % (name, fmt.lower()), m,
                        {"data": np.frombuffer(data, np.uint8)}, {"image": want}))
    # the gray image into Grayscale: the reference converts it itself
    data = encode(pixels(5, 7, "L"), "PNG")
    m = model([decoder("Grayscale")], [("image", TensorProto.UINT8)])
    out.append(("png_gray_grayscale", m, {"data": np.frombuffer(data, np.uint8)},
                {"image": reference(m, data)[0]}))
    out += chain_cases()
    return out


def chain_cases():
    """ImageDecoder, then ops that take its run-time H and W on."""
    out = []
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.05
    nodes = [decoder(),
             helper.make_node("Cast", ["image"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Transpose", ["f"], ["chw"], perm=[2, 0, 1]),
             helper.make_node("Unsqueeze", ["chw", "axes"], ["nchw"]),
             helper.make_node("Conv", ["nchw", "W"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y"], ["out"])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(w, "W")]
    m = model(nodes, [("out", TensorProto.FLOAT)], inits)
    for name, data in (("chain_conv_jpeg", encode(pixels(9, 13), "JPEG")),
                       ("chain_conv_png", encode(pixels(6, 11), "PNG"))):
        out.append((name, m, {"data": np.frombuffer(data, np.uint8)},
                    {"out": reference(m, data)[0]}))
    nodes = [decoder("Grayscale"),
             helper.make_node("Cast", ["image"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Slice", ["f", "starts", "ends", "axes"], ["crop"]),
             helper.make_node("Mul", ["crop", "half"], ["out"]),
             helper.make_node("ReduceMean", ["f"], ["mean"], keepdims=0)]
    inits = [numpy_helper.from_array(np.array([1, 2], np.int64), "starts"),
             numpy_helper.from_array(np.array([5, 9], np.int64), "ends"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "axes"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    m = model(nodes, [("out", TensorProto.FLOAT), ("mean", TensorProto.FLOAT)], inits)
    data = encode(pixels(11, 14), "WEBP", lossless=True)
    ref = reference(m, data)
    out.append(("chain_slice_webp", m, {"data": np.frombuffer(data, np.uint8)},
                {"out": ref[0], "mean": ref[1]}))
    out += resize_cases()
    return out


def resize_cases():
    """A classifier's preprocessing: the decoded image resized to a constant
    size (the scale the run's) and max-pooled over its run-time H and W.
    Its own generator, so that the cases after it draw what they drew."""
    global rng
    saved, rng = rng, np.random.default_rng(21)
    nodes = [decoder(),
             helper.make_node("Transpose", ["image"], ["chw"], perm=[2, 0, 1]),
             helper.make_node("Unsqueeze", ["chw", "axes"], ["nchw"]),
             helper.make_node("Cast", ["nchw"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Resize", ["f", "", "", "sizes"], ["out"], mode="linear"),
             helper.make_node("MaxPool", ["f"], ["pool"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[0, 0, 1, 1])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([1, 3, 8, 8], np.int64), "sizes")]
    m = model(nodes, [("out", TensorProto.FLOAT), ("pool", TensorProto.FLOAT)], inits)
    out = []
    for name, data in (("chain_resize_png", encode(pixels(11, 6), "PNG")),
                       ("chain_resize_jpeg", encode(pixels(16, 23), "JPEG"))):
        ref = reference(m, data)
        out.append((name, m, {"data": np.frombuffer(data, np.uint8)},
                    {"out": ref[0], "pool": ref[1]}))
    rng = saved
    return out


def bad_cases():
    out = []
    m = model([decoder("RGBA")], [("image", TensorProto.UINT8)])
    out.append(("pixel_format", m, "attr 'pixel_format' is 'RGBA', expected RGB, BGR or "
                "Grayscale"))
    m = model([decoder()], [("image", TensorProto.UINT8)])
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
    out.append(("input_type", m, "input 'encoded_stream' must be a 1-D uint8 tensor"))
    return out


def runfail_cases():
    """(name, bytes, the run's error line after 'run: kernel failure: ')."""
    png = encode(pixels(5, 7), "PNG")
    jpeg = bytearray(encode(pixels(16, 16), "JPEG"))
    dht = jpeg.index(b"\xff\xc4")
    corrupt = jpeg[:dht + 5] + b"\xff" * 16 + jpeg[dht + 21:]
    node = "node 'dec': "
    bmp = encode(pixels(5, 7), "BMP")
    rle = bytearray(bmp)
    rle[30:34] = struct.pack("<I", 1)
    return [
        ("jpeg_corrupt", bytes(corrupt), node + "cannot decode the JPEG image: Bogus Huffman "
         "table definition"),
        ("jpeg_truncated", bytes(jpeg[:len(jpeg) // 2]), node + "cannot decode the JPEG image: "
         "Premature end of JPEG file"),
        ("png_truncated", png[:len(png) - 30], node + "cannot decode the PNG image: truncated "
         "data"),
        ("png_header", png[:20], node + "the PNG image's header is truncated or corrupt"),
        ("unknown_format", encode(pixels(5, 7), "GIF"), node + "the image is in none of the "
         "formats ImageDecoder reads (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF, WebP)"),
        ("empty", b"", node + "the image is in none of the formats ImageDecoder reads (BMP, "
         "JPEG, JPEG 2000, PNG, PNM, TIFF, WebP)"),
        ("bmp_truncated", bmp[:len(bmp) - 10], node + "the BMP image is truncated or corrupt"),
        ("bmp_rle", bytes(rle), node + "the BMP image is RLE-compressed, which ImageDecoder "
         "does not decode"),
        ("pnm_truncated", encode(pixels(5, 7), "PPM")[:-5], node + "the PNM image is "
         "truncated"),
        ("webp_truncated", encode(pixels(5, 7), "WEBP")[:40], node + "cannot decode the WebP "
         "image: its data is truncated"),
        ("tiff_truncated", encode(pixels(5, 7), "TIFF")[:-20], node + "cannot decode the TIFF "
         "image: Read error at scanline 4294967295; got 85 bytes, expected 105"),
        ("jpeg2k_truncated", encode(pixels(5, 7), "JPEG2000")[:200], node + "cannot decode the "
         "JPEG 2000 image: Stream too short"),
        ("png_too_large", png[:16] + struct.pack(">II", 20000, 10000) + png[24:], node + "the "
         "PNG image's 20000x10000 pixels are more than the 178956970 Pillow opens"),
        ("pnm_magic", b"P61 5 7 255\n" + bytes(105), node + "the PNM image's header is "
         "truncated or corrupt"),
    ]


def write_runfail(d, name, data, expect, m=None):
    """data: the bytes, or {input name: bytes} for a model m of several inputs."""
    p = os.path.join(d, name)
    os.makedirs(p, exist_ok=True)
    m = m or model([decoder()], [("image", TensorProto.UINT8)])
    nodetest.save(os.path.join(p, "model.onnx"), m)
    data = data if isinstance(data, dict) else {"data": data}
    with open(os.path.join(p, "inputs"), "w") as f:
        for k, (n, b) in enumerate(data.items()):
            nodetest.save(os.path.join(p, "input_%d.pb" % k),
                          numpy_helper.from_array(np.frombuffer(b, np.uint8), n))
            f.write("%s=input_%d.pb\n" % (n, k))
    with open(os.path.join(p, "expect"), "w") as f:
        f.write(expect + "\n")


def two_decoders():
    """Two ImageDecoders, the second's bytes corrupt: its name is the message's."""
    nodes = [helper.make_node("ImageDecoder", [n], [n + "_image"], name="dec_" + n)
             for n in ("a", "b")]
    m = model(nodes, [("a_image", TensorProto.UINT8), ("b_image", TensorProto.UINT8)],
              inputs=("a", "b"))
    png = encode(pixels(5, 7), "PNG")
    return ({"a": png, "b": png[:len(png) - 30]}, "node 'dec_b': cannot decode the PNG image: "
            "truncated data", m)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_imagedecoder_tests.py OUTDIR")
    outdir = sys.argv[1]
    for sub in ("good", "bad", "runfail"):
        shutil.rmtree(os.path.join(outdir, sub), ignore_errors=True)
    nodetest.write(outdir, good_cases(), bad_cases())
    for name, data, expect in runfail_cases():
        write_runfail(os.path.join(outdir, "runfail"), name, data, expect)
    write_runfail(os.path.join(outdir, "runfail"), "two_decoders", *two_decoders())


if __name__ == "__main__":
    main()
