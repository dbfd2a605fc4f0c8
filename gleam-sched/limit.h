/*
 * What keeps one asker from denying the daemon to the others
 * (gleam-sched(1), LIMITS): a token bucket per source address for its
 * requests, and the matching that ends a placement's lease when its
 * client shows up in the chosen server's status.
 */
#ifndef SCHED_LIMIT_H
#define SCHED_LIMIT_H

#include <stddef.h>
#include <stdint.h>

struct sockaddr;

#define LIMIT_KEY_MAX	64	/* an address as a key: "10.0.0.7", "fd00::/64" */
#define LIMIT_SLOTS	256	/* addresses remembered at once */

struct limit_slot {
	char		 key[LIMIT_KEY_MAX];
	double		 tokens;
	double		 last;		/* when it was last asked, seconds */
};

/*
 * Each address may ask `rate` times a second, `burst` at once.  The table
 * holds LIMIT_SLOTS addresses; a new one takes the slot of the one heard
 * from longest ago, which is full again by then or soon (forgetting it
 * can only be generous to it).  rate 0: no limit.
 */
struct limit {
	double		 rate, burst;
	int		 n;
	struct limit_slot slot[LIMIT_SLOTS];
};

void	limit_init(struct limit *, double rate, double burst);
/*
 * One request from key at now (seconds): 0 if it may go ahead, or the
 * milliseconds until it may (at least 1).
 */
int	limit_take(struct limit *, const char *key, double now);

/*
 * The key of a peer's address: the host, and for IPv6 its /64 (one
 * host of a LAN has as many addresses in it as it likes); an IPv4
 * address mapped into IPv6 is the IPv4 one.
 */
const char *limit_key(const struct sockaddr *, char *, size_t);
/*
 * The host of "host:port", "[v6]:port" or a bare host, as the status of
 * a server writes a client's address: "10.0.0.7", "fd00::1".
 */
const char *limit_host(const char *addr, char *, size_t);

/* A client in a server's status, as the lease matching sees it. */
struct lease_client {
	char		 address[64];	/* host:port, one connection */
	char		 host[48];	/* limit_host of it */
	char		 name[64];
	double		 since;		/* when it connected, our clock */
	uint64_t	 session;	/* its remoting session; 0 none */
};

/* Connections that have ended a lease already, newest over oldest. */
#define LEASE_CREDITED	256
struct lease_credited {
	char		 address[LEASE_CREDITED][64];
	int		 next;
};

/*
 * Clocks differ by the status's precision (0.1 s) and a round trip: a
 * connection this much older than the lease still counts as its own.
 */
#define LEASE_SLACK	0.2

/*
 * The client of cl that ends a lease granted at `granted` to an asker on
 * host: one from that host, connected since, and not credited yet (a
 * connection ends one lease).  Its index, credited now, or -1.
 */
int	lease_match(const char *host, double granted,
	    const struct lease_client *cl, int ncl, struct lease_credited *);

#endif
