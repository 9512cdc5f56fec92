/*
 * plan_test.c - the memory planner of runtime/rt_plan.h: exact small plans
 * (reuse, chains whose arena equals the peak) and a randomised check that
 * no two tensors alive at the same step ever share bytes.
 */
#include "../../core/base/base.h"
#include "../../runtime/rt_plan.h"
#include "test.h"

#define MAXN 64

struct plan {
	int n;
	int64_t sizes[MAXN], offs[MAXN];
	int first[MAXN], last[MAXN], order[MAXN];
	int64_t arena;
};

static void run(struct plan *p)
{
	p->arena = rt_plan(p->n, p->sizes, p->first, p->last, p->offs, p->order);
}

static void add(struct plan *p, int64_t size, int first, int last)
{
	p->sizes[p->n] = size;
	p->first[p->n] = first;
	p->last[p->n] = last;
	p->n++;
}

/* Largest total size of the tensors alive at one step. */
static int64_t peak(const struct plan *p)
{
	int64_t best = 0;
	int maxs = 0;

	for (int i = 0; i < p->n; i++)
		maxs = MAX(maxs, p->last[i]);
	for (int s = 0; s <= maxs; s++) {
		int64_t live = 0;

		for (int i = 0; i < p->n; i++)
			if (p->sizes[i] > 0 && p->first[i] <= s && s <= p->last[i])
				live += p->sizes[i];
		best = MAX(best, live);
	}
	return best;
}

static bool alive_together(const struct plan *p, int a, int b)
{
	return !(p->last[a] < p->first[b] || p->last[b] < p->first[a]);
}

static bool bytes_overlap(const struct plan *p, int a, int b)
{
	return p->offs[a] < p->offs[b] + p->sizes[b] && p->offs[b] < p->offs[a] + p->sizes[a];
}

/* ---- exact cases ---- */

static void test_empty_and_single(void)
{
	struct plan p = { 0 };

	run(&p);
	ASSERT(0, p.arena);
	add(&p, 1000, 0, 3);
	run(&p);
	ASSERT(0, p.offs[0]);
	ASSERT(1000, p.arena);
}

static void test_zero_size_not_placed(void)
{
	struct plan p = { 0 };

	add(&p, 0, 0, 5);
	add(&p, 100, 0, 5);
	add(&p, -1, 0, 5);
	add(&p, 50, 2, 3);
	run(&p);
	ASSERT(-1, p.offs[0]);
	ASSERT(-1, p.offs[2]);
	ASSERT(0, p.offs[1]);
	ASSERT(128, p.offs[3]);	/* 100 rounded up to the 64-byte alignment */
	ASSERT(178, p.arena);
}

/* Disjoint lifetimes share one buffer. */
static void test_reuse_disjoint(void)
{
	struct plan p = { 0 };

	add(&p, 4096, 0, 1);
	add(&p, 2048, 2, 3);
	add(&p, 4096, 4, 4);
	run(&p);
	ASSERT(0, p.offs[0]);
	ASSERT(0, p.offs[1]);
	ASSERT(0, p.offs[2]);
	ASSERT(4096, p.arena);
}

/*
 * x0 -> x1 -> x2 -> x3: each tensor lives from its producer to its consumer;
 * x2 reuses x0's bytes.
 */
static void test_chain_reuses_buffer(void)
{
	struct plan p = { 0 };

	add(&p, 1000, 0, 1);
	add(&p, 1000, 1, 2);
	add(&p, 1000, 2, 3);
	add(&p, 1000, 3, 4);
	run(&p);
	ASSERT(0, p.offs[0]);
	ASSERT(1024, p.offs[1]);	/* aligned end of x0 */
	ASSERT(0, p.offs[2]);	/* x0 is dead: reused */
	ASSERT(1024, p.offs[3]);
	ASSERT(2024, p.arena);
	ASSERT(2000, peak(&p));
}

/* With aligned sizes the arena of a chain is exactly its peak. */
static void test_chain_arena_equals_peak(void)
{
	static const int64_t sizes[][6] = {
		{ 1024, 1024, 1024, 1024, 1024, 1024 },
		{ 64, 4096, 64, 4096, 64, 4096 },
		{ 256, 512, 1024, 2048, 1024, 512 },
		{ 128, 128, 4096, 4096, 128, 128 },
	};

	for (size_t c = 0; c < ARRAY_SIZE(sizes); c++) {
		struct plan p = { 0 };

		for (int i = 0; i < 6; i++)
			add(&p, sizes[c][i], i, i + 1);
		run(&p);
		ASSERT(peak(&p), p.arena);
	}
	{
		/* and the exact layout of the second one: big ones at 0, small after */
		struct plan p = { 0 };

		for (int i = 0; i < 6; i++)
			add(&p, sizes[1][i], i, i + 1);
		run(&p);
		ASSERT(4160, p.arena);
		ASSERT(0, p.offs[1]);
		ASSERT(0, p.offs[3]);
		ASSERT(0, p.offs[5]);
		ASSERT(4096, p.offs[0]);
		ASSERT(4096, p.offs[2]);
		ASSERT(4096, p.offs[4]);
	}
}

