/*
 * cmd_conformance.c - collagec conformance: compiles and checks ONNX
 * backend test folders (model.onnx + test_data_set_N/{input,output}_K.pb).
 * Each test runs in a child process, so a crashing kernel fails one test
 * and not the run; -j runs several at once.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "onnx.pb-c.h"

#include "../backends/backends.h"
#include "../core/collage/pattern.h"

enum { OPT_TARGET = 256, OPT_RTOL, OPT_ATOL, OPT_EXPECT, OPT_JSON, OPT_TIMEOUT, OPT_OPT,
       OPT_PATTERNS, OPT_CPU };

#define MAX_PATTERN_FILES 16

struct conf_opts {
	const char *targets;
	const char *cflags;
	const char *cpu;	/* --cpu level */
	double rtol, atol;
	int timeout;
	const char *patterns[MAX_PATTERN_FILES];	/* --patterns, in order */
	int n_patterns;
};

struct test {
	char *dir;		/* test folder (owned) */
	const char *name;	/* its basename */
	pid_t pid;
	int fd;			/* read end of the child's report pipe */
	bool pass;
	char *why;		/* failure reason (owned) */
};

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool has_model(const char *dir)
{
	char *p = xmalloc(strlen(dir) + 16);
	bool ok;

	sprintf(p, "%s/model.onnx", dir);
	ok = access(p, R_OK) == 0;
	free(p);
	return ok;
}

struct strv {
	char **v;
	int n, cap;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Test folders under dir (or dir itself), sorted by name. */
struct test_list {
	struct test *v;
	int n, cap;
};

static void collect(const char *dir, struct test_list *tests)
{
	DIR *d;
	struct dirent *e;
	VEC(char *) names = { 0 };

	if (has_model(dir)) {
		struct test t = { 0 };

		t.dir = xstrdup(dir);
		vec_push(tests, t);
		return;
	}
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			vec_push(&names, xstrdup(e->d_name));
	closedir(d);
	if (names.n)
		qsort(names.v, (size_t)names.n, sizeof(char *), cmp_str);
	for (int i = 0; i < names.n; i++) {
		char *p = xmalloc(strlen(dir) + strlen(names.v[i]) + 2);

		sprintf(p, "%s/%s", dir, names.v[i]);
		if (is_dir(p) && has_model(p)) {
			struct test t = { 0 };

			t.dir = p;
			vec_push(tests, t);
		} else {
			free(p);
		}
		free(names.v[i]);
	}
	vec_free(&names);
}

/*
 * The model's graph inputs (initializers left out) and outputs: which are
 * sequences or optionals, whose test data are SequenceProto/OptionalProto
 * files and which the compiled model takes and gives one tensor per element.
 */
struct io {
	char *name;		/* owned */
	bool seq;		/* a sequence or an optional */
	bool opt;		/* an optional */
	bool opt_tensor;	/* an optional of a tensor: its element is "NAME" */
};

struct model_io {
	struct io *in, *out;
	int n_in, n_out;
	bool random;		/* the graph has a random op (is_random_node) */
};

/*
 * Whether node gives random values: its expected outputs came from numpy's
 * generator, which collagec's (runtime/rt_random.h) does not reproduce, so
 * a mismatch of values alone gets that reason (the test still fails).
 */
static bool is_random_node(const Onnx__NodeProto *node)
{
	static const char *const ops[] = { "Bernoulli", "Multinomial", "RandomNormal",
					   "RandomNormalLike", "RandomUniform",
					   "RandomUniformLike" };

	if (!strcmp(node->op_type, "Dropout"))
		return node->n_input > 2 && node->input[2][0];
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(node->op_type, ops[i]))
			return true;
	return false;
}

