/* A worker's stdout and stderr, captured for its client. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "output.h"
#include "util.h"

#define OUT_KEEP	(64u << 20)	/* bytes held for the client at most */

/*
 * What was read, not yet collected: records of u8 stream, u32 length and
 * the bytes, in the order they were read.  Every read of the pipes is made
 * under lock, so that once output_collect has read a pipe empty, all that
 * was written to it before is here.
 */
static struct {
	pthread_mutex_t	 lock;
	int		 fd[2];		/* read ends: stdout's, stderr's */
	struct pw	 q;
	size_t		 kept;
	uint64_t	 dropped;
	int		 on;
} out = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = { -1, -1 } };

/* Under lock: reads pipe i until it is empty; 0 at EOF or error. */
static int
output_read(int i)
{
	uint8_t buf[65536];
	ssize_t n;

	for (;;) {
		n = read(out.fd[i], buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n <= 0)
			return 0;
		if (out.kept + (size_t)n > OUT_KEEP) {
			/* The client does not read; the driver must not stop. */
			out.dropped += (uint64_t)n;
			continue;
		}
		pw_u8(&out.q, (uint8_t)(i + 1));
		pw_u32(&out.q, (uint32_t)n);
		pw_bytes(&out.q, buf, (size_t)n);
		out.kept += (size_t)n;
	}
}

/* The reader thread: keeps the pipes from filling up. */
static void *
output_main(void *arg)
{
	struct pollfd pf[2];
	int i, live = 2;

	(void)arg;
	pf[0].fd = out.fd[0];
	pf[1].fd = out.fd[1];
	pf[0].events = pf[1].events = POLLIN;
	while (live > 0) {
		if (poll(pf, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < 2; i++) {
			if (pf[i].fd == -1 || pf[i].revents == 0)
				continue;
			pthread_mutex_lock(&out.lock);
			if (!output_read(i)) {
				pf[i].fd = -1;
				live--;
			}
			pthread_mutex_unlock(&out.lock);
		}
	}
	return NULL;
}

int
output_capture(void)
{
	pthread_attr_t attr;
	pthread_t tid;
	FILE *logf = NULL;
	int p[2][2] = { { -1, -1 }, { -1, -1 } }, saved = -1, i, rc;

	if ((saved = fcntl(2, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (logf = fdopen(saved, "w")) == NULL)
		goto fail;
	setvbuf(logf, NULL, _IOLBF, 0);
	for (i = 0; i < 2; i++)
		if (pipe2(p[i], O_CLOEXEC) == -1 ||
		    fcntl(p[i][0], F_SETFL, O_NONBLOCK) == -1)
			goto fail;
	fflush(stdout);
	fflush(stderr);
	/* From here on the log must not go to descriptor 2, nor must a
	   sanitizer's report (make asan). */
	log_file(logf);
	san_report_fd(saved);
	if (dup2(p[0][1], 1) == -1 || dup2(p[1][1], 2) == -1) {
		log_file(NULL);
		goto fail;
	}
	for (i = 0; i < 2; i++) {
		close(p[i][1]);
		out.fd[i] = p[i][0];
	}
	/* Its own buffer, emptied before every reply. */
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	pw_init(&out.q);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, output_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		log_warn("device output: no reader thread: %s", strerror(rc));
	out.on = 1;
	return 0;
fail:
	log_warn("device output stays here: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		if (p[i][0] != -1)
			close(p[i][0]);
		if (p[i][1] != -1)
			close(p[i][1]);
	}
	if (logf != NULL)
		fclose(logf);
	else if (saved != -1)
		close(saved);
	return -1;
}

void
output_collect(struct pw *w)
{
	struct frame_hdr h = { 0, MSG_OUTPUT, 0, 0 };
	struct msg_output m;
	struct pr r;
	uint8_t hb[PROTO_HDR_LEN];
	struct pw q;
	size_t at;
	uint32_t n, k;
	int i;

	if (!out.on)
		return;
	/* The driver writes through stdio: its buffers first. */
	fflush(stdout);
	fflush(stderr);
	pthread_mutex_lock(&out.lock);
	for (i = 0; i < 2; i++)
		if (out.fd[i] != -1)
			(void)output_read(i);
	q = out.q;
	pw_init(&out.q);
	out.kept = 0;
	if (out.dropped > 0) {
		log_warn("device output: %llu bytes dropped, the client "
		    "did not keep up", (unsigned long long)out.dropped);
		out.dropped = 0;
	}
	pthread_mutex_unlock(&out.lock);
	pr_init(&r, q.p, q.len);
	while (r.off < r.len) {
		m.stream = pr_u8(&r);
		n = pr_u32(&r);
		m.data = pr_take(&r, n);
		if (r.bad)
			break;
		for (; n > 0; n -= k, m.data += k) {
			k = n < OUTPUT_MAX ? n : OUTPUT_MAX;
			m.len = k;
			at = w->len;
			if (pw_room(w, PROTO_HDR_LEN) == NULL)
				break;
			msg_output_enc(w, &m);
			h.len = (uint32_t)(w->len - at - PROTO_HDR_LEN);
			proto_hdr_encode(hb, &h);
			if (!w->bad)
				memcpy(w->p + at, hb, sizeof hb);
		}
	}
	pw_free(&q);
}
