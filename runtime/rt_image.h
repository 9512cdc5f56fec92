/*
 * rt_image.h - ImageDecoder's kernel, rt_image_decode: the encoded image's
 * bytes decoded into uint8 [H, W, C] pixels as the ONNX reference decodes
 * them (Pillow's Image.open, then RGB, its reverse BGR, or Grayscale as
 * Image.convert("L") computes it). The c target pastes it into a model's
 * C only when the model has an ImageDecoder, and links the libraries it
 * calls then only: libjpeg-turbo (JPEG, the islow IDCT Pillow uses),
 * libpng, libtiff, libwebp and OpenJPEG (JPEG 2000). BMP and PNM have
 * small decoders here, of the forms Pillow reads without compression:
 * Debian's libnetpbm reports errors by exiting the process or through one
 * global jmp_buf (no two models could decode at once), and stb_image (the
 * other packaged BMP reader) expands 5- and 6-bit BMP channels otherwise
 * than Pillow and keeps its error in a global.
 *
 * The run-time shape function (runtime/rt_imgprobe.c) has read H and W
 * from the header; each decoder checks the image it decodes has them.
 * Images that are not RGB become RGB as Image.convert("RGB") makes them:
 * gray replicated, a palette looked up, alpha dropped; 16-bit samples keep
 * their high byte. Every failure (truncated or corrupt bytes, a form no
 * decoder here reads) ends the run through rt_kernel_fail with one line;
 * the libraries' own messages never reach stderr, nothing leaks.
 *
 *	rt_image_decode(bytes, n, out, h, w, RT_IMAGE_RGB, threads);
 */
#ifndef COLLAGEC_RT_IMAGE_H
#define COLLAGEC_RT_IMAGE_H

#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>
#include <openjpeg-2.5/openjpeg.h>

/* ImageDecoder's pixel_format (core/ops/ops_image.c's imagedecoder_format). */
enum rt_image_pixels { RT_IMAGE_RGB, RT_IMAGE_BGR, RT_IMAGE_GRAY };

static uint32_t rt_img_le16(const unsigned char *p) { return (uint32_t)p[1] << 8 | p[0]; }
static uint32_t rt_img_le32(const unsigned char *p)
{
	return rt_img_le16(p + 2) << 16 | rt_img_le16(p);
}

/* Whether the decoder's dims are the header's; fails the run when not. */
static int rt_img_dims(const char *fmt, int64_t h, int64_t w, int64_t eh, int64_t ew)
{
	if (h == eh && w == ew)
		return 0;
	rt_kernel_fail("the %s image decodes to %lldx%lld pixels, not the %lldx%lld of its header",
		       fmt, (long long)w, (long long)h, (long long)ew, (long long)eh);
	return -1;
}

/* ---- JPEG: libjpeg-turbo ---- */

struct rt_jpeg_err {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void rt_jpeg_exit(j_common_ptr c)
{
	struct rt_jpeg_err *e = (struct rt_jpeg_err *)(void *)c->err;

	c->err->format_message(c, e->msg);
	longjmp(e->jb, 1);
}

/* Data running out is an error, as in Pillow; other warnings pass, as there. */
static void rt_jpeg_emit(j_common_ptr c, int level)
{
	if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF)
		rt_jpeg_exit(c);
}

static int rt_img_jpeg(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	struct jpeg_decompress_struct c;
	struct rt_jpeg_err e;

	memset(&c, 0, sizeof(c));
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = rt_jpeg_exit;
	e.pub.emit_message = rt_jpeg_emit;
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&c);
		rt_kernel_fail("cannot decode the JPEG image: %s", e.msg);
		return -1;
	}
	jpeg_create_decompress(&c);
	jpeg_mem_src(&c, p, (unsigned long)n);
	jpeg_read_header(&c, TRUE);
	if (c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK) {
		jpeg_destroy_decompress(&c);
		rt_kernel_fail("the JPEG image is CMYK, which ImageDecoder does not convert");
		return -1;
	}
	c.out_color_space = JCS_RGB;
	c.dct_method = JDCT_ISLOW;
	jpeg_start_decompress(&c);
	if (rt_img_dims("JPEG", c.output_height, c.output_width, h, w) < 0) {
		jpeg_destroy_decompress(&c);
		return -1;
	}
	while (c.output_scanline < c.output_height) {
		JSAMPROW row = rgb + (size_t)c.output_scanline * (size_t)w * 3;

		jpeg_read_scanlines(&c, &row, 1);
	}
	jpeg_finish_decompress(&c);
	jpeg_destroy_decompress(&c);
	return 0;
}

