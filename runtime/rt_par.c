/*
 * rt_par.c - the compiled model's own thread pool: what its parallel loops
 * (the c target's outlined loop nests, rt_c*.h's and rt_blas.h's helpers)
 * run on, in place of OpenMP. Part of rt.c (rt_model.c includes it).
 *
 * Why not OpenMP: libgomp's idle threads spin for about 300,000 iterations
 * (milliseconds) before they sleep, a policy fixed by OMP_WAIT_POLICY when
 * the process loads libgomp. Beside another busy process that spinning
 * takes the core a descheduled teammate needed, and a region's static
 * shares leave the whole team waiting for the slowest thread: 2-thread
 * runs beside one busy process were up to 5.7x slower than ONNX Runtime's.
 * A model cannot change libgomp's policy from inside a shared object, so
 * oneDNN's parallel regions run here too: OUT.so defines the OpenMP entry
 * points libdnnl calls (rt_dnnl.h), which make teams on this pool
 * (rt_omp_parallel, below).
 *
 * So the pool decides:
 *  - a worker that finds no work spins for 200 us, 50 us while another
 *    process competes for the cores (pool_spin_ns; a gap between two
 *    kernels is shorter than that), then sleeps on a futex, and is woken
 *    by the next job;
 *  - a job's iterations are cut into about RT_PAR_SPLIT chunks per thread
 *    that threads claim one at a time, so a thread the kernel has taken
 *    away holds up at most the chunk it is in, and the caller starts at
 *    once, without waiting for sleeping workers to wake;
 *  - the caller waits for the chunks in flight the same way (spin, then
 *    futex);
 *  - a worker that wakes on its caller's CPU moves off it (pool_steer):
 *    Linux packs the two onto one core when the other is busy, where they
 *    take turns;
 *  - while other processes compete, a caller left waiting on a worker's
 *    chunk well past its own chunks' time pins that worker to its own CPU
 *    and sleeps (pool_rescue): the worker's CPU has most likely gone to the
 *    other process for a time slice of milliseconds.
 * Which thread runs a chunk never changes what it computes: every caller
 * cuts its work into chunks whose results do not depend on who runs them,
 * so results are the same on any number of threads.
 *
 * One pool per copy of the runtime (each OUT.so), shared by its handles:
 * workers are started when a job first needs them (as many as the largest
 * thread count asked for, less the caller) and stopped when the last handle
 * closes or the object is unloaded. A job submitted while the pool is busy
 * (a kernel's chunk asking for threads again, or two handles running at
 * once on two of the program's threads) runs on its caller alone.
 *
 *	static void add(void *ctx, int64_t lo, int64_t hi) { ... }
 *	rt_par_for(threads, n, 1, add, &args);	// add(&args, lo, hi) over [0, n)
 */
#include "rt_par.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * How long a waiting thread spins before it sleeps: RT_PAR_SPIN_NS while
 * another process competes for the cores, RT_PAR_SPIN_IDLE_NS while none
 * does. pool_spin_ns samples the process's involuntary context switches
 * (getrusage) at most once per RT_PAR_SAMPLE_NS: RT_PAR_BUSY_SWITCHES or
 * more since the last sample means the scheduler has been taking our
 * threads' cores away, and the short spin holds until a sample finds
 * fewer. Beside one busy process EfficientNet-B0 at 2 threads ran in 9.0
 * ms with the short spin and 15.6 with a 200 us one; on a quiet machine
 * the short one left the worker asleep at the next region: 6.6 ms against
 * 6.2.
 */
#ifndef RT_PAR_SPIN_NS
#define RT_PAR_SPIN_NS 50000
#endif
#ifndef RT_PAR_SPIN_IDLE_NS
#define RT_PAR_SPIN_IDLE_NS 200000
#endif
#define RT_PAR_SAMPLE_NS 10000000
#define RT_PAR_RESCUE_NS 20000	/* pool_run's slack before pool_rescue */
#define RT_PAR_BUSY_SWITCHES 2
#define RT_PAR_MAX 256		/* threads, the caller included */

