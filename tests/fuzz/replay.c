/*
 * replay.c - runs a fuzz harness over files (make test: tests/fuzz.sh over
 * tests/fuzz/corpus/HARNESS/), built with the normal compiler and no
 * libFuzzer. Prints nothing; a crash or abort is the failure.
 *	usage: replay_HARNESS FILE...
 */
#include "fuzz.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf = NULL;
		size_t len = 0, cap = 0, n;

		if (!f) {
			perror(argv[i]);
			return 2;
		}
		do {
			if (cap - len < 65536) {
				cap = cap ? cap * 2 : 65536;
				buf = realloc(buf, cap);
				if (!buf)
					return 2;
			}
			n = fread(buf + len, 1, cap - len, f);
			len += n;
		} while (n > 0);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
	}
	return 0;
}
