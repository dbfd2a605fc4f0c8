/*
 * Progress of large host-to-device transfers on the program's stderr: a
 * model's weights take seconds over a slow link, and a silent program
 * looks hung.
 *
 * A burst is the time during which counted transfers are under way; its
 * line shows the bytes of every transfer counted in it so far, how many
 * have gone, the rate since it began and the time left.  A transfer that
 * begins within BURST_JOIN_NS of the last burst's end joins it again, so
 * that a model loaded tensor by tensor is one running total, and the
 * line comes back at once.  Bytes posted one-way count as gone once the
 * I/O thread has sent them (the send queue's backlog, io_backlog); the
 * I/O thread calls progress_tick as it sends, so the line moves and ends
 * while the program's threads wait elsewhere.  The line is erased at the
 * end of a burst and at exit.
 *
 * Cost when off or for small copies: one test.  For a counted transfer:
 * a lock and a clock read per piece; the line at most METER_HZ times a
 * second.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "io.h"
#include "meter.h"
#include "progress.h"
#include "util.h"

#define BURST_JOIN_NS	(1000ull * 1000 * 1000)

static struct {
	pthread_mutex_t	 mu;
	int		 mode;		/* meter_mode, set once (atomic) */
	int		 open;		/* a burst is under way (atomic) */
	uint64_t	 total;		/* bytes counted in the burst */
	uint64_t	 wire;		/* of them gone */
	uint64_t	 queued;	/* of them posted, maybe not yet sent */
	uint64_t	 tend;		/* the last burst ended, ns */
	struct meter	 m;
} P = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
pg_atfork_child(void)
{
	/* The connection is the parent's: the child draws nothing. */
	pthread_mutex_init(&P.mu, NULL);
	P.mode = METER_OFF;
	P.open = 0;
	P.m.width = 0;
}

void
progress_end(void)
{
	if (__atomic_load_n(&P.mode, __ATOMIC_ACQUIRE) == METER_OFF)
		return;
	pthread_mutex_lock(&P.mu);
	meter_done(&P.m);
	pthread_mutex_unlock(&P.mu);
}

void
progress_init(void)
{
	int mode = meter_mode(STDERR_FILENO, 0);

	if (mode == METER_OFF)
		return;
	pthread_atfork(NULL, NULL, pg_atfork_child);
	__atomic_store_n(&P.mode, mode, __ATOMIC_RELEASE);
}

/*
 * Under P.mu, a burst open: ends it if everything counted is gone, else
 * draws if due.
 */
static void
pg_update(uint64_t now)
{
	uint64_t done = P.wire, b;
	int due = meter_due(&P.m, now);

	/* Until every byte is at least queued, it cannot be the end. */
	if (!due && P.wire + P.queued < P.total)
		return;
	if (P.queued > 0) {
		b = io_backlog();
		done += P.queued > b ? P.queued - b : 0;
	}
	if (done >= P.total) {
		meter_done(&P.m);
		__atomic_store_n(&P.open, 0, __ATOMIC_RELAXED);
		P.tend = now;
		return;
	}
	meter_show(&P.m, "gleam: sent", done, P.total, now);
}

int
progress_add(uint64_t n)
{
	uint64_t now;
	int mode;

	if (n < PROGRESS_MIN ||
	    (mode = __atomic_load_n(&P.mode, __ATOMIC_ACQUIRE)) == METER_OFF)
		return 0;
	now = now_ns();
	pthread_mutex_lock(&P.mu);
	if (!P.open) {
		if (P.tend == 0 || now - P.tend > BURST_JOIN_NS) {
			P.total = P.wire = P.queued = 0;
			meter_start(&P.m, STDERR_FILENO, mode, now);
		}
		__atomic_store_n(&P.open, 1, __ATOMIC_RELAXED);
	}
	P.total += n;
	pthread_mutex_unlock(&P.mu);
	return 1;
}

void
progress_sent(uint64_t n, int how)
{
	uint64_t now = now_ns();

	pthread_mutex_lock(&P.mu);
	if (how == PG_QUEUED)
		P.queued += n;
	else
		P.wire += n;
	if (P.open)
		pg_update(now);
	pthread_mutex_unlock(&P.mu);
}

void
progress_drop(uint64_t n)
{
	pthread_mutex_lock(&P.mu);
	P.total -= n < P.total ? n : P.total;
	if (P.open)
		pg_update(now_ns());
	pthread_mutex_unlock(&P.mu);
}

void
progress_tick(void)
{
	if (!__atomic_load_n(&P.open, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&P.mu);
	if (P.open)
		pg_update(now_ns());
	pthread_mutex_unlock(&P.mu);
}
