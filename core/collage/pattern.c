/*
 * pattern.c - the pattern language (pattern.h): a tokenizer, a recursive
 * descent parser with line:col diagnostics, and the matcher.
 *
 * Grammar (newlines end a line except inside brackets or after | = , ):
 *
 *	file    = { line }
 *	line    = "target" NAME | "clear" | "let" NAME "=" ( alt | ops ) | NAME "=" alt
 *	alt     = primary { "|" primary }
 *	primary = "*" | "const" | NUMBER | "$" NAME | "(" alt ")" | call
 *	call    = ( ops | "$" NAME ) "(" [ args ] ")" [ "[" pred { "," pred } "]" ]
 *	ops     = OPNAME | "{" OPNAME { "|" OPNAME } "}"
 *	args    = "..." | arg { "," arg } [ "," "..." ]
 *	arg     = alt [ "?" ]
 *	pred    = NAME ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) literal
 *	literal = NUMBER | STRING | "[" [ NUMBER { "," NUMBER } ] "]" | NAME
 */
#include "pattern.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ops/ops.h"

#define PAT_MAX_ARGS 16
#define PAT_MAX_ALTS 16
#define PAT_MAX_LIST 16

enum pat_kind { PAT_WILD, PAT_CONST, PAT_NUM, PAT_CALL, PAT_ALT };
enum lit_kind { LIT_NUM, LIT_STR, LIT_LIST, LIT_NAME };
enum cmp { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

struct lit {
	enum lit_kind kind;
	double num;
	const char *str;	/* LIT_STR, LIT_NAME */
	int n;
	double list[PAT_MAX_LIST];
};

struct pred {
	const char *attr;	/* attribute name, or "dtype" */
	enum cmp cmp;
	struct lit lit;
};

struct pat {
	enum pat_kind kind;
	double num;			/* PAT_NUM */
	int n_ops;			/* PAT_CALL: one of ops */
	enum op *ops;
	int n_args;			/* PAT_CALL: inputs; PAT_ALT: alternatives */
	const struct pat **args;
	bool *optional;			/* PAT_CALL: per input, may be absent */
	bool rest;			/* PAT_CALL: "..." further inputs */
	int n_preds;
	struct pred *preds;
};

/* ---- tokens ---- */

enum tok {
	T_EOF, T_NL, T_NAME, T_NUM, T_STR, T_LP, T_RP, T_LB, T_RB, T_LC, T_RC, T_COMMA, T_BAR,
	T_QUEST, T_STAR, T_DOLLAR, T_ASSIGN, T_DOTS, T_CMP, T_BAD
};

struct let {
	const char *name;
	const struct pat *p;		/* a pattern, or NULL for an op set */
	int n_ops;			/* an op set: let act = {Relu|Tanh} */
	const enum op *ops;
};

struct parser {
	struct collagec_ctx *ctx;
	struct arena *a;
	const char *file, *text;
	const char *p;			/* scan position */
	int depth;			/* open brackets */
	const char *open[64];		/* where each one opened */
	/* the current token */
	enum tok tok;
	const char *start;		/* its first character */
	int len;
	double num;
	enum cmp cmp;
	const char *target;		/* of the rules that follow */
	VEC(struct let) lets;
	bool failed;
};

/* Line and column (1-based, tabs count 1) of position at. */
static void position(const struct parser *P, const char *at, int *line, int *col,
		     const char **bol)
{
	*line = 1;
	*bol = P->text;
	for (const char *s = P->text; s < at; s++)
		if (*s == '\n') {
			(*line)++;
			*bol = s + 1;
		}
	*col = (int)(at - *bol) + 1;
}

/* "FILE:LINE:COL: message" then the source line and a caret under COL. */
PRINTF_LIKE(3, 4) static void perr(struct parser *P, const char *at, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT, src = STRBUF_INIT;
	const char *bol, *eol;
	int line, col;
	va_list ap;

	if (P->failed)
		return;		/* one error per file: the rest would cascade */
	P->failed = true;
	position(P, at, &line, &col, &bol);
	va_start(ap, fmt);
	sb_vprintf(&msg, fmt, ap);
	va_end(ap);
	diag_error_status(P->ctx, STATUS_USAGE, "%s:%d:%d: %s", P->file, line, col, sb_str(&msg));
	eol = strchr(bol, '\n');
	if (!eol)
		eol = bol + strlen(bol);
	sb_printf(&src, "    %.*s\n    ", (int)(eol - bol), bol);
	for (const char *s = bol; s < at; s++)
		sb_putc(&src, *s == '\t' ? '\t' : ' ');
	sb_puts(&src, "^\n");
	diag_source(P->ctx, sb_str(&src));
	sb_release(&msg);
	sb_release(&src);
}

static bool name_char(int c)
{
	return isalnum(c) || c == '_' || c == '.';
}

static void next(struct parser *P)
{
	const char *s = P->p;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r' || (*s == '\n' && P->depth > 0))
			s++;
		if (*s == '#') {
			while (*s && *s != '\n')
				s++;
			continue;
		}
		break;
	}
	P->start = s;
	P->len = 1;
	switch (*s) {
	case 0: P->tok = T_EOF; P->len = 0; break;
	case '\n': P->tok = T_NL; break;
	case '(': P->tok = T_LP; break;
	case ')': P->tok = T_RP; break;
	case '[': P->tok = T_LB; break;
	case ']': P->tok = T_RB; break;
	case '{': P->tok = T_LC; break;
	case '}': P->tok = T_RC; break;
	case ',': P->tok = T_COMMA; break;
	case '|': P->tok = T_BAR; break;
	case '?': P->tok = T_QUEST; break;
	case '*': P->tok = T_STAR; break;
	case '$': P->tok = T_DOLLAR; break;
	case '=':
		if (s[1] == '=') {
			P->tok = T_CMP, P->cmp = CMP_EQ, P->len = 2;
		} else {
			P->tok = T_ASSIGN;
		}
		break;
	case '!':
		P->tok = s[1] == '=' ? T_CMP : T_BAD;
		P->cmp = CMP_NE;
		P->len = s[1] == '=' ? 2 : 1;
		break;
	case '<': case '>':
		P->tok = T_CMP;
		P->cmp = *s == '<' ? (s[1] == '=' ? CMP_LE : CMP_LT) : (s[1] == '=' ? CMP_GE : CMP_GT);
		P->len = s[1] == '=' ? 2 : 1;
		break;
	case '"': {
		const char *e = s + 1;

		while (*e && *e != '"' && *e != '\n')
			e++;
		P->tok = *e == '"' ? T_STR : T_BAD;
		P->len = (int)(e - s) + (*e == '"');
		break;
	}
	default:
		if (s[0] == '.' && s[1] == '.' && s[2] == '.') {
			P->tok = T_DOTS;
			P->len = 3;
		} else if (isdigit((unsigned char)*s) || ((*s == '-' || *s == '+' || *s == '.') &&
							 (isdigit((unsigned char)s[1]) || s[1] == '.'))) {
			char *e;

			P->num = strtod(s, &e);
			P->tok = e > s ? T_NUM : T_BAD;
			P->len = e > s ? (int)(e - s) : 1;
		} else if (isalpha((unsigned char)*s) || *s == '_') {
			const char *e = s;

			while (name_char((unsigned char)*e))
				e++;
			P->tok = T_NAME;
			P->len = (int)(e - s);
		} else {
			P->tok = T_BAD;
		}
	}
	P->p = P->start + P->len;
	if (P->tok == T_LP || P->tok == T_LB || P->tok == T_LC) {
		if (P->depth < (int)ARRAY_SIZE(P->open))
			P->open[P->depth] = s;
		P->depth++;
	} else if ((P->tok == T_RP || P->tok == T_RB || P->tok == T_RC) && P->depth > 0) {
		P->depth--;
	}
}

