/*
 * onnx_tensor.c - TensorProto and .npy tensors: decoding (raw_data, typed
 * fields, external data) and writing.
 */

#include "onnx_tensor.h"
#include "../../runtime/rt_float8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

PRINTF_LIKE(2, 3) static int fail(char **err, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	*err = sb_detach(&sb);
	return -1;
}

const char *onnx_type_name(int onnx_type)
{
	static const char *const names[] = {
		"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
		"string", "bool", "float16", "double", "uint32", "uint64", "complex64",
		"complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
		"float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2",
		"float6e2m3", "float6e3m2",
	};

	return onnx_type >= 0 && onnx_type < (int)ARRAY_SIZE(names) ? names[onnx_type] : "unknown";
}

int64_t host_tensor_numel(const struct host_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

void host_tensor_free(struct host_tensor *t)
{
	free(t->name);
	free(t->data);
	memset(t, 0, sizeof(*t));
}

/* External data from this size on is mapped for a graph rather than read. */
#define MAP_MIN_BYTES (1u << 20)

/*
 * Reads an external tensor's bytes into *dst, allocated (bytes + 1) only
 * once the file is known to hold them: a 16-byte model cannot make
 * collagec allocate gigabytes for a shape its data does not back. For a
 * graph g, a large one is mapped instead (*mapped set; g unmaps it).
 */
static int read_external(const Onnx__TensorProto *t, const char *dir, void **dst,
			 size_t bytes, char **err, struct graph *g, bool *mapped)
{
	struct stat st = { 0 };
	const char *loc = NULL;
	long long off = 0, length = -1;
	char *path;
	FILE *f;
	size_t got;

	for (size_t i = 0; i < t->n_external_data; i++) {
		const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;

		if (!k || !v)	/* a field the file left out */
			continue;
		if (!strcmp(k, "location"))
			loc = v;
		else if (!strcmp(k, "offset"))
			off = atoll(v);
		else if (!strcmp(k, "length"))
			length = atoll(v);
	}
	if (!loc || !loc[0])
		return fail(err, "external data has no location");
	if (loc[0] == '/' || !strcmp(loc, "..") || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
	    (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/..")))
		return fail(err, "external data location '%s' must be a relative path inside "
			    "the model's directory", loc);
	if (length >= 0 && (size_t)length != bytes)
		return fail(err, "external data length %lld does not match the %zu bytes of "
			    "its shape", length, bytes);
	if (off < 0)
		return fail(err, "external data offset %lld is negative", off);
	path = xmalloc(strlen(dir) + strlen(loc) + 2);
	sprintf(path, "%s/%s", dir, loc);
	f = fopen(path, "rb");
	if (!f) {
		int e = errno;

		free(path);
		return fail(err, "cannot open external data '%s': %s", loc, strerror(e));
	}
	if (g) {
		bool seen = false;

		for (int i = 0; i < g->files.n; i++)
			if (!strcmp(g->files.v[i], path))
				seen = true;
		if (!seen)
			vec_push(&g->files, arena_strdup(g->arena, path));
	}
	free(path);
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (off > st.st_size || bytes > (size_t)(st.st_size - off))) {
		fclose(f);
		return fail(err, "external data '%s' is truncated (%lld of %zu bytes)", loc,
			    off > st.st_size ? 0LL : (long long)(st.st_size - off), bytes);
	}
	/*
	 * A large tensor for a graph is mapped, not read: its pages come from
	 * the page cache as they are used, and a model of gigabytes is never
	 * held twice (writes, as folding's, go to private copies of pages)
	 */
	if (g && bytes >= MAP_MIN_BYTES && off % 64 == 0 && S_ISREG(st.st_mode)) {
		long page = sysconf(_SC_PAGESIZE);
		size_t lead = (size_t)(off % page);
		void *m = mmap(NULL, bytes + lead, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			       fileno(f), (off_t)(off - (long long)lead));

		if (m != MAP_FAILED) {
			fclose(f);
			graph_add_map(g, m, bytes + lead);
			*dst = (char *)m + lead;
			*mapped = true;
			return 0;
		}
	}
	if (fseek(f, off, SEEK_SET) < 0) {
		fclose(f);
		return fail(err, "cannot seek to offset %lld in '%s'", off, loc);
	}
	*dst = xcalloc(bytes + 1, 1);
	got = fread(*dst, 1, bytes, f);
	fclose(f);
	if (got != bytes)
		return fail(err, "external data '%s' is truncated (%zu of %zu bytes)", loc, got,
			    bytes);
	return 0;
}

/*
 * A string tensor: string_data, one entry per element, each copied with a
 * NUL after it (an embedded NUL ends the string early; ONNX's strings are
 * UTF-8 text). raw_data and external data cannot hold strings.
 */
static int decode_strings(const Onnx__TensorProto *t, int64_t n, struct host_tensor *ht,
			  char **err)
{
	size_t total = 0;
	char **ptrs, *p;

	if (t->has_raw_data || (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
		return fail(err, "a string tensor must keep its strings in string_data");
	if ((int64_t)t->n_string_data != n)
		return fail(err, "string_data has %zu values, its shape needs %lld",
			    t->n_string_data, (long long)n);
	for (int64_t i = 0; i < n; i++) {
		if (!t->string_data[i].data && t->string_data[i].len)
			return fail(err, "string_data[%lld] has no bytes", (long long)i);
		total += t->string_data[i].len + 1;
	}
	ht->data = xmalloc((size_t)n * sizeof(char *) + total + 1);
	ptrs = ht->data;
	p = (char *)ht->data + (size_t)n * sizeof(char *);
	for (int64_t i = 0; i < n; i++) {
		size_t len = t->string_data[i].len;

		ptrs[i] = p;
		if (len)
			memcpy(p, t->string_data[i].data, len);
		p[len] = 0;
		p += len + 1;
	}
	if (t->name)
		ht->name = xstrdup(t->name);
	return 0;
}

/*
 * A sub-byte tensor (int4, uint4, float4e2m1: two elements a byte; int2,
 * uint2: four), packed by ONNX with the first element in the lowest bits
 * (raw_data, external data, or one packed byte per int32_data value);
 * unpacked here to one byte an element, the signed ones sign-extended
 * (dtype.def), in owned memory.
 */
static int decode_subbyte(const Onnx__TensorProto *t, const char *dir, int64_t n,
			  struct host_tensor *ht, char **err, struct graph *g)
{
	int bits = dtype_bits(ht->dtype);
	size_t packed = (size_t)((n * bits + 7) / 8);
	uint8_t *src = NULL;
	bool own = false;

	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		void *p = NULL;
		bool mapped = false;

		if (read_external(t, dir, &p, packed, err, g, &mapped) < 0)
			return -1;
		src = p;
		own = !mapped;
	} else if (t->has_raw_data) {
		if (t->raw_data.len != packed)
			return fail(err, "raw_data has %zu bytes, its shape needs %zu",
				    t->raw_data.len, packed);
		src = t->raw_data.data;
	} else {
		if (t->n_int32_data != packed)
			return fail(err, "int32_data has %zu values, its shape needs %zu (%d "
				    "%d-bit elements a value)", t->n_int32_data, packed, 8 / bits, bits);
		src = xcalloc(packed + 1, 1);
		own = true;
		for (size_t i = 0; i < packed; i++)
			src[i] = (uint8_t)t->int32_data[i];
	}
	ht->data = xcalloc((size_t)n + 1, 1);
	rt_subbyte_unpack(dtype_to_onnx(ht->dtype), src, ht->data, n);
	if (own)
		free(src);
	if (t->name)
		ht->name = xstrdup(t->name);
	return 0;
}

int onnx_tensor_decode(const Onnx__TensorProto *t, const char *dir, struct host_tensor *ht,
		       char **err, struct graph *g)
{
	size_t es, bytes;
	int64_t n = 1;
	unsigned char *d;

	memset(ht, 0, sizeof(*ht));
	ht->dtype = dtype_from_onnx(t->data_type);
	if (ht->dtype == DTYPE_UNDEF)
		return fail(err, "element type %s (%d) is not supported",
			    onnx_type_name(t->data_type), t->data_type);
	if (t->n_dims > MAX_RANK)
		return fail(err, "rank %zu is more than %d", t->n_dims, MAX_RANK);
	ht->rank = (int)t->n_dims;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || t->dims[i] > DIM_LIMIT)
			return fail(err, "dimension %zu is %lld, outside 0..%lld", i,
				    (long long)t->dims[i], (long long)DIM_LIMIT);
		ht->dims[i] = t->dims[i];
		n *= t->dims[i];
		if (n > DIM_LIMIT)
			return fail(err, "has more than %lld elements", (long long)DIM_LIMIT);
	}
	es = dtype_size(ht->dtype);
	bytes = (size_t)n * es;
	ht->bytes = bytes;
	if (dtype_is_string(ht->dtype))
		return decode_strings(t, n, ht, err);
	if (dtype_is_subbyte(ht->dtype))
		return decode_subbyte(t, dir, n, ht, err, g);
	/* the data is allocated once its source is known to hold all of it */
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (read_external(t, dir, &ht->data, bytes, err, g, &ht->mapped) < 0) {
			host_tensor_free(ht);
			return -1;
		}
		goto named;
	}
	if (t->has_raw_data) {
		if (t->raw_data.len != bytes)
			return fail(err, "raw_data has %zu bytes, its shape needs %zu",
				    t->raw_data.len, bytes);
		/* the importer takes the bytes where protobuf-c put them: little-endian, as the host */
		if (g && bytes) {
			ht->data = t->raw_data.data;
			goto named;
		}
		ht->data = xcalloc(bytes + 1, 1);
		if (bytes)
			memcpy(ht->data, t->raw_data.data, bytes);	/* little-endian host */
		goto named;
	}
#define TYPED(field, count, CT)                                                          \
	do {                                                                             \
		if ((int64_t)(count) != n)                                               \
			return fail(err, #field " has %zu values, its shape needs %lld", \
				    (size_t)(count), (long long)n);                      \
		d = ht->data = xcalloc(bytes + 1, 1);                                    \
		for (int64_t i_ = 0; i_ < n; i_++)                                       \
			((CT *)d)[i_] = (CT)t->field[i_];                                \
	} while (0)
	switch (ht->dtype) {
	case DTYPE_F32: TYPED(float_data, t->n_float_data, float); break;
	case DTYPE_F64: TYPED(double_data, t->n_double_data, double); break;
	case DTYPE_I64: TYPED(int64_data, t->n_int64_data, int64_t); break;
	case DTYPE_I32: TYPED(int32_data, t->n_int32_data, int32_t); break;
	case DTYPE_I16: TYPED(int32_data, t->n_int32_data, int16_t); break;
	case DTYPE_I8: TYPED(int32_data, t->n_int32_data, int8_t); break;
	case DTYPE_U16: TYPED(int32_data, t->n_int32_data, uint16_t); break;
	case DTYPE_U8: case DTYPE_BOOL: TYPED(int32_data, t->n_int32_data, uint8_t); break;
	/* the 16-bit floats' bit patterns, one per int32 (TensorProto's comment) */
	case DTYPE_F16: case DTYPE_BF16: TYPED(int32_data, t->n_int32_data, uint16_t); break;
	case DTYPE_F8E4M3FN: case DTYPE_F8E4M3FNUZ: case DTYPE_F8E5M2: case DTYPE_F8E5M2FNUZ:
	case DTYPE_F8E8M0:
		TYPED(int32_data, t->n_int32_data, uint8_t);
		break;
	case DTYPE_U32: TYPED(uint64_data, t->n_uint64_data, uint32_t); break;
	case DTYPE_U64: TYPED(uint64_data, t->n_uint64_data, uint64_t); break;
	default: BUG("decode %s", dtype_name(ht->dtype));
	}
#undef TYPED
named:
	if (t->name)
		ht->name = xstrdup(t->name);
	return 0;
}

