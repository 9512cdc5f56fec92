/*
 * key.c - the structure of a candidate, what identifies its measurement in
 * the cost cache (cost.h).
 */
#include "cost.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_attr(struct graph *g, const struct attr *a, struct strbuf *sb)
{
	sb_printf(sb, " %s=", a->name);
	switch (a->kind) {
	case ATTR_INT:
		sb_printf(sb, "%lld", (long long)a->i);
		break;
	case ATTR_FLOAT:
		sb_printf(sb, "%.9g", a->f);
		break;
	case ATTR_STRING:
		sb_printf(sb, "\"%s\"", a->s);
		break;
	case ATTR_INTS:
		for (int i = 0; i < a->n; i++)
			sb_printf(sb, "%s%lld", i ? "," : "[", (long long)a->ints[i]);
		sb_puts(sb, a->n ? "]" : "[]");
		break;
	case ATTR_FLOATS:
		for (int i = 0; i < a->n; i++)
			sb_printf(sb, "%s%.9g", i ? "," : "[", a->floats[i]);
		sb_puts(sb, a->n ? "]" : "[]");
		break;
	case ATTR_STRINGS:
		for (int i = 0; i < a->n; i++)
			sb_printf(sb, "%s\"%s\"", i ? "," : "[", a->strs[i]);
		sb_puts(sb, a->n ? "]" : "[]");
		break;
	case ATTR_TENSOR: {
		const struct value *v = &g->values.v[a->tensor];

		sb_printf(sb, "tensor:%s", dtype_name(v->dtype));
		shape_print(g, &v->shape, sb);
		break;
	}
	default:
		sb_puts(sb, "graph");
	}
}

/* A constant: dtype and shape, and its bytes when it is small. */
static void print_const(struct graph *g, const struct value *v, struct strbuf *sb)
{
	sb_printf(sb, "const:%s", dtype_name(v->dtype));
	shape_print(g, &v->shape, sb);
	if (shape_is_static(&v->shape) && shape_numel_static(&v->shape) <= 64 &&
	    dtype_is_string(v->dtype)) {
		/* the strings, not their (arena) addresses */
		for (int64_t i = 0; i < shape_numel_static(&v->shape); i++)
			sb_printf(sb, "%s\"%s\"", i ? "," : "=", ((const char *const *)v->data)[i]);
	} else if (shape_is_static(&v->shape) && shape_numel_static(&v->shape) <= 64) {
		size_t n = (size_t)shape_numel_static(&v->shape) * dtype_size(v->dtype);

		sb_putc(sb, '=');
		for (size_t i = 0; i < n; i++)
			sb_printf(sb, "%02x", ((const unsigned char *)v->data)[i]);
	}
}

/*
 * The size of the largest cache level cpu0 reads through, in bytes, from
 * sysfs (per cache instance); 0 when sysfs does not say.
 */
static size_t sysfs_llc(void)
{
	size_t best = 0;
	int best_level = 0;

	for (int i = 0; i < 16; i++) {
		char path[96], *level, *type, *size, *end;
		long v;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (!(level = file_read(path, NULL)))
			break;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		type = file_read(path, NULL);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		size = file_read(path, NULL);
		v = size ? strtol(size, &end, 10) : 0;
		if (v > 0 && type && strncmp(type, "Instruction", 11) != 0 &&
		    atoi(level) > best_level) {
			v *= *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
			best = (size_t)v;
			best_level = atoi(level);
		}
		free(level);
		free(type);
		free(size);
	}
	return best;
}

/*
 * sysfs first: it gives the cache one core reads through. glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE) adds up every L3 of an AMD package (384
 * MiB on a 2-core VM of an EPYC whose cores see 32 MiB): models under that
 * were measured with their weights warm, and evicting meant reading a 768
 * MiB buffer before every run, resident in each measuring worker.
 */
size_t cost_llc_bytes(void)
{
	static size_t bytes;

	if (!bytes) {
		const char *env = getenv("COLLAGEC_LLC_BYTES");
		long v = env && atol(env) > 0 ? atol(env) : 0;

		if (v <= 0)
			v = (long)sysfs_llc();
		if (v <= 0)
			v = sysconf(_SC_LEVEL3_CACHE_SIZE);
		bytes = v > 0 ? (size_t)v : (size_t)32 << 20;
	}
	return bytes;
}

