/* Socket helpers. */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "util.h"

int
net_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* One non-blocking connect, waited for with poll; -1 and errno on failure. */
static int
connect_one(const struct addrinfo *ai, int timeout_ms)
{
	struct pollfd pfd;
	socklen_t len;
	int fd, flags, rc, soerr;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
	    ai->ai_protocol);
	if (fd == -1)
		return -1;
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		if (errno != EINPROGRESS)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			rc = poll(&pfd, 1, timeout_ms);
		while (rc == -1 && errno == EINTR);
		if (rc == 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (rc == -1)
			goto fail;
		len = sizeof soerr;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1)
			goto fail;
		if (soerr != 0) {
			errno = soerr;
			goto fail;
		}
	}
	fcntl(fd, F_SETFL, flags);
	net_nodelay(fd);
	return fd;
fail:
	rc = errno;
	close(fd);
	errno = rc;
	return -1;
}

int
net_connect(const char *host, int port, int timeout_ms, char *err,
    size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	char service[16];
	int fd = -1, rc, saved = 0;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u, now;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof service, "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "%s", rc == EAI_NONAME ?
		    "no such host" : gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		now = now_ns();
		if (now >= deadline) {
			saved = ETIMEDOUT;
			break;
		}
		fd = connect_one(ai, (int)((deadline - now) / 1000000u) + 1);
		if (fd != -1)
			break;
		saved = errno;
	}
	freeaddrinfo(res);
	if (fd == -1) {
		snprintf(err, errlen, "%s", saved == ETIMEDOUT ?
		    "timed out" : strerror(saved));
		errno = saved;
	}
	return fd;
}

const char *
net_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, h, sizeof h);
		snprintf(buf, len, "%s:%d", h, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, h, sizeof h);
		snprintf(buf, len, "[%s]:%d", h, ntohs(s->sin6_port));
	} else
		snprintf(buf, len, "unknown");
	return buf;
}

const char *
net_host_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = NULL;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (a == NULL || inet_ntop(sa->sa_family, a, buf, (socklen_t)len) ==
	    NULL)
		snprintf(buf, len, "unknown");
	return buf;
}

int
net_resolve(const char *host, int port, int passive,
    struct sockaddr_storage *ss, socklen_t *sslen, char *err, size_t errlen)
{
	struct addrinfo hints, *res;
	char service[16];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	if (host[0] == '\0' || strcmp(host, "*") == 0) {
		/* "*" is every IPv4 address; "[::]" every address, dual-stack. */
		host = NULL;
		hints.ai_family = AF_INET;
	}
	snprintf(service, sizeof service, "%d", port);
	if ((rc = getaddrinfo(host, service, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s", rc == EAI_NONAME ?
		    "no such host" : gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int
net_send_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	ssize_t k;

	while (n > 0) {
		k = send(fd, b, n, MSG_NOSIGNAL);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? EPIPE : errno;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int
net_recv_all(int fd, void *p, size_t n, uint64_t *first)
{
	char *b = p;
	ssize_t k;

	while (n > 0) {
		/* Until the first bytes, whatever comes: to time them. */
		k = recv(fd, b, n, first != NULL && *first == 0 ? 0 :
		    MSG_WAITALL);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? ECONNRESET : errno;
		if (first != NULL && *first == 0)
			*first = now_ns();
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* An interface's speed in bit/s from sysfs; 0 if it reports none. */
static double
if_speed(const char *name)
{
	char path[64 + IF_NAMESIZE], buf[32];
	long mbit;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/sys/class/net/%s/speed", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	mbit = strtol(buf, NULL, 10);
	return mbit > 0 && mbit < 10000000 ? (double)mbit * 1e6 : 0;
}

static int
same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a == NULL || b == NULL || a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		    &((const struct sockaddr_in *)b)->sin_addr,
		    sizeof(struct in_addr)) == 0;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return 0;
}

double
net_link_rate(const char *host)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct ifaddrs *ifs, *i;
	double best = 0, r;
	int any;

	any = host == NULL || host[0] == '\0' || strcmp(host, "*") == 0 ||
	    strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
	if (!any) {
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_flags = AI_NUMERICHOST;
		if (getaddrinfo(host, NULL, &hints, &res) != 0) {
			hints.ai_flags = 0;
			if (getaddrinfo(host, NULL, &hints, &res) != 0)
				return 0;
		}
	}
	if (getifaddrs(&ifs) == -1) {
		if (res != NULL)
			freeaddrinfo(res);
		return 0;
	}
	for (i = ifs; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || !(i->ifa_flags & IFF_UP) ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (!any) {
			for (ai = res; ai != NULL; ai = ai->ai_next)
				if (same_addr(ai->ai_addr, i->ifa_addr))
					break;
			if (ai == NULL)
				continue;
		}
		if ((r = if_speed(i->ifa_name)) > best)
			best = r;
	}
	freeifaddrs(ifs);
	if (res != NULL)
		freeaddrinfo(res);
	return best;
}

int
net_keepalive(int fd, int idle, int intvl, int cnt)
{
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == -1)
		return -1;
#ifdef TCP_KEEPIDLE
	if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) ==
	    -1 || setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
	    sizeof intvl) == -1 || setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT,
	    &cnt, sizeof cnt) == -1)
		return -1;
#endif
	return 0;
}

int
net_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}
