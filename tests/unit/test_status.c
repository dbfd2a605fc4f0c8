/* Unit tests for lib/status.c: what the server writes, the client reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "t.h"

/* A complete status with one GPU; tests change a line of it. */
static const char base[] =
    "host: gpu1\n"			/* 1 */
    "version: 0.2.0\n"			/* 2 */
    "protocol: 1\n"			/* 3 */
    "backend: cuda\n"			/* 4 */
    "gpu_source: nvml\n"		/* 5 */
    "uptime_s: 5.0\n"			/* 6 */
    "auth: false\n"			/* 7 */
    "max_clients: 64\n"			/* 8 */
    "gpus:\n"				/* 9 */
    "- index: 0\n"			/* 10 */
    "  name: H200\n"			/* 11 */
    "  memory_total: 100\n"		/* 12 */
    "  memory_free: 50\n"		/* 13 */
    "  utilization: 7\n"		/* 14 */
    "nclients: 1\n"			/* 15 */
    "clients:\n"			/* 16 */
    "- address: 10.0.0.1:4000\n"	/* 17 */
    "  name: probe\n"			/* 18 */
    "  connected_s: 1.0\n"		/* 19 */
    "  bytes_in: 1\n"			/* 20 */
    "  bytes_out: 2\n";			/* 21 */

/*
 * base with the lines from the one starting with `from` up to the one
 * starting with `upto` (the end if "") replaced by `with` (may be "").
 */
static char *
edit_block(const char *from, const char *upto, const char *with)
{
	static char out[4096];
	const char *p = strstr(base, from), *q;

	if (p == NULL || (*upto != '\0' && strstr(p, upto) == NULL)) {
		fprintf(stderr, "no line %s\n", from);
		exit(1);
	}
	q = *upto != '\0' ? strstr(p, upto) : base + strlen(base);
	snprintf(out, sizeof out, "%.*s%s%s", (int)(p - base), base, with, q);
	return out;
}

/* base with the line starting with `line` replaced by `with`. */
static char *
edit(const char *line, const char *with)
{
	const char *p = strstr(base, line);

	return edit_block(line, p != NULL ? strchr(p, '\n') + 1 : "", with);
}

/* Parses text; returns the error message, or "" when it parsed. */
static const char *
parse_err(const char *text)
{
	static struct yerr err;
	struct server_status s;

	memset(&err, 0, sizeof err);
	if (status_parse("st", text, strlen(text), &s, &err) == 0) {
		status_free(&s);
		return "";
	}
	CHECK(s.clients == NULL);	/* nothing to free after a failure */
	return err.msg;
}

static void
round_trip(const struct server_status *in, struct server_status *out)
{
	struct yw *w = yw_new();
	struct yerr err;
	const char *text;
	size_t len;

	status_write(w, in);
	text = yw_finish(w, &len);
	CHECK(text != NULL);
	memset(&err, 0, sizeof err);
	CHECK(text != NULL && status_parse("rt", text, len, out, &err) == 0);
	if (err.msg[0] != '\0')
		fprintf(stderr, "%s\n%s", err.msg, text ? text : "");
	yw_free(w);
}

