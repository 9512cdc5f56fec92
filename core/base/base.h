/*
 * base.h - the few things every other module uses: heap wrappers that never
 * return NULL, a bump arena, growable arrays, a string builder, BUG() for
 * broken invariants and small file helpers.
 *
 * Ownership words used in every header of collagec:
 *   borrowed - valid while the owner (graph, context) lives
 *   arena    - valid until the arena is released (ctx_release)
 *   owned    - the caller frees it with the matching X_free / free()
 *
 * Example:
 *	struct arena a = {0};
 *	char *s = arena_printf(&a, "node %d", 3);   // arena
 *	struct strbuf sb = STRBUF_INIT;
 *	sb_printf(&sb, "%s!", s);                   // owned by sb
 *	sb_release(&sb); arena_release(&a);
 */
#ifndef COLLAGEC_BASE_H
#define COLLAGEC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))

/* A broken internal invariant: prints file:line and aborts. Never a user error. */
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)
NORETURN PRINTF_LIKE(3, 4) void bug_at(const char *file, int line, const char *fmt, ...);

/*
 * Heap wrappers: never return NULL. Out of memory goes to die_oom(), which
 * prints one "collagec: fatal: out of memory" line, removes the tracked
 * temporaries (tempfile.c) and exits with status 4 (environment failure).
 * Code that sees a library (SQLite, libcrypto) report an allocation failure
 * calls die_oom() too.
 */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
NORETURN void die_oom(size_t n);

/*
 * Allocation-failure injection (fault.c), like SQLite's sqlite3FaultSim.
 * mem_init, called once by main before anything allocates, routes cJSON
 * through xmalloc (cJSON drops a member whose allocation fails and carries
 * on, so a NULL there would be a silently truncated OUT.json). In builds
 * with -DCOLLAGEC_FAULT_INJECTION (make test-oom builds build-oom) it also
 * routes SQLite and libcrypto through counting wrappers, and the
 * environment variable COLLAGEC_FAIL_ALLOC=N makes the N-th allocation
 * (xmalloc & co, arenas, SQLite, libcrypto) fail: xmalloc's callers then
 * take the out-of-memory exit, the libraries return their own errors.
 * COLLAGEC_FAIL_ALLOC=0 fails nothing and prints "collagec: allocations: K"
 * at exit. fault_alloc() says whether this allocation must fail; it is
 * always false in other builds.
 */
void mem_init(void);
#ifdef COLLAGEC_FAULT_INJECTION
bool fault_alloc(void);
#else
static inline bool fault_alloc(void)
{
	return false;
}
#endif

/* ---- arena ---- */

struct arena_block;
struct arena {
	struct arena_block *head;	/* newest block first */
	size_t used;			/* bytes used in head */
	size_t total;			/* bytes handed out, for statistics */
};

void *arena_alloc(struct arena *a, size_t n);	/* zeroed, 16-byte aligned */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
void *arena_memdup(struct arena *a, const void *p, size_t n);
PRINTF_LIKE(2, 3) char *arena_printf(struct arena *a, const char *fmt, ...);
void arena_release(struct arena *a);

/*
 * Growable array in the heap:  VEC(int) v = {0}; vec_push(&v, 3); vec_free(&v);
 * The element type is whatever VEC() was given; .n is the count.
 */
#define VEC(T) struct { T *v; int n, cap; }
#define vec_grow(vec, need)                                                  \
	do {                                                                 \
		if ((need) > (vec)->cap) {                                   \
			int nc_ = (vec)->cap ? (vec)->cap * 2 : 8;           \
			while (nc_ < (need))                                 \
				nc_ *= 2;                                    \
			(vec)->v = xrealloc((vec)->v, sizeof(*(vec)->v) * nc_); \
			(vec)->cap = nc_;                                    \
		}                                                            \
	} while (0)
#define vec_push(vec, x)                          \
	do {                                      \
		vec_grow((vec), (vec)->n + 1);    \
		(vec)->v[(vec)->n++] = (x);       \
	} while (0)
#define vec_free(vec) (free((vec)->v), (vec)->v = NULL, (vec)->n = (vec)->cap = 0)

