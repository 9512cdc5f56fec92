/*
 * rt_model.c - the collagec.h API over the tables of rt_model.h, as the
 * hidden rt_api_NAME functions that model.c's API calls. It does not depend
 * on the model: compiled once (runtime/rt_model.h's rt.c) and linked into
 * every model, it reads the model through rt_desc alone.
 */

/*
 * A handle. Its per-model arrays lie in the one block collagec_open
 * allocates for it, after the struct (handle_carve).
 */
struct collagec_model {
	unsigned char *arena;			/* workspace */
	int64_t arena_size;
	const void **in_data;			/* per input (+ 1, as all below) */
	int64_t (*in_dims)[RT_MAX_RANK];
	int *in_rank;
	void **in_own;				/* per sub-byte input: its elements
						   unpacked, one a byte (dtype.def) */
	int64_t *in_cap;			/* their bytes */
	void **out_data;			/* per output: where this run writes it */
	int64_t (*out_dims)[RT_MAX_RANK];
	void **out_own;				/* per output: the model's block */
	int64_t *out_cap;			/* its bytes */
	void **out_bound;			/* per output: the caller's block
						   (collagec_bind_output), or NULL */
	int64_t *out_bcap;			/* its bytes */
	int64_t *out_ccap;			/* per output: the capacity of the
						   cache bound to it (collagec_bind_cache),
						   or 0 */
	void **dyn;				/* per value: RT_DYN values' blocks */
	int64_t *dyn_cap;			/* their bytes */
	int64_t *syms;				/* per symbol */
	int64_t *planned;			/* syms the arena plan is for */
	int have_plan;
	int64_t *offsets;			/* per value */
	int64_t *plan_sizes;			/* per value: plan()'s scratch */
	int *plan_first, *plan_last, *plan_order;
	void **args;				/* per argument of a step */
	int threads;
	int counted;				/* in rt_handles */
	int profiling;				/* collagec_set_profiling */
	int has_run;				/* a run completed: ran[] holds its variants */
	int profiled;				/* that run was timed: time_ns[] holds its times */
	int *ran;				/* per step: the variant its kernel took */
	int64_t *time_ns;			/* per step: its time */
	struct rt_strpool strpool;		/* the strings of string tensors (rt_string.h) */
	const char ***strconst;			/* per value: string constants' pointers
						   (into rt_weights) */
	void **packed;				/* per rt_packs entry: what it made */
	struct rt_loop_state **loops;		/* per run-time loop, once it ran */
	collagec_status loop_status;		/* a loop's kernel or another failed
						   (rt_kernel_fail; message in err) */
	int step;				/* the step running */
	int64_t elem_dims[RT_MAX_RANK];		/* collagec_get_sequence_element's */
	char err[256];
};

/* Whether output i is a sequence of run-time length (1) or an optional's (2). */
static int seq_out(int i)
{
	return rt_desc.seq_out ? rt_desc.seq_out[i] : 0;
}

/* The model running on this thread, for the kernels of run-time loops. */
static _Thread_local collagec_model *rt_cur;

static void loop_free(struct rt_loop_state *st, const struct rt_loop *lp);

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

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt_cores.h"

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

/* What collagec_rt_abort does unless the program replaces it. */
void rt_api_rt_abort(const char *msg)
{
	fprintf(stderr, "collagec runtime: %s\n", msg);
	abort();
}

int rt_api_abi_version(void)
{
	return COLLAGEC_ABI_VERSION;
}

const char *rt_api_metadata(void)
{
	return rt_desc.metadata_json;
}

const char *rt_api_status_string(collagec_status s)
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

const char *rt_api_last_error(const collagec_model *m)
{
	return m ? m->err : rt_open_err;
}

/*
 * The weights: embedded (rt_desc.weights) or, with rt_desc.weights_file,
 * that file mapped read-only by the first open handle and unmapped with
 * the last, shared by the handles between.
 */
static const unsigned char *rt_wbase;
static void *rt_wmap;
static size_t rt_wmap_len;
static int rt_wrefs;
static pthread_mutex_t rt_wlock = PTHREAD_MUTEX_INITIALIZER;

/* rt_desc.weights_file's path: beside this object unless absolute (malloc'd, or NULL). */
static char *weights_path(void)
{
	const char *f = rt_desc.weights_file, *slash;
	Dl_info info;
	char *p;

	if (f[0] == '/' || !dladdr((const void *)&rt_desc, &info) || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/')))
		return strdup(f);
	p = malloc((size_t)(slash - info.dli_fname) + strlen(f) + 2);
	if (p)
		sprintf(p, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, f);
	return p;
}

/* Maps the weights file (a first handle) and checks it is this model's. */
static collagec_status weights_map(void)
{
	unsigned char head[RT_WEIGHTS_HEADER];
	char *path = weights_path();
	uint64_t bytes = 0;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	const char *why = NULL;
	struct stat st;
	void *map;

	if (!path)
		return COLLAGEC_E_ALLOC;
	if (fd < 0)
		why = strerror(errno);
	else if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
		 memcmp(head, RT_WEIGHTS_MAGIC, 16))
		why = "not a collagec weights file";
	for (int i = 0; !why && i < 8; i++)
		bytes |= (uint64_t)head[16 + i] << (8 * i);
	if (!why && bytes != (uint64_t)rt_desc.weights_bytes)
		why = "its size is not this model's";
	else if (!why && (fstat(fd, &st) < 0 ||
			  (uint64_t)st.st_size < RT_WEIGHTS_HEADER + bytes))
		why = "it is truncated";
	else if (!why && rt_desc.weights_sha256 && memcmp(head + 24, rt_desc.weights_sha256, 64))
		why = "it belongs to another compile (its hash differs)";
	if (why) {
		snprintf(rt_open_err, sizeof(rt_open_err), "weights file '%s': %s", path, why);
		free(path);
		if (fd >= 0)
			close(fd);
		return COLLAGEC_E_RUNTIME;
	}
	map = bytes ? mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fd, RT_WEIGHTS_HEADER)
		    : NULL;
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(rt_open_err, sizeof(rt_open_err), "weights file '%s': cannot map: %s",
			 path, strerror(errno));
		free(path);
		return COLLAGEC_E_RUNTIME;
	}
	free(path);
	rt_wmap = map;
	rt_wmap_len = (size_t)bytes;
	rt_wbase = map;
	return COLLAGEC_OK;
}

/* Takes the weights for a handle opening: maps them for the first. */
static collagec_status weights_take(void)
{
	collagec_status s = COLLAGEC_OK;

	if (!rt_desc.weights_file) {
		rt_wbase = rt_desc.weights;
		return COLLAGEC_OK;
	}
	pthread_mutex_lock(&rt_wlock);
	if (rt_wrefs == 0)
		s = weights_map();
	if (s == COLLAGEC_OK)
		rt_wrefs++;
	pthread_mutex_unlock(&rt_wlock);
	return s;
}

/* Gives them back as a handle closes: unmapped with the last. */
/* Open handles: the last one to close stops the thread pool (rt_par.c). */
static _Atomic int rt_handles;

