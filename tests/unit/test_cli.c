/*
 * Unit tests for lib/common/cli.c: the short and long spellings of one
 * table, deprecated letters, permutation, and the help it prints.  What
 * exits (unknown options, -h, -V) is tested through the programs in bats.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "t.h"

enum { O_STATS = CLI_LONG, O_SERVE };

static const struct cli_opt opts[] = {
	{ 'c', "config", "file", "read this configuration", 0 },
	{ 'D', "foreground", NULL, "stay in the foreground", 0 },
	{ 'v', "verbose", NULL, "say more", 0 },
	{ O_STATS, "stats", "file", "write statistics here", 0 },
	{ 'D', NULL, NULL, NULL, 'd' },
	{ 'c', NULL, "file", NULL, 'f' },
	{ O_SERVE, NULL, NULL, "gleam-test serve", 'x' },
	{ 0 }
};

/* Parses argv (NULL-terminated), returns the values seen as a string. */
static char seen[64], arg[256], operands[64];

static void
parse(int stop, ...)
{
	struct cli c = { "gleam-test", "gleam-test [-Dv] [-c file]", opts,
	    stop };
	char *argv[16];
	va_list ap;
	int argc = 0, ch, n = 0;

	argv[argc++] = "gleam-test";
	va_start(ap, stop);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	optind = 0;	/* glibc: start over */
	arg[0] = '\0';
	while ((ch = cli_next(&c, argc, argv)) != -1) {
		seen[n++] = ch == O_STATS ? 'S' : ch == O_SERVE ? 'X' :
		    (char)ch;
		if (optarg != NULL) {
			strcat(arg, optarg);
			strcat(arg, ";");
		}
	}
	seen[n] = '\0';
	operands[0] = '\0';
	for (; optind < argc; optind++)
		strcat(operands, argv[optind]);
}

static void
test_spellings(void)
{
	parse(0, "-c", "a.yaml", "--foreground", "-v", "--stats=s.yaml",
	    NULL);
	CHECK_STR(seen, "cDvS");
	CHECK_STR(arg, "a.yaml;s.yaml;");
	parse(0, "--config", "b", "-Dv", "-cc", NULL);
	CHECK_STR(seen, "cDvc");
	CHECK_STR(arg, "b;c;");
	/* Deprecated letters come back as the new ones. */
	parse(0, "-d", "-f", "old.yaml", "-d", NULL);
	CHECK_STR(seen, "DcD");
	CHECK_STR(arg, "old.yaml;");
	/* One that is no option now comes back as its own value. */
	parse(0, "-x", "-v", NULL);
	CHECK_STR(seen, "Xv");
	/* Permutation, unless told to stop at the first operand. */
	parse(0, "x", "-v", "y", NULL);
	CHECK_STR(seen, "v");
	CHECK_STR(operands, "xy");
	parse(1, "-v", "prog", "-D", NULL);
	CHECK_STR(seen, "v");
	CHECK_STR(operands, "prog-D");
	parse(0, "-v", "--", "-D", NULL);
	CHECK_STR(seen, "v");
	CHECK_STR(operands, "-D");
}

static void
test_help(void)
{
	struct cli c = { "gleam-test", "gleam-test [-Dv] [-c file]\n"
	    "gleam-test other", opts, 0, "A note\nof two lines." };
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof buf, "w");

	cli_help(&c, f);
	fclose(f);
	CHECK(strncmp(buf, "usage: gleam-test [-Dv] [-c file]\n"
	    "       gleam-test other\n\n", 58) == 0);
	CHECK(strstr(buf, "  -c, --config=file         read this "
	    "configuration\n") != NULL);
	CHECK(strstr(buf, "      --stats=file          write") != NULL);
	CHECK(strstr(buf, "  -V, --version") != NULL);
	CHECK(strstr(buf, "  -h, --help") != NULL);
	CHECK(strstr(buf, "  -d   use -D or --foreground\n") != NULL);
	CHECK(strstr(buf, "  -f file   use -c or --config\n") != NULL);
	CHECK(strstr(buf, "  -x   use gleam-test serve\n") != NULL);
	/* The note after the options, before the deprecated ones. */
	CHECK(strstr(buf, "print the version and exit\n\nA note\nof two "
	    "lines.\n\nDeprecated") != NULL);
	CHECK(strstr(buf, "\nSee gleam-test(1) for the whole story.\n") !=
	    NULL);
}

int
main(void)
{
	test_spellings();
	test_help();
	return t_done("test_cli");
}
