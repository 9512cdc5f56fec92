/*
 * hooks_test.c - a target kind registered from the test itself (the hooks
 * RFC's "woofles" example): its partition rule takes Add nodes, its
 * relay_to_tir emits a call_extern of woofles_add, its tir_to_runtime prints
 * that function and the kernel. A model compiled for "woofles,c" must call
 * woofles_add for the Add and run the Relu on the c target.
 */
#include "test.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/backends.h"
#include "../../core/compile.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"
#include "../../runtime/collagec.h"
#include "onnx.pb-c.h"

static bool woofles_supports(struct graph *g, const struct node *n)
{
	(void)g;
	return n->op == OP_ADD;
}

/* relay_to_tir: one kernel per Add, a call_extern over whole buffers. */
static int woofles_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	(void)t;
	for (int i = 0; i < p->n_nodes; i++) {
		struct node *n = &g->nodes.v[p->nodes[i]];
		struct tir_builder b;
		struct kernel k = { 0 };
		struct tir_buf *x, *y, *z;
		struct tir *args[4];

		tir_builder_init(&b, g->arena, arena_printf(g->arena, "woof%d_%d", p->id, i));
		x = tir_param(&b, "x", DTYPE_F32);
		y = tir_param(&b, "y", DTYPE_F32);
		z = tir_param(&b, "z", DTYPE_F32);
		args[0] = tir_addr(&b, x, tir_int(&b, 0));
		args[1] = tir_addr(&b, y, tir_int(&b, 0));
		args[2] = tir_addr(&b, z, tir_int(&b, 0));
		args[3] = tir_int(&b, shape_numel_static(&node_out(g, n, 0)->shape));
		tir_extern(&b, "woofles_add", args, 4);
		k.name = b.name;
		k.func = tir_finish(&b);
		k.n_args = 3;
		k.n_inputs = 2;
		k.args = arena_alloc(g->arena, 3 * sizeof(int));
		k.args[0] = n->in[0];
		k.args[1] = n->in[1];
		k.args[2] = n->out[0];
		k.span = n->span;
		vec_push(&p->kernels, k);
	}
	return 0;
}

static int woofles_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
				  struct runtime_module *m)
{
	(void)g;
	(void)t;
	sb_puts(&m->source,
		"#ifndef WOOFLES_DEFINED\n#define WOOFLES_DEFINED\n"
		"__attribute__((visibility(\"default\"))) int woofles_calls;\n"
		"static void woofles_add(const float *a, const float *b, float *c, int64_t n)\n"
		"{\n\twoofles_calls++;\n\tfor (int64_t i = 0; i < n; i++)\n"
		"\t\tc[i] = a[i] + b[i];\n}\n#endif\n");
	for (int i = 0; i < p->kernels.n; i++) {
		const struct tir_func *f = p->kernels.v[i].func;

		sb_printf(&m->source, "static void %s(void *const *bufs, const int64_t *syms, "
			  "int threads)\n{\n", f->name);
		for (int j = 0; j < f->n_bufs; j++)
			sb_printf(&m->source, "\tfloat *b%d = bufs[%d];\n", j, j);
		sb_puts(&m->source, "\t(void)syms;\n\t(void)threads;\n");
		tir_print_stmt(f->body, &tir_dialect_c, &m->source, 1);
		sb_puts(&m->source, "}\n");
	}
	return 0;
}

static const struct target_kind woofles = {
	.api_version = TARGET_API_VERSION,
	.name = "woofles",
	.device = "cpu",
	.description = "test target: Add through call_extern",
	.supports = woofles_supports,
	.relay_to_tir = woofles_relay_to_tir,
	.tir_to_runtime = woofles_tir_to_runtime,
};

static Onnx__ValueInfoProto *vinfo(const char *name, int64_t *dims, Onnx__TensorShapeProto__Dimension **dp,
				   Onnx__TensorShapeProto__Dimension *d, Onnx__TensorShapeProto *sh,
				   Onnx__TypeProto__Tensor *tt, Onnx__TypeProto *tp,
				   Onnx__ValueInfoProto *vi)
{
	for (int i = 0; i < 2; i++) {
		onnx__tensor_shape_proto__dimension__init(&d[i]);
		d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		d[i].dim_value = dims[i];
		dp[i] = &d[i];
	}
	onnx__tensor_shape_proto__init(sh);
	sh->n_dim = 2;
	sh->dim = dp;
	onnx__type_proto__tensor__init(tt);
	tt->has_elem_type = 1;
	tt->elem_type = 1;
	tt->shape = sh;
	onnx__type_proto__init(tp);
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	vi->type = tp;
	return vi;
}

