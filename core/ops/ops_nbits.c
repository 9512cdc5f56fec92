/*
 * ops_nbits.c - MatMulNBits (ONNX Runtime's com.microsoft op): a MatMul
 * whose B is weights of `bits` bits (4 or 8) in blocks of block_size along
 * K, each block with a float scale and a zero point:
 *
 *	Y[..., m, n] = sum_k A[..., m, k] * (q(n, k) - z(n, k / bs)) * s(n, k / bs)
 *	               [+ bias[n]]
 *
 * Inputs: A (float32, [..., K]), B (uint8, [N, kb, blob]: row n's blocks
 * one after the other, blob = bs * bits / 8 bytes each, element j of a
 * 4-bit block in byte j / 2, the low nibble first), scales (float32, N *
 * kb), zero_points (absent: 2^(bits - 1); uint8, ceil(kb * bits / 8) per
 * row n, packed as B; or float32, N * kb), g_idx (always absent here: the
 * importer drops an identity g_idx and refuses any other), bias (float32,
 * N). kb = ceil(K / bs): the last block's tail past K is padding, never
 * read. Float16 models reach the op through Casts (onnx_contrib.c), as
 * ONNX Runtime's CPU kernel computes them in float32 too.
 *
 * pass_nbits.c turns DequantizeLinear(int4/uint4 constant) -> MatMul into
 * this op; the c target's strategy (c_strategies.c, rt_cnbits.h) keeps B
 * as it is, 4-bit, and unpacks it in registers.
 */
#include "ops.h"

#include <string.h>

/* The blocks of one row n of B. */
static int64_t nb_blocks(const struct node *n)
{
	int64_t bs = node_attr_int(n, "block_size", 0);

	return (node_attr_int(n, "K", 0) + bs - 1) / bs;
}

/* Bytes of one row n of packed zero points. */
static int64_t nb_zp_row(const struct node *n)
{
	return (nb_blocks(n) * node_attr_int(n, "bits", 4) + 7) / 8;
}

static int nb_error(struct graph *g, struct node *n, int i, const char *what)
{
	const struct value *v = node_in(g, n, i);

	diag_error(g->ctx, "%s: input %d ('%s') must be %s", node_loc(g, n), i, v->name, what);
	return -1;
}

/* Input i, when present, has dtype t and numel elements (any shape). 0 or -1. */
static int nb_check(struct graph *g, struct node *n, int i, enum dtype t, int64_t numel)
{
	const struct value *v = node_in(g, n, i);
	char what[96];

	if (!v)
		return 0;
	if (!infer_input(g, n, i))
		return -1;
	if (v->dtype == t && v->has_shape && shape_is_static(&v->shape) &&
	    shape_numel_static(&v->shape) == numel)
		return 0;
	snprintf(what, sizeof(what), "%s of %lld elements", dtype_name(t), (long long)numel);
	return nb_error(g, n, i, what);
}

/* The attributes K, N, bits and block_size. 0 or -1. */
static int nb_check_attrs(struct graph *g, struct node *n)
{
	int64_t K = node_attr_int(n, "K", 0), N = node_attr_int(n, "N", 0);
	int64_t bits = node_attr_int(n, "bits", 4), bs = node_attr_int(n, "block_size", 0);

	if (K < 1 || N < 1) {
		diag_error(g->ctx, "%s: attributes K and N must be given, 1 or more",
			   node_loc(g, n));
		return -1;
	}
	if (bits != 4 && bits != 8) {
		diag_error(g->ctx, "%s: bits %lld is not supported (4 and 8 are)", node_loc(g, n),
			   (long long)bits);
		return -1;
	}
	if (bs < 16 || (bs & (bs - 1))) {
		diag_error(g->ctx, "%s: block_size %lld must be a power of 2, 16 or more",
			   node_loc(g, n), (long long)bs);
		return -1;
	}
	return 0;
}

