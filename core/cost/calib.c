/*
 * calib.c - calibration of the analytic estimator (cost.h): per class
 * ("TARGET:Op"), the log of measured / estimated seconds over its samples.
 *
 * A class with n samples of mean m and variance v, on a target whose
 * samples (all classes) have mean mt and variance vt, estimates
 * exp(m') * estimate with
 *
 *	m' = (n * m + K * mt) / (n + K)
 *	s^2 = (n >= 2 ? v : vt) + S0^2 / (n + 1)
 *	factor = exp(Z * s)
 *
 * and a target without samples uses mt = 0 and vt = S0^2: the analytic
 * estimate as it is, likely within a factor of exp(Z * S0 * sqrt(2)).
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#define K 2.0		/* samples a target's mean is worth in a class's */
#define S0 0.8		/* log-spread of a class nobody measured */
#define Z 1.5		/* interval half-width, in spreads */

struct sample_set {
	char *name;			/* class, or target for a pool */
	VEC(double) x;			/* log(measured / estimate) */
	double mean, var;
};

struct calib {
	VEC(struct sample_set) cls, tgt;
	bool fitted;
};

struct calib *calib_new(void)
{
	return xcalloc(1, sizeof(struct calib));
}

static struct sample_set *set_of(void *v, const char *name, size_t len, bool make)
{
	struct calib_sets {
		VEC(struct sample_set);
	} *sets = v;

	for (int i = 0; i < sets->n; i++)
		if (strlen(sets->v[i].name) == len && !strncmp(sets->v[i].name, name, len))
			return &sets->v[i];
	if (!make)
		return NULL;
	{
		struct sample_set s = { 0 };

		s.name = xmalloc(len + 1);
		memcpy(s.name, name, len);
		s.name[len] = 0;
		vec_push(sets, s);
	}
	return &sets->v[sets->n - 1];
}

/* The target part of "TARGET:Op". */
static size_t target_len(const char *cls)
{
	const char *colon = strrchr(cls, ':');

	return colon ? (size_t)(colon - cls) : strlen(cls);
}

void calib_add(struct calib *c, const char *cls, double estimate, double seconds)
{
	double x;

	if (!cls || !isfinite(estimate) || !isfinite(seconds) || estimate <= 0 || seconds <= 0)
		return;
	x = log(seconds / estimate);
	vec_push(&set_of(&c->cls, cls, strlen(cls), true)->x, x);
	vec_push(&set_of(&c->tgt, cls, target_len(cls), true)->x, x);
	c->fitted = false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void fit_set(struct sample_set *s)
{
	double sum = 0, sq = 0;

	qsort(s->x.v, (size_t)s->x.n, sizeof(double), cmp_double);
	for (int i = 0; i < s->x.n; i++)
		sum += s->x.v[i];
	s->mean = s->x.n ? sum / s->x.n : 0;
	for (int i = 0; i < s->x.n; i++)
		sq += (s->x.v[i] - s->mean) * (s->x.v[i] - s->mean);
	s->var = s->x.n >= 2 ? sq / (s->x.n - 1) : S0 * S0;
}

void calib_fit(struct calib *c)
{
	for (int i = 0; i < c->cls.n; i++)
		fit_set(&c->cls.v[i]);
	for (int i = 0; i < c->tgt.n; i++)
		fit_set(&c->tgt.v[i]);
	c->fitted = true;
}

double calib_apply(const struct calib *c, const char *cls, double estimate, double *factor)
{
	const struct sample_set *cs, *ts;
	double mt = 0, vt = S0 * S0, m, v, n;

	if (!c->fitted)
		BUG("calib_apply before calib_fit");
	cs = set_of((void *)&c->cls, cls, strlen(cls), false);
	ts = set_of((void *)&c->tgt, cls, target_len(cls), false);
	if (ts && ts->x.n) {
		mt = ts->mean;
		vt = ts->x.n >= 2 ? ts->var : S0 * S0;
	}
	n = cs ? cs->x.n : 0;
	m = cs ? (n * cs->mean + K * mt) / (n + K) : mt;
	v = (n >= 2 ? cs->var : vt) + S0 * S0 / (n + 1);
	*factor = exp(Z * sqrt(v));
	return estimate * exp(m);
}

void calib_free(struct calib *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->cls.n; i++) {
		free(c->cls.v[i].name);
		vec_free(&c->cls.v[i].x);
	}
	for (int i = 0; i < c->tgt.n; i++) {
		free(c->tgt.v[i].name);
		vec_free(&c->tgt.v[i].x);
	}
	vec_free(&c->cls);
	vec_free(&c->tgt);
	free(c);
}