/* ---- PNG: libpng ---- */

struct rt_png_src {
	const unsigned char *p;
	size_t n, off;
	char msg[200];
};

static void rt_png_read(png_structp ps, png_bytep out, size_t len)
{
	struct rt_png_src *s = png_get_io_ptr(ps);

	if (len > s->n - s->off)
		png_error(ps, "truncated data");
	memcpy(out, s->p + s->off, len);
	s->off += len;
}

static void rt_png_error(png_structp ps, png_const_charp msg)
{
	struct rt_png_src *s = png_get_error_ptr(ps);

	snprintf(s->msg, sizeof(s->msg), "%s", msg);
	png_longjmp(ps, 1);
}

static void rt_png_warning(png_structp ps, png_const_charp msg)
{
	(void)ps;
	(void)msg;
}

static int rt_img_png(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	struct rt_png_src src = { p, (size_t)n, 0, "" };
	png_structp ps;
	png_infop pi = NULL;
	unsigned char **volatile rows = NULL;
	int ct, depth;

	ps = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, rt_png_error, rt_png_warning);
	if (!ps || !(pi = png_create_info_struct(ps))) {
		png_destroy_read_struct(&ps, NULL, NULL);
		rt_kernel_fail("out of memory decoding a PNG image");
		return -1;
	}
	if (setjmp(png_jmpbuf(ps))) {
		free(rows);
		png_destroy_read_struct(&ps, &pi, NULL);
		rt_kernel_fail("cannot decode the PNG image: %s", src.msg);
		return -1;
	}
	png_set_read_fn(ps, &src, rt_png_read);
	png_read_info(ps, pi);
	if (rt_img_dims("PNG", png_get_image_height(ps, pi), png_get_image_width(ps, pi),
			h, w) < 0) {
		png_destroy_read_struct(&ps, &pi, NULL);
		return -1;
	}
	ct = png_get_color_type(ps, pi);
	depth = png_get_bit_depth(ps, pi);
	if (ct == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(ps);
	if (ct == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(ps);
	if (depth == 16)
		png_set_strip_16(ps);
	if (ct & PNG_COLOR_MASK_ALPHA)
		png_set_strip_alpha(ps);
	if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(ps);
	png_set_interlace_handling(ps);
	png_read_update_info(ps, pi);
	if (png_get_rowbytes(ps, pi) != (size_t)w * 3)
		png_error(ps, "unexpected row size");
	rows = malloc((size_t)h * sizeof(*rows));
	if (!rows)
		png_error(ps, "out of memory");
	for (int64_t y = 0; y < h; y++)
		rows[y] = rgb + (size_t)y * (size_t)w * 3;
	png_read_image(ps, rows);
	png_read_end(ps, NULL);
	free(rows);
	png_destroy_read_struct(&ps, &pi, NULL);
	return 0;
}

/* ---- TIFF: libtiff, through its RGBA image reader ---- */

struct rt_tiff_src {
	const unsigned char *p;
	toff_t n, off;
	char msg[200];
};

static tmsize_t rt_tiff_read(thandle_t h, void *buf, tmsize_t len)
{
	struct rt_tiff_src *s = h;

	if (len < 0)
		return -1;
	if (s->off >= s->n)
		return 0;
	if ((toff_t)len > s->n - s->off)
		len = (tmsize_t)(s->n - s->off);
	memcpy(buf, s->p + s->off, (size_t)len);
	s->off += (toff_t)len;
	return len;
}

static tmsize_t rt_tiff_write(thandle_t h, void *buf, tmsize_t len)
{
	(void)h;
	(void)buf;
	(void)len;
	return -1;
}

static toff_t rt_tiff_seek(thandle_t h, toff_t off, int whence)
{
	struct rt_tiff_src *s = h;
	toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->off : s->n;

	if (off > (toff_t)INT64_MAX - base || base + off > s->n)
		return (toff_t)-1;
	s->off = base + off;
	return s->off;
}

static int rt_tiff_close(thandle_t h)
{
	(void)h;
	return 0;
}

static toff_t rt_tiff_size(thandle_t h)
{
	return ((struct rt_tiff_src *)h)->n;
}

static int rt_tiff_map(thandle_t h, void **base, toff_t *size)
{
	(void)h;
	(void)base;
	(void)size;
	return 0;
}

static void rt_tiff_unmap(thandle_t h, void *base, toff_t size)
{
	(void)h;
	(void)base;
	(void)size;
}

/* The first error's message, kept; warnings dropped (both kept off stderr). */
static int rt_tiff_error(TIFF *t, void *ud, const char *module, const char *fmt, va_list ap)
{
	struct rt_tiff_src *s = ud;

	(void)t;
	(void)module;
	if (!s->msg[0])
		vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
	return 1;
}

static int rt_tiff_warning(TIFF *t, void *ud, const char *module, const char *fmt, va_list ap)
{
	(void)t;
	(void)ud;
	(void)module;
	(void)fmt;
	(void)ap;
	return 1;
}

static int rt_img_tiff(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	struct rt_tiff_src src = { p, (toff_t)n, 0, "" };
	TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
	uint32_t tw = 0, th = 0, *raster;
	TIFF *t;
	int ok;

	if (!o) {
		rt_kernel_fail("out of memory decoding a TIFF image");
		return -1;
	}
	TIFFOpenOptionsSetErrorHandlerExtR(o, rt_tiff_error, &src);
	TIFFOpenOptionsSetWarningHandlerExtR(o, rt_tiff_warning, &src);
	t = TIFFClientOpenExt("image", "rm", &src, rt_tiff_read, rt_tiff_write, rt_tiff_seek,
			      rt_tiff_close, rt_tiff_size, rt_tiff_map, rt_tiff_unmap, o);
	TIFFOpenOptionsFree(o);
	if (!t) {
		rt_kernel_fail("cannot decode the TIFF image: %s", src.msg);
		return -1;
	}
	TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &tw);
	TIFFGetField(t, TIFFTAG_IMAGELENGTH, &th);
	if (rt_img_dims("TIFF", th, tw, h, w) < 0) {
		TIFFClose(t);
		return -1;
	}
	raster = malloc((size_t)h * (size_t)w * sizeof(*raster));
	if (!raster) {
		TIFFClose(t);
		rt_kernel_fail("out of memory decoding a TIFF image");
		return -1;
	}
	ok = TIFFReadRGBAImageOriented(t, tw, th, raster, ORIENTATION_TOPLEFT, 1);
	TIFFClose(t);
	if (!ok) {
		free(raster);
		rt_kernel_fail("cannot decode the TIFF image: %s", src.msg[0] ? src.msg
			       : "libtiff cannot read it");
		return -1;
	}
	for (size_t i = 0; i < (size_t)h * (size_t)w; i++) {
		rgb[3 * i] = (unsigned char)TIFFGetR(raster[i]);
		rgb[3 * i + 1] = (unsigned char)TIFFGetG(raster[i]);
		rgb[3 * i + 2] = (unsigned char)TIFFGetB(raster[i]);
	}
	free(raster);
	return 0;
}