/* ---- .npy ---- */

static const char *npy_descr(enum dtype t)
{
	switch (t) {
	case DTYPE_F32: return "<f4";
	case DTYPE_F64: return "<f8";
	case DTYPE_F16: return "<f2";
	case DTYPE_I8: return "|i1";
	case DTYPE_U8: return "|u1";
	case DTYPE_I16: return "<i2";
	case DTYPE_U16: return "<u2";
	case DTYPE_I32: return "<i4";
	case DTYPE_U32: return "<u4";
	case DTYPE_I64: return "<i8";
	case DTYPE_U64: return "<u8";
	case DTYPE_BOOL: return "|b1";
	default: return NULL;
	}
}

static int npy_read(const char *path, const unsigned char *buf, size_t len,
		    struct host_tensor *t, char **err)
{
	size_t hlen, off;
	char *hdr, *p;
	int64_t n;

	if (len < 10)
		return fail(err, "%s: truncated .npy header", path);
	if (buf[6] == 1) {
		hlen = buf[8] | (size_t)buf[9] << 8;
		off = 10;
	} else {
		if (len < 12)
			return fail(err, "%s: truncated .npy header", path);
		hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
		off = 12;
	}
	if (off + hlen > len)
		return fail(err, "%s: truncated .npy header", path);
	hdr = xmalloc(hlen + 1);
	memcpy(hdr, buf + off, hlen);
	hdr[hlen] = 0;
	off += hlen;
	memset(t, 0, sizeof(*t));
	p = strstr(hdr, "'descr'");
	p = p ? strchr(p + 7, '\'') : NULL;	/* the opening quote of the value */
	for (int ty = 1; p && ty < DTYPE_COUNT; ty++) {
		const char *d = npy_descr((enum dtype)ty);

		if (d && !strncmp(p + 1, d, strlen(d)) && p[1 + strlen(d)] == '\'')
			t->dtype = (enum dtype)ty;
	}
	if (t->dtype == DTYPE_UNDEF || strstr(hdr, "'fortran_order': True")) {
		free(hdr);
		return fail(err, "%s: unsupported .npy dtype or Fortran order", path);
	}
	p = strstr(hdr, "'shape':");
	p = p ? strchr(p, '(') : NULL;
	if (!p) {
		free(hdr);
		return fail(err, "%s: .npy header has no shape", path);
	}
	p++;
	while (*p && *p != ')') {
		char *e;
		long long v = strtoll(p, &e, 10);

		if (e == p) {
			p++;
			continue;
		}
		if (t->rank >= MAX_RANK || v < 0 || v > DIM_LIMIT) {
			free(hdr);
			return fail(err, "%s: bad .npy shape", path);
		}
		t->dims[t->rank++] = v;
		if (host_tensor_numel(t) > DIM_LIMIT) {
			free(hdr);
			return fail(err, "%s: .npy tensor has more than %lld elements", path,
				    (long long)DIM_LIMIT);
		}
		p = e;
	}
	free(hdr);
	n = host_tensor_numel(t);
	t->bytes = (size_t)n * dtype_size(t->dtype);
	if (len - off < t->bytes)
		return fail(err, "%s: .npy data is truncated", path);
	t->data = xmalloc(t->bytes + 1);
	memcpy(t->data, buf + off, t->bytes);
	return 0;
}

