/*
 * tensor_io_test.c - host tensors in .npy and TensorProto .pb files:
 * round trips for every dtype, files as numpy writes them, typed-field and
 * external-data TensorProtos, and the error messages.
 */
#include "../../core/onnx/onnx.h"
#include "onnx.pb-c.h"
#include "test.h"

#include <errno.h>

/* One temporary directory per run, removed at exit. */
static char *tmpdir;

static void remove_tmpdir(void)
{
	if (tmpdir) {
		dir_remove_tree(tmpdir);
		free(tmpdir);
		tmpdir = NULL;
	}
}

static const char *tmp_path(const char *name)
{
	static char buf[8][4096];
	static int k;

	k = (k + 1) % 8;
	if (!tmpdir) {
		tmpdir = dir_make_temp("unit-tensor");
		if (!tmpdir) {
			perror("dir_make_temp");
			exit(1);
		}
		atexit(remove_tmpdir);
	}
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

/*
 * A tensor with a deterministic byte pattern; a string tensor's elements
 * are "", "s1", "s22", ... with a UTF-8 "é" in every third, in one block as
 * host_tensor_read makes them.
 */
static void make_tensor(struct host_tensor *t, enum dtype dt, int rank, const int64_t *dims)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->dims[i] = dims[i];
	t->bytes = (size_t)host_tensor_numel(t) * dtype_size(dt);
	if (dtype_is_string(dt)) {
		int64_t n = host_tensor_numel(t);
		char *p;

		t->data = xmalloc(t->bytes + (size_t)n * 32 + 1);
		p = (char *)t->data + t->bytes;
		for (int64_t i = 0; i < n; i++) {
			((char **)t->data)[i] = p;
			p += sprintf(p, i == 0 ? "" : i % 3 ? "s%lld" : "\xc3\xa9%lld", (long long)i) + 1;
		}
		return;
	}
	t->data = xmalloc(t->bytes + 1);
	for (size_t i = 0; i < t->bytes; i++)
		((unsigned char *)t->data)[i] = (unsigned char)(i * 37 + 11);
	if (dt == DTYPE_BOOL)
		for (size_t i = 0; i < t->bytes; i++)
			((unsigned char *)t->data)[i] &= 1;
	/* sub-byte types: one byte an element, int4 and int2 sign-extended (dtype.def) */
	if (dtype_is_subbyte(dt)) {
		int bits = dtype_bits(dt), mask = (1 << bits) - 1, half = 1 << (bits - 1);
		bool sgn = dt == DTYPE_I4 || dt == DTYPE_I2;

		for (size_t i = 0; i < t->bytes; i++) {
			int v = ((unsigned char *)t->data)[i] & mask;

			((unsigned char *)t->data)[i] = (unsigned char)(sgn ? (v ^ half) - half : v);
		}
	}
}

static void assert_same(const struct host_tensor *a, const struct host_tensor *b)
{
	ASSERT(a->dtype, b->dtype);
	ASSERT(a->rank, b->rank);
	for (int i = 0; i < a->rank; i++)
		ASSERT(a->dims[i], b->dims[i]);
	ASSERT(a->bytes, b->bytes);
	if (dtype_is_string(a->dtype)) {
		for (int64_t i = 0; i < host_tensor_numel(a); i++)
			ASSERT_STR(((char **)a->data)[i], ((char **)b->data)[i]);
		return;
	}
	ASSERT(0, a->bytes ? memcmp(a->data, b->data, a->bytes) : 0);
}

static void write_file(const char *path, const void *data, size_t n)
{
	ASSERT(0, file_write_atomic(path, data, n));
}

/* Reads path, expecting failure with exactly msg (after "PATH: "). */
static void expect_read_error(const char *path, const char *msg)
{
	struct host_tensor t;
	char *err = NULL, want[8192];

	ASSERT(-1, host_tensor_read(path, &t, &err));
	snprintf(want, sizeof(want), "%s: %s", path, msg);
	ASSERT_STR(want, err);
	ASSERT_TRUE(t.data == NULL);
	free(err);
}

/* ---- .npy ---- */

