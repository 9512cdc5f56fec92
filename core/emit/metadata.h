/*
 * metadata.h - OUT.json (schema "collagec-metadata/1", documented in the man
 * page): model, compiler, inputs/outputs with symbolic dims, partitions with
 * their ONNX nodes and kernels, memory and what the search decided. Key
 * order is fixed and nothing depends on time, paths of temporaries or the
 * state of the caches (what was measured, what came from the cost cache:
 * --stats), so the same model, options and costs give byte-identical JSON,
 * cold or warm.
 */
#ifndef COLLAGEC_METADATA_H
#define COLLAGEC_METADATA_H

struct collage_stats;
#include "../compile.h"
#include "emit.h"

/* Owned string (free), or NULL after a diagnostic. */
char *metadata_json(struct graph *g, const struct compile_options *o,
		    const struct link_options *lo, struct target **targets, int nt,
		    struct partition *parts, int np, const struct exec_plan *ep,
		    const struct collage_stats *cs);

/* Hex SHA-256 of a file into out[65]; -1 when unreadable. */
int sha256_file(const char *path, char out[65]);

#endif
