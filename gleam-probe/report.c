/* Printing probe results. */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "report.h"
#include "util.h"
#include "yamlio.h"

static const char *
gpus_summary(const struct probe *p, char *buf, size_t len)
{
	const struct server_status *s = &p->status;
	size_t off = 0;
	int i;

	if (!p->have_status || s->ngpus == 0)
		return "no GPU";
	buf[0] = '\0';
	for (i = 0; i < s->ngpus && off < len; i++) {
		const struct gpu_status *g = &s->gpus[i];
		off += (size_t)snprintf(buf + off, len - off, "%s%s %.0f/%.0f GiB",
		    i ? ", " : "", g->name, (double)g->memory_free / (1 << 30),
		    (double)g->memory_total / (1 << 30));
	}
	return buf;
}

void
report_table(FILE *f, struct probe *p, int n)
{
	char gpus[512], up[32], down[32];
	int i, w = 6;

	for (i = 0; i < n; i++)
		if ((int)strlen(p[i].spec) > w)
			w = (int)strlen(p[i].spec);
	fprintf(f, "%-*s  %-24s  %11s  %11s  %7s  %s\n", w, "SERVER",
	    "RTT MIN/MED/P99 (ms)", "UP Mbit/s", "DOWN Mbit/s", "CLIENTS",
	    "GPUS");
	for (i = 0; i < n; i++) {
		char rtt[64];

		if (!p[i].ok) {
			fprintf(f, "%-*s  %s: %s\n", w, p[i].spec,
			    p[i].fail == CONN_NET ? "unreachable" : "failed",
			    p[i].error);
			continue;
		}
		snprintf(rtt, sizeof rtt, "%.3f/%.3f/%.3f",
		    p[i].rtt_min * 1e3, p[i].rtt_median * 1e3,
		    p[i].rtt_p99 * 1e3);
		if (p[i].bulk_done) {
			snprintf(up, sizeof up, "%.1f", p[i].up_bps / 1e6);
			snprintf(down, sizeof down, "%.1f", p[i].down_bps / 1e6);
		} else {
			snprintf(up, sizeof up, "-");
			snprintf(down, sizeof down, "-");
		}
		fprintf(f, "%-*s  %-24s  %11s  %11s  %7d  %s\n", w, p[i].spec,
		    rtt, up, down, p[i].status.nclients,
		    gpus_summary(&p[i], gpus, sizeof gpus));
	}
}

int
report_yaml(FILE *f, struct probe *p, int n, double bulk_s)
{
	struct yw *w;
	const char *text;
	char client[256], cerr[200];
	size_t len;
	int i, rc = -1;

	if ((w = yw_new()) == NULL)
		return -1;
	yw_map(w);
	/* Who probed: the client gleam-sched reads these links as. */
	yw_key(w, "client");
	if (client_name(client, sizeof client, cerr, sizeof cerr) == 0)
		yw_str(w, client);
	else
		yw_null(w);
	yw_key(w, "probes");
	yw_seq(w);
	for (i = 0; i < n; i++) {
		yw_map(w);
		yw_kstr(w, "server", p[i].spec);
		yw_kbool(w, "ok", p[i].ok);
		if (!p[i].ok) {
			yw_kstr(w, "error", p[i].error);
			yw_end(w);
			continue;
		}
		yw_kstr(w, "name", p[i].name);
		yw_kint(w, "protocol", p[i].protocol);
		yw_key(w, "rtt_ms");
		yw_fmap(w);
		yw_kdbl(w, "min", p[i].rtt_min * 1e3, 4);
		yw_kdbl(w, "median", p[i].rtt_median * 1e3, 4);
		yw_kdbl(w, "p99", p[i].rtt_p99 * 1e3, 4);
		yw_kint(w, "count", p[i].rtt_n);
		yw_end(w);
		yw_key(w, "up_mbit_s");
		if (p[i].bulk_done)
			yw_dbl(w, p[i].up_bps / 1e6, 2);
		else
			yw_null(w);
		yw_key(w, "down_mbit_s");
		if (p[i].bulk_done)
			yw_dbl(w, p[i].down_bps / 1e6, 2);
		else
			yw_null(w);
		yw_kdbl(w, "bulk_s", p[i].bulk_done ? bulk_s : 0, 2);
		yw_key(w, "status");
		status_write(w, &p[i].status);
		yw_end(w);
	}
	yw_end(w);
	yw_end(w);
	if ((text = yw_finish(w, &len)) != NULL &&
	    fwrite(text, 1, len, f) == len)
		rc = 0;
	yw_free(w);
	return rc;
}