/* ---- WebP: libwebp ---- */

static int rt_img_webp(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	WebPDecoderConfig cfg;
	VP8StatusCode s;

	if (!WebPInitDecoderConfig(&cfg) || WebPGetFeatures(p, (size_t)n, &cfg.input) !=
	    VP8_STATUS_OK) {
		rt_kernel_fail("cannot decode the WebP image: libwebp cannot read its header");
		return -1;
	}
	if (cfg.input.has_animation) {
		rt_kernel_fail("the WebP image is animated, which ImageDecoder does not decode");
		return -1;
	}
	if (rt_img_dims("WebP", cfg.input.height, cfg.input.width, h, w) < 0)
		return -1;
	cfg.output.colorspace = MODE_RGB;
	cfg.output.is_external_memory = 1;
	cfg.output.u.RGBA.rgba = rgb;
	cfg.output.u.RGBA.stride = (int)w * 3;
	cfg.output.u.RGBA.size = (size_t)h * (size_t)w * 3;
	s = WebPDecode(p, (size_t)n, &cfg);
	WebPFreeDecBuffer(&cfg.output);
	if (s != VP8_STATUS_OK) {
		rt_kernel_fail("cannot decode the WebP image: %s",
			       s == VP8_STATUS_NOT_ENOUGH_DATA ? "its data is truncated"
			       : s == VP8_STATUS_UNSUPPORTED_FEATURE ? "libwebp does not support it"
			       : "libwebp cannot decode its bitstream");
		return -1;
	}
	return 0;
}

