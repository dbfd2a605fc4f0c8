/* Sockets: resolving, connecting with a deadline, naming peers. */
#ifndef GLEAM_NET_H
#define GLEAM_NET_H

#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/*
 * Connects to host:port within timeout_ms, trying each address in turn.
 * Returns a blocking socket with TCP_NODELAY set, or -1 with a reason
 * ("connection refused", "timed out", "no such host") in err.
 */
int	net_connect(const char *host, int port, int timeout_ms, char *err,
	    size_t errlen);
int	net_nodelay(int fd);
/*
 * TCP keepalive: after idle seconds without traffic, a probe every intvl
 * seconds; cnt unanswered end the connection.
 */
int	net_keepalive(int fd, int idle, int intvl, int cnt);
/* Whether host (a name or address, as in "listen") is this host only. */
int	net_is_loopback(const char *host);
/* "1.2.3.4:80" or "[::1]:80" */
const char *net_addr_str(const struct sockaddr *, char *, size_t);
/* The address alone, without the port. */
const char *net_host_str(const struct sockaddr *, char *, size_t);
/*
 * All of [p, p + n) to or from a blocking socket, through EINTR: 0, or an
 * errno (EPIPE or ECONNRESET where the peer closed).  net_recv_all sets
 * *first, if not NULL and 0, to now_ns() when the first bytes came.
 */
int	net_send_all(int fd, const void *p, size_t n);
/*
 * The rate of the network interface that holds host's address (a
 * wildcard, "*" or "": the fastest that is up), from the kernel's
 * /sys/class/net/IF/speed, in bit/s; 0 where it is not known (loopback,
 * Wi-Fi, virtual interfaces, no such address).
 */
double	net_link_rate(const char *host);
int	net_recv_all(int fd, void *p, size_t n, uint64_t *first);
/* Resolves host:port for listening; host "" or "*" means every address. */
int	net_resolve(const char *host, int port, int passive,
	    struct sockaddr_storage *, socklen_t *, char *err, size_t errlen);

#endif
