/* Unit tests for lib/common/meter.c: the progress line and when it shows. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "meter.h"
#include "t.h"

#define MS	1000000ull

static void
test_line(void)
{
	char b[160];
	size_t n;

	n = meter_line(b, sizeof b, "gleam: sent", 31ull << 20, 48ull << 20,
	    2.0);
	CHECK_STR(b, "gleam: sent 31.0 MiB/48.0 MiB 64% 15.5 MiB/s ETA 1s");
	CHECK(n == strlen(b));
	/* Nothing done yet: no rate, no time left. */
	meter_line(b, sizeof b, "verify 0/3:", 0, 3ull << 30, 0.5);
	CHECK_STR(b, "verify 0/3: 0 B/3.0 GiB 0%");
	/* No total: no share, no time left. */
	meter_line(b, sizeof b, "x", 2048, 0, 1.0);
	CHECK_STR(b, "x 2.0 KiB 2.0 KiB/s");
	/* Done: no time left; more than the total counts as all of it. */
	meter_line(b, sizeof b, "x", 5000, 4000, 1.0);
	CHECK_STR(b, "x 4.9 KiB/3.9 KiB 100% 4.9 KiB/s");
	/* Minutes and hours. */
	meter_line(b, sizeof b, "x", 1 << 20, 91ull << 20, 1.0);
	CHECK_STR(b, "x 1.0 MiB/91.0 MiB 1% 1.0 MiB/s ETA 1m30s");
	meter_line(b, sizeof b, "x", 1 << 20, 7201ull << 20, 1.0);
	CHECK_STR(b, "x 1.0 MiB/7.0 GiB 0% 1.0 MiB/s ETA 2h00m");
	/* A short buffer: cut, terminated, its length said. */
	n = meter_line(b, 8, "gleam: sent", 1, 2, 1.0);
	CHECK(n == 7 && strlen(b) == 7);
}

static void
test_due(void)
{
	struct meter m;
	uint64_t t0 = 1000 * MS;

	/* On a terminal: nothing in the first second, then 4 a second. */
	meter_start(&m, -1, METER_TTY, t0);
	CHECK(!meter_due(&m, t0));
	CHECK(!meter_due(&m, t0 + 999 * MS));
	CHECK(meter_due(&m, t0 + 1000 * MS));
	m.tdraw = t0 + 1000 * MS;
	CHECK(!meter_due(&m, t0 + 1249 * MS));
	CHECK(meter_due(&m, t0 + 1250 * MS));
	/* Forced: from the start. */
	meter_start(&m, -1, METER_FORCE, t0);
	CHECK(meter_due(&m, t0));
	meter_start(&m, -1, METER_OFF, t0);
	CHECK(!meter_due(&m, t0 + 5000 * MS));
}

static size_t
drain(int fd, char *b, size_t len)
{
	ssize_t k;
	size_t n = 0;

	while (n < len - 1 && (k = read(fd, b + n, len - 1 - n)) > 0)
		n += (size_t)k;
	b[n] = '\0';
	return n;
}

static void
test_draw(void)
{
	struct meter m;
	char b[1024];
	int p[2];

	if (pipe(p) == -1) {
		CHECK(0);
		return;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	meter_start(&m, p[1], METER_FORCE, 0);
	meter_show(&m, "w", 3 << 20, 4 << 20, 1000 * MS);
	meter_show(&m, "w", 3 << 20, 4 << 20, 1100 * MS);	/* too soon */
	drain(p[0], b, sizeof b);
	CHECK_STR(b, "\rw 3.0 MiB/4.0 MiB 75% 3.0 MiB/s ETA 0s");
	/* A shorter line blanks what the longer left. */
	meter_show(&m, "w", 0, 0, 2000 * MS);
	drain(p[0], b, sizeof b);
	CHECK(strncmp(b, "\rw 0 B", 6) == 0 && strlen(b) == 1 +
	    strlen("w 3.0 MiB/4.0 MiB 75% 3.0 MiB/s ETA 0s"));
	CHECK(strspn(b + 6, " ") == strlen(b + 6));
	meter_done(&m);
	drain(p[0], b, sizeof b);
	CHECK(b[0] == '\r' && b[strlen(b) - 1] == '\r' &&
	    strspn(b + 1, " ") == strlen(b) - 2 && strlen(b) == 2 +
	    strlen("w 3.0 MiB/4.0 MiB 75% 3.0 MiB/s ETA 0s"));
	/* Nothing shown: nothing to erase. */
	meter_done(&m);
	CHECK(drain(p[0], b, sizeof b) == 0);
	/* Off: never a byte. */
	meter_start(&m, p[1], METER_OFF, 0);
	meter_show(&m, "w", 1, 2, 5000 * MS);
	meter_done(&m);
	CHECK(drain(p[0], b, sizeof b) == 0);
	close(p[0]);
	close(p[1]);
}

static void
test_mode(void)
{
	char b[512];
	FILE *lf;
	size_t n;
	int p[2];

	if (pipe(p) == -1) {
		CHECK(0);
		return;
	}
	unsetenv("GLEAM_PROGRESS");
	CHECK(meter_mode(p[1], 0) == METER_OFF);	/* not a terminal */
	setenv("GLEAM_PROGRESS", "auto", 1);
	CHECK(meter_mode(p[1], 0) == METER_OFF);
	setenv("GLEAM_PROGRESS", "1", 1);
	CHECK(meter_mode(p[1], 0) == METER_FORCE);
	CHECK(meter_mode(p[1], 1) == METER_OFF);	/* -q wins */
	setenv("GLEAM_PROGRESS", "on", 1);
	CHECK(meter_mode(p[1], 0) == METER_FORCE);
	setenv("GLEAM_PROGRESS", "0", 1);
	CHECK(meter_mode(p[1], 0) == METER_OFF);
	setenv("GLEAM_PROGRESS", "off", 1);
	CHECK(meter_mode(p[1], 0) == METER_OFF);
	/* Another value: warned of once, taken as auto. */
	if ((lf = tmpfile()) == NULL) {
		CHECK(0);
		return;
	}
	log_file(lf);
	setenv("GLEAM_PROGRESS", "yes", 1);
	CHECK(meter_mode(p[1], 0) == METER_OFF);
	CHECK(meter_mode(p[1], 0) == METER_OFF);
	log_file(NULL);
	rewind(lf);
	n = fread(b, 1, sizeof b - 1, lf);
	b[n] = '\0';
	fclose(lf);
	CHECK(strstr(b, "GLEAM_PROGRESS=yes: expected auto, 0, off, 1 or on: "
	    "taken as auto\n") != NULL);
	CHECK(strstr(b, "\n") == strrchr(b, '\n'));	/* once */
	unsetenv("GLEAM_PROGRESS");
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	test_line();
	test_due();
	test_draw();
	test_mode();
	return t_done("test_meter");
}
