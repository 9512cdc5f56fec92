/*
 * search.c - Collage phases 2 to 4 (collage.h): candidates from every
 * target's rule, their costs (estimator and cost cache, each distinct
 * structure once), Dijkstra over covered node sets, and the partitions of
 * the cheapest cover. Also the greedy placement, which shares phases 2 and 4.
 */
#include "collage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"

struct ints {
	VEC(int);
};

struct cand {
	struct subgraph *sg;
	int t;				/* index into the target list */
	const char *rule;
	const char *key;		/* structure key (cost_item_key) */
	double cost;			/* seconds, +inf, NAN */
	bool cached;			/* cost came from the cost cache */
	/* estimate first */
	int rep;			/* the first candidate of its structure */
	bool known;			/* cost measured (now or in the cache) */
	double guess;			/* the analytic estimate */
	const char *cls;		/* calibration class */
	double est, factor;		/* calibrated estimate, its uncertainty */
};

struct sample {
	const char *cls;
	double estimate, seconds;
};

struct search {
	struct graph *g;
	struct dataflow df;
	struct target **ts;
	int nt;
	const struct collage_options *o;
	struct collage_stats *st;
	VEC(struct cand) cands;
	VEC(int) *at;			/* per index: candidates whose first node it is */
	double *pen;			/* nt x nt transition seconds */
	/*
	 * per target: its kind cannot run here (cannot_run): its candidates
	 * keep their estimates, and no plan holding one is timed
	 */
	bool *idle;
	bool any_pen;
	int *cls;			/* per target: its penalty class (pen_classes) */
	bool untagged;			/* Dijkstra's states no longer carry makers (DIJKSTRA_TAGGED) */
	const char *id;			/* estimate first: this search's hex id */
	VEC(struct sample) prior;	/* estimate first: the cache's other samples */
	struct calib *cal;		/* estimate first: the latest calibration */
	int64_t spent_us;		/* estimate first: charged to the budget */
	int64_t paid_us;		/* of which the candidates' measuring */
	int64_t n_paid;			/* candidates it was charged for */
	int64_t *paid_t, *n_paid_t;	/* the same per target */
};

/* ---- phase 2: candidates ---- */

static void gather(struct search *s, const struct pattern_set *ps)
{
	struct pattern_uses u;

	pattern_uses_init(s->g, &u);
	for (int t = 0; t < s->nt; t++) {
		struct partition_rule *r = s->o->rules && s->o->rules[t] ? s->o->rules[t]
					   : rule_default(s->df.arena, s->ts[t]->kind, ps,
							  s->o->max_depth);
		struct rule_candidates rc = { 0 };

		rule_run(r, &s->df, s->ts[t], &u, &rc);
		for (int i = 0; i < rc.n; i++) {
			struct cand c = { rc.v[i].sg, t, rc.v[i].rule, NULL, NAN, false, s->cands.n,
					  false, NAN, NULL, NAN, 1 };

			vec_push(&s->cands, c);
		}
		vec_free(&rc);
	}
	pattern_uses_release(&u);
	s->st->candidates = s->cands.n;
}

/* Every node needs a candidate; all those without one are reported. */
static int check_cover(struct search *s)
{
	struct indexset covered = indexset_new(s->df.arena, s->df.n);
	int rc = 0;

	for (int i = 0; i < s->cands.n; i++)
		indexset_or_into(&covered, &s->cands.v[i].sg->inside);
	for (int i = 0; i < s->df.n; i++)
		if (!indexset_has(&covered, i)) {
			struct node *n = &s->g->nodes.v[s->df.node[i]];

			diag_error(s->g->ctx, "%s: no target in the list supports this op",
				   node_loc(s->g, n));
			rc = -1;
		}
	return rc;
}

/* ---- costs ---- */

static struct cost_item item_of(const struct search *s, const struct cand *c)
{
	struct cost_part *p = arena_alloc(s->df.arena, sizeof(*p));
	struct cost_item it = { &s->df, 1, p, NAN, 0 };

	*p = (struct cost_part){ c->sg, s->ts[c->t], c->rule };
	return it;
}

static struct cost_key key_of(const struct search *s, const struct cand *c)
{
	return cost_key_make(s->g->ctx, c->key, s->ts[c->t]->str, s->o->threads, s->o->cpu);
}

/*
 * Whether candidate c holds a run-time loop (onnx_loop_call.c): its body
 * is a model of its own, which a bench model of the candidate cannot link,
 * and the work it does depends on its inputs' values; it costs nothing
 * here, so the loop goes where the other candidates leave it.
 */
static bool calls_loop(const struct search *s, const struct cand *c)
{
	indexset_for_each(i, &c->sg->inside) {
		const struct node *n = &s->g->nodes.v[s->df.node[i]];

		if (n->op == OP_LOOP && node_attr(n, "call"))
			return true;
	}
	return false;
}

/*
 * The cost of candidate c when it holds an ImageDecoder, NAN when not:
 * made-up bytes are no image, so no bench model of it runs. Only c decodes
 * images, in a kernel of the node's own; that candidate costs nothing, and
 * the larger ones around it are never chosen (their other nodes are
 * measured without it).
 */
static double image_cost(const struct search *s, const struct cand *c)
{
	indexset_for_each(i, &c->sg->inside)
		if (s->g->nodes.v[s->df.node[i]].op == OP_IMAGEDECODER)
			return indexset_count(&c->sg->inside) == 1 ? 0 : INFINITY;
	return NAN;
}

/* Whether g has an ImageDecoder, whose bench and plan runs cannot be fed an image. */
static bool decodes_images(const struct graph *g)
{
	for (int i = 0; i < g->nodes.n; i++)
		if (g->nodes.v[i].op == OP_IMAGEDECODER)
			return true;
	return false;
}

/*
 * Costs every candidate: one estimate per distinct structure, the cost
 * cache first when there is one, new measurements stored back.
 */
static int estimate(struct search *s)
{
	struct cost_estimator *e = s->o->estimator;
	struct strmap first = { 0 };
	VEC(struct cost_item) items = { 0 };
	VEC(int) owner = { 0 };
	double t0;
	int rc = 0;

	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];
		struct cost_item it = item_of(s, c);
		int j;

		c->key = cost_item_key(s->df.arena, &it);
		/* the key holds the target string: equal keys are equal candidates */
		if ((j = strmap_get(&first, c->key)) >= 0)
			continue;
		strmap_put(&first, c->key, i);
		if (calls_loop(s, c)) {
			c->cost = 0;
			continue;
		}
		if (!isnan(image_cost(s, c))) {
			c->cost = image_cost(s, c);
			continue;
		}
		s->st->unique++;
		if (s->o->cache) {
			struct cost_key k = key_of(s, c);
			double sec;
			int found = cost_cache_get(s->o->cache, &k, &sec);

			if (found < 0) {
				rc = -1;
				goto out;
			}
			if (found) {
				c->cost = sec;
				c->cached = true;
				s->st->cache_hits++;
				continue;
			}
		}
		vec_push(&items, it);
		vec_push(&owner, i);
	}
	s->st->estimated = items.n;
	t0 = time_now();
	rc = items.n ? e->estimate(e, items.v, items.n) : 0;
	s->st->measure_seconds = items.n ? time_now() - t0 : 0;
	if (rc < 0) {
		rc = -1;
		goto out;
	}
	for (int k = 0; k < items.n; k++)
		s->cands.v[owner.v[k]].cost = items.v[k].cost;
	if (s->o->cache && items.n) {
		if (cost_cache_begin(s->o->cache) < 0) {
			rc = -1;
			goto out;
		}
		for (int k = 0; k < items.n; k++) {
			const struct cand *c = &s->cands.v[owner.v[k]];
			struct cost_key key = key_of(s, c);

			if (!isnan(c->cost) &&
			    cost_cache_put(s->o->cache, &key, c->cost, c->sg->label) < 0)
				rc = -1;
		}
		if (cost_cache_commit(s->o->cache) < 0)
			rc = -1;
	}
	/* structural twins take the representative's cost */
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];
		int j = strmap_get(&first, c->key);

		if (j != i) {
			c->cost = s->cands.v[j].cost;
			c->cached = s->cands.v[j].cached;
		}
	}
out:
	strmap_free(&first);
	vec_free(&items);
	vec_free(&owner);
	return rc;
}

/* ---- estimate first ---- */

static int transitions(struct search *s);
static int dijkstra(struct search *s, struct ints *win);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * How many candidates one round measures at most, per C compiler job: a
 * round is about one build batch (a bench model per job), so a budget is
 * never overrun by more than that.
 */
#define ROUND_PER_JOB 24
/*
 * Under a budget, the first round, before this search knows its rate, at
 * most this many per job: on 2 loaded cores a first round of 48 of
 * ResNet-18's candidates took 53 s against a 20 s budget. Each later round
 * at most doubles the last: the rate of one round does not hold for the
 * next (ResNet-18's 16 cheap candidates took 2 s, the next 48 took 30).
 */
