/*
 * gleam-key: makes keys, as wg genkey does, and checks key files.  A key
 * is 32 random bytes from the system's generator, printed in base64; a
 * client's key file holds one, a server's one a line for each identity
 * (gleam-key(1), "KEY FILES").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "cli.h"
#include "exitcode.h"
#include "log.h"

static const struct cli_opt opts[] = {
	{ 'i', "identity", "name", "write the key as this identity's line", 0 },
	{ 'i', NULL, "name", NULL, 'n' },
	/* Spellings of earlier releases that are operands now. */
	{ 'o', NULL, "file", NULL, 0 },
	{ 'c', NULL, "file", NULL, 0 },
	{ 0 }
};

static struct cli cli = { "gleam-key",
    "gleam-key [new] [-i name] [file]\n"
    "gleam-key check file", opts, 0 };

#define misuse(...)	cli_bad(&cli, __VA_ARGS__)

/*
 * Loads a key file as every program does, and says what it holds: a key
 * (a client's, or a server's one identity), or a server's identities.
 */
static int
check(const char *path)
{
	struct auth_keys ks;
	struct auth_key k;
	char err[600];
	size_t i;

	if (auth_keys_load(&ks, path, err, sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if (ks.n > 1) {
		printf("%s: %zu identities: ", path, ks.n);
		for (i = 0; i < ks.n; i++)
			printf("%s%s", i ? ", " : "", ks.v[i].name);
		printf("\n");
		auth_keys_free(&ks);
		return EXIT_OK;
	}
	auth_keys_free(&ks);
	if (auth_key_load(&k, path, err, sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if (strcmp(path, "-") == 0)
		path = "stdin";
	if (k.name[0] != '\0')
		printf("%s: a key, for %s\n", path, k.name);
	else
		printf("%s: a key\n", path);
	sodium_memzero(&k, sizeof k);
	return EXIT_OK;
}

/* A new key, as a line: "[name ]KEY\n". */
static int
make(const char *name, const char *out)
{
	uint8_t raw[AUTH_KEY_BYTES];
	char b64[sodium_base64_ENCODED_LEN(AUTH_KEY_BYTES,
	    sodium_base64_VARIANT_ORIGINAL)];
	char line[AUTH_NAME_MAX + sizeof b64 + 4];
	size_t len;
	ssize_t n;
	int fd = STDOUT_FILENO;

	randombytes_buf(raw, sizeof raw);
	sodium_bin2base64(b64, sizeof b64, raw, sizeof raw,
	    sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(raw, sizeof raw);
	len = (size_t)snprintf(line, sizeof line, "%s%s%s\n",
	    name != NULL ? name : "", name != NULL ? " " : "", b64);
	sodium_memzero(b64, sizeof b64);
	/* Never over another file: a key lost is a fleet to redo. */
	if (out != NULL && (fd = open(out, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0600)) == -1) {
		log_error("%s: %s", out, strerror(errno));
		sodium_memzero(line, sizeof line);
		return EXIT_IO;
	}
	n = write(fd, line, len);
	sodium_memzero(line, sizeof line);
	if (n != (ssize_t)len || (out != NULL && close(fd) == -1)) {
		log_error("%s: %s", out != NULL ? out : "standard output",
		    n == -1 ? strerror(errno) : "short write");
		if (out != NULL)
			unlink(out);
		return EXIT_IO;
	}
	return EXIT_OK;
}

int
main(int argc, char *argv[])
{
	const char *name = NULL, *out = NULL, *chk = NULL, *mode = "new";
	int ch;

	log_init(argv[0], LL_WARN);
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			cli_deprecated(&cli, "-c is deprecated and will go; "
			    "use gleam-key check %s", optarg);
			mode = "check";
			chk = optarg;
			break;
		case 'i':
			if (auth_name_check(optarg) == -1)
				misuse("-i %s: not a name (letters, digits, "
				    "'.', '_', '-', '@', at most %d)", optarg,
				    AUTH_NAME_MAX);
			name = optarg;
			break;
		case 'o':
			cli_deprecated(&cli, "-o is deprecated and will go; "
			    "give the file as an operand: gleam-key %s",
			    optarg);
			out = optarg;
			break;
		default:
			cli_usage_exit(&cli, EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0 && chk == NULL && (strcmp(argv[0], "new") == 0 ||
	    strcmp(argv[0], "check") == 0)) {
		mode = argv[0];
		argc--;
		argv++;
	}
	if (strcmp(mode, "check") == 0) {
		if (chk == NULL && argc == 0)
			misuse("check: which file?");
		if (chk == NULL)
			chk = *argv++, argc--;
		if (argc > 0)
			misuse("check: unexpected argument '%s'", argv[0]);
		if (name != NULL || out != NULL)
			misuse("check takes no other flag");
	} else {
		if (argc > 0 && out != NULL)
			misuse("two files: -o %s and %s", out, argv[0]);
		if (argc > 0)
			out = *argv++, argc--;
		if (argc > 0)
			misuse("unexpected argument '%s'", argv[0]);
	}
	if (auth_init() == -1) {
		log_error("libsodium cannot start");
		return EXIT_SOFTWARE;
	}
	return chk != NULL ? check(chk) : make(name, out);
}