static void *pb_alloc(void *data, size_t size)
{
	(void)data;
	return xmalloc(size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	free(p);
}

int host_tensor_read(const char *path, struct host_tensor *t, char **err)
{
	ProtobufCAllocator alloc = { pb_alloc, pb_free, NULL };
	Onnx__TensorProto *tp;
	size_t len;
	char *buf = file_read(path, &len);
	const char *slash = strrchr(path, '/');
	char *dir;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!buf)
		return fail(err, "%s: cannot read: %s", path, strerror(errno));
	if (len >= 6 && !memcmp(buf, "\x93NUMPY", 6)) {
		rc = npy_read(path, (unsigned char *)buf, len, t, err);
		free(buf);
		return rc;
	}
	tp = onnx__tensor_proto__unpack(&alloc, len, (const uint8_t *)buf);
	free(buf);
	if (!tp)
		return fail(err, "%s: not a TensorProto (.pb) or .npy file", path);
	dir = slash ? strndup(path, (size_t)(slash - path)) : xstrdup(".");
	rc = onnx_tensor_decode(tp, dir, t, err, NULL);
	free(dir);
	onnx__tensor_proto__free_unpacked(tp, &alloc);
	if (rc < 0) {
		char *e = *err;

		rc = fail(err, "%s: %s", path, e);
		free(e);
	}
	return rc;
}