struct rt_par_pool {
	pthread_mutex_t lock;		/* starting and stopping workers */
	_Atomic int owner;		/* 1 while a job runs */
	_Atomic uint32_t gen;		/* bumped for every job; workers sleep on it */
	_Atomic int sleepers;		/* workers asleep on gen, or about to be */
	_Atomic int stop;		/* workers leave */
	/*
	 * The claim word: the job's number in the high half, its next chunk in
	 * the low half. A chunk is claimed by a compare-and-swap that checks
	 * both, so a worker that arrives late for one job never takes a chunk
	 * of the next one by mistake.
	 */
	_Atomic uint64_t claim;
	/* the job, written before claim names it, stable until it completes */
	void (*fn)(void *, int64_t, int64_t);
	void *ctx;
	int64_t n, chunk;
	/*
	 * The job's number in the high half, its chunk count in the low one:
	 * read before a claim, it must be the claim word's job. A worker that
	 * read the last job's claim word and the next job's count would take a
	 * chunk that does not exist: run it beside its owner, count it done
	 * twice, and leave the next caller waiting for a count it passed.
	 */
	_Atomic uint64_t jobinfo;
	_Atomic int helpers;		/* workers that may take chunks of this job */
	_Atomic uint32_t done;		/* chunks completed; the caller sleeps on it */
	_Atomic int caller_sleeps;
	_Atomic int caller_cpu;		/* the CPU the caller was on as it posted the job */
	uint32_t job;			/* the job's number (the caller's copy) */
	uint32_t born;			/* gen when the last workers were started */
	int n_workers;
	pthread_t workers[RT_PAR_MAX];
	_Atomic pid_t tid[RT_PAR_MAX];		/* worker k's thread id (pool_rescue) */
	_Atomic uint32_t held[RT_PAR_MAX];	/* the job worker k runs a chunk of, or 0 */
	_Atomic int rescued[RT_PAR_MAX];	/* pool_rescue pinned worker k */
};

static struct rt_par_pool rt_par_pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* This thread's number in the pool: 0 for a caller, k + 1 for worker k. */
static _Thread_local int rt_par_self;

static void pool_futex_wait(_Atomic uint32_t *w, uint32_t seen)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void pool_futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void pool_relax(void)
{
#if defined __x86_64__ || defined __i386__
	__builtin_ia32_pause();
#elif defined __aarch64__
	__asm__ __volatile__("yield");
#endif
}

static int64_t pool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static _Atomic int64_t rt_par_sample_at;	/* when the next sample is due */
static _Atomic long rt_par_switches;		/* involuntary switches at the last one */
static _Atomic int rt_par_contended;		/* what the last sample found */

/* How long to spin now (see RT_PAR_SPIN_NS), from now (pool_now_ns). */
static int64_t pool_spin_ns(int64_t now)
{
	int64_t at = atomic_load_explicit(&rt_par_sample_at, memory_order_relaxed);
	struct rusage ru;

	/* one thread samples: the one that moves the due time on */
	if (now >= at &&
	    atomic_compare_exchange_strong(&rt_par_sample_at, &at, now + RT_PAR_SAMPLE_NS) &&
	    getrusage(RUSAGE_SELF, &ru) == 0) {
		long prev = atomic_exchange(&rt_par_switches, ru.ru_nivcsw);

		atomic_store_explicit(&rt_par_contended,
				      at == 0 || ru.ru_nivcsw - prev >= RT_PAR_BUSY_SWITCHES,
				      memory_order_relaxed);
	}
	return atomic_load_explicit(&rt_par_contended, memory_order_relaxed) ?
		RT_PAR_SPIN_NS : RT_PAR_SPIN_IDLE_NS;
}

/*
 * Spins until *w differs from seen, for at most pool_spin_ns, or until the
 * time until (pool_now_ns) if that is not 0; returns whether it changed.
 */