static void
test_round_trip(void)
{
	struct server_status s, g;
	int i;

	memset(&s, 0, sizeof s);
	strcpy(s.host, "123");		/* must come back a string */
	strcpy(s.address, "[fe80::1]:7383");
	strcpy(s.version, "0.2.0");
	s.protocol = 1;
	strcpy(s.backend, "cuda");
	strcpy(s.gpu_source, "nvml");
	s.uptime_s = 12.34;
	s.auth = 1;
	s.max_clients = 64;
	s.port_bps = 10e9;
	s.ngpus = 2;
	status_gpu_init(&s.gpus[0], 0);
	status_gpu_init(&s.gpus[1], 1);
	strcpy(s.driver_version, "580.95.05");
	s.cuda_version = 13000;
	/* What NVML says beyond the first keys: the client's NVML answers. */
	strcpy(s.gpus[0].uuid, "GPU-8f3a");
	strcpy(s.gpus[0].pci_bus_id, "00000000:19:00.0");
	s.gpus[0].pci_device_id = 0x233510de;
	s.gpus[0].pci_class = 0x0302;
	s.gpus[0].cc_major = 9;
	s.gpus[0].cc_minor = 0;
	s.gpus[0].temperature_c = 41;
	s.gpus[0].power_mw = 118234;
	s.gpus[0].pstate = 0;
	s.gpus[0].clock_mhz[STATUS_CLK_MEM] = 3201;
	s.gpus[0].max_clock_mhz[STATUS_CLK_VIDEO] = 1545;
	strcpy(s.gpus[0].name, "NVIDIA H200");
	s.gpus[0].memory_total = 150000000000ull;
	s.gpus[0].memory_free = 149000000000ull;
	s.gpus[0].utilization = -1;
	strcpy(s.gpus[1].name, "true");
	s.gpus[1].memory_total = (uint64_t)INT64_MAX;
	s.gpus[1].utilization = 100;
	s.nclients = 2;
	s.clients = calloc(2, sizeof *s.clients);
	strcpy(s.clients[0].address, "[::1]:5000");
	strcpy(s.clients[0].name, "probe: x");
	s.clients[0].connected_s = 1.5;
	s.clients[0].bytes_in = 7;
	s.clients[0].bytes_out = 8;
	s.clients[0].session = 0x7fffffff00000001ull;
	strcpy(s.clients[1].address, "10.0.0.2:1");
	s.clients[1].name[0] = '\0';
	s.clients[1].connected_s = 1e6;

	round_trip(&s, &g);
	CHECK_STR(g.host, "123");
	CHECK_STR(g.address, "[fe80::1]:7383");
	CHECK_STR(g.version, "0.2.0");
	CHECK(g.protocol == 1);
	CHECK_STR(g.backend, "cuda");
	CHECK_STR(g.gpu_source, "nvml");
	CHECK(g.uptime_s > 12.29 && g.uptime_s < 12.31);	/* one decimal */
	CHECK(g.auth == 1);
	CHECK(g.max_clients == 64);
	CHECK(g.port_bps == 10e9);
	CHECK(g.ngpus == 2);
	CHECK(g.gpus[0].index == 0 && g.gpus[1].index == 1);
	CHECK_STR(g.gpus[0].name, "NVIDIA H200");
	CHECK_STR(g.gpus[1].name, "true");
	CHECK(g.gpus[0].memory_total == 150000000000ull);
	CHECK(g.gpus[0].memory_free == 149000000000ull);
	CHECK(g.gpus[1].memory_total == (uint64_t)INT64_MAX);
	CHECK(g.gpus[0].utilization == -1);
	CHECK(g.gpus[1].utilization == 100);
	CHECK_STR(g.driver_version, "580.95.05");
	CHECK_STR(g.nvml_version, "");
	CHECK(g.cuda_version == 13000);
	CHECK_STR(g.gpus[0].uuid, "GPU-8f3a");
	CHECK_STR(g.gpus[0].pci_bus_id, "00000000:19:00.0");
	CHECK(g.gpus[0].pci_device_id == 0x233510de);
	CHECK(g.gpus[0].pci_subsystem_id == -1);
	CHECK(g.gpus[0].pci_class == 0x0302 && g.gpus[1].pci_class == -1);
	CHECK(g.gpus[0].cc_major == 9 && g.gpus[0].cc_minor == 0);
	CHECK(g.gpus[0].temperature_c == 41 && g.gpus[0].power_mw == 118234);
	CHECK(g.gpus[0].pstate == 0 && g.gpus[0].fan_percent == -1);
	CHECK(g.gpus[0].clock_mhz[STATUS_CLK_MEM] == 3201);
	CHECK(g.gpus[0].clock_mhz[STATUS_CLK_SM] == -1);
	CHECK(g.gpus[0].max_clock_mhz[STATUS_CLK_VIDEO] == 1545);
	/* Unknown, they read back unknown: null on the wire. */
	CHECK_STR(g.gpus[1].uuid, "");
	CHECK(g.gpus[1].temperature_c == -1 && g.gpus[1].cc_major == -1);
	CHECK(g.gpus[1].utilization_memory == -1);
	CHECK(g.nclients == 2);
	CHECK(g.clients != NULL);
	if (g.clients != NULL && g.nclients == 2) {
		CHECK_STR(g.clients[0].address, "[::1]:5000");
		CHECK_STR(g.clients[0].name, "probe: x");
		CHECK(g.clients[0].connected_s == 1.5);
		CHECK(g.clients[0].bytes_in == 7 && g.clients[0].bytes_out == 8);
		CHECK(g.clients[0].session == 0x7fffffff00000001ull);
		CHECK(g.clients[1].session == 0);	/* null: none */
		CHECK_STR(g.clients[1].address, "10.0.0.2:1");
		CHECK_STR(g.clients[1].name, "");
		CHECK(g.clients[1].connected_s == 1e6);
	}
	status_free(&g);
	CHECK(g.clients == NULL && g.nclients == 0);
	status_free(&g);	/* twice is harmless */
	free(s.clients);

	/* Nothing at all: no GPUs, no clients. */
	memset(&s, 0, sizeof s);
	strcpy(s.host, "h");
	strcpy(s.backend, "none");
	strcpy(s.gpu_source, "no NVML: library not found");
	round_trip(&s, &g);
	CHECK_STR(g.host, "h");
	CHECK_STR(g.backend, "none");
	CHECK_STR(g.gpu_source, "no NVML: library not found");
	CHECK(g.ngpus == 0 && g.nclients == 0 && g.clients == NULL);
	CHECK(g.auth == 0 && g.protocol == 0);
	CHECK(g.port_bps == 0);		/* written null */
	CHECK_STR(g.address, "");	/* written null */
	status_free(&g);
	/* Rates that are not whole Gbit/s keep their value. */
	for (i = 0; i < 3; i++) {
		static const double r[] = { 2.5e9, 100e6, 54321 };

		memset(&s, 0, sizeof s);
		strcpy(s.host, "h");
		strcpy(s.backend, "none");
		s.port_bps = r[i];
		round_trip(&s, &g);
		CHECK(g.port_bps == r[i]);
		status_free(&g);
	}

	/* Every GPU slot. */
	memset(&s, 0, sizeof s);
	strcpy(s.host, "many");
	strcpy(s.backend, "cuda");
	s.ngpus = STATUS_MAX_GPUS;
	for (i = 0; i < STATUS_MAX_GPUS; i++) {
		s.gpus[i].index = i;
		snprintf(s.gpus[i].name, sizeof s.gpus[i].name, "gpu%d", i);
		s.gpus[i].utilization = i % 2 ? -1 : i;
	}
	round_trip(&s, &g);
	CHECK(g.ngpus == STATUS_MAX_GPUS);
	CHECK(g.gpus[63].index == 63 && g.gpus[63].utilization == -1);
	CHECK(g.gpus[62].utilization == 62);
	CHECK_STR(g.gpus[63].name, "gpu63");
	status_free(&g);
}