#define FIRST_ROUND_PER_JOB 8
/* Covers looked ahead to fill a round (see estimate_first). */
#define SPECULATE 4
/*
 * The share of --search-budget the rounds may spend; phase 5 times plans
 * with the rest: on MobileNetV2 the cover of least sum ran 19.7 ms end to
 * end and the none:dnnl,c placement 10.6 (2 cores), which only phase 5 sees
 * (at 60%, a last round that overran the budget left phase 5 nothing, and
 * the default build ran 28.4 ms against the unlimited search's 10.6).
 */
#define ROUNDS_SHARE 0.5

/*
 * Under a budget, which of the todo candidates (most valuable first) a
 * round measures, at most n: in that order, those whose predicted charge
 * fits in what is left (left_us), the others passed over, one per job at
 * least. A candidate's charge is predicted at what this search's
 * candidates of its target cost on average (paid_t / n_paid_t), else at
 * the average of all (per_us); of a target not measured yet, a round takes
 * only a few (cap), to learn what its measuring costs: opencl's programs
 * build when a bench model opens (ResNet-18, 2 cores: 1.3 s a candidate,
 * against 0.13 to 0.16 on blas, dnnl and c), and a round that took 32
 * candidates at the average of the first round's ran 24 s past its 4 s.
 * The chosen come first in todo; how many.
 */
static int round_fit(struct search *s, struct ints *todo, int n, int64_t left_us, int jobs,
		     int cap, const int64_t *paid_t, const int64_t *n_paid_t, double per_us)
{
	int *took = arena_alloc(s->df.arena, sizeof(int) * (size_t)(s->nt + 1));
	double left = (double)left_us;
	int k2 = 0;

	memset(took, 0, sizeof(int) * (size_t)s->nt);
	for (int k = 0; k < todo->n && k2 < n; k++) {
		int t = s->cands.v[todo->v[k]].t;
		double pred = n_paid_t[t] ? (double)paid_t[t] / (double)n_paid_t[t] : per_us;

		if ((!n_paid_t[t] && took[t] >= cap) || (k2 >= jobs && pred > left))
			continue;
		left -= pred;
		took[t]++;
		todo->v[k2++] = todo->v[k];
	}
	return k2;
}

/*
 * This search's id: the structures of its candidates and every option that
 * decides what it measures. The rows it measures carry it (origin), so
 * that a recompile tells its own measurements from others'.
 */
static const char *search_id(struct search *s, int jobs)
{
	struct strbuf sb = STRBUF_INIT;
	const char **keys = arena_alloc(s->df.arena, sizeof(*keys) * ((size_t)s->cands.n + 1));
	const char *id;
	int n = 0;

	for (int i = 0; i < s->cands.n; i++)
		if (s->cands.v[i].rep == i)
			keys[n++] = s->cands.v[i].key;
	qsort(keys, (size_t)n, sizeof(*keys), cmp_str);
	sb_printf(&sb, "threads %d cpu %s depth %d budget %.17g jobs %d targets", s->o->threads,
		  s->o->cpu ? s->o->cpu : "-", s->o->max_depth, s->o->budget, jobs);
	for (int t = 0; t < s->nt; t++)
		sb_printf(&sb, " %s", s->ts[t]->str);
	for (int i = 0; i < n; i++)
		sb_printf(&sb, "\n%s", keys[i]);
	id = cost_sha256_hex(s->df.arena, sb_str(&sb));
	sb_release(&sb);
	return id;
}

static int prior_sample(const char *cls, double estimate, double seconds, void *arg)
{
	struct search *s = arg;
	struct sample x = { arena_strdup(s->df.arena, cls), estimate, seconds };

	vec_push(&s->prior, x);
	return 0;
}

/* The calibration from the prior and this search's known costs, applied to the rest. */
static void recalibrate(struct search *s)
{
	struct calib *c = calib_new();

	for (int i = 0; i < s->prior.n; i++)
		calib_add(c, s->prior.v[i].cls, s->prior.v[i].estimate, s->prior.v[i].seconds);
	for (int i = 0; i < s->cands.n; i++) {
		const struct cand *x = &s->cands.v[i];

		if (x->rep == i && x->known)
			calib_add(c, x->cls, x->guess, x->cost);
	}
	calib_fit(c);
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *x = &s->cands.v[i];

		if (x->rep == i && !x->known)
			x->est = calib_apply(c, x->cls, x->guess, &x->factor);
	}
	calib_free(s->cal);
	s->cal = c;
}

/* Every candidate's cost for a cover: known, else est / factor^opt (opt 1, 0). */
static void set_costs(struct search *s, int opt)
{
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];
		const struct cand *r = &s->cands.v[c->rep];

		c->cost = r->known ? r->cost : opt ? r->est / r->factor : r->est;
	}
}

/* Adds the unknown representatives of cover win to todo (once each). */
static void unknown_of(struct search *s, const struct ints *win, struct ints *todo, bool *in)
{
	for (int i = 0; i < win->n; i++) {
		int r = s->cands.v[win->v[i]].rep;

		if (!s->cands.v[r].known && !in[r] && !s->idle[s->cands.v[r].t]) {
			in[r] = true;
			vec_push(todo, r);
		}
	}
}

static const struct search *sort_search;

