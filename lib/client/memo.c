/* Files kept across runs: see memo.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "memo.h"
#include "parse.h"
#include "util.h"

int
memo_dir(const char *sub, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (xdg != NULL && xdg[0] == '/')
		n = snprintf(buf, len, "%s/gleam%s%s", xdg, *sub ? "/" : "",
		    sub);
	else if (home != NULL && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/gleam%s%s", home,
		    *sub ? "/" : "", sub);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
memo_program(const char *kind, char *buf, size_t len)
{
	const char *srv = getenv("GLEAM_SERVER"), *why;
	char exe[1024], host[256], dir[1024];
	int port = 0, n;
	ssize_t e;

	if (srv == NULL || parse_hostport(srv, host, sizeof host, &port,
	    &why) == -1 || (e = readlink("/proc/self/exe", exe,
	    sizeof exe - 1)) <= 0 || memo_dir("", dir, sizeof dir) == -1)
		return -1;
	n = snprintf(buf, len, "%s/%s-%016llx", dir, kind,
	    (unsigned long long)XXH3_64bits_withSeed(exe, (size_t)e,
	    XXH3_64bits(host, strlen(host))));
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
memo_write(const char *path, const void *a, size_t alen, const void *b,
    size_t blen)
{
	char dir[1200], tmp[1300];
	FILE *f;
	int ok;

	if ((size_t)snprintf(dir, sizeof dir, "%s", path) >= sizeof dir ||
	    strrchr(dir, '/') == NULL)
		return -1;
	*strrchr(dir, '/') = '\0';
	if (mkdirs(dir, 0700) == -1 || (size_t)snprintf(tmp, sizeof tmp, "%s.%ld", path,
	    (long)getpid()) >= sizeof tmp || (f = fopen(tmp, "wb")) == NULL)
		return -1;
	ok = (alen == 0 || fwrite(a, 1, alen, f) == alen) &&
	    (blen == 0 || fwrite(b, 1, blen, f) == blen);
	if (fclose(f) != 0 || !ok || rename(tmp, path) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
