/*
 * tempfile.c - temporary files and directories that a signal must not leave
 * behind. collagec runs as a build step: make, Ninja and CI stop it with
 * SIGINT or SIGTERM, and whatever it was writing then (a build directory, a
 * measure directory, OUT.so.tmp.XXXXXX) must go with it.
 *
 * Every such path is tracked from creation to removal in a fixed table of
 * slots; temp_cleanup_on_signal() installs a handler that removes what is
 * tracked and then dies of the same signal, so the caller's exit status
 * still says "killed by SIGINT". The handler calls only async-signal-safe
 * functions: unlink, rmdir, openat, close, getdents64 through syscall() and
 * a static buffer, never malloc or opendir, since the signal may arrive in
 * the middle of either.
 *
 * SIGKILL cannot be caught: what stays behind then is a stale temporary,
 * never a half-written output (file_write_atomic renames complete files
 * only, and compile commits its outputs in an order that never pairs a new
 * OUT.so with an old OUT.json: see commit_outputs in core/compile.c).
 */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEMP_SLOTS 64

static struct {
	volatile sig_atomic_t used;	/* 1: path is live */
	int dir;
	pid_t pid;			/* the process that made it: a forked child
					   cleans its own, never its parent's */
	char path[PATH_MAX];
} slots[TEMP_SLOTS];

/* The signals that clean up (temp_cleanup_on_signal). */
static const int cleanup_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static sigset_t held_mask;	/* the mask before temp_hold_signals */
static int held;		/* nesting of temp_hold_signals */

void temp_hold_signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	for (size_t i = 0; i < sizeof cleanup_sigs / sizeof cleanup_sigs[0]; i++)
		sigaddset(&s, cleanup_sigs[i]);
	if (held++ == 0)
		sigprocmask(SIG_BLOCK, &s, &held_mask);
}

void temp_release_signals(void)
{
	if (held > 0 && --held == 0)
		sigprocmask(SIG_SETMASK, &held_mask, NULL);
}

void temp_track(const char *path, bool dir)
{
	size_t n = strlen(path);

	if (n >= PATH_MAX)
		return;
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (!slots[i].used) {
			memcpy(slots[i].path, path, n + 1);
			slots[i].dir = dir;
			slots[i].pid = getpid();
			slots[i].used = 1;
			return;
		}
	/* more than TEMP_SLOTS at once: that one is not cleaned on a signal */
}

void temp_untrack(const char *path)
{
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (slots[i].used && !strcmp(slots[i].path, path)) {
			slots[i].used = 0;
			return;
		}
}

#ifdef SYS_getdents64
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Removes what directory fd holds; depth bounds the recursion. */
static void remove_below(int fd, int depth)
{
	static char buf[8][4096];	/* one per level: no stack-sized arrays */
	int removed = 1;

	if (depth >= 8)
		return;
	/* entries removed while reading may hide others: read again until none go */
	for (int pass = 0; removed && pass < 4; pass++) {
		long n;

		removed = 0;
		lseek(fd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[depth])) > 0) {
			for (long off = 0; off < n;) {
				struct linux_dirent64 *e = (void *)(buf[depth] + off);
				const char *name = e->d_name;
				int sub;

				off += e->d_reclen;
				if (!strcmp(name, ".") || !strcmp(name, ".."))
					continue;
				removed = 1;
				if (unlinkat(fd, name, 0) == 0 || errno != EISDIR)
					continue;
				sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
				if (sub >= 0) {
					remove_below(sub, depth + 1);
					close(sub);
				}
				unlinkat(fd, name, AT_REMOVEDIR);
			}
		}
	}
}
#endif

/* Removes what this process made (a measuring build's child: its build directory). */
static void remove_tracked(void)
{
	pid_t me = getpid();

	for (int i = 0; i < TEMP_SLOTS; i++) {
		if (!slots[i].used || slots[i].pid != me)
			continue;
		if (!slots[i].dir) {
			unlink(slots[i].path);
		} else {
#ifdef SYS_getdents64
			int fd = open(slots[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (fd >= 0) {
				remove_below(fd, 0);
				close(fd);
			}
#endif
			rmdir(slots[i].path);
		}
		slots[i].used = 0;
	}
}

#define CHILD_SLOTS 64

static pid_t children[CHILD_SLOTS];	/* running children writing into tracked paths */

void temp_track_child(int pid)
{
	for (int i = 0; i < CHILD_SLOTS; i++)
		if (!children[i]) {
			children[i] = pid;
			return;
		}
}

void temp_untrack_child(int pid)
{
	for (int i = 0; i < CHILD_SLOTS; i++)
		if (children[i] == pid)
			children[i] = 0;
}

void temp_remove_all(void)
{
	/*
	 * A cc still running would go on writing into the build directory (and
	 * its own files into TMPDIR) after it is removed: let it finish first.
	 * Its children are beyond a kill of the shell, and a compile ends soon.
	 */
	for (int i = 0; i < CHILD_SLOTS; i++)
		if (children[i] > 0) {
			while (waitpid(children[i], NULL, 0) < 0 && errno == EINTR)
				;
			children[i] = 0;
		}
	remove_tracked();
}

static void on_signal(int sig)
{
	int e = errno;

	remove_tracked();
	errno = e;
	/* SA_RESETHAND restored the default action: die of the same signal */
	raise(sig);
}

void temp_cleanup_on_signal(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof cleanup_sigs / sizeof cleanup_sigs[0]; i++) {
		struct sigaction old;

		/* a signal the parent ignores (nohup, a background job) stays ignored */
		if (sigaction(cleanup_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(cleanup_sigs[i], &sa, NULL);
	}
}