/* Larger estimated share of the model's time first; then candidate order. */
static int cmp_value(const void *a, const void *b)
{
	const struct cand *x = &sort_search->cands.v[*(const int *)a];
	const struct cand *y = &sort_search->cands.v[*(const int *)b];
	double vx = x->est * (x->factor - 1 / x->factor), vy = y->est * (y->factor - 1 / y->factor);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/*
 * Estimate first. Every distinct candidate gets the analytic estimate,
 * calibrated by what this machine measured before (the cost cache's
 * samples of other searches) and by what this search measures, with an
 * interval. Then rounds: the cover of least cost with every unknown cost at
 * its interval's low end is the best the unknowns could make; its unknown
 * candidates (and those of the cover at the estimates) are measured, most
 * valuable first, until that cover is all measured: no unmeasured candidate
 * can then beat it, unless its interval lied. A candidate no optimistic
 * cover picks is never built. --search-budget stops the rounds once the
 * measuring, the rooflines and transition penalties it took included, has
 * cost ROUNDS_SHARE of it; what was not measured keeps its estimate.
 *
 * Cold or warm, the same decisions: a hit measured by this same search
 * (its origin) is charged what measuring it cost then, the calibration
 * leaves this search's rows out of the prior and takes them as its own,
 * so a recompile starts where the first compile ended, and ends there.
 */
static int estimate_first(struct search *s)
{
	struct cost_estimator *e = s->o->estimator;
	struct cost_cache *cache = s->o->cache;
	struct strmap first = { 0 };
	VEC(struct cost_item) items = { 0 };
	struct ints todo = { 0 }, win = { 0 };
	struct cost_key like = cost_key_make(s->g->ctx, "-", "-", s->o->threads, s->o->cpu);
	bool *in = arena_alloc(s->df.arena, sizeof(bool) * ((size_t)s->cands.n + 1));
	int64_t spent_us = 0, n_paid = 0, last_n = 0, calib_us = 0;
	/* per target: what this search's candidates cost to measure, how many */
	int64_t *paid_t = arena_alloc(s->df.arena, sizeof(int64_t) * (size_t)(2 * s->nt + 1));
	int64_t *n_paid_t = paid_t + s->nt;

	memset(paid_t, 0, sizeof(int64_t) * (size_t)(2 * s->nt));
	s->paid_t = paid_t;
	s->n_paid_t = n_paid_t;
	/* the rounds' share of the budget: phase 5 times plans with the rest */
	int64_t rounds_us = (int64_t)(s->o->budget * ROUNDS_SHARE * 1e6);
	double t_start;

	int rc = -1, jobs = s->o->jobs > 0 ? s->o->jobs : 1;


	/* structures, loops, the cache */
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];
		struct cost_item it = item_of(s, c);
		int j;

		c->key = cost_item_key(s->df.arena, &it);
		if ((j = strmap_get(&first, c->key)) >= 0) {
			c->rep = j;
			continue;
		}
		strmap_put(&first, c->key, i);
		c->rep = i;
		c->cls = cost_item_class(s->df.arena, &it);
		s->st->unique++;
		vec_push(&items, it);
	}
	s->id = search_id(s, jobs);
	/* what the estimators measure for themselves is charged to this search */
	s->o->guess->origin = e->origin = s->id;
	s->o->guess->charged_us = e->charged_us = 0;
	t_start = time_now();
	if (transitions(s) < 0)
		goto out;
	diag_note(s->g->ctx, "rooflines and transitions   %.3f s", time_now() - t_start);
	/* the estimates of every distinct candidate, in one call */
	t_start = time_now();
	if (s->o->guess->estimate(s->o->guess, items.v, items.n) < 0)
		goto out;
	diag_note(s->g->ctx, "estimates of %d candidates   %.3f s", items.n, time_now() - t_start);
	for (int i = 0, k = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];

		if (c->rep != i)
			continue;
		c->guess = items.v[k++].cost;
		if (calls_loop(s, c) || !isnan(image_cost(s, c))) {
			c->cost = calls_loop(s, c) ? 0 : image_cost(s, c);
			c->known = true;
			continue;
		}
		if (cache) {
			struct cost_key key = key_of(s, c);
			struct cost_meta meta = { NAN, NULL, 0, NULL };
			double sec;
			int found = cost_cache_get_meta(cache, &key, &sec, &meta);

			if (found < 0)
				goto out;
			if (found) {
				c->cost = sec;
				c->known = c->cached = true;
				s->st->cache_hits++;
				if (meta.origin && !strcmp(meta.origin, s->id)) {
					spent_us += meta.charge_us;
					n_paid++;
					paid_t[c->t] += meta.charge_us;
					n_paid_t[c->t]++;
				}
			}
		}
	}
	if (cache && cost_cache_samples(cache, &like, s->id, prior_sample, s) < 0)
		goto out;
	/* the rooflines and transition penalties this search measured */
	calib_us = s->o->guess->charged_us + e->charged_us;
	for (;;) {
		double t0, dt;
		int n;

		recalibrate(s);
		vec_free(&todo);
		memset(in, 0, sizeof(bool) * (size_t)s->cands.n);
		/*
		 * The optimistic cover, then (while the round has room) the
		 * one after it should what it picked measure as estimated: a
		 * round's build takes what the next rounds would, at once
		 */
		for (int spec = 0, had = -1; spec < SPECULATE && todo.n > had &&
		     todo.n < ROUND_PER_JOB * jobs; spec++) {
			had = todo.n;
			for (int k = 0; k < todo.n; k++)
				s->cands.v[todo.v[k]].known = true;
			for (int k = 0; k < todo.n; k++)
				s->cands.v[todo.v[k]].cost = s->cands.v[todo.v[k]].est;
			set_costs(s, 1);
			for (int k = 0; k < todo.n; k++)
				s->cands.v[todo.v[k]].known = false;
			win.n = 0;
			if (dijkstra(s, &win) == 0)
				unknown_of(s, &win, &todo, in);
			if (spec == 0) {
				set_costs(s, 0);
				win.n = 0;
				if (dijkstra(s, &win) == 0)
					unknown_of(s, &win, &todo, in);
			}
		}
		if (!todo.n)
			break;
		/*
		 * One round even past the share, which the calibration may
		 * have taken (cold or warm: n_paid counts this search's hits)
		 */
		if (s->o->budget > 0 && n_paid > 0 && calib_us + spent_us >= rounds_us) {
			s->st->budget_hit = true;
			break;
		}
		sort_search = s;
		qsort(todo.v, (size_t)todo.n, sizeof(int), cmp_value);
		n = todo.n < ROUND_PER_JOB * jobs ? todo.n : ROUND_PER_JOB * jobs;
		if (s->o->budget > 0 && last_n > 0 && n > 2 * last_n)
			n = (int)(2 * last_n);
		if (s->o->budget > 0 && n_paid > 0 && spent_us > 0) {
			n = round_fit(s, &todo, n, rounds_us - calib_us - spent_us, jobs, 1,
				      paid_t, n_paid_t, (double)spent_us / (double)n_paid);
		} else if (s->o->budget > 0) {
			if (n > FIRST_ROUND_PER_JOB * jobs)
				n = FIRST_ROUND_PER_JOB * jobs;
			n = round_fit(s, &todo, n, INT64_MAX, jobs, FIRST_ROUND_PER_JOB, paid_t,
				      n_paid_t, 0);
		}
		last_n = n;
		items.n = 0;
		for (int k = 0; k < n; k++)
			vec_push(&items, item_of(s, &s->cands.v[todo.v[k]]));
		t0 = time_now();
		if (e->estimate(e, items.v, items.n) < 0)
			goto out;
		dt = time_now() - t0;
		diag_note(s->g->ctx, "round %-2d %3d measured of %3d   %.3f s", s->st->rounds + 1, n,
			  todo.n, dt);
		s->st->measure_seconds += dt;
		s->st->estimated += n;
		s->st->rounds++;
		if (cache && cost_cache_begin(cache) < 0)
			goto out;
		for (int k = 0; k < n; k++) {
			struct cand *c = &s->cands.v[todo.v[k]];
			/* its own share of the round, or an even one */
			int64_t charge = items.v[k].charge > 0 ? (int64_t)(items.v[k].charge * 1e6)
				: (int64_t)(dt * 1e6) / n;
			struct cost_meta meta = { c->guess, c->cls, charge, s->id };
			struct cost_key key = key_of(s, c);

			c->cost = isnan(items.v[k].cost) ? INFINITY : items.v[k].cost;
			c->known = true;
			spent_us += meta.charge_us;
			n_paid++;
			paid_t[c->t] += meta.charge_us;
			n_paid_t[c->t]++;
			if (cache && cost_cache_put_meta(cache, &key, c->cost, c->sg->label, &meta) < 0) {
				cost_cache_rollback(cache);
				goto out;
			}
		}
		if (cache && cost_cache_commit(cache) < 0)
			goto out;
	}
	/* what the decisions use: measured costs, estimates for the rest */
	set_costs(s, 0);
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];

		c->known = s->cands.v[c->rep].known;
		c->cached = s->cands.v[c->rep].cached;
		if (c->rep == i && c->known)
			s->st->measured++;
		else if (c->rep == i)
			s->st->guessed++;
	}
	s->st->budget_spent = (double)(calib_us + spent_us) * 1e-6;
	s->spent_us = calib_us + spent_us;
	s->paid_us = spent_us;
	s->n_paid = n_paid;
	rc = 0;
out:
	strmap_free(&first);
	vec_free(&items);
	vec_free(&todo);
	vec_free(&win);
	vec_free(&s->prior);
	return rc;
}

/*
 * Targets whose transitions out cost the same, within PEN_SAME seconds, to
 * every target (0 between themselves: the CPU targets, all in host memory)
 * form one penalty class, named by its first target. A state of the
 * search's Dijkstra records per frontier node the class that made it, not
 * the target: what a transition from it costs is its class's row of pen
 * (the first target's). Recording targets made the states multiply with
 * the frontier's width (2 to 5 tags per frontier node): a BERT-Base
 * quantized by quantize_dynamic, its scale computations beside every
 * MatMul, took 147 s and 10 GB in the search over five targets, 18 s and
 * 0.7 GB over dnnl and c alone, where no transition costs anything.
 * PEN_SAME is the noise of a transition measured between two targets in
 * host memory (0 to 1.3 us on a 2-core EPYC, where nothing moves), below
 * one into a device's memory (PoCL's: 4 us and up).
 */
#define PEN_SAME 2e-6

static void pen_classes(struct search *s)
{
	int n = s->nt, classes = 0;

	s->cls = arena_alloc(s->df.arena, sizeof(int) * (size_t)(n + 1));
	for (int a = 0; a < n; a++) {
		s->cls[a] = a;
		for (int r = 0; r < a && s->cls[a] == a; r++) {
			bool same = s->cls[r] == r;

			for (int x = 0; x < n && same; x++) {
				double pa = x == a || x == r ? 0 : s->pen[a * n + x];
				double pr = x == a || x == r ? 0 : s->pen[r * n + x];

				same = fabs(pa - pr) <= PEN_SAME && s->pen[a * n + r] <= PEN_SAME &&
				       s->pen[r * n + a] <= PEN_SAME;
			}
			if (same)
				s->cls[a] = r;
		}
		classes += s->cls[a] == a;
	}
	if (classes == 1)
		s->any_pen = false;
}

/*
 * The transition penalties; with estimate first, the analytic estimator's
 * calibration measured alongside them (one build of bench models for both).
 */
static int transitions(struct search *s)
{
	struct cost_estimator *e = s->o->estimator, *g = s->o->guess;
	struct cost_item *extra = NULL;
	/* what can run here is measured; a kind that cannot, at its nominal cost */
	struct target **run = arena_alloc(s->df.arena, sizeof(*run) * (size_t)(s->nt + 1));
	int *at = arena_alloc(s->df.arena, sizeof(int) * (size_t)(s->nt + 1));
	double *pen;
	int n_extra = 0, nr = 0;
	int64_t each = 0;

	s->pen = arena_alloc(s->df.arena, sizeof(double) * (size_t)(s->nt * s->nt + 1));
	for (int i = 0; i < s->nt * s->nt; i++)
		s->pen[i] = 0;
	for (int t = 0; t < s->nt; t++)
		if (!s->idle[t]) {
			at[nr] = t;
			run[nr++] = s->ts[t];
		}
	pen = arena_alloc(s->df.arena, sizeof(double) * (size_t)(nr * nr + 1));
	for (int i = 0; i < nr * nr; i++)
		pen[i] = 0;
	if (g && g->calibration && e->transitions)
		n_extra = g->calibration(g, s->ts, s->nt, &extra);
	if (e->transitions && (nr > 1 || n_extra) &&
	    e->transitions(e, run, nr > 1 ? nr : 0, pen, extra, n_extra, &each) < 0)
		return -1;
	for (int a = 0; a < nr; a++)
		for (int b = 0; b < nr; b++)
			s->pen[at[a] * s->nt + at[b]] = pen[a * nr + b];
	for (int a = 0; a < s->nt; a++)
		for (int b = 0; b < s->nt; b++) {
			const struct target_kind *ka = s->ts[a]->kind, *kb = s->ts[b]->kind;

			if (a == b || (!s->idle[a] && !s->idle[b]))
				continue;
			s->pen[a * s->nt + b] = ka->memory && kb->memory && !strcmp(ka->memory, kb->memory)
				? 0 : s->idle[a] ? ka->nominal_transfer : kb->nominal_transfer;
		}
	if (g && g->calibrated)
		g->calibrated(g, each);
	for (int i = 0; i < s->nt * s->nt; i++) {
		/* an unknown or impossible transition costs nothing extra */
		if (!isfinite(s->pen[i]) || s->pen[i] < 0 || i / s->nt == i % s->nt)
			s->pen[i] = 0;
		if (s->pen[i] > 0)
			s->any_pen = true;
	}
	pen_classes(s);
	return 0;
}