static bool is_word(const struct parser *P, const char *w)
{
	return P->tok == T_NAME && (int)strlen(w) == P->len && !strncmp(P->start, w, (size_t)P->len);
}

static const char *tok_text(struct parser *P)
{
	switch (P->tok) {
	case T_EOF: return "end of file";
	case T_NL: return "end of line";
	default: return arena_printf(P->a, "'%.*s'", P->len, P->start);
	}
}

static bool expect(struct parser *P, enum tok t, const char *what)
{
	const char *open, *bol;
	int line, col, oline, ocol;

	if (P->tok == t) {
		next(P);
		return true;
	}
	if (P->depth > 0 && P->depth <= (int)ARRAY_SIZE(P->open)) {
		/* newlines inside brackets join lines: name the bracket left open */
		open = P->open[P->depth - 1];
		position(P, P->start, &line, &col, &bol);
		position(P, open, &oline, &ocol, &bol);
		if (line > oline) {
			perr(P, open, "'%c' is not closed (found %s at line %d)", *open, tok_text(P),
			     line);
			return false;
		}
	}
	perr(P, P->start, "expected %s, found %s", what, tok_text(P));
	return false;
}

/* Edit distance of a and b (for "did you mean"), capped at 9. */
static int distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), d[32][32];

	if (la > 30 || lb > 30)
		return 9;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int c = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) !=
						   tolower((unsigned char)b[j - 1]));

			c = MIN(c, d[i - 1][j] + 1);
			d[i][j] = MIN(c, d[i][j - 1] + 1);
		}
	return MIN(d[la][lb], 9);
}