static void test_npy_roundtrip_all_dtypes(void)
{
	static const int64_t shapes[][3] = { { 0 }, { 5 }, { 2, 3 }, { 2, 3, 4 }, { 2, 0, 3 } };
	static const int ranks[] = { 0, 1, 2, 3, 3 };

	for (int dt = 1; dt < DTYPE_COUNT; dt++)
		for (size_t s = 0; s < ARRAY_SIZE(ranks); s++) {
			struct host_tensor t, r;
			char *err = NULL;
			const char *p = tmp_path("rt.npy");

			make_tensor(&t, (enum dtype)dt, ranks[s], shapes[s]);
			/* NumPy has no bfloat16, 8-bit floats or sub-byte types; strings: not as .npy */
			if (dt == DTYPE_BF16 || dt == DTYPE_STR || dtype_is_subbyte(dt) ||
			    dtype_is_float8((enum dtype)dt)) {
				ASSERT(-1, host_tensor_write(p, &t, &err));
				free(err);
				host_tensor_free(&t);
				continue;
			}
			ASSERT(0, host_tensor_write(p, &t, &err));
			ASSERT(0, host_tensor_read(p, &r, &err));
			assert_same(&t, &r);
			ASSERT_TRUE(r.name == NULL);
			host_tensor_free(&t);
			host_tensor_free(&r);
		}
}

static void test_npy_header_layout(void)
{
	struct host_tensor t;
	static const int64_t dims[2] = { 2, 3 };
	char *err = NULL, *buf;
	size_t len, hlen;
	const char *p = tmp_path("hdr.npy");

	make_tensor(&t, DTYPE_F32, 2, dims);
	ASSERT(0, host_tensor_write(p, &t, &err));
	buf = file_read(p, &len);
	ASSERT_TRUE(buf != NULL);
	ASSERT(0, memcmp(buf, "\x93NUMPY\x01\x00", 8));
	hlen = (unsigned char)buf[8] | (size_t)(unsigned char)buf[9] << 8;
	ASSERT(10 + hlen + 24, len);
	ASSERT(0, (10 + hlen) % 64);	/* data aligned as numpy requires */
	ASSERT('\n', buf[10 + hlen - 1]);
	ASSERT_TRUE(strstr(buf + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3") ==
		    buf + 10);
	ASSERT(0, memcmp(buf + 10 + hlen, t.data, 24));
	free(buf);
	host_tensor_free(&t);
}

/* Builds a file the way numpy.save does: v1.0 (or v2.0), padded header. */
static size_t numpy_file(char *out, int version, const char *dict, const void *data, size_t n)
{
	size_t pre = version == 1 ? 10 : 12, dl = strlen(dict), hlen = dl + 1, k = 0;

	while ((pre + hlen) % 64)
		hlen++;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (char)version;
	out[7] = 0;
	out[8] = (char)(hlen & 0xff);
	out[9] = (char)(hlen >> 8);
	if (version != 1) {
		out[10] = 0;
		out[11] = 0;
	}
	k = pre;
	memcpy(out + k, dict, dl);
	memset(out + k + dl, ' ', hlen - dl - 1);
	out[k + hlen - 1] = '\n';
	k += hlen;
	memcpy(out + k, data, n);
	return k + n;
}

static void test_npy_reads_numpy_files(void)
{
	char file[1024];
	size_t n;
	struct host_tensor r;
	char *err = NULL;
	const char *p = tmp_path("np.npy");
	float f[6] = { 1.5f, -2, 3, 4, 5, 6.25f };
	int64_t i8[3] = { 7, -8, 9 };
	uint8_t b[4] = { 1, 0, 1, 1 };
	double d = 3.5;
	uint16_t u16[2] = { 65535, 1 };

	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f,
		       sizeof(f));
	ASSERT(152, n);	/* the size numpy writes for this array */
	write_file(p, file, n);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_F32, r.dtype);
	ASSERT(2, r.rank);
	ASSERT(2, r.dims[0]);
	ASSERT(3, r.dims[1]);
	ASSERT(24, r.bytes);
	ASSERT_TRUE(((float *)r.data)[5] == 6.25f);
	host_tensor_free(&r);

	n = numpy_file(file, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", i8,
		       sizeof(i8));
	write_file(p, file, n);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_I64, r.dtype);
	ASSERT(1, r.rank);
	ASSERT(3, r.dims[0]);
	ASSERT(-8, ((int64_t *)r.data)[1]);
	host_tensor_free(&r);

	n = numpy_file(file, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", b,
		       sizeof(b));
	ASSERT(132, n);
	write_file(p, file, n);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_BOOL, r.dtype);
	ASSERT(4, r.bytes);
	ASSERT(0, memcmp(r.data, b, 4));
	host_tensor_free(&r);

	n = numpy_file(file, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &d,
		       sizeof(d));
	write_file(p, file, n);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_F64, r.dtype);
	ASSERT(0, r.rank);
	ASSERT(8, r.bytes);
	ASSERT_TRUE(*(double *)r.data == 3.5);
	host_tensor_free(&r);

	/* version 2.0: 4-byte header length; keys in another order */
	n = numpy_file(file, 2, "{'fortran_order': False, 'shape': (1, 2), 'descr': '<u2', }",
		       u16, sizeof(u16));
	write_file(p, file, n);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_U16, r.dtype);
	ASSERT(2, r.rank);
	ASSERT(1, r.dims[0]);
	ASSERT(2, r.dims[1]);
	ASSERT(65535, ((uint16_t *)r.data)[0]);
	host_tensor_free(&r);
}

