/*
 * gleam-cache: list, measure, verify and prune the weight cache that
 * gleam-serve keeps in a directory, safely while it runs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cli.h"
#include "cstore.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"

static const struct cli_opt opts[] = {
	{ 'd', "dir", "dir", "the cache directory (" CACHE_DIR_DEFAULT ")", 0 },
	{ 'o', "format", "format", "table (default) or yaml", 0 },
	{ 'q', "quiet", NULL, "no summary lines and no progress", 0 },
	{ 't', "tenant", "tenant", "only this tenant's entries", 0 },
	{ 'a', "max-age", "age", "prune: entries unused for longer than age", 0 },
	{ 's', "max-size", "size", "prune: down to this total size", 0 },
	{ 'n', "dry-run", NULL, "prune: say what would go, remove nothing", 0 },
	{ 'r', "remove", NULL, "verify: remove the corrupt entries", 0 },
	{ 0 }
};

static struct cli cli = { "gleam-cache",
    "gleam-cache [-nqr] [-a age] [-d dir] [-o format] [-s size] [-t tenant]\n"
    "                   command [hash ...]", opts, 0 };

/* A one-line reason, then the usage. */
#define misuse(...)	cli_bad(&cli, __VA_ARGS__)

/* A duration as parse_duration reads it, or days: "14d". */
static int
parse_age(const char *s, double *secs, const char **why)
{
	char buf[64];
	size_t n = strlen(s);

	if (n > 1 && n < sizeof buf && s[n - 1] == 'd') {
		memcpy(buf, s, n - 1);
		buf[n - 1] = '\0';
		if (parse_double(buf, 0, 1e6, secs, why) == -1)
			return -1;
		*secs *= 86400;
		return 0;
	}
	if (parse_duration(s, secs, why) == -1)
		return -1;
	if (*secs < 0) {
		*why = "negative";
		return -1;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	const char *cmd, *why;
	int ch;

	log_init(argv[0], LL_WARN);
	memset(&o, 0, sizeof o);
	o.dir = CACHE_DIR_DEFAULT;
	o.age = -1;
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'a':
			if (parse_age(optarg, &o.age, &why) == -1)
				misuse("-a %s: %s", optarg, why);
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 'n':
			o.dry = 1;
			break;
		case 'o':
			if (strcmp(optarg, "yaml") == 0)
				o.yaml = 1;
			else if (strcmp(optarg, "table") == 0)
				o.yaml = 0;
			else
				misuse("-o %s: expected table or yaml",
				    optarg);
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'r':
			o.remove = 1;
			break;
		case 's':
			if (parse_size(optarg, &o.size, &why) == -1)
				misuse("-s %s: %s", optarg, why);
			o.have_size = 1;
			break;
		case 't':
			if (!cstore_tenant_sel(optarg))
				misuse("-t %s: expected an identity's name, "
				    "g+GROUP, i+NAME+HEX, nokey, or k and 16 "
				    "hex digits", optarg);
			o.tenant = optarg;
			break;
		default:
			cli_usage_exit(&cli, EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		misuse("no command given");
	cmd = argv[0];
	if (strcmp(cmd, "rm") != 0 && argc > 1)
		misuse("%s: unexpected argument '%s'", cmd, argv[1]);
	if ((o.dry || o.age >= 0 || o.have_size) && strcmp(cmd, "prune") != 0)
		misuse("-a, -n and -s go with prune");
	if (o.remove && strcmp(cmd, "verify") != 0)
		misuse("-r goes with verify");
	if (strcmp(cmd, "ls") == 0)
		return cmd_ls(&o);
	if (strcmp(cmd, "du") == 0 || strcmp(cmd, "stat") == 0)
		return cmd_du(&o);
	if (strcmp(cmd, "prune") == 0) {
		if (o.age < 0 && !o.have_size)
			misuse("prune: give -a age, -s size or both");
		return cmd_prune(&o);
	}
	if (strcmp(cmd, "verify") == 0)
		return cmd_verify(&o);
	if (strcmp(cmd, "rm") == 0) {
		if (argc < 2)
			misuse("rm: no hash given");
		return cmd_rm(&o, argc - 1, argv + 1);
	}
	misuse("unknown command '%s'", cmd);
}