/* After | = , a line may go on on the next one. */
static void skip_nl(struct parser *P)
{
	while (P->tok == T_NL)
		next(P);
}

/* ---- literals and predicates ---- */

static bool parse_lit(struct parser *P, struct lit *l)
{
	memset(l, 0, sizeof(*l));
	switch (P->tok) {
	case T_NUM:
		l->kind = LIT_NUM;
		l->num = P->num;
		next(P);
		return true;
	case T_STR:
		l->kind = LIT_STR;
		l->str = arena_strndup(P->a, P->start + 1, (size_t)P->len - 2);
		next(P);
		return true;
	case T_NAME:
		l->kind = LIT_NAME;
		l->str = arena_strndup(P->a, P->start, (size_t)P->len);
		next(P);
		return true;
	case T_LB:
		l->kind = LIT_LIST;
		next(P);
		while (P->tok != T_RB) {
			if (l->n && !expect(P, T_COMMA, "',' or ']'"))
				return false;
			if (P->tok != T_NUM) {
				perr(P, P->start, "expected a number in the list, found %s",
				     tok_text(P));
				return false;
			}
			if (l->n == PAT_MAX_LIST) {
				perr(P, P->start, "more than %d numbers in a list", PAT_MAX_LIST);
				return false;
			}
			l->list[l->n++] = P->num;
			next(P);
		}
		next(P);
		return true;
	default:
		perr(P, P->start, "expected a number, \"string\", [list] or dtype name, found %s",
		     tok_text(P));
		return false;
	}
}

/* Does literal l suit attribute kind k under cmp? Else why not. */
static const char *lit_mismatch(const struct lit *l, enum attr_kind k, enum cmp cmp)
{
	bool order = cmp != CMP_EQ && cmp != CMP_NE;

	switch (k) {
	case ATTR_INT:
	case ATTR_FLOAT:
		return l->kind == LIT_NUM ? NULL : "a number";
	case ATTR_STRING:
		return l->kind != LIT_STR ? "a \"string\"" : order ? "== or != (a string)" : NULL;
	case ATTR_INTS:
	case ATTR_FLOATS:
		return l->kind != LIT_LIST ? "a [list]" : order ? "== or != (a list)" : NULL;
	default:
		return "nothing: tensor, graph and string-list attributes cannot be compared";
	}
}

static const char *attr_kind_word(enum attr_kind k)
{
	static const char *const w[ATTR_KIND_COUNT] = {
		[ATTR_INT] = "an integer", [ATTR_FLOAT] = "a float", [ATTR_STRING] = "a string",
		[ATTR_INTS] = "an integer list", [ATTR_FLOATS] = "a float list",
		[ATTR_STRINGS] = "a string list", [ATTR_TENSOR] = "a tensor", [ATTR_GRAPH] = "a graph",
		[ATTR_TYPE] = "a type",
	};
	return w[k];
}

static bool parse_pred(struct parser *P, const enum op *ops, int n_ops, struct pred *pr)
{
	const char *at = P->start, *lat;

	if (P->tok != T_NAME) {
		perr(P, at, "expected an attribute name, found %s", tok_text(P));
		return false;
	}
	pr->attr = arena_strndup(P->a, P->start, (size_t)P->len);
	next(P);
	if (P->tok != T_CMP) {
		perr(P, P->start, "expected a comparison (== != < <= > >=), found %s", tok_text(P));
		return false;
	}
	pr->cmp = P->cmp;
	next(P);
	lat = P->start;
	if (!parse_lit(P, &pr->lit))
		return false;
	if (!strcmp(pr->attr, "dtype")) {
		if (pr->lit.kind != LIT_NAME || dtype_from_name(pr->lit.str) == DTYPE_UNDEF) {
			perr(P, lat, "dtype compares with a dtype name such as float32");
			return false;
		}
		if (pr->cmp != CMP_EQ && pr->cmp != CMP_NE) {
			perr(P, at, "dtype compares with == or != only");
			return false;
		}
		return true;
	}
	for (int i = 0; i < n_ops; i++) {
		const struct op_attr *oa = op_attr_find(ops[i], pr->attr);
		const char *why;

		if (!oa) {
			const struct op_attr *all;
			int n = op_attrs(ops[i], &all);
			struct strbuf sb = STRBUF_INIT;

			for (int j = 0; j < n; j++)
				sb_printf(&sb, "%s%s", j ? ", " : "", all[j].name);
			perr(P, at, "%s has no attribute '%s' (%s%s)", op_info(ops[i])->name,
			     pr->attr, n ? "it has " : "it has none; use dtype", sb_str(&sb));
			sb_release(&sb);
			return false;
		}
		why = lit_mismatch(&pr->lit, oa->kind, pr->cmp);
		if (why) {
			perr(P, lat, "%s.%s is %s: it compares with %s", op_info(ops[i])->name,
			     pr->attr, attr_kind_word(oa->kind), why);
			return false;
		}
	}
	return true;
}

