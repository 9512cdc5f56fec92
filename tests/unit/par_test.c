/*
 * par_test.c - runtime/rt_par.c, the compiled models' thread pool: every
 * index of a job runs exactly once on any thread count, chunks honour the
 * grain, a call from inside a chunk or from a second thread while a job
 * runs falls back to its caller, idle workers sleep (they use no CPU a
 * moment after a job), stopping joins them, and the spin before sleeping
 * is the short one while another process takes our CPU.
 */
#include "test.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/rt_par.c"

struct count_job {
	_Atomic int *hits;
	int64_t grain, n;
	_Atomic int short_chunks;	/* chunks below grain that are not the last */
};

static void count(void *v, int64_t lo, int64_t hi)
{
	struct count_job *j = v;

	if (hi - lo < j->grain && hi != j->n)
		atomic_fetch_add(&j->short_chunks, 1);
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add(&j->hits[i], 1);
}

static int all_once(_Atomic int *hits, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (atomic_load(&hits[i]) != 1)
			return 0;
	return 1;
}

static void test_every_index_once(void)
{
	enum { N = 100003 };
	static _Atomic int hits[N];

	for (int t = 1; t <= 8; t++)
		for (int64_t grain = 1; grain <= 4096; grain *= 64)
			for (int rep = 0; rep < 20; rep++) {
				struct count_job j = { hits, grain, N, 0 };

				memset(hits, 0, sizeof(hits));
				rt_par_for(t, N, grain, count, &j);
				ASSERT_TRUE(all_once(hits, N));
				ASSERT(0, atomic_load(&j.short_chunks));
			}
	/* nothing to do, and less than a grain */
	{
		struct count_job j = { hits, 1, 0, 0 };

		rt_par_for(4, 0, 1, count, &j);
		memset(hits, 0, sizeof(hits));
		j.n = 3;
		j.grain = 8;
		rt_par_for(4, 3, 8, count, &j);
		ASSERT_TRUE(all_once(hits, 3));
	}
}

/* a chunk that asks for threads again: its job runs on the chunk's thread */
struct nest_job {
	_Atomic int *hits;
	_Atomic int foreign;		/* inner chunks run by another thread */
};

struct inner_job {
	struct nest_job *outer;
	pthread_t self;
	int64_t base;
};

static void inner(void *v, int64_t lo, int64_t hi)
{
	struct inner_job *j = v;

	if (!pthread_equal(pthread_self(), j->self))
		atomic_fetch_add(&j->outer->foreign, 1);
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add(&j->outer->hits[j->base + i], 1);
}

static void outer(void *v, int64_t lo, int64_t hi)
{
	for (int64_t o = lo; o < hi; o++) {
		struct inner_job j = { v, pthread_self(), o * 1000 };

		rt_par_for(4, 1000, 1, inner, &j);
	}
}

static void test_nested_runs_serially(void)
{
	static _Atomic int hits[64 * 1000];
	struct nest_job j = { hits, 0 };

	rt_par_for(4, 64, 1, outer, &j);
	ASSERT_TRUE(all_once(hits, 64 * 1000));
	ASSERT(0, atomic_load(&j.foreign));
}

/* two of the program's threads submitting at once: each job complete */
static void *submitter(void *arg)
{
	enum { N = 20000 };
	_Atomic int *hits = calloc(N, sizeof(*hits));
	long bad = 0;

	(void)arg;
	for (int rep = 0; rep < 200 && hits; rep++) {
		struct count_job j = { hits, 1, N, 0 };

		memset(hits, 0, N * sizeof(*hits));
		rt_par_for(3, N, 1, count, &j);
		bad += !all_once(hits, N);
	}
	free(hits);
	return (void *)(hits ? bad : -1);
}

static void test_concurrent_submitters(void)
{
	pthread_t a, b;
	void *ra, *rb;

	ASSERT(0, pthread_create(&a, NULL, submitter, NULL));
	ASSERT(0, pthread_create(&b, NULL, submitter, NULL));
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	ASSERT(0, (long)ra);
	ASSERT(0, (long)rb);
}

static void nothing(void *v, int64_t lo, int64_t hi)
{
	volatile double s = 0;

	(void)v;
	for (int64_t i = lo; i < hi; i++)
		s += (double)i;
}

