/*
 * A fake real NVML for nvmltrace's test (nvml-test.c), with the real
 * one's soname: a few public functions, and nvmlInternalGetExportTable
 * with a table longer than the driver's (300 words, a size word, a
 * function in its last word) and one whose end cannot be known (no size
 * word, no NULL).
 */
#include <stdint.h>
#include <string.h>

#define F	__attribute__((visibility("default")))

struct nvmlDevice_st {
	int		 i;
};

F int		 nvmlInit_v2(void);
F int		 nvmlShutdown(void);
F int		 fake_nvml_inited(void);
F int		 nvmlDeviceGetCount_v2(unsigned *);
F int		 nvmlDeviceGetHandleByIndex_v2(unsigned, struct nvmlDevice_st **);
F int		 nvmlDeviceGetName(struct nvmlDevice_st *, char *, unsigned);
F int		 nvmlSystemGetDriverVersion(char *, unsigned);
F const char	*nvmlErrorString(int);
F int		 nvmlInternalGetExportTable(const void **, const uint8_t *);

static int inited;
static struct nvmlDevice_st devs[2] = { { 0 }, { 1 } };

F int nvmlInit_v2(void) { inited++; return 0; }
F int nvmlShutdown(void) { inited--; return 0; }
F int fake_nvml_inited(void) { return inited; }

F int
nvmlDeviceGetCount_v2(unsigned *n)
{
	if (!inited)
		return 1;	/* NVML_ERROR_UNINITIALIZED */
	*n = 2;
	return 0;
}

F int
nvmlDeviceGetHandleByIndex_v2(unsigned i, struct nvmlDevice_st **d)
{
	if (i >= 2)
		return 2;	/* NVML_ERROR_INVALID_ARGUMENT */
	*d = &devs[i];
	return 0;
}

F int
nvmlDeviceGetName(struct nvmlDevice_st *d, char *buf, unsigned len)
{
	char name[] = "Fake GPU 0";

	name[sizeof name - 2] = (char)('0' + d->i);
	if (len < sizeof name)
		return 7;	/* NVML_ERROR_INSUFFICIENT_SIZE */
	memcpy(buf, name, sizeof name);
	return 0;
}

F int
nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
	if (len < 8)
		return 7;
	strcpy(buf, "999.99");
	return 0;
}

F const char *
nvmlErrorString(int rc)
{
	return rc == 3 ? "Not Supported" : "Unknown Error";
}

/* The long table: size word, functions at 1, 2 and 299, data at 3. */
static int
s_version(unsigned *v, char *buf, unsigned len)
{
	*v = 12;
	if (len < 16)
		return 7;
	strcpy(buf, "fake-nvml 12.0");
	return 0;
}

static long s_add(long a, long b) { return a + b; }
static int s_last(void) { return 299; }

static void *table_long[300];
static void *table_endless[1100];

static const uint8_t uuid_long[16] = { 0xf0, 0x0d, 0x01, 0x02, 0x03, 0x04,
    0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e };
static const uint8_t uuid_endless[16] = { 0xf0, 0x0d, 0xee };

F int
nvmlInternalGetExportTable(const void **pp, const uint8_t *id)
{
	int i;

	if (pp == NULL || id == NULL)
		return 2;
	table_long[0] = (void *)sizeof table_long;
	table_long[1] = (void *)s_version;
	table_long[2] = (void *)s_add;
	table_long[3] = (void *)0x1234;
	table_long[299] = (void *)s_last;
	for (i = 0; i < 1100; i++)
		table_endless[i] = (void *)s_add;
	if (memcmp(id, uuid_long, 16) == 0)
		*pp = table_long;
	else if (memcmp(id, uuid_endless, 16) == 0)
		*pp = table_endless;
	else {
		*pp = NULL;
		return 3;	/* NVML_ERROR_NOT_SUPPORTED */
	}
	return 0;
}
