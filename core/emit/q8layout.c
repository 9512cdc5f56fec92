/*
 * q8layout.c - the 8-bit values partitions hand each other channels-last
 * (lower_plan_q8_layouts): a QDQ CNN's QLinearConvs, on dnnl (oneDNN's int8
 * convolution computes in nhwc) or on c (rt_ciconv2d reads a channels-last
 * x by whole pixels and writes each pixel's channels side by side), and the
 * elementwise partitions between them (a residual add), so that no 8-bit
 * tensor is reordered or transposed between two convolutions. Which
 * partitions take part is each target kind's say (target_kind.q8_cl_*).
 */
#include "emit.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"

/* Whether node j of the graph belongs to partition q (part_of: every partition). */
static bool in_part(const int *part_of, int j, int q)
{
	return j >= 0 && part_of[j] == q;
}

/*
 * Whether partition p runs the same elementwise map over one shape,
 * whatever order its 8-bit tensors' elements are stored in: each node
 * elementwise (or broadcasting, or a QuantizeLinear, DequantizeLinear or
 * QLinearAdd) whose every input and output is either of the shape of the
 * first node's output or one element (a per-tensor scale or zero point),
 * on a kind with q8_cl_elementwise. A QDQ ResNet's residual Add on c
 * (DequantizeLinear twice, Add, Relu, QuantizeLinear) is one: given
 * channels-last operands it writes a channels-last result.
 */
static bool q8_transparent(struct graph *g, const struct partition *p)
{
	const struct shape *ref = &g->values.v[g->nodes.v[p->nodes[0]].out[0]].shape;

	if (!p->target->kind->q8_cl_elementwise || !shape_is_static(ref) || ref->rank < 3 ||
	    ref->rank > 5)
		return false;
	for (int i = 0; i < p->n_nodes; i++) {
		const struct node *n = &g->nodes.v[p->nodes[i]];
		enum op_kind k = op_info(n->op)->kind;

		if (k != OPK_ELEMWISE && k != OPK_BROADCAST && n->op != OP_QUANTIZELINEAR &&
		    n->op != OP_DEQUANTIZELINEAR && n->op != OP_QLINEARADD)
			return false;
		for (int s = 0; s < n->n_in; s++) {
			const struct value *x = n->in[s] >= 0 ? &g->values.v[n->in[s]] : NULL;

			if (x && !value_one_element(x) && !shape_eq(&x->shape, ref))
				return false;
		}
		for (int s = 0; s < n->n_out; s++)
			if (n->out[s] >= 0 && !shape_eq(&g->values.v[n->out[s]].shape, ref))
				return false;
	}
	return true;
}

/*
 * Marks with 1 in vals (values.n entries) the values partition q reads from
 * outside that are not one element (its tensor operands) and those it hands
 * on (read outside q, or graph outputs).
 */
static void q8_boundary(struct graph *g, const struct partition *q, int qi, const int *part_of,
			const int *producer, char *vals)
{
	for (int i = 0; i < q->n_nodes; i++) {
		const struct node *n = &g->nodes.v[q->nodes[i]];

		for (int s = 0; s < n->n_in; s++) {
			int v = n->in[s];

			if (v >= 0 && !in_part(part_of, producer[v], qi) &&
			    !value_one_element(&g->values.v[v]))
				vals[v] = 1;
		}
		for (int s = 0; s < n->n_out; s++)
			if (n->out[s] >= 0)
				vals[n->out[s]] = 2;	/* kept only if read outside (below) */
	}
	for (int j = 0; j < g->nodes.n; j++) {
		const struct node *n = &g->nodes.v[j];

		for (int s = 0; s < n->n_in && !n->dead; s++)
			if (n->in[s] >= 0 && vals[n->in[s]] == 2 && !in_part(part_of, j, qi))
				vals[n->in[s]] = 1;
	}
	for (int i = 0; i < q->n_nodes; i++) {
		const struct node *n = &g->nodes.v[q->nodes[i]];

		for (int s = 0; s < n->n_out; s++) {
			int v = n->out[s];

			if (v >= 0 && vals[v] == 2)
				vals[v] = g->values.v[v].flags & VALUE_OUTPUT ? 1 : 0;
		}
	}
}

/* Whether partition p's kind reads v, input slot of its node n, channels-last. */
static bool kind_reads(struct graph *g, const struct partition *p, const struct node *n,
		       int slot, int v)
{
	const struct target_kind *k = p->target->kind;

	return k->q8_cl_reads && k->q8_cl_reads(g, p, n, slot, v);
}