bool cost_weights_cold(const struct dataflow *df)
{
	return df->const_bytes > cost_llc_bytes();
}

/* Marks the symbols of s in used[]. */
static void mark_syms(const struct shape *s, bool *used)
{
	for (int k = 0; k < s->rank; k++)
		for (int j = 0; j < s->d[k].n; j++)
			used[s->d[k].sym[j]] = true;
}

const char *cost_item_structure(struct arena *a, const struct cost_item *it)
{
	const struct dataflow *df = it->df;
	struct graph *g = df->g;
	struct strbuf sb = STRBUF_INIT;
	int *local = arena_alloc(a, sizeof(int) * ((size_t)g->values.n + 1));
	int n_local = 0, n_outside = 0;
	bool used[256] = { false };
	const char *r;

	/* local[v]: 1 + k for the k-th inside node's output, -1 - m for outside value m */
	for (int p = 0; p < it->n_parts; p++) {
		const struct subgraph *sg = it->parts[p].sg;

		sb_printf(&sb, "part %d on %s\n", p, it->parts[p].target->str);
		indexset_for_each(i, &sg->inside) {
			const struct node *n = &g->nodes.v[df->node[i]];

			sb_printf(&sb, "  %s", n->op_type);
			for (int j = 0; j < n->n_attrs; j++)
				print_attr(g, &n->attrs[j], &sb);
			sb_puts(&sb, " (");
			for (int j = 0; j < n->n_in; j++) {
				int v = n->in[j];

				if (j)
					sb_puts(&sb, ", ");
				if (v >= 0)
					mark_syms(&g->values.v[v].shape, used);
				if (v < 0)
					sb_putc(&sb, '-');
				else if (local[v] > 0)
					sb_printf(&sb, "%%%d", local[v] - 1);
				else if (g->values.v[v].data)
					print_const(g, &g->values.v[v], &sb);
				else {
					if (local[v] == 0)
						local[v] = -1 - n_outside++;
					sb_printf(&sb, "$%d:%s", -1 - local[v],
						  dtype_name(g->values.v[v].dtype));
					shape_print(g, &g->values.v[v].shape, &sb);
				}
			}
			sb_puts(&sb, ") ->");
			for (int j = 0; j < n->n_out; j++) {
				const struct value *o = &g->values.v[n->out[j]];

				mark_syms(&o->shape, used);
				local[n->out[j]] = 1 + n_local++;
				sb_printf(&sb, " %%%d:%s", local[n->out[j]] - 1, dtype_name(o->dtype));
				shape_print(g, &o->shape, &sb);
			}
			if (indexset_has(&sg->exit, i))
				sb_puts(&sb, " exit");
			sb_putc(&sb, '\n');
		}
	}
	/* the sizes its symbols are measured at (tune.c): seq 128 is not seq 1 */
	for (int k = 0; k < g->syms.n; k++)
		if (used[k])
			sb_printf(&sb, "at %s=%lld\n", g->syms.v[k],
				  (long long)cost_dim_at(g, dim_sym(k)));
	/* and at the wide sizes too, the cost being the two combined */
	if (g->tune_wide > 1) {
		g->at_wide = true;
		for (int k = 0; k < g->syms.n; k++)
			if (used[k])
				sb_printf(&sb, "wide %s=%lld\n", g->syms.v[k],
					  (long long)cost_dim_at(g, dim_sym(k)));
		g->at_wide = false;
	}
	/* measured with the weights evicted (measure.c) when the model's do not fit */
	if (cost_weights_cold(df))
		sb_puts(&sb, "weights cold\n");
	r = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

const char *cost_item_key(struct arena *a, const struct cost_item *it)
{
	return cost_sha256_hex(a, cost_item_structure(a, it));
}

const char *cost_sha256_hex(struct arena *a, const char *s)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *hex;

	/* SHA-256 fails only when libcrypto cannot allocate; an empty key would
	 * file every such candidate's cost under one cache row */
	if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL))
		die_oom(0);
	hex = arena_alloc(a, 2 * (size_t)n + 1);
	for (unsigned int i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return hex;
}
