/*
 * cli.h - the command-line front end: the subcommand table (main.c) and
 * what the subcommands share (session.c: loading a compiled model, feeding
 * inputs, comparing outputs). Only cli/ calls exit().
 */
#ifndef COLLAGEC_CLI_H
#define COLLAGEC_CLI_H

#include "../core/compile.h"
#include "../core/emit/emit.h"
#include "../core/onnx/onnx.h"
#include "../runtime/loader.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);	/* returns the exit status */
	const char *summary;
	const char *usage;
};

extern const struct command commands[];

int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_targets(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_explain(int argc, char **argv);

/* Prints "collagec: error: ..." and returns status (for `return usage_error(...)`). */
PRINTF_LIKE(2, 3) int cli_error(int status, const char *fmt, ...);
/* Parses a number >= min for option opt; 0, or 2 after a usage error. */
int cli_number(const char *cmd, const char *opt, const char *arg, double min, double *out);
/* Prints the usage of a command to f. */
void cli_usage(const char *cmd, FILE *f);
/* Handles -h/--help: prints usage and returns true. */
bool cli_wants_help(int argc, char **argv, const char *cmd);

/* ---- sessions: a loaded model with its inputs (session.c) ---- */

struct cJSON;

struct session {
	struct model_lib lib;
	collagec_model *m;
	int n_in, n_out;
	struct host_tensor *in;		/* owned input tensors */
	void **unpacked;		/* per output: a sub-byte one unpacked (owned) */
	char *err;			/* last error (owned) */
	struct cJSON *meta;		/* collagec_metadata() parsed, or NULL (owned) */
};

int session_open(struct session *s, const char *so);
void session_close(struct session *s);
/*
 * Random input i (ortbench-compatible: mulberry32(seed ^ fnv1a(name)),
 * floats in [-1,1), integers in [0,100), bools 0/1). Symbolic dims come from
 * shapes ("NAME=DIMS" for an input or a symbol), else 1.
 */
int session_random_input(struct session *s, int i, const char *const *shapes, int n_shapes,
			 uint32_t seed);
int session_file_input(struct session *s, int i, const char *path);
/* Input i from tensor t, which the session takes over (t is cleared). */
int session_tensor_input(struct session *s, int i, struct host_tensor *t);
/* Every --shape names an input or a symbolic dim of the model; -1 (s->err) if not. */
int session_check_shapes(struct session *s, const char *const *shapes, int n);
int session_input_index(struct session *s, const char *name);
int session_run(struct session *s);
/* Output i as a tensor whose data is borrowed from the model (a sub-byte one: the session). */
int session_output(struct session *s, int i, struct host_tensor *t);
/*
 * Output i, the data of a sequence of run-time length (the model's
 * output_sequence), as its elements: *t (owned: free; the data borrowed
 * from the model), *n of them, -1 for an absent optional.
 */
int session_output_elements(struct session *s, int i, struct host_tensor **t, int64_t *n);
/*
 * The partitions array of the model's embedded metadata (parsed on first
 * use; borrowed from the session), or NULL when the metadata lacks it; the
 * object of partition id in it, or NULL.
 */
const struct cJSON *session_partitions(struct session *s);
const struct cJSON *session_partition(struct session *s, int id);
/*
 * Appends the ONNX nodes of kernel k (collagec_get_kernel_info order) as
 * "name(Op) name(Op)": the kernel's onnx_nodes in the metadata, else its
 * partition's; nothing when the metadata does not say.
 */
void session_kernel_nodes(struct session *s, int k, struct strbuf *sb);
/* Appends a metadata onnx_nodes array as "name(Op) name(Op)". */
void json_nodes_text(const struct cJSON *nodes, struct strbuf *sb);

/*
 * Compares got with want: shapes and dtypes equal, |g - w| <= atol + rtol*|w|
 * (NaN equals NaN, integers exactly). 0 when they match; else a reason in *why.
 */
int tensor_compare(const struct host_tensor *got, const struct host_tensor *want, double rtol,
		   double atol, struct strbuf *why);

#endif