/* Largest first; equal sizes in index order; first fit into a gap. */
static void test_first_fit_gap(void)
{
	struct plan p = { 0 };

	add(&p, 640, 0, 10);	/* long-lived, at 0 */
	add(&p, 1280, 0, 2);	/* biggest: placed first, at 0 */
	add(&p, 640, 3, 10);	/* after the 1280 died: may use its bytes */
	add(&p, 640, 3, 10);
	run(&p);
	ASSERT(0, p.offs[1]);
	ASSERT(1280, p.offs[0]);
	ASSERT(0, p.offs[2]);
	ASSERT(640, p.offs[3]);
	ASSERT(1920, p.arena);
}

/* ---- randomised ---- */

static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33);
}

static void test_random_never_overlaps(void)
{
	rng_state = 12345;
	for (int trial = 0; trial < 3000; trial++) {
		struct plan p = { 0 }, q;
		int n = 1 + (int)(rnd() % MAXN), steps = 1 + (int)(rnd() % 40);
		int64_t sum = 0, top = 0;

		for (int i = 0; i < n; i++) {
			int a = (int)(rnd() % (uint32_t)steps), b = (int)(rnd() % (uint32_t)steps);
			uint32_t kind = rnd() % 10;
			int64_t size = kind == 0 ? 0 : kind < 3 ? (int64_t)(rnd() % 64) + 1
					      : kind < 9 ? (int64_t)(rnd() % 20000) + 1
							 : (int64_t)(rnd() % 4) * 1024 + 1024;

			add(&p, size, MIN(a, b), MAX(a, b));
		}
		q = p;
		run(&p);
		for (int i = 0; i < n; i++) {
			if (p.sizes[i] <= 0) {
				ASSERT(-1, p.offs[i]);
				continue;
			}
			ASSERT_TRUE(p.offs[i] >= 0);
			ASSERT(0, p.offs[i] % RT_ALIGN);
			ASSERT_TRUE(p.offs[i] + p.sizes[i] <= p.arena);
			top = MAX(top, p.offs[i] + p.sizes[i]);
			sum += (p.sizes[i] + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
			for (int j = 0; j < i; j++) {
				if (p.sizes[j] <= 0 || !alive_together(&p, i, j))
					continue;
				if (bytes_overlap(&p, i, j)) {
					fprintf(stderr, "  trial %d: tensors %d [%lld,+%lld) steps %d..%d and "
						"%d [%lld,+%lld) steps %d..%d overlap\n", trial, i,
						(long long)p.offs[i], (long long)p.sizes[i], p.first[i],
						p.last[i], j, (long long)p.offs[j], (long long)p.sizes[j],
						p.first[j], p.last[j]);
					ASSERT_TRUE(!bytes_overlap(&p, i, j));
				}
			}
		}
		ASSERT(top, p.arena);	/* the arena is exactly as large as used */
		ASSERT_TRUE(p.arena >= peak(&p));
		ASSERT_TRUE(p.arena <= sum);
		/* deterministic */
		run(&q);
		ASSERT(p.arena, q.arena);
		ASSERT(0, memcmp(p.offs, q.offs, sizeof(int64_t) * (size_t)n));
	}
}

/* The largest tensor always lands at offset 0. */
static void test_random_largest_at_zero(void)
{
	rng_state = 777;
	for (int trial = 0; trial < 500; trial++) {
		struct plan p = { 0 };
		int n = 2 + (int)(rnd() % 30), big = 0;

		for (int i = 0; i < n; i++) {
			int a = (int)(rnd() % 20), b = (int)(rnd() % 20);

			add(&p, (int64_t)(rnd() % 5000) + 1, MIN(a, b), MAX(a, b));
			if (p.sizes[i] > p.sizes[big])
				big = i;
		}
		run(&p);
		ASSERT(0, p.offs[big]);
	}
}

TESTS({ "empty_and_single", test_empty_and_single },
      { "zero_size_not_placed", test_zero_size_not_placed },
      { "reuse_disjoint", test_reuse_disjoint },
      { "chain_reuses_buffer", test_chain_reuses_buffer },
      { "chain_arena_equals_peak", test_chain_arena_equals_peak },
      { "first_fit_gap", test_first_fit_gap },
      { "random_never_overlaps", test_random_never_overlaps },
      { "random_largest_at_zero", test_random_largest_at_zero })
