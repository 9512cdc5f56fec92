/*
 * plan.c - the execution plan: steps in partition order, value placement
 * (weights blob, user inputs, model-owned outputs, workspace) and the
 * liveness-based memory plan of runtime/rt_plan.h.
 */
#include "emit.h"
#include "../ops/ops.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/rt_plan.h"

/* Bytes of v's storage with every symbol bound to 1 (the reference binding). */
static int64_t bytes_at_one(const struct value *v)
{
	int64_t n = (int64_t)dtype_size(v->dtype);

	for (int i = 0; i < v->shape.rank; i++)
		n *= i == 1 && v->store_c ? v->store_c : v->shape.d[i].c;
	return n;
}

static void lifetimes(struct exec_plan *ep)
{
	for (int s = 0; s < ep->steps.n; s++) {
		const struct exec_step *st = &ep->steps.v[s];

		for (int a = 0; a < st->n_args; a++) {
			struct exec_value *e = &ep->vals[st->args[a]];

			if (a >= st->k->n_inputs && e->first < 0)
				e->first = s;
			if (e->first < 0)
				e->first = s;	/* read before any write: input or constant */
			if (s > e->last)
				e->last = s;
		}
		if (st->n_args > ep->max_args)
			ep->max_args = st->n_args;
	}
}

/* Whether node's inputs all come from outside partition p (the shape function runs first). */
static bool inputs_outside(struct graph *g, const struct partition *p, int node)
{
	const struct node *n = &g->nodes.v[node];

	for (int j = 0; j < n->n_in; j++)
		for (int i = 0; n->in[j] >= 0 && i < p->n_nodes; i++)
			if (g->values.v[n->in[j]].producer == p->nodes[i])
				return false;
	return true;
}

/* A shape function reads the node's inputs at its step, before the kernel runs. */
static void shape_lifetimes(struct graph *g, struct exec_plan *ep)
{
	for (int i = 0; i < ep->shapes.n; i++) {
		const struct exec_shape *sh = &ep->shapes.v[i];
		const struct node *n = &g->nodes.v[sh->node];

		for (int j = 0; j < n->n_in; j++) {
			struct exec_value *e;

			if (n->in[j] < 0)
				continue;
			e = &ep->vals[n->in[j]];
			if (e->first < 0)
				e->first = sh->step;
			if (sh->step > e->last)
				e->last = sh->step;
		}
	}
}

/* The constant whose data is src, not itself derived; -1 when none is. */
static int source_of(struct graph *g, const void *src)
{
	for (int v = 0; v < g->values.n; v++)
		if (g->values.v[v].data == src && !dtype_is_string(g->values.v[v].dtype) &&
		    !graph_derived_of(g, src))
			return v;
	return -1;
}

/*
 * The constant in the blob that derived constant d is made from at open,
 * through the derived constants between them (a float16 weight widened,
 * then packed); -1 when a step has no rt_fn or the chain ends in no
 * constant.
 */
static int root_of(struct graph *g, const struct derived_const *d)
{
	for (int depth = 0; d && d->rt_fn && depth < 8; depth++) {
		const struct derived_const *up = graph_derived_of(g, d->src);

		if (!up)
			return source_of(g, d->src);
		d = up;
	}
	return -1;
}

/*
 * The index in ep->packs of derived constant d, made from s's blob copy
 * or from the pack of the derived constant d is made from, each added
 * (as temporary, until a value reads it) the first time.
 */
static int pack_of(struct graph *g, struct exec_plan *ep, const struct derived_const *d, int s)
{
	const struct derived_const *up = graph_derived_of(g, d->src);
	struct exec_pack p = { d, s, -1, (int64_t)d->bytes, true };

	for (int k = 0; k < ep->packs.n; k++)
		if (ep->packs.v[k].d == d)
			return k;
	if (up)
		p.src_pack = pack_of(g, ep, up, s);
	vec_push(&ep->packs, p);
	return ep->packs.n - 1;
}