static void io_of(const Onnx__ValueInfoProto *vi, struct io *io)
{
	const Onnx__TypeProto *tp = vi->type;

	memset(io, 0, sizeof(*io));
	io->name = xstrdup(vi->name);
	if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return;
	io->seq = true;
	io->opt = tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
	while (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		bool opt = tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;

		tp = opt ? tp->optional_type->elem_type
			: tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE
			? tp->sequence_type->elem_type : NULL;
		if (opt && tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
			io->opt_tensor = true;
	}
}

static int model_io_read(const char *path, struct model_io *mi)
{
	size_t len;
	char *buf = file_read(path, &len);
	Onnx__ModelProto *mp = buf ? onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf)
		: NULL;
	const Onnx__GraphProto *gp = mp ? mp->graph : NULL;

	free(buf);
	memset(mi, 0, sizeof(*mi));
	if (!gp) {
		if (mp)
			onnx__model_proto__free_unpacked(mp, NULL);
		return -1;
	}
	mi->in = xmalloc(sizeof(struct io) * (gp->n_input + 1));
	for (size_t i = 0; i < gp->n_input; i++) {
		bool init = false;

		for (size_t k = 0; k < gp->n_initializer && !init; k++)
			init = !strcmp(gp->initializer[k]->name, gp->input[i]->name);
		if (!init)
			io_of(gp->input[i], &mi->in[mi->n_in++]);
	}
	for (size_t i = 0; i < gp->n_node; i++)
		mi->random |= is_random_node(gp->node[i]);
	mi->out = xmalloc(sizeof(struct io) * (gp->n_output + 1));
	for (size_t i = 0; i < gp->n_output; i++)
		io_of(gp->output[i], &mi->out[mi->n_out++]);
	onnx__model_proto__free_unpacked(mp, NULL);
	return 0;
}

static void model_io_release(struct model_io *mi)
{
	for (int i = 0; i < mi->n_in; i++)
		free(mi->in[i].name);
	for (int i = 0; i < mi->n_out; i++)
		free(mi->out[i].name);
	free(mi->in);
	free(mi->out);
}

static void free_elems(struct host_tensor *t, int n)
{
	for (int i = 0; i < n; i++)
		host_tensor_free(&t[i]);
	free(t);
}

static void bind_shape(struct strv *shapes, const char *name, const struct host_tensor *t)
{
	struct strbuf b = STRBUF_INIT;

	sb_printf(&b, "%s=", name);
	for (int d = 0; d < t->rank; d++)
		sb_printf(&b, "%s%lld", d ? "," : "", (long long)t->dims[d]);
	vec_push(shapes, sb_detach(&b));
	sb_release(&b);
}

/*
 * A model with sequence or optional inputs is compiled for data set 0: the
 * element counts (--elements) and the shapes of all its inputs (--shape),
 * since a sequence's elements may differ in size where the type names one
 * dim for them all, and tensor inputs may share such a dim.
 */
static int bind_elements(const struct model_io *mi, const char *dir, struct strv *elements,
			 struct strv *shapes, struct strbuf *why)
{
	bool any = false;

	for (int i = 0; i < mi->n_in; i++)
		any |= mi->in[i].seq;
	for (int i = 0; i < mi->n_in && any; i++) {
		const struct io *io = &mi->in[i];
		struct host_tensor *t;
		struct strbuf b = STRBUF_INIT;
		char *p, *err = NULL;
		bool present;
		int n;

		p = xmalloc(strlen(dir) + 48);
		sprintf(p, "%s/test_data_set_0/input_%d.pb", dir, i);
		if (!io->seq) {
			struct host_tensor ht;

			if (host_tensor_read(p, &ht, &err) == 0) {
				bind_shape(shapes, io->name, &ht);
				host_tensor_free(&ht);
			}
			free(err);
			free(p);
			continue;
		}
		if (host_elements_read(p, &t, &n, &present, &err) < 0) {
			sb_printf(why, "%s", err);
			free(err);
			free(p);
			return -1;
		}
		free(p);
		if (io->opt && (io->opt_tensor || !present))
			sb_printf(&b, "%s=%s", io->name, present ? "1" : "none");
		else
			sb_printf(&b, "%s=%d", io->name, n);
		vec_push(elements, sb_detach(&b));
		sb_release(&b);
		for (int k = 0; k < n; k++) {
			char *nm = xmalloc(strlen(io->name) + 16);

			if (io->opt_tensor)
				strcpy(nm, io->name);
			else
				sprintf(nm, "%s[%d]", io->name, k);
			bind_shape(shapes, nm, &t[k]);
			free(nm);
		}
		free_elems(t, n);
	}
	return 0;
}