/* ---- JPEG 2000: OpenJPEG ---- */

struct rt_opj_src {
	const unsigned char *p;
	OPJ_SIZE_T n, off;
	char msg[200];
};

static OPJ_SIZE_T rt_opj_read(void *buf, OPJ_SIZE_T len, void *ud)
{
	struct rt_opj_src *s = ud;

	if (s->off >= s->n)
		return (OPJ_SIZE_T)-1;
	if (len > s->n - s->off)
		len = s->n - s->off;
	memcpy(buf, s->p + s->off, len);
	s->off += len;
	return len;
}

static OPJ_OFF_T rt_opj_skip(OPJ_OFF_T k, void *ud)
{
	struct rt_opj_src *s = ud;

	if (k < 0 ? (OPJ_SIZE_T)-k > s->off : (OPJ_SIZE_T)k > s->n - s->off)
		return -1;
	s->off = (OPJ_SIZE_T)((OPJ_OFF_T)s->off + k);
	return k;
}

static OPJ_BOOL rt_opj_seek(OPJ_OFF_T pos, void *ud)
{
	struct rt_opj_src *s = ud;

	if (pos < 0 || (OPJ_SIZE_T)pos > s->n)
		return OPJ_FALSE;
	s->off = (OPJ_SIZE_T)pos;
	return OPJ_TRUE;
}

/* The first error's message without its newline; other messages dropped. */
static void rt_opj_error(const char *msg, void *ud)
{
	struct rt_opj_src *s = ud;
	size_t k;

	if (s->msg[0])
		return;
	snprintf(s->msg, sizeof(s->msg), "%s", msg);
	k = strlen(s->msg);
	while (k && (s->msg[k - 1] == '\n' || s->msg[k - 1] == ' '))
		s->msg[--k] = 0;
}

static void rt_opj_quiet(const char *msg, void *ud)
{
	(void)msg;
	(void)ud;
}