static int pool_spin(_Atomic uint32_t *w, uint32_t seen, int64_t until)
{
	for (int i = 1;; i++) {
		if (atomic_load_explicit(w, memory_order_acquire) != seen)
			return 1;
		pool_relax();
		if (i % 64)
			continue;
		if (!until) {
			int64_t now = pool_now_ns();

			until = now + pool_spin_ns(now);
		} else if (pool_now_ns() >= until) {
			return 0;
		}
	}
}

/*
 * Claims and runs chunks of the job claim names until none is left;
 * returns how many it ran.
 */
static int pool_work(struct rt_par_pool *p)
{
	uint64_t w = atomic_load_explicit(&p->claim, memory_order_acquire);
	int ran = 0;

	for (;;) {
		uint64_t ji = atomic_load_explicit(&p->jobinfo, memory_order_acquire);
		uint32_t c = (uint32_t)w, n_chunks = (uint32_t)ji;
		int64_t lo, hi;

		/*
		 * the acquire of w makes the job's fields of its number visible;
		 * a count of another job (the next one, being set up) ends it here
		 */
		if (ji >> 32 != w >> 32 || c >= n_chunks)
			return ran;
		if (!atomic_compare_exchange_weak_explicit(&p->claim, &w, w + 1,
							   memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		/* chunk c is ours: the job cannot complete, nor its fields change */
		lo = (int64_t)c * p->chunk;
		hi = lo + p->chunk < p->n ? lo + p->chunk : p->n;
		if (rt_par_self)
			atomic_store_explicit(&p->held[rt_par_self - 1], (uint32_t)(w >> 32),
					      memory_order_relaxed);
		p->fn(p->ctx, lo, hi);
		if (rt_par_self)
			atomic_store_explicit(&p->held[rt_par_self - 1], 0, memory_order_relaxed);
		ran++;
		if (atomic_fetch_add(&p->done, 1) + 1 == n_chunks && atomic_load(&p->caller_sleeps))
			pool_futex_wake(&p->done);
		w = atomic_load_explicit(&p->claim, memory_order_acquire);
	}
}

/*
 * Moves worker id (the calling thread) off the CPU the job's caller is on,
 * if it is running there: the two would take turns on one core while
 * another sits with other work. Linux wakes a worker on the CPU of the
 * thread that woke it when the others are busy, and beside a process that
 * keeps one core of two busy it then leaves both of ours on the other: mlp
 * at 2 threads ran at its 1-thread speed (2.85 ms), 1.71 with the worker
 * beside the busy process instead. The worker's CPUs become those it was
 * allowed (*allowed, emptied if the kernel refuses) less the caller's, all
 * of them where that leaves none; so too after pool_rescue pinned it.
 */
static void pool_steer(struct rt_par_pool *p, int id, cpu_set_t *allowed)
{
	int me = sched_getcpu(), caller = atomic_load_explicit(&p->caller_cpu, memory_order_relaxed);
	int rescued = atomic_load_explicit(&p->rescued[id], memory_order_relaxed) &&
		      atomic_exchange_explicit(&p->rescued[id], 0, memory_order_relaxed);
	cpu_set_t away;

	if (!CPU_COUNT(allowed) || (!rescued && (me < 0 || me != caller)))
		return;
	away = *allowed;
	if (caller >= 0 && caller < CPU_SETSIZE && CPU_ISSET(caller, allowed) &&
	    CPU_COUNT(allowed) > 1)
		CPU_CLR(caller, &away);
	else if (!rescued)
		return;
	if (sched_setaffinity(0, sizeof(away), &away) != 0)
		CPU_ZERO(allowed);
}

/*
 * The caller's side, when a worker holds a chunk of job much longer than
 * the caller took for one: the scheduler has most likely given that
 * worker's CPU to another process (for its time slice, milliseconds), and
 * the chunk would wait there while the caller's CPU idles. Pins each worker
 * that holds a chunk of job to the caller's CPU, which the caller is about
 * to leave; the worker's next job sets its CPUs back (pool_steer).
 */
static void pool_rescue(struct rt_par_pool *p, int helpers, uint32_t job)
{
	int cpu = sched_getcpu();
	cpu_set_t here;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&here);
	CPU_SET(cpu, &here);
	for (int k = 0; k < helpers; k++) {
		pid_t tid = atomic_load_explicit(&p->tid[k], memory_order_relaxed);

		if (atomic_load_explicit(&p->held[k], memory_order_relaxed) != job || tid <= 0)
			continue;
		atomic_store_explicit(&p->rescued[k], 1, memory_order_relaxed);
		sched_setaffinity(tid, sizeof(here), &here);
	}
}

static void *pool_worker(void *arg)
{
	struct rt_par_pool *p = &rt_par_pool;
	int id = (int)(intptr_t)arg;
	/*
	 * gen as it was when this worker was started, not when it first runs:
	 * a worker scheduled late must still see the bump that stops it
	 */
	uint32_t seen = p->born;
	cpu_set_t allowed;

	rt_par_self = id + 1;
	atomic_store(&p->tid[id], (pid_t)syscall(SYS_gettid));
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		CPU_ZERO(&allowed);
	for (;;) {
		if (!pool_spin(&p->gen, seen, 0)) {
			atomic_fetch_add(&p->sleepers, 1);
			while (atomic_load(&p->gen) == seen)
				pool_futex_wait(&p->gen, seen);
			atomic_fetch_sub(&p->sleepers, 1);
		}
		seen = atomic_load_explicit(&p->gen, memory_order_acquire);
		if (atomic_load(&p->stop))
			return NULL;
		/* a late worker's claim fails on the job number; it reads nothing else */
		if (id < atomic_load_explicit(&p->helpers, memory_order_relaxed)) {
			pool_steer(p, id, &allowed);
			pool_work(p);
		}
	}
}

/* Starts workers up to want (with p->lock held); returns how many run. */
static int pool_grow(struct rt_par_pool *p, int want)
{
	pthread_attr_t at;

	if (want > RT_PAR_MAX - 1)
		want = RT_PAR_MAX - 1;
	if (p->n_workers >= want || pthread_attr_init(&at) != 0)
		return p->n_workers;
	/* kernels keep their tiles on the stack: rt_cgemm.h's A block is 64 KB */
	pthread_attr_setstacksize(&at, 4 << 20);
	p->born = atomic_load(&p->gen);
	while (p->n_workers < want &&
	       pthread_create(&p->workers[p->n_workers], &at, pool_worker,
			      (void *)(intptr_t)p->n_workers) == 0)
		p->n_workers++;
	pthread_attr_destroy(&at);
	return p->n_workers;
}

/*
 * Stops and joins the workers; the next job starts them again. Called when
 * the last handle closes and when the object is unloaded.
 */
static void rt_par_stop(void)
{
	struct rt_par_pool *p = &rt_par_pool;

	pthread_mutex_lock(&p->lock);
	if (p->n_workers) {
		atomic_store(&p->stop, 1);
		atomic_fetch_add(&p->gen, 1);
		pool_futex_wake(&p->gen);
		for (int i = 0; i < p->n_workers; i++) {
			pthread_join(p->workers[i], NULL);
			atomic_store(&p->tid[i], 0);
		}
		p->n_workers = 0;
		atomic_store(&p->stop, 0);
	}
	pthread_mutex_unlock(&p->lock);
}

__attribute__((destructor)) static void pool_unload(void)
{
	rt_par_stop();
}

/* fn over [0, n) on the calling thread. */
static void pool_serial(int64_t n, void (*fn)(void *, int64_t, int64_t), void *ctx)
{
	if (n > 0)
		fn(ctx, 0, n);
}

/*
 * Runs the chunks of chunk iterations of [0, n) on the caller and up to
 * helpers workers, the pool owned by the caller; returns when all are done,
 * the pool released.
 */
static void pool_run(struct rt_par_pool *p, int helpers, int64_t n, int64_t chunk,
		     void (*fn)(void *, int64_t, int64_t), void *ctx)
{
	uint32_t seen, n_chunks;
	int64_t start, rescue_at = 0;
	int ran;

	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	p->chunk = chunk;
	atomic_store_explicit(&p->helpers, helpers, memory_order_relaxed);
	atomic_store_explicit(&p->caller_cpu, sched_getcpu(), memory_order_relaxed);
	p->job++;
	n_chunks = (uint32_t)((n + chunk - 1) / chunk);
	atomic_store_explicit(&p->jobinfo, (uint64_t)p->job << 32 | n_chunks, memory_order_release);
	atomic_store_explicit(&p->done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->claim, (uint64_t)p->job << 32, memory_order_release);
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers))
		pool_futex_wake(&p->gen);
	start = pool_now_ns();
	ran = pool_work(p);
	/*
	 * the chunks others hold: spin, then sleep until the last one is done;
	 * while other processes compete for the cores, rescue the workers
	 * holding chunks after one and a half of the caller's chunk times more
	 */
	seen = atomic_load_explicit(&p->done, memory_order_acquire);
	if (seen != n_chunks && ran &&
	    atomic_load_explicit(&rt_par_contended, memory_order_relaxed)) {
		int64_t now = pool_now_ns();

		rescue_at = now + (now - start) / ran * 3 / 2 + RT_PAR_RESCUE_NS;
	}
	while (seen != n_chunks) {
		int sleep;

		if (!rescue_at) {
			sleep = !pool_spin(&p->done, seen, 0);
		} else if ((sleep = !pool_spin(&p->done, seen, rescue_at))) {
			/* and leave the CPU to them at once */
			pool_rescue(p, helpers, p->job);
			rescue_at = 0;
		}
		if (sleep) {
			atomic_store(&p->caller_sleeps, 1);
			seen = atomic_load(&p->done);
			if (seen != n_chunks)
				pool_futex_wait(&p->done, seen);
			atomic_store(&p->caller_sleeps, 0);
		}
		seen = atomic_load_explicit(&p->done, memory_order_acquire);
	}
	atomic_store_explicit(&p->owner, 0, memory_order_release);
}

