/*
 * cmd_bench.c - collagec bench: warm-up, timed runs, median/p90/min, a
 * latency gate against a saved result for CI (--baseline, exit 3), and with
 * --profile the median time of every partition and kernel.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_RUNS = 256, OPT_WARMUP, OPT_THREADS, OPT_SHAPE, OPT_JSON, OPT_BASELINE, OPT_MAXREG,
       OPT_SEED, OPT_PROFILE };

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

/* Per-kernel times of the timed runs (--profile), in milliseconds. */
struct profile {
	int n_kernels, n_runs;
	double *ms;			/* [run * n_kernels + kernel] */
};

/* One partition's result: the kernels k0 .. k0+nk-1 (they are consecutive). */
struct part_time {
	int id, k0, nk;
	double median;			/* of the per-run sums of its kernels */
};

static int cmp_part_time(const void *a, const void *b)
{
	const struct part_time *x = a, *y = b;

	if (x->median != y->median)
		return x->median < y->median ? 1 : -1;
	return x->id - y->id;
}

/* Median over the runs of the time of kernels k0 .. k0+nk-1 together. */
static double profile_median(const struct profile *pr, int k0, int nk)
{
	double *v = xmalloc(sizeof(double) * (size_t)pr->n_runs), m;

	for (int r = 0; r < pr->n_runs; r++) {
		v[r] = 0;
		for (int k = k0; k < k0 + nk; k++)
			v[r] += pr->ms[r * pr->n_kernels + k];
	}
	qsort(v, (size_t)pr->n_runs, sizeof(double), cmp_double);
	m = quantile(v, pr->n_runs, 0.5);
	free(v);
	return m;
}

/*
 * Groups the kernels by partition, adds the partitions of the metadata that
 * have no kernel, and sorts them slowest first; returns how many.
 */
static int profile_parts(struct session *s, const struct profile *pr, struct part_time *pt)
{
	const cJSON *p;
	int n = 0;

	for (int k = 0; k < pr->n_kernels; k++) {
		collagec_kernel_info info;

		s->lib.get_kernel_info(s->m, k, &info);
		if (n && pt[n - 1].id == info.partition) {
			pt[n - 1].nk++;
			continue;
		}
		pt[n].id = info.partition;
		pt[n].k0 = k;
		pt[n++].nk = 1;
	}
	cJSON_ArrayForEach(p, session_partitions(s)) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(p, "id");
		bool seen = false;

		for (int i = 0; i < n && !seen; i++)
			seen = cJSON_IsNumber(id) && pt[i].id == id->valueint;
		if (!seen && cJSON_IsNumber(id))
			pt[n++] = (struct part_time){ id->valueint, 0, 0, 0 };
	}
	for (int i = 0; i < n; i++)
		pt[i].median = profile_median(pr, pt[i].k0, pt[i].nk);
	qsort(pt, (size_t)n, sizeof(*pt), cmp_part_time);
	return n;
}

static const char *meta_string(const cJSON *part, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, key));

	return v ? v : "?";
}

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

