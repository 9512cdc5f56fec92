/*
 * fuzz_meta.c - the OUT.json readers, from bytes: `collagec explain OUT.json`
 * (the partition table, search statistics and fates) and `--json`, and the
 * lookups run and bench make in a model's embedded metadata
 * (session_partition, session_kernel_nodes). explain takes a path ending in
 * .json, so the input goes to one file in a private directory, rewritten
 * for every input; stdout goes to /dev/null.
 */
#include "../../cli/cli.h"
#include "fuzz.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>

static char path[64];

static void meta_path_remove(void)
{
	char *slash = strrchr(path, '/');

	unlink(path);
	*slash = 0;
	rmdir(path);
}

/* The input file's path, made once; NULL when it cannot be. */
static const char *meta_path(void)
{
	char dir[] = "/tmp/collagec-fuzz-meta-XXXXXX";

	if (path[0])
		return path;
	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof path, "%s/m.json", dir);
	atexit(meta_path_remove);
	if (!freopen("/dev/null", "w", stdout))
		return NULL;
	return path;
}

static void explain(const char *p, bool json)
{
	char *argv[] = { "explain", (char *)p, json ? "--json" : NULL, NULL };

	optind = 0;	/* getopt_long starts over */
	cmd_explain(json ? 3 : 2, argv);
}

/* What run --kernels and bench --profile read: kernel k's ONNX nodes. */
static void session_lookups(const uint8_t *data, size_t size)
{
	struct session s;

	memset(&s, 0, sizeof s);
	/* session_partitions parses s.lib.metadata() when s.meta is NULL */
	s.meta = cJSON_ParseWithLength((const char *)data, size);
	if (!s.meta)
		return;
	for (int k = 0; k < 8; k++) {
		struct strbuf sb = STRBUF_INIT;

		session_kernel_nodes(&s, k, &sb);
		sb_release(&sb);
		session_partition(&s, k);
	}
	cJSON_Delete(s.meta);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = meta_path();
	FILE *f;

	if (!p || !(f = fopen(p, "wb")))
		return 0;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	fclose(f);
	explain(p, false);
	explain(p, true);
	session_lookups(data, size);
	return 0;
}
