/*
 * base_test.c - arena, vec, strbuf, strmap, files, hashing and diagnostics
 * of core/base.
 */
#include "../../core/ctx.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arena ---- */

static void test_arena_zeroed_aligned(void)
{
	struct arena a = { 0 };

	for (size_t n = 1; n < 200; n += 7) {
		unsigned char *p = arena_alloc(&a, n);

		ASSERT(0, (uintptr_t)p % 16);
		for (size_t i = 0; i < n; i++)
			ASSERT(0, p[i]);
		memset(p, 0xAB, n);	/* must not clobber earlier allocations */
	}
	/* 1..197 in steps of 7, each rounded up to 16 */
	{
		size_t want = 0;

		for (size_t n = 1; n < 200; n += 7)
			want += (n + 15) & ~(size_t)15;
		ASSERT(want, a.total);
	}
	arena_release(&a);
	ASSERT(0, a.total);
	ASSERT_TRUE(a.head == NULL);
}

static void test_arena_allocations_distinct(void)
{
	struct arena a = { 0 };
	int *p[64];

	for (int i = 0; i < 64; i++) {
		p[i] = arena_alloc(&a, sizeof(int) * 100);
		for (int k = 0; k < 100; k++)
			p[i][k] = i * 1000 + k;
	}
	for (int i = 0; i < 64; i++)
		for (int k = 0; k < 100; k++)
			ASSERT(i * 1000 + k, p[i][k]);
	arena_release(&a);
}

static void test_arena_big_block_keeps_small_head(void)
{
	struct arena a = { 0 };
	char *small1 = arena_strdup(&a, "first");
	/* fits in the current 1 MiB block, right after small1 */
	unsigned char *filler = arena_alloc(&a, 600u << 10);
	/* does not fit and is over a quarter block: a one-off block */
	unsigned char *big = arena_alloc(&a, 512u << 10);
	char *small2 = arena_strdup(&a, "second");
	unsigned char *huge = arena_alloc(&a, 3u << 20);
	char *small3 = arena_strdup(&a, "third");

	ASSERT(16, filler - (unsigned char *)small1);
	ASSERT(0, big[0]);
	ASSERT(0, big[(512u << 10) - 1]);
	ASSERT(0, huge[(3u << 20) - 1]);
	memset(filler, 3, 600u << 10);
	memset(big, 1, 512u << 10);
	memset(huge, 2, 3u << 20);
	ASSERT_STR("first", small1);
	ASSERT_STR("second", small2);
	ASSERT_STR("third", small3);
	/* the small ones still go into the first block after the filler */
	ASSERT(16 + (600 << 10), small2 - small1);
	ASSERT(16, small3 - small2);
	ASSERT(16 + (600 << 10) + (512 << 10) + 16 + (3 << 20) + 16, a.total);
	arena_release(&a);
}

static void test_arena_strings(void)
{
	struct arena a = { 0 };
	const char src[] = "hello world";
	char *s = arena_strndup(&a, src, 5);
	char *p = arena_printf(&a, "%s-%d-%.2f", "x", 42, 1.5);
	int nums[3] = { 7, 8, 9 };
	int *d = arena_memdup(&a, nums, sizeof(nums));
	char *e = arena_strdup(&a, "");

	ASSERT_STR("hello", s);
	ASSERT_STR("x-42-1.50", p);
	ASSERT(7, d[0]);
	ASSERT(9, d[2]);
	ASSERT_TRUE(d != nums);
	ASSERT_STR("", e);
	/* a long printf (well past any small buffer) */
	{
		char *l = arena_printf(&a, "%0500d|", 3);

		ASSERT(501, strlen(l));
		ASSERT('3', l[499]);
		ASSERT('0', l[0]);
	}
	arena_release(&a);
}

/* ---- vec ---- */

static void test_vec_push_grow(void)
{
	VEC(int) v = { 0 };

	for (int i = 0; i < 1000; i++)
		vec_push(&v, i * 3);
	ASSERT(1000, v.n);
	ASSERT(1024, v.cap);	/* 8 doubled until it fits */
	for (int i = 0; i < 1000; i++)
		ASSERT(i * 3, v.v[i]);
	vec_grow(&v, 5000);
	ASSERT(8192, v.cap);
	ASSERT(1000, v.n);
	ASSERT(999 * 3, v.v[999]);
	vec_free(&v);
	ASSERT(0, v.n);
	ASSERT(0, v.cap);
	ASSERT_TRUE(v.v == NULL);
}

