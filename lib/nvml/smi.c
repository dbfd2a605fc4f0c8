/*
 * NVML's private table c4fe3e6c-c98f6c4e-a327ee69-6e12f7c4, which
 * nvidia-smi asks nvmlInternalGetExportTable for before anything else and
 * without which it stops ("Mismatch in versions between nvidia-smi and
 * NVML").  Its layout and the slots nvidia-smi calls are what tabletrace
 * saw of NVML 580 on an H100 (nvidia-smi, -q and --query-gpu):
 *	[26]	is given each line of the output: (error format, stream
 *		name, the line, ...).  It prints nothing: nvidia-smi prints
 *		its lines itself (an earlier reading printed them here, and
 *		every line came out twice), and the real NVML, called by
 *		nvml-check with a line of its own on the H100, printed none;
 *	[81]	(index, buffer, size): the GPU's PCI bus id, "0000:00:06.0";
 *	[213], [214], [215]
 *		(device, in: capacity, out: count, buffer, ...): the
 *		processes on the GPU, compute, graphics and MPS, as the
 *		listing's "No running processes found" reads them; none here,
 *		as a process of the server's host is nothing on this one.
 * Every other function word answers NVML_ERROR_NOT_SUPPORTED (what -q's
 * other slots met on the H100 where a feature was missing), and says its
 * word once with GLEAM_VERBOSE; words that held no function hold none.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gnvml.h"
#include "log.h"
#include "nvmlint.h"
#include "smislots.h"

static const unsigned char smi_uuid[16] = {
	0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
	0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4
};

static nvmlReturn_t
smi_refused(int word)
{
	static uint64_t said[(SMI_WORDS + 63) / 64];
	uint64_t bit = 1ull << (word % 64);

	if ((__atomic_fetch_or(&said[word / 64], bit, __ATOMIC_RELAXED) &
	    bit) == 0)
		log_info("NVML: nvidia-smi's table, word %d: not supported by "
		    "Gleam's NVML", word);
	return NVML_ERROR_NOT_SUPPORTED;
}

#define S(n)								\
	static nvmlReturn_t smi_##n(void) { return smi_refused(n); }
SMI_STUB_SLOTS
#undef S

/* [26]: a line of the output, which nvidia-smi prints itself. */
static nvmlReturn_t
smi_line(const char *errfmt, const char *stream, const char *line)
{
	(void)errfmt;
	(void)stream;
	return line == NULL ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

/* [81]: the bus id of the GPU of an index, as nvmlPciInfo_t's legacy one. */
static nvmlReturn_t
smi_bus_id(unsigned int i, char *buf, unsigned int len)
{
	nvmlDevice_t d;
	nvmlPciInfo_t p;
	nvmlReturn_t rc;

	if (buf == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvmlDeviceGetHandleByIndex_v2(i, &d)) != NVML_SUCCESS ||
	    (rc = nvmlDeviceGetPciInfo_v3(d, &p)) != NVML_SUCCESS)
		return rc;
	if (strlen(p.busIdLegacy) >= len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, p.busIdLegacy, strlen(p.busIdLegacy) + 1);
	return NVML_SUCCESS;
}

/* [213], [214], [215]: the GPU's processes of a kind: none here. */
static nvmlReturn_t
smi_processes(nvmlDevice_t d, unsigned int *count)
{
	unsigned int i;
	nvmlReturn_t rc;

	if (count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvmlDeviceGetIndex(d, &i)) != NVML_SUCCESS)
		return rc;
	*count = 0;
	return NVML_SUCCESS;
}

static const void *smi_table[SMI_WORDS] = {
	[0] = (const void *)(uintptr_t)(SMI_WORDS * sizeof(void *)),
	[26] = (const void *)smi_line,
	[81] = (const void *)smi_bus_id,
	[213] = (const void *)smi_processes,
	[214] = (const void *)smi_processes,
	[215] = (const void *)smi_processes,
#define S(n)	[n] = (const void *)smi_##n,
	SMI_STUB_SLOTS
#undef S
};

const void *
nv_smi_table(const unsigned char *uuid)
{
	return memcmp(uuid, smi_uuid, sizeof smi_uuid) == 0 ? smi_table :
	    NULL;
}