/*
 * Which derived constants the model makes when it opens (EXEC_PACKED), so
 * that the blob holds each weight once whatever number of kernels and
 * variants read it: those of a source the blob holds anyway (a kernel, or
 * another variant of one, reads it as it is), of a source several are
 * derived from, or larger than their source (Winograd's U, 4 times; B's
 * panels padded to 16 columns; a float16 weight widened to float32, and
 * what is packed from that, made from the float16 in turn). Those the
 * backend cannot make at open (no rt_fn) and the one derived copy of an
 * otherwise unread source stay in the blob, as they were: made at compile
 * time, no work at open. A pack that only another is made from is freed
 * once the model has opened (exec_pack.temp).
 */
static void packs(struct graph *g, struct exec_plan *ep)
{
	int *src = xcalloc((size_t)g->values.n + 1, sizeof(int));
	const struct derived_const **der = xcalloc((size_t)g->values.n + 1, sizeof(*der));

	for (int v = 0; v < g->values.n; v++) {
		const struct derived_const *d = ep->vals[v].kind == EXEC_CONST
			? graph_derived_of(g, g->values.v[v].data) : NULL;

		src[v] = d ? root_of(g, d) : -1;
		if (src[v] >= 0 && ep->vals[src[v]].kind != EXEC_CONST &&
		    ep->vals[src[v]].kind != EXEC_UNUSED)
			src[v] = -1;	/* an input or output: leave it be */
		der[v] = src[v] >= 0 ? d : NULL;
	}
	for (int v = 0; v < g->values.n; v++) {
		int s = src[v];
		bool open;

		if (s < 0)
			continue;
		open = ep->vals[s].kind == EXEC_CONST;
		for (int w = 0; w < g->values.n && !open; w++)
			open = src[w] == s && (der[w] != der[v] || bytes_at_one(&g->values.v[w]) >
					       bytes_at_one(&g->values.v[s]));
		if (!open)
			continue;
		/* the source and every constant derived from it: one pack per derived one */
		ep->vals[s].kind = EXEC_CONST;
		for (int w = 0; w < g->values.n; w++) {
			int k;

			if (src[w] != s)
				continue;
			k = pack_of(g, ep, der[w], s);
			ep->packs.v[k].temp = false;
			if (ep->packs.v[k].bytes < bytes_at_one(&g->values.v[w]))
				ep->packs.v[k].bytes = bytes_at_one(&g->values.v[w]);
			ep->vals[w].kind = EXEC_PACKED;
			ep->vals[w].offset = k;
			src[w] = -1;
		}
	}
	for (int k = 0; k < ep->packs.n; k++)
		if (!ep->packs.v[k].temp)
			ep->packed_bytes += ep->packs.v[k].bytes;
	free(src);
	free(der);
}

static void classify(struct graph *g, struct exec_plan *ep)
{
	for (int i = 0; i < g->inputs.n; i++) {
		ep->vals[g->inputs.v[i]].kind = EXEC_INPUT;
		ep->vals[g->inputs.v[i]].io = i;
	}
	for (int i = 0; i < g->outputs.n; i++) {
		int v = g->outputs.v[i];

		if (ep->vals[v].kind == EXEC_INPUT)
			BUG("graph output '%s' is an input; compile adds a copy",
			    g->values.v[v].name);
		ep->vals[v].kind = EXEC_OUTPUT;
		ep->vals[v].io = i;
	}
	for (int v = 0; v < g->values.n; v++) {
		struct exec_value *e = &ep->vals[v];

		if (e->kind != EXEC_UNUSED || e->first < 0)
			continue;
		e->kind = g->values.v[v].data ? EXEC_CONST : EXEC_ARENA;
	}
	packs(g, ep);
	for (int v = 0; v < g->values.n; v++) {
		struct exec_value *e = &ep->vals[v];

		e->late = e->kind != EXEC_UNUSED && graph_shape_late(g, &g->values.v[v].shape);
		if (e->late && e->kind == EXEC_INPUT)
			BUG("input '%s' has data-dependent dims", g->values.v[v].name);
		if (e->late && e->kind == EXEC_ARENA)
			e->kind = EXEC_DYN;
	}
	ep->rt_to_value = xmalloc(sizeof(int) * ((size_t)g->values.n + 1));
	for (int v = 0; v < g->values.n; v++)
		if (ep->vals[v].kind != EXEC_UNUSED) {
			ep->vals[v].rt = ep->n_rt;
			ep->rt_to_value[ep->n_rt++] = v;
		}
}