static void test_npy_errors(void)
{
	char file[1024];
	size_t n;
	float f[6] = { 0 };
	const char *p = tmp_path("bad.npy");

	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f,
		       sizeof(f));
	write_file(p, file, n);
	expect_read_error(p, "unsupported .npy dtype or Fortran order");
	n = numpy_file(file, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", f,
		       sizeof(f));
	write_file(p, file, n);
	expect_read_error(p, "unsupported .npy dtype or Fortran order");
	n = numpy_file(file, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f,
		       sizeof(f));
	write_file(p, file, n);
	expect_read_error(p, "unsupported .npy dtype or Fortran order");
	/* '<f4' must match whole, not as a prefix of '<f48' */
	n = numpy_file(file, 1, "{'descr': '<f48', 'fortran_order': False, 'shape': (1,), }", f,
		       sizeof(f));
	write_file(p, file, n);
	expect_read_error(p, "unsupported .npy dtype or Fortran order");
	/* 6 floats declared, 5 present */
	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f,
		       sizeof(f) - 4);
	write_file(p, file, n);
	expect_read_error(p, ".npy data is truncated");
	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, }", f, sizeof(f));
	write_file(p, file, n);
	expect_read_error(p, ".npy header has no shape");
	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
		       f, 4);
	write_file(p, file, n);
	expect_read_error(p, "bad .npy shape");
	/* header length beyond the file */
	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, 0);
	write_file(p, file, 40);
	expect_read_error(p, "truncated .npy header");
	write_file(p, "\x93NUMPY\x01", 7);
	expect_read_error(p, "truncated .npy header");
}

/*
 * A shape whose element count overflows int64 must be rejected (the .pb
 * reader limits every tensor to 2^31 elements); it must not come back as a
 * tensor whose dims disagree with its byte count.
 */
static void test_npy_rejects_overflowing_shape(void)
{
	char file[1024];
	size_t n;
	struct host_tensor r;
	char *err = NULL;
	int rc;
	const char *p = tmp_path("huge.npy");

	n = numpy_file(file, 1, "{'descr': '<f4', 'fortran_order': False, "
		       "'shape': (4611686018427387904, 4), }", "", 0);
	write_file(p, file, n);
	rc = host_tensor_read(p, &r, &err);
	if (rc == 0) {
		fprintf(stderr, "  accepted: dims [%lld, %lld], %zu bytes\n", (long long)r.dims[0],
			(long long)r.dims[1], r.bytes);
		host_tensor_free(&r);
	} else {
		free(err);
	}
	ASSERT(-1, rc);
}

static void test_read_missing_and_garbage(void)
{
	const char *p = tmp_path("does-not-exist.pb");
	char want[256];

	snprintf(want, sizeof(want), "cannot read: %s", strerror(ENOENT));
	expect_read_error(p, want);
	p = tmp_path("garbage.pb");
	write_file(p, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11);
	expect_read_error(p, "not a TensorProto (.pb) or .npy file");
}

/* ---- .pb ---- */

static void test_pb_roundtrip_all_dtypes(void)
{
	static const int64_t shapes[][3] = { { 0 }, { 7 }, { 3, 2 }, { 1, 2, 3 }, { 4, 0 } };
	static const int ranks[] = { 0, 1, 2, 3, 2 };

	for (int dt = 1; dt < DTYPE_COUNT; dt++)
		for (size_t s = 0; s < ARRAY_SIZE(ranks); s++) {
			struct host_tensor t, r;
			char *err = NULL;
			const char *p = tmp_path("rt.pb");

			make_tensor(&t, (enum dtype)dt, ranks[s], shapes[s]);
			t.name = xstrdup("input:0");
			ASSERT(0, host_tensor_write(p, &t, &err));
			ASSERT(0, host_tensor_read(p, &r, &err));
			assert_same(&t, &r);
			ASSERT_STR("input:0", r.name);
			host_tensor_free(&t);
			host_tensor_free(&r);
		}
}

