/* Small helpers shared by every program. */
#ifndef GLEAM_UTIL_H
#define GLEAM_UTIL_H

#include <sys/types.h>

#include <pthread.h>

#include <stddef.h>
#include <stdint.h>

#define GLEAM_VERSION	"0.2.0"	/* the one place: the Makefile reads it too */

/*
 * splitmix64: splitmix64_at is the number that follows state z, and
 * splitmix64 steps the state *s and returns it.  Small, fast, and the same
 * sequence for the same seed everywhere (tests, benches, the shaper).
 */
static inline uint64_t
splitmix64_at(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = splitmix64_at(*s);

	*s += 0x9e3779b97f4a7c15ULL;
	return z;
}

/*
 * A budget shared by threads (or processes, in shared memory): adds n to
 * *used unless that would pass limit; 0, or -1 with nothing added.
 * budget_give gives n back.
 */
static inline int
budget_take(uint64_t *used, uint64_t n, uint64_t limit)
{
	uint64_t was = __atomic_load_n(used, __ATOMIC_RELAXED);

	do {
		if (was > limit || n > limit - was)
			return -1;
	} while (!__atomic_compare_exchange_n(used, &was, was + n, 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return 0;
}

static inline void
budget_give(uint64_t *used, uint64_t n)
{
	__atomic_sub_fetch(used, n, __ATOMIC_ACQ_REL);
}

/* In a spin-wait loop: lets the other hyperthread run, saves power. */
static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Waits until *w differs from v (ne) or equals it (!ne), or until *quit
 * (if quit is not NULL) is set: spins for spin_ns first, then sleeps on cv
 * under mu (whoever changes *w or *quit broadcasts cv under mu).  Returns
 * *w as last read.
 */
uint64_t	spin_wait(const uint64_t *w, uint64_t v, int ne, const int *quit,
		    uint64_t spin_ns, pthread_mutex_t *mu, pthread_cond_t *cv);

/* Monotonic clock in nanoseconds and seconds. */
uint64_t	now_ns(void);
double		now_s(void);
/* Wall clock, seconds since the epoch. */
double		wall_s(void);

/* mkdir -p: path and the directories above it, each new one with mode. */
int		mkdirs(const char *path, mode_t mode);

/*
 * Writes len bytes to path through a temporary file in the same directory
 * and rename(2), so that readers see the old file or the whole new one,
 * never part.  "-" writes to stdout.  On error fills err and returns -1.
 */
int		file_write_atomic(const char *path, const void *, size_t,
		    char *err, size_t errlen);

/*
 * A file named "-" on a command line is standard input (gleam(7)).  It is
 * read to its end the first time, at most STDIN_MAX bytes, and kept, NUL
 * after its last byte: a program that reads "-" again (a reload on
 * SIGHUP) is given the same text.  what says what it is read as ("YAML",
 * "a key file"); a reader of another kind is refused, since the first took
 * it all.  0, or -1 with the reason in err.
 */
#define STDIN_MAX	(64 << 20)
int		stdin_named(const char *path);	/* path is "-" */
int		stdin_read(const char *what, const char **buf, size_t *len,
		    char *err, size_t errlen);

/*
 * This host's name as a client of the scheduler, the same for gleam-run
 * -S, gleam-probe -o yaml and gleam-sched: GLEAM_CLIENT, else the host
 * name (gleam-sched(1)).  0, or -1 with the reason in err.
 */
int		client_name(char *, size_t, char *err, size_t errlen);

/* All len bytes to or from a blocking descriptor; -1 on error or EOF. */
int		fd_write_all(int fd, const void *, size_t);
/*
 * Over a unix socket: len bytes with descriptor mfd (SCM_RIGHTS) riding
 * on the first; and reading them, the descriptor in *mfd (-1 if none
 * came).  -1 on error or end of file.
 */
int		fd_sendmsg(int sock, const void *, size_t len, int mfd);
int		fd_recvmsg(int sock, void *, size_t len, int *mfd);
int		fd_read_full(int fd, void *, size_t);
/*
 * In a sanitizer build (make asan, make tsan), else nothing:
 * san_report_fd sends the sanitizers' reports to fd (a worker whose
 * descriptor 2 is its client's); san_leak_check, with AddressSanitizer,
 * runs the leak check that exit would, for a process about to _exit (a
 * worker), and ends it with the sanitizer's exit status if anything
 * leaked.
 */
void		san_report_fd(int fd);
void		san_leak_check(void);

/* Sorts and picks: the q-quantile (0..1) of n doubles; sorts v in place. */
double		quantile(double *v, size_t n, double q);

#endif
