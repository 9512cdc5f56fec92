/*
 * rt_imgprobe.c - ImageDecoder's run-time shape function: which format an
 * encoded image is, from its first bytes as Pillow's Image.open tells them
 * apart, and its width and height, read from its header as Pillow's image
 * plugins read them. It needs no image library: the decoders themselves
 * (runtime/rt_image.h, linked only into models with an ImageDecoder) run
 * in the node's kernel, into the block these dims size, and fail the run
 * when the image they decode has other dims. Included by rt_shape.c.
 *
 * Every read is checked against the tensor's length: a header cut short or
 * out of range fails the run naming the node, never reads past the bytes.
 */

/*
 * The most pixels an image may have: Pillow's decompression-bomb limit
 * (twice Image.MAX_IMAGE_PIXELS), above which Image.open, and so the ONNX
 * reference, refuses it; a header cannot make a run allocate more.
 */
#define RT_IMAGE_MAX_PIXELS ((int64_t)2 * (1024 * 1024 * 1024 / 4 / 3))

static const char *const rt_image_names[RT_IMAGE_UNKNOWN] = {
	[RT_IMAGE_BMP] = "BMP", [RT_IMAGE_JPEG] = "JPEG", [RT_IMAGE_JP2] = "JPEG 2000",
	[RT_IMAGE_J2K] = "JPEG 2000", [RT_IMAGE_PNG] = "PNG", [RT_IMAGE_PNM] = "PNM",
	[RT_IMAGE_TIFF] = "TIFF", [RT_IMAGE_WEBP] = "WebP",
};

int rt_image_sniff(const unsigned char *p, int64_t n)
{
	if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
		return RT_IMAGE_PNG;
	if (n >= 3 && !memcmp(p, "\xff\xd8\xff", 3))
		return RT_IMAGE_JPEG;
	if (n >= 2 && !memcmp(p, "BM", 2))
		return RT_IMAGE_BMP;
	if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6')
		return RT_IMAGE_PNM;
	if (n >= 4 && (!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4)))
		return RT_IMAGE_TIFF;
	if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
		return RT_IMAGE_WEBP;
	if (n >= 12 && !memcmp(p, "\0\0\0\x0cjP  \r\n\x87\n", 12))
		return RT_IMAGE_JP2;
	if (n >= 4 && !memcmp(p, "\xff\x4f\xff\x51", 4))
		return RT_IMAGE_J2K;
	return RT_IMAGE_UNKNOWN;
}

static uint32_t be16(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t le16(const unsigned char *p) { return (uint32_t)p[1] << 8 | p[0]; }
static uint32_t be32(const unsigned char *p) { return be16(p) << 16 | be16(p + 2); }
static uint32_t le32(const unsigned char *p) { return le16(p + 2) << 16 | le16(p); }

/* JPEG: the first start-of-frame marker's dims (as libjpeg reads them). */
static int probe_jpeg(const unsigned char *p, int64_t n, int64_t *h, int64_t *w)
{
	int64_t i = 2;

	while (i + 4 <= n) {
		unsigned m;

		if (p[i] != 0xff)
			return -1;
		while (i < n && p[i] == 0xff)
			i++;
		if (i >= n)
			return -1;
		m = p[i++];
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd8))
			continue;
		if (m == 0xd9 || m == 0xda || i + 2 > n || be16(p + i) < 2)
			return -1;
		if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
			if (i + 7 > n)
				return -1;
			*h = be16(p + i + 3);
			*w = be16(p + i + 5);
			return 0;
		}
		i += be16(p + i);
	}
	return -1;
}

/* BMP: the info header's width and height (Pillow's BmpImagePlugin). */
static int probe_bmp(const unsigned char *p, int64_t n, int64_t *h, int64_t *w)
{
	uint32_t hs;

	if (n < 18)
		return -1;
	hs = le32(p + 14);
	if (hs == 12 && n >= 26) {
		*w = le16(p + 18);
		*h = le16(p + 20);
		return 0;
	}
	if ((hs == 40 || hs == 52 || hs == 56 || hs == 64 || hs == 108 || hs == 124) && n >= 26) {
		int32_t wi = (int32_t)le32(p + 18), hi = (int32_t)le32(p + 22);

		*w = wi;
		*h = hi < 0 ? -(int64_t)hi : hi;	/* top-down */
		return 0;
	}
	return -1;
}

