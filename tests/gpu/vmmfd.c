/*
 * tests/gpu/vmmfd.c: checks on the real driver what gleam-serve's GPU
 * cache tier relies on under process isolation: device memory made with
 * cuMemCreate and exported as a POSIX file descriptor outlives the
 * process that made it while another process (with no CUDA context)
 * holds the descriptor; a third process imports it, reads the bytes the
 * first wrote, and the memory goes back to the device once the holder
 * closes the descriptor.  Prints "vmmfd: ok ..." or "vmmfd: FAIL ...".
 *	cc -o vmmfd vmmfd.c -I/usr/local/cuda/include -lcuda
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define SIZE	(64u << 20)

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) {	\
	const char *s_ = ""; cuGetErrorName(r_, &s_);			\
	printf("vmmfd: FAIL %s: %s\n", #x, s_); exit(1); } } while (0)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A message of the one byte *b, with room for one descriptor in cm. */
static void
msg_init(struct msghdr *m, struct iovec *iov, char *b, char *cm, size_t cml)
{
	memset(m, 0, sizeof *m);
	iov->iov_base = b;
	iov->iov_len = 1;
	m->msg_iov = iov;
	m->msg_iovlen = 1;
	m->msg_control = cm;
	m->msg_controllen = cml;
}

static void
fd_send(int s, int fd)
{
	struct msghdr m;
	struct iovec iov;
	char b = 'f', cm[CMSG_SPACE(sizeof(int))];
	struct cmsghdr *c;

	msg_init(&m, &iov, &b, cm, sizeof cm);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(s, &m, 0) != 1) {
		perror("vmmfd: FAIL sendmsg");
		exit(1);
	}
}

static int
fd_recv(int s)
{
	struct msghdr m;
	struct iovec iov;
	char b, cm[CMSG_SPACE(sizeof(int))];
	struct cmsghdr *c;
	int fd;

	msg_init(&m, &iov, &b, cm, sizeof cm);
	if (recvmsg(s, &m, 0) != 1 || (c = CMSG_FIRSTHDR(&m)) == NULL ||
	    c->cmsg_type != SCM_RIGHTS) {
		printf("vmmfd: FAIL no descriptor came\n");
		exit(1);
	}
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static CUmemAllocationProp
prop(void)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = 0;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return p;
}

static CUdeviceptr
map(CUmemGenericAllocationHandle h)
{
	CUdeviceptr d;
	CUmemAccessDesc a;

	CK(cuMemAddressReserve(&d, SIZE, 0, 0, 0));
	CK(cuMemMap(d, SIZE, 0, h, 0));
	memset(&a, 0, sizeof a);
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = 0;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(d, SIZE, &a, 1));
	return d;
}

/* The exporter: makes, fills, exports, sends, and exits. */
static void
maker(int s)
{
	CUcontext ctx;
	CUmemAllocationProp p = prop();
	CUmemGenericAllocationHandle h;
	CUdeviceptr d;
	int fd;

	CK(cuInit(0));
	CK(cuCtxCreate(&ctx, NULL, 0, 0));
	CK(cuMemCreate(&h, SIZE, &p, 0));
	d = map(h);
	CK(cuMemsetD32(d, 0x676c6561, SIZE / 4));
	CK(cuCtxSynchronize());
	CK(cuMemExportToShareableHandle(&fd, h,
	    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	fd_send(s, fd);
	CK(cuMemUnmap(d, SIZE));
	CK(cuMemAddressFree(d, SIZE));
	CK(cuMemRelease(h));
	close(fd);
	exit(0);
}

/* The importer: reads the bytes back; reports free memory around the close. */
static void
user(int fd, int tell, int told)
{
	CUcontext ctx, c2;
	CUmemGenericAllocationHandle h;
	CUdeviceptr d, d2;
	uint32_t *b;
	size_t f0, f1, t;
	double t0, t1, t2;
	char x;

	CK(cuInit(0));
	CK(cuCtxCreate(&ctx, NULL, 0, 0));
	t0 = now();
	CK(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
	    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	d = map(h);
	t1 = now();
	CK(cuMemAlloc(&d2, SIZE));
	CK(cuMemcpyDtoD(d2, d, SIZE));
	CK(cuCtxSynchronize());
	t2 = now();
	if ((b = malloc(SIZE)) == NULL)
		exit(1);
	CK(cuMemcpyDtoH(b, d2, SIZE));
	for (size_t i = 0; i < SIZE / 4; i++)
		if (b[i] != 0x676c6561) {
			printf("vmmfd: FAIL word %zu is %08x\n", i, b[i]);
			exit(1);
		}
	CK(cuMemUnmap(d, SIZE));
	CK(cuMemAddressFree(d, SIZE));
	CK(cuMemRelease(h));
	close(fd);
	CK(cuMemGetInfo(&f0, &t));
	/* The holder closes its descriptor now. */
	if (write(tell, "c", 1) != 1 || read(told, &x, 1) != 1)
		exit(1);
	usleep(200000);
	CK(cuMemGetInfo(&f1, &t));
	(void)c2;
	printf("vmmfd: ok: 64 MiB survived its maker's exit; import+map "
	    "%.3f ms, copy %.3f ms (%.1f GB/s); closing the last descriptor "
	    "gave back %.1f MiB\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3,
	    SIZE / (t2 - t1) / 1e9, ((double)f1 - (double)f0) / 1048576);
	exit(0);
}

int
main(void)
{
	int sv[2], a[2], b[2], fd, st;
	pid_t p;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1 || pipe(a) == -1 ||
	    pipe(b) == -1)
		return 1;
	if ((p = fork()) == 0)
		maker(sv[1]);
	fd = fd_recv(sv[0]);
	waitpid(p, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("vmmfd: FAIL the maker failed\n");
		return 1;
	}
	usleep(200000);
	if ((p = fork()) == 0) {
		int d = dup(fd);

		close(fd);	/* only the holder's copy keeps it */
		close(sv[0]);
		user(d, a[1], b[0]);
	}
	{
		char x;

		if (read(a[0], &x, 1) != 1)
			return 1;
		close(fd);
		if (write(b[1], "k", 1) != 1)
			return 1;
	}
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