static void test_vec_of_structs(void)
{
	struct pt { int x; double y; };
	VEC(struct pt) v = { 0 };

	for (int i = 0; i < 20; i++) {
		struct pt p = { i, i / 2.0 };

		vec_push(&v, p);
	}
	ASSERT(20, v.n);
	ASSERT(32, v.cap);
	ASSERT(19, v.v[19].x);
	ASSERT_TRUE(v.v[19].y == 9.5);
	vec_free(&v);
}

/* ---- strbuf ---- */

static void test_strbuf_basic(void)
{
	struct strbuf sb = STRBUF_INIT;

	ASSERT_STR("", sb_str(&sb));
	sb_puts(&sb, "abc");
	sb_putc(&sb, '-');
	sb_add(&sb, "xyz123", 3);
	sb_printf(&sb, "%d/%s", 17, "q");
	ASSERT_STR("abc-xyz17/q", sb_str(&sb));
	ASSERT(11, sb.len);
	sb_reset(&sb);
	ASSERT_STR("", sb_str(&sb));
	ASSERT(0, sb.len);
	sb_puts(&sb, "again");
	ASSERT_STR("again", sb_str(&sb));
	sb_release(&sb);
	ASSERT_TRUE(sb.buf == NULL);
	ASSERT(0, sb.len);
	ASSERT_STR("", sb_str(&sb));
}

static void test_strbuf_growth(void)
{
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; i < 1000; i++)
		sb_printf(&sb, "%04d", i);
	ASSERT(4000, sb.len);
	ASSERT(4000, strlen(sb_str(&sb)));
	ASSERT_TRUE(!memcmp(sb.buf, "000000010002", 12));
	ASSERT_STR("0999", sb.buf + 3996);
	ASSERT_TRUE(sb.cap > sb.len);
	sb_release(&sb);
	/* one printf larger than the first capacity */
	sb_printf(&sb, "%s%0300d", "z", 0);
	ASSERT(301, sb.len);
	ASSERT('z', sb.buf[0]);
	ASSERT(0, sb.buf[301]);
	sb_release(&sb);
}

static void test_strbuf_embedded_nul(void)
{
	struct strbuf sb = STRBUF_INIT;

	sb_add(&sb, "a\0b", 3);
	ASSERT(3, sb.len);
	ASSERT('b', sb.buf[2]);
	ASSERT(0, sb.buf[3]);
	sb_release(&sb);
}

static void test_strbuf_detach(void)
{
	struct strbuf sb = STRBUF_INIT;
	char *s, *e;

	sb_puts(&sb, "owned");
	s = sb_detach(&sb);
	ASSERT_STR("owned", s);
	ASSERT_TRUE(sb.buf == NULL);
	ASSERT(0, sb.len);
	ASSERT(0, sb.cap);
	e = sb_detach(&sb);	/* empty: still a real string */
	ASSERT_STR("", e);
	free(s);
	free(e);
}

/* ---- strmap ---- */

static void test_strmap_basic(void)
{
	struct strmap m = { 0 };

	ASSERT(-1, strmap_get(&m, "absent"));	/* empty map */
	strmap_put(&m, "a", 1);
	strmap_put(&m, "b", 2);
	strmap_put(&m, "", 3);
	ASSERT(1, strmap_get(&m, "a"));
	ASSERT(2, strmap_get(&m, "b"));
	ASSERT(3, strmap_get(&m, ""));
	ASSERT(-1, strmap_get(&m, "c"));
	ASSERT(3, m.n);
	strmap_put(&m, "a", 10);	/* overwrite */
	ASSERT(10, strmap_get(&m, "a"));
	ASSERT(3, m.n);
	strmap_free(&m);
	ASSERT(0, m.n);
	ASSERT(-1, strmap_get(&m, "a"));
}