/*
 * fn(ctx, lo, hi) over the chunks of [0, n), each at least grain long, on
 * up to threads threads, the caller one of them; returns when every chunk
 * has run. See the top of this file.
 */
void rt_par_for(int threads, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
		void *ctx)
{
	struct rt_par_pool *p = &rt_par_pool;
	int expect = 0, helpers;
	int64_t chunk, cuts;

	if (grain < 1)
		grain = 1;
	if (threads > RT_PAR_MAX)
		threads = RT_PAR_MAX;
	if (threads <= 1 || n <= grain ||
	    !atomic_compare_exchange_strong(&p->owner, &expect, 1)) {
		pool_serial(n, fn, ctx);
		return;
	}
	helpers = threads - 1;
	if (p->n_workers < helpers) {
		pthread_mutex_lock(&p->lock);
		helpers = pool_grow(p, helpers);
		pthread_mutex_unlock(&p->lock);
	}
	cuts = (int64_t)(helpers + 1) * RT_PAR_SPLIT;
	chunk = (n + cuts - 1) / cuts;
	if (chunk < grain)
		chunk = grain;
	if (!helpers || chunk >= n) {
		atomic_store(&p->owner, 0);
		pool_serial(n, fn, ctx);
		return;
	}
	pool_run(p, helpers, n, chunk, fn, ctx);
}

