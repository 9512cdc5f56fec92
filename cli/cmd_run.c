/*
 * cmd_run.c - collagec run: feed a compiled model, print or save its
 * outputs, with --check compare them with expected tensors, and with
 * --kernels say which implementation each kernel ran.
 */
#include "cli.h"
#include "../runtime/rt_float8.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_INPUT = 256, OPT_SHAPE, OPT_SEED, OPT_OUTDIR, OPT_NPY, OPT_CHECK, OPT_RTOL,
       OPT_ATOL, OPT_THREADS, OPT_KERNELS };

static bool exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* DIR/NAME.EXT for a tensor name ('/' in ONNX names becomes '_'). Owned. */
static char *tensor_file(const char *dir, const char *name, const char *ext)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "%s/", dir);
	for (const char *p = name; *p; p++)
		sb_putc(&sb, *p == '/' ? '_' : *p);
	sb_puts(&sb, ext);
	return sb_detach(&sb);
}

/*
 * DIR/PREFIX_I.pb (not for i < 0), else DIR/NAME.pb, else DIR/NAME.npy;
 * NULL if none exists.
 */
static char *find_tensor(const char *dir, const char *prefix, int i, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	const char *const exts[] = { ".pb", ".npy" };

	if (i >= 0) {
		sb_printf(&sb, "%s/%s_%d.pb", dir, prefix, i);
		if (exists(sb.buf))
			return sb_detach(&sb);
		sb_release(&sb);
	}
	for (int k = 0; k < 2; k++) {
		char *p = tensor_file(dir, name, exts[k]);

		if (exists(p))
			return p;
		free(p);
	}
	return NULL;
}

/* " \"s\"": quotes, backslashes and control bytes escaped, cut after 40 bytes. */
static void print_string(const char *s)
{
	size_t k = 0;

	printf(" \"");
	for (s = s ? s : ""; *s && k < 40; s++, k++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	printf("%s\"", *s ? "..." : "");
}

static void print_output(const struct host_tensor *t)
{
	int64_t n = host_tensor_numel(t);

	printf("%s: %s [", t->name, dtype_name(t->dtype));
	for (int i = 0; i < t->rank; i++)
		printf("%s%lld", i ? "," : "", (long long)t->dims[i]);
	printf("]");
	for (int64_t i = 0; i < n && i < 8 && dtype_is_string(t->dtype); i++)
		print_string(((const char *const *)t->data)[i]);
	for (int64_t i = 0; i < n && i < 8 && !dtype_is_string(t->dtype); i++) {
		double v;

		switch (t->dtype) {
		case DTYPE_F32: v = ((const float *)t->data)[i]; break;
		case DTYPE_F64: v = ((const double *)t->data)[i]; break;
		case DTYPE_F16: v = rt_h2f(((const uint16_t *)t->data)[i]); break;
		case DTYPE_BF16: v = rt_bf2f(((const uint16_t *)t->data)[i]); break;
		case DTYPE_I64: v = (double)((const int64_t *)t->data)[i]; break;
		case DTYPE_I32: v = ((const int32_t *)t->data)[i]; break;
		case DTYPE_I8: case DTYPE_I4: case DTYPE_I2: v = ((const int8_t *)t->data)[i]; break;
		default:
			v = ((const uint8_t *)t->data)[i];
			if (dtype_is_float8(t->dtype))
				v = rt_f82d((uint8_t)v, dtype_to_onnx(t->dtype));
			break;
		}
		printf(" %.6g", v);
	}
	printf("%s\n", n > 8 ? " ..." : "");
}

/* What run does with the outputs: --output-dir, --check, else print. */
struct run_opts {
	const char *outdir, *check;
	double rtol, atol;
	bool npy;
};

/*
 * Writes, checks or prints output t (index i; -1 for a sequence's element,
 * whose expected file is found by name alone). 0, or the exit status.
 */
static int run_output(const struct run_opts *ro, const struct host_tensor *t, int i)
{
	int rc = 0;

	if (ro->outdir) {
		char *path = tensor_file(ro->outdir, t->name, ro->npy ? ".npy" : ".pb"), *err = NULL;

		if (host_tensor_write(path, t, &err) < 0) {
			rc = cli_error(4, "%s", err);
			free(err);
		}
		free(path);
	}
	if (ro->check) {
		char *p = find_tensor(ro->check, "output", i, t->name), *err = NULL;
		struct host_tensor want;
		struct strbuf why = STRBUF_INIT;

		if (!p && i < 0)
			return cli_error(1, "check: no expected file for '%s' in %s", t->name,
					 ro->check);
		if (!p)
			return cli_error(1, "check: no expected file for output %d '%s' in %s", i,
					 t->name, ro->check);
		if (host_tensor_read(p, &want, &err) < 0) {
			rc = cli_error(1, "%s", err);
			free(err);
		} else if (tensor_compare(t, &want, ro->rtol, ro->atol, &why) < 0) {
			rc = cli_error(1, "check: output '%s': %s", t->name, sb_str(&why));
		} else if (!ro->outdir) {
			printf("%s: ok\n", t->name);
		}
		host_tensor_free(&want);
		sb_release(&why);
		free(p);
	} else if (!ro->outdir) {
		print_output(t);
	}
	return rc;
}

/* "NAME[K]" (malloc). */
static char *element_name(const char *base, int64_t k)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "%s[%lld]", base, (long long)k);
	return sb_detach(&sb);
}

