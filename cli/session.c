/*
 * session.c - a loaded model and its inputs, shared by run, bench and
 * conformance.
 */
#include "cli.h"
#include "../runtime/rt_float8.h"
#include "../runtime/rt_half.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int set_err(struct session *s, const char *fmt, ...) PRINTF_LIKE(2, 3);

static int set_err(struct session *s, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	free(s->err);
	s->err = sb_detach(&sb);
	return -1;
}

int session_open(struct session *s, const char *so)
{
	char *err = NULL;
	collagec_status st;

	memset(s, 0, sizeof(*s));
	if (model_lib_load(&s->lib, so, &err) < 0) {
		set_err(s, "%s: %s", so, err);
		free(err);
		return -1;
	}
	st = s->lib.open(&s->m);
	if (st != COLLAGEC_OK) {
		/* a backend's init names its failure in collagec_last_error(NULL) */
		const char *why = s->lib.last_error(NULL);
		bool detail = why && *why;

		return set_err(s, "%s: cannot open the model: %s%s%s", so, s->lib.status_string(st),
			       detail ? ": " : "", detail ? why : "");
	}
	s->n_in = s->lib.num_inputs(s->m);
	s->n_out = s->lib.num_outputs(s->m);
	s->in = xcalloc((size_t)s->n_in + 1, sizeof(*s->in));
	return 0;
}

void session_close(struct session *s)
{
	for (int i = 0; i < s->n_in; i++)
		host_tensor_free(&s->in[i]);
	free(s->in);
	for (int i = 0; s->unpacked && i < s->n_out; i++)
		free(s->unpacked[i]);
	free(s->unpacked);
	if (s->m)
		s->lib.close(s->m);
	model_lib_unload(&s->lib);
	cJSON_Delete(s->meta);
	free(s->err);
	memset(s, 0, sizeof(*s));
}

int session_input_index(struct session *s, const char *name)
{
	for (int i = 0; i < s->n_in; i++) {
		collagec_tensor_info info;

		s->lib.input_info(s->m, i, &info);
		if (!strcmp(info.name, name))
			return i;
	}
	return -1;
}

static uint32_t fnv1a32(const char *str)
{
	uint32_t h = 0x811C9DC5u;

	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		h ^= *p;
		h *= 0x01000193u;
	}
	return h;
}

/* mulberry32: a small, well-known 32-bit generator; returns [0, 1). */
static double mulberry32(uint32_t *state)
{
	uint32_t t = (*state += 0x6D2B79F5u);

	t = (t ^ (t >> 15)) * (t | 1u);
	t ^= t + (t ^ (t >> 7)) * (t | 61u);
	return (double)(t ^ (t >> 14)) / 4294967296.0;
}

static bool lookup_shape(const char *const *shapes, int n, const char *name, int64_t *dims,
			 int *rank)
{
	size_t len = strlen(name);

	for (int i = 0; i < n; i++) {
		const char *p;

		if (strncmp(shapes[i], name, len) || shapes[i][len] != '=')
			continue;
		*rank = 0;
		for (p = shapes[i] + len + 1; *p && *rank < MAX_RANK;) {
			char *end;

			dims[(*rank)++] = strtoll(p, &end, 10);
			p = *end == ',' ? end + 1 : end;
			if (end == p && *p)
				break;
		}
		return true;
	}
	return false;
}

static void store(void *data, enum dtype t, int64_t i, double v)
{
	switch (t) {
	case DTYPE_F32: ((float *)data)[i] = (float)v; break;
	case DTYPE_F64: ((double *)data)[i] = v; break;
	case DTYPE_F16: ((uint16_t *)data)[i] = rt_d2h(v); break;
	case DTYPE_BF16: ((uint16_t *)data)[i] = rt_d2bf(v); break;
	case DTYPE_I64: ((int64_t *)data)[i] = (int64_t)v; break;
	case DTYPE_I32: ((int32_t *)data)[i] = (int32_t)v; break;
	case DTYPE_I16: ((int16_t *)data)[i] = (int16_t)v; break;
	case DTYPE_I8: ((int8_t *)data)[i] = (int8_t)v; break;
	case DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
	case DTYPE_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
	case DTYPE_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
	default: ((uint8_t *)data)[i] = (uint8_t)v; break;
	}
}

