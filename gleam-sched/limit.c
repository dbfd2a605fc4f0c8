/* Token buckets per address, and leases ended by a server's status. */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "limit.h"

void
limit_init(struct limit *l, double rate, double burst)
{
	memset(l, 0, sizeof *l);
	l->rate = rate;
	l->burst = burst >= 1 ? burst : 1;
}

int
limit_take(struct limit *l, const char *key, double now)
{
	struct limit_slot *s = NULL;
	double ms;
	int i, old = 0;

	if (l->rate <= 0)
		return 0;
	for (i = 0; i < l->n; i++) {
		if (strcmp(l->slot[i].key, key) == 0) {
			s = &l->slot[i];
			break;
		}
		if (l->slot[i].last < l->slot[old].last)
			old = i;
	}
	if (s == NULL) {
		s = l->n < LIMIT_SLOTS ? &l->slot[l->n++] : &l->slot[old];
		snprintf(s->key, sizeof s->key, "%s", key);
		s->tokens = l->burst;
		s->last = now;
	}
	if (now > s->last) {
		s->tokens += (now - s->last) * l->rate;
		if (s->tokens > l->burst)
			s->tokens = l->burst;
	}
	s->last = now > s->last ? now : s->last;
	/* Clocks in doubles: a token within a rounding error is a token. */
	if (s->tokens >= 1 - 1e-9) {
		s->tokens = s->tokens > 1 ? s->tokens - 1 : 0;
		return 0;
	}
	ms = ceil((1 - s->tokens) / l->rate * 1e3 - 1e-6);
	return ms >= 1 ? (ms < 3600000 ? (int)ms : 3600000) : 1;
}

const char *
limit_key(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in6 *s6;
	struct in6_addr a;
	char h[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)
		    (const void *)sa)->sin_addr, h, sizeof h);
		snprintf(buf, len, "%s", h);
	} else if (sa->sa_family == AF_INET6) {
		s6 = (const void *)sa;
		a = s6->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&a))
			inet_ntop(AF_INET, &a.s6_addr[12], h, sizeof h);
		else {
			memset(&a.s6_addr[8], 0, 8);
			inet_ntop(AF_INET6, &a, h, sizeof h);
			snprintf(h + strlen(h), sizeof h - strlen(h), "/64");
		}
		snprintf(buf, len, "%s", h);
	} else
		snprintf(buf, len, "unknown");
	return buf;
}

const char *
limit_host(const char *addr, char *buf, size_t len)
{
	const char *end, *colon = strrchr(addr, ':');
	size_t n;

	if (addr[0] == '[' && (end = strchr(addr, ']')) != NULL) {
		addr++;
		n = (size_t)(end - addr);
	} else if (colon != NULL && strchr(addr, ':') == colon)
		n = (size_t)(colon - addr);	/* host:port */
	else
		n = strlen(addr);		/* a bare host, v6 or not */
	if (n >= len)
		n = len - 1;
	memcpy(buf, addr, n);
	buf[n] = '\0';
	if (strncmp(buf, "::ffff:", 7) == 0 && strchr(buf + 7, '.') != NULL)
		memmove(buf, buf + 7, strlen(buf + 7) + 1);
	return buf;
}

int
lease_match(const char *host, double granted, const struct lease_client *cl,
    int ncl, struct lease_credited *cr)
{
	int i, j;

	for (i = 0; i < ncl; i++) {
		if (strcmp(cl[i].host, host) != 0 ||
		    cl[i].since < granted - LEASE_SLACK)
			continue;
		for (j = 0; j < LEASE_CREDITED; j++)
			if (strcmp(cr->address[j], cl[i].address) == 0)
				break;
		if (j < LEASE_CREDITED)
			continue;
		snprintf(cr->address[cr->next], sizeof cr->address[0], "%s",
		    cl[i].address);
		cr->next = (cr->next + 1) % LEASE_CREDITED;
		return i;
	}
	return -1;
}
