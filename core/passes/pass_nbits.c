/*
 * pass_nbits.c - weight-only 4-bit MatMuls as exporters write them in
 * standard ONNX (opset 21: int4/uint4 weights, blocked quantization):
 *
 *	DequantizeLinear(w int4/uint4 [K, N] constant, scale, [zero point]) -> MatMul(a, .)
 *
 * becomes one MatMulNBits node (core/ops/ops_nbits.c), the weights packed
 * again two a byte in its layout: per column n of w, its blocks along K in
 * turn, unsigned (int4 + 8, its zero point too), with the scales in the
 * same order, so that the c target runs it as its 4-bit GEMM and OUT.so
 * holds the weights in 4 bits. Taken: blocks along K (axis 0) of a power
 * of two of 16 or more, or one scale per column (axis 1) or for all, which
 * are one block covering K; float32 scales. What does not match stays as
 * it is, and the fold pass turns it into float constants. The last step of
 * the qdq pass (qdq_nbits), so that fold never sees those it takes.
 *
 * The int4 and uint4 tensors collagec holds one byte an element (dtype.def);
 * the DequantizeLinear nodes this pass does not take run as they are.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* What one DequantizeLinear -> MatMul pair packs into. */
struct nbits_plan {
	int64_t K, N, bs, kb;
	bool sgn;		/* int4: stored + 8 */
	const int8_t *w;	/* [K, N], one byte an element */
	const float *s;		/* per (block, column), or per column, or one */
	const int8_t *z;	/* as s; NULL: none */
	int per;		/* 2: s[blk * N + n]; 1: s[n]; 0: s[0] */
};

static bool const_static(const struct value *v)
{
	return v && v->data && v->has_shape && shape_is_static(&v->shape);
}

/* The smallest power of two of 16 or more that is at least k. */
static int64_t pow2_at_least(int64_t k)
{
	int64_t p = 16;

	while (p < k)
		p *= 2;
	return p;
}

/* Whether DequantizeLinear dq feeds MatMul input 1 as nbits_plan p can pack. */
static bool nbits_match(struct graph *g, const struct node *dq, struct nbits_plan *p)
{
	const struct value *x = node_in(g, dq, 0), *s = node_in(g, dq, 1), *z = node_in(g, dq, 2);
	int64_t axis = node_attr_int(dq, "axis", 1), bs = node_attr_int(dq, "block_size", 0);
	int64_t sn;

	if (!const_static(x) || !dtype_is_nibble(x->dtype) || x->shape.rank != 2 ||
	    !const_static(s) || s->dtype != DTYPE_F32 || (z && !const_static(z)))
		return false;
	p->K = x->shape.d[0].c;
	p->N = x->shape.d[1].c;
	axis = axis < 0 ? axis + 2 : axis;
	sn = shape_numel_static(&s->shape);
	if (bs > 0) {
		if (axis != 0 || bs < 16 || (bs & (bs - 1)) || s->shape.rank != 2)
			return false;
		p->per = 2;
	} else if (sn == 1) {
		p->per = 0;
	} else if (axis == 1 && sn == p->N) {
		p->per = 1;
	} else {
		return false;
	}
	p->bs = bs > 0 ? bs : pow2_at_least(p->K);
	p->kb = (p->K + p->bs - 1) / p->bs;
	p->sgn = x->dtype == DTYPE_I4;
	p->w = x->data;
	p->s = s->data;
	p->z = z ? z->data : NULL;
	return p->K > 0 && p->N > 0;
}

/* Index of the scale and zero point of block blk of column n. */
static int64_t nbits_at(const struct nbits_plan *p, int64_t blk, int64_t n)
{
	return p->per == 2 ? blk * p->N + n : p->per == 1 ? n : 0;
}

/* The unsigned zero point of block blk of column n. */
static uint8_t nbits_zero(const struct nbits_plan *p, int64_t blk, int64_t n)
{
	int z = p->z ? p->z[nbits_at(p, blk, n)] : 0;

	return (uint8_t)(p->sgn ? z + 8 : z);
}

