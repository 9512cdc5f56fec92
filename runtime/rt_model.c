/*
 * rt_model.c - the collagec.h API over the tables of rt_model.h. Compiled
 * into every model (#included at the end of the generated model.c).
 */

#define RT_API __attribute__((visibility("default")))

struct collagec_model {
	unsigned char *arena;			/* workspace */
	int64_t arena_size;
	const void *in_data[RT_N_INPUTS + 1];
	int64_t in_dims[RT_N_INPUTS + 1][RT_MAX_RANK];
	int in_rank[RT_N_INPUTS + 1];
	void *out_data[RT_N_OUTPUTS + 1];
	int64_t out_dims[RT_N_OUTPUTS + 1][RT_MAX_RANK];
	int64_t out_cap[RT_N_OUTPUTS + 1];	/* bytes allocated */
	void *dyn[RT_N_VALUES + 1];		/* RT_DYN values' blocks */
	int64_t dyn_cap[RT_N_VALUES + 1];	/* their bytes */
	int64_t syms[RT_N_SYMS + 1];
	int64_t planned[RT_N_SYMS + 1];		/* syms the arena plan is for */
	int have_plan;
	int64_t offsets[RT_N_VALUES + 1];
	int64_t sizes[RT_N_VALUES + 1];
	void *args[RT_MAX_ARGS + 1];
	int threads;
	int profiling;				/* collagec_set_profiling */
	int has_run;				/* a run completed: ran[] holds its variants */
	int profiled;				/* that run was timed: time_ns[] holds its times */
	int ran[RT_N_STEPS + 1];		/* per step: the variant its kernel took */
	int64_t time_ns[RT_N_STEPS + 1];	/* per step: its time */
	struct rt_strpool strpool;		/* the strings of string tensors (rt_string.h) */
	const char **strconst[RT_N_VALUES + 1];	/* string constants' pointers (into rt_weights) */
	char err[256];
};

_Thread_local struct rt_strpool *rt_strpool_cur __attribute__((visibility("hidden")));

/*
 * The fresh keys of unseeded random ops (rt_random.h): a counter every
 * execution of one takes a number from, and a base that makes the numbers
 * of this process unlike another's. Process-wide and atomic rather than per
 * handle, so that kernels need no handle and handles on several threads
 * never share a key.
 */
_Atomic uint64_t rt_rand_counter __attribute__((visibility("hidden")));
_Atomic uint64_t rt_rand_base __attribute__((visibility("hidden")));

#include <stdatomic.h>
#include <unistd.h>