int host_tensor_write(const char *path, const struct host_tensor *t, char **err)
{
	size_t n = strlen(path);
	int rc;

	if (n > 4 && !strcmp(path + n - 4, ".npy")) {
		struct strbuf h = STRBUF_INIT, out = STRBUF_INIT;

		if (!npy_descr(t->dtype))	/* bfloat16: NumPy has no such type */
			return fail(err, "%s: %s has no .npy type (write a .pb file)", path,
				    dtype_name(t->dtype));

		sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (",
			  npy_descr(t->dtype));
		for (int i = 0; i < t->rank; i++)
			sb_printf(&h, "%lld,%s", (long long)t->dims[i],
				  i == t->rank - 1 && t->rank > 1 ? "" : (t->rank == 1 ? "" : " "));
		sb_puts(&h, "), }");
		while ((10 + h.len + 1) % 64)
			sb_putc(&h, ' ');
		sb_putc(&h, '\n');
		sb_add(&out, "\x93NUMPY\x01\x00", 8);
		sb_putc(&out, (char)(h.len & 0xff));
		sb_putc(&out, (char)(h.len >> 8));
		sb_add(&out, h.buf, h.len);
		sb_add(&out, t->data, t->bytes);
		rc = file_write_atomic(path, out.buf, out.len);
		sb_release(&h);
		sb_release(&out);
	} else {
		Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
		uint8_t *packed = NULL;
		size_t sz;
		uint8_t *buf;

		tp.n_dims = (size_t)t->rank;
		tp.dims = (int64_t *)t->dims;
		tp.has_data_type = 1;
		tp.data_type = dtype_to_onnx(t->dtype);
		tp.name = t->name;
		if (dtype_is_string(t->dtype)) {
			/* string_data: the bytes of each string, without its NUL */
			int64_t n = host_tensor_numel(t);
			const char *const *s = t->data;

			tp.n_string_data = (size_t)n;
			tp.string_data = xmalloc(sizeof(*tp.string_data) * ((size_t)n + 1));
			for (int64_t i = 0; i < n; i++) {
				tp.string_data[i].data = (uint8_t *)(s[i] ? s[i] : "");
				tp.string_data[i].len = strlen(s[i] ? s[i] : "");
			}
		} else if (dtype_is_subbyte(t->dtype)) {
			/* two or four a byte, the first in the lowest bits (onnx.proto) */
			int64_t n = host_tensor_numel(t);
			size_t len = (size_t)((n * dtype_bits(t->dtype) + 7) / 8);

			packed = xcalloc(len + 1, 1);
			rt_subbyte_pack(dtype_to_onnx(t->dtype), t->data, packed, n);
			tp.has_raw_data = 1;
			tp.raw_data.len = len;
			tp.raw_data.data = packed;
		} else {
			tp.has_raw_data = 1;
			tp.raw_data.len = t->bytes;
			tp.raw_data.data = t->data;
		}
		sz = onnx__tensor_proto__get_packed_size(&tp);
		buf = xmalloc(sz + 1);
		onnx__tensor_proto__pack(&tp, buf);
		rc = file_write_atomic(path, buf, sz);
		free(buf);
		free(tp.string_data);
		free(packed);
	}
	if (rc < 0)
		return fail(err, "%s: cannot write: %s", path, strerror(errno));
	return 0;
}