/* ---- patterns ---- */

static const struct pat *parse_alt(struct parser *P);
static const struct pat *parse_alt_from(struct parser *P, const struct pat *first);

static struct pat *new_pat(struct parser *P, enum pat_kind k)
{
	struct pat *p = arena_alloc(P->a, sizeof(*p));

	p->kind = k;
	return p;
}

static bool parse_opname(struct parser *P, enum op *op)
{
	char *name;

	if (P->tok != T_NAME) {
		perr(P, P->start, "expected an op name, found %s", tok_text(P));
		return false;
	}
	name = arena_strndup(P->a, P->start, (size_t)P->len);
	*op = op_from_onnx(name);
	if (*op == OP_COUNT) {
		const char *best = NULL;
		int bd = 3;

		for (int i = 0; i < OP_COUNT; i++) {
			int d = distance(name, op_info((enum op)i)->name);

			if (d < bd) {
				bd = d;
				best = op_info((enum op)i)->name;
			}
		}
		if (best)
			perr(P, P->start, "unknown op '%s'; did you mean '%s'?", name, best);
		else
			perr(P, P->start, "unknown op '%s' (op names are ONNX op types such as "
			     "MatMul)", name);
		return false;
	}
	next(P);
	return true;
}

/* OPNAME or {OPNAME|...} into ops; the count, or 0 after an error. */
static int parse_opset(struct parser *P, enum op *ops)
{
	int n = 0;

	if (P->tok != T_LC)
		return parse_opname(P, &ops[0]) ? 1 : 0;
	next(P);
	do {
		if (n && P->tok == T_BAR)
			next(P);
		if (n == PAT_MAX_ALTS) {
			perr(P, P->start, "more than %d ops in one {...}", PAT_MAX_ALTS);
			return 0;
		}
		if (!parse_opname(P, &ops[n++]))
			return 0;
	} while (P->tok == T_BAR);
	return expect(P, T_RC, "'|' or '}'") ? n : 0;
}

/* The "(args) [preds]" of a call of one of ops. */
static const struct pat *parse_call_rest(struct parser *P, const enum op *ops, int n_ops)
{
	const struct pat *args[PAT_MAX_ARGS];
	bool opt[PAT_MAX_ARGS];
	struct pred preds[PAT_MAX_ARGS];
	int n_args = 0, n_preds = 0;
	bool rest = false;
	struct pat *p;

	if (!expect(P, T_LP, "'(' and the op's inputs"))
		return NULL;
	while (P->tok != T_RP) {
		if ((n_args || rest) && !expect(P, T_COMMA, "',' or ')'"))
			return NULL;
		if (rest) {
			perr(P, P->start, "'...' must be the last input");
			return NULL;
		}
		if (P->tok == T_DOTS) {
			rest = true;
			next(P);
			continue;
		}
		if (n_args == PAT_MAX_ARGS) {
			perr(P, P->start, "more than %d inputs", PAT_MAX_ARGS);
			return NULL;
		}
		args[n_args] = parse_alt(P);
		if (!args[n_args])
			return NULL;
		opt[n_args] = P->tok == T_QUEST;
		if (opt[n_args])
			next(P);
		n_args++;
	}
	next(P);
	if (P->tok == T_LB) {
		next(P);
		while (P->tok != T_RB) {
			if (n_preds && !expect(P, T_COMMA, "',' or ']'"))
				return NULL;
			if (n_preds == PAT_MAX_ARGS) {
				perr(P, P->start, "more than %d predicates", PAT_MAX_ARGS);
				return NULL;
			}
			if (!parse_pred(P, ops, n_ops, &preds[n_preds++]))
				return NULL;
		}
		next(P);
	}
	p = new_pat(P, PAT_CALL);
	p->n_ops = n_ops;
	p->ops = arena_memdup(P->a, ops, sizeof(ops[0]) * (size_t)n_ops);
	p->n_args = n_args;
	p->args = arena_memdup(P->a, args, sizeof(args[0]) * (size_t)(n_args + 1));
	p->optional = arena_memdup(P->a, opt, sizeof(opt[0]) * (size_t)(n_args + 1));
	p->rest = rest;
	p->n_preds = n_preds;
	p->preds = arena_memdup(P->a, preds, sizeof(preds[0]) * (size_t)(n_preds + 1));
	return p;
}

