/*
 * objcache.c - compiled kernel files kept for the next compile (emit.h):
 * kernels_N.o by the SHA-256 of its source, the compiler's identity, the
 * flags and collagec's own build (collagec_codegen_id: a kernel file
 * includes runtime headers its text does not show), in an "objects"
 * directory beside the cost cache. A recompile after
 * a change of weights, or of one layer, compiles only the files that
 * changed. Entries are written to a temporary name and renamed, so parallel
 * compiles never see half a file; the directory is trimmed to its size
 * bound, least recently used first.
 */
#include "emit.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../compile.h"

const char *objcache_dir(struct arena *a, const char *cost_cache_path)
{
	const char *slash = cost_cache_path ? strrchr(cost_cache_path, '/') : NULL;

	if (!cost_cache_path)
		return NULL;
	if (!slash)
		return "objects";
	return arena_printf(a, "%.*s/objects", (int)(slash - cost_cache_path), cost_cache_path);
}

const char *objcache_compiler_id(struct arena *a, const char *cc)
{
	/* one probe per compiler and process: compiles and bench builds ask often */
	static char *last_cc, *last_id;
	struct strbuf sb = STRBUF_INIT;
	char *cmd, buf[512];
	FILE *p;

	if (last_cc && !strcmp(last_cc, cc))
		return last_id ? arena_strdup(a, last_id) : NULL;
	cmd = arena_printf(a, "%s --version 2>/dev/null; %s -dumpmachine 2>/dev/null", cc, cc);
	fflush(NULL);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	while (fgets(buf, sizeof(buf), p))
		sb_puts(&sb, buf);
	free(last_cc);
	free(last_id);
	last_cc = xstrdup(cc);
	last_id = pclose(p) == 0 && sb.len ? xstrdup(sb_str(&sb)) : NULL;
	sb_release(&sb);
	return last_id ? arena_strdup(a, last_id) : NULL;
}

const char *objcache_key(struct arena *a, const char *source, const char *compiler,
			 const char *flags)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	/* SHA-256 fails only when libcrypto cannot allocate */
	if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(md, source, strlen(source) + 1) ||
	    !EVP_DigestUpdate(md, compiler, strlen(compiler) + 1) ||
	    !EVP_DigestUpdate(md, flags, strlen(flags) + 1) ||
	    !EVP_DigestUpdate(md, collagec_codegen_id, strlen(collagec_codegen_id) + 1) ||
	    !EVP_DigestFinal_ex(md, h, &n)) {
		EVP_MD_CTX_free(md);
		die_oom(0);
	}
	EVP_MD_CTX_free(md);
	for (unsigned i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", h[i]);
	return arena_strdup(a, hex);
}

/* Copies src to dst (created or truncated); 0 or -1. */
static int copy_file(const char *src, const char *dst)
{
	size_t len;
	char *data = file_read(src, &len);
	FILE *f;
	int rc = 0;

	if (!data)
		return -1;
	f = fopen(dst, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len))
		rc = -1;
	if (f && fclose(f) != 0)
		rc = -1;
	free(data);
	return rc;
}

bool objcache_get(struct arena *a, const char *dir, const char *key, const char *dst)
{
	const char *path = arena_printf(a, "%s/%s.o", dir, key);

	if (access(path, R_OK) < 0 || copy_file(path, dst) < 0)
		return false;
	utimensat(AT_FDCWD, path, NULL, 0);	/* recently used: trimmed last */
	return true;
}

struct entry {
	char *name;
	off_t size;
	time_t mtime;
};

static int by_age(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;

	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return strcmp(a->name, b->name);
}

int objcache_scan(const char *dir, long *files, long long *bytes, long long max_bytes)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	VEC(struct entry) es = { 0 };
	long long total = 0;

	*files = 0;
	*bytes = 0;
	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char *path;
		struct stat st;

		if (n < 3 || strcmp(e->d_name + n - 2, ".o"))
			continue;
		path = xmalloc(strlen(dir) + n + 2);
		sprintf(path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0) {
			struct entry en = { path, st.st_size, st.st_mtime };

			vec_push(&es, en);
			total += st.st_size;
		} else {
			free(path);
		}
	}
	closedir(d);
	if (max_bytes >= 0 && total > max_bytes) {
		qsort(es.v, (size_t)es.n, sizeof(*es.v), by_age);
		/* down to three quarters, so the next compiles do not trim again */
		for (int i = 0; i < es.n && total > max_bytes / 4 * 3; i++)
			if (unlink(es.v[i].name) == 0) {
				total -= es.v[i].size;
				es.v[i].size = -1;
			}
	}
	for (int i = 0; i < es.n; i++) {
		if (es.v[i].size >= 0)
			(*files)++;
		free(es.v[i].name);
	}
	*bytes = total;
	vec_free(&es);
	return 0;
}

/* mkdir -p dir (private, 0700, as the cost cache's directory). */
static int mkdir_p(struct arena *a, const char *dir)
{
	char *d = arena_strdup(a, dir);

	for (char *p = d + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(d, 0700) < 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	return mkdir(d, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

void objcache_put(struct arena *a, const char *dir, const char *key, const char *src)
{
	const char *path = arena_printf(a, "%s/%s.o", dir, key);
	const char *tmp = arena_printf(a, "%s/.%s.%ld.tmp", dir, key, (long)getpid());
	long files;
	long long bytes;
	bool ok;

	/* a cache that cannot be written is no error: the build has its object */
	if (mkdir_p(a, dir) < 0)
		return;
	temp_track(tmp, false);
	ok = copy_file(src, tmp) == 0 && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	temp_untrack(tmp);
	if (!ok)
		return;
	objcache_scan(dir, &files, &bytes, OBJCACHE_MAX_BYTES);
}
