/*
 * libFuzzer target: the server's end of a worker's weight cache channel
 * (gleam-serve/wcache.c, channel_main), which must trust a worker no
 * more than the network: a worker a client took over may write anything.
 *
 * The input is what the worker writes, requests (struct chdr) and their
 * bytes, served on this thread from a socket pair over a RAM store.  The
 * target walks it as the server does only to send the descriptor that a
 * CH_GPUT carries (a memory file), and to help the fuzzer: an all-zero
 * hash means the hash of the last CH_PUT's bytes (and a CH_GET of 0
 * bytes its length), and a CH_PUT with an all-zero hash is sent under the
 * hash of its bytes.  A thread reads what the server answers, closing
 * every descriptor that comes with it; the store must stay within its
 * budget and the server must end with the channel's end.
 */
#include <sys/mman.h>
#include <sys/socket.h>

#include <signal.h>

#include "../../gleam-serve/wcache.c"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static const uint8_t zero[CSTORE_HASH_LEN];

/* Reads the server's answers until it closes, closing their fds. */
static void *
drain(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t buf[65536];
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(8 * sizeof(int))];
	} cm;
	struct cmsghdr *c;
	struct msghdr m;
	struct iovec iov;
	ssize_t n;
	size_t i, k;
	int f;

	for (;;) {
		memset(&m, 0, sizeof m);
		iov.iov_base = buf;
		iov.iov_len = sizeof buf;
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cm.b;
		m.msg_controllen = sizeof cm.b;
		if ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) <= 0)
			break;
		for (c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < k; i++) {
				memcpy(&f, CMSG_DATA(c) + i * sizeof f,
				    sizeof f);
				close(f);
			}
		}
	}
	return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	uint8_t last[CSTORE_HASH_LEN], *buf;
	uint64_t lastlen = 0;
	struct chdr hd;
	struct chgpu q;
	pthread_t t;
	size_t off, n;
	int sv[2], mfd, big = 1 << 22;

	if (!inited) {
		struct config cfg;

		log_init("fuzz", LL_QUIET);
		signal(SIGPIPE, SIG_IGN);
		config_defaults(&cfg);
		cfg.cache_ram = 8u << 20;
		cfg.cache_disk = 0;
		cfg.cache_dir[0] = '\0';
		cfg.cache_gpu = 64u << 20;
		wcache_init(&cfg);
		ENSURE(cstore_active(store));
		inited = 1;
	}
	memset(last, 0, sizeof last);
	ENSURE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	(void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	buf = malloc(size ? size : 1);
	ENSURE(buf != NULL);
	memcpy(buf, data, size);

	/* The input goes first, as a worker writes it ahead of the answers. */
	for (off = 0; off < size; ) {
		n = size - off < sizeof hd ? size - off : sizeof hd;
		if (n < sizeof hd) {
			ENSURE(fd_write_all(sv[1], buf + off, n) == 0);
			break;
		}
		memcpy(&hd, buf + off, sizeof hd);
		if (memcmp(hd.hash, zero, sizeof zero) == 0 &&
		    hd.op != CH_PUT) {
			memcpy(hd.hash, last, sizeof hd.hash);
			if (hd.op == CH_GET && hd.len == 0)
				hd.len = lastlen;
		}
		if (hd.op == CH_PUT && hd.len <= size - off - sizeof hd) {
			if (memcmp(hd.hash, zero, sizeof zero) == 0)
				cstore_hash(CN_WEAK, buf + off + sizeof hd,
				    hd.len, hd.hash);
			memcpy(last, hd.hash, sizeof last);
			lastlen = hd.len;
		}
		ENSURE(fd_write_all(sv[1], &hd, sizeof hd) == 0);
		off += sizeof hd;
		if (hd.op == CH_GGET || hd.op == CH_GPUT) {
			if (size - off < sizeof q)
				continue;
			memcpy(&q, buf + off, sizeof q);
			off += sizeof q;
			if (hd.op == CH_GGET) {
				ENSURE(fd_write_all(sv[1], &q, sizeof q) == 0);
				continue;
			}
			mfd = memfd_create("fuzz", MFD_CLOEXEC);
			ENSURE(mfd >= 0);
			ENSURE(fd_sendmsg(sv[1], &q, sizeof q, mfd) == 0);
			close(mfd);
			continue;
		}
		if (hd.op == CH_PUT || hd.op == CH_MODEL) {
			n = hd.len < size - off ? (size_t)hd.len : size - off;
			ENSURE(fd_write_all(sv[1], buf + off, n) == 0);
			off += n;
		}
	}
	shutdown(sv[1], SHUT_WR);
	ENSURE(pthread_create(&t, NULL, drain, (void *)(intptr_t)sv[1]) == 0);
	/* The server's thread, here; it closes its end. */
	{
		/* A client's scope, as wcache_channel gives it; freed there. */
		struct chctx *cx = calloc(1, sizeof *cx);

		ENSURE(cx != NULL);
		cx->fd = sv[0];
		cstore_tenant(NULL, 0, cx->tenant);
		channel_main(cx);
	}
	pthread_join(t, NULL);
	close(sv[1]);
	free(buf);
	{
		struct cstore_counters c;
		int d;

		cstore_counters(store, &c);
		ENSURE(c.ram_bytes <= cstore_ram_budget(store));
		for (d = 0; d < GPU_DEVS; d++)	/* a budget per device */
			ENSURE(gpu_bytes[d] <= gpu_budget);
	}
	return 0;
}