/* Sample v of component c as 8 bits: signed ones offset, wider ones shifted. */
static unsigned char rt_opj_u8(const opj_image_comp_t *c, OPJ_INT32 v)
{
	if (c->sgnd)
		v += 1 << (c->prec - 1);
	v = c->prec > 8 ? v >> (c->prec - 8) : v << (8 - c->prec);
	return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static int rt_img_jpeg2000(const unsigned char *p, int64_t n, int j2k, unsigned char *rgb,
			   int64_t h, int64_t w)
{
	struct rt_opj_src src = { p, (OPJ_SIZE_T)n, 0, "" };
	opj_stream_t *st = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
	opj_codec_t *c = opj_create_decompress(j2k ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
	opj_image_t *img = NULL;
	opj_dparameters_t prm;
	int ok, nc = 0;

	if (!st || !c) {
		if (st)
			opj_stream_destroy(st);
		if (c)
			opj_destroy_codec(c);
		rt_kernel_fail("out of memory decoding a JPEG 2000 image");
		return -1;
	}
	opj_stream_set_user_data(st, &src, NULL);
	opj_stream_set_user_data_length(st, (OPJ_UINT64)n);
	opj_stream_set_read_function(st, rt_opj_read);
	opj_stream_set_skip_function(st, rt_opj_skip);
	opj_stream_set_seek_function(st, rt_opj_seek);
	opj_set_error_handler(c, rt_opj_error, &src);
	opj_set_warning_handler(c, rt_opj_quiet, &src);
	opj_set_info_handler(c, rt_opj_quiet, &src);
	opj_set_default_decoder_parameters(&prm);
	ok = opj_setup_decoder(c, &prm) && opj_read_header(st, c, &img) &&
	     opj_decode(c, st, img) && opj_end_decompress(c, st);
	if (ok && img) {
		nc = img->numcomps >= 3 ? 3 : 1;
		for (int k = 0; k < nc && (int)img->numcomps >= nc; k++)
			if (img->comps[k].w != (OPJ_UINT32)w || img->comps[k].h != (OPJ_UINT32)h ||
			    !img->comps[k].data || img->comps[k].prec < 1 || img->comps[k].prec > 31)
				nc = -1;
		if (nc < 0 || img->numcomps < 1 || img->color_space == OPJ_CLRSPC_SYCC ||
		    img->color_space == OPJ_CLRSPC_CMYK || img->color_space == OPJ_CLRSPC_EYCC)
			nc = -1;
	}
	if (ok && img && nc > 0)
		for (size_t i = 0; i < (size_t)h * (size_t)w; i++)
			for (int k = 0; k < 3; k++)
				rgb[3 * i + k] = rt_opj_u8(&img->comps[nc == 3 ? k : 0],
							   img->comps[nc == 3 ? k : 0].data[i]);
	if (img)
		opj_image_destroy(img);
	opj_destroy_codec(c);
	opj_stream_destroy(st);
	if (!ok) {
		rt_kernel_fail("cannot decode the JPEG 2000 image: %s", src.msg[0] ? src.msg
			       : "OpenJPEG cannot decode it");
		return -1;
	}
	if (nc < 0) {
		rt_kernel_fail("the JPEG 2000 image has subsampled or non-RGB components, which "
			       "ImageDecoder does not convert");
		return -1;
	}
	return 0;
}

/* ---- BMP: uncompressed and bit-field forms, as Pillow's BmpImagePlugin reads them ---- */

/* The right shift of an 8-bit mask 0xff << 8k, or -1 for another mask. */
static int rt_bmp_shift(uint32_t m)
{
	for (int k = 0; k < 32; k += 8)
		if (m == 0xffu << k)
			return k;
	return -1;
}

static int rt_img_bmp(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	uint32_t off = rt_img_le32(p + 10), hs = rt_img_le32(p + 14), comp = 0, colors = 0;
	uint32_t mask[4] = { 0, 0, 0, 0 };
	int bits, topdown = 0, pad = 3, sh[3] = { 16, 8, 0 };
	int64_t pos, stride;
	const unsigned char *pal;

	if (n < 26)
		goto truncated;
	if (hs == 12) {
		bits = (int)rt_img_le16(p + 24);
	} else {
		if (n < 14 + 40)
			goto truncated;
		topdown = p[25] == 0xff;
		bits = (int)rt_img_le16(p + 28);
		comp = rt_img_le32(p + 30);
		colors = rt_img_le32(p + 46);
		pad = 4;
	}
	pos = 14 + (int64_t)hs;
	if (comp == 3) {		/* BI_BITFIELDS: in the header, or after it */
		const unsigned char *q = hs >= 52 ? p + 54 : p + pos;

		if (hs < 52)
			pos += 12;
		if (pos > n || q + 16 > p + n)
			goto truncated;
		for (int k = 0; k < (hs >= 56 ? 4 : 3); k++)
			mask[k] = rt_img_le32(q + 4 * k);
	} else if (comp == 1 || comp == 2) {
		rt_kernel_fail("the BMP image is RLE-compressed, which ImageDecoder does not decode");
		return -1;
	} else if (comp) {
		rt_kernel_fail("the BMP image has compression %u, which ImageDecoder does not "
			       "decode", (unsigned)comp);
		return -1;
	}
	if (!colors && bits <= 16)
		colors = 1u << bits;
	if (off == 14 + hs && bits <= 8)
		off += (uint32_t)pad * colors;
	if (bits == 16 && comp == 3 && !(mask[0] == 0xf800 && mask[1] == 0x7e0 && mask[2] == 0x1f) &&
	    !(mask[0] == 0x7c00 && mask[1] == 0x3e0 && mask[2] == 0x1f))
		goto layout;
	if (bits == 24 && comp == 3 && !(mask[0] == 0xff0000 && mask[1] == 0xff00 &&
					 mask[2] == 0xff))
		goto layout;
	if (bits == 32 && comp == 3 && (mask[0] || mask[1] || mask[2])) {
		for (int k = 0; k < 3; k++)
			if ((sh[k] = rt_bmp_shift(mask[k])) < 0)
				goto layout;
	}
	if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32) {
		rt_kernel_fail("the BMP image has %d bits a pixel, which ImageDecoder does not "
			       "decode", bits);
		return -1;
	}
	if (bits <= 8 && (colors == 0 || colors > 65536 || pos + (int64_t)pad * colors > n))
		goto truncated;
	pal = p + pos;
	stride = ((w * bits + 31) >> 3) & ~(int64_t)3;
	if ((int64_t)off > n || stride * h > n - (int64_t)off)
		goto truncated;
	for (int64_t y = 0; y < h; y++) {
		const unsigned char *row = p + off + (topdown ? y : h - 1 - y) * stride;
		unsigned char *o = rgb + y * w * 3;

		for (int64_t x = 0; x < w; x++, o += 3) {
			uint32_t v;

			switch (bits) {
			case 1: case 4: case 8:
				v = row[x * bits / 8] >> (8 - bits - (int)(x * bits % 8)) &
				    ((1u << bits) - 1);
				if (v < colors) {
					o[0] = pal[pad * v + 2];
					o[1] = pal[pad * v + 1];
					o[2] = pal[pad * v];
				} else {
					o[0] = o[1] = o[2] = 0;
				}
				break;
			case 16:	/* BGR;15 unless the masks say 5-6-5 */
				v = rt_img_le16(row + 2 * x);
				if (comp == 3 && mask[1] == 0x7e0) {
					o[0] = (unsigned char)((v >> 11 & 31) * 255 / 31);
					o[1] = (unsigned char)((v >> 5 & 63) * 255 / 63);
				} else {
					o[0] = (unsigned char)((v >> 10 & 31) * 255 / 31);
					o[1] = (unsigned char)((v >> 5 & 31) * 255 / 31);
				}
				o[2] = (unsigned char)((v & 31) * 255 / 31);
				break;
			case 24:
				o[0] = row[3 * x + 2];
				o[1] = row[3 * x + 1];
				o[2] = row[3 * x];
				break;
			default:	/* 32: BGRX, or the bit fields' bytes */
				v = rt_img_le32(row + 4 * x);
				for (int k = 0; k < 3; k++)
					o[k] = (unsigned char)(v >> sh[k]);
			}
		}
	}
	return 0;
truncated:
	rt_kernel_fail("the BMP image is truncated or corrupt");
	return -1;
layout:
	rt_kernel_fail("the BMP image's bit fields are a layout ImageDecoder does not decode");
	return -1;
}

/* ---- PNM: P1 to P6, as Pillow's PpmImagePlugin reads them ---- */

struct rt_pnm {
	const unsigned char *p;
	int64_t n, i;
};

static int rt_pnm_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * The next header token as a number (at most 10 digits; # comments skipped
 * to the line's end), its one ending whitespace byte consumed; -1 when
 * there is none.
 */
static int64_t rt_pnm_token(struct rt_pnm *s)
{
	int64_t v = 0;
	int digits = 0;

	for (;;) {
		if (s->i >= s->n)
			return -1;
		if (s->p[s->i] == '#')
			while (s->i < s->n && s->p[s->i] != '\n' && s->p[s->i] != '\r')
				s->i++;
		else if (rt_pnm_space(s->p[s->i]))
			s->i++;
		else
			break;
	}
	for (; s->i < s->n && !rt_pnm_space(s->p[s->i]); s->i++, digits++)
		if (digits >= 10 || s->p[s->i] < '0' || s->p[s->i] > '9')
			return -1;
		else
			v = v * 10 + (s->p[s->i] - '0');
	s->i++;			/* the whitespace that ends it */
	return v;
}

/* A sample scaled from 0..maxval to 0..255 as Pillow rounds it (half to even). */
static unsigned char rt_pnm_scale(int64_t v, int64_t maxval)
{
	double r;

	if (maxval == 255)
		return (unsigned char)v;
	r = nearbyint((double)v / (double)maxval * 255.0);
	return (unsigned char)(r > 255 ? 255 : r);
}

static int rt_img_pnm(const unsigned char *p, int64_t n, unsigned char *rgb, int64_t h, int64_t w)
{
	struct rt_pnm s = { p, n, 2 };
	int form = p[1] - '0', chans = form == 3 || form == 6 ? 3 : 1;
	int64_t maxval = 1, pw = rt_pnm_token(&s), ph = rt_pnm_token(&s), cnt = h * w * chans;

	if (form != 1 && form != 4)
		maxval = rt_pnm_token(&s);
	if (pw < 0 || ph < 0 || maxval < 0)
		goto corrupt;
	if (maxval < 1 || maxval > 65535) {
		rt_kernel_fail("the PNM image's maxval %lld is out of range", (long long)maxval);
		return -1;
	}
	if (rt_img_dims("PNM", ph, pw, h, w) < 0)
		return -1;
	if (form == 4) {		/* raw bits, rows padded to bytes, 1 black */
		int64_t stride = (w + 7) / 8;

		if (stride * h > n - s.i)
			goto truncated;
		for (int64_t y = 0; y < h; y++)
			for (int64_t x = 0; x < w; x++) {
				unsigned char *o = rgb + (y * w + x) * 3;

				o[0] = o[1] = o[2] = p[s.i + y * stride + x / 8] >> (7 - x % 8) & 1
					? 0 : 255;
			}
		return 0;
	}
	for (int64_t k = 0; k < cnt; k++) {
		int64_t v;

		if (form >= 5) {	/* raw: one byte a sample, or two (big-endian) */
			int b = maxval < 256 ? 1 : 2;

			if (b > n - s.i)
				goto truncated;
			v = b == 1 ? p[s.i] : p[s.i] << 8 | p[s.i + 1];
			s.i += b;
		} else if (form == 1) {	/* plain bits: one digit each, spaces optional */
			while (s.i < n && (rt_pnm_space(p[s.i]) || p[s.i] == '#'))
				if (p[s.i] == '#')
					while (s.i < n && p[s.i] != '\n' && p[s.i] != '\r')
						s.i++;
				else
					s.i++;
			if (s.i >= n)
				goto truncated;
			if (p[s.i] != '0' && p[s.i] != '1')
				goto corrupt;
			v = p[s.i++] == '0';
		} else if ((v = rt_pnm_token(&s)) < 0) {
			goto truncated;
		}
		if (v > maxval) {
			rt_kernel_fail("the PNM image has a sample %lld above its maxval %lld",
				       (long long)v, (long long)maxval);
			return -1;
		}
		if (chans == 3) {
			rgb[k] = rt_pnm_scale(v, maxval);
		} else {
			unsigned char *o = rgb + 3 * k;

			o[0] = o[1] = o[2] = rt_pnm_scale(v, maxval);
		}
	}
	return 0;
truncated:
	rt_kernel_fail("the PNM image is truncated");
	return -1;
corrupt:
	rt_kernel_fail("the PNM image's header is corrupt");
	return -1;
}

/*
 * ImageDecoder's kernel: the n bytes at data decoded into out, uint8
 * [h, w, 3] (RGB or BGR) or [h, w, 1] (Grayscale: Pillow's integer
 * ITU-R 601-2 luma, L = (19595 R + 38470 G + 7471 B + 2^15) >> 16).
 */
static void rt_image_decode(const unsigned char *data, int64_t n, unsigned char *out, int64_t h,
			    int64_t w, int64_t pixels, int threads)
{
	unsigned char *rgb = pixels == RT_IMAGE_GRAY ? malloc((size_t)h * (size_t)w * 3) : out;
	size_t np = (size_t)h * (size_t)w;
	int f = rt_image_sniff(data, n), r = -1;

	(void)threads;
	if (!rgb) {
		rt_kernel_fail("out of memory for a %lldx%lld image", (long long)w, (long long)h);
		return;
	}
	switch (f) {
	case RT_IMAGE_BMP: r = rt_img_bmp(data, n, rgb, h, w); break;
	case RT_IMAGE_JPEG: r = rt_img_jpeg(data, n, rgb, h, w); break;
	case RT_IMAGE_JP2: case RT_IMAGE_J2K:
		r = rt_img_jpeg2000(data, n, f == RT_IMAGE_J2K, rgb, h, w);
		break;
	case RT_IMAGE_PNG: r = rt_img_png(data, n, rgb, h, w); break;
	case RT_IMAGE_PNM: r = rt_img_pnm(data, n, rgb, h, w); break;
	case RT_IMAGE_TIFF: r = rt_img_tiff(data, n, rgb, h, w); break;
	case RT_IMAGE_WEBP: r = rt_img_webp(data, n, rgb, h, w); break;
	default: rt_kernel_fail("the image's format changed since its shape was read");
	}
	if (r == 0 && pixels == RT_IMAGE_BGR)
		for (size_t i = 0; i < np; i++) {
			unsigned char t = out[3 * i];

			out[3 * i] = out[3 * i + 2];
			out[3 * i + 2] = t;
		}
	if (r == 0 && pixels == RT_IMAGE_GRAY)
		for (size_t i = 0; i < np; i++)
			out[i] = (unsigned char)((rgb[3 * i] * 19595u + rgb[3 * i + 1] * 38470u +
						  rgb[3 * i + 2] * 7471u + 0x8000u) >> 16);
	if (rgb != out)
		free(rgb);
}

#endif
