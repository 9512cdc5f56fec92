/*
 * base.c - heap wrappers, arena, string builder, files, hashing, clock.
 */

#include "base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void bug_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "collagec: BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void die_oom(size_t n)
{
	if (n)
		fprintf(stderr, "collagec: fatal: out of memory allocating %zu bytes\n", n);
	else
		fprintf(stderr, "collagec: fatal: out of memory\n");
	/* no half-built OUT.so.tmp.XXXXXX or build directory stays behind */
	temp_remove_all();
	exit(4);
}

void *xmalloc(size_t n)
{
	void *p = fault_alloc() ? NULL : malloc(n ? n : 1);

	if (!p)
		die_oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = fault_alloc() ? NULL : calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die_oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = fault_alloc() ? NULL : realloc(p, n ? n : 1);

	if (!q)
		die_oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

/* ---- arena ---- */

struct arena_block {
	struct arena_block *next;
	size_t size;
	_Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK (1u << 20)

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!b || a->used + n > b->size) {
		size_t size = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;

		b = xmalloc(sizeof(*b) + size);
		b->size = size;
		if (size == n && a->head) {
			/* big one-off block: keep the current head for small ones */
			b->next = a->head->next;
			a->head->next = b;
			memset(b->data, 0, n);
			a->total += n;
			return b->data;
		}
		b->next = a->head;
		a->head = b;
		a->used = 0;
	}
	p = b->data + a->used;
	a->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n);

	if (n)
		memcpy(q, p, n);
	return q;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (n)	/* s may be NULL then: an empty protobuf bytes field */
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap, ap2;
	int n;
	char *p;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->used = a->total = 0;
}

/* ---- strbuf ---- */

static void sb_grow(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 > sb->cap) {
		size_t cap = sb->cap ? sb->cap * 2 : 64;

		while (cap < sb->len + extra + 1)
			cap *= 2;
		sb->buf = xrealloc(sb->buf, cap);
		sb->cap = cap;
	}
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = 0;
}

void sb_puts(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_putc(struct strbuf *sb, char c)
{
	sb_add(sb, &c, 1);
}

void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	sb_grow(sb, (size_t)n);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(sb, fmt, ap);
	va_end(ap);
}

const char *sb_str(struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

void sb_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

char *sb_detach(struct strbuf *sb)
{
	char *s = sb->buf ? sb->buf : xstrdup("");

	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return s;
}

/* ---- files ---- */

char *file_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536 * 2;
			buf = xrealloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		free(buf);
		errno = e ? e : EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* Writes all of data to fd; 0, or -1 with errno set. */
static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * A temporary beside path, tracked, with fill(fd, arg) written into it: the
 * owned name, or NULL with errno set and nothing left behind.
 */
static char *temp_fill(const char *path, int (*fill)(int fd, const void *arg), const void *arg)
{
	size_t n = strlen(path);
	char *tmp = xmalloc(n + 16);
	int fd, e;

	memcpy(tmp, path, n);
	memcpy(tmp + n, ".tmp.XXXXXX", 12);
	temp_hold_signals();	/* no signal between creating and tracking it */
	fd = mkstemp(tmp);
	if (fd >= 0)
		temp_track(tmp, false);
	temp_release_signals();
	if (fd < 0) {
		free(tmp);
		return NULL;
	}
	if (fill(fd, arg) < 0)
		goto fail;
	if (fchmod(fd, 0644) < 0 || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	return tmp;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	file_discard(tmp);
	errno = e;
	return NULL;
}

struct bytes {
	const void *data;
	size_t len;
};

static int fill_bytes(int fd, const void *arg)
{
	const struct bytes *b = arg;

	return write_all(fd, b->data, b->len);
}

char *file_fill_temp(const char *path, int (*fill)(int fd, const void *arg), const void *arg)
{
	return temp_fill(path, fill, arg);
}

char *file_write_temp(const char *path, const void *data, size_t len)
{
	struct bytes b = { data, len };

	return temp_fill(path, fill_bytes, &b);
}

/* Copies file src (a path) into fd a block at a time. */
static int fill_copy(int fd, const void *src)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), e;
	ssize_t r;

	if (in < 0)
		return -1;
	while ((r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || write_all(fd, buf, (size_t)r) < 0) {
			e = errno;
			close(in);
			errno = e;
			return -1;
		}
	}
	close(in);
	return 0;
}