static void rt_par_stop(void);

/* rt_on_last_close's hooks: added at load only (constructors), so unlocked */
static struct rt_close_hook *rt_close_hooks;

void rt_on_last_close(struct rt_close_hook *h)
{
	h->next = rt_close_hooks;
	rt_close_hooks = h;
}

static void weights_give(void)
{
	if (!rt_desc.weights_file)
		return;
	pthread_mutex_lock(&rt_wlock);
	if (--rt_wrefs == 0) {
		if (rt_wmap)
			munmap(rt_wmap, rt_wmap_len);
		rt_wmap = NULL;
		rt_wbase = NULL;
	}
	pthread_mutex_unlock(&rt_wlock);
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
#define RT_MAX_BYTES (INT64_MAX / 4 / (rt_desc.n_values + 1))

static int64_t value_bytes(const struct rt_value *v, const int64_t *syms)
{
	int64_t n = v->esize;
	int zero = 0, over = 0;

	/* a zero dim makes it empty, however large the others are */
	for (int i = 0; i < v->rank; i++) {
		int64_t d = i == 1 && v->store_c ? v->store_c : dim_eval(&v->dims[i], syms);

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
	for (int i = 0; i < rt_desc.n_values; i++) {
		const struct rt_value *v = &rt_desc.values[i];
		const unsigned char *base = rt_wbase + v->offset;
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

/*
 * Carves n elements of size bytes at *off from base (NULL: only counts),
 * keeping 8-byte alignment; the start of them.
 */
static void *carve(unsigned char *base, size_t *off, size_t n, size_t size)
{
	void *p = base ? base + *off : NULL;

	*off += (n * size + 7) / 8 * 8;
	return p;
}

/*
 * Points m's per-model arrays into base, which follows m in its block; with
 * base NULL, only counts. The bytes they take.
 */
static size_t handle_carve(collagec_model *m, unsigned char *base)
{
	size_t off = 0, ni = (size_t)rt_desc.n_inputs + 1, no = (size_t)rt_desc.n_outputs + 1;
	size_t nv = (size_t)rt_desc.n_values + 1, ns = (size_t)rt_desc.n_syms + 1;
	size_t nst = (size_t)rt_desc.n_steps + 1;

	m->in_data = carve(base, &off, ni, sizeof(*m->in_data));
	m->in_dims = carve(base, &off, ni, sizeof(*m->in_dims));
	m->in_rank = carve(base, &off, ni, sizeof(*m->in_rank));
	m->in_own = carve(base, &off, ni, sizeof(*m->in_own));
	m->in_cap = carve(base, &off, ni, sizeof(*m->in_cap));
	m->out_data = carve(base, &off, no, sizeof(*m->out_data));
	m->out_dims = carve(base, &off, no, sizeof(*m->out_dims));
	m->out_own = carve(base, &off, no, sizeof(*m->out_own));
	m->out_cap = carve(base, &off, no, sizeof(*m->out_cap));
	m->out_bound = carve(base, &off, no, sizeof(*m->out_bound));
	m->out_bcap = carve(base, &off, no, sizeof(*m->out_bcap));
	m->out_ccap = carve(base, &off, no, sizeof(*m->out_ccap));
	m->dyn = carve(base, &off, nv, sizeof(*m->dyn));
	m->dyn_cap = carve(base, &off, nv, sizeof(*m->dyn_cap));
	m->syms = carve(base, &off, ns, sizeof(*m->syms));
	m->planned = carve(base, &off, ns, sizeof(*m->planned));
	m->offsets = carve(base, &off, nv, sizeof(*m->offsets));
	m->plan_sizes = carve(base, &off, nv, sizeof(*m->plan_sizes));
	m->plan_first = carve(base, &off, nv, sizeof(*m->plan_first));
	m->plan_last = carve(base, &off, nv, sizeof(*m->plan_last));
	m->plan_order = carve(base, &off, nv, sizeof(*m->plan_order));
	m->args = carve(base, &off, (size_t)rt_desc.max_args + 1, sizeof(*m->args));
	m->ran = carve(base, &off, nst, sizeof(*m->ran));
	m->time_ns = carve(base, &off, nst, sizeof(*m->time_ns));
	m->strconst = carve(base, &off, nv, sizeof(*m->strconst));
	m->loops = carve(base, &off, (size_t)rt_desc.n_loops + 1, sizeof(*m->loops));
	m->packed = carve(base, &off, (size_t)rt_desc.n_packs + 1, sizeof(*m->packed));
	return off;
}

/*
 * Hints that the pages of the source constant v, which packing just read,
 * may go: they are OUT.so's (clean, read again from the file if a kernel
 * that reads v as it is runs), so the handle does not hold the weights
 * twice in memory either. MADV_PAGEOUT never loses data; without it
 * (Linux before 5.4, other systems), nothing.
 */
static void source_pages_out(const struct rt_value *v)
{
#ifdef MADV_PAGEOUT
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at, from, to;
	int64_t bytes = v->esize;

	for (int k = 0; k < v->rank; k++)
		bytes *= v->dims[k].c;
	at = (uintptr_t)(rt_wbase + v->offset);
	from = (at + page - 1) / page * page;
	to = (at + (uintptr_t)bytes) / page * page;
	if (to > from)
		madvise((void *)from, to - from, MADV_PAGEOUT);
#else
	(void)v;
#endif
}

/*
 * The constants the model makes when it opens (rt_packs: packed or
 * transformed weights whose source the blob holds, some through another
 * pack, freed after), into memory the handle owns.
 */
static collagec_status make_packs(collagec_model *m)
{
	for (int i = 0; i < rt_desc.n_packs; i++) {
		const struct rt_pack *p = &rt_desc.packs[i];

		m->packed[i] = xaligned(p->bytes);
		if (!m->packed[i])
			return COLLAGEC_E_ALLOC;
		if (p->src_pack >= 0) {
			p->fn(m->packed[p->src_pack], m->packed[i], p->params);
			continue;
		}
		p->fn(rt_wbase + rt_desc.values[p->src].offset, m->packed[i], p->params);
		source_pages_out(&rt_desc.values[p->src]);
	}
	for (int i = 0; i < rt_desc.n_packs; i++)
		if (rt_desc.packs[i].temp) {
			free(m->packed[i]);
			m->packed[i] = NULL;
		}
	return COLLAGEC_OK;
}

collagec_status rt_api_open(collagec_model **out)
{
	collagec_model *m, counts;
	collagec_status s;

	if (!out)
		return COLLAGEC_E_ARG;
	*out = NULL;
	/* the struct's size is a multiple of its 8-byte alignment: the arrays follow */
	m = calloc(1, sizeof(*m) + handle_carve(&counts, NULL));
	if (!m)
		return COLLAGEC_E_ALLOC;
	handle_carve(m, (unsigned char *)(m + 1));
	m->threads = rt_desc.threads > 0 ? rt_desc.threads : rt_physical_cores();
	rand_init();
	if ((s = weights_take()) != COLLAGEC_OK) {
		free(m);
		return s;
	}
	for (int i = 0; rt_desc.inits[i]; i++)
		if (rt_desc.inits[i](m, rt_open_err, sizeof(rt_open_err)) != 0) {
			/* undo the inits that succeeded, and only those */
			while (--i >= 0)
				if (rt_desc.finis[i])
					rt_desc.finis[i](m);
			weights_give();
			free(m);
			return COLLAGEC_E_RUNTIME;
		}
	if (string_constants(m) != COLLAGEC_OK || make_packs(m) != COLLAGEC_OK) {
		rt_api_close(m);
		return COLLAGEC_E_ALLOC;
	}
	if (rt_desc.static_arena >= 0) {
		m->arena_size = rt_desc.static_arena;
		m->arena = xaligned(rt_desc.static_arena);
		if (!m->arena) {
			rt_api_close(m);	/* the inits' finis, strings and packs too */
			return COLLAGEC_E_ALLOC;
		}
		for (int i = 0; i < rt_desc.n_values; i++)
			m->offsets[i] = rt_desc.values[i].offset;
		m->have_plan = 1;
	}
	atomic_fetch_add(&rt_handles, 1);
	m->counted = 1;
	*out = m;
	return COLLAGEC_OK;
}

void rt_api_close(collagec_model *m)
{
	int counted;

	if (!m)
		return;
	counted = m->counted;
	/* first: a backend's device work may still write the handle's memory */
	for (int i = 0; rt_desc.inits[i]; i++)
		if (rt_desc.finis[i])
			rt_desc.finis[i](m);
	for (int i = 0; i < rt_desc.n_outputs; i++)
		free(m->out_own[i]);
	for (int i = 0; i < rt_desc.n_inputs; i++)
		free(m->in_own[i]);
	for (int i = 0; i < rt_desc.n_values; i++)
		free(m->dyn[i]);
	strpool_free(&m->strpool);
	for (int i = 0; i < rt_desc.n_values; i++)
		free((void *)m->strconst[i]);
	for (int i = 0; i < rt_desc.n_loops; i++)
		loop_free(m->loops[i], &rt_desc.loops[i]);
	for (int i = 0; i < rt_desc.n_packs; i++)
		free(m->packed[i]);
	free(m->arena);
	free(m);
	weights_give();
	if (counted && atomic_fetch_sub(&rt_handles, 1) == 1) {
		rt_par_stop();
		for (struct rt_close_hook *h = rt_close_hooks; h; h = h->next)
			h->fn();
	}
}

int rt_api_num_inputs(const collagec_model *m)
{
	(void)m;
	return rt_desc.n_inputs;
}

int rt_api_num_outputs(const collagec_model *m)
{
	(void)m;
	return rt_desc.n_outputs;
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

collagec_status rt_api_input_info(const collagec_model *m, int i,
				  collagec_tensor_info *info)
{
	(void)m;
	if (i < 0 || i >= rt_desc.n_inputs || !info)
		return COLLAGEC_E_ARG;
	fill_info(&rt_desc.values[rt_desc.inputs[i]], info, rt_desc.info_dims[rt_desc.inputs[i]]);
	return COLLAGEC_OK;
}

collagec_status rt_api_output_info(const collagec_model *m, int i,
				   collagec_tensor_info *info)
{
	(void)m;
	if (i < 0 || i >= rt_desc.n_outputs || !info)
		return COLLAGEC_E_ARG;
	fill_info(&rt_desc.values[rt_desc.outputs[i]], info, rt_desc.info_dims[rt_desc.outputs[i]]);
	return COLLAGEC_OK;
}

static int grow(collagec_model *m, void **p, int64_t *cap, int64_t bytes,
		const struct rt_value *v);

static collagec_status set_input(collagec_model *m, int i, const void *data,
				 const int64_t *dims, int rank)
{
	const struct rt_value *v;
	int64_t bytes;
	int zero = 0, over = 0;

	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= rt_desc.n_inputs)
		return fail(m, COLLAGEC_E_ARG, "input index %d out of range (the model has %d)",
			    i, rt_desc.n_inputs);
	v = &rt_desc.values[rt_desc.inputs[i]];
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
	/* sub-byte types come packed (collagec.h); the kernels read a byte an element */
	if (rt_subbyte_bits(v->dtype) < 8 && !zero) {
		if (grow(m, &m->in_own[i], &m->in_cap[i], bytes, v))
			return COLLAGEC_E_ALLOC;
		rt_subbyte_unpack(v->dtype, data, m->in_own[i], bytes);
		data = m->in_own[i];
	}
	memcpy(m->in_dims[i], dims, (size_t)rank * sizeof(*dims));
	m->in_rank[i] = rank;
	m->in_data[i] = data;
	return COLLAGEC_OK;
}

/*
 * Packs the sub-byte outputs of the run in place, two or four elements a
 * byte as ONNX (and collagec.h) has them; the kernels wrote one a byte.
 */
static void pack_outputs(collagec_model *m)
{
	for (int i = 0; i < rt_desc.n_outputs; i++) {
		const struct rt_value *v = &rt_desc.values[rt_desc.outputs[i]];
		int64_t n = 1;

		if (rt_subbyte_bits(v->dtype) == 8 || seq_out(i) || !m->out_data[i])
			continue;
		for (int k = 0; k < v->rank; k++)
			n *= m->out_dims[i][k];
		rt_subbyte_pack(v->dtype, m->out_data[i], m->out_data[i], n);
	}
}

collagec_status rt_api_set_input(collagec_model *m, int i, const void *data,
				 const int64_t *dims, int rank)
{
	return set_input(m, i, data, dims, rank);
}

collagec_status rt_api_set_input_typed(collagec_model *m, int i, int dtype,
				       const void *data, const int64_t *dims, int rank)
{
	const struct rt_value *v = m && i >= 0 && i < rt_desc.n_inputs
		? &rt_desc.values[rt_desc.inputs[i]] : NULL;

	if (v && dtype != v->dtype) {
		m->in_data[i] = NULL;
		return fail(m, COLLAGEC_E_ARG, "input '%s': dtype %d, expected %d", v->name, dtype,
			    v->dtype);
	}
	return set_input(m, i, data, dims, rank);
}

collagec_status rt_api_set_threads(collagec_model *m, int n)
{
	if (!m || n < 1)
		return COLLAGEC_E_ARG;
	m->threads = n;
	return COLLAGEC_OK;
}

int rt_api_get_threads(const collagec_model *m)
{
	return m ? m->threads : -1;
}

/* Whether every symbol of d is bound (late symbols are -1 until their step). */
static int dim_bound(const struct rt_dim *d, const int64_t *syms)
{
	for (int i = 0; i < d->n; i++)
		if (syms[d->sym[i]] < 0)
			return 0;
	return 1;
}

static collagec_status check(collagec_model *m);

/* Computes the derived symbols whose operands are bound; the others stay -1. */
static collagec_status derive(collagec_model *m)
{
	for (const struct rt_derived *d = rt_desc.derived; d->sym >= 0; d++) {
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
					    "these inputs", rt_desc.sym_names[d->sym]);
			m->syms[d->sym] = 0;	/* no shape uses it */
			continue;
		}
		if ((d->op == 1 || d->op == 2) && b <= 0) {
			if (d->used)
				return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' divides by %lld",
					    rt_desc.sym_names[d->sym], (long long)b);
			b = 1;	/* no shape uses it: any value will do */
		}
		v = d->op == 0 ? a + b : d->op == 1 ? a / b : d->op == 2 ? a % b
			: d->op == 3 ? (a < b ? a : b) : (a > b ? a : b);
		if (v < 0 && d->used) {
			/* a node's assumption that these inputs break names the node */
			collagec_status s = check(m);

			if (s != COLLAGEC_OK)
				return s;
			return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' is %lld for these inputs",
				    rt_desc.sym_names[d->sym], (long long)v);
		}
		m->syms[d->sym] = v < 0 ? 0 : v;
	}
	return COLLAGEC_OK;
}