/* PNM: the width and height tokens after the magic, # comments skipped. */
static int probe_pnm(const unsigned char *p, int64_t n, int64_t *h, int64_t *w)
{
	int64_t i = 2, v[2];

	/* the magic is the first token: P1 to P6, then whitespace */
	if (n < 3 || !(p[2] == ' ' || (p[2] >= '\t' && p[2] <= '\r')))
		return -1;
	for (int t = 0; t < 2; t++) {
		int digits = 0;

		for (;;) {
			if (i >= n)
				return -1;
			if (p[i] == '#')
				while (i < n && p[i] != '\n' && p[i] != '\r')
					i++;
			else if (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r'))
				i++;
			else
				break;
		}
		for (v[t] = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++, digits++)
			if (digits >= 10)
				return -1;
			else
				v[t] = v[t] * 10 + (p[i] - '0');
		if (!digits)
			return -1;
	}
	*w = v[0];
	*h = v[1];
	return 0;
}

/* TIFF: tags ImageWidth (256) and ImageLength (257) of the first IFD. */
static int probe_tiff(const unsigned char *p, int64_t n, int64_t *h, int64_t *w)
{
	int le = p[0] == 'I';
	uint32_t (*u16)(const unsigned char *) = le ? le16 : be16;
	uint32_t (*u32)(const unsigned char *) = le ? le32 : be32;
	int64_t ifd, cnt;

	*h = *w = -1;
	if (n < 8 || (ifd = u32(p + 4)) + 2 > n)
		return -1;
	cnt = u16(p + ifd);
	if (ifd + 2 + 12 * cnt > n)
		return -1;
	for (int64_t e = ifd + 2; e < ifd + 2 + 12 * cnt; e += 12) {
		uint32_t tag = u16(p + e), type = u16(p + e + 2), v;

		if (tag != 256 && tag != 257)
			continue;
		if (u32(p + e + 4) != 1 || (type != 3 && type != 4))
			return -1;
		v = type == 3 ? u16(p + e + 8) : u32(p + e + 8);
		*(tag == 256 ? w : h) = v;
	}
	return *h >= 0 && *w >= 0 ? 0 : -1;
}

/* WebP: the first chunk's dims: a lossy frame, a lossless one or the canvas. */
static int probe_webp(const unsigned char *p, int64_t n, int64_t *h, int64_t *w)
{
	if (n < 30)
		return -1;
	if (!memcmp(p + 12, "VP8 ", 4)) {
		if (memcmp(p + 23, "\x9d\x01\x2a", 3))
			return -1;
		*w = le16(p + 26) & 0x3fff;
		*h = le16(p + 28) & 0x3fff;
		return 0;
	}
	if (!memcmp(p + 12, "VP8L", 4)) {
		uint32_t b = le32(p + 21);

		if (p[20] != 0x2f)
			return -1;
		*w = (b & 0x3fff) + 1;
		*h = (b >> 14 & 0x3fff) + 1;
		return 0;
	}
	if (!memcmp(p + 12, "VP8X", 4)) {
		*w = (le32(p + 24) & 0xffffff) + 1;
		*h = (le32(p + 27) & 0xffffff) + 1;
		return 0;
	}
	return -1;
}

/* JPEG 2000: a JP2 file's image header box, or a codestream's SIZ marker. */
static int probe_jpeg2000(const unsigned char *p, int64_t n, int j2k, int64_t *h, int64_t *w)
{
	int64_t i = 0, end = n;

	if (j2k) {
		if (n < 4 + 2 + 2 + 16)
			return -1;
		*w = (int64_t)be32(p + 8) - be32(p + 16);
		*h = (int64_t)be32(p + 12) - be32(p + 20);
		return 0;
	}
	while (i + 8 <= end) {
		int64_t len = be32(p + i), head = 8;

		if (len == 1) {
			if (i + 16 > end || be32(p + i + 8))
				return -1;
			len = be32(p + i + 12);
			head = 16;
		} else if (len == 0) {
			len = end - i;
		}
		if (len < head || i + len > end)
			return -1;
		if (!memcmp(p + i + 4, "jp2h", 4)) {	/* a superbox: look inside */
			end = i + len;
			i += head;
			continue;
		}
		if (!memcmp(p + i + 4, "ihdr", 4) && len >= head + 8) {
			*h = be32(p + i + head);
			*w = be32(p + i + head + 4);
			return 0;
		}
		i += len;
	}
	return -1;
}

/* [H, W, C] of the image in value sh->in[0], C = sh->attr (3 or 1). */
static collagec_status shape_image(collagec_model *m, const struct rt_shape *sh,
				   const int64_t *x, int64_t *out)
{
	const unsigned char *p = value_ptr(m, sh->in[0]);
	int64_t n = x[0], h = -1, w = -1;
	int f = rt_image_sniff(p, n), r = -1;

	switch (f) {
	case RT_IMAGE_BMP: r = probe_bmp(p, n, &h, &w); break;
	case RT_IMAGE_JPEG: r = probe_jpeg(p, n, &h, &w); break;
	case RT_IMAGE_JP2: case RT_IMAGE_J2K:
		r = probe_jpeg2000(p, n, f == RT_IMAGE_J2K, &h, &w);
		break;
	case RT_IMAGE_PNG:
		if (n >= 24 && !memcmp(p + 12, "IHDR", 4)) {
			w = be32(p + 16);
			h = be32(p + 20);
			r = 0;
		}
		break;
	case RT_IMAGE_PNM: r = probe_pnm(p, n, &h, &w); break;
	case RT_IMAGE_TIFF: r = probe_tiff(p, n, &h, &w); break;
	case RT_IMAGE_WEBP: r = probe_webp(p, n, &h, &w); break;
	default:
		return fail(m, COLLAGEC_E_RUNTIME, "node '%s': the image is in none of the "
			    "formats ImageDecoder reads (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF, "
			    "WebP)", sh->node);
	}
	if (r < 0)
		return fail(m, COLLAGEC_E_RUNTIME, "node '%s': the %s image's header is truncated "
			    "or corrupt", sh->node, rt_image_names[f]);
	if (h <= 0 || w <= 0)
		return fail(m, COLLAGEC_E_RUNTIME, "node '%s': the %s image's size %lldx%lld is "
			    "out of range", sh->node, rt_image_names[f], (long long)w, (long long)h);
	if (h > RT_IMAGE_MAX_PIXELS / w)
		return fail(m, COLLAGEC_E_RUNTIME, "node '%s': the %s image's %lldx%lld pixels "
			    "are more than the %lld Pillow opens", sh->node, rt_image_names[f],
			    (long long)w, (long long)h, (long long)RT_IMAGE_MAX_PIXELS);
	out[0] = h;
	out[1] = w;
	out[2] = sh->attr;
	return COLLAGEC_OK;
}