/* Sets rt_rand_base once per process, from the clock and the process id. */
static void rand_init(void)
{
	struct timespec ts;
	uint64_t zero = 0, seed;

	if (rt_rand_base)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = rt_rand_mix((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
	       rt_rand_mix((uint64_t)getpid() << 1 | 1);
	/* another thread may win: its base is as good */
	atomic_compare_exchange_strong(&rt_rand_base, &zero, seed | 1);
}

/* Empties the pool for a run: its chunks stay for reuse. */
static void strpool_reset(struct rt_strpool *p)
{
	for (struct rt_strchunk *c = p->head; c; c = c->next)
		c->used = 0;
	p->failed = 0;
}

static void strpool_free(struct rt_strpool *p)
{
	while (p->head) {
		struct rt_strchunk *c = p->head;

		p->head = c->next;
		free(c);
	}
}

RT_API __attribute__((weak)) void collagec_rt_abort(const char *msg)
{
	fprintf(stderr, "collagec runtime: %s\n", msg);
	abort();
}

RT_API int collagec_abi_version(void)
{
	return COLLAGEC_ABI_VERSION;
}

RT_API const char *collagec_metadata(void)
{
	return rt_metadata_json;
}

RT_API const char *collagec_status_string(collagec_status s)
{
	static const char *const msg[COLLAGEC_E_COUNT] = {
		[COLLAGEC_OK] = "success",
		[COLLAGEC_E_ARG] = "invalid argument",
		[COLLAGEC_E_SHAPE] = "input shape does not fit the model",
		[COLLAGEC_E_ALLOC] = "out of memory",
		[COLLAGEC_E_STATE] = "not every input was set",
		[COLLAGEC_E_RUNTIME] = "kernel failure",
	};
	return (unsigned)s < COLLAGEC_E_COUNT ? msg[s] : "unknown status";
}

static collagec_status fail(collagec_model *m, collagec_status s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static collagec_status fail(collagec_model *m, collagec_status s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return s;
}

/* Why the last collagec_open failed (reported by collagec_last_error(NULL)). */
static char rt_open_err[256];

RT_API const char *collagec_last_error(const collagec_model *m)
{
	return m ? m->err : rt_open_err;
}

/* What an overflowing dim_eval or value_bytes returns. */
#define RT_OVERFLOW INT64_MIN

/* c * syms..., or RT_OVERFLOW. */
static int64_t dim_eval(const struct rt_dim *d, const int64_t *syms)
{
	int64_t v = d->c;

	for (int i = 0; i < d->n; i++)
		if (__builtin_mul_overflow(v, syms[d->sym[i]], &v) || v == RT_OVERFLOW)
			return RT_OVERFLOW;
	return v;
}

/*
 * The bytes of v, or RT_OVERFLOW past RT_MAX_BYTES: small enough that the
 * planner's sums of sizes, offsets and alignment cannot overflow either.
 */
#define RT_MAX_BYTES (INT64_MAX / 4 / (RT_N_VALUES + 1))

static int64_t value_bytes(const struct rt_value *v, const int64_t *syms)
{
	int64_t n = v->esize;
	int zero = 0, over = 0;

	/* a zero dim makes it empty, however large the others are */
	for (int i = 0; i < v->rank; i++) {
		int64_t d = dim_eval(&v->dims[i], syms);

		if (d == RT_OVERFLOW || d < 0)
			return RT_OVERFLOW;
		if (d == 0)
			zero = 1;
		else if (!over)
			over = __builtin_mul_overflow(n, d, &n) || n > RT_MAX_BYTES;
	}
	return zero ? 0 : over ? RT_OVERFLOW : n;
}

static void *xaligned(int64_t bytes)
{
	size_t n = (size_t)((bytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN);

	return aligned_alloc(RT_ALIGN, n ? n : RT_ALIGN);
}

/*
 * The pointer arrays of the string constants: the blob holds each one's
 * strings after an int64 offset per element (core/emit/plan.c).
 */
static collagec_status string_constants(collagec_model *m)
{
	for (int i = 0; i < RT_N_VALUES; i++) {
		const struct rt_value *v = &rt_values[i];
		const unsigned char *base = rt_weights + v->offset;
		int64_t n = 1;

		if (v->kind != RT_CONST || v->dtype != COLLAGEC_STRING)
			continue;
		for (int k = 0; k < v->rank; k++)
			n *= v->dims[k].c;
		m->strconst[i] = malloc(sizeof(char *) * (size_t)(n ? n : 1));
		if (!m->strconst[i])
			return COLLAGEC_E_ALLOC;
		for (int64_t e = 0; e < n; e++) {
			int64_t at;

			memcpy(&at, base + 8 * e, sizeof(at));
			m->strconst[i][e] = (const char *)base + at;
		}
	}
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_open(collagec_model **out)
{
	collagec_model *m;

	if (!out)
		return COLLAGEC_E_ARG;
	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return COLLAGEC_E_ALLOC;
	m->threads = 1;
	rand_init();
	for (int i = 0; rt_inits[i]; i++)
		if (rt_inits[i](rt_open_err, sizeof(rt_open_err)) != 0) {
			/* undo the inits that succeeded, and only those */
			while (--i >= 0)
				if (rt_finis[i])
					rt_finis[i]();
			free(m);
			return COLLAGEC_E_RUNTIME;
		}
	if (string_constants(m) != COLLAGEC_OK) {
		collagec_close(m);
		return COLLAGEC_E_ALLOC;
	}
	if (RT_STATIC_ARENA >= 0) {
		m->arena_size = RT_STATIC_ARENA;
		m->arena = xaligned(RT_STATIC_ARENA);
		if (!m->arena) {
			free(m);
			return COLLAGEC_E_ALLOC;
		}
		for (int i = 0; i < RT_N_VALUES; i++)
			m->offsets[i] = rt_values[i].offset;
		m->have_plan = 1;
	}
	*out = m;
	return COLLAGEC_OK;
}

RT_API void collagec_close(collagec_model *m)
{
	if (!m)
		return;
	for (int i = 0; i < RT_N_OUTPUTS; i++)
		free(m->out_data[i]);
	for (int i = 0; i < RT_N_VALUES; i++)
		free(m->dyn[i]);
	strpool_free(&m->strpool);
	for (int i = 0; i < RT_N_VALUES; i++)
		free((void *)m->strconst[i]);
	free(m->arena);
	free(m);
	for (int i = 0; rt_inits[i]; i++)
		if (rt_finis[i])
			rt_finis[i]();
}

RT_API int collagec_num_inputs(const collagec_model *m)
{
	(void)m;
	return RT_N_INPUTS;
}

RT_API int collagec_num_outputs(const collagec_model *m)
{
	(void)m;
	return RT_N_OUTPUTS;
}

static void fill_info(const struct rt_value *v, collagec_tensor_info *info,
		      const int64_t *dims)
{
	info->name = v->name;
	info->dtype = v->dtype;
	info->rank = v->rank;
	info->dims = dims;
	info->dim_names = v->dim_names;
	info->dynamic = v->late;
}

RT_API collagec_status collagec_input_info(const collagec_model *m, int i,
					   collagec_tensor_info *info)
{
	(void)m;
	if (i < 0 || i >= RT_N_INPUTS || !info)
		return COLLAGEC_E_ARG;
	fill_info(&rt_values[rt_inputs[i]], info, rt_info_dims[rt_inputs[i]]);
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_output_info(const collagec_model *m, int i,
					    collagec_tensor_info *info)
{
	(void)m;
	if (i < 0 || i >= RT_N_OUTPUTS || !info)
		return COLLAGEC_E_ARG;
	fill_info(&rt_values[rt_outputs[i]], info, rt_info_dims[rt_outputs[i]]);
	return COLLAGEC_OK;
}

static collagec_status set_input(collagec_model *m, int i, const void *data,
				 const int64_t *dims, int rank)
{
	const struct rt_value *v;
	int64_t bytes;
	int zero = 0, over = 0;

	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= RT_N_INPUTS)
		return fail(m, COLLAGEC_E_ARG, "input index %d out of range (the model has %d)",
			    i, RT_N_INPUTS);
	v = &rt_values[rt_inputs[i]];
	m->in_data[i] = NULL;	/* a failed call leaves the input unset */
	if (!data)
		return fail(m, COLLAGEC_E_ARG, "input '%s': NULL data", v->name);
	if (rank < 0 || rank > RT_MAX_RANK)
		return fail(m, COLLAGEC_E_ARG, "input '%s': rank %d outside 0..%d", v->name,
			    rank, RT_MAX_RANK);
	if (rank && !dims)
		return fail(m, COLLAGEC_E_ARG, "input '%s': NULL dims for rank %d", v->name,
			    rank);
	if (rank != v->rank)
		return fail(m, COLLAGEC_E_SHAPE, "input '%s': rank %d, expected %d", v->name,
			    rank, v->rank);
	bytes = v->esize;
	for (int k = 0; k < rank; k++) {
		if (dims[k] < 0)
			return fail(m, COLLAGEC_E_SHAPE, "input '%s': dimension %d is negative "
				    "(%lld)", v->name, k, (long long)dims[k]);
		if (dims[k] == 0)
			zero = 1;
		else if (!over)
			over = __builtin_mul_overflow(bytes, dims[k], &bytes);
	}
	/* (a zero dim makes it empty, however large the others are) */
	if (over && !zero)
		return fail(m, COLLAGEC_E_SHAPE, "input '%s': the dimensions' product "
			    "overflows", v->name);
	memcpy(m->in_dims[i], dims, (size_t)rank * sizeof(*dims));
	m->in_rank[i] = rank;
	m->in_data[i] = data;
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_set_input(collagec_model *m, int i, const void *data,
					  const int64_t *dims, int rank)
{
	return set_input(m, i, data, dims, rank);
}

RT_API collagec_status collagec_set_input_typed(collagec_model *m, int i, int dtype,
						const void *data, const int64_t *dims, int rank)
{
	if (m && i >= 0 && i < RT_N_INPUTS && dtype != rt_values[rt_inputs[i]].dtype) {
		m->in_data[i] = NULL;
		return fail(m, COLLAGEC_E_ARG, "input '%s': dtype %d, expected %d",
			    rt_values[rt_inputs[i]].name, dtype, rt_values[rt_inputs[i]].dtype);
	}
	return set_input(m, i, data, dims, rank);
}

RT_API collagec_status collagec_set_threads(collagec_model *m, int n)
{
	if (!m || n < 1)
		return COLLAGEC_E_ARG;
	m->threads = n;
	return COLLAGEC_OK;
}

/* Whether every symbol of d is bound (late symbols are -1 until their step). */
static int dim_bound(const struct rt_dim *d, const int64_t *syms)
{
	for (int i = 0; i < d->n; i++)
		if (syms[d->sym[i]] < 0)
			return 0;
	return 1;
}

/* Computes the derived symbols whose operands are bound; the others stay -1. */
static collagec_status derive(collagec_model *m)
{
	for (const struct rt_derived *d = rt_derived; d->sym >= 0; d++) {
		int64_t a, b, v;

		if (!dim_bound(&d->a, m->syms) || !dim_bound(&d->b, m->syms)) {
			m->syms[d->sym] = -1;
			continue;
		}
		a = dim_eval(&d->a, m->syms);
		b = dim_eval(&d->b, m->syms);
		if (a == RT_OVERFLOW || b == RT_OVERFLOW ||
		    (d->op == 0 && __builtin_add_overflow(a, b, &v))) {
			if (d->used)
				return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' overflows for "
					    "these inputs", rt_sym_names[d->sym]);
			m->syms[d->sym] = 0;	/* no shape uses it */
			continue;
		}
		if ((d->op == 1 || d->op == 2) && b <= 0) {
			if (d->used)
				return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' divides by %lld",
					    rt_sym_names[d->sym], (long long)b);
			b = 1;	/* no shape uses it: any value will do */
		}
		v = d->op == 0 ? a + b : d->op == 1 ? a / b : d->op == 2 ? a % b
			: d->op == 3 ? (a < b ? a : b) : (a > b ? a : b);
		if (v < 0 && d->used)
			return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' is %lld for these inputs",
				    rt_sym_names[d->sym], (long long)v);
		m->syms[d->sym] = v < 0 ? 0 : v;
	}
	return COLLAGEC_OK;
}

/* Tests what compiling assumed, as far as the symbols are bound yet. */
static collagec_status check(collagec_model *m)
{
	for (const struct rt_check *c = rt_checks; c->text; c++) {
		int64_t a, b;

		if (!dim_bound(&c->a, m->syms) || !dim_bound(&c->b, m->syms))
			continue;	/* tested again once a shape function bound them */
		a = dim_eval(&c->a, m->syms);
		b = dim_eval(&c->b, m->syms);
		if (a == RT_OVERFLOW || b == RT_OVERFLOW)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s' needs %s, which overflows for "
				    "these inputs", c->node, c->text);
		if (a > b)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s' needs %s, the inputs give "
				    "%lld > %lld", c->node, c->text, (long long)a, (long long)b);
	}
	return COLLAGEC_OK;
}

/* Binds the symbols from the input shapes and checks every input dim. */
static collagec_status bind_syms(collagec_model *m)
{
	collagec_status s;

	for (int k = 0; k < RT_N_SYMS; k++)
		m->syms[k] = -1;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < RT_N_INPUTS; i++) {
			const struct rt_value *v = &rt_values[rt_inputs[i]];

			if (!m->in_data[i])
				return fail(m, COLLAGEC_E_STATE, "input '%s' was not set", v->name);
			for (int k = 0; k < v->rank; k++) {
				const struct rt_dim *d = &v->dims[k];
				int64_t got = m->in_dims[i][k], want;
				int unbound = 0;

				if (pass == 0 && d->n == 1 && d->c == 1 && m->syms[d->sym[0]] < 0) {
					m->syms[d->sym[0]] = got;
					continue;
				}
				for (int j = 0; j < d->n; j++)
					unbound |= m->syms[d->sym[j]] < 0;
				if (unbound) {
					if (pass == 1)
						return fail(m, COLLAGEC_E_SHAPE, "input '%s': "
							    "dimension %d cannot be bound", v->name, k);
					continue;
				}
				want = dim_eval(d, m->syms);
				if (pass == 1 && want == RT_OVERFLOW)
					return fail(m, COLLAGEC_E_SHAPE, "input '%s': dimension %d "
						    "overflows for these inputs", v->name, k);
				if (pass == 1 && got != want)
					return fail(m, COLLAGEC_E_SHAPE, "input '%s': dimension %d "
						    "is %lld, expected %lld", v->name, k,
						    (long long)got, (long long)want);
			}
		}
	}
	if ((s = derive(m)) != COLLAGEC_OK)
		return s;
	for (int k = 0; k < RT_N_SYMS; k++)
		if (m->syms[k] < 0 && !rt_sym_late[k])
			return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' is not bound by any input",
				    rt_sym_names[k]);
	if ((s = check(m)) != COLLAGEC_OK)
		return s;
	/* every tensor's size must be representable before the plan adds them */
	for (int i = 0; i < RT_N_VALUES; i++)
		if (rt_values[i].kind != RT_CONST && rt_values[i].kind != RT_INPUT &&
		    !rt_values[i].late && value_bytes(&rt_values[i], m->syms) == RT_OVERFLOW)
			return fail(m, COLLAGEC_E_SHAPE, "tensor '%s' is too large for these "
				    "inputs", rt_values[i].name);
	return COLLAGEC_OK;
}