/* Tests what compiling assumed, as far as the symbols are bound yet. */
static collagec_status check(collagec_model *m)
{
	for (const struct rt_check *c = rt_desc.checks; c->text; c++) {
		int64_t a, b;

		if (!dim_bound(&c->a, m->syms) || !dim_bound(&c->b, m->syms))
			continue;	/* tested again once a shape function bound them */
		a = dim_eval(&c->a, m->syms);
		b = dim_eval(&c->b, m->syms);
		if (a == RT_OVERFLOW || b == RT_OVERFLOW)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s' needs %s, which overflows for "
				    "these inputs", c->node, c->text);
		if (c->eq && a != b)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s' needs %s, the inputs give "
				    "%lld != %lld", c->node, c->text, (long long)a, (long long)b);
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

	for (int k = 0; k < rt_desc.n_syms; k++)
		m->syms[k] = -1;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < rt_desc.n_inputs; i++) {
			const struct rt_value *v = &rt_desc.values[rt_desc.inputs[i]];

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
	for (int k = 0; k < rt_desc.n_syms; k++)
		if (m->syms[k] < 0 && !rt_desc.sym_late[k])
			return fail(m, COLLAGEC_E_SHAPE, "symbol '%s' is not bound by any input",
				    rt_desc.sym_names[k]);
	if ((s = check(m)) != COLLAGEC_OK)
		return s;
	/* every tensor's size must be representable before the plan adds them */
	for (int i = 0; i < rt_desc.n_values; i++) {
		const struct rt_value *v = &rt_desc.values[i];

		if (v->kind != RT_CONST && v->kind != RT_PACKED && v->kind != RT_INPUT &&
		    !v->late && value_bytes(v, m->syms) == RT_OVERFLOW)
			return fail(m, COLLAGEC_E_SHAPE, "tensor '%s' is too large for these "
				    "inputs", v->name);
	}
	return COLLAGEC_OK;
}