/*
 * libgomp's own functions, found through dlsym. The thread count oneDNN
 * reads (omp_get_max_threads) is kept where libgomp keeps it, in libgomp's
 * per-thread state: libdnnl binds its OpenMP calls to the first model that
 * loaded it, and a second model's helpers must set the count that model's
 * entry points read. Without libgomp in the process (no oneDNN either), a
 * thread-local count.
 *
 * rt_omp_delegate: the entry points forward everything to libgomp. That is
 * when this model's are the ones the whole process sees (OUT.so linked
 * into the program, so in the global scope ahead of libgomp) and another
 * object of the process needs libgomp: that program's own OpenMP code
 * would call these for its parallel regions and libgomp for the rest
 * (work-sharing loops, single), which must agree on what a team is.
 */
static struct {
	void (*parallel)(void (*)(void *), void *, unsigned, unsigned);
	void (*barrier)(void);
	int (*get_max)(void);
	void (*set)(int);
	int (*num)(void);
	int (*num_of)(void);
	int (*in_par)(void);
} rt_gomp;
static int rt_omp_delegate;
static pthread_once_t rt_gomp_once = PTHREAD_ONCE_INIT;

/* Whether an object loaded, other than libdnnl and libgomp, needs libgomp. */
static int gomp_user(struct dl_phdr_info *info, size_t size, void *self_base)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;

	(void)size;
	if ((void *)info->dlpi_addr == self_base || !strncmp(base, "libdnnl", 7) ||
	    !strncmp(base, "libgomp", 7))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Dyn) *d;
		const char *strtab = NULL;

		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		for (const ElfW(Dyn) *e = d; e->d_tag != DT_NULL; e++)
			if (e->d_tag == DT_STRTAB)
				strtab = (const char *)e->d_un.d_ptr;
		/* the dynamic linker relocates it in place, but not in a read-only one */
		if (strtab && (uintptr_t)strtab < (uintptr_t)info->dlpi_addr)
			strtab += info->dlpi_addr;
		for (const ElfW(Dyn) *e = d; strtab && e->d_tag != DT_NULL; e++)
			if (e->d_tag == DT_NEEDED && !strcmp(strtab + e->d_un.d_val, "libgomp.so.1"))
				return 1;
	}
	return 0;
}