/* The --profile report: text lines, or the "profile" object of --json. */
static void profile_report(struct session *s, const struct profile *pr, cJSON *json)
{
	struct part_time *pt = xcalloc((size_t)pr->n_kernels +
				       (size_t)cJSON_GetArraySize(session_partitions(s)) + 1,
				       sizeof(*pt));
	int np = profile_parts(s, pr, pt);
	double total = 0;
	cJSON *parts = NULL;

	for (int i = 0; i < np; i++)
		total += pt[i].median;
	if (json) {
		cJSON *o = cJSON_AddObjectToObject(json, "profile");

		cJSON_AddNumberToObject(o, "kernels_ms", round_to(total, 1e-6));
		parts = cJSON_AddArrayToObject(o, "partitions");
	} else {
		printf("profile: %d partition%s, %d kernel%s, %.4f ms in kernels (sum of the "
		       "partition medians)\n", np, np == 1 ? "" : "s", pr->n_kernels,
		       pr->n_kernels == 1 ? "" : "s", total);
	}
	for (int i = 0; i < np; i++) {
		const cJSON *meta = session_partition(s, pt[i].id);
		double share = total > 0 ? pt[i].median / total * 100 : 100.0 / np;
		cJSON *pj = NULL, *ks = NULL;

		if (json) {
			const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(meta, "onnx_nodes");

			pj = cJSON_CreateObject();
			cJSON_AddNumberToObject(pj, "id", pt[i].id);
			cJSON_AddStringToObject(pj, "target", meta_string(meta, "target"));
			cJSON_AddStringToObject(pj, "rule", meta_string(meta, "rule"));
			cJSON_AddItemToObject(pj, "onnx_nodes", nodes ? cJSON_Duplicate(nodes, 1)
					      : cJSON_CreateArray());
			cJSON_AddNumberToObject(pj, "median_ms", round_to(pt[i].median, 1e-6));
			cJSON_AddNumberToObject(pj, "share_pct", round_to(share, 1e-2));
			ks = cJSON_AddArrayToObject(pj, "kernels");
			cJSON_AddItemToArray(parts, pj);
		} else {
			struct strbuf nodes = STRBUF_INIT;

			json_nodes_text(cJSON_GetObjectItemCaseSensitive(meta, "onnx_nodes"), &nodes);
			printf("partition %d: %.4f ms, %.1f%%, target %s, rule %s, nodes %s\n",
			       pt[i].id, pt[i].median, share, meta_string(meta, "target"),
			       meta_string(meta, "rule"), sb_str(&nodes));
			sb_release(&nodes);
		}
		for (int k = pt[i].k0; k < pt[i].k0 + pt[i].nk; k++) {
			collagec_kernel_info info;
			double ms = profile_median(pr, k, 1);

			s->lib.get_kernel_info(s->m, k, &info);
			if (json) {
				cJSON *kj = cJSON_CreateObject();

				cJSON_AddStringToObject(kj, "name", info.name);
				cJSON_AddStringToObject(kj, "implementation", info.implementation);
				cJSON_AddStringToObject(kj, "condition", info.condition);
				cJSON_AddNumberToObject(kj, "median_ms", round_to(ms, 1e-6));
				cJSON_AddItemToArray(ks, kj);
			} else {
				printf("  kernel %s: %.4f ms, %s if %s\n", info.name, ms,
				       info.implementation, info.condition);
			}
		}
	}
	free(pt);
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
		{ "profile", no_argument, NULL, OPT_PROFILE },
		{ NULL, 0, NULL, 0 },
	};
	VEC(const char *) shapes = { 0 };
	const char *baseline = NULL;
	double max_reg = -1, base_median = 0, *t = NULL, median, p90, mn, mean = 0;
	int runs = 50, warmup = 10, threads = 0, c, rc = 0;	/* 0: the model's own */
	uint32_t seed = 1;
	bool json = false, profile = false;
	struct profile pr = { 0 };
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
		case OPT_THREADS:
			threads = (int)strtol(optarg, &end, 10);
			if (threads < 1)
				threads = -1;	/* refused below */
			break;
		case OPT_SEED: seed = (uint32_t)strtoul(optarg, &end, 10); break;
		case OPT_SHAPE: vec_push(&shapes, optarg); break;
		case OPT_JSON: json = true; break;
		case OPT_PROFILE: profile = true; break;
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
	if (optind != argc - 1 || runs < 1 || warmup < 0 || threads < 0) {
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
	if (threads)
		s.lib.set_threads(s.m, threads);
	threads = s.lib.get_threads(s.m);	/* what the runs below use */
	if (session_check_shapes(&s, shapes.v, shapes.n) < 0) {
		rc = cli_error(2, "bench: %s", s.err);
		goto out;
	}
	for (int i = 0; i < s.n_in; i++)
		session_random_input(&s, i, shapes.v, shapes.n, seed);
	t = xmalloc(sizeof(double) * (size_t)runs);
	if (profile) {
		/* the warm-up is profiled too, so every run pays the same clock reads */
		s.lib.set_profiling(s.m, 1);
		pr.n_kernels = s.lib.num_kernels(s.m);
		pr.n_runs = runs;
		pr.ms = xcalloc((size_t)runs * (size_t)pr.n_kernels + 1, sizeof(double));
	}
	for (int i = 0; i < warmup + runs; i++) {
		double t0 = time_now();

		if (session_run(&s) < 0) {
			rc = cli_error(1, "%s", s.err);
			goto out;
		}
		if (i < warmup)
			continue;
		t[i - warmup] = (time_now() - t0) * 1e3;
		for (int k = 0; k < pr.n_kernels; k++) {
			collagec_kernel_info info;

			s.lib.get_kernel_info(s.m, k, &info);
			pr.ms[(i - warmup) * pr.n_kernels + k] = info.time_ns > 0 ?
				(double)info.time_ns / 1e6 : 0;
		}
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
		if (profile)
			profile_report(&s, &pr, o);
		txt = cJSON_PrintUnformatted(o);
		printf("%s\n", txt);
		cJSON_free(txt);
		cJSON_Delete(o);
	}
	else {
		printf("%s: median %.3f ms, p90 %.3f ms, min %.3f ms (%d runs, %d warm-up, "
		       "%d thread%s)\n", argv[optind], median, p90, mn, runs, warmup, threads,
		       threads == 1 ? "" : "s");
		if (profile)
			profile_report(&s, &pr, NULL);
	}
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
	free(pr.ms);
	session_close(&s);
	vec_free(&shapes);
	return rc;
}