/* (Re)plans the workspace when the symbols changed. */
static collagec_status plan(collagec_model *m)
{
	int64_t *sizes = m->plan_sizes, need;
	int *first = m->plan_first, *last = m->plan_last;
	int same = m->have_plan;

	for (int s = 0; s < rt_desc.n_syms && same; s++)
		same = m->planned[s] == m->syms[s];	/* late ones are -1 here */
	if (same)
		return COLLAGEC_OK;
	for (int i = 0; i < rt_desc.n_values; i++) {
		const struct rt_value *v = &rt_desc.values[i];

		sizes[i] = v->kind == RT_ARENA ? value_bytes(v, m->syms) : 0;
		first[i] = v->first;
		last[i] = v->last;
	}
	need = rt_plan(rt_desc.n_values, sizes, first, last, m->offsets, m->plan_order);
	if (need > m->arena_size) {
		free(m->arena);
		m->arena = xaligned(need);
		m->arena_size = m->arena ? need : 0;
		if (!m->arena)
			return fail(m, COLLAGEC_E_ALLOC, "cannot allocate a %lld-byte workspace",
				    (long long)need);
	}
	memcpy(m->planned, m->syms, sizeof(*m->syms) * ((size_t)rt_desc.n_syms + 1));
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

/* The cache whose output is out (rt_desc.caches), or NULL. */
static const struct rt_cache *cache_of(int out)
{
	for (int c = 0; c < rt_desc.n_caches; c++)
		if (rt_desc.caches[c].out == out)
			return &rt_desc.caches[c];
	return NULL;
}

/*
 * Output i bound to a cache (collagec_bind_cache): its input must be the
 * cache's buffer, and [batch, heads, capacity, head_size] must fit it.
 */
static collagec_status cache_place(collagec_model *m, int i, const struct rt_value *v)
{
	const struct rt_cache *c = cache_of(i);
	const struct rt_value *in = &rt_desc.values[rt_desc.inputs[c->in]];
	int64_t total = dim_eval(&v->dims[2], m->syms), need = v->esize;

	if (m->in_data[c->in] != m->out_bound[i])
		return fail(m, COLLAGEC_E_ARG, "input '%s' is not the buffer of the cache bound "
			    "to output '%s'", in->name, v->name);
	if (total > m->out_ccap[i])
		return fail(m, COLLAGEC_E_ARG, "output '%s' is %lld positions long for these "
			    "inputs; the cache bound to it holds %lld", v->name, (long long)total,
			    (long long)m->out_ccap[i]);
	for (int k = 0; k < v->rank; k++)
		if (__builtin_mul_overflow(need, k == 2 ? m->out_ccap[i]
					   : dim_eval(&v->dims[k], m->syms), &need))
			need = INT64_MAX;
	if (need > m->out_bcap[i])
		return fail(m, COLLAGEC_E_ARG, "the cache bound to output '%s' takes %lld bytes "
			    "for these inputs; its buffer holds %lld", v->name, (long long)need,
			    (long long)m->out_bcap[i]);
	m->out_data[i] = m->out_bound[i];
	return COLLAGEC_OK;
}

int64_t rt_cache_capacity(const void *past, const void *present)
{
	collagec_model *m = rt_cur;

	for (int c = 0; m && past == present && c < rt_desc.n_caches; c++) {
		int o = rt_desc.caches[c].out;

		if (m->out_ccap[o] && m->out_data[o] == present &&
		    m->in_data[rt_desc.caches[c].in] == past)
			return m->out_ccap[o];
	}
	return -1;
}

/*
 * Where output i of bytes goes in this run: the caller's bound block, which
 * must hold it, or the model's own, grown to it.
 */
static collagec_status out_place(collagec_model *m, int i, int64_t bytes,
				 const struct rt_value *v)
{
	if (m->out_ccap[i])
		return cache_place(m, i, v);
	if (m->out_bound[i]) {
		if (bytes > m->out_bcap[i])
			return fail(m, COLLAGEC_E_ARG, "output '%s' takes %lld bytes for these "
				    "inputs; the buffer bound to it holds %lld", v->name,
				    (long long)bytes, (long long)m->out_bcap[i]);
		m->out_data[i] = m->out_bound[i];
		return COLLAGEC_OK;
	}
	if (grow(m, &m->out_own[i], &m->out_cap[i], bytes, v))
		return COLLAGEC_E_ALLOC;
	m->out_data[i] = m->out_own[i];
	return COLLAGEC_OK;
}

static collagec_status outputs(collagec_model *m)
{
	for (int i = 0; i < rt_desc.n_outputs; i++) {
		const struct rt_value *v = &rt_desc.values[rt_desc.outputs[i]];
		collagec_status s;

		if (v->late)
			continue;	/* allocated when its producer runs */
		if ((s = out_place(m, i, value_bytes(v, m->syms), v)) != COLLAGEC_OK)
			return s;
	}
	return COLLAGEC_OK;
}

/* The outputs' dims, once the run bound every symbol. */
static void output_dims(collagec_model *m)
{
	for (int i = 0; i < rt_desc.n_outputs; i++) {
		const struct rt_value *v = &rt_desc.values[rt_desc.outputs[i]];

		for (int k = 0; k < v->rank; k++)
			m->out_dims[i][k] = dim_eval(&v->dims[k], m->syms);
	}
}

static void *value_ptr(collagec_model *m, int id)
{
	const struct rt_value *v = &rt_desc.values[id];

	switch (v->kind) {
	case RT_CONST: return v->dtype == COLLAGEC_STRING ? (void *)m->strconst[id]
				: (void *)(rt_wbase + v->offset);
	case RT_INPUT: return (void *)m->in_data[v->io];
	case RT_OUTPUT: return m->out_data[v->io];
	case RT_ARENA: return m->arena + m->offsets[id];
	case RT_DYN: return m->dyn[id];
	case RT_PACKED: return m->packed[v->offset];
	default: rt_desc.rt_abort("corrupt value table");
	}
	return NULL;
}

struct rt_shape;
static collagec_status loop_shape(collagec_model *m, const struct rt_shape *sh);

#include "rt_shape.c"
#include "rt_par.c"

/* ---- run-time loops (rt_loops[], core/onnx/onnx_loop_call.c) ---- */

/*
 * What one loop keeps between its run and its kernel, and across runs:
 * the body's handle and, per carried value then per scan output, a block
 * with its data (a scan's elements one after another) and dims.
 */
struct rt_loop_state {
	collagec_model *sub;
	int ran;			/* its shape function ran it in this run */
	int64_t iters;
	void **buf;
	int64_t *cap, *len;		/* bytes allocated / used */
	int64_t (*dims)[RT_MAX_RANK];	/* carried: its dims; scan: one element's */
	int *rank;
};

static void loop_free(struct rt_loop_state *st, const struct rt_loop *lp)
{
	if (!st)
		return;
	if (st->sub)
		lp->close(st->sub);
	for (int i = 0; st->buf && i < lp->n_carried + lp->n_scan; i++)
		free(st->buf[i]);
	free(st->buf);
	free(st->cap);
	free(st->len);
	free(st->dims);
	free(st->rank);
	free(st);
}

static collagec_status loop_fail(collagec_model *m, const struct rt_loop *lp, int64_t iter,
				 const char *what)
{
	if (lp->kind)	/* an If's branch */
		return fail(m, COLLAGEC_E_RUNTIME, "node '%s': %s", lp->node, what);
	return fail(m, COLLAGEC_E_RUNTIME, "node '%s': iteration %lld: %s", lp->node,
		    (long long)iter, what);
}

/* Loop L's state, made (and its body opened) the first time. */
static struct rt_loop_state *loop_state(collagec_model *m, int L)
{
	const struct rt_loop *lp = &rt_desc.loops[L];
	struct rt_loop_state *st = m->loops[L];
	size_t n = (size_t)(lp->n_carried + lp->n_scan) + 1;

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (st) {
		st->buf = calloc(n, sizeof(*st->buf));
		st->cap = calloc(n, sizeof(*st->cap));
		st->len = calloc(n, sizeof(*st->len));
		st->dims = calloc(n, sizeof(*st->dims));
		st->rank = calloc(n, sizeof(*st->rank));
	}
	if (!st || !st->buf || !st->cap || !st->len || !st->dims || !st->rank) {
		loop_free(st, lp);
		fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory for the loop", lp->node);
		return NULL;
	}
	if (lp->open(&st->sub) != COLLAGEC_OK) {
		fail(m, COLLAGEC_E_RUNTIME, "node '%s': cannot open the loop body: %s", lp->node,
		     lp->last_error(NULL));
		st->sub = NULL;
		loop_free(st, lp);
		return NULL;
	}
	m->loops[L] = st;
	return st;
}

/* Makes block i of st hold bytes, keeping its first `keep` bytes; 0 or -1. */
static int loop_grow(struct rt_loop_state *st, int i, int64_t bytes, int64_t keep)
{
	void *p;

	if (bytes <= st->cap[i])
		return 0;
	if (bytes < 2 * st->cap[i])
		bytes = 2 * st->cap[i];
	p = xaligned(bytes);
	if (!p)
		return -1;
	if (keep)
		memcpy(p, st->buf[i], (size_t)keep);
	free(st->buf[i]);
	st->buf[i] = p;
	st->cap[i] = bytes;
	return 0;
}

static int64_t dims_bytes(const int64_t *dims, int rank, int64_t esize)
{
	int64_t n = esize;

	for (int k = 0; k < rank; k++)
		if (__builtin_mul_overflow(n, dims[k], &n))
			return RT_OVERFLOW;
	return n;
}

/* Iteration `iter` of loop L: the body's inputs. */
static collagec_status loop_inputs(collagec_model *m, const struct rt_loop *lp,
				   struct rt_loop_state *st, int64_t *iter, unsigned char *cond)
{
	static const int64_t none[1] = { 0 };
	int nc = lp->n_carried;

	if (lp->set_input(st->sub, 0, iter, none, 0) != COLLAGEC_OK ||
	    lp->set_input(st->sub, 1, cond, none, 0) != COLLAGEC_OK)
		return loop_fail(m, lp, *iter, lp->last_error(st->sub));
	for (int j = 0; j < nc; j++)
		if (lp->set_input(st->sub, 2 + j, st->buf[j] ? st->buf[j] : (void *)none,
				  st->dims[j], st->rank[j]) != COLLAGEC_OK)
			return loop_fail(m, lp, *iter, lp->last_error(st->sub));
	for (int c = 0; c < lp->n_caps; c++) {
		int64_t dims[RT_MAX_RANK];
		int id = lp->in[nc + c], r = value_dims(m, id, dims);

		if (lp->set_input(st->sub, 2 + nc + c, value_ptr(m, id), dims, r) != COLLAGEC_OK)
			return loop_fail(m, lp, *iter, lp->last_error(st->sub));
	}
	return COLLAGEC_OK;
}

/* After iteration `iter`: the condition, the carried values for the next one, the scan elements. */
static collagec_status loop_outputs(collagec_model *m, const struct rt_loop *lp,
				    struct rt_loop_state *st, int64_t iter, unsigned char *cond)
{
	int nc = lp->n_carried;

	for (int o = 0; o <= nc + lp->n_scan; o++) {
		const void *data;
		const int64_t *dims;
		int rank, i = o - 1, id = o ? lp->out[i] : -1;
		int64_t esize, bytes;

		if (o && i >= nc && id < 0)
			continue;	/* an unused scan output */
		esize = !o ? 1 : rt_desc.values[id >= 0 ? id : lp->in[i]].esize;
		if (lp->get_output(st->sub, o, &data, &dims, &rank) != COLLAGEC_OK)
			return loop_fail(m, lp, iter, lp->last_error(st->sub));
		if (!o) {
			*cond = *(const unsigned char *)data != 0;
			continue;
		}
		bytes = dims_bytes(dims, rank, esize);
		if (bytes == RT_OVERFLOW)
			return loop_fail(m, lp, iter, "an output is too large");
		if (i < nc) {
			if (loop_grow(st, i, bytes, 0))
				return fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory", lp->node);
			st->len[i] = bytes;
		} else if (st->len[i] == 0 && iter == st->iters) {
			/* the first element: the others must have its dims */
		} else if (rank != st->rank[i] ||
			   memcmp(dims, st->dims[i], sizeof(int64_t) * (size_t)rank)) {
			return loop_fail(m, lp, iter, "a scan output's element changed shape");
		}
		if (i >= nc && loop_grow(st, i, st->len[i] + bytes, st->len[i]))
			return fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory", lp->node);
		if (bytes)	/* an empty tensor may have no block */
			memcpy((char *)st->buf[i] + (i < nc ? 0 : st->len[i]), data, (size_t)bytes);
		if (i >= nc)
			st->len[i] += bytes;
		st->rank[i] = rank;
		memcpy(st->dims[i], dims, sizeof(int64_t) * (size_t)rank);
	}
	return COLLAGEC_OK;
}

/*
 * If L: runs the branch its condition takes (entry L or L + 1) once; its
 * outputs stay in L's state, as a loop's carried values do.
 */
static collagec_status if_run(collagec_model *m, int L, int threads)
{
	const struct rt_loop *lp = &rt_desc.loops[L];
	int b = *(const unsigned char *)value_ptr(m, lp->cond) ? L : L + 1;
	const struct rt_loop *bp = &rt_desc.loops[b];
	struct rt_loop_state *res = loop_state(m, L), *st = res ? loop_state(m, b) : NULL;

	if (!st)
		return m->err[0] ? COLLAGEC_E_RUNTIME : COLLAGEC_E_ALLOC;
	bp->set_threads(st->sub, threads);
	for (int c = 0; c < lp->n_caps; c++) {
		int64_t dims[RT_MAX_RANK];
		int id = lp->in[c], r = value_dims(m, id, dims);

		if (bp->set_input(st->sub, c, value_ptr(m, id), dims, r) != COLLAGEC_OK)
			return loop_fail(m, lp, 0, bp->last_error(st->sub));
	}
	if (bp->run(st->sub) != COLLAGEC_OK)
		return loop_fail(m, lp, 0, bp->last_error(st->sub));
	for (int o = 0; o < lp->n_carried; o++) {
		const void *data;
		const int64_t *dims;
		int rank;
		int64_t bytes;

		if (bp->get_output(st->sub, o, &data, &dims, &rank) != COLLAGEC_OK)
			return loop_fail(m, lp, 0, bp->last_error(st->sub));
		bytes = dims_bytes(dims, rank,
				   lp->out[o] >= 0 ? rt_desc.values[lp->out[o]].esize : 1);
		if (bytes == RT_OVERFLOW)
			return loop_fail(m, lp, 0, "an output is too large");
		if (loop_grow(res, o, bytes, 0))
			return fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory", lp->node);
		if (bytes)
			memcpy(res->buf[o], data, (size_t)bytes);
		res->len[o] = bytes;
		res->rank[o] = rank;
		memcpy(res->dims[o], dims, sizeof(int64_t) * (size_t)rank);
	}
	return COLLAGEC_OK;
}

/* Runs loop L to its end; its results stay in its state. */
static collagec_status loop_run(collagec_model *m, int L, int threads)
{
	const struct rt_loop *lp = &rt_desc.loops[L];
	struct rt_loop_state *st;
	int64_t trip = INT64_MAX, iter = lp->iter0;
	unsigned char cond = 1;
	collagec_status s;

	if (lp->kind)
		return if_run(m, L, threads);
	if (!(st = loop_state(m, L)))
		return m->err[0] ? COLLAGEC_E_RUNTIME : COLLAGEC_E_ALLOC;
	lp->set_threads(st->sub, threads);
	if (lp->m >= 0)
		trip = *(const int64_t *)value_ptr(m, lp->m);
	if (lp->cond >= 0)
		cond = *(const unsigned char *)value_ptr(m, lp->cond) != 0;
	for (int j = 0; j < lp->n_carried; j++) {
		const struct rt_value *v = &rt_desc.values[lp->in[j]];
		int64_t bytes;

		st->rank[j] = value_dims(m, lp->in[j], st->dims[j]);
		bytes = dims_bytes(st->dims[j], st->rank[j], v->esize);
		if (loop_grow(st, j, bytes, 0))
			return fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory", lp->node);
		if (bytes)
			memcpy(st->buf[j], value_ptr(m, lp->in[j]), (size_t)bytes);
		st->len[j] = bytes;
	}
	for (int i = lp->n_carried; i < lp->n_carried + lp->n_scan; i++)
		st->len[i] = 0;
	st->iters = lp->iter0;
	/* M counts every iteration, those unrolled before iter0 too */
	for (; iter < trip && cond; iter++) {
		if ((s = loop_inputs(m, lp, st, &iter, &cond)) != COLLAGEC_OK)
			return s;
		if (lp->run(st->sub) != COLLAGEC_OK)
			return loop_fail(m, lp, iter, lp->last_error(st->sub));
		if ((s = loop_outputs(m, lp, st, iter, &cond)) != COLLAGEC_OK)
			return s;
	}
	st->iters = iter - lp->iter0;
	return COLLAGEC_OK;
}

/* The dims of loop output o (carried, then scan) after a run. */
static int loop_out_dims(const struct rt_loop *lp, const struct rt_loop_state *st, int o,
			 const int64_t *syms, int64_t *dims)
{
	const struct rt_value *v = &rt_desc.values[lp->out[o]];

	if (o < lp->n_carried) {
		memcpy(dims, st->dims[o], sizeof(int64_t) * (size_t)st->rank[o]);
		return st->rank[o];
	}
	dims[0] = st->iters;
	if (st->iters) {
		memcpy(dims + 1, st->dims[o], sizeof(int64_t) * (size_t)st->rank[o]);
		return st->rank[o] + 1;
	}
	for (int k = 1; k < v->rank; k++)	/* no element: its dims as far as known */
		dims[k] = dim_bound(&v->dims[k], syms) ? dim_eval(&v->dims[k], syms) : 0;
	return v->rank;
}

/*
 * Binds the data-dependent dims of loop L's outputs from what it made, and
 * checks the others: the shape function of a loop, which runs it.
 */
static collagec_status loop_shape(collagec_model *m, const struct rt_shape *sh)
{
	const struct rt_loop *lp = &rt_desc.loops[sh->attr];
	collagec_status s = loop_run(m, (int)sh->attr, m->threads);
	struct rt_loop_state *st = m->loops[sh->attr];

	if (s != COLLAGEC_OK)
		return s;
	for (int o = 0; o < lp->n_carried + lp->n_scan; o++) {
		const struct rt_value *v;
		int64_t dims[RT_MAX_RANK + 1];
		int r;

		if (lp->out[o] < 0)
			continue;
		v = &rt_desc.values[lp->out[o]];
		r = loop_out_dims(lp, st, o, m->syms, dims);
		if (r != v->rank)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': output %d has rank %d, not %d",
				    lp->node, o, r, v->rank);
		for (int k = 0; k < r; k++) {
			const struct rt_dim *d = &v->dims[k];

			if (d->n == 1 && d->c == 1 && m->syms[d->sym[0]] < 0 &&
			    rt_desc.sym_late[d->sym[0]])
				m->syms[d->sym[0]] = dims[k];
			else if (!dim_bound(d, m->syms) || dim_eval(d, m->syms) != dims[k])
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': output %d's dimension %d "
					    "is %lld, which the model cannot take", lp->node, o, k,
					    (long long)dims[k]);
		}
	}
	st->ran = 1;
	return COLLAGEC_OK;
}

