/*
 * threads.c - a compiled model's own thread count (tests/runtime.sh).
 * Linked against a model compiled with or without --threads; argv[1] is
 * the count collagec_open must give it (the --threads value, or the
 * physical cores this process may run on), argv[2] the check's name.
 * collagec_set_threads overrides it, and a bad count leaves it alone.
 * Prints "ok   runtime/NAME" or "FAIL runtime/NAME: why".
 */
#include <stdio.h>
#include <stdlib.h>

#include "collagec.h"

int main(int argc, char **argv)
{
	collagec_model *m;
	int want, got;

	if (argc != 3)
		return 2;
	want = atoi(argv[1]);
	if (collagec_open(&m) != COLLAGEC_OK) {
		printf("FAIL runtime/%s: open failed\n", argv[2]);
		return 1;
	}
	got = collagec_get_threads(m);
	if (got != want) {
		printf("FAIL runtime/%s: opened with %d threads, expected %d\n", argv[2], got, want);
		collagec_close(m);
		return 1;
	}
	if (collagec_set_threads(m, 3) != COLLAGEC_OK || collagec_get_threads(m) != 3 ||
	    collagec_set_threads(m, 0) != COLLAGEC_E_ARG || collagec_get_threads(m) != 3 ||
	    collagec_get_threads(NULL) != -1) {
		printf("FAIL runtime/%s: set_threads(3) then (0) left %d threads\n", argv[2],
		       collagec_get_threads(m));
		collagec_close(m);
		return 1;
	}
	collagec_close(m);
	printf("ok   runtime/%s\n", argv[2]);
	return 0;
}
