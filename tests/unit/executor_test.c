/*
 * executor_test.c - the variant picker the executor prints for a kernel with
 * run-time dispatch (emit_variant_pick): the conditions in order, the last
 * variant as the else, and, compiled, the same choice the dispatcher makes
 * for every symbol binding of a grid.
 */
#include "test.h"

#include <stdlib.h>

#include "../../core/emit/emit.h"

/* A MatMul-like kernel: packed if M >= 16 && K > 16, ikj if K > 16, else ijk. */
static void make_kernel(struct arena *a, struct tir_builder *b, struct kernel *k,
			struct kernel_variant *v)
{
	tir_builder_init(b, a, "conds");
	v[0].impl = "matmul.packed";
	v[0].cond_text = "M >= 16 && K > 16";
	v[0].cond = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, tir_sym(b, 0), tir_int(b, 16)),
			    tir_bin(b, BIN_GT, tir_sym(b, 1), tir_int(b, 16)));
	v[1].impl = "matmul.ikj";
	v[1].cond_text = "K > 16";
	v[1].cond = tir_bin(b, BIN_GT, tir_sym(b, 1), tir_int(b, 16));
	v[2].impl = "matmul.ijk";
	v[2].cond_text = "always";
	v[2].cond = NULL;
	k->name = "k0_0_MatMul";
	k->n_variants = 3;
	k->variants = v;
}

static void test_pick_text(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct kernel k = { 0 };
	struct kernel_variant v[3] = { { 0 } };
	struct strbuf sb = STRBUF_INIT;

	make_kernel(&a, &b, &k, v);
	emit_variant_pick(&k, "rt_pick_k0_0_MatMul", &sb);
	ASSERT_STR("static int rt_pick_k0_0_MatMul(const int64_t *syms)\n{\n\t(void)syms;\n"
		   "\tif (((syms[0] >= 16) && (syms[1] > 16)))\n\t\treturn 0;\n"
		   "\tif ((syms[1] > 16))\n\t\treturn 1;\n\treturn 2;\n}\n", sb_str(&sb));
	sb_release(&sb);
	tir_builder_release(&b);
	arena_release(&a);
}

/* Compiles prog, runs it and returns its stdout (owned), or NULL. */
static char *compile_and_run(const char *prog)
{
	char *dir = dir_make_temp("unit-executor"), *out = NULL;
	char cmd[8192], path[4096];
	const char *cc = getenv("CC");
	size_t len;

	if (!dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/t.c", dir);
	snprintf(cmd, sizeof(cmd), "cd '%s' && %s -std=gnu11 -O1 -Wall -Werror -o t t.c >cc.log "
		 "2>&1 || { cat cc.log >&2; exit 99; }; ./t >out.txt", dir, cc && *cc ? cc : "cc");
	if (file_write_atomic(path, prog, strlen(prog)) == 0 && system(cmd) == 0) {
		snprintf(path, sizeof(path), "%s/out.txt", dir);
		out = file_read(path, &len);
	}
	dir_remove_tree(dir);
	free(dir);
	return out;
}

static void test_pick_runs(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct kernel k = { 0 };
	struct kernel_variant v[3] = { { 0 } };
	struct strbuf prog = STRBUF_INIT, want = STRBUF_INIT;
	const int64_t vals[] = { 0, 1, 15, 16, 17, 64 };
	char *out;

	make_kernel(&a, &b, &k, v);
	sb_puts(&prog, "#include <stdint.h>\n#include <stdio.h>\n");
	emit_variant_pick(&k, "pick", &prog);
	sb_puts(&prog, "int main(void)\n{\n\tconst int64_t v[] = { 0, 1, 15, 16, 17, 64 };\n\n"
		"\tfor (int m = 0; m < 6; m++)\n\t\tfor (int k = 0; k < 6; k++) {\n"
		"\t\t\tint64_t syms[2] = { v[m], v[k] };\n\n"
		"\t\t\tprintf(\"%d\", pick(syms));\n\t\t}\n\treturn 0;\n}\n");
	for (int m = 0; m < 6; m++)
		for (int kk = 0; kk < 6; kk++)
			sb_putc(&want, vals[m] >= 16 && vals[kk] > 16 ? '0' : vals[kk] > 16 ? '1' : '2');
	out = compile_and_run(sb_str(&prog));
	ASSERT_STR(sb_str(&want), out);
	free(out);
	sb_release(&prog);
	sb_release(&want);
	tir_builder_release(&b);
	arena_release(&a);
}

TESTS({ "pick_text", test_pick_text },
      { "pick_runs", test_pick_runs })