int session_check_shapes(struct session *s, const char *const *shapes, int n)
{
	for (int k = 0; k < n; k++) {
		const char *eq = strchr(shapes[k], '=');
		bool found = false;

		if (!eq || eq == shapes[k])
			return set_err(s, "--shape '%s': expected NAME=DIMS", shapes[k]);
		for (int i = 0; i < s->n_in && !found; i++) {
			collagec_tensor_info info;

			s->lib.input_info(s->m, i, &info);
			found = strlen(info.name) == (size_t)(eq - shapes[k]) &&
				!strncmp(info.name, shapes[k], (size_t)(eq - shapes[k]));
			for (int d = 0; d < info.rank && !found; d++)
				found = info.dim_names[d] &&
					strlen(info.dim_names[d]) == (size_t)(eq - shapes[k]) &&
					!strncmp(info.dim_names[d], shapes[k], (size_t)(eq - shapes[k]));
		}
		if (!found)
			return set_err(s, "--shape '%s': the model has no input or symbolic dim "
				       "named '%.*s'", shapes[k], (int)(eq - shapes[k]), shapes[k]);
	}
	return 0;
}

int session_random_input(struct session *s, int i, const char *const *shapes, int n_shapes,
			 uint32_t seed)
{
	collagec_tensor_info info;
	struct host_tensor *t = &s->in[i];
	uint32_t state;
	int64_t n;
	int rank;

	s->lib.input_info(s->m, i, &info);
	host_tensor_free(t);
	t->dtype = dtype_from_onnx(info.dtype);
	t->name = xstrdup(info.name);
	if (!lookup_shape(shapes, n_shapes, info.name, t->dims, &rank)) {
		rank = info.rank;
		for (int k = 0; k < rank; k++) {
			int64_t d[MAX_RANK];
			int r;

			t->dims[k] = info.dims[k];
			if (info.dims[k] >= 0)
				continue;
			t->dims[k] = info.dim_names[k] && lookup_shape(shapes, n_shapes,
						info.dim_names[k], d, &r) && r == 1 ? d[0] : 1;
		}
	}
	t->rank = rank;
	n = host_tensor_numel(t);
	t->bytes = (size_t)n * dtype_size(t->dtype);
	t->data = xcalloc(t->bytes + 1, 1);
	state = seed ^ fnv1a32(info.name);
	for (int64_t k = 0; k < n; k++) {
		double r = mulberry32(&state);

		if (t->dtype == DTYPE_BOOL)
			store(t->data, t->dtype, k, floor(r * 2));
		else if (dtype_is_int(t->dtype))
			store(t->data, t->dtype, k, floor(r * 100));
		else
			store(t->data, t->dtype, k, -1 + r * 2);
	}
	return 0;
}

/*
 * NumPy has no bfloat16, so files that ONNX's own tools wrote before 1.14
 * (the backend test data among them) hold bfloat16 tensors as uint16 bit
 * patterns: such a file is taken for the bfloat16 the model wants.
 */
static bool bf16_as_uint16(enum dtype file, enum dtype model)
{
	return file == DTYPE_U16 && model == DTYPE_BF16;
}

int session_file_input(struct session *s, int i, const char *path)
{
	collagec_tensor_info info;
	char *err = NULL;

	host_tensor_free(&s->in[i]);
	if (host_tensor_read(path, &s->in[i], &err) < 0) {
		set_err(s, "%s", err);
		free(err);
		return -1;
	}
	s->lib.input_info(s->m, i, &info);
	if (bf16_as_uint16(s->in[i].dtype, dtype_from_onnx(info.dtype)))
		s->in[i].dtype = DTYPE_BF16;
	if (dtype_to_onnx(s->in[i].dtype) != info.dtype)
		return set_err(s, "%s: input '%s' is %s, the model wants %s", path, info.name,
			       dtype_name(s->in[i].dtype), dtype_name(dtype_from_onnx(info.dtype)));
	return 0;
}

int session_tensor_input(struct session *s, int i, struct host_tensor *t)
{
	collagec_tensor_info info;

	host_tensor_free(&s->in[i]);
	s->in[i] = *t;
	memset(t, 0, sizeof(*t));
	s->lib.input_info(s->m, i, &info);
	if (bf16_as_uint16(s->in[i].dtype, dtype_from_onnx(info.dtype)))
		s->in[i].dtype = DTYPE_BF16;
	if (dtype_to_onnx(s->in[i].dtype) != info.dtype)
		return set_err(s, "input '%s' is %s, the model wants %s", info.name,
			       dtype_name(s->in[i].dtype), dtype_name(dtype_from_onnx(info.dtype)));
	return 0;
}

