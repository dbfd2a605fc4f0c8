/*
 * cacheput: a client of gleam-serve's weight cache that speaks its calls
 * itself, for the tests that play an attacker (cache.bats).  It opens a
 * session with the key file given, then:
 *
 *	cacheput [-wx] [-b bytes] [-k key] [-s seed] [-S seed] have|put host:port
 *
 * put uploads bytes bytes (default 256k) made from seed (-s) under the
 * name of bytes made from -S (default: the same seed, an honest upload);
 * have asks whether the server holds the name of -s's bytes for this
 * identity (R_CACHE_HAVE).  Names are the scope's naming as WELCOME says
 * (FEAT_NAMES: BLAKE2b-256), or XXH3-128 with -w, as a client older than
 * strong names; -x refuses to go on if WELCOME did not say FEAT_NAMES.
 * Prints "names: strong" or "names: weak", then "put: stored", "put:
 * error N", "have: held" or "have: missing"; exits 0 if the call
 * answered, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cname.h"
#include "conn.h"
#include "parse.h"
#include "proto.h"
#include "rpc.h"

static void *
seeded(size_t n, unsigned seed)
{
	unsigned char *b = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; b != NULL && i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (unsigned char)x;
	}
	return b;
}

/* One call and its answer: the CUresult, outs into out (pointing into
 * the conn's buffer); -1 if the connection failed. */
static int
call(struct conn *c, uint16_t type, const struct rpc_val *in,
    struct rpc_val *out)
{
	const struct rpc_desc *d = rpc_lookup(type);
	const uint8_t *p;
	struct frame_hdr h;
	struct pw w;
	uint64_t id = ++c->next_id;
	uint32_t rc;

	pw_init(&w);
	if (rpc_pack(&w, d->req, in) == -1 || w.bad ||
	    conn_send(c, type, 0, id, w.p, w.len) == -1) {
		pw_free(&w);
		return -1;
	}
	pw_free(&w);
	do {
		if (conn_recv(c, &h, &p) == -1)
			return -1;
	} while (h.type == MSG_OUTPUT);
	if (h.type == MSG_ERROR) {
		conn_error_frame(c, p, h.len);
		return -1;
	}
	if (h.len < 4 || h.id != id)
		return -1;
	rc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
	if (rc == 0 && rpc_unpack(p + 4, h.len - 4, d->rep, out) == -1)
		return -1;
	return (int)rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: cacheput [-wx] [-b bytes] [-k key] [-s seed] "
	    "[-S seed] have|put host:port\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct auth_key key;
	struct conn c;
	struct rpc_val in[4], out[2];
	uint8_t name[CNAME_STRONG_LEN], rec[CNAME_STRONG_LEN + 8];
	char host[256], err[1200];
	const char *keyfile = NULL, *why;
	size_t n = 256u << 10, nlen;
	unsigned seed = 1, nseed = 0;
	void *b, *nb;
	int ch, weak = 0, must = 0, strong, port, rc, i;

	while ((ch = getopt(argc, argv, "b:k:s:S:wx")) != -1) {
		switch (ch) {
		case 'b':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 's':
			seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			nseed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			weak = 1;
			break;
		case 'x':
			must = 1;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 2 || (strcmp(argv[0], "have") != 0 &&
	    strcmp(argv[0], "put") != 0) || n == 0)
		usage();
	if (nseed == 0)
		nseed = seed;
	memset(&key, 0, sizeof key);
	if (auth_init() == -1 || (keyfile != NULL &&
	    auth_key_load(&key, keyfile, err, sizeof err) == -1)) {
		fprintf(stderr, "cacheput: %s\n", keyfile ? err : "libsodium");
		return 1;
	}
	port = PROTO_DEFAULT_PORT;
	if (parse_hostport(argv[1], host, sizeof host, &port, &why) == -1) {
		fprintf(stderr, "cacheput: %s: %s\n", argv[1], why);
		return 2;
	}
	if (conn_open(&c, host, port, keyfile ? &key : NULL, "cacheput",
	    10000) == -1) {
		fprintf(stderr, "cacheput: %s\n", c.err);
		return 1;
	}
	strong = (c.features & FEAT_NAMES) != 0;
	printf("names: %s\n", strong ? "strong" : "weak");
	if (must && !strong)
		return 1;
	if (weak)
		strong = 0;
	nlen = strong ? CNAME_STRONG_LEN : CNAME_LEN;
	in[0].u = 0;
	if ((rc = call(&c, R_OPEN, in, out)) != 0) {
		fprintf(stderr, "cacheput: open: %d %s\n", rc, c.err);
		return 1;
	}
	b = seeded(n, seed);
	nb = nseed == seed ? b : seeded(n, nseed);
	if (strong)
		cname_strong(nb, n, name);
	else
		cname(nb, n, name);
	if (strcmp(argv[0], "put") == 0) {
		in[0].p = name;
		in[0].len = (uint32_t)nlen;
		in[1].u = n;
		in[2].u = 0;
		in[3].p = b;
		in[3].len = (uint32_t)n;
		rc = call(&c, R_CACHE_PUT, in, out);
		if (rc == -1) {
			fprintf(stderr, "cacheput: put: %s\n", c.err);
			return 1;
		}
		if (rc == 0 && out[0].u == 1)
			printf("put: stored\n");
		else
			printf("put: error %d\n", rc);
	} else {
		memcpy(rec, name, nlen);
		for (i = 0; i < 8; i++)
			rec[nlen + (size_t)i] = (uint8_t)((uint64_t)n >> (8 * i));
		in[0].p = rec;
		in[0].len = (uint32_t)(nlen + 8);
		if ((rc = call(&c, R_CACHE_HAVE, in, out)) != 0) {
			fprintf(stderr, "cacheput: have: %d %s\n", rc, c.err);
			return 1;
		}
		printf("have: %s\n", out[0].len == 1 &&
		    (((const uint8_t *)out[0].p)[0] & 1) ? "held" : "missing");
	}
	conn_close(&c);
	return 0;
}