static void rt_gomp_find(void)
{
	void *h = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD), *seen;
	Dl_info self, them;

	if (!h)
		return;
	*(void **)&rt_gomp.parallel = dlsym(h, "GOMP_parallel");
	*(void **)&rt_gomp.barrier = dlsym(h, "GOMP_barrier");
	*(void **)&rt_gomp.get_max = dlsym(h, "omp_get_max_threads");
	*(void **)&rt_gomp.set = dlsym(h, "omp_set_num_threads");
	*(void **)&rt_gomp.num = dlsym(h, "omp_get_num_threads");
	*(void **)&rt_gomp.num_of = dlsym(h, "omp_get_thread_num");
	*(void **)&rt_gomp.in_par = dlsym(h, "omp_in_parallel");
	dlclose(h);
	if (!rt_gomp.parallel || !rt_gomp.barrier || !rt_gomp.get_max || !rt_gomp.set ||
	    !rt_gomp.num || !rt_gomp.num_of || !rt_gomp.in_par) {
		memset(&rt_gomp, 0, sizeof(rt_gomp));
		return;
	}
	seen = dlsym(RTLD_DEFAULT, "GOMP_parallel");
	if (seen && dladdr(&rt_gomp, &self) && dladdr(seen, &them) &&
	    self.dli_fbase == them.dli_fbase)
		rt_omp_delegate = dl_iterate_phdr(gomp_user, self.dli_fbase);
}

int rt_omp_delegated(void)
{
	pthread_once(&rt_gomp_once, rt_gomp_find);
	return rt_omp_delegate;
}

/*
 * A team for OpenMP's fork-join (the entry points libdnnl calls; see
 * rt_par.h): fn(ctx, id, id + 1) for each id of [0, n), claimed one at a
 * time by the caller and n - 1 workers, so that a member waiting in a
 * barrier holds one id and the others are taken by threads that are free.
 * Returns n, or 0 when the pool is held or n threads cannot be had: then
 * nothing ran.
 */
static int rt_par_team(int n, void (*fn)(void *, int64_t, int64_t), void *ctx)
{
	struct rt_par_pool *p = &rt_par_pool;
	int expect = 0;

	if (n <= 1 || n > RT_PAR_MAX || !atomic_compare_exchange_strong(&p->owner, &expect, 1))
		return 0;
	if (p->n_workers < n - 1) {
		pthread_mutex_lock(&p->lock);
		pool_grow(p, n - 1);
		pthread_mutex_unlock(&p->lock);
		if (p->n_workers < n - 1) {
			atomic_store(&p->owner, 0);
			return 0;
		}
	}
	pool_run(p, n - 1, n, 1, fn, ctx);
	return n;
}