void rt_loop_kernel(int64_t loop, int threads)
{
	collagec_model *m = rt_cur;
	const struct rt_loop *lp;
	struct rt_loop_state *st;
	collagec_status s;

	if (!m || loop < 0 || loop >= rt_desc.n_loops)
		rt_desc.rt_abort("a loop kernel ran outside a run");
	lp = &rt_desc.loops[loop];
	st = m->loops[loop];
	if ((!st || !st->ran) && (s = loop_run(m, (int)loop, threads)) != COLLAGEC_OK) {
		m->loop_status = s;
		return;
	}
	st = m->loops[loop];
	st->ran = 0;
	for (int o = 0; o < lp->n_carried + lp->n_scan; o++) {
		int64_t dims[RT_MAX_RANK + 1];
		int r;

		if (lp->out[o] < 0)
			continue;
		r = loop_out_dims(lp, st, o, m->syms, dims);
		/* without a shape function every dim is known: they must agree */
		for (int k = 0; k < r; k++)
			if (r != rt_desc.values[lp->out[o]].rank ||
			    dim_eval(&rt_desc.values[lp->out[o]].dims[k], m->syms) != dims[k]) {
				fail(m, COLLAGEC_E_SHAPE, "node '%s': output %d's dimension %d is "
				     "%lld, which the model cannot take", lp->node, o, k,
				     (long long)dims[k]);
				m->loop_status = COLLAGEC_E_SHAPE;
				return;
			}
		if (st->len[o])
			memcpy(value_ptr(m, lp->out[o]), st->buf[o], (size_t)st->len[o]);
	}
}