static const struct pat *parse_call(struct parser *P)
{
	enum op ops[PAT_MAX_ALTS];
	int n = parse_opset(P, ops);

	return n ? parse_call_rest(P, ops, n) : NULL;
}

static const struct pat *parse_primary(struct parser *P)
{
	const struct pat *r;
	struct pat *p;

	switch (P->tok) {
	case T_STAR:
		next(P);
		return new_pat(P, PAT_WILD);
	case T_NUM:
		p = new_pat(P, PAT_NUM);
		p->num = P->num;
		next(P);
		return p;
	case T_LP:
		next(P);
		r = parse_alt(P);
		if (r && !expect(P, T_RP, "')'"))
			return NULL;
		return r;
	case T_DOLLAR:
		next(P);
		if (P->tok == T_NAME)
			for (int i = 0; i < P->lets.n; i++) {
				const struct let *l = &P->lets.v[i];

				if ((int)strlen(l->name) != P->len ||
				    strncmp(l->name, P->start, (size_t)P->len))
					continue;
				next(P);
				if (l->p)
					return l->p;
				return parse_call_rest(P, l->ops, l->n_ops);
			}
		if (P->tok == T_NAME)
			perr(P, P->start, "no 'let %.*s' above", P->len, P->start);
		else
			perr(P, P->start, "expected a let name after '$', found %s", tok_text(P));
		return NULL;
	case T_LC:
		return parse_call(P);
	case T_NAME:
		if (is_word(P, "const")) {
			next(P);
			return new_pat(P, PAT_CONST);
		}
		return parse_call(P);
	default:
		perr(P, P->start, "expected a pattern (Op(...), *, const, a number, $let or "
		     "'('), found %s", tok_text(P));
		return NULL;
	}
}

/* Alternatives after a first one parsed already (NULL: none yet). */
static const struct pat *parse_alt_from(struct parser *P, const struct pat *first)
{
	const struct pat *alts[PAT_MAX_ALTS];
	int n = 0;
	struct pat *p;

	if (first)
		alts[n++] = first;
	while (!n || P->tok == T_BAR) {
		if (n) {
			next(P);
			skip_nl(P);
		}
		if (n == PAT_MAX_ALTS) {
			perr(P, P->start, "more than %d alternatives", PAT_MAX_ALTS);
			return NULL;
		}
		alts[n] = parse_primary(P);
		if (!alts[n++])
			return NULL;
	}
	if (n == 1)
		return alts[0];
	p = new_pat(P, PAT_ALT);
	p->n_args = n;
	p->args = arena_memdup(P->a, alts, sizeof(alts[0]) * (size_t)n);
	return p;
}

static const struct pat *parse_alt(struct parser *P)
{
	return parse_alt_from(P, NULL);
}

/* A rule's root must be a node: every alternative an op call. */
static bool rooted(const struct pat *p)
{
	if (p->kind == PAT_ALT) {
		for (int i = 0; i < p->n_args; i++)
			if (!rooted(p->args[i]))
				return false;
		return true;
	}
	return p->kind == PAT_CALL;
}