struct rt_omp_team {
	void (*fn)(void *);
	void *data;
	int n;
	_Atomic unsigned char taken[RT_PAR_MAX];	/* member ids claimed */
	_Atomic uint32_t arrived;	/* members at the barrier of this phase */
	_Atomic uint32_t phase;		/* bumped as the last one arrives */
};

static _Thread_local struct rt_omp_team *rt_omp_cur;	/* the team this thread is in */
static _Thread_local int rt_omp_id;
static _Thread_local int rt_omp_max;			/* omp_set_num_threads (0: 1) */

/*
 * One member of team v (a chunk of the pool's job: there are n, and each
 * runs one id). Which id: this thread's own number in the pool if no other
 * thread has taken it, else the first one left. A thread that keeps its id
 * from region to region keeps that share of the data in its core's cache
 * (oneDNN cuts the same work the same way each time); a thread that
 * arrives late finds its id run by another.
 */
static void rt_omp_member(void *v, int64_t lo, int64_t hi)
{
	struct rt_omp_team *t = v, *outer = rt_omp_cur;
	int outer_id = rt_omp_id, id = rt_par_self < t->n ? rt_par_self : 0;

	(void)lo;
	(void)hi;
	if (atomic_exchange(&t->taken[id], 1))
		for (id = 0; id < t->n && atomic_exchange(&t->taken[id], 1); id++)
			;
	if (id >= t->n)
		abort();	/* n members, n chunks: cannot happen */
	rt_omp_cur = t;
	rt_omp_id = id;
	t->fn(t->data);
	rt_omp_cur = outer;
	rt_omp_id = outer_id;
}

void rt_omp_parallel(void (*fn)(void *), void *data, unsigned nthr)
{
	struct rt_omp_team t = { .fn = fn, .data = data };
	int n;

	if (rt_omp_delegated()) {
		rt_gomp.parallel(fn, data, nthr, 0);
		return;
	}
	n = nthr ? (int)nthr : rt_omp_max_threads();
	t.n = n;
	if (n > 1 && !rt_omp_cur && rt_par_team(n, rt_omp_member, &t) == n)
		return;
	/* nested, or no threads to be had: a team of one */
	t.n = 1;
	rt_omp_member(&t, 0, 1);
}

void rt_omp_barrier(void)
{
	struct rt_omp_team *t = rt_omp_cur;
	uint32_t ph;

	if (rt_omp_delegated()) {
		rt_gomp.barrier();
		return;
	}
	if (!t || t->n <= 1)
		return;
	ph = atomic_load(&t->phase);
	if (atomic_fetch_add(&t->arrived, 1) + 1 == (uint32_t)t->n) {
		atomic_store(&t->arrived, 0);
		atomic_fetch_add(&t->phase, 1);
		pool_futex_wake(&t->phase);
		return;
	}
	while (atomic_load(&t->phase) == ph)
		if (!pool_spin(&t->phase, ph, 0))
			pool_futex_wait(&t->phase, ph);
}

int rt_omp_max_threads(void)
{
	if (rt_omp_cur && rt_omp_cur->n > 1)
		return 1;
	pthread_once(&rt_gomp_once, rt_gomp_find);
	if (rt_gomp.get_max)
		return rt_gomp.get_max();
	return rt_omp_max > 0 ? rt_omp_max : 1;
}

void rt_omp_set_threads(int n)
{
	pthread_once(&rt_gomp_once, rt_gomp_find);
	if (rt_gomp.set)
		rt_gomp.set(n);
	else
		rt_omp_max = n;
}

int rt_omp_num_threads(void)
{
	if (rt_omp_delegated())
		return rt_gomp.num();
	return rt_omp_cur ? rt_omp_cur->n : 1;
}

int rt_omp_thread_num(void)
{
	if (rt_omp_delegated())
		return rt_gomp.num_of();
	return rt_omp_cur ? rt_omp_id : 0;
}

int rt_omp_in_parallel(void)
{
	if (rt_omp_delegated())
		return rt_gomp.in_par();
	return rt_omp_cur && rt_omp_cur->n > 1;
}