/*
 * A node all of whose candidates failed when measured (the made-up inputs of
 * a bench model can break what real inputs would not: a symbol of 1 making
 * a derived one negative) is not the user's error: its candidates' costs
 * become unknown, so target order places it, with a warning.
 */
static void unblock(struct search *s)
{
	for (int i = 0; i < s->df.n; i++) {
		bool finite = false;

		for (int k = 0; k < s->cands.n && !finite; k++)
			finite = indexset_has(&s->cands.v[k].sg->inside, i) &&
				 isfinite(s->cands.v[k].cost);
		if (finite)
			continue;
		diag_warn(s->g->ctx, "%s: no candidate could be measured; placed by target order",
			  node_loc(s->g, &s->g->nodes.v[s->df.node[i]]));
		for (int k = 0; k < s->cands.n; k++)
			if (indexset_has(&s->cands.v[k].sg->inside, i))
				s->cands.v[k].cost = NAN;
	}
}

/*
 * Unknown costs never reach a comparison: they rank after every known cost
 * of the same size, earlier targets first.
 */
static void settle_unknown(struct search *s)
{
	double worst = 0;

	for (int i = 0; i < s->cands.n; i++)
		if (isfinite(s->cands.v[i].cost) && s->cands.v[i].cost > worst)
			worst = s->cands.v[i].cost;
	for (int i = 0; i < s->cands.n; i++) {
		struct cand *c = &s->cands.v[i];

		if (isnan(c->cost))
			c->cost = (worst + 1) * indexset_count(&c->sg->inside) * (c->t + 1);
	}
}

/*
 * A cover can fail where every node has a finite candidate: finite ones
 * that overlap ({a,b} and {b,c}, with {c} failed) leave c with nothing
 * once {a,b} is taken. Each node none of whose own candidates (the node
 * alone) could be measured gets them back at an unknown cost, placed by
 * target order with a warning, so that a path can go on from any state
 * that reaches it. The number of candidates given back.
 */
static int rescue(struct search *s)
{
	int n = 0;

	for (int i = 0; i < s->df.n; i++) {
		bool finite = false, any = false;

		for (int k = 0; k < s->at[i].n; k++) {
			const struct cand *c = &s->cands.v[s->at[i].v[k]];

			if (indexset_count(&c->sg->inside) == 1) {
				any = true;
				finite = finite || isfinite(c->cost);
			}
		}
		if (finite || !any)
			continue;
		diag_warn(s->g->ctx, "%s: the node alone could not be measured on any target; "
			  "placed by target order", node_loc(s->g, &s->g->nodes.v[s->df.node[i]]));
		for (int k = 0; k < s->at[i].n; k++) {
			struct cand *c = &s->cands.v[s->at[i].v[k]];

			if (indexset_count(&c->sg->inside) == 1) {
				c->cost = NAN;
				n++;
			}
		}
	}
	return n;
}

/* ---- phase 3: Dijkstra over covered sets ---- */

/*
 * A search state. With transition penalties the cost of what comes next
 * depends on which target made each covered value that uncovered nodes
 * still read (the frontier), so that is part of the state's identity: key
 * holds covered in bits [0, n) and, for frontier node i on target t, bit
 * n + i * nt + t. Without penalties key is covered.
 */
struct state {
	struct indexset covered;
	struct indexset key;
	double cost;
	int pred;			/* state, -1 for the start */
	int cand;			/* how pred became this */
	bool done;			/* popped: its cost is final */
};

struct heap_entry {
	double cost;
	int state;
};

struct dijkstra {
	VEC(struct state) states;
	VEC(struct heap_entry) heap;
	struct indexset_table table;
};

static const struct indexset *state_key(const void *owner, int i)
{
	const struct dijkstra *d = owner;

	return &d->states.v[i].key;
}

static bool before(const struct dijkstra *d, const struct heap_entry *a,
		   const struct heap_entry *b)
{
	if (a->cost != b->cost)
		return a->cost < b->cost;
	return indexset_cmp(&d->states.v[a->state].key, &d->states.v[b->state].key) < 0;
}

static void heap_push(struct dijkstra *d, double cost, int state)
{
	struct heap_entry e = { cost, state };
	int i;

	vec_push(&d->heap, e);
	for (i = d->heap.n - 1; i > 0;) {
		int p = (i - 1) / 2;

		if (!before(d, &d->heap.v[i], &d->heap.v[p]))
			break;
		e = d->heap.v[p];
		d->heap.v[p] = d->heap.v[i];
		d->heap.v[i] = e;
		i = p;
	}
}

static struct heap_entry heap_pop(struct dijkstra *d)
{
	struct heap_entry top = d->heap.v[0], e;
	int i = 0;

	d->heap.v[0] = d->heap.v[--d->heap.n];
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < d->heap.n && before(d, &d->heap.v[l], &d->heap.v[m]))
			m = l;
		if (r < d->heap.n && before(d, &d->heap.v[r], &d->heap.v[m]))
			m = r;
		if (m == i)
			break;
		e = d->heap.v[m];
		d->heap.v[m] = d->heap.v[i];
		d->heap.v[i] = e;
		i = m;
	}
	return top;
}

/* The penalty class that made covered frontier node p in a state's key; -1 if none. */
static int maker(const struct search *s, const struct indexset *key, int p)
{
	int n = s->df.n;

	for (int t = 0; t < s->nt; t++)
		if (indexset_has(key, n + p * s->nt + t))
			return t;
	return -1;
}

/* Seconds of moving c's inputs from the targets that made them. */
static double penalty(const struct search *s, const struct indexset *key, const struct cand *c)
{
	double p = 0;

	if (!s->any_pen || s->untagged)
		return 0;
	indexset_for_each(in, &c->sg->input) {
		int t = maker(s, key, in);

		if (t >= 0)
			p += s->pen[t * s->nt + c->t];
	}
	return p;
}

/*
 * k becomes the key of the state after c is added to the state with key
 * old (cov: its covered set). Without makers in keys, k is not touched:
 * the key is cov.
 */
static void next_key(const struct search *s, const struct indexset *old,
		     const struct indexset *cov, const struct cand *c, struct indexset *k)
{
	int n = s->df.n;

	if (!s->any_pen || s->untagged)
		return;
	indexset_clear(k);
	indexset_for_each(i, cov) {
		bool frontier = false;
		int t;

		for (int j = 0; j < s->df.n_out[i] && !frontier; j++)
			frontier = !indexset_has(cov, s->df.out[i][j]);
		indexset_add(k, i);
		if (!frontier)
			continue;
		t = indexset_has(&c->sg->inside, i) ? s->cls[c->t] : maker(s, old, i);
		if (t < 0)
			BUG("frontier node %d has no target", i);
		indexset_add(k, n + i * s->nt + t);
	}
}

/*
 * The most states a Dijkstra whose states carry their frontier's makers
 * may make. Past it, the search drops the makers for good (s->untagged):
 * states are covered sets, and transitions cost nothing in the choice.
 * Makers multiply the states by up to the number of penalty classes per
 * frontier node; on graphs whose frontier stays wide (the scale
 * computations of a dynamically quantized BERT-Base beside every MatMul)
 * they grew past a million states, 10 GB and two minutes in all. A
 * state of a 1,500-node model's takes about 1.5 KB, so this is about
 * 400 MB. The models of make bench-search stay below it.
 * COLLAGEC_SEARCH_STATES overrides it (tests/cuda.sh makes it 2).
 */
#define DIJKSTRA_TAGGED 250000

static int tagged_cap(void)
{
	const char *e = getenv("COLLAGEC_SEARCH_STATES");

	return e && atoi(e) > 0 ? atoi(e) : DIJKSTRA_TAGGED;
}

static int dijkstra_run(struct search *s, struct ints *win);

/* The winning candidates, in path order; -1 when no cover could be built. */
static int dijkstra(struct search *s, struct ints *win)
{
	int rc = dijkstra_run(s, win);

	if (rc == -2) {
		diag_note(s->g->ctx, "search: over %d states with transitions; searching "
			  "without them", tagged_cap());
		s->untagged = true;
		s->st->untagged = true;
		win->n = 0;
		rc = dijkstra_run(s, win);
	}
	return rc;
}

/*
 * dijkstra's search; -2 when its tagged states pass DIJKSTRA_TAGGED. The
 * states' sets live in an arena of the run's own, released with it, and
 * an edge to a state already seen allocates nothing: the sets of every
 * edge went into the search's arena until the compile ended, 522 MB of
 * ViT-Base's 1 GB peak over a compile's re-plannings.
 */