static void
test_errors(void)
{
	char text[16384];
	size_t n;
	int i;

	CHECK_STR(parse_err(base), "");
	/* Optional keys may go. */
	CHECK_STR(parse_err(edit("version:", "")), "");
	CHECK_STR(parse_err(edit("gpu_source:", "")), "");
	CHECK_STR(parse_err(edit("uptime_s:", "")), "");
	CHECK_STR(parse_err(edit("auth:", "")), "");
	CHECK_STR(parse_err(edit("nclients:", "")), "");
	CHECK_STR(parse_err(edit("  name: probe", "")), "");
	CHECK_STR(parse_err(edit("  utilization:", "")), "");
	CHECK_STR(parse_err(edit("auth:", "auth: true\nport: null\n")), "");
	CHECK_STR(parse_err(edit("auth:", "auth: true\nport: fast\n")),
	    "st:8: port: 'fast': not a number");
	/* Unknown keys are ignored. */
	CHECK_STR(parse_err(edit("auth:", "auth: true\nfuture: [1, 2]\n")), "");

	/* Missing keys are named. */
	CHECK_STR(parse_err(edit("host:", "")), "st:1: host: missing");
	CHECK_STR(parse_err(edit("protocol:", "")), "st:1: protocol: missing");
	CHECK_STR(parse_err(edit("backend:", "")), "st:1: backend: missing");
	CHECK_STR(parse_err(edit("max_clients:", "")),
	    "st:1: max_clients: missing");
	CHECK_STR(parse_err(edit("  memory_total:", "")),
	    "st:10: memory_total: missing");
	CHECK_STR(parse_err(edit("  memory_free:", "")),
	    "st:10: memory_free: missing");
	CHECK_STR(parse_err(edit("- index:", "- other: 0\n")),
	    "st:10: index: missing");
	CHECK_STR(parse_err(edit("  name: H200", "")), "st:10: name: missing");
	CHECK_STR(parse_err(edit("- address:", "- addr: x\n")),
	    "st:17: address: missing");
	CHECK_STR(parse_err(edit("  connected_s:", "")),
	    "st:17: connected_s: missing");
	CHECK_STR(parse_err(edit("  bytes_in:", "")), "st:17: bytes_in: missing");
	CHECK_STR(parse_err(edit_block("gpus:", "nclients:", "")),
	    "st:1: gpus: expected a sequence");
	CHECK_STR(parse_err(edit_block("clients:\n", "", "")),
	    "st:1: clients: expected a sequence");

	/* Wrong types and ranges. */
	CHECK_STR(parse_err(edit("protocol:", "protocol: abc\n")),
	    "st:3: protocol: 'abc': not a number (allowed 0 to 65535)");
	CHECK_STR(parse_err(edit("protocol:", "protocol: 65536\n")),
	    "st:3: protocol: '65536': too large (allowed 0 to 65535)");
	CHECK_STR(parse_err(edit("host:", "host: [a]\n")),
	    "st:1: host: expected a scalar value, not a sequence");
	CHECK_STR(parse_err(edit("auth:", "auth: maybe\n")),
	    "st:7: auth: 'maybe': expected true or false");
	CHECK_STR(parse_err(edit("uptime_s:", "uptime_s: -1\n")),
	    "st:6: uptime_s: '-1': too small");
	CHECK_STR(parse_err(edit("max_clients:", "max_clients: {a: 1}\n")),
	    "st:8: max_clients: expected a scalar value, not a mapping");
	CHECK_STR(parse_err(edit_block("gpus:", "nclients:",
	    "gpus: {}\n")),
	    "st:9: gpus: expected a sequence");
	CHECK_STR(parse_err(edit("- index:", "- 0\n- index: 0\n")),
	    "st:10: gpus: expected a mapping");
	CHECK_STR(parse_err(edit("- index:", "- index: 64\n")),
	    "st:10: index: '64': too large (allowed 0 to 63)");
	CHECK_STR(parse_err(edit("  memory_total:", "  memory_total: -1\n")),
	    "st:12: memory_total: '-1': too small (allowed 0 to "
	    "9223372036854775807)");
	CHECK_STR(parse_err(edit("  memory_free:",
	    "  memory_free: 18446744073709551615\n")),
	    "st:13: memory_free: '18446744073709551615': out of range "
	    "(allowed 0 to 9223372036854775807)");
	CHECK_STR(parse_err(edit("  utilization:", "  utilization: 101\n")),
	    "st:14: utilization: '101': too large (allowed 0 to 100)");
	CHECK_STR(parse_err(edit("  utilization:", "  utilization: [1]\n")),
	    "st:14: utilization: expected a scalar value, not a sequence");
	CHECK_STR(parse_err(edit_block("clients:\n", "", "clients: [x]\n")),
	    "st:16: clients: expected a mapping");
	CHECK_STR(parse_err(edit("  connected_s:", "  connected_s: soon\n")),
	    "st:19: connected_s: 'soon': not a number");
	CHECK_STR(parse_err(edit("  bytes_out:", "  bytes_out: 1.5\n")),
	    "st:21: bytes_out: '1.5': not a number (allowed 0 to "
	    "9223372036854775807)");
	/* A count that disagrees with the list would overrun it in status_write. */
	CHECK_STR(parse_err(edit("nclients:", "nclients: 5\n")),
	    "st:15: nclients: 5, but 1 clients listed");
	CHECK_STR(parse_err(edit("nclients:", "nclients: 0\n")),
	    "st:15: nclients: 0, but 1 clients listed");
	CHECK_STR(parse_err(edit_block("nclients:", "", "nclients: 2\n"
	    "clients: []\n")), "st:15: nclients: 2, but 0 clients listed");
	CHECK_STR(parse_err(edit("nclients:", "nclients: -1\n")),
	    "st:15: nclients: '-1': too small (allowed 0 to 1048576)");
	/* A long host does not fit. */
	memset(text, 'h', 300);
	text[300] = '\0';
	{
		char line[400], want[100];

		snprintf(line, sizeof line, "host: %.300s\n", text);
		snprintf(want, sizeof want,
		    "st:1: host: value longer than 255 bytes");
		CHECK_STR(parse_err(edit("host:", line)), want);
	}

	/* utilization null, ~ and empty all mean unknown. */
	{
		static const char *const nulls[] = { "  utilization: null\n",
		    "  utilization: ~\n", "  utilization:\n", NULL };
		struct server_status s;
		struct yerr err;
		const char *t;

		for (i = 0; nulls[i] != NULL; i++) {
			t = edit("  utilization:", nulls[i]);
			CHECK(status_parse("st", t, strlen(t), &s, &err) == 0);
			CHECK(s.ngpus == 1 && s.gpus[0].utilization == -1);
			status_free(&s);
		}
		CHECK(status_parse("st", base, strlen(base), &s, &err) == 0);
		CHECK(s.gpus[0].utilization == 7);
		/* An older server's GPU: nothing of NVML's beyond these. */
		CHECK(s.gpus[0].temperature_c == -1 && s.gpus[0].uuid[0] == 0);
		CHECK(s.gpus[0].max_clock_mhz[STATUS_CLK_GRAPHICS] == -1);
		CHECK(s.cuda_version == 0 && s.driver_version[0] == 0);
		CHECK(s.nclients == 1 && s.clients != NULL);
		CHECK(s.clients[0].bytes_out == 2);
		status_free(&s);
	}

	/* Not a mapping at all; empty; not YAML. */
	CHECK_STR(parse_err(""),
	    "st:0: status: expected a mapping, got an empty document");
	CHECK_STR(parse_err("- a\n- b\n"), "st:1: status: expected a mapping");
	CHECK_STR(parse_err("just text"), "st:1: status: expected a mapping");
	CHECK(strncmp(parse_err("host: [\n"), "st:2: ", 6) == 0);

	/* More than STATUS_MAX_GPUS is refused. */
	n = (size_t)snprintf(text, sizeof text, "host: h\nprotocol: 1\n"
	    "backend: cuda\nmax_clients: 1\nclients: []\ngpus:\n");
	for (i = 0; i <= STATUS_MAX_GPUS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
		    "- {index: 0, name: g, memory_total: 1, memory_free: 1}\n");
	CHECK_STR(parse_err(text), "st:7: gpus: more than 64 GPUs");
	/* Exactly STATUS_MAX_GPUS is fine. */
	*strrchr(text, '-') = '\0';
	CHECK_STR(parse_err(text), "");

	/* A bad client after good ones frees what was read. */
	CHECK_STR(parse_err(edit("clients:\n", "clients:\n"
	    "- {address: a, connected_s: 1, bytes_in: 1, bytes_out: 1}\n"
	    "- {address: b, connected_s: 1, bytes_in: x, bytes_out: 1}\n")),
	    "st:18: bytes_in: 'x': not a number (allowed 0 to "
	    "9223372036854775807)");
}

