/*
 * indexset.c - bit sets over node indices, a word at a time.
 */
#include "indexset.h"

#include <stdlib.h>
#include <string.h>

static int words(int n)
{
	return (n + 63) / 64;
}

struct indexset indexset_new(struct arena *a, int n)
{
	struct indexset s = { n, arena_alloc(a, sizeof(uint64_t) * (size_t)(words(n) + 1)) };

	return s;
}

struct indexset indexset_copy(struct arena *a, const struct indexset *s)
{
	struct indexset r = indexset_new(a, s->n);

	memcpy(r.w, s->w, sizeof(uint64_t) * (size_t)words(s->n));
	return r;
}

static void same_size(const struct indexset *x, const struct indexset *y)
{
	if (x->n != y->n)
		BUG("index sets of sizes %d and %d", x->n, y->n);
}

struct indexset indexset_or(struct arena *a, const struct indexset *x, const struct indexset *y)
{
	struct indexset r = indexset_new(a, x->n);

	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		r.w[i] = x->w[i] | y->w[i];
	return r;
}

struct indexset indexset_and(struct arena *a, const struct indexset *x, const struct indexset *y)
{
	struct indexset r = indexset_new(a, x->n);

	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		r.w[i] = x->w[i] & y->w[i];
	return r;
}

struct indexset indexset_sub(struct arena *a, const struct indexset *x, const struct indexset *y)
{
	struct indexset r = indexset_new(a, x->n);

	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		r.w[i] = x->w[i] & ~y->w[i];
	return r;
}

void indexset_or_into(struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		x->w[i] |= y->w[i];
}

void indexset_assign(struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	memcpy(x->w, y->w, sizeof(uint64_t) * (size_t)words(x->n));
}

void indexset_clear(struct indexset *s)
{
	memset(s->w, 0, sizeof(uint64_t) * (size_t)words(s->n));
}

bool indexset_disjoint(const struct indexset *x, const struct indexset *y)
{
	return !indexset_intersects(x, y);
}

bool indexset_intersects(const struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		if (x->w[i] & y->w[i])
			return true;
	return false;
}

bool indexset_subset(const struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	for (int i = 0; i < words(x->n); i++)
		if (x->w[i] & ~y->w[i])
			return false;
	return true;
}

bool indexset_eq(const struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	return !memcmp(x->w, y->w, sizeof(uint64_t) * (size_t)words(x->n));
}

bool indexset_empty(const struct indexset *s)
{
	for (int i = 0; i < words(s->n); i++)
		if (s->w[i])
			return false;
	return true;
}

int indexset_count(const struct indexset *s)
{
	int c = 0;

	for (int i = 0; i < words(s->n); i++)
		c += __builtin_popcountll(s->w[i]);
	return c;
}

int indexset_next(const struct indexset *s, int i)
{
	int k;
	uint64_t w;

	if (++i >= s->n)
		return s->n;
	k = i >> 6;
	w = s->w[k] & (~UINT64_C(0) << (i & 63));
	while (!w) {
		if (++k >= words(s->n))
			return s->n;
		w = s->w[k];
	}
	return k * 64 + __builtin_ctzll(w);
}

int indexset_first(const struct indexset *s)
{
	return indexset_next(s, -1);
}

int indexset_last(const struct indexset *s)
{
	for (int k = words(s->n) - 1; k >= 0; k--)
		if (s->w[k])
			return k * 64 + 63 - __builtin_clzll(s->w[k]);
	return -1;
}

int indexset_first_outside(const struct indexset *s)
{
	for (int k = 0; k < words(s->n); k++)
		if (~s->w[k]) {
			int i = k * 64 + __builtin_ctzll(~s->w[k]);

			return i < s->n ? i : s->n;
		}
	return s->n;
}

uint64_t indexset_hash(const struct indexset *s)
{
	return hash_fnv1a(s->w, sizeof(uint64_t) * (size_t)words(s->n),
			  HASH_FNV_INIT);
}

int indexset_cmp(const struct indexset *x, const struct indexset *y)
{
	same_size(x, y);
	for (int k = 0; k < words(x->n); k++) {
		uint64_t d = x->w[k] ^ y->w[k];

		if (d)
			return (x->w[k] >> __builtin_ctzll(d)) & 1 ? -1 : 1;
	}
	return 0;
}

const char *indexset_str(struct arena *a, const struct indexset *s)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;
	bool first = true;

	sb_putc(&sb, '{');
	for (int i = indexset_first(s); i < s->n;) {
		int j = i;

		while (j + 1 < s->n && indexset_has(s, j + 1))
			j++;
		sb_printf(&sb, first ? "%d" : ",%d", i);
		if (j > i)
			sb_printf(&sb, "..%d", j);
		first = false;
		i = indexset_next(s, j);
	}
	sb_putc(&sb, '}');
	r = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

int indexset_table_find(const struct indexset_table *t, const struct indexset *s,
			indexset_key_fn key, const void *owner)
{
	if (!t->cap)
		return -1;
	for (uint64_t h = indexset_hash(s);; h++) {
		int it = t->slot[h & (uint64_t)(t->cap - 1)];

		if (!it)
			return -1;
		if (indexset_eq(key(owner, it - 1), s))
			return it - 1;
	}
}

static void table_put(struct indexset_table *t, uint64_t h, int item)
{
	while (t->slot[h & (uint64_t)(t->cap - 1)])
		h++;
	t->slot[h & (uint64_t)(t->cap - 1)] = item + 1;
}

void indexset_table_add(struct indexset_table *t, const struct indexset *s, int item,
			indexset_key_fn key, const void *owner)
{
	if (2 * (t->n + 1) > t->cap) {
		struct indexset_table old = *t;

		t->cap = old.cap ? old.cap * 2 : 64;
		t->slot = xmalloc(sizeof(int) * (size_t)t->cap);
		memset(t->slot, 0, sizeof(int) * (size_t)t->cap);
		for (int i = 0; i < old.cap; i++)
			if (old.slot[i])
				table_put(t, indexset_hash(key(owner, old.slot[i] - 1)),
					  old.slot[i] - 1);
		free(old.slot);
	}
	table_put(t, indexset_hash(s), item);
	t->n++;
}

void indexset_table_free(struct indexset_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}