static int dijkstra_run(struct search *s, struct ints *win)
{
	struct dijkstra d = { 0 };
	struct arena a = { 0 };
	bool tagged = s->any_pen && !s->untagged;
	int n_key = tagged ? s->df.n * (1 + s->nt) : s->df.n;
	struct state start = { indexset_new(&a, s->df.n), indexset_new(&a, n_key), 0, -1, -1,
			       false };
	/* an edge's sets, copied into the arena when they make a new state */
	struct indexset cov = indexset_new(&a, s->df.n), key = indexset_new(&a, n_key);
	int end = -1, cap = tagged_cap();

	vec_push(&d.states, start);
	indexset_table_add(&d.table, &start.key, 0, state_key, &d);
	heap_push(&d, 0, 0);
	while (d.heap.n) {
		struct heap_entry top = heap_pop(&d);
		struct state *cur = &d.states.v[top.state];
		int next, sid = top.state;

		if (cur->done || top.cost != cur->cost)
			continue;	/* a stale entry: the state was improved since */
		cur->done = true;
		s->st->states++;
		next = indexset_first_outside(&cur->covered);
		if (next == s->df.n) {
			end = sid;
			break;
		}
		for (int k = 0; k < s->at[next].n; k++) {
			const struct cand *c = &s->cands.v[s->at[next].v[k]];
			const struct indexset *kp = tagged ? &key : &cov;
			double cost;
			int to;

			if (!isfinite(c->cost) ||
			    indexset_intersects(&c->sg->inside, &d.states.v[sid].covered))
				continue;
			cost = d.states.v[sid].cost + c->cost + penalty(s, &d.states.v[sid].key, c);
			indexset_assign(&cov, &d.states.v[sid].covered);
			indexset_or_into(&cov, &c->sg->inside);
			next_key(s, &d.states.v[sid].key, &cov, c, &key);
			to = indexset_table_find(&d.table, kp, state_key, &d);
			if (to < 0) {
				struct state ns = { indexset_copy(&a, &cov), { 0, NULL }, cost, sid,
						    s->at[next].v[k], false };

				ns.key = tagged ? indexset_copy(&a, &key) : ns.covered;
				vec_push(&d.states, ns);
				to = d.states.n - 1;
				indexset_table_add(&d.table, &ns.key, to, state_key, &d);
				if (tagged && to >= cap) {
					end = -2;
					break;
				}
			} else if (d.states.v[to].done || !(cost < d.states.v[to].cost)) {
				continue;	/* ties keep the path found first */
			} else {
				d.states.v[to].cost = cost;
				d.states.v[to].pred = sid;
				d.states.v[to].cand = s->at[next].v[k];
			}
			heap_push(&d, cost, to);
		}
		if (end == -2)
			break;
	}
	if (end >= 0) {
		s->st->total_cost = d.states.v[end].cost;
		for (int x = end; d.states.v[x].pred >= 0; x = d.states.v[x].pred)
			vec_push(win, d.states.v[x].cand);
		for (int i = 0, j = win->n - 1; i < j; i++, j--) {
			int t = win->v[i];

			win->v[i] = win->v[j];
			win->v[j] = t;
		}
	}
	vec_free(&d.states);
	vec_free(&d.heap);
	indexset_table_free(&d.table);
	arena_release(&a);
	return end >= 0 ? 0 : end == -2 ? -2 : -1;
}

/* ---- greedy ---- */

static const struct search *sort_search;

static int cmp_larger(const void *a, const void *b)
{
	const struct cand *x = &sort_search->cands.v[*(const int *)a];
	const struct cand *y = &sort_search->cands.v[*(const int *)b];
	int nx = indexset_count(&x->sg->inside), ny = indexset_count(&y->sg->inside);

	if (nx != ny)
		return ny - nx;
	return indexset_cmp(&x->sg->inside, &y->sg->inside);
}

static void greedy(struct search *s, struct ints *win)
{
	struct indexset taken = indexset_new(s->df.arena, s->df.n);
	int *order = xmalloc(sizeof(int) * ((size_t)s->cands.n + 1));

	for (int t = 0; t < s->nt; t++) {
		int n = 0;

		for (int i = 0; i < s->cands.n; i++)
			if (s->cands.v[i].t == t)
				order[n++] = i;
		sort_search = s;
		qsort(order, (size_t)n, sizeof(int), cmp_larger);
		for (int k = 0; k < n; k++) {
			const struct cand *c = &s->cands.v[order[k]];

			if (indexset_intersects(&c->sg->inside, &taken))
				continue;
			indexset_or_into(&taken, &c->sg->inside);
			vec_push(win, order[k]);
		}
	}
	free(order);
}

/* ---- phase 4: partitions ---- */

struct chosen {
	struct subgraph *sg;
	int t;
	const char *rule;		/* its label (rule_label() once merged) */
	double cost, measured;
	const char **names;		/* merged: the distinct rule names (arena) */
	int n_names;			/* 0: rule alone */
};

struct chosens {
	VEC(struct chosen);
};

/* a's rule names once b merged into it: each distinct name once, a's first. */
static void merge_rules(struct search *s, struct chosen *a, const struct chosen *b)
{
	const char *const *an = a->n_names ? a->names : &a->rule;
	const char *const *bn = b->n_names ? b->names : &b->rule;
	int na = a->n_names ? a->n_names : 1, nb = b->n_names ? b->n_names : 1, n = 0;
	const char **v = arena_alloc(s->df.arena, sizeof(*v) * (size_t)(na + nb));

	for (int i = 0; i < na; i++)
		v[n++] = an[i];
	for (int i = 0; i < nb; i++) {
		int k = 0;

		while (k < n && strcmp(v[k], bn[i]))
			k++;
		if (k == n)
			v[n++] = bn[i];
	}
	a->names = v;
	a->n_names = n;
	a->rule = n == 1 ? v[0] : rule_label(s->df.arena, v, n, 0);
}

/*
 * Touching partitions of one target merge while their union stays convex,
 * one pair at a time (each merge is checked against the current graph of
 * partitions). Kinds with pattern rules lower one match per partition, so
 * theirs stay apart. A merged partition's rule is a label of its distinct
 * rule names, bounded (rule_label): a long chain merges hundreds of times.
 */
static void coalesce(struct search *s, struct chosens *ps)
{
	const struct subgraph_config convex = { 0, true, 0 };
	bool changed = true;

	while (changed) {
		changed = false;
		for (int i = 0; i < ps->n && !changed; i++)
			for (int j = 0; j < ps->n && !changed; j++) {
				struct chosen *a = &ps->v[i], *b = &ps->v[j];
				struct subgraph *u;

				if (i == j || a->t != b->t || s->ts[a->t]->kind->patterns ||
				    !subgraph_touching(&s->df, a->sg, b->sg))
					continue;
				u = subgraph_union(&s->df, a->sg, b->sg);
				if (!subgraph_valid(&s->df, u, &convex))
					continue;
				a->sg = u;
				a->cost += b->cost;
				a->measured += b->measured;
				merge_rules(s, a, b);
				ps->v[j] = ps->v[--ps->n];
				changed = true;
			}
	}
}

/* Orders partitions so each comes after those it reads (Kahn, lowest first node first). */
static void order(struct search *s, struct chosens *ps, struct partition **out, int *n_out)
{
	int n = ps->n;
	int *deg = arena_alloc(s->df.arena, sizeof(int) * ((size_t)n + 1));
	bool *placed = arena_alloc(s->df.arena, sizeof(bool) * ((size_t)n + 1));
	struct partition *parts = arena_alloc(s->df.arena, sizeof(*parts) * ((size_t)n + 1));
	struct graph *g = s->g;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && indexset_intersects(&ps->v[j].sg->output, &ps->v[i].sg->inside))
				deg[i]++;
	for (int k = 0; k < n; k++) {
		int best = -1;
		struct partition *p = &parts[k];
		const struct chosen *c;

		for (int i = 0; i < n; i++)
			if (!placed[i] && deg[i] == 0 &&
			    (best < 0 || ps->v[i].sg->first < ps->v[best].sg->first))
				best = i;
		if (best < 0)
			BUG("the chosen partitions have a cycle");
		placed[best] = true;
		c = &ps->v[best];
		for (int i = 0; i < n; i++)
			if (!placed[i] && indexset_intersects(&c->sg->output, &ps->v[i].sg->inside))
				deg[i]--;
		p->id = k;
		p->target = s->ts[c->t];
		p->rule = c->rule;
		p->est_cost = c->cost;
		p->measured_cost = c->measured;
		p->n_nodes = indexset_count(&c->sg->inside);
		p->nodes = arena_alloc(g->arena, sizeof(int) * ((size_t)p->n_nodes + 1));
		p->n_nodes = 0;
		indexset_for_each(x, &c->sg->inside) {
			p->nodes[p->n_nodes++] = s->df.node[x];
			span_add(g, &p->span, &g->nodes.v[s->df.node[x]].span);
		}
	}
	*out = parts;
	*n_out = n;
}

static void finalize(struct search *s, const struct ints *win, bool measured,
		     struct partition **out, int *n_out)
{
	struct chosens ps = { 0 };