static void test_strmap_many(void)
{
	struct arena a = { 0 };
	struct strmap m = { 0 };

	for (int i = 0; i < 5000; i++)
		strmap_put(&m, arena_printf(&a, "key%d", i), i * 2);
	ASSERT(5000, m.n);
	ASSERT_TRUE(m.cap >= 10000);
	ASSERT(0, m.cap & (m.cap - 1));	/* power of two */
	for (int i = 0; i < 5000; i++) {
		char k[32];

		snprintf(k, sizeof(k), "key%d", i);	/* a different pointer: compares text */
		ASSERT(i * 2, strmap_get(&m, k));
	}
	ASSERT(-1, strmap_get(&m, "key5000"));
	ASSERT(-1, strmap_get(&m, "key"));
	strmap_free(&m);
	arena_release(&a);
}

/* ---- files ---- */

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_file_write_atomic(void)
{
	char *dir = dir_make_temp("unit-base");
	char path[4096];
	char *got;
	size_t len = 0;
	unsigned char bin[300];
	struct stat st;

	ASSERT_TRUE(dir != NULL);
	snprintf(path, sizeof(path), "%s/out.bin", dir);
	for (int i = 0; i < 300; i++)
		bin[i] = (unsigned char)(i * 7);
	bin[10] = 0;
	ASSERT(0, file_write_atomic(path, bin, sizeof(bin)));
	got = file_read(path, &len);
	ASSERT_TRUE(got != NULL);
	ASSERT(300, len);
	ASSERT(0, memcmp(got, bin, 300));
	ASSERT(0, got[300]);	/* NUL past the end */
	free(got);
	ASSERT(0, stat(path, &st));
	ASSERT(0644, st.st_mode & 0777);
	/* overwrite with something shorter: no stale tail, no temp files */
	ASSERT(0, file_write_atomic(path, "short", 5));
	got = file_read(path, &len);
	ASSERT(5, len);
	ASSERT_STR("short", got);
	free(got);
	ASSERT(1, count_entries(dir));
	/* empty file */
	ASSERT(0, file_write_atomic(path, "", 0));
	got = file_read(path, &len);
	ASSERT(0, len);
	ASSERT_STR("", got);
	free(got);
	/* a missing directory fails with ENOENT and leaves nothing behind */
	snprintf(path, sizeof(path), "%s/nodir/out.bin", dir);
	errno = 0;
	ASSERT(-1, file_write_atomic(path, "x", 1));
	ASSERT(ENOENT, errno);
	ASSERT(1, count_entries(dir));
	dir_remove_tree(dir);
	ASSERT(-1, stat(dir, &st));
	free(dir);
}

static void test_file_read_missing(void)
{
	size_t len = 12345;

	errno = 0;
	ASSERT_TRUE(file_read("/nonexistent/collagec/file", &len) == NULL);
	ASSERT(ENOENT, errno);
	ASSERT(12345, len);
	/* a directory opens but cannot be read */
	errno = 0;
	ASSERT_TRUE(file_read("/", &len) == NULL);
	ASSERT(EISDIR, errno);
	ASSERT(12345, len);
}

