/*
 * onnx_read.c - reads a model file into an unpacked ModelProto with its
 * weights held once.
 *
 * protobuf-c unpacks from one buffer holding the whole message, and copies
 * every bytes field out of it: a model read that way is in memory twice
 * (the file, then the unpacked copy) until the buffer goes. So the file is
 * mapped and walked by its wire format first, and a skeleton of it is
 * unpacked instead: the same bytes but the big raw_data payloads of the
 * main graph's initializers (where a model keeps its weights), which are
 * then read with pread straight into buffers of their own. Nothing of the
 * file stays mapped but the pages of the skeleton's fields: the weights
 * are in memory once, aligned as the arena aligns (not at the file's odd
 * offsets), and the peak of the read is their size plus the skeleton's.
 *
 * Anything the walk does not expect (a graph field given twice, which
 * protobuf merges; raw_data given twice in one tensor; a malformed field)
 * and files that cannot be mapped (a pipe) take the plain path: the whole
 * file unpacked as it is, and whatever protobuf-c makes of it.
 */
#include "onnx_import.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Payloads from this size on are read into buffers of their own (a page). */
#define HOLE_MIN 4096

enum {
	WIRE_VARINT = 0,
	WIRE_I64 = 1,
	WIRE_LEN = 2,
	WIRE_I32 = 5,
};

/* Field numbers of onnx.proto. */
enum {
	MODEL_GRAPH = 7,
	GRAPH_INITIALIZER = 5,
	TENSOR_RAW_DATA = 9,
};

/* A raw_data payload left out of the skeleton: initializer init's, at off. */
struct hole {
	size_t init;
	uint64_t off, len;
};

struct skeleton {
	const uint8_t *base;		/* the mapped file */
	VEC(struct hole) holes;
};