	for (int i = 0; i < win->n; i++) {
		const struct cand *c = &s->cands.v[win->v[i]];
		struct chosen ch = { .sg = c->sg, .t = c->t, .rule = c->rule, .cost = c->cost,
				     .measured = measured && c->known ? c->cost : NAN };

		vec_push(&ps, ch);
	}
	coalesce(s, &ps);
	order(s, &ps, out, n_out);
	vec_free(&ps);
}

/* ---- phase 5: the cover against the baselines, end to end ---- */

struct plan {
	const char *name;
	struct chosens ps;
	const char *key;		/* structure of the whole plan */
	double estimate;		/* estimate first: the sum of its parts */
	double cost;
	bool cached;
	int same;			/* an earlier plan with this key, or -1 */
};

struct plans {
	VEC(struct plan);
};

/*
 * How much faster than the Collage cover (a fraction of its time) another
 * plan must run to replace it: less is within this machine's run-to-run
 * noise, and the cover is the search's answer.
 */
#define PLAN_MARGIN 0.02

/*
 * Estimate first: how much more than the least a plan's estimate (the sum of
 * its parts' costs) may be and the plan still be timed. A sum of parts
 * measured alone misses what runs between them, most of all oneDNN's
 * blocked layouts handed from partition to partition: on MNIST (2 cores)
 * the none:dnnl,c placement summed 89.6 us and ran 35 us end to end, where
 * the cover of least sum (56.5 us) ran 58; on ResNet-50 none:dnnl,c ran 30%
 * faster than that cover. So only plans estimated at over 3 times the
 * least (greedy's and opencl's, 5 to 35 times on these models) are left
 * untimed.
 */
#define PLAN_SEPARATE 2.0
/*
 * Under a budget, phase 5 times only what it can pay for (plans_affordable):
 * what is left of the budget, least estimate first, the last plan
 * overrunning it by its own charge at most (one build batch); once the
 * budget is spent, none (GPT-2, 500 MB of weights, once spent 340 s timing
 * three plans past its budget, opencl's among them).
 * A plan is predicted to cost its build, about PLAN_BUILD_SHARE of what its
 * parts cost as candidates (this search's charge per candidate measured:
 * a plan's kernels build in one compile, a round's candidates are timed
 * too), and PLAN_RUNS runs at its estimate. Measured on 2 loaded cores:
 * MobileNetV2's six plans took 35 s (parts x charge predicts 13 s each),
 * BERT-Base's seven 469 s, some 50 s a build (predicted 88 s); BERT-Base's
 * cover alone is then predicted at 49 s, past a 20 s budget.
 */
#define PLAN_BUILD_SHARE 0.5
/*
 * Bytes of weights above which phase 5 times no plan: a plan's worker
 * holds them all, and the weights it packs at open beside them (a 2 GiB
 * model's worker peaked at 4.3 GB, its plans took 25-45 s to time, and
 * its compile ran 1.1-2 minutes); the cover is built as it is.
 */
#define PLANS_MAX_WEIGHTS ((size_t)1 << 30)
#define PLAN_RUNS 21

/*
 * What a part on a target that hands layouts between its partitions
 * (target_kind.plan_layouts: dnnl's blocked ones) counts for in a plan's
 * estimate, beside others of its target: measured alone it pays the
 * reorders in and out that the plan does without (MNIST's none:dnnl,c
 * summed 89.6 us and ran 35, MobileNetV2's 28.1 ms and ran 10.8). The
 * estimate only orders the plans phase 5 times.
 */
#define PLAN_LAYOUT_SHARE 0.5

/* The sum of a plan's part costs, unknown ones estimated; +inf when a part cannot run. */
static double plan_estimate(struct search *s, const struct plan *p)
{
	double sum = 0;
	int *handing = arena_alloc(s->df.arena, sizeof(int) * (size_t)(s->nt + 1));

	memset(handing, 0, sizeof(int) * (size_t)s->nt);
	for (int k = 0; k < p->ps.n; k++)
		handing[p->ps.v[k].t] += s->ts[p->ps.v[k].t]->kind->plan_layouts != NULL;
	for (int k = 0; k < p->ps.n; k++) {
		const struct chosen *c = &p->ps.v[k];
		double cost = c->cost;

		if (isnan(cost)) {
			struct cost_part part = { c->sg, s->ts[c->t], c->rule };
			struct cost_item it = { &s->df, 1, &part, NAN, 0 };
			double f;

			if (s->o->guess->estimate(s->o->guess, &it, 1) < 0 || !isfinite(it.cost))
				return INFINITY;
			cost = calib_apply(s->cal, cost_item_class(s->df.arena, &it), it.cost, &f);
		}
		/* partitions that hand each other their own layouts run faster whole */
		sum += handing[c->t] > 1 ? PLAN_LAYOUT_SHARE * cost : cost;
	}
	return sum;
}

/*
 * What timing plan p is predicted to cost, in microseconds: each part at
 * what this search's candidates of its target cost on average, of a target
 * none was measured on, the dearest target's (efficientnet-B0's
 * none:opencl,c, its opencl parts unmeasured, took 54 s: PoCL compiles the
 * whole model's kernels when it opens).
 */
static double plan_charge(const struct search *s, const struct plan *p)
{
	double dearest = 0, sum = 0;

	for (int t = 0; t < s->nt; t++)
		if (s->n_paid_t[t] && (double)s->paid_t[t] / (double)s->n_paid_t[t] > dearest)
			dearest = (double)s->paid_t[t] / (double)s->n_paid_t[t];
	for (int k = 0; k < p->ps.n; k++) {
		int t = p->ps.v[k].t;

		sum += s->n_paid_t[t] ? (double)s->paid_t[t] / (double)s->n_paid_t[t] : dearest;
	}
	return PLAN_BUILD_SHARE * sum + PLAN_RUNS * p->estimate * 1e6;
}

/*
 * Of the plans timed[] picks beside the cover, those the budget pays for,
 * least estimate first: while anything of it is left, the cover and the
 * first predicted to cost less than a whole budget (one build batch: on MobileNetV2 the sum of parts put the cover at
 * 19.3 ms and none:dnnl,c at 21.5, which ran 10.6 whole against the
 * cover's 19.7, and charging the cover's build at half of what its parts
 * cost as candidates, 9 s, left phase 5 nothing of a 40 s budget), then
 * more while what is left pays for them, the last one overrunning it; the
 * rest are unpicked. How many stay.
 */
static int plans_affordable(struct search *s, struct plans *pl, bool *timed)
{
	double left = s->o->budget * 1e6 - (double)s->spent_us;
	bool *want = arena_memdup(s->df.arena, timed, sizeof(bool) * (size_t)pl->n);
	int n = 0;

	memset(timed + 1, 0, sizeof(bool) * (size_t)(pl->n - 1));
	if (left > 0)
		left -= plan_charge(s, &pl->v[0]);
	for (;;) {
		int k = -1;

		for (int i = 1; i < pl->n; i++)
			if (want[i] && (k < 0 || pl->v[i].estimate < pl->v[k].estimate))
				k = i;
		if (k < 0 || (n > 0 && left <= 0) || s->o->budget * 1e6 <= (double)s->spent_us)
			break;
		/* the first one while anything is left, but none that costs a budget */
		if (n == 0 && plan_charge(s, &pl->v[k]) > s->o->budget * 1e6) {
			want[k] = false;
			continue;
		}
		want[k] = false;
		left -= plan_charge(s, &pl->v[k]);
		timed[k] = true;
		n++;
	}
	return n;
}

/*
 * Which plans phase 5 times: those whose estimate is within PLAN_SEPARATE of
 * the least, the Collage cover among them whenever another is, under a
 * budget those it pays for; none when only the cover is left. The others
 * keep cost NAN.
 */
static void plans_to_time(struct search *s, struct plans *pl, bool *timed)
{
	double least = INFINITY;
	int n = 0;

	for (int i = 0; i < pl->n; i++)
		if (pl->v[i].same < 0) {
			pl->v[i].estimate = plan_estimate(s, &pl->v[i]);
			if (pl->v[i].estimate < least)
				least = pl->v[i].estimate;
		}
	for (int i = 1; i < pl->n; i++) {
		timed[i] = pl->v[i].same < 0 && pl->v[i].estimate <= least * (1 + PLAN_SEPARATE);
		n += timed[i];
	}
	if (n && s->o->budget > 0)
		n = plans_affordable(s, pl, timed);
	timed[0] = n > 0;
	for (int i = 0; i < pl->n; i++)
		if (pl->v[i].same < 0 && !timed[i])
			s->st->plans_skipped++;
}

/* The chosen candidates of a cover, merged as phase 4 merges them. */
static void plan_of_cover(struct search *s, const struct ints *win, struct chosens *ps)
{
	for (int i = 0; i < win->n; i++) {
		const struct cand *c = &s->cands.v[win->v[i]];
		struct chosen ch = { .sg = c->sg, .t = c->t, .rule = c->rule, .cost = c->cost,
				     .measured = c->known ? c->cost : NAN };

		vec_push(ps, ch);
	}
	coalesce(s, ps);
}

/*
 * What `--search none --target LIST` would build, LIST being ts[idx[0..n)].
 * false (silently) when that list cannot place every node.
 */