/* A client of ident's, remote or a probe. */
static void
add_client(struct server_status *s, const char *addr, const char *name,
    const char *ident, int remote)
{
	struct client_status *c = &s->clients[s->nclients++];

	memset(c, 0, sizeof *c);
	snprintf(c->address, sizeof c->address, "%s", addr);
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->ident, sizeof c->ident, "%s", ident);
	c->remote = remote;
	c->connected_s = 7;
	c->bytes_in = 1000;
	c->bytes_out = 2000;
}

static void
add_model(struct server_status *s, const char *name, const char *scope)
{
	snprintf(s->cache.models[s->cache.nmodels], STATUS_MODEL_LEN, "%s",
	    name);
	snprintf(s->cache.scopes[s->cache.nmodels], STATUS_SCOPE_LEN, "%s",
	    scope);
	s->cache.nmodels++;
}

/* Three identities: alice and carol in group lab, bob alone. */
static void
filter_fixture(struct server_status *s)
{
	static struct client_status cl[8];

	memset(s, 0, sizeof *s);
	snprintf(s->host, sizeof s->host, "gpu1");
	s->ngpus = 1;
	status_gpu_init(&s->gpus[0], 0);
	s->gpus[0].memory_free = 123;
	s->clients = cl;
	add_client(s, "10.0.0.1:4000", "llama-server", "alice", 1);
	add_client(s, "10.0.0.1:4001", "gleam-probe", "alice", 0);
	add_client(s, "10.0.0.2:4000", "train.py", "bob", 1);
	add_client(s, "10.0.0.2:4001", "gleam-probe", "bob", 0);
	add_client(s, "10.0.0.3:4000", "carol-job", "carol", 1);
	add_client(s, "10.0.0.9:4000", "", "", 0);	/* in its handshake */
	s->has_cache = 1;
	s->cache.entries = 9;
	s->cache.ram_bytes = 4096;
	add_model(s, "llama-7b", "g+lab");
	add_model(s, "bobs-secret", "i+bob+0123456789abcdef");
	add_model(s, "mistral", "g+lab");
}

