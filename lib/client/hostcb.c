/*
 * Host functions that run in this process while the device's work runs on
 * the server: cuLaunchHostFunc on a capturing stream, and host nodes.
 * Each (function, data) pair gets a callback id here, its number in a
 * table that lives as long as the process (a graph may name it that
 * long).  The server sends the id (MSG_HOST) when the function is reached
 * in stream order, and a thread of this library's runs it: never the I/O
 * thread (a callback may block, or take a lock the program holds) and
 * never the program's own.
 *
 * User objects' destructors (uobj.c) come the same way, their ids
 * tagged with UOBJ_NOTICE.
 *
 * Order kept: callbacks run one at a time, in the order they were
 * reached; each runs after the work it depends on finished on the
 * device; and a call that waits for the device (RPC_F_WAITS or
 * RPC_F_POLLS: a synchronization, a copy back, a query) returns only once
 * every callback whose notice came before its reply has returned, so
 * that a synchronization after a launch finds its callbacks done, as with
 * the driver.  Not kept: the device does not wait for a callback, so work
 * after a host node may run before the callback has (gleam-client(7)).
 * A host node that held the server's stream until the client answered
 * would deadlock the one ordered connection whenever the serving thread
 * waits in the driver (a cuStreamSynchronize behind the launch), since
 * the answer would queue behind that call.
 *
 * A callback that calls the server gets CUDA_ERROR_NOT_PERMITTED (the
 * driver's rule: host functions make no CUDA calls), so that it can never
 * wait for itself.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"
#include "log.h"
#include "proto.h"

struct hcb {
	CUhostFn	 fn;
	void		*data;
};

static pthread_mutex_t	 hcb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 hcb_cond = PTHREAD_COND_INITIALIZER;
static struct hcb	*hcb_tab;	/* id - 1 indexes it */
static size_t		 hcb_n, hcb_cap;
static uint64_t		*hcb_q;		/* ids received, not yet run */
static size_t		 hcb_qhead, hcb_qlen, hcb_qcap;
static uint64_t		 hcb_recv, hcb_done;	/* notices ever */
static int		 hcb_started;
static __thread int	 hcb_inside;	/* this thread runs callbacks */

static void
hcb_atfork_child(void)
{
	/* The thread is the parent's: a child starts again. */
	pthread_mutex_init(&hcb_lock, NULL);
	pthread_cond_init(&hcb_cond, NULL);
	hcb_started = 0;
	hcb_qhead = hcb_qlen = 0;
	hcb_recv = hcb_done = 0;
}

/* The thread that runs callbacks as their notices come. */
static void *
hcb_main(void *arg)
{
	struct hcb h;
	uint64_t id;
	int ok;

	(void)arg;
	hcb_inside = 1;
	pthread_mutex_lock(&hcb_lock);
	for (;;) {
		while (hcb_qlen == 0)
			pthread_cond_wait(&hcb_cond, &hcb_lock);
		id = hcb_q[hcb_qhead];
		hcb_qhead = (hcb_qhead + 1) % hcb_qcap;
		hcb_qlen--;
		ok = id >= 1 && id <= hcb_n;
		if (ok)
			h = hcb_tab[id - 1];
		pthread_mutex_unlock(&hcb_lock);
		if (id & UOBJ_NOTICE)
			uobj_gone(id & ~UOBJ_NOTICE);
		else if (ok)
			h.fn(h.data);
		else
			log_warn("server %s: a host function this process "
			    "never gave (%llu)", io_peer(),
			    (unsigned long long)id);
		pthread_mutex_lock(&hcb_lock);
		hcb_done++;
		pthread_cond_broadcast(&hcb_cond);
	}
	return NULL;
}

