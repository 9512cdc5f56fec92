/*
 * fuzz.h - shared by the libFuzzer harnesses (make fuzz) and their replay
 * driver (replay.c, run by make test over tests/fuzz/corpus). A harness
 * defines LLVMFuzzerTestOneInput; readers that take a path get the input
 * through a memfd, as /dev/fd/N, so nothing touches the disk.
 */
#ifndef COLLAGEC_FUZZ_H
#define COLLAGEC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file: its fd (close it after), path written to path[32]. */
static inline int fuzz_file(const uint8_t *data, size_t size, char path[32])
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return -1;
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, data + off, size - off);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	snprintf(path, 32, "/dev/fd/%d", fd);
	return fd;
}

/* Diagnostics go here: the harness checks behaviour, not messages. */
static inline FILE *fuzz_null(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

#endif
