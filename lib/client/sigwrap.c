/*
 * The program's sigaction(2) and signal(3), taken so that mapped memory's
 * SIGSEGV handler stays first (mapped.c): while it is installed
 * (mapped_fault_on), a SIGSEGV action the program sets is kept by
 * mapped_sig_chain to be chained to; anything else goes to the C
 * library's.  Built without sanitizer instrumentation (client.mk): the
 * sanitizers' runtimes find these as the next sigaction after their own
 * and call them while they start, before their instrumentation can run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

extern int	mapped_fault_on;
int		mapped_sig_chain(const struct sigaction *, struct sigaction *);

static int (*real_sigaction)(int, const struct sigaction *,
    struct sigaction *);

__attribute__((visibility("default"))) int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (real_sigaction == NULL)
		real_sigaction = (int (*)(int, const struct sigaction *,
		    struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	if (real_sigaction == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (sig != SIGSEGV ||
	    !__atomic_load_n(&mapped_fault_on, __ATOMIC_ACQUIRE))
		return real_sigaction(sig, act, old);
	return mapped_sig_chain(act, old);
}

__attribute__((visibility("default"))) __sighandler_t
signal(int sig, __sighandler_t h)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) == -1)
		return SIG_ERR;
	return old.sa_handler;
}
