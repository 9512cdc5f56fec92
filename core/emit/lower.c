/*
 * lower.c - lowering partitions (emit.h): the layouts partitions hand over
 * to each other, then each partition through its target's hooks, step by
 * step, into runtime modules. The compile driver and the measuring
 * estimator's bench models both lower this way.
 */
#include "emit.h"

#include <stdlib.h>

#include "../tir/tir.h"

int lower_plan_layouts(struct graph *g, const struct partition *parts, int np)
{
	for (int i = 0; i < g->values.n; i++) {
		g->values.v[i].layout = 0;
		g->values.v[i].layout_kind = NULL;
		g->values.v[i].store_c = 0;
	}
	for (int i = 0; i < np; i++) {
		const struct target_kind *k = parts[i].target->kind;
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = parts[j].target->kind == k;
		if (!seen && k->plan_layouts && k->plan_layouts(g, parts, np) < 0)
			return -1;
		for (int v = 0; v < g->values.n; v++)
			if (g->values.v[v].layout && !g->values.v[v].layout_kind)
				g->values.v[v].layout_kind = k;
	}
	lower_plan_q8_layouts(g, parts, np);
	return 0;
}

/*
 * Appends p's kernels as --dump-ir shows them: each preceded by its
 * partition, target and the ONNX nodes it came from (its span), then each
 * variant with its condition.
 */
static void snapshot_partition(struct graph *g, const struct partition *p, struct strbuf *sb)
{
	if (p->target->kind->relay_to_runtime) {
		sb_printf(sb, "// partition %d on %s:", p->id, p->target->str);
		for (int s = 0; s < p->span.n; s++)
			sb_printf(sb, " %s(%s)", p->span.names[s], p->span.types[s]);
		sb_puts(sb, "\n// no loop IR: relay_to_runtime\n\n");
		return;
	}
	for (int k = 0; k < p->kernels.n; k++) {
		const struct kernel *kn = &p->kernels.v[k];

		sb_printf(sb, "// partition %d on %s:", p->id, p->target->str);
		for (int s = 0; s < kn->span.n; s++)
			sb_printf(sb, " %s(%s)", kn->span.names[s], kn->span.types[s]);
		sb_putc(sb, '\n');
		/* values handed over in a layout of the target's own (plan_layouts) */
		for (int a = 0; a < kn->n_args; a++) {
			const struct value *v = &g->values.v[kn->args[a]];

			if (!v->layout)
				continue;
			if (v->layout == LAYOUT_Q8_CL && dtype_bits(v->dtype) == 8 &&
			    dtype_is_int(v->dtype)) {
				sb_printf(sb, "// %s '%s' channels-last (8-bit, from %s; "
					  "q8layout)\n", a < kn->n_inputs ? "reads" : "writes",
					  v->name, v->layout_kind->name);
				continue;
			}
			sb_printf(sb, "// %s '%s' in %s's layout %d (plan_layouts)",
				  a < kn->n_inputs ? "reads" : "writes", v->name,
				  v->layout_kind ? v->layout_kind->name : p->target->kind->name,
				  v->layout);
			if (v->store_c)
				sb_printf(sb, ", stored with %lld channels", (long long)v->store_c);
			sb_putc(sb, '\n');
		}
		for (int v = 0; v < kn->n_variants; v++) {
			sb_printf(sb, "// variant %s if %s\n", kn->variants[v].impl,
				  kn->variants[v].cond ? kn->variants[v].cond_text : "always");
			tir_print(kn->variants[v].func, g->syms.v, g->syms.n, sb);
		}
		if (!kn->n_variants && kn->func)
			tir_print(kn->func, g->syms.v, g->syms.n, sb);
		sb_putc(sb, '\n');
	}
}

int lower_partitions(struct graph *g, struct partition *parts, int np, struct model_sources *ms,
		     struct strbuf *snaps)
{
	struct runtime_module *mods = xcalloc((size_t)(np ? np : 1), sizeof(*mods));
	int rc = 0;

	/*
	 * Step by step over every partition: the share step looks across
	 * partitions, and the parallel step must see shared kernels, so that
	 * kernels sharing one function get the same parallel regions. A
	 * relay_to_runtime partition is built at the first step and shows the
	 * same kernels in every snapshot.
	 */
	for (int i = 0; i < np; i++) {
		mods[i].source = (struct strbuf)STRBUF_INIT;
		mods[i].cuda = (struct strbuf)STRBUF_INIT;
	}
	g->lowering = parts;
	g->n_lowering = np;
	for (int s = 0; s < LOWER_STEP_COUNT && rc == 0; s++) {
		if (s == LOWER_STEP_SHARE)
			share_constants(g, parts, np);
		for (int i = 0; i < np && rc == 0; i++) {
			struct partition *p = &parts[i];
			const struct target_kind *k = p->target->kind;

			if (!k->relay_to_runtime)
				rc = target_lower_step(g, p->target, p, (enum lower_step)s);
			else if (s == 0)
				rc = k->relay_to_runtime(g, p->target, p, &mods[i]);
			if (rc == 0 && snaps)
				snapshot_partition(g, p, &snaps[s]);
		}
	}
	for (int i = 0; i < np && rc == 0; i++) {
		struct partition *p = &parts[i];

		if (!p->target->kind->relay_to_runtime)
			rc = p->target->kind->tir_to_runtime(g, p->target, p, &mods[i]);
		if (rc == 0)
			model_sources_add(ms, &mods[i], p);
	}
	g->lowering = NULL;
	g->n_lowering = 0;
	for (int i = 0; i < np; i++) {
		sb_release(&mods[i].source);
		sb_release(&mods[i].cuda);
		vec_free(&mods[i].ldlibs);
	}
	free(mods);
	return rc < 0 ? -1 : 0;
}