static bool plan_of_none(struct search *s, const int *idx, int n, struct chosens *ps)
{
	struct target **ts = arena_alloc(s->df.arena, sizeof(*ts) * ((size_t)n + 1));
	struct partition *parts;
	struct diag_hush h;
	int np, rc;

	for (int i = 0; i < n; i++)
		ts[i] = s->ts[idx[i]];
	diag_hush_begin(s->g->ctx, &h);
	rc = collage_place_none(s->g, ts, n, s->o->patterns, &parts, &np);
	diag_hush_end(s->g->ctx, &h);
	if (rc < 0)
		return false;
	for (int i = 0; i < np; i++) {
		struct indexset in = indexset_new(s->df.arena, s->df.n);
		struct chosen ch = { .t = -1, .rule = parts[i].rule, .cost = NAN, .measured = NAN };

		for (int k = 0; k < parts[i].n_nodes; k++)
			indexset_add(&in, s->df.index[parts[i].nodes[k]]);
		for (int t = 0; t < s->nt; t++)
			if (s->ts[t] == parts[i].target)
				ch.t = t;
		if (ch.t < 0)
			BUG("a none placement used a target outside the list");
		ch.sg = subgraph_new(&s->df, &in);
		/* its cost, as for any partition, is its candidate's (NAN if none is) */
		for (int k = 0; k < s->at[ch.sg->first].n && isnan(ch.cost); k++) {
			const struct cand *c = &s->cands.v[s->at[ch.sg->first].v[k]];

			if (c->t == ch.t && indexset_eq(&c->sg->inside, &in)) {
				ch.cost = c->cost;
				ch.measured = c->known ? c->cost : NAN;
			}
		}
		vec_push(ps, ch);
	}
	return true;
}

static void add_plan(struct search *s, struct plans *pl, const char *name, struct chosens *ps)
{
	struct plan p = { name, *ps, NULL, NAN, NAN, false, -1 };
	struct cost_part *parts = arena_alloc(s->df.arena, sizeof(*parts) * ((size_t)ps->n + 1));
	struct cost_item it = { &s->df, ps->n, parts, NAN, 0 };

	for (int i = 0; i < ps->n; i++)
		parts[i] = (struct cost_part){ ps->v[i].sg, s->ts[ps->v[i].t], ps->v[i].rule };
	p.key = cost_item_key(s->df.arena, &it);
	for (int i = 0; i < pl->n && p.same < 0; i++)
		if (!strcmp(pl->v[i].key, p.key))
			p.same = i;
	vec_push(pl, p);
}

static bool plan_named(const struct plans *pl, const char *name)
{
	for (int i = 0; i < pl->n; i++)
		if (!strcmp(pl->v[i].name, name))
			return true;
	return false;
}

/* Every plan of phase 5, in order of preference on a tie: collage first. */
static void make_plans(struct search *s, const struct ints *win, struct plans *pl)
{
	struct ints gw = { 0 };
	struct chosens ps = { 0 };
	struct strbuf sb = STRBUF_INIT;
	int *idx = arena_alloc(s->df.arena, sizeof(int) * ((size_t)s->nt + 1));
	int c = -1;

	plan_of_cover(s, win, &ps);
	add_plan(s, pl, "collage", &ps);
	ps = (struct chosens){ 0 };
	greedy(s, &gw);
	plan_of_cover(s, &gw, &ps);
	add_plan(s, pl, "greedy", &ps);
	vec_free(&gw);
	for (int t = 0; t < s->nt; t++) {
		idx[t] = t;
		if (c < 0 && !strcmp(s->ts[t]->kind->name, "c"))
			c = t;
	}
	/* none over the whole list, then each target alone with c's fallback */
	for (int t = -1; t < s->nt; t++) {
		int n = 0;

		if (t < 0) {
			n = s->nt;
		} else if (t == c) {
			idx[n++] = c;
		} else if (c >= 0) {
			idx[n++] = t;
			idx[n++] = c;
		} else {
			idx[n++] = t;
		}
		sb_reset(&sb);
		for (int i = 0; i < n; i++)
			sb_printf(&sb, "%s%s", i ? "," : "none:", s->ts[idx[i]]->str);
		ps = (struct chosens){ 0 };
		/* the list once: blas with c's fallback is none:blas,c again */
		if (!plan_named(pl, sb_str(&sb)) && plan_of_none(s, idx, n, &ps))
			add_plan(s, pl, arena_strdup(s->df.arena, sb_str(&sb)), &ps);
		else
			vec_free(&ps);
		for (int i = 0; i < s->nt; i++)
			idx[i] = i;
	}
	sb_release(&sb);
}

static struct cost_key plan_key(const struct search *s, const struct plan *p)
{
	return cost_key_make(s->g->ctx, p->key, "plan", s->o->threads, s->o->cpu);
}

/* Whether plan p has a part on a kind that cannot run here (none can be timed then). */
static bool plan_idle(const struct search *s, const struct plan *p)
{
	for (int k = 0; k < p->ps.n; k++)
		if (s->idle[p->ps.v[k].t])
			return true;
	return false;
}

/*
 * Costs of the distinct plans: the cost cache first, then one
 * estimate_plans. Estimate first, only the plans plans_to_time() picks, and
 * none once the budget is spent.
 */
static int cost_plans(struct search *s, struct plans *pl)
{
	struct cost_estimator *e = s->o->estimator;
	VEC(struct cost_item) items = { 0 };
	VEC(int) owner = { 0 };
	bool *timed = arena_alloc(s->df.arena, sizeof(bool) * ((size_t)pl->n + 1));
	int rc = 0;

	for (int i = 0; i < pl->n; i++)
		timed[i] = true;
	if (s->o->guess)
		plans_to_time(s, pl, timed);
	/* without the cover's time, no other plan's can replace it */
	if (plan_idle(s, &pl->v[0]))
		for (int i = 0; i < pl->n; i++)
			timed[i] = false;
	for (int i = 0; i < pl->n; i++) {
		struct plan *p = &pl->v[i];
		struct cost_part *parts;
		struct cost_item it;

		if (p->same >= 0 || !timed[i] || plan_idle(s, p))
			continue;
		if (s->o->cache) {
			struct cost_key k = plan_key(s, p);
			int found = cost_cache_get(s->o->cache, &k, &p->cost);

			if (found < 0)
				goto fail;
			if (found) {
				p->cached = true;
				continue;
			}
		}
		parts = arena_alloc(s->df.arena, sizeof(*parts) * ((size_t)p->ps.n + 1));
		for (int k = 0; k < p->ps.n; k++)
			parts[k] = (struct cost_part){ p->ps.v[k].sg, s->ts[p->ps.v[k].t],
						       p->ps.v[k].rule };
		it = (struct cost_item){ &s->df, p->ps.n, parts, NAN, 0 };
		vec_push(&items, it);
		vec_push(&owner, i);
	}
	if (items.n) {
		double t0 = time_now(), predicted = 0;

		/* (what estimate-first paid per target: none without it) */
		for (int k = 0; k < owner.n && s->n_paid_t; k++)
			predicted += plan_charge(s, &pl->v[owner.v[k]]) * 1e-6;
		/* under a budget, the plans that were not in the cache are charged */
		if (e->estimate_plans(e, items.v, items.n) < 0)
			goto fail;
		s->spent_us += (int64_t)((time_now() - t0) * 1e6);
		s->st->measure_seconds += time_now() - t0;
		if (s->n_paid_t)
			diag_note(s->g->ctx, "plans: %d timed             %.3f s (predicted %.3f s)",
				  items.n, time_now() - t0, predicted);
		else
			diag_note(s->g->ctx, "plans: %d timed             %.3f s", items.n,
				  time_now() - t0);
	}
	if (s->o->cache && items.n) {
		if (cost_cache_begin(s->o->cache) < 0)
			goto fail;
		for (int k = 0; k < items.n; k++) {
			struct plan *p = &pl->v[owner.v[k]];
			struct cost_key key = plan_key(s, p);

			p->cost = items.v[k].cost;
			if (!isnan(p->cost) &&
			    cost_cache_put(s->o->cache, &key, p->cost,
					   arena_printf(s->df.arena, "plan %s", p->name)) < 0)
				rc = -1;
		}
		if (cost_cache_commit(s->o->cache) < 0)
			rc = -1;
	} else {
		for (int k = 0; k < items.n; k++)
			pl->v[owner.v[k]].cost = items.v[k].cost;
	}
	for (int i = 0; i < pl->n; i++)
		if (pl->v[i].same >= 0)
			pl->v[i].cost = pl->v[pl->v[i].same].cost;
	vec_free(&items);
	vec_free(&owner);
	return rc;
fail:
	vec_free(&items);
	vec_free(&owner);
	return -1;
}

/*
 * Phase 5: the fastest plan measured end to end becomes the partitions
 * (ties and failures keep the earlier plan, so the Collage cover wins when
 * nothing beats it). 0, or -1 after a diagnostic.
 */
