/*
 * test.h - a tiny unit-test harness. A test file defines test functions and
 * a table; main() runs them (or only those named on the command line) and
 * prints "ok   file/test" or "FAIL file/test: expr at line" per test.
 *
 *	static void test_dim_mul(void) { ASSERT(6, dim_mul_c(2, 3)); }
 *	TESTS({ "dim_mul", test_dim_mul });
 */
#ifndef COLLAGEC_TEST_H
#define COLLAGEC_TEST_H

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
};

static jmp_buf test_jmp;
static const char *test_failed_expr;
static int test_failed_line;

#define ASSERT(expected, actual)                                              \
	do {                                                                  \
		long long e_ = (long long)(expected), a_ = (long long)(actual); \
		if (e_ != a_) {                                               \
			fprintf(stderr, "  %s:%d: %s: expected %lld, got %lld\n", \
				__FILE__, __LINE__, #actual, e_, a_);         \
			test_failed_expr = #actual;                           \
			test_failed_line = __LINE__;                          \
			longjmp(test_jmp, 1);                                 \
		}                                                             \
	} while (0)

#define ASSERT_TRUE(cond) ASSERT(1, !!(cond))

#define ASSERT_STR(expected, actual)                                          \
	do {                                                                  \
		const char *e_ = (expected), *a_ = (actual);                  \
		if (!a_ || strcmp(e_, a_)) {                                  \
			fprintf(stderr, "  %s:%d: %s: expected \"%s\", got \"%s\"\n", \
				__FILE__, __LINE__, #actual, e_, a_ ? a_ : "(null)"); \
			test_failed_expr = #actual;                           \
			test_failed_line = __LINE__;                          \
			longjmp(test_jmp, 1);                                 \
		}                                                             \
	} while (0)

#define TESTS(...)                                                            \
	static const struct unit_test unit_tests[] = { __VA_ARGS__ };         \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		volatile int failed = 0;                                           \
		const char *file = strrchr(__FILE__, '/') ? strrchr(__FILE__, '/') + 1 : __FILE__; \
		for (volatile size_t i = 0; i < sizeof(unit_tests) / sizeof(unit_tests[0]); i++) { \
			int want = argc < 2;                                  \
			for (int k = 1; k < argc; k++)                        \
				want |= !strcmp(argv[k], unit_tests[i].name); \
			if (!want)                                            \
				continue;                                     \
			if (setjmp(test_jmp) == 0) {                          \
				unit_tests[i].fn();                           \
				printf("ok   %.*s/%s\n", (int)(strlen(file) - 2), file, \
				       unit_tests[i].name);                   \
			} else {                                              \
				printf("FAIL %.*s/%s: %s at line %d\n", (int)(strlen(file) - 2), \
				       file, unit_tests[i].name, test_failed_expr, test_failed_line); \
				failed++;                                     \
			}                                                     \
			fflush(stdout);                                       \
		}                                                             \
		return failed ? 1 : 0;                                        \
	}

#endif