/*
 * A string constant in the blob: per element the int64 offset of its string
 * from the constant's start, then the strings, each with its NUL. The
 * compiled model makes the pointer array from them when it opens.
 */
static void string_weights(const struct value *val, struct strbuf *w)
{
	int64_t n = shape_numel_static(&val->shape), at = n * 8;
	const char *const *s = val->data;

	for (int64_t i = 0; i < n; i++) {
		sb_add(w, (const char *)&at, sizeof(at));	/* little-endian host, as the blob is */
		at += (int64_t)strlen(s[i]) + 1;
	}
	for (int64_t i = 0; i < n; i++)
		sb_add(w, s[i], strlen(s[i]) + 1);
}

/* The piece of the blob that holds len bytes at data already, or -1. */
static int piece_of(const struct exec_plan *ep, const void *data, size_t len)
{
	for (int i = 0; i < ep->weights.n; i++)
		if (!ep->weights.v[i].own && ep->weights.v[i].data == data &&
		    ep->weights.v[i].len == len)
			return i;
	return -1;
}

/*
 * Places the constants in the blob, each RT_ALIGN-aligned, in value order;
 * values with the same data (a weight two nodes share, a derived constant
 * two kernels read) share its one copy.
 */
static void weights(struct graph *g, struct exec_plan *ep)
{
	for (int v = 0; v < g->values.n; v++) {
		struct value *val = &g->values.v[v];
		struct weight_piece p = { val->data, 0, 0, false };
		int same;

		if (ep->vals[v].kind != EXEC_CONST)
			continue;
		/* a derived constant the blob holds is made now (graph_derived_lazy) */
		graph_derived_fill(g, val->data);
		if (!dtype_is_string(val->dtype) &&
		    (same = piece_of(ep, val->data, (size_t)bytes_at_one(val))) >= 0) {
			ep->vals[v].offset = ep->weights.v[same].offset;
			continue;
		}
		p.offset = (ep->weights_bytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
		if (dtype_is_string(val->dtype)) {
			struct strbuf sb = STRBUF_INIT;

			string_weights(val, &sb);
			p.len = sb.len;
			p.data = sb_detach(&sb);
			p.own = true;
		} else {
			p.len = (size_t)bytes_at_one(val);
		}
		ep->vals[v].offset = p.offset;
		ep->weights_bytes = p.offset + (int64_t)p.len;
		vec_push(&ep->weights, p);
	}
}

/* Hands the blob to put in order, a piece or a run of zeros at a time. */
static int weights_each(const struct exec_plan *ep, int (*put)(const void *, size_t, void *),
			void *arg)
{
	static const char zeros[RT_ALIGN];
	int64_t at = 0;

	for (int i = 0; i < ep->weights.n; i++) {
		const struct weight_piece *p = &ep->weights.v[i];

		if (p->offset - at > (int64_t)sizeof(zeros))
			BUG("weight piece %d at %lld after %lld", i, (long long)p->offset,
			    (long long)at);
		if ((p->offset > at && put(zeros, (size_t)(p->offset - at), arg) < 0) ||
		    (p->len && put(p->data, p->len, arg) < 0))
			return -1;
		at = p->offset + (int64_t)p->len;
	}
	return 0;
}

static int put_file(const void *data, size_t len, void *f)
{
	return fwrite(data, 1, len, f) == len ? 0 : -1;
}

int emit_weights_write(const struct exec_plan *ep, FILE *f)
{
	return weights_each(ep, put_file, f);
}

int emit_weights_file_write(const struct exec_plan *ep, const struct weights_file *wf, FILE *f)
{
	unsigned char head[RT_WEIGHTS_HEADER] = { 0 };

	memcpy(head, RT_WEIGHTS_MAGIC, 16);
	for (int i = 0; i < 8; i++)
		head[16 + i] = (unsigned char)((uint64_t)wf->bytes >> (8 * i));
	if (wf->sha256)
		memcpy(head + 24, wf->sha256, 64);
	if (fwrite(head, 1, sizeof(head), f) != sizeof(head))
		return -1;
	return emit_weights_write(ep, f);
}

static int put_digest(const void *data, size_t len, void *md)
{
	return EVP_DigestUpdate(md, data, len) ? 0 : -1;
}

int emit_weights_sha256(const struct exec_plan *ep, char hex[65])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int rc = -1;

	if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
	    weights_each(ep, put_digest, md) == 0 && EVP_DigestFinal_ex(md, h, &n) && n == 32) {
		for (unsigned i = 0; i < n; i++)
			sprintf(hex + 2 * i, "%02x", h[i]);
		rc = 0;
	}
	EVP_MD_CTX_free(md);
	return rc;
}