/* Under hcb_lock: the thread, started once. */
static int
hcb_start(void)
{
	static int forked;
	pthread_attr_t a;
	pthread_t t;
	int rc;

	if (hcb_started)
		return 0;
	if (!forked) {
		pthread_atfork(NULL, NULL, hcb_atfork_child);
		forked = 1;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, hcb_main, NULL);
	pthread_attr_destroy(&a);
	if (rc != 0) {
		log_error("host functions: cannot start their thread");
		return -1;
	}
	hcb_started = 1;
	return 0;
}

uint64_t
hostcb_id(CUhostFn fn, void *data)
{
	struct hcb *t;
	uint64_t id = 0;
	size_t i;

	pthread_mutex_lock(&hcb_lock);
	if (hcb_start() == -1)
		goto out;
	/* The same pair, the same id: a capture in a loop adds none. */
	for (i = hcb_n; i > 0; i--)
		if (hcb_tab[i - 1].fn == fn && hcb_tab[i - 1].data == data) {
			id = i;
			goto out;
		}
	if (hcb_n == hcb_cap) {
		size_t ncap = hcb_cap ? hcb_cap * 2 : 16;

		if ((t = realloc(hcb_tab, ncap * sizeof *t)) == NULL)
			goto out;
		hcb_tab = t;
		hcb_cap = ncap;
	}
	hcb_tab[hcb_n].fn = fn;
	hcb_tab[hcb_n].data = data;
	id = ++hcb_n;
out:
	pthread_mutex_unlock(&hcb_lock);
	return id;
}

int
hostcb_lookup(uint64_t id, CUhostFn *fn, void **data)
{
	int ok;

	pthread_mutex_lock(&hcb_lock);
	if ((ok = id >= 1 && id <= hcb_n)) {
		*fn = hcb_tab[id - 1].fn;
		*data = hcb_tab[id - 1].data;
	}
	pthread_mutex_unlock(&hcb_lock);
	return ok ? 0 : -1;
}

/* Under hcb_lock: room for one more id in the queue. */
static int
hcb_room(void)
{
	uint64_t *q;
	size_t ncap, i;

	if (hcb_qlen < hcb_qcap)
		return 0;
	ncap = hcb_qcap ? hcb_qcap * 2 : 64;
	if ((q = malloc(ncap * sizeof *q)) == NULL)
		return -1;
	for (i = 0; i < hcb_qlen; i++)
		q[i] = hcb_q[(hcb_qhead + i) % hcb_qcap];
	free(hcb_q);
	hcb_q = q;
	hcb_qcap = ncap;
	hcb_qhead = 0;
	return 0;
}

int
hostcb_post(const void *p, size_t len)
{
	struct pr r;
	uint32_t n, i;
	uint64_t id;

	pr_init(&r, p, len);
	n = pr_u32(&r);
	if (r.bad || len != 4 + (size_t)n * 8)
		return -1;
	pthread_mutex_lock(&hcb_lock);
	for (i = 0; i < n; i++) {
		id = pr_u64(&r);
		if (!hcb_started || hcb_room() == -1) {
			/* Nothing can run it: counted as run. */
			log_warn("host functions: a notice dropped");
			hcb_recv++;
			hcb_done++;
			continue;
		}
		hcb_q[(hcb_qhead + hcb_qlen) % hcb_qcap] = id;
		hcb_qlen++;
		hcb_recv++;
	}
	pthread_cond_broadcast(&hcb_cond);
	pthread_mutex_unlock(&hcb_lock);
	return 0;
}

uint64_t
hostcb_mark(void)
{
	uint64_t m;

	pthread_mutex_lock(&hcb_lock);
	m = hcb_recv;
	pthread_mutex_unlock(&hcb_lock);
	return m;
}

void
hostcb_wait(uint64_t mark)
{
	if (hcb_inside)
		return;
	pthread_mutex_lock(&hcb_lock);
	while (hcb_done < mark)
		pthread_cond_wait(&hcb_cond, &hcb_lock);
	pthread_mutex_unlock(&hcb_lock);
}

int
hostcb_inside(void)
{
	return hcb_inside;
}