static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Runs step i between two clock reads (profiling only: no clock otherwise),
 * the device work it queued included (the backends' syncs).
 */
static void run_timed(collagec_model *m, const struct rt_step *st, int i)
{
	int64_t t0 = now_ns();

	st->fn(m->args, m->syms, m->threads);
	for (int b = 0; rt_desc.inits[b]; b++)
		if (rt_desc.syncs[b])
			rt_desc.syncs[b](m, 0);
	m->time_ns[i] = now_ns() - t0;
}

/* The steps of a run, each after its shape functions. */
static collagec_status run_steps(collagec_model *m)
{
	collagec_status s;

	for (int i = 0, sh = 0, late = 0; i < rt_desc.n_steps; i++) {
		const struct rt_step *st = &rt_desc.steps[i];
		int64_t t0 = m->profiling ? now_ns() : 0;

		if (rt_desc.n_shapes && (s = run_shapes(m, i, &sh, &late)) != COLLAGEC_OK)
			return s;
		/* a step's shape functions count as its time (a run-time loop runs in its) */
		t0 = m->profiling ? now_ns() - t0 : 0;
		for (int a = 0; a < st->nargs; a++)
			m->args[a] = value_ptr(m, rt_desc.args[st->arg0 + a]);
		/* the dispatcher inside fn makes the same test on the same syms */
		if (st->pick)
			m->ran[i] = st->pick(m->syms);
		m->step = i;
		if (m->profiling) {
			run_timed(m, st, i);
			m->time_ns[i] += t0;
		} else {
			st->fn(m->args, m->syms, m->threads);
		}
		if (m->loop_status != COLLAGEC_OK)
			return m->loop_status;
	}
	return COLLAGEC_OK;
}

void rt_kernel_fail(const char *fmt, ...)
{
	collagec_model *m = rt_cur;
	const char *node = NULL;
	char msg[200];
	va_list ap;

	if (!m)
		rt_desc.rt_abort("a kernel failed outside a run");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (int i = 0; rt_desc.n_shapes && rt_desc.shapes[i].step >= 0; i++)
		if (rt_desc.shapes[i].step == m->step)
			node = rt_desc.shapes[i].node;
	fail(m, COLLAGEC_E_RUNTIME, "node '%s': %s", node ? node : rt_desc.steps[m->step].name,
	     msg);
	m->loop_status = COLLAGEC_E_RUNTIME;
}

void *rt_run_model(unsigned char **arena, int64_t *arena_bytes)
{
	collagec_model *m = rt_cur;

	*arena = m ? m->arena : NULL;
	*arena_bytes = m && m->arena ? m->arena_size : 0;
	return m;
}

int rt_model_const(const char *name, const void **data, int64_t *bytes)
{
	for (int i = 0; i < rt_desc.n_values; i++) {
		const struct rt_value *v = &rt_desc.values[i];

		int sym = 0;

		if (v->kind != RT_CONST || v->dtype == COLLAGEC_STRING || strcmp(v->name, name))
			continue;
		for (int k = 0; k < v->rank; k++)
			sym |= v->dims[k].n > 0;
		if (sym)
			return -1;
		*data = rt_wbase + v->offset;
		*bytes = value_bytes(v, NULL);
		return *bytes >= 0 ? 0 : -1;
	}
	return -1;
}

collagec_status rt_api_run(collagec_model *m)
{
	struct rt_strpool *prev_pool;
	collagec_model *prev;
	collagec_status s;

	if (!m)
		return COLLAGEC_E_ARG;
	m->err[0] = 0;
	if ((s = bind_syms(m)) != COLLAGEC_OK || (s = plan(m)) != COLLAGEC_OK ||
	    (s = outputs(m)) != COLLAGEC_OK)
		return s;
	strpool_reset(&m->strpool);
	prev_pool = rt_strpool_cur;
	rt_strpool_cur = &m->strpool;
	prev = rt_cur;
	rt_cur = m;
	m->loop_status = COLLAGEC_OK;
	s = run_steps(m);
	/* even after a failure: nothing queued may outlive the run */
	for (int i = 0; rt_desc.inits[i]; i++)
		if (rt_desc.syncs[i])
			rt_desc.syncs[i](m, 1);
	rt_cur = prev;
	rt_strpool_cur = prev_pool;
	if (s != COLLAGEC_OK)
		return s;
	if (m->strpool.failed)
		return fail(m, COLLAGEC_E_ALLOC, "out of memory for the strings of string tensors");
	output_dims(m);
	pack_outputs(m);
	m->has_run = 1;
	m->profiled = m->profiling;
	return COLLAGEC_OK;
}

collagec_status rt_api_set_profiling(collagec_model *m, int on)
{
	if (!m)
		return COLLAGEC_E_ARG;
	m->profiling = on != 0;
	return COLLAGEC_OK;
}

int rt_api_num_kernels(const collagec_model *m)
{
	(void)m;
	return rt_desc.n_steps;
}

collagec_status rt_api_get_kernel_info(const collagec_model *m, int k,
				       collagec_kernel_info *info)
{
	const struct rt_step *st;
	const struct rt_variant *v;

	if (!m || !info)
		return COLLAGEC_E_ARG;
	if (k < 0 || k >= rt_desc.n_steps)
		return fail((collagec_model *)m, COLLAGEC_E_ARG, "kernel index %d out of range "
			    "(the model has %d)", k, rt_desc.n_steps);
	st = &rt_desc.steps[k];
	v = m->has_run ? &rt_desc.variants[st->var0 + m->ran[k]] : NULL;
	info->name = st->name;
	info->partition = st->part;
	info->n_variants = st->nvars;
	info->variant = v ? m->ran[k] : -1;
	info->implementation = v ? v->impl : NULL;
	info->condition = v ? v->cond : NULL;
	info->time_ns = v && m->profiled ? m->time_ns[k] : -1;
	return COLLAGEC_OK;
}

int rt_api_output_sequence(const collagec_model *m, int i)
{
	return m && i >= 0 && i < rt_desc.n_outputs ? seq_out(i) : 0;
}

/* Output i as a sequence after a run: its dims tensor in *dims, its length (-1: absent). */
static collagec_status sequence_of(collagec_model *m, int i, const int64_t **dims,
				   int64_t *len)
{
	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= rt_desc.n_outputs || !seq_out(i))
		return fail(m, COLLAGEC_E_ARG, "output %d is not a sequence of run-time length", i);
	if (!m->out_data[i])
		return fail(m, COLLAGEC_E_STATE, "the model has not run");
	*dims = m->out_data[i + 1];
	*len = m->out_dims[i + 1][0];
	if (seq_out(i) == 2 && !*(const unsigned char *)m->out_data[i + 2])
		*len = -1;
	return COLLAGEC_OK;
}

