/*
 * rt_cores.h - the physical cores this process may run on: the thread
 * count a model compiled without --threads opens with (rt_model.c), and
 * the one the compiler's search measures such a model at (core/compile.c),
 * so that the plan is chosen for the count it will run at on the compiling
 * machine.
 */
#ifndef COLLAGEC_RT_CORES_H
#define COLLAGEC_RT_CORES_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Whether cpu is in the affinity mask (bits of unsigned longs, n of them). */
static int rt_cpu_in(const unsigned long *mask, int n, long cpu)
{
	int w = (int)(cpu / (8 * (long)sizeof(*mask)));

	return cpu >= 0 && w < n && (mask[w] >> (cpu % (8 * (long)sizeof(*mask)))) & 1;
}

/*
 * Whether a CPU of the mask below cpu shares cpu's core: its SMT siblings
 * are sysfs's thread_siblings_list ("0,64", "0-1"); unreadable, none is.
 */
static int rt_sibling_before(const unsigned long *mask, int n, long cpu)
{
	char path[96], list[256];
	FILE *f;
	const char *p = list;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/"
		 "thread_siblings_list", cpu);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(list, sizeof(list), f))
		list[0] = 0;
	fclose(f);
	while (*p >= '0' && *p <= '9') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (long c = lo; c <= hi && c < cpu; c++)
			if (rt_cpu_in(mask, n, c))
				return 1;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/*
 * The threads a model compiled without --threads opens with: the physical
 * cores among the CPUs this process may run on (its affinity mask, so that
 * a pinned process is not oversubscribed), counting SMT siblings once;
 * without the mask, the online CPUs.
 */
static int rt_physical_cores(void)
{
	unsigned long mask[64];	/* 4096 CPUs */
	long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	int n, cores = 0;
	long online;

	if (bytes <= 0) {
		online = sysconf(_SC_NPROCESSORS_ONLN);
		return online > 1 ? (int)(online < 4096 ? online : 4096) : 1;
	}
	n = (int)(bytes / (long)sizeof(*mask));
	for (long cpu = 0; cpu < 8 * (long)sizeof(*mask) * n; cpu++)
		if (rt_cpu_in(mask, n, cpu) && !rt_sibling_before(mask, n, cpu))
			cores++;
	return cores > 1 ? cores : 1;
}

#endif