int session_run(struct session *s)
{
	collagec_status st;

	for (int i = 0; i < s->n_in; i++) {
		const struct host_tensor *t = &s->in[i];
		void *packed = NULL;

		/* host tensors hold sub-byte types one a byte, the C API packed */
		if (dtype_is_subbyte(t->dtype)) {
			packed = xcalloc((size_t)host_tensor_numel(t) + 1, 1);
			rt_subbyte_pack(dtype_to_onnx(t->dtype), t->data, packed,
					host_tensor_numel(t));
		}
		st = s->lib.set_input_typed(s->m, i, dtype_to_onnx(t->dtype),
					    packed ? packed : t->data, t->dims, t->rank);
		free(packed);
		if (st != COLLAGEC_OK)
			return set_err(s, "input %d: %s: %s", i, s->lib.status_string(st),
				       s->lib.last_error(s->m));
	}
	st = s->lib.run(s->m);
	if (st != COLLAGEC_OK)
		return set_err(s, "run: %s: %s", s->lib.status_string(st), s->lib.last_error(s->m));
	return 0;
}

/* t (zeroed) names the model's tensor at data, output `info`'s, dims as given. */
static void borrow(struct host_tensor *t, const collagec_tensor_info *info, const void *data,
		   const int64_t *dims, int rank)
{
	t->name = (char *)info->name;
	t->dtype = dtype_from_onnx(info->dtype);
	t->rank = rank;
	memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
	t->data = (void *)data;
	t->bytes = (size_t)host_tensor_numel(t) * dtype_size(t->dtype);
}

int session_output(struct session *s, int i, struct host_tensor *t)
{
	collagec_tensor_info info;
	const void *data;
	const int64_t *dims;
	int rank;

	memset(t, 0, sizeof(*t));
	if (s->lib.get_output(s->m, i, &data, &dims, &rank) != COLLAGEC_OK)
		return set_err(s, "output %d: %s", i, s->lib.last_error(s->m));
	s->lib.output_info(s->m, i, &info);
	borrow(t, &info, data, dims, rank);
	if (dtype_is_subbyte(t->dtype)) {
		/* packed by the C API; the session's own copy, one a byte */
		if (!s->unpacked)
			s->unpacked = xcalloc((size_t)s->n_out + 1, sizeof(*s->unpacked));
		free(s->unpacked[i]);
		s->unpacked[i] = xmalloc(t->bytes + 1);
		rt_subbyte_unpack(info.dtype, data, s->unpacked[i], host_tensor_numel(t));
		t->data = s->unpacked[i];
	}
	return 0;
}

int session_output_elements(struct session *s, int i, struct host_tensor **t, int64_t *n)
{
	collagec_tensor_info info;

	*t = NULL;
	if (s->lib.get_sequence_length(s->m, i, n) != COLLAGEC_OK)
		return set_err(s, "output %d: %s", i, s->lib.last_error(s->m));
	s->lib.output_info(s->m, i, &info);
	*t = xmalloc(sizeof(**t) * (size_t)(*n > 0 ? *n : 1));
	for (int64_t k = 0; k < *n; k++) {
		struct host_tensor *e = &(*t)[k];
		const void *data;
		const int64_t *dims;
		int rank;

		memset(e, 0, sizeof(*e));
		if (s->lib.get_sequence_element(s->m, i, k, &data, &dims, &rank) != COLLAGEC_OK) {
			free(*t);
			*t = NULL;
			return set_err(s, "output %d: %s", i, s->lib.last_error(s->m));
		}
		borrow(e, &info, data, dims, rank);
	}
	return 0;
}

const cJSON *session_partitions(struct session *s)
{
	if (!s->meta)
		s->meta = cJSON_Parse(s->lib.metadata());
	return cJSON_GetObjectItemCaseSensitive(s->meta, "partitions");
}

const cJSON *session_partition(struct session *s, int id)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, session_partitions(s)) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "id");

		if (cJSON_IsNumber(pid) && pid->valueint == id)
			return p;
	}
	return NULL;
}

void json_nodes_text(const cJSON *nodes, struct strbuf *sb)
{
	const cJSON *n;
	int i = 0;

	cJSON_ArrayForEach(n, nodes) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "name"));
		const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "op"));

		sb_printf(sb, "%s%s(%s)", i++ ? " " : "", name ? name : "?", op ? op : "?");
	}
}