/* ---- string builder (git's strbuf, small) ---- */

struct strbuf {
	char *buf;	/* always NUL-terminated once anything was added */
	size_t len;
	size_t cap;
};
#define STRBUF_INIT { NULL, 0, 0 }

void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putc(struct strbuf *sb, char c);
PRINTF_LIKE(2, 3) void sb_printf(struct strbuf *sb, const char *fmt, ...);
void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap);
const char *sb_str(struct strbuf *sb);	/* borrowed; "" when empty */
void sb_reset(struct strbuf *sb);
void sb_release(struct strbuf *sb);
char *sb_detach(struct strbuf *sb);	/* owned */

/* ---- files ---- */

/* Reads a whole file; owned buffer (NUL-terminated past *len) or NULL with errno set. */
char *file_read(const char *path, size_t *len);

/*
 * Writes data to path atomically: a temporary file in the same directory is
 * written, flushed and renamed over path. Returns 0, or -1 with errno set and
 * nothing left behind.
 */
int file_write_atomic(const char *path, const void *data, size_t len);
/*
 * file_write_atomic in halves, for outputs that must appear together:
 * file_write_temp writes a temporary beside path (owned name, or NULL with
 * errno set and nothing left behind); file_commit renames it over path and
 * frees it (0, or -1 with errno set and the temporary removed);
 * file_discard removes and frees one never committed (NULL is fine).
 */
char *file_write_temp(const char *path, const void *data, size_t len);
/* file_write_temp with what fill(fd, arg) writes (0, or -1 with errno set). */
char *file_fill_temp(const char *path, int (*fill)(int fd, const void *arg), const void *arg);
int file_commit(char *tmp, const char *path);
void file_discard(char *tmp);
/*
 * file_write_atomic and file_write_temp with the bytes of the file src,
 * copied a block at a time: a shared object as big as its model's weights
 * goes into place without being held in memory.
 */
int file_copy_atomic(const char *path, const char *src);
char *file_copy_temp(const char *path, const char *src);

/* Makes a fresh private directory under $TMPDIR (owned string), or NULL. */
char *dir_make_temp(const char *tag);
/* Removes a directory tree made by dir_make_temp (ignores errors). */
void dir_remove_tree(const char *path);

/*
 * Temporary paths a signal must not leave behind (tempfile.c): tracked from
 * creation to removal (dir_make_temp and file_write_atomic track their own);
 * temp_cleanup_on_signal, called once by main, removes what is tracked on
 * SIGINT, SIGTERM, SIGHUP or SIGQUIT and dies of the same signal.
 */
void temp_track(const char *path, bool dir);
void temp_untrack(const char *path);
void temp_cleanup_on_signal(void);
/*
 * Block and unblock the cleanup signals (nesting): around creating a
 * temporary and tracking it, so that no signal falls between the two.
 */
void temp_hold_signals(void);
void temp_release_signals(void);
/*
 * Children that write into tracked paths (link.c's cc jobs), tracked from
 * fork to waitpid; temp_remove_all, which the out-of-memory exit calls,
 * waits for them, then removes every tracked path.
 */
void temp_track_child(int pid);
void temp_untrack_child(int pid);
void temp_remove_all(void);

/* 64-bit FNV-1a, for structure hashes and names. */
uint64_t hash_fnv1a(const void *data, size_t n, uint64_t h);
#define HASH_FNV_INIT 0xcbf29ce484222325ULL

/* Monotonic clock in seconds. */
double time_now(void);

#endif

#ifndef COLLAGEC_STRMAP_H
#define COLLAGEC_STRMAP_H
/*
 * String -> int map (open addressing). Keys are borrowed: they must outlive
 * the map (arena strings). Lookups return -1 when absent.
 *
 *	struct strmap m = {0};
 *	strmap_put(&m, name, 7); strmap_get(&m, name) == 7; strmap_free(&m);
 */
struct strmap {
	const char **keys;
	int *vals;
	int cap, n;
};

void strmap_put(struct strmap *m, const char *key, int val);
int strmap_get(const struct strmap *m, const char *key);
void strmap_free(struct strmap *m);
#endif