/* Plans the arena at the reference binding; offsets kept when static. */
static void memory(struct graph *g, struct exec_plan *ep)
{
	int n = ep->n_rt;
	int64_t *sizes = xcalloc((size_t)n + 1, sizeof(int64_t));
	int64_t *offs = xcalloc((size_t)n + 1, sizeof(int64_t));
	int *first = xcalloc((size_t)n + 1, sizeof(int));
	int *last = xcalloc((size_t)n + 1, sizeof(int));
	int *order = xcalloc((size_t)n + 1, sizeof(int));

	for (int r = 0; r < n; r++) {
		int v = ep->rt_to_value[r];
		const struct exec_value *e = &ep->vals[v];

		first[r] = e->first;
		last[r] = e->last;
		if (e->kind != EXEC_ARENA)
			continue;
		sizes[r] = bytes_at_one(&g->values.v[v]);
		if (!shape_is_static(&g->values.v[v].shape))
			ep->dynamic = true;
	}
	ep->arena_bytes = rt_plan(n, sizes, first, last, offs, order);
	for (int r = 0; r < n; r++) {
		int v = ep->rt_to_value[r];

		if (ep->vals[v].kind == EXEC_ARENA)
			ep->vals[v].offset = ep->dynamic ? -1 : offs[r];
	}
	for (int s = 0; s < ep->steps.n; s++) {
		int64_t live = 0;

		for (int r = 0; r < n; r++)
			if (sizes[r] > 0 && first[r] <= s && s <= last[r])
				live += sizes[r];
		if (live > ep->peak_bytes)
			ep->peak_bytes = live;
	}
	free(sizes);
	free(offs);
	free(first);
	free(last);
	free(order);
}

/* Whether every variant of k is implementation impl. */
static bool all_variants(const struct kernel *k, const char *impl)
{
	for (int v = 0; v < k->n_variants; v++)
		if (strcmp(k->variants[v].impl, impl))
			return false;
	return k->n_variants > 0;
}

/*
 * How many live nodes read v's elements (each slot counts): Shape and
 * Size read only its dims.
 */
static int readers(struct graph *g, int v)
{
	int n = 0;

	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *r = &g->nodes.v[i];

		for (int j = 0; j < r->n_in && !r->dead && r->op != OP_SHAPE && r->op != OP_SIZE; j++)
			n += r->in[j] == v;
	}
	return n;
}

/*
 * The caches of an Attention whose kernel is attention.rows alone
 * (rt_attn_rows, which writes present from past itself and reads past
 * with the stride rt_cache_capacity gives): past_key -> present_key and
 * past_value -> present_value where past is a graph input read by nothing
 * else and present a graph output read by no node. In output order.
 */
