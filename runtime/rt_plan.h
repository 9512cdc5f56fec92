/*
 * rt_plan.h - the memory planner, shared by the compiler (static plans) and
 * the generated runtime (plans for symbolic shapes, made once per shape).
 * Included as source in both, so the two can never disagree.
 *
 * Greedy by size (as ggml-alloc and TVM's planners): tensors are placed
 * largest first, each at the lowest offset where it overlaps no placed
 * tensor whose lifetime [first, last] (step indices) intersects its own.
 *
 *	int64_t arena = rt_plan(n, sizes, first, last, offsets, order_scratch);
 */
#ifndef COLLAGEC_RT_PLAN_H
#define COLLAGEC_RT_PLAN_H

#include <stdint.h>

#define RT_ALIGN 64

/*
 * A weights file (collagec --weights): a header of RT_WEIGHTS_HEADER bytes,
 * which are the magic, the blob's size (8 bytes, little-endian) and the
 * blob's SHA-256 in hex (64 bytes; zeros for a measuring build's file, which
 * nothing else reads), zeros after; then the blob, on a page boundary, so
 * that it maps as it is.
 */
#define RT_WEIGHTS_MAGIC "collagecweights1"
#define RT_WEIGHTS_HEADER 4096

/*
 * A 2-D constant transposed: src [p[1], p[2]] of p[0]-byte elements (1, 2,
 * 4 or 8) into dst [p[2], p[1]], in 32 x 32 blocks. How a compiled model
 * makes a weight that a kernel reads transposed (GPT-2's tied embedding,
 * MatMul(h, Transpose(wte)), whose Gather reads it as it is) when it opens,
 * rather than every run or stored twice (a derived constant, "transpose2";
 * core/passes/pass_fold.c), and how the compiler makes it first.
 */
static inline void rt_transpose2(const void *src, void *dst, const int64_t *p)
{
	const unsigned char *s = (const unsigned char *)src;
	unsigned char *d = (unsigned char *)dst;
	int64_t es = p[0], r = p[1], c = p[2];

	for (int64_t i0 = 0; i0 < r; i0 += 32)
		for (int64_t j0 = 0; j0 < c; j0 += 32) {
			int64_t i1 = i0 + 32 < r ? i0 + 32 : r, j1 = j0 + 32 < c ? j0 + 32 : c;

			for (int64_t j = j0; j < j1; j++)
				for (int64_t i = i0; i < i1; i++) {
					const unsigned char *from = s + (i * c + j) * es;
					unsigned char *to = d + (j * r + i) * es;

					switch (es) {
					case 1: *to = *from; break;
					case 2: __builtin_memcpy(to, from, 2); break;
					case 4: __builtin_memcpy(to, from, 4); break;
					default: __builtin_memcpy(to, from, 8); break;
					}
				}
		}
}

/*
 * Plans n tensors; sizes in bytes (0 = not in the arena). Writes offsets,
 * returns the arena size. order is scratch space for n ints.
 */
static inline int64_t rt_plan(int n, const int64_t *sizes, const int *first, const int *last,
		       int64_t *offsets, int *order)
{
	int64_t arena = 0;

	for (int i = 0; i < n; i++)
		order[i] = i;
	/* insertion sort: by size descending, then by index (deterministic) */
	for (int i = 1; i < n; i++) {
		int k = order[i], j = i - 1;

		while (j >= 0 && (sizes[order[j]] < sizes[k] ||
				  (sizes[order[j]] == sizes[k] && order[j] > k))) {
			order[j + 1] = order[j];
			j--;
		}
		order[j + 1] = k;
	}
	for (int i = 0; i < n; i++) {
		int t = order[i];
		int64_t best = -1;

		offsets[t] = -1;
		if (sizes[t] <= 0)
			continue;
		/*
		 * First fit: the candidates are 0 and the (aligned) end of each
		 * placed tensor alive at the same time; take the lowest one
		 * that overlaps none of them.
		 */
		for (int c = -1; c < i; c++) {
			int64_t cand = 0;
			int ok = 1;

			if (c >= 0) {
				int u = order[c];

				if (offsets[u] < 0 || last[u] < first[t] || last[t] < first[u])
					continue;
				cand = (offsets[u] + sizes[u] + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
			}
			if (best >= 0 && cand >= best)
				continue;
			for (int j = 0; j < i && ok; j++) {
				int u = order[j];

				if (offsets[u] < 0 || last[u] < first[t] || last[t] < first[u])
					continue;
				if (cand < offsets[u] + sizes[u] && offsets[u] < cand + sizes[t])
					ok = 0;
			}
			if (ok)
				best = cand;
		}
		offsets[t] = best;
		if (best + sizes[t] > arena)
			arena = best + sizes[t];
	}
	return arena;
}

#endif