/* ---- SequenceProto and OptionalProto (onnx-data.proto), by their wire format ---- */

/*
 * onnx.proto does not hold these two messages, so they are read field by
 * field: SequenceProto and OptionalProto both keep a tensor in field 3
 * (repeated in a sequence), a sequence in field 5 and an optional in field
 * 7; fields 4 and 6 (sparse tensors, maps) are not supported.
 */
struct elem_reader {
	const char *path, *dir;
	struct host_tensor *t;
	int n, cap;
	char **err;
};

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && *p < end; s += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static int elems_walk(struct elem_reader *r, const uint8_t *p, const uint8_t *end, int depth)
{
	ProtobufCAllocator alloc = { pb_alloc, pb_free, NULL };

	if (depth > 8)
		return fail(r->err, "%s: sequences nested too deeply", r->path);
	while (p < end) {
		uint64_t key, len;

		if (read_varint(&p, end, &key) < 0)
			return fail(r->err, "%s: not a SequenceProto or OptionalProto", r->path);
		switch (key & 7) {
		case 0:
			if (read_varint(&p, end, &len) < 0)
				return fail(r->err, "%s: truncated", r->path);
			continue;
		case 1: p += 8; continue;
		case 5: p += 4; continue;
		case 2: break;
		default: return fail(r->err, "%s: not a SequenceProto or OptionalProto", r->path);
		}
		if (read_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
			return fail(r->err, "%s: truncated", r->path);
		if (key >> 3 == 3) {
			Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&alloc, len, p);
			int rc;

			if (!tp)
				return fail(r->err, "%s: an element is not a TensorProto", r->path);
			if (r->n == r->cap) {
				r->cap = r->cap ? 2 * r->cap : 8;
				r->t = xrealloc(r->t, sizeof(*r->t) * (size_t)r->cap);
			}
			rc = onnx_tensor_decode(tp, r->dir, &r->t[r->n], r->err, NULL);
			onnx__tensor_proto__free_unpacked(tp, &alloc);
			if (rc < 0)
				return -1;
			r->n++;
		} else if (key >> 3 == 5 || key >> 3 == 7) {
			if (elems_walk(r, p, p + len, depth + 1) < 0)
				return -1;
		} else if (key >> 3 == 4 || key >> 3 == 6) {
			return fail(r->err, "%s: sparse tensors and maps are not supported", r->path);
		}
		p += len;
	}
	return 0;
}

