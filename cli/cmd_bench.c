/*
 * cmd_bench.c - collagec bench: warm-up, timed runs, median/p90/min, and a
 * latency gate against a saved result for CI (--baseline, exit 3).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_RUNS = 256, OPT_WARMUP, OPT_THREADS, OPT_SHAPE, OPT_JSON, OPT_BASELINE, OPT_MAXREG,
       OPT_SEED };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of sorted v. */
static double quantile(const double *v, int n, double q)
{
	int k = (int)ceil(q * n) - 1;

	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static int read_baseline(const char *path, double *median)
{
	size_t len;
	char *buf = file_read(path, &len);
	cJSON *root, *m;

	if (!buf)
		return -1;
	root = cJSON_Parse(buf);
	free(buf);
	m = root ? cJSON_GetObjectItemCaseSensitive(root, "median_ms") : NULL;
	if (!cJSON_IsNumber(m)) {
		cJSON_Delete(root);
		return -1;
	}
	*median = m->valuedouble;
	cJSON_Delete(root);
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "shape", required_argument, NULL, OPT_SHAPE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "baseline", required_argument, NULL, OPT_BASELINE },
		{ "max-regression", required_argument, NULL, OPT_MAXREG },
		{ NULL, 0, NULL, 0 },
	};
	VEC(const char *) shapes = { 0 };
	const char *baseline = NULL;
	double max_reg = -1, base_median = 0, *t = NULL, median, p90, mn, mean = 0;
	int runs = 50, warmup = 10, threads = 1, c, rc = 0;
	uint32_t seed = 1;
	bool json = false;
	struct session s;

	if (cli_wants_help(argc, argv, "bench"))
		return 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case OPT_RUNS: runs = (int)strtol(optarg, &end, 10); break;
		case OPT_WARMUP: warmup = (int)strtol(optarg, &end, 10); break;
		case OPT_THREADS: threads = (int)strtol(optarg, &end, 10); break;
		case OPT_SEED: seed = (uint32_t)strtoul(optarg, &end, 10); break;
		case OPT_SHAPE: vec_push(&shapes, optarg); break;
		case OPT_JSON: json = true; break;
		case OPT_BASELINE: baseline = optarg; break;
		case OPT_MAXREG: max_reg = strtod(optarg, &end); break;
		default:
			vec_free(&shapes);
			return cli_error(2, "bench: unknown or incomplete option '%s' (see "
					 "'collagec bench --help')", argv[optind - 1]);
		}
		if (end && *end) {
			vec_free(&shapes);
			return cli_error(2, "bench: '%s' is not a number", optarg);
		}
	}
	if (optind != argc - 1 || runs < 1 || warmup < 0 || threads < 1) {
		vec_free(&shapes);
		cli_usage("bench", stderr);
		return cli_error(2, "bench: expected one OUT.so, --runs >= 1, --warmup >= 0, "
				 "--threads >= 1");
	}
	if ((baseline != NULL) != (max_reg >= 0)) {
		vec_free(&shapes);
		return cli_error(2, "bench: --baseline and --max-regression go together");
	}
	if (baseline && read_baseline(baseline, &base_median) < 0) {
		vec_free(&shapes);
		return cli_error(2, "bench: '%s' is not a bench --json result (no median_ms)",
				 baseline);
	}
	if (session_open(&s, argv[optind]) < 0) {
		rc = cli_error(1, "%s", s.err);
		session_close(&s);
		vec_free(&shapes);
		return rc;
	}
	s.lib.set_threads(s.m, threads);
	if (session_check_shapes(&s, shapes.v, shapes.n) < 0) {
		rc = cli_error(2, "bench: %s", s.err);
		goto out;
	}
	for (int i = 0; i < s.n_in; i++)
		session_random_input(&s, i, shapes.v, shapes.n, seed);
	t = xmalloc(sizeof(double) * (size_t)runs);
	for (int i = 0; i < warmup + runs; i++) {
		double t0 = time_now();

		if (session_run(&s) < 0) {
			rc = cli_error(1, "%s", s.err);
			goto out;
		}
		if (i >= warmup)
			t[i - warmup] = (time_now() - t0) * 1e3;
	}
	for (int i = 0; i < runs; i++)
		mean += t[i] / runs;
	qsort(t, (size_t)runs, sizeof(double), cmp_double);
	median = quantile(t, runs, 0.5);
	p90 = quantile(t, runs, 0.9);
	mn = t[0];
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *txt;

		cJSON_AddStringToObject(o, "model", argv[optind]);
		cJSON_AddNumberToObject(o, "threads", threads);
		cJSON_AddNumberToObject(o, "runs", runs);
		cJSON_AddNumberToObject(o, "warmup", warmup);
		cJSON_AddNumberToObject(o, "median_ms", round(median * 1e4) / 1e4);
		cJSON_AddNumberToObject(o, "p90_ms", round(p90 * 1e4) / 1e4);
		cJSON_AddNumberToObject(o, "min_ms", round(mn * 1e4) / 1e4);
		cJSON_AddNumberToObject(o, "mean_ms", round(mean * 1e4) / 1e4);
		txt = cJSON_PrintUnformatted(o);
		printf("%s\n", txt);
		cJSON_free(txt);
		cJSON_Delete(o);
	}
	else
		printf("%s: median %.3f ms, p90 %.3f ms, min %.3f ms (%d runs, %d warm-up, "
		       "%d thread%s)\n", argv[optind], median, p90, mn, runs, warmup, threads,
		       threads == 1 ? "" : "s");
	if (baseline) {
		double limit = base_median * (1 + max_reg / 100);

		if (median > limit) {
			fprintf(stderr, "collagec: error: bench: median %.3f ms is %.1f%% slower "
				"than the baseline %.3f ms (allowed %.1f%%)\n", median,
				(median / base_median - 1) * 100, base_median, max_reg);
			rc = 3;
		}
	}
out:
	free(t);
	session_close(&s);
	vec_free(&shapes);
	return rc;
}