/* Feeds data set sd's inputs: a sequence's elements one compiled input each. */
static int feed_inputs(struct session *s, const struct model_io *mi, const char *sd,
		       int set, struct strbuf *why)
{
	int cur = 0;

	for (int i = 0; i < mi->n_in; i++) {
		char *p = xmalloc(strlen(sd) + 32), *err = NULL;
		struct host_tensor *t;
		bool present;
		int n, rc = 0;

		sprintf(p, "%s/input_%d.pb", sd, i);
		if (!mi->in[i].seq) {
			if (cur >= s->n_in) {
				sb_printf(why, "set %d: the data have more inputs than the model",
					  set);
				rc = -1;
			} else if (session_file_input(s, cur++, p) < 0) {
				sb_printf(why, "set %d: %s", set, s->err);
				rc = -1;
			}
		} else if (host_elements_read(p, &t, &n, &present, &err) < 0) {
			sb_printf(why, "set %d: %s", set, err);
			free(err);
			rc = -1;
		} else {
			for (int k = 0; k < n && rc == 0; k++) {
				if (cur >= s->n_in) {
					sb_printf(why, "set %d: sequence lengths differ from those "
						  "of set 0, which the model was compiled for", set);
					rc = -1;
				} else if (session_tensor_input(s, cur++, &t[k]) < 0) {
					sb_printf(why, "set %d: %s", set, s->err);
					rc = -1;
				}
			}
			free_elems(t, n);
		}
		free(p);
		if (rc < 0)
			return -1;
	}
	if (cur != s->n_in) {
		sb_printf(why, "set %d: sequence lengths differ from those of set 0, which the "
			  "model was compiled for", set);
		return -1;
	}
	return 0;
}

/* Whether got and want have one dtype and shape (so that only values differ). */
static bool same_layout(const struct host_tensor *got, const struct host_tensor *want)
{
	if (got->dtype != want->dtype || got->rank != want->rank)
		return false;
	for (int i = 0; i < got->rank; i++)
		if (got->dims[i] != want->dims[i])
			return false;
	return true;
}

static int check_output(struct session *s, int cur, const struct host_tensor *want,
			const struct conf_opts *co, bool random, int set, int k,
			struct strbuf *why)
{
	struct host_tensor got;

	if (cur >= s->n_out) {
		sb_printf(why, "set %d output %d: the model gives fewer outputs", set, k);
		return -1;
	}
	if (session_output(s, cur, &got) < 0) {
		sb_printf(why, "set %d: %s", set, s->err);
		return -1;
	}
	if (tensor_compare(&got, want, co->rtol, co->atol, why) < 0) {
		char *msg = xstrdup(sb_str(why));

		sb_reset(why);
		sb_printf(why, "set %d output %d: %s%s", set, k,
			  random && same_layout(&got, want)
			  ? "random op: shape and dtype match; values come from a different "
			    "generator than numpy's: " : "", msg);
		free(msg);
		return -1;
	}
	return 0;
}

/*
 * Compares a sequence of run-time length, the compiled outputs from cur
 * on, with the n expected elements t (present: an optional holds one).
 * Returns how many outputs it took, or -1 with a reason.
 */
static int check_sequence(struct session *s, int cur, const struct host_tensor *t, int n,
			  bool present, const struct conf_opts *co, int set, int k,
			  struct strbuf *why)
{
	int kind = s->lib.output_sequence(s->m, cur);
	struct host_tensor *got;
	int64_t len;
	int rc = 0;

	if (session_output_elements(s, cur, &got, &len) < 0) {
		sb_printf(why, "set %d: %s", set, s->err);
		return -1;
	}
	if ((len < 0) != !present || (len >= 0 && len != n)) {
		sb_printf(why, "set %d output %d: %lld elements, expected %d", set, k,
			  (long long)len, present ? n : -1);
		rc = -1;
	}
	for (int e = 0; e < n && rc == 0; e++)
		if (tensor_compare(&got[e], &t[e], co->rtol, co->atol, why) < 0) {
			char *msg = xstrdup(sb_str(why));

			sb_reset(why);
			sb_printf(why, "set %d output %d element %d: %s", set, k, e, msg);
			free(msg);
			rc = -1;
		}
	free(got);
	return rc < 0 ? -1 : kind == 2 ? 3 : 2;
}