/* (Re)plans the workspace when the symbols changed. */
static collagec_status plan(collagec_model *m)
{
	int64_t sizes[RT_N_VALUES + 1];
	int first[RT_N_VALUES + 1], last[RT_N_VALUES + 1], order[RT_N_VALUES + 1];
	int64_t need;
	int same = m->have_plan;

	for (int s = 0; s < RT_N_SYMS && same; s++)
		same = m->planned[s] == m->syms[s];	/* late ones are -1 here */
	if (same)
		return COLLAGEC_OK;
	for (int i = 0; i < RT_N_VALUES; i++) {
		sizes[i] = rt_values[i].kind == RT_ARENA ? value_bytes(&rt_values[i], m->syms) : 0;
		first[i] = rt_values[i].first;
		last[i] = rt_values[i].last;
	}
	need = rt_plan(RT_N_VALUES, sizes, first, last, m->offsets, order);
	if (need > m->arena_size) {
		free(m->arena);
		m->arena = xaligned(need);
		m->arena_size = m->arena ? need : 0;
		if (!m->arena)
			return fail(m, COLLAGEC_E_ALLOC, "cannot allocate a %lld-byte workspace",
				    (long long)need);
	}
	memcpy(m->planned, m->syms, sizeof(m->syms));
	m->have_plan = 1;
	return COLLAGEC_OK;
}

