/*
 * par_test.c - runtime/rt_par.c, the compiled models' thread pool: every
 * index of a job runs exactly once on any thread count, chunks honour the
 * grain, a call from inside a chunk or from a second thread while a job
 * runs falls back to its caller, idle workers sleep (they use no CPU a
 * moment after a job), stopping joins them, the spin before sleeping
 * is the short one while another process takes our CPU, a worker woken on
 * its caller's CPU moves off it, and a caller left waiting for a worker's
 * chunk brings that worker to its own CPU.
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

/* The first two CPUs this thread may run on, in a and b; 0 if it has one. */
static int two_cpus(cpu_set_t *all, int *a, int *b)
{
	*a = *b = -1;
	if (sched_getaffinity(0, sizeof(*all), all) != 0 || CPU_COUNT(all) < 2)
		return 0;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, all)) {
			if (*a < 0)
				*a = i;
			else if (*b < 0)
				*b = i;
		}
	return 1;
}

/* Worker 0's thread id, once it has started (0 if not in a second). */
static pid_t worker_tid(void)
{
	for (int i = 0; i < 1000 && !atomic_load(&rt_par_pool.tid[0]); i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	return atomic_load(&rt_par_pool.tid[0]);
}

static int pin(pid_t tid, int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(tid, sizeof(one), &one);
}

static _Atomic int steer_cpu_seen;	/* a CPU a worker's chunk ran on, + 1 */

static void where_worker(void *v, int64_t lo, int64_t hi)
{
	(void)v;
	(void)lo;
	(void)hi;
	if (rt_par_self)
		atomic_store(&steer_cpu_seen, sched_getcpu() + 1);
	nothing(NULL, 0, 20000);
}

/*
 * pool_steer: a worker the scheduler put on its caller's CPU (here pinned
 * there, caller and worker both) leaves it as it takes the next job: its
 * CPUs become the ones it had less the caller's, and its chunks run there.
 */
static void test_worker_leaves_callers_cpu(void)
{
	cpu_set_t all, mask;
	int a, b, ran_on;
	pid_t tid;

	if (!two_cpus(&all, &a, &b)) {
		printf("  (skipped: one CPU)\n");
		return;
	}
	rt_par_stop();
	rt_par_for(2, 64, 1, where_worker, NULL);	/* a worker, started with all of ours */
	ASSERT(1, rt_par_pool.n_workers);
	tid = worker_tid();
	ASSERT_TRUE(tid > 0);
	ASSERT(0, pin(0, a));
	ASSERT(0, pin(tid, a));
	/* until the worker takes a chunk (a caller may run them all) */
	atomic_store(&steer_cpu_seen, 0);
	for (int i = 0; i < 2000 && !atomic_load(&steer_cpu_seen); i++)
		rt_par_for(2, 64, 1, where_worker, NULL);
	ASSERT(0, sched_getaffinity(tid, sizeof(mask), &mask));
	ASSERT(0, sched_setaffinity(0, sizeof(all), &all));
	ran_on = atomic_load(&steer_cpu_seen) - 1;
	ASSERT_TRUE(ran_on >= 0);
	ASSERT_TRUE(ran_on != a);
	ASSERT_TRUE(!CPU_ISSET(a, &mask));
	ASSERT(CPU_COUNT(&all) - 1, CPU_COUNT(&mask));
	rt_par_stop();
}

static _Atomic int rescue_held;		/* the worker holds its chunk */
static _Atomic int rescue_moved;	/* it found itself on the caller's CPU */
static int rescue_caller_cpu;

/*
 * The worker's first chunk stands for one whose CPU the scheduler gave to
 * another process: it holds on until it runs on the caller's CPU, which it
 * was pinned away from (or 3 s). The caller's chunks wait until it holds.
 */
static void held_chunk(void *v, int64_t lo, int64_t hi)
{
	int64_t end = pool_now_ns() + 3000000000;

	(void)v;
	(void)hi;
	if (rt_par_self) {
		if (atomic_exchange(&rescue_held, 1))
			return;
		while (sched_getcpu() != rescue_caller_cpu && pool_now_ns() < end)
			pool_relax();
		atomic_store(&rescue_moved, sched_getcpu() == rescue_caller_cpu);
		return;
	}
	if (lo == 0)
		while (!atomic_load(&rescue_held) && pool_now_ns() < end)
			pool_relax();
}

/*
 * pool_rescue: while other processes take our CPUs, a caller that has run
 * its chunks and waits on a worker's for longer than it took for its own
 * moves that worker to its CPU (a), and sleeps; the worker's next job
 * gives it back its CPUs less the caller's, then on CPU to: a again, where
 * the worker's steering alone would do it, or another (three CPUs or more),
 * where only the mark pool_rescue leaves does.
 */
static void rescue_case(const cpu_set_t *all, int a, int b, int to)
{
	cpu_set_t mask;
	int held, moved;
	pid_t tid;

	rt_par_stop();
	rt_par_for(2, 64, 1, nothing, NULL);
	ASSERT(1, rt_par_pool.n_workers);
	tid = worker_tid();
	ASSERT_TRUE(tid > 0);
	ASSERT(0, pin(0, a));
	ASSERT(0, pin(tid, b));
	rescue_caller_cpu = a;
	/* contended, and not sampled again for the test's length */
	atomic_store(&rt_par_contended, 1);
	atomic_store(&rt_par_sample_at, pool_now_ns() + 60 * 1000000000LL);
	atomic_store(&rescue_held, 0);
	atomic_store(&rescue_moved, 0);
	for (int i = 0; i < 200 && !atomic_load(&rescue_held); i++)
		rt_par_for(2, 8, 1, held_chunk, NULL);
	atomic_store(&rt_par_sample_at, 0);
	held = atomic_load(&rescue_held);
	moved = atomic_load(&rescue_moved);
	ASSERT(0, pin(0, to));
	for (int i = 0; i < 2000; i++) {
		rt_par_for(2, 64, 1, nothing, NULL);
		ASSERT(0, sched_getaffinity(tid, sizeof(mask), &mask));
		if (CPU_COUNT(&mask) != 1 || !CPU_ISSET(a, &mask))
			break;
		/* the caller's CPU may be the worker's only one: let it run */
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	ASSERT(0, sched_setaffinity(0, sizeof(*all), all));
	ASSERT_TRUE(held);
	ASSERT_TRUE(moved);
	ASSERT_TRUE(!CPU_ISSET(to, &mask));
	ASSERT(CPU_COUNT(all) - 1, CPU_COUNT(&mask));
	rt_par_stop();
}

static void test_caller_rescues_held_chunk(void)
{
	cpu_set_t all;
	int a, b;

	if (!two_cpus(&all, &a, &b)) {
		printf("  (skipped: one CPU)\n");
		return;
	}
	rescue_case(&all, a, b, a);
	if (CPU_COUNT(&all) < 3)
		printf("  (the caller moving on after a rescue skipped: two CPUs)\n");
	else
		rescue_case(&all, a, b, b);
}

TESTS({ "every_index_once", test_every_index_once },
      { "back_to_back_jobs", test_back_to_back_jobs },
      { "nested_runs_serially", test_nested_runs_serially },
      { "concurrent_submitters", test_concurrent_submitters },
      { "idle_workers_sleep", test_idle_workers_sleep },
      { "stop_joins", test_stop_joins },
      { "spin_follows_contention", test_spin_follows_contention },
      { "worker_leaves_callers_cpu", test_worker_leaves_callers_cpu },
      { "caller_rescues_held_chunk", test_caller_rescues_held_chunk })