/* The text from a to b with runs of blanks (and comments) squeezed to one space. */
static const char *squeeze(struct parser *P, const char *a, const char *b)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;
	bool blank = false;

	for (const char *s = a; s < b; s++) {
		if (*s == '#') {
			while (s < b && *s != '\n')
				s++;
			blank = true;
			continue;
		}
		if (isspace((unsigned char)*s)) {
			blank = true;
			continue;
		}
		if (blank && sb.len)
			sb_putc(&sb, ' ');
		blank = false;
		sb_putc(&sb, *s);
	}
	r = arena_strdup(P->a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

static bool parse_line(struct parser *P, const struct target_kind *const *kinds, int n_kinds,
		       struct pattern_set *set)
{
	const char *at = P->start, *name, *body;
	bool is_let = false;
	const struct pat *p;
	int line, col;
	const char *bol;

	if (is_word(P, "target")) {
		next(P);
		if (P->tok != T_NAME) {
			perr(P, P->start, "expected a target kind after 'target', found %s",
			     tok_text(P));
			return false;
		}
		name = arena_strndup(P->a, P->start, (size_t)P->len);
		if (!target_kind_find(kinds, n_kinds, name)) {
			struct strbuf sb = STRBUF_INIT;

			for (int i = 0; i < n_kinds; i++)
				sb_printf(&sb, "%s%s", i ? ", " : "", kinds[i]->name);
			perr(P, P->start, "unknown target kind '%s' (kinds: %s)", name, sb_str(&sb));
			sb_release(&sb);
			return false;
		}
		P->target = name;
		next(P);
		if (P->tok != T_NL && P->tok != T_EOF) {
			perr(P, P->start, "expected the end of the line after 'target %s', found %s",
			     name, tok_text(P));
			return false;
		}
		return true;
	}
	if (is_word(P, "clear")) {
		int n = 0;

		if (!P->target) {
			perr(P, at, "'clear' before any 'target KIND' line");
			return false;
		}
		next(P);
		if (P->tok != T_NL && P->tok != T_EOF) {
			perr(P, P->start, "expected the end of the line after 'clear', found %s",
			     tok_text(P));
			return false;
		}
		/* forget the target's rules so far: the built-in table, earlier files */
		for (int i = 0; i < set->rules.n; i++)
			if (strcmp(set->rules.v[i].target, P->target))
				set->rules.v[n++] = set->rules.v[i];
		set->rules.n = n;
		return true;
	}
	if (is_word(P, "let")) {
		is_let = true;
		next(P);
		at = P->start;
	}
	if (P->tok != T_NAME || is_word(P, "const")) {
		perr(P, P->start, "expected 'target KIND', 'let NAME = PATTERN' or 'NAME = PATTERN', "
		     "found %s", tok_text(P));
		return false;
	}
	name = arena_strndup(P->a, P->start, (size_t)P->len);
	next(P);
	if (!expect(P, T_ASSIGN, "'='"))
		return false;
	skip_nl(P);
	body = P->start;
	if (is_let && P->tok == T_LC) {
		/* an op set ({A|B} alone: used as $name(...)) or a call of one */
		enum op ops[PAT_MAX_ALTS];
		int n = parse_opset(P, ops);

		if (!n)
			return false;
		if (P->tok == T_NL || P->tok == T_EOF) {
			for (int i = 0; i < P->lets.n; i++)
				if (!strcmp(P->lets.v[i].name, name)) {
					perr(P, at, "'let %s' is already defined above", name);
					return false;
				}
			vec_push(&P->lets, ((struct let){ name, NULL, n,
				arena_memdup(P->a, ops, sizeof(ops[0]) * (size_t)n) }));
			return true;
		}
		p = parse_call_rest(P, ops, n);
		p = p ? parse_alt_from(P, p) : NULL;
	} else {
		p = parse_alt(P);
	}
	if (!p)
		return false;
	if (P->tok != T_NL && P->tok != T_EOF) {
		perr(P, P->start, "expected '|' or the end of the line, found %s", tok_text(P));
		return false;
	}
	if (is_let) {
		for (int i = 0; i < P->lets.n; i++)
			if (!strcmp(P->lets.v[i].name, name)) {
				perr(P, at, "'let %s' is already defined above", name);
				return false;
			}
		vec_push(&P->lets, ((struct let){ name, p, 0, NULL }));
		return true;
	}
	if (!P->target) {
		perr(P, at, "rule '%s' before any 'target KIND' line", name);
		return false;
	}
	if (!rooted(p)) {
		perr(P, body, "a rule must match a node: its pattern (each alternative) must be an "
		     "op call, not *, const or a number");
		return false;
	}
	for (int i = 0; i < set->rules.n; i++) {
		const struct pattern_rule *r = &set->rules.v[i];

		if (!strcmp(r->name, name) && !strcmp(r->target, P->target)) {
			perr(P, at, "rule '%s.%s' is already defined at %s:%d", P->target, name,
			     r->file, r->line);
			return false;
		}
	}
	position(P, at, &line, &col, &bol);
	vec_push(&set->rules, ((struct pattern_rule){
		.name = name, .target = P->target, .file = P->file, .line = line,
		.text = squeeze(P, body, P->start), .root = p }));
	return true;
}

int pattern_parse(struct collagec_ctx *ctx, const char *file, const char *text,
		  const struct target_kind *const *kinds, int n_kinds, struct pattern_set *set)
{
	struct parser P = { .ctx = ctx, .a = &ctx->arena, .text = text, .p = text };

	P.file = arena_strdup(P.a, file);
	next(&P);
	while (P.tok != T_EOF && !P.failed) {
		if (P.tok == T_NL) {
			next(&P);
			continue;
		}
		if (P.tok == T_BAD) {
			perr(&P, P.start, "unexpected character '%c'", *P.start);
			break;
		}
		if (!parse_line(&P, kinds, n_kinds, set))
			break;
	}
	vec_free(&P.lets);
	return P.failed ? -1 : 0;
}

void pattern_set_release(struct pattern_set *set)
{
	vec_free(&set->rules);
}

int pattern_load(struct collagec_ctx *ctx, const struct target_kind *const *kinds, int n_kinds,
		 const char *const *files, int n_files, struct pattern_set *set)
{
	int rc = 0;

	for (int i = 0; i < n_kinds; i++) {
		const struct embedded_file *ef;

		if (!kinds[i]->patterns)
			continue;
		ef = embedded_find(kinds[i]->patterns);
		if (!ef)
			BUG("pattern table '%s' of target '%s' is not embedded", kinds[i]->patterns,
			    kinds[i]->name);
		if (pattern_parse(ctx, arena_printf(&ctx->arena, "patterns/%s", ef->name), ef->data,
				  kinds, n_kinds, set) < 0)
			rc = -1;
	}
	for (int i = 0; i < n_files; i++) {
		size_t len;
		char *text = file_read(files[i], &len);

		if (!text) {
			diag_error_status(ctx, STATUS_USAGE, "--patterns '%s': %s", files[i],
					  strerror(errno));
			rc = -1;
			continue;
		}
		if (strlen(text) != len) {
			diag_error_status(ctx, STATUS_USAGE, "--patterns '%s': not a text file "
					  "(it contains a NUL byte)", files[i]);
			rc = -1;
		} else if (pattern_parse(ctx, files[i], text, kinds, n_kinds, set) < 0) {
			rc = -1;
		}
		free(text);
	}
	return rc;
}

/* ---- matching ---- */

void pattern_uses_init(struct graph *g, struct pattern_uses *u)
{
	u->n = graph_count_readers(g);
}

void pattern_uses_release(struct pattern_uses *u)
{
	free(u->n);
	u->n = NULL;
}

struct mstate {
	struct graph *g;
	const int *uses;		/* readers of each value (pattern_uses) */
	long steps;			/* solve's calls so far (MATCH_STEPS at most) */
	int n;
	int nodes[PATTERN_MAX_NODES];
};

static bool cmp_num(double a, enum cmp c, double b)
{
	switch (c) {
	case CMP_EQ: return a == b;
	case CMP_NE: return a != b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	case CMP_GE: return a >= b;
	}
	return false;
}

/* A literal from default text (attrs.def), through the same tokenizer. */
static bool default_lit(struct graph *g, const char *text, struct lit *l)
{
	struct parser P = { .ctx = g->ctx, .a = g->arena, .file = "attrs.def", .text = text,
			    .p = text };

	P.failed = true;	/* no diagnostics: the table is generated */
	next(&P);
	return parse_lit(&P, l);
}

static bool pred_holds(struct mstate *s, const struct node *n, const struct pred *pr)
{
	const struct attr *a = node_attr(n, pr->attr);
	const struct op_attr *oa;
	struct lit def;
	bool eq;

	if (!strcmp(pr->attr, "dtype")) {
		eq = node_out(s->g, n, 0)->dtype == dtype_from_name(pr->lit.str);
		return pr->cmp == CMP_EQ ? eq : !eq;
	}
	oa = op_attr_find(n->op, pr->attr);
	if (!oa)
		BUG("predicate on %s.%s passed the parser", op_info(n->op)->name, pr->attr);
	if (!a) {
		if (!oa->def || !default_lit(s->g, oa->def, &def))
			return false;
		switch (oa->kind) {
		case ATTR_INT:
		case ATTR_FLOAT:
			return cmp_num(oa->kind == ATTR_FLOAT ? (float)def.num : def.num, pr->cmp,
				       oa->kind == ATTR_FLOAT ? (float)pr->lit.num : pr->lit.num);
		case ATTR_STRING:
			eq = !strcmp(def.str, pr->lit.str);
			return pr->cmp == CMP_EQ ? eq : !eq;
		default:
			eq = def.n == pr->lit.n;
			for (int i = 0; eq && i < def.n; i++)
				eq = def.list[i] == pr->lit.list[i];
			return pr->cmp == CMP_EQ ? eq : !eq;
		}
	}
	switch (a->kind) {
	case ATTR_INT:
		return cmp_num((double)a->i, pr->cmp, pr->lit.num);
	case ATTR_FLOAT:
		return cmp_num((float)a->f, pr->cmp, (float)pr->lit.num);
	case ATTR_STRING:
		eq = pr->lit.kind == LIT_STR && !strcmp(a->s, pr->lit.str);
		return pr->cmp == CMP_EQ ? eq : !eq;
	case ATTR_INTS:
	case ATTR_FLOATS:
		eq = pr->lit.kind == LIT_LIST && a->n == pr->lit.n;
		for (int i = 0; eq && i < a->n; i++)
			eq = (a->kind == ATTR_INTS ? (double)a->ints[i] : (float)a->floats[i]) ==
			     (a->kind == ATTR_INTS ? pr->lit.list[i] : (float)pr->lit.list[i]);
		return pr->cmp == CMP_EQ ? eq : !eq;
	default:
		return false;
	}
}

/*
 * Matching backtracks: a pattern is matched against the values still to
 * match (a todo list, in order), and an alternative that matched but left
 * the rest unmatchable, or the match without one exit, gives way to the
 * next. Add(*, $conv) | Add($conv, *) thus takes the convolution on the
 * right when its output is read once, and otherwise the one on the left
 * (torch's residual `result += input`, with input another convolution's).
 * Nested alternatives multiply what there is to try: a match takes at
 * most MATCH_STEPS steps, past which the pattern does not match at that
 * node (the built-in tables take a few dozen).
 */
#define MATCH_STEPS 65536

struct todo {
	const struct pat *p;
	int vid;
	const struct todo *next;
};

static bool one_exit(struct mstate *s);

static bool solve(struct mstate *s, const struct todo *t)
{
	const struct pat *p;
	const struct value *v;
	const struct node *n;
	struct todo args[PAT_MAX_ARGS];
	const struct todo *rest;
	int ni, present = 0, saved = s->n;
	bool seen = false, ok = false;
	double x;

	if (++s->steps > MATCH_STEPS)
		return false;
	if (!t)
		return one_exit(s);
	p = t->p;
	v = &s->g->values.v[t->vid];
	switch (p->kind) {
	case PAT_WILD:
		return solve(s, t->next);
	case PAT_CONST:
		return v->data != NULL && solve(s, t->next);
	case PAT_NUM:
		return v->data && value_const_scalar(s->g, v, &x) && x == p->num &&
		       solve(s, t->next);
	case PAT_ALT:
		for (int i = 0; i < p->n_args; i++) {
			struct todo alt = { p->args[i], t->vid, t->next };

			if (solve(s, &alt))
				return true;
			s->n = saved;
		}
		return false;
	case PAT_CALL:
		break;
	default:
		BUG("pattern kind %d", (int)p->kind);
	}
	ni = v->producer;
	if (ni < 0)
		return false;
	n = &s->g->nodes.v[ni];
	if (n->dead || n->out[0] != t->vid)
		return false;
	for (int i = 0; i < p->n_ops && !ok; i++)
		ok = n->op == p->ops[i];
	if (!ok)
		return false;
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] >= 0)
			present = i + 1;
	if ((present > p->n_args && !p->rest) || p->n_args > PAT_MAX_ARGS)
		return false;
	for (int i = 0; i < p->n_preds; i++)
		if (!pred_holds(s, n, &p->preds[i]))
			return false;
	for (int i = 0; i < s->n; i++)
		seen |= s->nodes[i] == ni;
	if (!seen) {
		if (s->n == PATTERN_MAX_NODES)
			return false;
		s->nodes[s->n++] = ni;
	}
	/* the inputs, first to last, before what was still to match */
	rest = t->next;
	for (int i = p->n_args - 1; i >= 0; i--) {
		int in = i < n->n_in ? n->in[i] : -1;

		if (in < 0) {
			if (!p->optional[i]) {
				s->n = saved;
				return false;
			}
			continue;
		}
		args[i] = (struct todo){ p->args[i], in, rest };
		rest = &args[i];
	}
	if (solve(s, rest))
		return true;
	s->n = saved;
	return false;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * One exit: what the inner nodes compute (all but the root, s->nodes[0])
 * is read inside the match only.
 */