/* The MatMulNBits inputs B, scales, zero points of p, as constants; ids in in[1..3]. */
static void nbits_pack(struct graph *g, const struct node *mm, const struct nbits_plan *p,
		       int *in)
{
	int64_t blob = p->bs / 2, zrow = (p->kb + 1) / 2;
	uint8_t *b = xcalloc((size_t)(p->N * p->kb * blob), 1);
	uint8_t *zp = xcalloc((size_t)(p->N * zrow), 1);
	float *sc = xmalloc(sizeof(float) * (size_t)(p->N * p->kb));
	struct shape s3 = { 3, { { 0 } } }, s1 = { 1, { { 0 } } };

	for (int64_t n = 0; n < p->N; n++)
		for (int64_t blk = 0; blk < p->kb; blk++) {
			sc[n * p->kb + blk] = p->s[nbits_at(p, blk, n)];
			zp[n * zrow + blk / 2] |= (uint8_t)(nbits_zero(p, blk, n) << (blk % 2 * 4));
		}
	for (int64_t k = 0; k < p->K; k++)
		for (int64_t n = 0; n < p->N; n++) {
			int64_t e = (n * p->kb + k / p->bs) * p->bs + k % p->bs;
			int v = p->w[k * p->N + n] + (p->sgn ? 8 : 0);

			b[e / 2] |= (uint8_t)((v & 15) << (e % 2 * 4));
		}
	s3.d[0] = dim_const(p->N);
	s3.d[1] = dim_const(p->kb);
	s3.d[2] = dim_const(blob);
	in[1] = graph_add_const(g, arena_printf(g->arena, "%s/B", mm->name), DTYPE_U8, &s3, b);
	s1.d[0] = dim_const(p->N * p->kb);
	in[2] = graph_add_const(g, arena_printf(g->arena, "%s/scales", mm->name), DTYPE_F32, &s1,
				sc);
	s1.d[0] = dim_const(p->N * zrow);
	in[3] = graph_add_const(g, arena_printf(g->arena, "%s/zero_points", mm->name), DTYPE_U8,
				&s1, zp);
	free(b);
	free(zp);
	free(sc);
}

/* MatMul mm (reading dq's output as B) becomes MatMulNBits over p. */
static void nbits_rewrite(struct graph *g, struct node *mm, struct node *dq,
			  const struct nbits_plan *p, bool dq_dies)
{
	int *in = arena_alloc(g->arena, sizeof(int) * 6);
	struct attr *a = arena_alloc(g->arena, sizeof(struct attr) * 5);
	struct span sp = { 0 };

	in[0] = mm->in[0];
	nbits_pack(g, mm, p, in);
	in[4] = in[5] = -1;
	a[0] = attr_int("K", p->K);
	a[1] = attr_int("N", p->N);
	a[2] = attr_int("bits", 4);
	a[3] = attr_int("block_size", p->bs);
	/* the spans in graph order, as pass_qdq.c merges them */
	if (dq_dies) {
		span_add(g, &sp, dq < mm ? &dq->span : &mm->span);
		span_add(g, &sp, dq < mm ? &mm->span : &dq->span);
		mm->span = sp;
		dq->dead = true;
	}
	mm->op = OP_MATMULNBITS;
	mm->op_type = "MatMulNBits";
	mm->in = in;
	mm->n_in = 4;
	mm->attrs = a;
	mm->n_attrs = 4;
}

int qdq_nbits(struct graph *g)
{
	int *count = graph_count_readers(g);

	for (int i = 0; i < g->nodes.n; i++) {
		struct node *mm = &g->nodes.v[i], *dq;
		struct nbits_plan p;
		int pi;

		if (mm->dead || mm->op != OP_MATMUL || mm->n_in != 2 ||
		    node_in(g, mm, 0)->dtype != DTYPE_F32)
			continue;
		pi = g->values.v[mm->in[1]].producer;
		dq = pi >= 0 ? &g->nodes.v[pi] : NULL;
		if (!dq || dq->dead || dq->op != OP_DEQUANTIZELINEAR || !nbits_match(g, dq, &p))
			continue;
		nbits_rewrite(g, mm, dq, &p, count[mm->in[1]] == 1);
	}
	free(count);
	graph_compact(g);
	return 0;
}