/*
 * The 8-bit values that stay channels-last: those a partition writes
 * channels-last (its kind's q8_cl_writes: a QLinearConv on dnnl or on c)
 * or a q8_transparent partition hands on, read only where a kind's
 * q8_cl_reads takes them (a QLinearConv's x) or as a tensor operand of a
 * q8_transparent partition, all of whose tensor operands and results stay
 * channels-last too (one channels-last input beside a plain one would mix
 * orders). Found as the largest such set: start from every candidate, drop
 * what breaks a rule, until nothing does.
 */
void lower_plan_q8_layouts(struct graph *g, const struct partition *parts, int np)
{
	int nv = g->values.n ? g->values.n : 1;
	char *keep = xcalloc((size_t)nv, 1), *read = xcalloc((size_t)nv, 1);
	char *tp = xcalloc((size_t)(np ? np : 1), 1);
	char **bound = xcalloc((size_t)(np ? np : 1), sizeof(char *));
	int *producer = xmalloc(sizeof(int) * (size_t)nv);
	int *part_of = xmalloc(sizeof(int) * (size_t)(g->nodes.n ? g->nodes.n : 1));
	int *wrote = xmalloc(sizeof(int) * (size_t)(np ? np : 1));
	bool changed = true, any = false;

	for (int j = 0; j < g->nodes.n; j++)
		part_of[j] = -1;
	for (int i = 0; i < np; i++)
		for (int j = 0; j < parts[i].n_nodes; j++)
			part_of[parts[i].nodes[j]] = i;
	/* nothing to do without a partition that writes channels-last */
	for (int i = 0; i < np; i++) {
		const struct target_kind *k = parts[i].target->kind;

		wrote[i] = k->q8_cl_writes ? k->q8_cl_writes(g, &parts[i]) : -1;
		any |= wrote[i] >= 0;
	}
	if (!any)
		changed = false;
	for (int v = 0; v < g->values.n; v++)
		producer[v] = -1;
	for (int j = 0; j < g->nodes.n; j++)
		for (int s = 0; s < g->nodes.v[j].n_out; s++)
			if (g->nodes.v[j].out[s] >= 0 && !g->nodes.v[j].dead)
				producer[g->nodes.v[j].out[s]] = j;
	for (int i = 0; i < np && any; i++) {
		if (wrote[i] >= 0) {
			keep[wrote[i]] = 1;
		} else if (q8_transparent(g, &parts[i])) {
			tp[i] = 1;
			bound[i] = xcalloc((size_t)nv, 1);
			q8_boundary(g, &parts[i], i, part_of, producer, bound[i]);
			for (int v = 0; v < g->values.n; v++) {
				const struct value *x = &g->values.v[v];

				if (bound[i][v] && in_part(part_of, producer[v], i) &&
				    dtype_bits(x->dtype) == 8 && dtype_is_int(x->dtype) && !x->data &&
				    !(x->flags & (VALUE_INPUT | VALUE_OUTPUT)))
					keep[v] = 1;
			}
		}
	}
	while (changed) {
		changed = false;
		memset(read, 0, (size_t)nv);
		for (int j = 0; j < g->nodes.n; j++) {
			const struct node *n = &g->nodes.v[j];
			int q = part_of[j];

			for (int s = 0; s < n->n_in && !n->dead; s++) {
				int v = n->in[s];
				bool ok;

				if (v < 0 || !keep[v] || in_part(part_of, producer[v], q))
					continue;
				read[v] = 1;
				if (q < 0)
					ok = false;
				else if (tp[q])
					ok = true;
				else
					ok = kind_reads(g, &parts[q], n, s, v);
				if (!ok) {
					keep[v] = 0;
					changed = true;
				}
			}
		}
		for (int v = 0; v < g->values.n; v++)
			if (keep[v] && !read[v]) {
				keep[v] = 0;
				changed = true;
			}
		for (int q = 0; q < np; q++) {
			bool all = true;

			for (int v = 0; v < g->values.n && tp[q] && all; v++)
				all = !bound[q][v] || keep[v];
			for (int v = 0; v < g->values.n && tp[q] && !all; v++)
				if (bound[q][v] && keep[v]) {
					keep[v] = 0;
					changed = true;
				}
		}
	}
	for (int v = 0; v < g->values.n; v++)
		if (keep[v]) {
			g->values.v[v].layout = LAYOUT_Q8_CL;
			g->values.v[v].layout_kind = parts[part_of[producer[v]]].target->kind;
		}
	for (int i = 0; i < np; i++)
		free(bound[i]);
	free(wrote);
	free(part_of);
	free(bound);
	free(producer);
	free(tp);
	free(read);
	free(keep);
}