/* Packs tp into path. */
static void write_proto(const char *path, const Onnx__TensorProto *tp)
{
	size_t sz = onnx__tensor_proto__get_packed_size(tp);
	uint8_t *buf = xmalloc(sz + 1);

	onnx__tensor_proto__pack(tp, buf);
	write_file(path, buf, sz);
	free(buf);
}

static void test_pb_typed_fields(void)
{
	Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
	int64_t dims[2] = { 2, 2 };
	float fd[4] = { 0.5f, -1, 2, 1e10f };
	int32_t i32[4] = { -128, 127, -1, 5 };
	int64_t i64[4] = { INT64_MIN, -1, 0, INT64_MAX };
	uint64_t u64[4] = { 0, 1, 4294967295u, 7 };
	double dd[4] = { 0.1, -0.0, 1e300, -3 };
	struct host_tensor r;
	char *err = NULL;
	const char *p = tmp_path("typed.pb");

	tp.n_dims = 2;
	tp.dims = dims;
	tp.has_data_type = 1;
	tp.data_type = 1;	/* FLOAT */
	tp.n_float_data = 4;
	tp.float_data = fd;
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_F32, r.dtype);
	ASSERT(16, r.bytes);
	ASSERT(0, memcmp(r.data, fd, 16));
	host_tensor_free(&r);
	tp.n_float_data = 0;

	tp.data_type = 3;	/* INT8 from int32_data */
	tp.n_int32_data = 4;
	tp.int32_data = i32;
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_I8, r.dtype);
	ASSERT(4, r.bytes);
	ASSERT(-128, ((int8_t *)r.data)[0]);
	ASSERT(127, ((int8_t *)r.data)[1]);
	ASSERT(-1, ((int8_t *)r.data)[2]);
	ASSERT(5, ((int8_t *)r.data)[3]);
	host_tensor_free(&r);

	tp.data_type = 5;	/* INT16 from int32_data */
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_I16, r.dtype);
	ASSERT(-128, ((int16_t *)r.data)[0]);
	ASSERT(-1, ((int16_t *)r.data)[2]);
	host_tensor_free(&r);
	tp.n_int32_data = 0;

	tp.data_type = 7;	/* INT64 */
	tp.n_int64_data = 4;
	tp.int64_data = i64;
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_I64, r.dtype);
	ASSERT(0, memcmp(r.data, i64, 32));
	host_tensor_free(&r);
	tp.n_int64_data = 0;

	tp.data_type = 12;	/* UINT32 from uint64_data */
	tp.n_uint64_data = 4;
	tp.uint64_data = u64;
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_U32, r.dtype);
	ASSERT(16, r.bytes);
	ASSERT(4294967295u, ((uint32_t *)r.data)[2]);
	ASSERT(7, ((uint32_t *)r.data)[3]);
	host_tensor_free(&r);
	tp.n_uint64_data = 0;

	tp.data_type = 11;	/* DOUBLE */
	tp.n_double_data = 4;
	tp.double_data = dd;
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_F64, r.dtype);
	ASSERT(0, memcmp(r.data, dd, 32));
	host_tensor_free(&r);
}

static void test_pb_errors(void)
{
	Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
	int64_t dims[9] = { 3, 1, 1, 1, 1, 1, 1, 1, 1 };
	float fd[2] = { 1, 2 };
	uint8_t raw[8] = { 0 };
	const char *p = tmp_path("err.pb");

	tp.n_dims = 1;
	tp.dims = dims;
	tp.has_data_type = 1;
	tp.data_type = 1;
	tp.has_raw_data = 1;
	tp.raw_data.len = 8;
	tp.raw_data.data = raw;
	write_proto(p, &tp);
	expect_read_error(p, "raw_data has 8 bytes, its shape needs 12");
	tp.has_raw_data = 0;
	tp.n_float_data = 2;
	tp.float_data = fd;
	write_proto(p, &tp);
	expect_read_error(p, "float_data has 2 values, its shape needs 3");
	tp.n_float_data = 0;
	tp.data_type = 8;	/* STRING: string_data only, one per element */
	write_proto(p, &tp);
	expect_read_error(p, "string_data has 0 values, its shape needs 3");
	tp.has_raw_data = 1;
	write_proto(p, &tp);
	expect_read_error(p, "a string tensor must keep its strings in string_data");
	tp.has_raw_data = 0;
	tp.data_type = 14;	/* COMPLEX64 */
	write_proto(p, &tp);
	expect_read_error(p, "element type complex64 (14) is not supported");
	tp.data_type = 10;	/* FLOAT16: its bit patterns go in int32_data */
	write_proto(p, &tp);
	expect_read_error(p, "int32_data has 0 values, its shape needs 3");
	tp.data_type = 1;
	dims[0] = -1;
	write_proto(p, &tp);
	expect_read_error(p, "dimension 0 is -1, outside 0..2147483648");
	dims[0] = 65536;
	dims[1] = 65536;
	tp.n_dims = 2;
	write_proto(p, &tp);
	expect_read_error(p, "has more than 2147483648 elements");
	dims[0] = 3;
	dims[1] = 1;
	tp.n_dims = 9;
	write_proto(p, &tp);
	expect_read_error(p, "rank 9 is more than 8");
}