/* Compares data set sd's expected outputs: a sequence's element by element. */
static int check_outputs(struct session *s, const struct model_io *mi, const char *sd,
			 int set, const struct conf_opts *co, struct strbuf *why)
{
	int cur = 0, rc = 0;

	for (int i = 0; i < mi->n_out && rc == 0; i++) {
		char *p = xmalloc(strlen(sd) + 32), *err = NULL;
		struct host_tensor *t, want;
		bool present;
		int n;

		sprintf(p, "%s/output_%d.pb", sd, i);
		if (!mi->out[i].seq) {
			if (host_tensor_read(p, &want, &err) < 0) {
				sb_printf(why, "set %d: %s", set, err);
				free(err);
				rc = -1;
			} else {
				rc = check_output(s, cur++, &want, co, mi->random, set, i, why);
				host_tensor_free(&want);
			}
		} else if (host_elements_read(p, &t, &n, &present, &err) < 0) {
			sb_printf(why, "set %d: %s", set, err);
			free(err);
			rc = -1;
		} else if (cur < s->n_out && s->lib.output_sequence(s->m, cur)) {
			int used = check_sequence(s, cur, t, n, present, co, set, i, why);

			rc = used < 0 ? -1 : 0;
			cur += used < 0 ? 0 : used;
			free_elems(t, n);
		} else {
			for (int k = 0; k < n && rc == 0; k++)
				rc = check_output(s, cur++, &t[k], co, mi->random, set, i,
						  why);
			free_elems(t, n);
		}
		free(p);
	}
	if (rc == 0 && cur != s->n_out) {
		sb_printf(why, "set %d: the model gives %d outputs, the data %d", set, s->n_out, cur);
		rc = -1;
	}
	return rc;
}

/* In the child: compile, run every data set, compare. Writes a reason on failure. */
static int run_one(const struct test *t, const struct conf_opts *co, struct strbuf *why)
{
	struct collagec_ctx ctx;
	struct compile_options o = { 0 };
	struct strbuf diag = STRBUF_INIT;
	char *tmp = dir_make_temp("conf"), *so, *model;
	struct session s;
	struct model_io mi = { 0 };
	struct strv elements = { 0 }, shapes = { 0 };
	int rc = 0, nsets = 0;

	if (!tmp) {
		sb_puts(why, "cannot create a temporary directory");
		return -1;
	}
	so = xmalloc(strlen(tmp) + 16);
	sprintf(so, "%s/model.so", tmp);
	model = xmalloc(strlen(t->dir) + 16);
	sprintf(model, "%s/model.onnx", t->dir);
	ctx_init(&ctx);
	ctx.diag_out = NULL;
	ctx.capture = &diag;
	o.model = model;
	o.out = so;
	o.targets = co->targets;
	o.pattern_files = co->patterns;
	o.n_pattern_files = co->n_patterns;
	o.search = "none";
	o.kinds = backend_registry;
	o.n_kinds = backend_registry_count;
	o.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : COLLAGEC_DEFAULT_CC;
	o.cflags = co->cflags;
	o.cpu = co->cpu;
	if (model_io_read(model, &mi) < 0) {
		sb_printf(why, "%s: not an ONNX model", model);
		rc = -1;
		goto out;
	}
	if (bind_elements(&mi, t->dir, &elements, &shapes, why) < 0) {
		rc = -1;
		goto out;
	}
	o.elements = (const char *const *)elements.v;
	o.n_elements = elements.n;
	o.shapes = (const char *const *)shapes.v;
	o.n_shapes = shapes.n;
	if (collagec_compile(&ctx, &o, NULL) < 0) {
		char *nl;

		sb_puts(why, "compile: ");
		sb_puts(why, sb_str(&diag) + (diag.len > 17 ? 17 : 0));
		nl = strchr(why->buf, '\n');
		if (nl) {
			*nl = 0;
			why->len = (size_t)(nl - why->buf);
		}
		rc = -1;
		goto out;
	}
	if (session_open(&s, so) < 0) {
		sb_puts(why, s.err);
		session_close(&s);
		rc = -1;
		goto out;
	}
	for (int set = 0; rc == 0; set++) {
		char *sd = xmalloc(strlen(t->dir) + 32);

		sprintf(sd, "%s/test_data_set_%d", t->dir, set);
		if (!is_dir(sd)) {
			free(sd);
			break;
		}
		nsets++;
		if (feed_inputs(&s, &mi, sd, set, why) < 0)
			rc = -1;
		if (rc == 0 && session_run(&s) < 0) {
			sb_printf(why, "set %d: %s", set, s.err);
			rc = -1;
		}
		if (rc == 0 && check_outputs(&s, &mi, sd, set, co, why) < 0)
			rc = -1;
		free(sd);
	}
	session_close(&s);
	if (rc == 0 && nsets == 0) {
		sb_puts(why, "no test_data_set_* folders");
		rc = -1;
	}
out:
	model_io_release(&mi);
	for (int i = 0; i < elements.n; i++)
		free(elements.v[i]);
	for (int i = 0; i < shapes.n; i++)
		free(shapes.v[i]);
	vec_free(&elements);
	vec_free(&shapes);
	ctx_release(&ctx);
	sb_release(&diag);
	dir_remove_tree(tmp);
	free(tmp);
	free(so);
	free(model);
	return rc;
}

