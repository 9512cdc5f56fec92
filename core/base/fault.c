/*
 * fault.c - where allocations go, and allocation-failure injection.
 *
 * Every build routes cJSON through xmalloc: cJSON's builders drop an item
 * whose allocation failed and go on, so returning NULL to it would write a
 * truncated OUT.json with no error. xmalloc never returns NULL.
 *
 * Builds with -DCOLLAGEC_FAULT_INJECTION (build-oom, see tests/oom.sh) count
 * every allocation: xmalloc, xcalloc, xrealloc (and so the arenas and
 * protobuf-c, which unpacks into an arena), cJSON, SQLite (through
 * SQLITE_CONFIG_MALLOC) and libcrypto (through CRYPTO_set_mem_functions).
 * COLLAGEC_FAIL_ALLOC=N makes the N-th of them fail, once; the walk in
 * tests/oom.sh checks that every N ends in one clean error. The counter is
 * the one piece of mutable global state outside a registry: it belongs to
 * the test build only, like SQLite's sqlite3FaultSim.
 */
#include "base.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#ifdef COLLAGEC_FAULT_INJECTION
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>

static long fault_count;	/* allocations so far */
static long fault_at = -1;	/* the one that fails; 0: none, report the count */
static bool fault_trace;	/* COLLAGEC_FAIL_ALLOC_TRACE: stack of the failing one */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HAVE_ASAN)
void __sanitizer_print_stack_trace(void);
#define print_stack() __sanitizer_print_stack_trace()
#else
#define print_stack() ((void)0)
#endif

bool fault_alloc(void)
{
	if (++fault_count != fault_at)
		return false;
	if (fault_trace) {
		fprintf(stderr, "collagec: allocation %ld fails here:\n", fault_count);
		print_stack();
	}
	return true;
}

/*
 * A forked child (a measuring build, a worker) counts on from the parent's
 * count and would fail the parent's N-th allocation in its own copy: the
 * parent then sees a failed build and goes on, exit 0 with another plan.
 * The walk is over collagec's own process, so a child injects nothing.
 */
static void fault_child(void)
{
	fault_at = -1;
}

static void fault_report(void)
{
	fprintf(stderr, "collagec: allocations: %ld\n", fault_count);
}

/* ---- SQLite: a size header in front of each block (xSize needs it) ---- */

#define HDR 16

static void *sq_malloc(int n)
{
	unsigned char *p;

	if (fault_alloc() || !(p = malloc((size_t)n + HDR)))
		return NULL;
	memcpy(p, &n, sizeof n);
	return p + HDR;
}

static void sq_free(void *p)
{
	if (p)
		free((unsigned char *)p - HDR);
}

static int sq_size(void *p)
{
	int n = 0;

	if (p)
		memcpy(&n, (unsigned char *)p - HDR, sizeof n);
	return n;
}

static void *sq_realloc(void *p, int n)
{
	unsigned char *q;

	if (fault_alloc() || !(q = realloc((unsigned char *)p - HDR, (size_t)n + HDR)))
		return NULL;
	memcpy(q, &n, sizeof n);
	return q + HDR;
}

static int sq_roundup(int n)
{
	return (n + 7) & ~7;
}

static int sq_init(void *data)
{
	return SQLITE_OK;
}

static void sq_shutdown(void *data)
{
}

/* ---- libcrypto ---- */

static void *cr_malloc(size_t n, const char *file, int line)
{
	return fault_alloc() ? NULL : malloc(n);
}

static void *cr_realloc(void *p, size_t n, const char *file, int line)
{
	return fault_alloc() ? NULL : realloc(p, n);
}

static void cr_free(void *p, const char *file, int line)
{
	free(p);
}

static void fault_init(void)
{
	static const sqlite3_mem_methods sq = {
		sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup, sq_init, sq_shutdown, NULL
	};
	const char *e = getenv("COLLAGEC_FAIL_ALLOC");

	if (!e || !*e)
		return;
	fault_at = strtol(e, NULL, 10);
	fault_trace = getenv("COLLAGEC_FAIL_ALLOC_TRACE") != NULL;
	if (fault_at == 0)
		atexit(fault_report);
	pthread_atfork(NULL, NULL, fault_child);
	/* both must come before the library's first allocation */
	sqlite3_config(SQLITE_CONFIG_MALLOC, &sq);
	CRYPTO_set_mem_functions(cr_malloc, cr_realloc, cr_free);
	/*
	 * libcrypto's one-time set-up (error strings, config, the default
	 * provider, the SHA-256 fetch) makes ~4,500 allocations and shrugs off
	 * a failed one: the compile then succeeds unchanged. Run it before
	 * counting starts, so the walk spends its time on collagec's own
	 * handling; libcrypto's later allocations are counted.
	 */
	long at = fault_at;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n;

	fault_at = -1;
	OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_LOAD_CONFIG, NULL);
	EVP_Digest("", 0, md, &n, EVP_sha256(), NULL);
	fault_count = 0;
	fault_at = at;
}
#else
static void fault_init(void)
{
}
#endif

void mem_init(void)
{
	cJSON_Hooks hooks = { xmalloc, free };

	fault_init();
	cJSON_InitHooks(&hooks);
}
