/* Unit tests for lib/parse.c. */
#include <math.h>

#include "parse.h"
#include "t.h"

static int
rate_is(const char *s, double want)
{
	const char *why;
	double v;

	return parse_rate(s, &v, &why) == 0 && fabs(v - want) < 1e-6 * want;
}

static int
dur_is(const char *s, double want)
{
	const char *why;
	double v;

	return parse_duration(s, &v, &why) == 0 && fabs(v - want) < 1e-12;
}

static const char *
rate_err(const char *s)
{
	const char *why = NULL;
	double v;

	return parse_rate(s, &v, &why) == -1 ? why : NULL;
}

int
main(void)
{
	const char *why;
	long long ll;
	uint64_t sz;
	double d;
	char host[64];
	int port;

	CHECK(rate_is("1gbit", 1e9));
	CHECK(rate_is("300mbit", 300e6));
	CHECK(rate_is("64kbit", 64e3));
	CHECK(rate_is("1.5Gbit", 1.5e9));
	CHECK(rate_is("1000", 1000));
	CHECK(rate_is("1e9", 1e9));
	CHECK_STR(rate_err("1zbit"), "unknown unit 'zbit'");
	CHECK_STR(rate_err("-5mbit"), "negative value");
	CHECK_STR(rate_err(""), "empty value");
	CHECK_STR(rate_err("mbit"), "not a number");
	CHECK_STR(rate_err("0x10"), "not a number");
	CHECK_STR(rate_err("inf"), "not a number");
	CHECK_STR(rate_err("0"), "rate below 1 bit/s");

	CHECK(dur_is("0.5ms", 0.0005));
	CHECK(dur_is("10us", 10e-6));
	CHECK(dur_is("2s", 2));
	CHECK(dur_is("2", 2));
	CHECK(dur_is("1m", 60));
	CHECK(dur_is("0", 0));
	CHECK(parse_duration("-1ms", &d, &why) == -1);
	CHECK(parse_duration("5 ms", &d, &why) == -1);
	CHECK(parse_duration("5msx", &d, &why) == -1);

	CHECK(parse_size("16m", &sz, &why) == 0 && sz == 16u << 20);
	CHECK(parse_size("4096", &sz, &why) == 0 && sz == 4096);
	CHECK(parse_size("1.5k", &sz, &why) == 0 && sz == 1536);
	CHECK(parse_size("1.3", &sz, &why) == -1);

	CHECK(parse_int("42", 0, 100, &ll, &why) == 0 && ll == 42);
	CHECK(parse_int("42x", 0, 100, &ll, &why) == -1);
	CHECK(parse_int("101", 0, 100, &ll, &why) == -1);
	CHECK_STR(why, "too large");
	CHECK(parse_int("-1", 0, 100, &ll, &why) == -1);
	CHECK_STR(why, "too small");
	CHECK(parse_int(" 1", 0, 100, &ll, &why) == -1);
	CHECK(parse_int("99999999999999999999", 0, 100, &ll, &why) == -1);

	port = 7;
	CHECK(parse_hostport("gpu1:9000", host, sizeof host, &port, &why) == 0);
	CHECK_STR(host, "gpu1");
	CHECK(port == 9000);
	port = 7;
	CHECK(parse_hostport("gpu1", host, sizeof host, &port, &why) == 0);
	CHECK(port == 7);
	CHECK(parse_hostport("[::1]:80", host, sizeof host, &port, &why) == 0);
	CHECK_STR(host, "::1");
	CHECK(port == 80);
	CHECK(parse_hostport(":80", host, sizeof host, &port, &why) == 0);
	CHECK_STR(host, "");
	CHECK(parse_hostport("h:0", host, sizeof host, &port, &why) == 0 && port == 0);
	CHECK(parse_hostport("h:70000", host, sizeof host, &port, &why) == -1);
	CHECK(parse_hostport("h:x", host, sizeof host, &port, &why) == -1);
	CHECK_STR(why, "bad port");
	CHECK(parse_hostport("[::1", host, sizeof host, &port, &why) == -1);

	/* A place to connect to: both parts, one perhaps by default. */
	port = 7;
	CHECK(parse_connect("gpu1", host, sizeof host, &port, &why) == 0);
	CHECK_STR(host, "gpu1");
	CHECK(port == 7);
	CHECK(parse_connect("[::1]:80", host, sizeof host, &port, &why) == 0);
	CHECK(port == 80);
	CHECK(parse_connect("h:0", host, sizeof host, &port, &why) == -1);
	CHECK_STR(why, "port 0");
	CHECK(parse_connect(":80", host, sizeof host, &port, &why) == -1);
	CHECK_STR(why, "no host");
	CHECK(parse_connect(":x", host, sizeof host, &port, &why) == -1);
	CHECK_STR(why, "bad port");
	CHECK(parse_connect("", host, sizeof host, &port, &why) == -1);
	CHECK_STR(why, "empty address");

	return t_done("parse");
}