void session_kernel_nodes(struct session *s, int k, struct strbuf *sb)
{
	const cJSON *p;
	int i = 0;

	/* kernels are numbered through the partitions, in metadata order */
	cJSON_ArrayForEach(p, session_partitions(s)) {
		const cJSON *kn;

		cJSON_ArrayForEach(kn, cJSON_GetObjectItemCaseSensitive(p, "kernels")) {
			const cJSON *nodes;

			if (i++ != k)
				continue;
			nodes = cJSON_GetObjectItemCaseSensitive(kn, "onnx_nodes");
			if (!cJSON_GetArraySize(nodes))
				nodes = cJSON_GetObjectItemCaseSensitive(p, "onnx_nodes");
			json_nodes_text(nodes, sb);
			return;
		}
	}
}

static double load(const void *p, enum dtype t, int64_t i)
{
	switch (t) {
	case DTYPE_F32: return ((const float *)p)[i];
	case DTYPE_F64: return ((const double *)p)[i];
	case DTYPE_F16: return rt_h2f(((const uint16_t *)p)[i]);
	case DTYPE_BF16: return rt_bf2f(((const uint16_t *)p)[i]);
	case DTYPE_I64: return (double)((const int64_t *)p)[i];
	case DTYPE_I32: return ((const int32_t *)p)[i];
	case DTYPE_I16: return ((const int16_t *)p)[i];
	case DTYPE_I8: return ((const int8_t *)p)[i];
	case DTYPE_U16: return ((const uint16_t *)p)[i];
	case DTYPE_U32: return ((const uint32_t *)p)[i];
	case DTYPE_U64: return (double)((const uint64_t *)p)[i];
	default: return ((const uint8_t *)p)[i];
	}
}

int tensor_compare(const struct host_tensor *got, const struct host_tensor *want, double rtol,
		   double atol, struct strbuf *why)
{
	int64_t n = host_tensor_numel(want), bad = 0, first = -1;
	double worst = 0;
	struct host_tensor as_bf16;
	bool exact;

	if (bf16_as_uint16(want->dtype, got->dtype)) {
		as_bf16 = *want;	/* compared as the bfloat16 values they encode */
		as_bf16.dtype = DTYPE_BF16;
		want = &as_bf16;
	}
	exact = !dtype_is_float(want->dtype);
	if (got->dtype != want->dtype) {
		sb_printf(why, "dtype %s, expected %s", dtype_name(got->dtype),
			  dtype_name(want->dtype));
		return -1;
	}
	if (got->rank != want->rank ||
	    memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)want->rank)) {
		sb_puts(why, "shape [");
		for (int i = 0; i < got->rank; i++)
			sb_printf(why, "%s%lld", i ? "," : "", (long long)got->dims[i]);
		sb_puts(why, "], expected [");
		for (int i = 0; i < want->rank; i++)
			sb_printf(why, "%s%lld", i ? "," : "", (long long)want->dims[i]);
		sb_puts(why, "]");
		return -1;
	}
	if (dtype_is_string(want->dtype)) {
		const char *const *g = got->data, *const *w = want->data;

		for (int64_t i = 0; i < n; i++)
			if (strcmp(g[i] ? g[i] : "", w[i] ? w[i] : "")) {
				if (first < 0)
					first = i;
				bad++;
			}
		if (!bad)
			return 0;
		sb_printf(why, "%lld of %lld strings differ; first at %lld: got \"%.60s\", "
			  "expected \"%.60s\"", (long long)bad, (long long)n, (long long)first,
			  g[first] ? g[first] : "", w[first] ? w[first] : "");
		return -1;
	}
	if (exact) {
		size_t es = dtype_size(want->dtype);

		for (int64_t i = 0; i < n; i++)
			if (memcmp((const char *)got->data + i * (int64_t)es,
				   (const char *)want->data + i * (int64_t)es, es)) {
				if (first < 0)
					first = i;
				bad++;
			}
	} else {
		for (int64_t i = 0; i < n; i++) {
			double g = load(got->data, got->dtype, i), w = load(want->data, want->dtype, i);
			double d = fabs(g - w);

			if (isnan(g) && isnan(w))
				continue;
			if (isinf(w) && g == w)
				continue;
			if (!(d <= atol + rtol * fabs(w))) {
				if (first < 0)
					first = i;
				bad++;
				if (!(d <= worst))
					worst = d;
			}
		}
	}
	if (!bad)
		return 0;
	sb_printf(why, "%lld of %lld values differ; first at %lld: got %.9g, expected %.9g",
		  (long long)bad, (long long)n, (long long)first,
		  load(got->data, got->dtype, first), load(want->data, want->dtype, first));
	if (!exact)
		sb_printf(why, " (largest difference %.3g)", worst);
	return -1;
}