collagec_status rt_api_get_sequence_length(collagec_model *m, int i, int64_t *length)
{
	const int64_t *dims;
	int64_t n;
	collagec_status s;

	if (!length)
		return m ? fail(m, COLLAGEC_E_ARG, "length is NULL") : COLLAGEC_E_ARG;
	if ((s = sequence_of(m, i, &dims, &n)) != COLLAGEC_OK)
		return s;
	*length = n;
	return COLLAGEC_OK;
}

collagec_status rt_api_get_sequence_element(collagec_model *m, int i, int64_t k,
					    const void **data, const int64_t **dims,
					    int *rank)
{
	const int64_t *rows;
	int64_t n, at = 0;
	int cols, r = 0;
	collagec_status s;

	if ((s = sequence_of(m, i, &rows, &n)) != COLLAGEC_OK)
		return s;
	if (k < 0 || k >= n)
		return fail(m, COLLAGEC_E_ARG, "element %lld out of range (the sequence has %lld)",
			    (long long)k, (long long)(n < 0 ? 0 : n));
	cols = (int)m->out_dims[i + 1][1];
	/* elements before k: their sizes, one row of dims each */
	for (int64_t e = 0; e <= k; e++) {
		int64_t size = 1;

		r = 0;
		for (int c = 0; c < cols; c++) {
			int64_t d = rows[e * cols + c];

			if (d < 0)
				continue;	/* a lower-rank element's padding */
			size *= d;
			m->elem_dims[r++] = d;
		}
		if (e < k)
			at += size;
	}
	if (data)
		*data = (const unsigned char *)m->out_data[i] +
			at * rt_desc.values[rt_desc.outputs[i]].esize;
	if (dims)
		*dims = m->elem_dims;
	if (rank)
		*rank = r;
	return COLLAGEC_OK;
}