/* One field of a message: its tag and where its bytes are. */
struct field {
	uint32_t num;
	int wire;
	const uint8_t *start;		/* its tag */
	const uint8_t *payload;		/* a WIRE_LEN field's bytes (after the length) */
	uint64_t len;			/* their count */
	const uint8_t *end;		/* past the field */
};

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && *p < end; s += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The field at *p (before end), *p moved past it; false when malformed. */
static bool next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t key, v;

	f->start = *p;
	if (!read_varint(p, end, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return false;
	f->num = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	f->payload = NULL;
	f->len = 0;
	switch (f->wire) {
	case WIRE_VARINT:
		if (!read_varint(p, end, &v))
			return false;
		break;
	case WIRE_I64:
	case WIRE_I32:
		v = f->wire == WIRE_I64 ? 8 : 4;
		if (v > (uint64_t)(end - *p))
			return false;
		*p += v;
		break;
	case WIRE_LEN:
		if (!read_varint(p, end, &f->len) || f->len > (uint64_t)(end - *p))
			return false;
		f->payload = *p;
		*p += f->len;
		break;
	default:	/* groups, which onnx.proto has none of */
		return false;
	}
	f->end = *p;
	return true;
}

static void put_varint(struct strbuf *sb, uint64_t v)
{
	while (v >= 0x80) {
		sb_putc(sb, (char)((v & 0x7f) | 0x80));
		v >>= 7;
	}
	sb_putc(sb, (char)v);
}

/* A WIRE_LEN field num holding what is in sub. */
static void put_message(struct strbuf *sb, uint32_t num, const struct strbuf *sub)
{
	put_varint(sb, (uint64_t)num << 3 | WIRE_LEN);
	put_varint(sb, sub->len);
	sb_add(sb, sub->buf ? sub->buf : "", sub->len);
}

/* How many fields num the message [p, end) has, or -1 when it is malformed. */
static int count_fields(const uint8_t *p, const uint8_t *end, uint32_t num)
{
	struct field f;
	int n = 0;

	while (p < end) {
		if (!next_field(&p, end, &f))
			return -1;
		n += f.num == num;
	}
	return n;
}

/* Initializer init (a TensorProto) without a big raw_data, which becomes a hole. */
static bool skeleton_tensor(struct skeleton *sk, size_t init, const uint8_t *p,
			    const uint8_t *end, struct strbuf *out)
{
	/* raw_data given twice: the last wins, and this walk does not guess */
	int n_raw = count_fields(p, end, TENSOR_RAW_DATA);
	struct field f;

	if (n_raw < 0)
		return false;
	while (p < end) {
		next_field(&p, end, &f);
		if (n_raw == 1 && f.num == TENSOR_RAW_DATA && f.wire == WIRE_LEN &&
		    f.len >= HOLE_MIN) {
			struct hole h = { init, (uint64_t)(f.payload - sk->base), f.len };

			vec_push(&sk->holes, h);
			continue;
		}
		sb_add(out, (const char *)f.start, (size_t)(f.end - f.start));
	}
	return true;
}

static bool skeleton_graph(struct skeleton *sk, const uint8_t *p, const uint8_t *end,
			   struct strbuf *out)
{
	struct strbuf sub = STRBUF_INIT;
	struct field f;
	size_t init = 0;

	while (p < end) {
		if (!next_field(&p, end, &f) || (f.num == GRAPH_INITIALIZER && f.wire != WIRE_LEN))
			goto fail;
		if (f.num != GRAPH_INITIALIZER) {
			sb_add(out, (const char *)f.start, (size_t)(f.end - f.start));
			continue;
		}
		sb_reset(&sub);
		if (!skeleton_tensor(sk, init++, f.payload, f.payload + f.len, &sub))
			goto fail;
		put_message(out, f.num, &sub);
	}
	sb_release(&sub);
	return true;
fail:
	sb_release(&sub);
	return false;
}

/* The skeleton of the model [base, base + len) in out; false: take the plain path. */
static bool skeleton_model(struct skeleton *sk, size_t len, struct strbuf *out)
{
	const uint8_t *p = sk->base, *end = sk->base + len;
	struct strbuf sub = STRBUF_INIT;
	struct field f;

	/* a graph given twice is merged by protobuf: this walk does not merge */
	if (count_fields(p, end, MODEL_GRAPH) != 1)
		return false;
	while (p < end) {
		next_field(&p, end, &f);
		if (f.num != MODEL_GRAPH) {
			sb_add(out, (const char *)f.start, (size_t)(f.end - f.start));
			continue;
		}
		if (f.wire != WIRE_LEN || !skeleton_graph(sk, f.payload, f.payload + f.len, &sub)) {
			sb_release(&sub);
			return false;
		}
		put_message(out, f.num, &sub);
	}
	sb_release(&sub);
	return true;
}

/* Reads n bytes at off of fd into buf; 0, or -1 with errno set. */
static int read_at(int fd, void *buf, uint64_t n, uint64_t off)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r < 0 ? errno : EIO;	/* the file shrank */
			return -1;
		}
		p += r;
		n -= (uint64_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/*
 * Fills the holes of mp (unpacked from the skeleton) from fd: each
 * initializer's raw_data read into an arena buffer. 0, or -1 with errno.
 */
static int fill_holes(struct collagec_ctx *ctx, Onnx__ModelProto *mp, int fd,
		      const struct skeleton *sk)
{
	for (int i = 0; i < sk->holes.n; i++) {
		const struct hole *h = &sk->holes.v[i];
		Onnx__TensorProto *t;

		if (!mp->graph || h->init >= mp->graph->n_initializer)
			BUG("hole of initializer %zu the skeleton does not have", h->init);
		t = mp->graph->initializer[h->init];
		t->raw_data.data = arena_alloc(&ctx->arena, (size_t)h->len);
		t->raw_data.len = (size_t)h->len;
		t->has_raw_data = 1;
		if (read_at(fd, t->raw_data.data, h->len, h->off) < 0)
			return -1;
	}
	return 0;
}

/* The plain path: the whole file read and unpacked as it is. */
static int read_plain(ProtobufCAllocator *alloc, const char *path, Onnx__ModelProto **mp)
{
	size_t len;
	char *buf = file_read(path, &len);

	if (!buf)
		return -1;
	*mp = onnx__model_proto__unpack(alloc, len, (const uint8_t *)buf);
	free(buf);
	return 0;
}

int onnx_read_model(struct collagec_ctx *ctx, ProtobufCAllocator *alloc, const char *path,
		    Onnx__ModelProto **mp)
{
	struct skeleton sk = { 0 };
	struct strbuf skel = STRBUF_INIT;
	struct stat st;
	void *map;
	int fd, e, rc = 0;

	*mp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		close(fd);
		return read_plain(alloc, path, mp);
	}
	sk.base = map;
	if (!skeleton_model(&sk, (size_t)st.st_size, &skel) || !sk.holes.n) {
		/* unpacked from the mapping: no copy of the file in the heap */
		*mp = onnx__model_proto__unpack(alloc, (size_t)st.st_size, map);
		goto out;
	}
	/* the skeleton's pages of the file are not needed again */
	munmap(map, (size_t)st.st_size);
	map = NULL;
	*mp = onnx__model_proto__unpack(alloc, skel.len, (const uint8_t *)skel.buf);
	sb_release(&skel);
	if (*mp && fill_holes(ctx, *mp, fd, &sk) < 0) {
		*mp = NULL;
		rc = -1;
	}
out:
	e = errno;
	if (map)
		munmap(map, (size_t)st.st_size);
	close(fd);
	sb_release(&skel);
	vec_free(&sk.holes);
	errno = e;
	return rc;
}
