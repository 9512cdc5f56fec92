/*
 * mock.c - the deterministic estimator of the search's tests (cost.h).
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

struct mock {
	char names[16][32];
	double w[16];
	int n;
};

static double weight(const struct mock *m, const char *kind)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->names[i], kind))
			return m->w[i];
	return 1;
}

static int mock_estimate(struct cost_estimator *e, struct cost_item *items, int n)
{
	const struct mock *m = e->state;

	for (int i = 0; i < n; i++) {
		double c = 0;

		for (int p = 0; p < items[i].n_parts; p++) {
			int k = indexset_count(&items[i].parts[p].sg->inside);
			double w = weight(m, items[i].parts[p].target->kind->name), f = 1;

			for (int j = 0; j < k; j++, f *= 0.9)
				c += w * f;
		}
		items[i].cost = c;
		e->n_estimated++;
	}
	return 0;
}

static void mock_free(struct cost_estimator *e)
{
	free(e->state);
	free(e);
}

struct cost_estimator *cost_mock_new(struct collagec_ctx *ctx, const char *spec)
{
	struct cost_estimator *e = xmalloc(sizeof(*e));
	struct mock *m = xmalloc(sizeof(*m));
	const char *p = spec ? spec : "";

	memset(e, 0, sizeof(*e));
	memset(m, 0, sizeof(*m));
	while (*p && m->n < 16) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		size_t len;

		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end)
			break;
		len = (size_t)(eq - p) < sizeof(m->names[0]) - 1 ? (size_t)(eq - p)
								 : sizeof(m->names[0]) - 1;
		memcpy(m->names[m->n], p, len);
		m->w[m->n++] = strtod(eq + 1, NULL);
		p = *end ? end + 1 : end;
	}
	e->name = "mock";
	e->estimate = mock_estimate;
	e->free = mock_free;
	e->ctx = ctx;
	e->state = m;
	return e;
}