static void start(struct test *t, const struct conf_opts *co)
{
	int fds[2];

	if (pipe(fds) < 0) {
		t->pid = -1;
		t->why = xstrdup("pipe failed");
		return;
	}
	fflush(NULL);
	t->pid = fork();
	if (t->pid == 0) {
		struct strbuf why = STRBUF_INIT;
		int rc;

		close(fds[0]);
		alarm((unsigned)co->timeout);
		rc = run_one(t, co, &why);
		if (rc < 0 && why.len)
			(void)!write(fds[1], why.buf, why.len);
		_exit(rc < 0 ? 1 : 0);
	}
	close(fds[1]);
	t->fd = fds[0];
}

static void finish(struct test *t, const struct conf_opts *co)
{
	struct strbuf why = STRBUF_INIT;
	char buf[512];
	ssize_t n;
	int st = 0;

	if (t->pid < 0)
		return;
	while ((n = read(t->fd, buf, sizeof(buf))) > 0)
		sb_add(&why, buf, (size_t)n);
	close(t->fd);
	while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		t->pass = true;
	} else {
		if (WIFSIGNALED(st)) {
			sb_reset(&why);
			if (WTERMSIG(st) == SIGALRM)
				sb_printf(&why, "timed out after %d s", co->timeout);
			else
				sb_printf(&why, "crashed (%s)", strsignal(WTERMSIG(st)));
		}
		t->why = sb_detach(&why);
	}
	sb_release(&why);
}

static char **read_expect(const char *path, int *n)
{
	size_t len;
	char *buf = file_read(path, &len), *save, *line;
	char **v = NULL;

	*n = 0;
	if (!buf)
		return NULL;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!line[0] || line[0] == '#')
			continue;
		v = xrealloc(v, sizeof(char *) * (size_t)(*n + 1));
		v[(*n)++] = xstrdup(line);
	}
	free(buf);
	return v;
}