char *file_copy_temp(const char *path, const char *src)
{
	return temp_fill(path, fill_copy, src);
}

int file_commit(char *tmp, const char *path)
{
	int e;

	if (rename(tmp, path) == 0) {
		temp_untrack(tmp);
		free(tmp);
		return 0;
	}
	e = errno;
	file_discard(tmp);
	errno = e;
	return -1;
}

void file_discard(char *tmp)
{
	if (!tmp)
		return;
	unlink(tmp);
	temp_untrack(tmp);
	free(tmp);
}

int file_write_atomic(const char *path, const void *data, size_t len)
{
	char *tmp = file_write_temp(path, data, len);

	return tmp ? file_commit(tmp, path) : -1;
}

int file_copy_atomic(const char *path, const char *src)
{
	char *tmp = file_copy_temp(path, src);

	return tmp ? file_commit(tmp, path) : -1;
}

char *dir_make_temp(const char *tag)
{
	const char *t = getenv("TMPDIR");
	char *p;

	if (!t || !*t)
		t = "/tmp";
	p = xmalloc(strlen(t) + strlen(tag) + 32);
	sprintf(p, "%s/collagec-%s-XXXXXX", t, tag);
	temp_hold_signals();	/* no signal between creating and tracking it */
	if (!mkdtemp(p)) {
		temp_release_signals();
		free(p);
		return NULL;
	}
	temp_track(p, true);
	temp_release_signals();
	return p;
}

void dir_remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	/* tracked until gone: an out-of-memory exit midway still removes it */
	if (d) {
		while ((e = readdir(d))) {
			char *sub;
			struct stat st;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			sub = xmalloc(strlen(path) + strlen(e->d_name) + 2);
			sprintf(sub, "%s/%s", path, e->d_name);
			if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
				dir_remove_tree(sub);
			else
				unlink(sub);
			free(sub);
		}
		closedir(d);
	}
	rmdir(path);
	temp_untrack(path);
}

uint64_t hash_fnv1a(const void *data, size_t n, uint64_t h)
{
	const unsigned char *p = data;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

double time_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- strmap ---- */

static uint32_t strmap_hash(const char *s)
{
	return (uint32_t)hash_fnv1a(s, strlen(s), HASH_FNV_INIT);
}

static void strmap_grow(struct strmap *m)
{
	struct strmap nm = { 0 };

	nm.cap = m->cap ? m->cap * 2 : 64;
	nm.keys = xcalloc((size_t)nm.cap, sizeof(char *));
	nm.vals = xcalloc((size_t)nm.cap, sizeof(int));
	for (int i = 0; i < m->cap; i++)
		if (m->keys[i])
			strmap_put(&nm, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = nm;
}

void strmap_put(struct strmap *m, const char *key, int val)
{
	uint32_t h;

	if ((m->n + 1) * 2 > m->cap)
		strmap_grow(m);
	h = strmap_hash(key) & (uint32_t)(m->cap - 1);
	while (m->keys[h] && strcmp(m->keys[h], key))
		h = (h + 1) & (uint32_t)(m->cap - 1);
	if (!m->keys[h])
		m->n++;
	m->keys[h] = key;
	m->vals[h] = val;
}

int strmap_get(const struct strmap *m, const char *key)
{
	uint32_t h;

	if (!m->cap)
		return -1;
	h = strmap_hash(key) & (uint32_t)(m->cap - 1);
	while (m->keys[h]) {
		if (!strcmp(m->keys[h], key))
			return m->vals[h];
		h = (h + 1) & (uint32_t)(m->cap - 1);
	}
	return -1;
}

void strmap_free(struct strmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
