/* Shareable buffers (lib/cbuf.c): large ones are memfds another process
 * maps; small ones and everything else free as malloc's do. */
#include <sys/wait.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbuf.h"
#include "t.h"

int
main(void)
{
	size_t n = 3 * CBUF_MIN + 17, i;
	uint8_t *p, *q, *s;
	int fd, st;
	pid_t pid;

	s = cbuf_alloc(100);
	CHECK(s != NULL && cbuf_fd(s, 100) == -1);
	cbuf_free(s);
	cbuf_free(malloc(10));		/* anything of malloc's */
	cbuf_free(NULL);

	p = cbuf_alloc(n);
	CHECK(p != NULL);
	if (p == NULL)
		return t_done("test_cbuf");
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + 3);
	fd = cbuf_fd(p, n);
	CHECK(fd >= 0);
	CHECK(cbuf_fd(p, n - 1) == -1);	/* not exactly that buffer */
	CHECK(cbuf_fd(p + 1, n - 1) == -1);
	/* Another process maps the same bytes. */
	if ((pid = fork()) == 0) {
		q = cbuf_map(fd, n);
		if (q == NULL || memcmp(p, q, n) != 0)
			_exit(1);
		cbuf_free(q);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	q = cbuf_map(fd, n);
	CHECK(q != NULL && q != p && memcmp(p, q, n) == 0);
	CHECK(q != NULL && cbuf_fd(q, n) == -1);	/* a mapping, not ours */
	cbuf_free(q);
	CHECK(cbuf_map(fd, 0) == NULL);
	cbuf_free(p);
	CHECK(cbuf_fd(p, n) == -1);
	return t_done("test_cbuf");
}