int host_elements_read(const char *path, struct host_tensor **t, int *n, bool *present,
		       char **err)
{
	size_t len;
	char *buf = file_read(path, &len);
	const char *slash = strrchr(path, '/');
	char *dir;
	struct elem_reader r = { path, NULL, NULL, 0, 0, err };
	int rc;

	*t = NULL;
	*n = 0;
	*present = false;
	if (!buf)
		return fail(err, "%s: cannot read: %s", path, strerror(errno));
	dir = slash ? strndup(path, (size_t)(slash - path)) : xstrdup(".");
	r.dir = dir;
	rc = elems_walk(&r, (const uint8_t *)buf, (const uint8_t *)buf + len, 0);
	/* an optional's element is field 3, 5 or 7: any of them present */
	for (const uint8_t *p = (const uint8_t *)buf, *e = p + len; rc == 0 && p < e;) {
		uint64_t key, l;

		if (read_varint(&p, e, &key) < 0)
			break;
		if ((key >> 3 == 3 || key >> 3 == 5 || key >> 3 == 7) && (key & 7) == 2)
			*present = true;
		if ((key & 7) == 0)
			read_varint(&p, e, &l);
		else if ((key & 7) == 2 && read_varint(&p, e, &l) == 0)
			p += l;
		else
			p += (key & 7) == 1 ? 8 : 4;
	}
	free(dir);
	free(buf);
	if (rc < 0) {
		for (int i = 0; i < r.n; i++)
			host_tensor_free(&r.t[i]);
		free(r.t);
		return -1;
	}
	*t = r.t;
	*n = r.n;
	return 0;
}