collagec_status rt_api_bind_output(collagec_model *m, int i, void *data, int64_t bytes)
{
	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= rt_desc.n_outputs)
		return fail(m, COLLAGEC_E_ARG, "output index %d out of range (the model has %d)",
			    i, rt_desc.n_outputs);
	if (seq_out(i) || (i > 0 && seq_out(i - 1)) || (i > 1 && seq_out(i - 2) == 2))
		return fail(m, COLLAGEC_E_ARG, "output %d is part of a sequence or an optional, "
			    "which cannot be bound", i);
	if (data && bytes < 0)
		return fail(m, COLLAGEC_E_ARG, "a bound buffer of %lld bytes", (long long)bytes);
	m->out_ccap[i] = 0;
	m->out_bound[i] = data;
	m->out_bcap[i] = data ? bytes : 0;
	return COLLAGEC_OK;
}

collagec_status rt_api_bind_cache(collagec_model *m, int in, int out, void *data,
				  int64_t bytes, int64_t capacity)
{
	const struct rt_cache *c;

	if (!m)
		return COLLAGEC_E_ARG;
	c = out >= 0 && out < rt_desc.n_outputs ? cache_of(out) : NULL;
	if (!c || c->in != in)
		return fail(m, COLLAGEC_E_ARG, "input %d and output %d are not a cache the model "
			    "keeps in place (OUT.json caches)", in, out);
	if (data && (bytes < 0 || capacity < 1))
		return fail(m, COLLAGEC_E_ARG, "a cache of %lld bytes and %lld positions",
			    (long long)bytes, (long long)capacity);
	m->out_bound[out] = data;
	m->out_bcap[out] = data ? bytes : 0;
	m->out_ccap[out] = data ? capacity : 0;
	return COLLAGEC_OK;
}

collagec_status rt_api_get_output(collagec_model *m, int i, const void **data,
				  const int64_t **dims, int *rank)
{
	if (!m)
		return COLLAGEC_E_ARG;
	if (i < 0 || i >= rt_desc.n_outputs)
		return fail(m, COLLAGEC_E_ARG, "output index %d out of range (the model has %d)",
			    i, rt_desc.n_outputs);
	if (!m->out_data[i])
		return fail(m, COLLAGEC_E_STATE, "the model has not run");
	if (data)
		*data = m->out_data[i];
	if (dims)
		*dims = m->out_dims[i];
	if (rank)
		*rank = rt_desc.values[rt_desc.outputs[i]].rank;
	return COLLAGEC_OK;
}