/* Writes an Add(a, b) -> Relu -> y model with [2, 3] float tensors. */
static void write_model(const char *path)
{
	int64_t dims[2] = { 2, 3 };
	Onnx__TensorShapeProto__Dimension d[3][2], *dp[3][2];
	Onnx__TensorShapeProto sh[3];
	Onnx__TypeProto__Tensor tt[3];
	Onnx__TypeProto tp[3];
	Onnx__ValueInfoProto vi[3], *ins[2], *outs[1];
	Onnx__NodeProto add, relu, *nodes[2] = { &add, &relu };
	char *add_in[2] = { "a", "b" }, *add_out[1] = { "s" }, *relu_out[1] = { "y" };
	Onnx__GraphProto gp;
	Onnx__OperatorSetIdProto ops, *opsp[1] = { &ops };
	Onnx__ModelProto mp;
	size_t n;
	uint8_t *buf;
	FILE *f;

	ins[0] = vinfo("a", dims, dp[0], d[0], &sh[0], &tt[0], &tp[0], &vi[0]);
	ins[1] = vinfo("b", dims, dp[1], d[1], &sh[1], &tt[1], &tp[1], &vi[1]);
	outs[0] = vinfo("y", dims, dp[2], d[2], &sh[2], &tt[2], &tp[2], &vi[2]);
	onnx__node_proto__init(&add);
	add.name = "add0";
	add.op_type = "Add";
	add.n_input = 2;
	add.input = add_in;
	add.n_output = 1;
	add.output = add_out;
	onnx__node_proto__init(&relu);
	relu.name = "relu0";
	relu.op_type = "Relu";
	relu.n_input = 1;
	relu.input = add_out;
	relu.n_output = 1;
	relu.output = relu_out;
	onnx__graph_proto__init(&gp);
	gp.name = "woof";
	gp.n_node = 2;
	gp.node = nodes;
	gp.n_input = 2;
	gp.input = ins;
	gp.n_output = 1;
	gp.output = outs;
	onnx__operator_set_id_proto__init(&ops);
	ops.has_version = 1;
	ops.version = 13;
	onnx__model_proto__init(&mp);
	mp.has_ir_version = 1;
	mp.ir_version = 7;
	mp.n_opset_import = 1;
	mp.opset_import = opsp;
	mp.graph = &gp;
	n = onnx__model_proto__get_packed_size(&mp);
	buf = malloc(n);
	onnx__model_proto__pack(&mp, buf);
	f = fopen(path, "wb");
	fwrite(buf, 1, n, f);
	fclose(f);
	free(buf);
}

static void test_woofles_called(void)
{
	const struct target_kind *kinds[] = { &woofles, &target_kind_c };
	char *dir = dir_make_temp("hooks");
	char path[512], so[512];
	struct collagec_ctx ctx;
	struct compile_options o = { 0 };
	float a[6] = { 1, -2, 3, -4, 5, -6 }, b[6] = { 1, 1, 1, 1, 1, 1 };
	int64_t dims[2] = { 2, 3 };
	const float *y;
	const int64_t *yd;
	int rank, rc, *calls;
	void *h;
	collagec_model *m;
	collagec_status (*op)(collagec_model **);
	collagec_status (*set)(collagec_model *, int, const void *, const int64_t *, int);
	collagec_status (*run)(collagec_model *);
	collagec_status (*get)(collagec_model *, int, const void **, const int64_t **, int *);
	void (*cl)(collagec_model *);

	snprintf(path, sizeof(path), "%s/woof.onnx", dir);
	snprintf(so, sizeof(so), "%s/woof.so", dir);
	write_model(path);
	ctx_init(&ctx);
	o.model = path;
	o.out = so;
	o.targets = "woofles,c";
	o.search = "none";
	o.kinds = kinds;
	o.n_kinds = 2;
	o.cc = "cc";
	o.cflags = "-O1";
	rc = collagec_compile(&ctx, &o, NULL);
	ASSERT(0, rc);
	/* RTLD_NODELETE as in runtime/loader.c: libgomp's globals must stay reachable */
	h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	ASSERT_TRUE(h != NULL);
	*(void **)&op = dlsym(h, "collagec_open");
	*(void **)&set = dlsym(h, "collagec_set_input");
	*(void **)&run = dlsym(h, "collagec_run");
	*(void **)&get = dlsym(h, "collagec_get_output");
	*(void **)&cl = dlsym(h, "collagec_close");
	calls = dlsym(h, "woofles_calls");
	ASSERT_TRUE(calls != NULL);
	ASSERT(0, *calls);
	ASSERT(COLLAGEC_OK, op(&m));
	ASSERT(COLLAGEC_OK, set(m, 0, a, dims, 2));
	ASSERT(COLLAGEC_OK, set(m, 1, b, dims, 2));
	ASSERT(COLLAGEC_OK, run(m));
	ASSERT(1, *calls);	/* the Add went through woofles_add */
	ASSERT(COLLAGEC_OK, get(m, 0, (const void **)&y, &yd, &rank));
	ASSERT(2, rank);
	/* relu(a + 1) */
	ASSERT(2000, (int)(y[0] * 1000));
	ASSERT(0, (int)(y[1] * 1000));
	ASSERT(4000, (int)(y[2] * 1000));
	ASSERT(0, (int)(y[5] * 1000));
	cl(m);
	dlclose(h);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

TESTS({ "woofles_called", test_woofles_called })
