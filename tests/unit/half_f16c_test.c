/*
 * half_f16c_test.c - half_test.c's checks again with rt_half.h's float16
 * conversions as F16C's instructions (what the generated code uses where
 * --cpu allows F16C), and their NaNs against the portable C's rule. On a
 * host without F16C it says so and passes: nothing here can run there.
 */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("f16c")
#endif
#define main half_test_main
#include "half_test.c"
#undef main

int main(int argc, char **argv)
{
#if defined(__F16C__)
	if (!__builtin_cpu_supports("f16c")) {
		printf("ok   half_f16c_test/skipped: no F16C on this host\n");
		return 0;
	}
	/* a NaN keeps its sign and top payload bits, quieted (rt_half.h's C) */
	for (uint32_t p = 1; p < 0x800000u; p = p * 3 + 1)
		for (uint32_t s = 0; s < 2; s++) {
			uint32_t x = s << 31 | 0x7f800000u | p;
			uint16_t want = (uint16_t)((s << 15) | 0x7e00 | ((x >> 13) & 0x3ff));

			if (rt_f2h(rt_bitsf(x)) != want) {
				printf("FAIL half_f16c_test/nan: 0x%08x gave 0x%04x, expected 0x%04x\n",
				       x, rt_f2h(rt_bitsf(x)), want);
				return 1;
			}
		}
	printf("ok   half_f16c_test/nan\n");
	return half_test_main(argc, argv);
#else
	(void)argc;
	(void)argv;
	printf("ok   half_f16c_test/skipped: the compiler has no F16C target\n");
	return 0;
#endif
}