/*
 * Output i, a sequence of run-time length: its elements as outputs
 * NAME[K] (NAME: the data output's name less ".data"), an absent optional
 * printed as "NAME: none". 0, or the exit status (run_output's).
 */
static int run_sequence(struct session *s, int i, const struct run_opts *ro)
{
	collagec_tensor_info info;
	struct host_tensor *t;
	int64_t n;
	size_t len;
	char *base;
	int rc = 0;

	if (session_output_elements(s, i, &t, &n) < 0)
		return cli_error(1, "%s", s->err);
	s->lib.output_info(s->m, i, &info);
	len = strlen(info.name);
	base = xstrdup(info.name);
	if (len > 5 && !strcmp(base + len - 5, ".data"))
		base[len - 5] = 0;
	if (n < 0 && !ro->outdir && !ro->check)
		printf("%s: none\n", base);
	for (int64_t k = 0; k < n && rc == 0; k++) {
		char *name = element_name(base, k);

		t[k].name = name;
		rc = run_output(ro, &t[k], -1);
		free(name);
	}
	if (rc == 0 && ro->check) {
		/* as many elements as expected: no file for one more */
		char *name = element_name(base, n < 0 ? 0 : n), *p;

		if ((p = find_tensor(ro->check, "output", -1, name)) != NULL)
			rc = cli_error(1, "check: output '%s': %lld elements, more expected in %s",
				       base, (long long)n, ro->check);
		free(p);
		free(name);
	}
	free(base);
	free(t);
	return rc;
}

/*
 * One line per kernel, tab-separated: "kernel", its index, name, partition
 * id, the implementation that ran, its condition, the ONNX nodes.
 */