static void caches(struct graph *g, struct partition *parts, int n_parts, struct exec_plan *ep)
{
	for (int p = 0; p < n_parts; p++)
		for (int i = 0; i < parts[p].n_nodes; i++) {
			const struct node *n = &g->nodes.v[parts[p].nodes[i]];
			bool rows = false;

			if (n->op != OP_ATTENTION || n->n_in < 6 || n->in[4] < 0)
				continue;
			for (int k = 0; k < parts[p].kernels.n && !rows; k++) {
				const struct kernel *kn = &parts[p].kernels.v[k];

				for (int a = kn->n_inputs; a < kn->n_args && !rows; a++)
					rows = kn->args[a] == n->out[0] &&
					       all_variants(kn, "attention.rows");
			}
			for (int c = 0; rows && c < 2 && c + 1 < n->n_out; c++) {
				int past = n->in[4 + c], present = n->out[1 + c];
				struct exec_cache ec;

				if (past < 0 || present < 0 || ep->vals[past].kind != EXEC_INPUT ||
				    ep->vals[present].kind != EXEC_OUTPUT ||
				    readers(g, past) != 1 || readers(g, present))
					continue;
				ec.in = ep->vals[past].io;
				ec.out = ep->vals[present].io;
				ec.node = parts[p].nodes[i];
				vec_push(&ep->caches, ec);
			}
		}
	/* by output index (insertion sort: a handful) */
	for (int i = 1; i < ep->caches.n; i++)
		for (int j = i; j > 0 && ep->caches.v[j - 1].out > ep->caches.v[j].out; j--) {
			struct exec_cache t = ep->caches.v[j];

			ep->caches.v[j] = ep->caches.v[j - 1];
			ep->caches.v[j - 1] = t;
		}
}

int emit_plan(struct graph *g, struct partition *parts, int n_parts, struct exec_plan *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->vals = xcalloc((size_t)g->values.n + 1, sizeof(*ep->vals));
	for (int i = 0; i < g->values.n; i++) {
		ep->vals[i].kind = EXEC_UNUSED;
		ep->vals[i].rt = -1;
		ep->vals[i].first = ep->vals[i].last = -1;
	}
	for (int p = 0; p < n_parts; p++)
		for (int k = 0; k < parts[p].kernels.n; k++) {
			const struct kernel *kn = &parts[p].kernels.v[k];
			struct exec_step st = { kn, kn->n_args, kn->args, parts[p].id };

			if (kn->n_scratch) {
				/* scratch: written, never read after the step, so live in it alone */
				int *args = arena_alloc(g->arena, sizeof(int) *
							(size_t)(kn->n_args + kn->n_scratch));

				memcpy(args, kn->args, sizeof(int) * (size_t)kn->n_args);
				memcpy(args + kn->n_args, kn->scratch, sizeof(int) * (size_t)kn->n_scratch);
				st.n_args = kn->n_args + kn->n_scratch;
				st.args = args;
			}
			vec_push(&ep->steps, st);
		}
	for (int p = 0; p < n_parts; p++)
		for (int i = 0; i < parts[p].n_nodes; i++) {
			struct exec_shape sh = { ep->steps.n, parts[p].nodes[i] };

			if (!node_is_dynamic(g, &g->nodes.v[sh.node]))
				continue;
			/* the partition's first step: count the steps before it */
			sh.step = 0;
			for (int q = 0; q < p; q++)
				sh.step += parts[q].kernels.n;
			if (!parts[p].kernels.n || !inputs_outside(g, &parts[p], sh.node))
				BUG("dynamic node '%s' reads values its own partition makes",
				    g->nodes.v[sh.node].name);
			vec_push(&ep->shapes, sh);
		}
	lifetimes(ep);
	shape_lifetimes(g, ep);
	/* inputs and outputs exist even when no kernel touches them */
	for (int i = 0; i < g->inputs.n; i++)
		if (ep->vals[g->inputs.v[i]].first < 0)
			ep->vals[g->inputs.v[i]].first = ep->vals[g->inputs.v[i]].last = 0;
	classify(g, ep);
	caches(g, parts, n_parts, ep);
	weights(g, ep);
	memory(g, ep);
	return 0;
}

void exec_plan_release(struct exec_plan *ep)
{
	vec_free(&ep->steps);
	vec_free(&ep->shapes);
	free(ep->vals);
	free(ep->rt_to_value);
	for (int i = 0; i < ep->weights.n; i++)
		if (ep->weights.v[i].own)
			free((void *)ep->weights.v[i].data);
	vec_free(&ep->weights);
	vec_free(&ep->packs);
	vec_free(&ep->caches);
	memset(ep, 0, sizeof(*ep));
}