static void test_dir_remove_tree_nested(void)
{
	char *dir = dir_make_temp("unit-tree");
	char p[4096];
	struct stat st;

	ASSERT_TRUE(dir != NULL);
	ASSERT(0, stat(dir, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT(0700, st.st_mode & 0777);
	snprintf(p, sizeof(p), "%s/a", dir);
	ASSERT(0, mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/a/b", dir);
	ASSERT(0, mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/a/b/f.txt", dir);
	ASSERT(0, file_write_atomic(p, "hi", 2));
	snprintf(p, sizeof(p), "%s/top.txt", dir);
	ASSERT(0, file_write_atomic(p, "hi", 2));
	ASSERT(2, count_entries(dir));
	dir_remove_tree(dir);
	ASSERT(-1, stat(dir, &st));
	ASSERT(ENOENT, errno);
	free(dir);
}

/* ---- hashing ---- */

static void test_hash_fnv1a(void)
{
	/* reference values of 64-bit FNV-1a */
	ASSERT_TRUE(hash_fnv1a("", 0, HASH_FNV_INIT) == 0xcbf29ce484222325ULL);
	ASSERT_TRUE(hash_fnv1a("a", 1, HASH_FNV_INIT) == 0xaf63dc4c8601ec8cULL);
	ASSERT_TRUE(hash_fnv1a("foobar", 6, HASH_FNV_INIT) == 0x85944171f73967e8ULL);
	/* chaining equals hashing the concatenation */
	ASSERT_TRUE(hash_fnv1a("bar", 3, hash_fnv1a("foo", 3, HASH_FNV_INIT)) ==
		    0x85944171f73967e8ULL);
}

static void test_time_now_monotonic(void)
{
	double a = time_now(), b = time_now();

	ASSERT_TRUE(a > 0);
	ASSERT_TRUE(b >= a);
}

/* ---- diagnostics ---- */

static void test_diag_capture(void)
{
	struct collagec_ctx ctx;
	struct strbuf cap = STRBUF_INIT;

	ctx_init(&ctx);
	ASSERT_TRUE(ctx.diag_out == stderr);
	ctx.diag_out = NULL;
	ctx.capture = &cap;
	diag_error(&ctx, "%s: bad %d", "m.onnx", 3);
	ASSERT_STR("collagec: error: m.onnx: bad 3\n", sb_str(&cap));
	ASSERT(1, ctx.n_errors);
	ASSERT(STATUS_MODEL, ctx.status);
	diag_error_status(&ctx, STATUS_USAGE, "usage %s", "x");
	ASSERT(2, ctx.n_errors);
	ASSERT(STATUS_USAGE, ctx.status);
	/* a milder status does not lower the worst one */
	diag_error_status(&ctx, STATUS_MODEL, "m");
	ASSERT(STATUS_USAGE, ctx.status);
	diag_error(&ctx, "plain");
	ASSERT(STATUS_USAGE, ctx.status);
	ASSERT(4, ctx.n_errors);
	sb_reset(&cap);
	diag_warn(&ctx, "w%d", 1);
	ASSERT_STR("collagec: warning: w1\n", sb_str(&cap));
	sb_reset(&cap);
	diag_note(&ctx, "not shown");	/* not verbose */
	ASSERT_STR("", sb_str(&cap));
	ctx.verbose = 1;
	diag_note(&ctx, "n");
	ASSERT_STR("collagec: note: n\n", sb_str(&cap));
	sb_reset(&cap);
	ctx.quiet = true;
	diag_warn(&ctx, "hidden");
	ASSERT_STR("", sb_str(&cap));
	ASSERT(4, ctx.n_errors);	/* warnings are not errors */
	sb_release(&cap);
	ctx_release(&ctx);
}

static void test_diag_env_status_wins(void)
{
	struct collagec_ctx ctx;
	struct strbuf cap = STRBUF_INIT;

	ctx_init(&ctx);
	ctx.diag_out = NULL;
	ctx.capture = &cap;
	diag_error_status(&ctx, STATUS_ENV, "toolchain");
	diag_error_status(&ctx, STATUS_USAGE, "usage");
	ASSERT(STATUS_ENV, ctx.status);
	ASSERT(2, ctx.n_errors);
	ASSERT_STR("collagec: error: toolchain\ncollagec: error: usage\n", sb_str(&cap));
	sb_release(&cap);
	ctx_release(&ctx);
}

TESTS({ "arena_zeroed_aligned", test_arena_zeroed_aligned },
      { "arena_allocations_distinct", test_arena_allocations_distinct },
      { "arena_big_block_keeps_small_head", test_arena_big_block_keeps_small_head },
      { "arena_strings", test_arena_strings },
      { "vec_push_grow", test_vec_push_grow },
      { "vec_of_structs", test_vec_of_structs },
      { "strbuf_basic", test_strbuf_basic },
      { "strbuf_growth", test_strbuf_growth },
      { "strbuf_embedded_nul", test_strbuf_embedded_nul },
      { "strbuf_detach", test_strbuf_detach },
      { "strmap_basic", test_strmap_basic },
      { "strmap_many", test_strmap_many },
      { "file_write_atomic", test_file_write_atomic },
      { "file_read_missing", test_file_read_missing },
      { "dir_remove_tree_nested", test_dir_remove_tree_nested },
      { "hash_fnv1a", test_hash_fnv1a },
      { "time_now_monotonic", test_time_now_monotonic },
      { "diag_capture", test_diag_capture },
      { "diag_env_status_wins", test_diag_env_status_wins })