int infer_matmulnbits(struct graph *g, struct node *n)
{
	int64_t K = node_attr_int(n, "K", 0), N = node_attr_int(n, "N", 0);
	int64_t bits = node_attr_int(n, "bits", 4), bs = node_attr_int(n, "block_size", 0);
	struct value *a, *z;
	struct shape y;
	int64_t kb;

	if (infer_arity(g, n, 3, 6, 1) < 0 || nb_check_attrs(g, n) < 0 ||
	    !(a = infer_input(g, n, 0)))
		return -1;
	kb = nb_blocks(n);
	if (a->dtype != DTYPE_F32 || !a->has_shape || a->shape.rank < 1 ||
	    !dim_eq(a->shape.d[a->shape.rank - 1], dim_const(K))) {
		char what[64];

		snprintf(what, sizeof(what), "float32 with a last dimension of K = %lld",
			 (long long)K);
		return nb_error(g, n, 0, what);
	}
	if (nb_check(g, n, 1, DTYPE_U8, N * kb * (bs * bits / 8)) < 0 ||
	    nb_check(g, n, 2, DTYPE_F32, N * kb) < 0 || nb_check(g, n, 5, DTYPE_F32, N) < 0)
		return -1;
	if (node_in(g, n, 4))
		BUG("%s: g_idx past import", node_loc(g, n));
	z = node_in(g, n, 3);
	if (z && nb_check(g, n, 3, z->dtype == DTYPE_F32 ? DTYPE_F32 : DTYPE_U8,
			  z->dtype == DTYPE_F32 ? N * kb : N * nb_zp_row(n)) < 0)
		return -1;
	y = a->shape;
	y.d[y.rank - 1] = dim_const(N);
	infer_set(g, n, 0, DTYPE_F32, &y);
	return 0;
}

/* Input i's element at off, as float32. */
static struct tir *nb_load_f(struct lower *L, int i, struct tir *off)
{
	return tir_cast(L->b, DTYPE_F32, tir_load(L->b, L->in[i], off));
}

/* The bits-bit field at element e of the bytes of buffer i (low bits first). */
static struct tir *nb_field(struct lower *L, int i, struct tir *e, int64_t bits)
{
	struct tir_builder *b = L->b;
	struct tir *byte = tir_cast(b, DTYPE_I32, tir_load(b, L->in[i],
				  tir_bin(b, BIN_DIV, e, tir_int(b, 8 / bits))));

	if (bits == 8)
		return byte;
	byte = tir_bin(b, BIN_SHR, byte, tir_cast(b, DTYPE_I32, tir_mul(b, tir_bin(b, BIN_MOD, e,
						    tir_int(b, 2)), tir_int(b, 4))));
	return tir_bin(b, BIN_AND, byte, tir_typed_int(b, DTYPE_I32, 15));
}

/* The zero point of block blk of row j, as float32. */
static struct tir *nb_zero(struct lower *L, struct tir *j, struct tir *blk)
{
	struct tir_builder *b = L->b;
	int64_t bits = node_attr_int(L->n, "bits", 4), kb = nb_blocks(L->n);
	const struct value *z = lower_in(L, 3);

	if (!z)
		return tir_flt(b, DTYPE_F32, (double)(1 << (bits - 1)));
	if (z->dtype == DTYPE_F32)
		return nb_load_f(L, 3, tir_add(b, tir_mul(b, j, tir_int(b, kb)), blk));
	return tir_cast(b, DTYPE_F32, nb_field(L, 3, tir_add(b, tir_mul(b, j, tir_int(b,
			nb_zp_row(L->n) * 8 / bits)), blk), bits));
}

/*
 * The op's own lowering, for every target: per output element a dot
 * product over K, each weight unpacked and dequantized where it is read.
 */
int lower_matmulnbits(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *a = lower_in(L, 0);
	int64_t K = node_attr_int(L->n, "K", 0), N = node_attr_int(L->n, "N", 0);
	int64_t bits = node_attr_int(L->n, "bits", 4), bs = node_attr_int(L->n, "block_size", 0);
	int64_t kb = nb_blocks(L->n);
	struct tir *rows, *r, *j, *k, *acc, *blk, *q, *w, *sb;

	rows = tir_bin(b, BIN_DIV, lower_numel(L, &a->shape), tir_int(b, K));
	r = tir_loop(b, rows);
	tir_mark_parallel(b);
	j = tir_loop(b, tir_int(b, N));
	tir_mark_parallel(b);
	acc = tir_let(b, "acc", tir_flt(b, DTYPE_F32, 0));
	k = tir_loop(b, tir_int(b, K));
	blk = tir_bin(b, BIN_DIV, k, tir_int(b, bs));
	sb = tir_add(b, tir_mul(b, j, tir_int(b, kb)), blk);
	/* element k of row j: its block's bytes, then k's place in the block */
	q = nb_field(L, 1, tir_add(b, tir_mul(b, sb, tir_int(b, bs)),
				   tir_bin(b, BIN_MOD, k, tir_int(b, bs))), bits);
	w = tir_bin(b, BIN_SUB, tir_cast(b, DTYPE_F32, q), nb_zero(L, j, blk));
	w = tir_mul(b, w, nb_load_f(L, 2, sb));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, nb_load_f(L, 0, tir_add(b, tir_mul(b, r,
				   tir_int(b, K)), k)), w)));
	tir_end(b);
	if (lower_in(L, 5))
		tir_assign(b, acc, tir_add(b, acc, nb_load_f(L, 5, j)));
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, r, tir_int(b, N)), j), acc);
	tir_end(b);
	tir_end(b);
	return 0;
}