static int print_kernels(struct session *s)
{
	int n = s->lib.num_kernels(s->m);

	for (int k = 0; k < n; k++) {
		collagec_kernel_info info;
		struct strbuf nodes = STRBUF_INIT;

		if (s->lib.get_kernel_info(s->m, k, &info) != COLLAGEC_OK || !info.implementation)
			return cli_error(1, "run: kernel %d: no record of the run", k);
		session_kernel_nodes(s, k, &nodes);
		printf("kernel\t%d\t%s\t%d\t%s\t%s\t%s\n", k, info.name, info.partition,
		       info.implementation, info.condition, sb_str(&nodes));
		sb_release(&nodes);
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, OPT_INPUT },
		{ "shape", required_argument, NULL, OPT_SHAPE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "output-dir", required_argument, NULL, OPT_OUTDIR },
		{ "npy", no_argument, NULL, OPT_NPY },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "rtol", required_argument, NULL, OPT_RTOL },
		{ "atol", required_argument, NULL, OPT_ATOL },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "kernels", no_argument, NULL, OPT_KERNELS },
		{ NULL, 0, NULL, 0 },
	};
	VEC(const char *) inputs = { 0 }, shapes = { 0 };
	const char *outdir = NULL, *check = NULL;
	double rtol = 1e-3, atol = 1e-7;
	uint32_t seed = 1;
	int threads = 0, c, rc = 0;	/* 0: the model's own (collagec_open's) */
	bool npy = false, kernels = false, *given = NULL;
	struct session s;
	struct run_opts ro;

	if (cli_wants_help(argc, argv, "run"))
		return 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		double num = 0;

		switch (c) {
		case OPT_INPUT: vec_push(&inputs, optarg); break;
		case OPT_SHAPE: vec_push(&shapes, optarg); break;
		case OPT_OUTDIR: outdir = optarg; break;
		case OPT_NPY: npy = true; break;
		case OPT_CHECK: check = optarg; break;
		case OPT_KERNELS: kernels = true; break;
		case OPT_SEED:
		case OPT_RTOL:
		case OPT_ATOL:
		case OPT_THREADS:
			if ((rc = cli_number("run", c == OPT_SEED ? "--seed" : c == OPT_RTOL ? "--rtol"
					     : c == OPT_ATOL ? "--atol" : "--threads", optarg,
					     c == OPT_THREADS ? 1 : 0, &num)))
				goto out_noclose;
			if (c == OPT_SEED)
				seed = (uint32_t)num;
			else if (c == OPT_RTOL)
				rtol = num;
			else if (c == OPT_ATOL)
				atol = num;
			else
				threads = (int)num;
			break;
		default:
			rc = cli_error(2, "run: unknown or incomplete option '%s' (see 'collagec "
				       "run --help')", argv[optind - 1]);
			goto out_noclose;
		}
	}
	if (optind != argc - 1) {
		cli_usage("run", stderr);
		rc = cli_error(2, "run: expected one compiled model (OUT.so)");
		goto out_noclose;
	}
	if (session_open(&s, argv[optind]) < 0) {
		rc = cli_error(1, "%s", s.err);
		session_close(&s);
		goto out_noclose;
	}
	if (threads)
		s.lib.set_threads(s.m, threads);
	if (session_check_shapes(&s, shapes.v, shapes.n) < 0) {
		rc = cli_error(2, "run: %s", s.err);
		goto out;
	}
	given = xcalloc((size_t)s.n_in + 1, 1);
	for (int i = 0, positional = 0; i < inputs.n; i++) {
		const char *eq = strchr(inputs.v[i], '=');
		int idx = eq ? -1 : positional++;
		const char *path = inputs.v[i];

		if (eq) {
			char *name = xmalloc((size_t)(eq - inputs.v[i]) + 1);

			memcpy(name, inputs.v[i], (size_t)(eq - inputs.v[i]));
			name[eq - inputs.v[i]] = 0;
			idx = session_input_index(&s, name);
			if (idx < 0) {
				rc = cli_error(2, "run: the model has no input named '%s'", name);
				free(name);
				goto out;
			}
			free(name);
			path = eq + 1;
		}
		if (idx >= s.n_in) {
			rc = cli_error(2, "run: more --input files than the model's %d inputs",
				       s.n_in);
			goto out;
		}
		if (session_file_input(&s, idx, path) < 0) {
			rc = cli_error(1, "%s", s.err);
			goto out;
		}
		given[idx] = true;
	}
	for (int i = 0; i < s.n_in; i++) {
		collagec_tensor_info info;
		char *p;

		if (given[i])
			continue;
		s.lib.input_info(s.m, i, &info);
		p = check ? find_tensor(check, "input", i, info.name) : NULL;
		if (p) {
			int r = session_file_input(&s, i, p);

			free(p);
			if (r < 0) {
				rc = cli_error(1, "%s", s.err);
				goto out;
			}
		} else {
			session_random_input(&s, i, shapes.v, shapes.n, seed);
		}
	}
	if (session_run(&s) < 0) {
		rc = cli_error(1, "%s", s.err);
		goto out;
	}
	ro = (struct run_opts){ outdir, check, rtol, atol, npy };
	if (outdir && mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		rc = cli_error(4, "cannot create '%s': %s", outdir, strerror(errno));
		goto out;
	}
	for (int i = 0; i < s.n_out; i++) {
		struct host_tensor t;
		int kind = s.lib.output_sequence(s.m, i), r;

		if (kind) {
			if ((r = run_sequence(&s, i, &ro)) != 0)
				rc = r;
			i += kind;	/* its dims and presence */
			continue;
		}
		if (session_output(&s, i, &t) < 0) {
			rc = cli_error(1, "%s", s.err);
			goto out;
		}
		if ((r = run_output(&ro, &t, i)) != 0)
			rc = r;
	}
	if (kernels && print_kernels(&s))
		rc = 1;
out:
	free(given);
	session_close(&s);
out_noclose:
	vec_free(&inputs);
	vec_free(&shapes);
	return rc;
}