static int check_plans(struct search *s, const struct ints *win, struct partition **out,
		       int *n_out)
{
	struct plans pl = { 0 };
	struct collage_stats *st = s->st;
	int best = 0;

	make_plans(s, win, &pl);
	if (cost_plans(s, &pl) < 0) {
		for (int i = 0; i < pl.n; i++)
			vec_free(&pl.v[i].ps);
		vec_free(&pl);
		return -1;
	}
	/* a baseline must beat the cover by more than the noise to replace it */
	for (int i = 1; i < pl.n; i++)
		if (pl.v[i].same < 0 && pl.v[i].cost < pl.v[best].cost &&
		    (best > 0 || !(pl.v[i].cost >= pl.v[0].cost * (1 - PLAN_MARGIN))))
			best = i;
	if (!isfinite(pl.v[best].cost) && !isnan(pl.v[best].cost))
		diag_warn(s->g->ctx, "no plan could be timed end to end; keeping the Collage "
			  "cover");
	st->n_plans = pl.n;
	st->plans = arena_alloc(s->g->arena, sizeof(*st->plans) * ((size_t)pl.n + 1));
	for (int i = 0; i < pl.n; i++) {
		struct collage_plan *cp = &st->plans[i];

		cp->name = pl.v[i].name;
		cp->n_partitions = pl.v[i].ps.n;
		cp->cost = pl.v[i].cost;
		cp->estimate = pl.v[i].estimate;
		cp->same_as = pl.v[i].same >= 0 ? pl.v[pl.v[i].same].name : NULL;
		cp->cached = pl.v[i].cached || (pl.v[i].same >= 0 && pl.v[pl.v[i].same].cached);
		cp->chosen = i == best;
		diag_note(s->g->ctx, "plan %-24s %3d partitions %s%.3f ms%s%s", cp->name,
			  cp->n_partitions, cp->chosen ? "*" : " ",
			  (isnan(cp->cost) ? cp->estimate : cp->cost) * 1e3,
			  isnan(cp->cost) ? " (estimate, not timed)" : "",
			  cp->same_as ? arena_printf(s->g->arena, " (= %s)", cp->same_as)
				      : cp->cached ? " (cache)" : "");
	}
	st->plan = pl.v[best].name;
	st->plan_cost = pl.v[best].cost;
	for (int k = 0; k < pl.v[best].ps.n; k++)
		if (!s->o->guess)
			pl.v[best].ps.v[k].measured = pl.v[best].ps.v[k].cost;
	order(s, &pl.v[best].ps, out, n_out);
	for (int i = 0; i < pl.n; i++)
		vec_free(&pl.v[i].ps);
	vec_free(&pl);
	return 0;
}

/* ---- --dump-ir ---- */

static int dump_candidates(struct search *s, const struct ints *win)
{
	struct strbuf sb = STRBUF_INIT;
	bool *won = arena_alloc(s->df.arena, sizeof(bool) * ((size_t)s->cands.n + 1));
	char *path = arena_printf(s->df.arena, "%s/%02d-candidates.txt", s->o->dump_dir,
				  PASS_COUNT + 1);
	int rc;

	for (int i = 0; i < win->n; i++)
		won[win->v[i]] = true;
	sb_printf(&sb, "# %d candidates (%d distinct), search %s, estimator %s, max depth %d\n",
		  s->cands.n, s->st->unique, s->o->search,
		  s->o->estimator ? s->o->estimator->name : "none", s->o->max_depth);
	for (int i = 0; i < s->cands.n; i++) {
		const struct cand *c = &s->cands.v[i];

		sb_printf(&sb, "%s%d %s %s %s depth %d kind %s", won[i] ? "*" : " ", i,
			  s->ts[c->t]->str, c->rule, indexset_str(s->df.arena, &c->sg->inside),
			  c->sg->depth, op_kind_name(c->sg->kind));
		if (isnan(c->cost))
			sb_puts(&sb, " cost unknown");
		else if (isinf(c->cost))
			sb_puts(&sb, " cost inf");
		else
			sb_printf(&sb, " cost %.9g%s", c->cost, c->cached ? " (cache)"
				  : s->o->guess && !c->known ? " (estimate)" : "");
		sb_puts(&sb, " :");
		indexset_for_each(x, &c->sg->inside) {
			const struct node *n = &s->g->nodes.v[s->df.node[x]];

			sb_printf(&sb, " %s(%s)", n->name, n->op_type);
		}
		sb_putc(&sb, '\n');
	}
	rc = file_write_atomic(path, sb_str(&sb), sb.len);
	if (rc < 0)
		diag_error_status(s->g->ctx, STATUS_ENV, "cannot write '%s': %s", path,
				  strerror(errno));
	sb_release(&sb);
	return rc;
}

/* The candidates for OUT.json, in the order of the candidates file. */
static void list_candidates(struct search *s, const struct ints *win)
{
	struct arena *a = s->g->arena;

	s->st->n_list = s->cands.n;
	s->st->list = arena_alloc(a, sizeof(*s->st->list) * ((size_t)s->cands.n + 1));
	for (int i = 0; i < s->cands.n; i++) {
		const struct cand *c = &s->cands.v[i];
		struct collage_candidate *l = &s->st->list[i];
		int *nodes = arena_alloc(a, sizeof(int) * ((size_t)indexset_count(&c->sg->inside) + 1));

		l->target = s->ts[c->t]->str;
		l->rule = c->rule;
		indexset_for_each(x, &c->sg->inside)
			nodes[l->n_nodes++] = s->df.node[x];
		l->nodes = nodes;
		l->cost = c->cost;
		l->cached = c->cached;
		l->measured = s->o->guess ? c->known : true;
	}
	for (int i = 0; i < win->n; i++)
		s->st->list[win->v[i]].chosen = true;
}

int collage_partition(struct graph *g, struct target **ts, int nt,
		      const struct pattern_set *patterns, const struct collage_options *o,
		      struct partition **out, int *n_out, struct collage_stats *st)
{
	struct search s = { .g = g, .ts = ts, .nt = nt, .o = o, .st = st };
	struct ints win = { 0 };
	double t0 = time_now();
	bool collage = !strcmp(o->search, "collage");
	int rc = -1, found;
	bool plans;

	memset(st, 0, sizeof(*st));
	s.idle = arena_alloc(g->arena, sizeof(bool) * ((size_t)nt + 1));
	for (int t = 0; t < nt; t++) {
		const char *why = ts[t]->kind->cannot_run ? ts[t]->kind->cannot_run() : NULL;

		s.idle[t] = why != NULL;
		if (why && collage)
			diag_note(g->ctx, "target '%s' cannot run here (%s): its costs are the "
				  "analytic estimator's, none measured", ts[t]->str, why);
	}
	dataflow_init(&s.df, g, g->arena);
	gather(&s, patterns);
	if (check_cover(&s) < 0)
		goto out;
	s.at = xmalloc(sizeof(*s.at) * ((size_t)s.df.n + 1));
	memset(s.at, 0, sizeof(*s.at) * ((size_t)s.df.n + 1));
	for (int i = 0; i < s.cands.n; i++)
		vec_push(&s.at[s.cands.v[i].sg->first], i);
	if (collage) {
		if (!o->estimator)
			BUG("the collage search needs an estimator");
		if (o->guess ? estimate_first(&s) < 0 : estimate(&s) < 0 || transitions(&s) < 0)
			goto out;
		unblock(&s);
		settle_unknown(&s);
		found = dijkstra(&s, &win);
		if (found < 0 && rescue(&s) > 0) {
			settle_unknown(&s);
			win.n = 0;
			found = dijkstra(&s, &win);
		}
		if (found < 0) {
			/* only candidates that cannot be built can leave a node uncovered */
			for (int i = 0; i < s.df.n; i++) {
				bool ok = false;

				for (int k = 0; k < s.cands.n && !ok; k++)
					ok = indexset_has(&s.cands.v[k].sg->inside, i) &&
					     isfinite(s.cands.v[k].cost);
				if (!ok)
					diag_error(g->ctx, "%s: no candidate for this node could be "
						   "built and run on any target",
						   node_loc(g, &g->nodes.v[s.df.node[i]]));
			}
			if (!g->ctx->n_errors)
				BUG("no cover found although every node has a candidate");
			goto out;
		}
	} else {
		greedy(&s, &win);
	}
	if (o->dump_dir && dump_candidates(&s, &win) < 0)
		goto out;
	list_candidates(&s, &win);
	st->plan = collage ? "collage" : "greedy";
	st->plan_cost = NAN;
	/*
	 * made-up bytes are no image: a model with an ImageDecoder runs no plan
	 * whole; nor does one over PLANS_MAX_WEIGHTS (the worker would hold
	 * them and what it packs from them at open)
	 */
	plans = collage && o->check_plans && o->estimator->estimate_plans && !decodes_images(g);
	if (plans && s.df.const_bytes > PLANS_MAX_WEIGHTS) {
		diag_note(g->ctx, "plans: none timed: %.2f GiB of weights (more than %d)",
			  (double)s.df.const_bytes / (1 << 30), (int)(PLANS_MAX_WEIGHTS >> 30));
		plans = false;
	}
	if (plans) {
		if (check_plans(&s, &win, out, n_out) < 0)
			goto out;
	} else {
		finalize(&s, &win, collage && !strcmp(o->estimator->name, "measure"), out, n_out);
	}
	rc = 0;
out:
	if (s.at)
		for (int i = 0; i < s.df.n; i++)
			vec_free(&s.at[i]);
	free(s.at);
	vec_free(&s.cands);
	vec_free(&win);
	calib_free(s.cal);
	st->seconds = time_now() - t0;
	return rc;
}
