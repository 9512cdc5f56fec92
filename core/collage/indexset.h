/*
 * indexset.h - a fixed-size set of node indices (the dataflow graph's
 * topological indices), one bit each, operated on a 64-bit word at a time.
 * The identity of a sub-graph and of a search state. Binary operations take
 * sets of the same size (BUG() otherwise). Sets live in an arena.
 *
 *	struct indexset a = indexset_new(arena, n), b = indexset_new(arena, n);
 *	indexset_add(&a, 3); indexset_add(&b, 4);
 *	struct indexset u = indexset_or(arena, &a, &b);	// {3,4}
 *	indexset_first_outside(&u) == 0; indexset_str(arena, &u) == "{3..4}"
 */
#ifndef COLLAGEC_INDEXSET_H
#define COLLAGEC_INDEXSET_H

#include "../base/base.h"

struct indexset {
	int n;			/* universe size */
	uint64_t *w;		/* (n + 63) / 64 words; bits past n are zero */
};

struct indexset indexset_new(struct arena *a, int n);		/* empty (arena) */
struct indexset indexset_copy(struct arena *a, const struct indexset *s);
static inline bool indexset_has(const struct indexset *s, int i)
{
	return (s->w[i >> 6] >> (i & 63)) & 1;
}
static inline void indexset_add(struct indexset *s, int i)
{
	s->w[i >> 6] |= UINT64_C(1) << (i & 63);
}
static inline void indexset_del(struct indexset *s, int i)
{
	s->w[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}
/* New sets (arena). */
struct indexset indexset_or(struct arena *a, const struct indexset *x, const struct indexset *y);
struct indexset indexset_and(struct arena *a, const struct indexset *x, const struct indexset *y);
struct indexset indexset_sub(struct arena *a, const struct indexset *x, const struct indexset *y);
/* In place: x |= y; x = y; s = {}. */
void indexset_or_into(struct indexset *x, const struct indexset *y);
void indexset_assign(struct indexset *x, const struct indexset *y);
void indexset_clear(struct indexset *s);
bool indexset_disjoint(const struct indexset *x, const struct indexset *y);
bool indexset_intersects(const struct indexset *x, const struct indexset *y);
bool indexset_subset(const struct indexset *x, const struct indexset *y);	/* x in y */
bool indexset_eq(const struct indexset *x, const struct indexset *y);
bool indexset_empty(const struct indexset *s);
int indexset_count(const struct indexset *s);
int indexset_first(const struct indexset *s);		/* n when empty */
int indexset_last(const struct indexset *s);		/* -1 when empty */
int indexset_next(const struct indexset *s, int i);	/* first member > i, or n */
int indexset_first_outside(const struct indexset *s);	/* n when full */
uint64_t indexset_hash(const struct indexset *s);
/*
 * Total order: at the first index where they differ, the set that contains
 * it comes first (so {0} < {1}); -1, 0 or 1.
 */
int indexset_cmp(const struct indexset *x, const struct indexset *y);
/* "{3,5..9}" (arena) */
const char *indexset_str(struct arena *a, const struct indexset *s);

#define indexset_for_each(i, s) \
	for (int i = indexset_first(s); i < (s)->n; i = indexset_next((s), i))


/*
 * A hash table of sets kept elsewhere (candidates, search states): it holds
 * their numbers, and key(owner, i) gives set i back for comparisons.
 *
 *	struct indexset_table t = { 0 };
 *	int i = indexset_table_find(&t, &s, key, owner);   // -1 when absent
 *	indexset_table_add(&t, &s, n_items, key, owner);
 *	indexset_table_free(&t);
 */
typedef const struct indexset *(*indexset_key_fn)(const void *owner, int i);

struct indexset_table {
	int *slot;			/* item + 1, 0 = empty (owned) */
	int cap, n;
};

int indexset_table_find(const struct indexset_table *t, const struct indexset *s,
			indexset_key_fn key, const void *owner);
void indexset_table_add(struct indexset_table *t, const struct indexset *s, int item,
			indexset_key_fn key, const void *owner);
void indexset_table_free(struct indexset_table *t);

#endif
