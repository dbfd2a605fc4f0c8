/*
 * gleam-key: makes keys, as wg genkey does, and checks key files.  A key
 * is 32 random bytes from the system's generator, printed in base64; a
 * key file holds one (gleam-key(1), "KEY FILES").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "exitcode.h"
#include "log.h"

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-key [-n name] [-o file]\n"
	    "       gleam-key -c file\n");
	exit(code);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
misuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LL_ERROR, fmt, ap);
	va_end(ap);
	usage(EXIT_USAGE);
}

/* Loads a key file as every program does, and says what it holds. */
static int
check(const char *path)
{
	struct auth_key k;
	char err[600];

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
	const char *name = NULL, *out = NULL, *chk = NULL;
	int ch;

	log_init(argv[0], LL_WARN);
	opterr = 0;
	while ((ch = getopt(argc, argv, ":c:hn:o:")) != -1) {
		switch (ch) {
		case 'c':
			chk = optarg;
			break;
		case 'h':
			usage(EXIT_OK);
		case 'n':
			if (auth_name_check(optarg) == -1)
				misuse("-n %s: not a name (letters, digits, "
				    "'.', '_', '-', '@', at most %d)", optarg,
				    AUTH_NAME_MAX);
			name = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case ':':
			misuse("-%c: missing argument", optopt);
		default:
			misuse("-%c: unknown option", optopt);
		}
	}
	if (optind < argc)
		misuse("unexpected argument: %s", argv[optind]);
	if (chk != NULL && (name != NULL || out != NULL))
		misuse("-c takes no other flag");
	if (auth_init() == -1) {
		log_error("libsodium cannot start");
		return EXIT_SOFTWARE;
	}
	return chk != NULL ? check(chk) : make(name, out);
}