static int64_t cpu_ns(pthread_t t)
{
	clockid_t c;
	struct timespec ts;

	if (pthread_getcpuclockid(t, &c) != 0 || clock_gettime(c, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * After a job the workers spin for RT_PAR_SPIN_NS (50 us), then sleep: in
 * the next 200 ms they use next to no CPU (libgomp's default spins for
 * milliseconds after each region, which is what this pool replaces). CPU
 * time, not wall time, so a loaded machine only makes it smaller.
 */
static void test_idle_workers_sleep(void)
{
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	int64_t before[RT_PAR_MAX], after;
	int n;

	rt_par_for(4, 1 << 20, 1, nothing, NULL);
	n = rt_par_pool.n_workers;
	ASSERT_TRUE(n >= 3);
	for (int i = 0; i < n; i++)
		before[i] = cpu_ns(rt_par_pool.workers[i]);
	nanosleep(&pause, NULL);
	for (int i = 0; i < n; i++) {
		after = cpu_ns(rt_par_pool.workers[i]);
		ASSERT_TRUE(before[i] >= 0 && after >= 0);
		ASSERT_TRUE(after - before[i] < 10 * 1000 * 1000);
	}
}

static void test_stop_joins(void)
{
	static _Atomic int hits[5000];
	struct count_job j = { hits, 1, 5000, 0 };

	rt_par_for(3, 5000, 1, count, &j);
	ASSERT_TRUE(rt_par_pool.n_workers >= 2);
	rt_par_stop();
	ASSERT(0, rt_par_pool.n_workers);
	/* and the next job starts them again */
	memset(hits, 0, sizeof(hits));
	rt_par_for(3, 5000, 1, count, &j);
	ASSERT_TRUE(all_once(hits, 5000));
	ASSERT_TRUE(rt_par_pool.n_workers >= 2);
}

/*
 * Jobs back to back, of varying sizes, whose chunks ask for threads again:
 * each chunk runs once. A worker that read one job's claim word and the
 * next one's chunk count took a chunk past the end of the first job (run
 * twice, done counted twice, and the next caller waited forever): before
 * the fix this hung within 1.5 million jobs in 3 tries of 3.
 */
static _Atomic long b2b_total;

static void b2b_inner(void *v, int64_t lo, int64_t hi)
{
	(void)v;
	b2b_total += hi - lo;
}

static void b2b_chunk(void *v, int64_t lo, int64_t hi)
{
	volatile double x = 0;

	(void)v;
	for (int64_t i = lo; i < hi; i++)
		for (int k = 0; k < 20; k++)
			x += k;
	if (!(lo & 3)) {
		rt_par_for(2, 5, 1, b2b_inner, NULL);
		b2b_total -= 5;
	}
	b2b_total += hi - lo;
}

static void test_back_to_back_jobs(void)
{
	unsigned s = 1;
	long bad = 0;

	alarm(120);	/* the bug's other face is a caller that waits forever */
	for (long it = 0; it < 1500000 && !bad; it++) {
		int64_t n;

		s = s * 1103515245 + 12345;
		n = 2 + (s >> 16) % 40;
		b2b_total = 0;
		rt_par_for(2, n, 1 + (s >> 8) % 3, b2b_chunk, NULL);
		if (b2b_total != n)
			bad = it + 1;
	}
	alarm(0);
	ASSERT(0, bad);
}

/*
 * pool_spin_ns: no involuntary context switch since the last sample gives
 * the long spin; a process spinning on our CPU (both pinned to it) makes
 * the scheduler switch us out, and the next sample gives the short one.
 */
static void test_spin_follows_contention(void)
{
	struct rusage ru;
	cpu_set_t all, one;
	int cpu = -1, contended = 0;
	pid_t hog;

	ASSERT(0, getrusage(RUSAGE_SELF, &ru));
	atomic_store(&rt_par_switches, ru.ru_nivcsw);
	atomic_store(&rt_par_sample_at, 1);
	ASSERT(RT_PAR_SPIN_IDLE_NS, pool_spin_ns(pool_now_ns()));
	/* not due again for RT_PAR_SAMPLE_NS: the same answer, nothing sampled */
	atomic_store(&rt_par_switches, 0);
	ASSERT(RT_PAR_SPIN_IDLE_NS, pool_spin_ns(pool_now_ns()));

	ASSERT(0, sched_getaffinity(0, sizeof(all), &all));
	for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
		if (CPU_ISSET(i, &all))
			cpu = i;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	hog = fork();
	ASSERT_TRUE(hog >= 0);
	if (hog == 0) {
		sched_setaffinity(0, sizeof(one), &one);
		for (;;)
			;
	}
	ASSERT(0, sched_setaffinity(0, sizeof(one), &one));
	/* busy ourselves, sampling every RT_PAR_SAMPLE_NS, for up to 2 s */
	for (int64_t end = pool_now_ns() + 2000000000; !contended && pool_now_ns() < end;) {
		int64_t now = pool_now_ns();

		if (now >= atomic_load(&rt_par_sample_at))
			contended = pool_spin_ns(now) == RT_PAR_SPIN_NS;
	}
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	ASSERT(0, sched_setaffinity(0, sizeof(all), &all));
	ASSERT_TRUE(contended);
}

TESTS({ "every_index_once", test_every_index_once },
      { "back_to_back_jobs", test_back_to_back_jobs },
      { "nested_runs_serially", test_nested_runs_serially },
      { "concurrent_submitters", test_concurrent_submitters },
      { "idle_workers_sleep", test_idle_workers_sleep },
      { "stop_joins", test_stop_joins },
      { "spin_follows_contention", test_spin_follows_contention })
