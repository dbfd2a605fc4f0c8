/*
 * Unit tests for the client library's integrity hash (lib/client/
 * integrity.c): MD2, HMAC-MD2 and the INTEGRITY_CHECK message, against
 * RFC 1319's vectors and those of dark-api.md §3.
 */
#include <stdio.h>

#include "../../lib/client/integrity.c"
#include "t.h"

static const char *
hex(const uint8_t d[16])
{
	static char s[33];
	int i;

	for (i = 0; i < 16; i++)
		snprintf(s + 2 * i, 3, "%02x", d[i]);
	return s;
}

static const char *
md2(const char *s)
{
	uint8_t d[16];

	integrity_md2(s, strlen(s), d);
	return hex(d);
}

static void
test_md2(void)
{
	/* dark-api.md §3, test 1. */
	CHECK_STR(md2("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
	CHECK_STR(md2(""), "8350e5a3e24c153df2275c9f80692773");

	/* The rest of RFC 1319's test suite: across block boundaries. */
	CHECK_STR(md2("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
	CHECK_STR(md2("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
	CHECK_STR(md2("abcdefghijklmnopqrstuvwxyz"),
	    "4e8ddff3650292ab5a4108c3aa47940b");
	CHECK_STR(md2("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789"), "da33def2a42df13975352846c30338cd");
	CHECK_STR(md2("1234567890123456789012345678901234567890"
	    "1234567890123456789012345678901234567890"),
	    "d5976f79d83d3a0dc9806c3c66f3efd8");
}

/* dark-api.md §3, test 2: the synthetic case. */
static void
test_synthetic(void)
{
	struct integrity_dev dev = {
		{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
		0, 0x19, 0
	};
	struct integrity_in in = {
		.driver_version = 13000,
		.version = 13002,
		.pid = 1234,
		.tid = 0x89ABCDEF,
		.cudart_table = 0x7F0000001000ULL,
		.integrity_table = 0x7F0000002000ULL,
		.slot1 = 0x7F0000003000ULL,
		.unix_seconds = 0x6A000000,
		.devs = &dev,
		.ndevs = 1
	};
	uint64_t out[2];

	integrity_hash(&in, out);
	CHECK(out[0] == 0xD470A7ADD13CE9BEULL);
	CHECK(out[1] == 0x93D73BDEED2EFAA5ULL);

	/* One bit of any input changes the answer. */
	dev.pci_bus ^= 1;
	integrity_hash(&in, out);
	CHECK(out[0] != 0xD470A7ADD13CE9BEULL);
	dev.pci_bus ^= 1;
	in.tid ^= 0x80000000;
	integrity_hash(&in, out);
	CHECK(out[0] != 0xD470A7ADD13CE9BEULL);
}

/*
 * The streamed message equals HMAC-MD2 over the documented layout: a
 * 48-byte little-endian header, then 28 bytes per device.
 */
static void
test_layout(void)
{
	static const uint8_t key[16] = { 0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9,
	    0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f };
	struct integrity_dev devs[2] = {
		{ { 0xde, 0xad }, 1, 0x19, 2 },
		{ { 0xbe, 0xef }, -1, 0xc1, 0x1f }
	};
	struct integrity_in in = {
		.driver_version = 13000,
		.version = 12082,
		.pid = 0x01020304,
		.tid = 0xfffffffe,
		.cudart_table = 0x1122334455667788ULL,
		.integrity_table = 0x99aabbccddeeff00ULL,
		.slot1 = 0x0807060504030201ULL,
		.unix_seconds = ~(uint64_t)0,
		.devs = devs,
		.ndevs = 2
	};
	uint8_t m[48 + 2 * 28], d[16], *p = m;
	uint64_t out[2], v;
	int i, j;

	for (i = 0; i < 4; i++) {
		v = i == 0 ? in.driver_version : i == 1 ? in.version :
		    i == 2 ? in.pid : in.tid;
		for (j = 0; j < 4; j++)
			*p++ = v >> 8 * j;
	}
	for (i = 0; i < 4; i++) {
		v = i == 0 ? in.cudart_table : i == 1 ? in.integrity_table :
		    i == 2 ? in.slot1 : in.unix_seconds;
		for (j = 0; j < 8; j++)
			*p++ = v >> 8 * j;
	}
	for (i = 0; i < 2; i++) {
		memcpy(p, devs[i].uuid, 16);
		p += 16;
		for (j = 0; j < 4; j++)
			*p++ = (uint32_t)devs[i].pci_domain >> 8 * j;
		for (j = 0; j < 4; j++)
			*p++ = (uint32_t)devs[i].pci_bus >> 8 * j;
		for (j = 0; j < 4; j++)
			*p++ = (uint32_t)devs[i].pci_device >> 8 * j;
	}
	CHECK(p == m + sizeof m);
	integrity_hmac_md2(key, m, sizeof m, d);
	integrity_hash(&in, out);
	for (v = 0, i = 7; i >= 0; i--)
		v = v << 8 | d[i];
	CHECK(out[0] == v);
	for (v = 0, i = 15; i >= 8; i--)
		v = v << 8 | d[i];
	CHECK(out[1] == v);
}

/* Versions ending in 0 or 1 have fixed answers, whatever the inputs. */
static void
test_fixed(void)
{
	struct integrity_in in;
	uint64_t out[2];

	memset(&in, 0, sizeof in);
	in.version = 13000;
	integrity_hash(&in, out);
	CHECK(out[0] == 0x3341181C03CB675CULL);
	CHECK(out[1] == 0x8ED383AA1F4CD1E8ULL);
	in.version = 13010;
	in.pid = 99;
	integrity_hash(&in, out);
	CHECK(out[0] == 0x3341181C03CB675CULL);
	CHECK(out[1] == 0x8ED383AA1F4CD1E8ULL);
	in.version = 13001;
	integrity_hash(&in, out);
	CHECK(out[0] == 0x1841181C03CB675CULL);
	CHECK(out[1] == 0x8ED383AA1F4CD1E8ULL);
	in.version = 13011;
	integrity_hash(&in, out);
	CHECK(out[0] == 0x1841181C03CB675CULL);
	CHECK(out[1] == 0x8ED383AA1F4CD1E8ULL);
	in.version = 13002;
	integrity_hash(&in, out);
	CHECK(out[1] != 0x8ED383AA1F4CD1E8ULL);
}

int
main(void)
{
	test_md2();
	test_synthetic();
	test_layout();
	test_fixed();
	return t_done("client_integrity");
}