/* Makes *p hold at least bytes (kept across runs); 0, or -1 with the error set. */
static int grow(collagec_model *m, void **p, int64_t *cap, int64_t bytes,
		const struct rt_value *v)
{
	if (bytes <= *cap && *p)
		return 0;
	free(*p);
	*p = xaligned(bytes);
	*cap = *p ? bytes : 0;
	if (!*p) {
		fail(m, COLLAGEC_E_ALLOC, "cannot allocate tensor '%s' (%lld bytes)", v->name,
		     (long long)bytes);
		return -1;
	}
	return 0;
}

static collagec_status outputs(collagec_model *m)
{
	for (int i = 0; i < RT_N_OUTPUTS; i++) {
		const struct rt_value *v = &rt_values[rt_outputs[i]];

		if (v->late)
			continue;	/* allocated when its producer runs */
		if (grow(m, &m->out_data[i], &m->out_cap[i], value_bytes(v, m->syms), v))
			return COLLAGEC_E_ALLOC;
	}
	return COLLAGEC_OK;
}

/* The outputs' dims, once the run bound every symbol. */
static void output_dims(collagec_model *m)
{
	for (int i = 0; i < RT_N_OUTPUTS; i++) {
		const struct rt_value *v = &rt_values[rt_outputs[i]];

		for (int k = 0; k < v->rank; k++)
			m->out_dims[i][k] = dim_eval(&v->dims[k], m->syms);
	}
}