/* What a status shows, written as the server would. */
static char *
filter_text(const struct server_status *s)
{
	struct yw *w;
	const char *text;
	char *copy;
	size_t len;

	CHECK((w = yw_new()) != NULL);
	status_write(w, s);
	text = yw_finish(w, &len);
	CHECK(text != NULL);
	copy = strdup(text != NULL ? text : "");
	yw_free(w);
	return copy;
}

static void
test_filter(void)
{
	struct server_status s;
	char *t;
	int i;

	/* No key or one identity: everything stays. */
	filter_fixture(&s);
	status_filter(&s, NULL, NULL);
	CHECK(s.nclients == 6 && s.cache.nmodels == 3);
	CHECK_STR(s.clients[2].name, "train.py");

	/* bob: his clients whole; alice's and carol's CUDA clients as
	 * nobody's, their probes and the handshake gone; his model alone. */
	filter_fixture(&s);
	status_filter(&s, "bob", "i+bob+0123456789abcdef");
	CHECK(s.nclients == 4);
	CHECK_STR(s.clients[0].address, "");
	CHECK_STR(s.clients[0].name, "");
	CHECK_STR(s.clients[0].ident, "");
	CHECK(s.clients[0].bytes_in == 0 && s.clients[0].bytes_out == 0);
	CHECK(s.clients[0].connected_s == 7);
	CHECK_STR(s.clients[1].address, "10.0.0.2:4000");
	CHECK_STR(s.clients[1].name, "train.py");
	CHECK(s.clients[1].bytes_in == 1000);
	CHECK_STR(s.clients[2].name, "gleam-probe");
	CHECK_STR(s.clients[3].address, "");
	CHECK(s.cache.nmodels == 1);
	CHECK_STR(s.cache.models[0], "bobs-secret");
	/* What is not a client's stays. */
	CHECK(s.ngpus == 1 && s.gpus[0].memory_free == 123);
	CHECK(s.has_cache && s.cache.entries == 9 &&
	    s.cache.ram_bytes == 4096);
	t = filter_text(&s);
	CHECK(strstr(t, "10.0.0.1") == NULL && strstr(t, "10.0.0.3") == NULL);
	CHECK(strstr(t, "llama") == NULL && strstr(t, "carol") == NULL);
	CHECK(strstr(t, "alice") == NULL && strstr(t, "mistral") == NULL);
	CHECK(strstr(t, "models: [bobs-secret]}") != NULL);
	CHECK(strstr(t, "- address: null\n  name: \"\"\n") != NULL);
	free(t);

	/* alice, in lab: the group's models, in their order; carol's CUDA
	 * client as nobody's (a group shares entries, not clients). */
	filter_fixture(&s);
	status_filter(&s, "alice", "g+lab");
	CHECK(s.nclients == 4);
	CHECK_STR(s.clients[0].name, "llama-server");
	CHECK_STR(s.clients[1].name, "gleam-probe");
	CHECK_STR(s.clients[2].name, "");
	CHECK_STR(s.clients[3].name, "");
	CHECK(s.cache.nmodels == 2);
	CHECK_STR(s.cache.models[0], "llama-7b");
	CHECK_STR(s.cache.models[1], "mistral");
	CHECK_STR(s.cache.scopes[1], "g+lab");

	/* An asker with no identity, or an empty scope: nothing of anyone's,
	 * not even the clients still in their handshake (ident ""). */
	filter_fixture(&s);
	status_filter(&s, "", "");
	CHECK(s.nclients == 3 && s.cache.nmodels == 0);
	for (i = 0; i < s.nclients; i++)
		CHECK_STR(s.clients[i].address, "");

	/* A status that lists no clients (a NULL list) is left alone. */
	filter_fixture(&s);
	s.clients = NULL;
	s.nclients = 0;
	status_filter(&s, "dave", "i+dave+0000000000000000");
	CHECK(s.nclients == 0 && s.cache.nmodels == 0);
	CHECK(s.clients == NULL);
}

int
main(void)
{
	test_round_trip();
	test_errors();
	test_filter();
	return t_done("status");
}
