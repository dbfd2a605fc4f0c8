/* Sockets: resolving, connecting with a deadline, naming peers. */
#ifndef GLEAM_NET_H
#define GLEAM_NET_H

#include <sys/socket.h>

#include <stddef.h>

/*
 * Connects to host:port within timeout_ms, trying each address in turn.
 * Returns a blocking socket with TCP_NODELAY set, or -1 with a reason
 * ("connection refused", "timed out", "no such host") in err.
 */
int	net_connect(const char *host, int port, int timeout_ms, char *err,
	    size_t errlen);
int	net_nodelay(int fd);
/* "1.2.3.4:80" or "[::1]:80" */
const char *net_addr_str(const struct sockaddr *, char *, size_t);
/* Resolves host:port for listening; host "" or "*" means every address. */
int	net_resolve(const char *host, int port, int passive,
	    struct sockaddr_storage *, socklen_t *, char *err, size_t errlen);

#endif