static bool one_exit(struct mstate *s)
{
	struct graph *g = s->g;

	for (int i = 1; i < s->n; i++) {
		const struct node *n = &g->nodes.v[s->nodes[i]];

		for (int o = 0; o < n->n_out; o++) {
			int reads = 0;

			for (int j = 0; j < s->n; j++) {
				const struct node *c = &g->nodes.v[s->nodes[j]];

				for (int k = 0; k < c->n_in; k++)
					reads += c->in[k] == n->out[o];
			}
			if (reads != s->uses[n->out[o]])
				return false;
		}
	}
	return true;
}

bool pattern_match(struct graph *g, const struct pattern_uses *u, const struct pat *p, int node,
		   struct pattern_match *m)
{
	struct mstate s = { .g = g, .uses = u->n };
	const struct node *root = &g->nodes.v[node];
	struct todo t;

	if (root->dead || root->n_out < 1)
		return false;
	t = (struct todo){ p, root->out[0], NULL };
	if (!solve(&s, &t))
		return false;
	if (s.nodes[0] != node)
		BUG("a pattern match does not start at its root");
	qsort(s.nodes, (size_t)s.n, sizeof(int), cmp_int);
	m->n_nodes = s.n;
	memcpy(m->nodes, s.nodes, sizeof(int) * (size_t)s.n);
	return true;
}
