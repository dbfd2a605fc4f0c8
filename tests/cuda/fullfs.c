/*
 * A full disk, for the tests: preloaded into gleam-serve, it makes write(2)
 * fail with ENOSPC on every file under $GLEAM_FULLFS_DIR while the file
 * $GLEAM_FULLFS_DIR/full exists (remove it and the disk has room again).
 * Other descriptors, and everything when the variable is unset, go to the
 * real write(2).
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t
write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	const char *dir = getenv("GLEAM_FULLFS_DIR");
	char link[64], path[4096], flag[4096];
	struct stat st;
	ssize_t k;
	size_t len;

	if (real == NULL)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT,
		    "write");
	if (dir == NULL || *dir == '\0' || fd <= 2)
		return real(fd, buf, n);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	len = strlen(dir);
	if ((k = readlink(link, path, sizeof path - 1)) <= 0)
		return real(fd, buf, n);
	path[k] = '\0';
	snprintf(flag, sizeof flag, "%s/full", dir);
	if (strncmp(path, dir, len) == 0 && path[len] == '/' &&
	    stat(flag, &st) == 0) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, buf, n);
}