int cmd_conformance(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "rtol", required_argument, NULL, OPT_RTOL },
		{ "atol", required_argument, NULL, OPT_ATOL },
		{ "expect", required_argument, NULL, OPT_EXPECT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "opt", required_argument, NULL, OPT_OPT },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "patterns", required_argument, NULL, OPT_PATTERNS },
		{ "jobs", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	struct conf_opts co = { "c", "-O1", COLLAGEC_DEFAULT_CPU, 1e-3, 1e-7, 120, { NULL }, 0 };
	struct test_list tests = { 0 };
	const char *expect = NULL;
	bool json = false, quiet = false;
	int jobs = 2, c, passed = 0, failed = 0, regressed = 0, n_exp = 0, next = 0;
	char **exp = NULL;

	if (cli_wants_help(argc, argv, "conformance"))
		return 0;
	opterr = 0;
	optind = 1;
	if (getenv("COLLAGEC_CFLAGS") && *getenv("COLLAGEC_CFLAGS"))
		co.cflags = getenv("COLLAGEC_CFLAGS");
	while ((c = getopt_long(argc, argv, "j:q", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TARGET: co.targets = optarg; break;
		case OPT_RTOL:
		case OPT_ATOL:
		case OPT_TIMEOUT:
		case 'j': {
			double num;
			int r = cli_number("conformance", c == OPT_RTOL ? "--rtol" : c == OPT_ATOL ?
					   "--atol" : c == OPT_TIMEOUT ? "--timeout" : "-j", optarg,
					   c == OPT_RTOL || c == OPT_ATOL ? 0 : 1, &num);

			if (r)
				return r;
			if (c == OPT_RTOL)
				co.rtol = num;
			else if (c == OPT_ATOL)
				co.atol = num;
			else if (c == OPT_TIMEOUT)
				co.timeout = (int)num;
			else
				jobs = (int)num;
			break;
		}
		case OPT_EXPECT: expect = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_OPT: co.cflags = optarg; break;
		case OPT_CPU:
			if (!emit_cpu_flags(optarg))
				return cli_error(2, "conformance: unknown --cpu '%s' (%s)", optarg,
						 emit_cpu_levels);
			co.cpu = optarg;
			break;
		case OPT_PATTERNS:
			if (co.n_patterns == MAX_PATTERN_FILES)
				return cli_error(2, "conformance: more than %d --patterns files",
						 MAX_PATTERN_FILES);
			co.patterns[co.n_patterns++] = optarg;
			break;
		case 'q': quiet = true; break;
		default:
			return cli_error(2, "conformance: unknown or incomplete option '%s' (see "
					 "'collagec conformance --help')", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_error(2, "conformance: expected one or more test folders");
	if (co.n_patterns) {
		/* a bad pattern file is one usage error, not a failure of every test */
		struct pattern_set set = { { 0 } };
		struct collagec_ctx ctx;
		int st;

		ctx_init(&ctx);
		st = pattern_load(&ctx, backend_registry, backend_registry_count, co.patterns,
				  co.n_patterns, &set) < 0 ? (int)ctx.status : 0;
		pattern_set_release(&set);
		ctx_release(&ctx);
		if (st)
			return st;
	}
	if (expect && !(exp = read_expect(expect, &n_exp)))
		return cli_error(2, "conformance: cannot read '%s': %s", expect, strerror(errno));
	for (int i = optind; i < argc; i++) {
		int before = tests.n;

		collect(argv[i], &tests);
		if (tests.n == before)
			return cli_error(1, "conformance: no tests (model.onnx) under '%s'", argv[i]);
	}
	for (int i = 0; i < tests.n; i++) {
		const char *sl = strrchr(tests.v[i].dir, '/');

		tests.v[i].name = sl ? sl + 1 : tests.v[i].dir;
	}
	/* keep `jobs` children running; report in order */
	for (int i = 0; i < tests.n; i++) {
		while (next < tests.n && next < i + jobs)
			start(&tests.v[next++], &co);
		finish(&tests.v[i], &co);
		if (tests.v[i].pass)
			passed++;
		else
			failed++;
		if (json)
			continue;
		if (tests.v[i].pass && !quiet)
			printf("PASS %s\n", tests.v[i].name);
		else if (!tests.v[i].pass && !quiet)
			printf("FAIL %s: %s\n", tests.v[i].name, tests.v[i].why ? tests.v[i].why : "");
		fflush(stdout);
	}
	for (int e = 0; e < n_exp; e++) {
		bool ok = false, found = false;

		for (int i = 0; i < tests.n; i++)
			if (!strcmp(tests.v[i].name, exp[e])) {
				found = true;
				ok = tests.v[i].pass;
			}
		if (!ok) {
			regressed++;
			fprintf(stderr, "collagec: error: conformance: expected pass '%s' %s\n",
				exp[e], found ? "now fails" : "was not run");
		}
	}
	if (json) {
		cJSON *o = cJSON_CreateObject(), *arr;
		char *txt;

		cJSON_AddNumberToObject(o, "passed", passed);
		cJSON_AddNumberToObject(o, "failed", failed);
		cJSON_AddNumberToObject(o, "regressed", regressed);
		arr = cJSON_AddArrayToObject(o, "tests");
		for (int i = 0; i < tests.n; i++) {
			cJSON *t = cJSON_CreateObject();

			cJSON_AddStringToObject(t, "name", tests.v[i].name);
			cJSON_AddBoolToObject(t, "pass", tests.v[i].pass);
			if (!tests.v[i].pass)
				cJSON_AddStringToObject(t, "reason", tests.v[i].why ? tests.v[i].why : "");
			cJSON_AddItemToArray(arr, t);
		}
		txt = cJSON_Print(o);
		printf("%s\n", txt);
		cJSON_free(txt);
		cJSON_Delete(o);
	} else {
		printf("conformance: %d passed, %d failed", passed, failed);
		if (expect)
			printf(", %d of %d expected passes regressed", regressed, n_exp);
		printf("\n");
	}
	for (int i = 0; i < tests.n; i++) {
		free(tests.v[i].dir);
		free(tests.v[i].why);
	}
	for (int e = 0; e < n_exp; e++)
		free(exp[e]);
	free(exp);
	vec_free(&tests);
	/* with --expect only regressions fail the run; without, any failure does */
	return (expect ? regressed : failed) ? 1 : 0;
}