static void *value_ptr(collagec_model *m, int id)
{
	const struct rt_value *v = &rt_values[id];

	switch (v->kind) {
	case RT_CONST: return v->dtype == COLLAGEC_STRING ? (void *)m->strconst[id]
				: (void *)(rt_weights + v->offset);
	case RT_INPUT: return (void *)m->in_data[v->io];
	case RT_OUTPUT: return m->out_data[v->io];
	case RT_ARENA: return m->arena + m->offsets[id];
	case RT_DYN: return m->dyn[id];
	default: collagec_rt_abort("corrupt value table");
	}
	return NULL;
}

#include "rt_shape.c"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs step i between two clock reads (profiling only: no clock otherwise). */
static void run_timed(collagec_model *m, const struct rt_step *st, int i)
{
	int64_t t0 = now_ns();

	st->fn(m->args, m->syms, m->threads);
	m->time_ns[i] = now_ns() - t0;
}

/* The steps of a run, each after its shape functions. */
static collagec_status run_steps(collagec_model *m)
{
	collagec_status s;

	for (int i = 0, sh = 0, late = 0; i < RT_N_STEPS; i++) {
		const struct rt_step *st = &rt_steps[i];

		if (RT_N_SHAPES && (s = run_shapes(m, i, &sh, &late)) != COLLAGEC_OK)
			return s;
		for (int a = 0; a < st->nargs; a++)
			m->args[a] = value_ptr(m, rt_args[st->arg0 + a]);
		/* the dispatcher inside fn makes the same test on the same syms */
		if (st->pick)
			m->ran[i] = st->pick(m->syms);
		if (m->profiling)
			run_timed(m, st, i);
		else
			st->fn(m->args, m->syms, m->threads);
	}
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_run(collagec_model *m)
{
	collagec_status s;

	if (!m)
		return COLLAGEC_E_ARG;
	m->err[0] = 0;
	if ((s = bind_syms(m)) != COLLAGEC_OK || (s = plan(m)) != COLLAGEC_OK ||
	    (s = outputs(m)) != COLLAGEC_OK)
		return s;
	strpool_reset(&m->strpool);
	rt_strpool_cur = &m->strpool;
	s = run_steps(m);
	rt_strpool_cur = NULL;
	if (s != COLLAGEC_OK)
		return s;
	if (m->strpool.failed)
		return fail(m, COLLAGEC_E_ALLOC, "out of memory for the strings of string tensors");
	output_dims(m);
	m->has_run = 1;
	m->profiled = m->profiling;
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_set_profiling(collagec_model *m, int on)
{
	if (!m)
		return COLLAGEC_E_ARG;
	m->profiling = on != 0;
	return COLLAGEC_OK;
}

RT_API int collagec_num_kernels(const collagec_model *m)
{
	(void)m;
	return RT_N_STEPS;
}

RT_API collagec_status collagec_get_kernel_info(const collagec_model *m, int k,
						collagec_kernel_info *info)
{
	const struct rt_step *st;
	const struct rt_variant *v;

	if (!m || !info)
		return COLLAGEC_E_ARG;
	if (k < 0 || k >= RT_N_STEPS)
		return fail((collagec_model *)m, COLLAGEC_E_ARG, "kernel index %d out of range "
			    "(the model has %d)", k, RT_N_STEPS);
	st = &rt_steps[k];
	v = m->has_run ? &rt_variants[st->var0 + m->ran[k]] : NULL;
	info->name = st->name;
	info->partition = st->part;
	info->n_variants = st->nvars;
	info->variant = v ? m->ran[k] : -1;
	info->implementation = v ? v->impl : NULL;
	info->condition = v ? v->cond : NULL;
	info->time_ns = v && m->profiled ? m->time_ns[k] : -1;
	return COLLAGEC_OK;
}

RT_API collagec_status collagec_get_output(collagec_model *m, int i, const void **data,
					   const int64_t **dims, int *rank)
{
	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= RT_N_OUTPUTS)
		return fail(m, COLLAGEC_E_ARG, "output index %d out of range (the model has %d)",
			    i, RT_N_OUTPUTS);
	if (!m->out_data[i])
		return fail(m, COLLAGEC_E_STATE, "the model has not run");
	if (data)
		*data = m->out_data[i];
	if (dims)
		*dims = m->out_dims[i];
	if (rank)
		*rank = rt_values[rt_outputs[i]].rank;
	return COLLAGEC_OK;
}