static void test_pb_external_data(void)
{
	Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
	Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto off = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto len = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto *entries[3] = { &loc, &off, &len };
	int64_t dims[1] = { 3 };
	float vals[5] = { 9, 9, 1.25f, -2, 3 };	/* the tensor starts at byte 8 */
	struct host_tensor r;
	char *err = NULL;
	const char *p = tmp_path("ext.pb");

	write_file(tmp_path("weights.bin"), vals, sizeof(vals));
	tp.n_dims = 1;
	tp.dims = dims;
	tp.has_data_type = 1;
	tp.data_type = 1;
	tp.has_data_location = 1;
	tp.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	tp.n_external_data = 3;
	tp.external_data = entries;
	loc.key = "location";
	loc.value = "weights.bin";
	off.key = "offset";
	off.value = "8";
	len.key = "length";
	len.value = "12";
	write_proto(p, &tp);
	ASSERT(0, host_tensor_read(p, &r, &err));
	ASSERT(DTYPE_F32, r.dtype);
	ASSERT(12, r.bytes);
	ASSERT(0, memcmp(r.data, vals + 2, 12));
	host_tensor_free(&r);

	len.value = "16";
	write_proto(p, &tp);
	expect_read_error(p, "external data length 16 does not match the 12 bytes of its shape");
	tp.n_external_data = 2;	/* no length: read what the shape needs */
	off.value = "12";
	write_proto(p, &tp);
	expect_read_error(p, "external data 'weights.bin' is truncated (8 of 12 bytes)");
	off.value = "-4";
	write_proto(p, &tp);
	expect_read_error(p, "external data offset -4 is negative");
	off.value = "0";
	loc.value = "/etc/passwd";
	write_proto(p, &tp);
	expect_read_error(p, "external data location '/etc/passwd' must be a relative path "
			  "inside the model's directory");
	loc.value = "../weights.bin";
	write_proto(p, &tp);
	expect_read_error(p, "external data location '../weights.bin' must be a relative path "
			  "inside the model's directory");
	loc.value = "nope.bin";
	write_proto(p, &tp);
	{
		char want[256];

		snprintf(want, sizeof(want), "cannot open external data 'nope.bin': %s",
			 strerror(ENOENT));
		expect_read_error(p, want);
	}
	loc.value = "";
	write_proto(p, &tp);
	expect_read_error(p, "external data has no location");
}

static void test_write_errors(void)
{
	struct host_tensor t;
	static const int64_t dims[1] = { 2 };
	char *err = NULL, want[4096];
	const char *p = tmp_path("missing-dir/x.npy");

	make_tensor(&t, DTYPE_F32, 1, dims);
	ASSERT(-1, host_tensor_write(p, &t, &err));
	snprintf(want, sizeof(want), "%s: cannot write: %s", p, strerror(ENOENT));
	ASSERT_STR(want, err);
	free(err);
	host_tensor_free(&t);
	ASSERT_TRUE(t.data == NULL);
	ASSERT(0, t.rank);
}

TESTS({ "npy_roundtrip_all_dtypes", test_npy_roundtrip_all_dtypes },
      { "npy_header_layout", test_npy_header_layout },
      { "npy_reads_numpy_files", test_npy_reads_numpy_files },
      { "npy_errors", test_npy_errors },
      { "npy_rejects_overflowing_shape", test_npy_rejects_overflowing_shape },
      { "read_missing_and_garbage", test_read_missing_and_garbage },
      { "pb_roundtrip_all_dtypes", test_pb_roundtrip_all_dtypes },
      { "pb_typed_fields", test_pb_typed_fields },
      { "pb_errors", test_pb_errors },
      { "pb_external_data", test_pb_external_data },
      { "write_errors", test_write_errors })
