/*
 * Virtual memory management for clients (cuMemAddressReserve, cuMemCreate,
 * cuMemMap & co., gleam-protocol(5)'s R_VMM_*): a client reserves address
 * ranges, creates physical allocations it names by ids of its own choice,
 * and maps them into its ranges.  This file keeps the books per client and
 * checks every request against them, so that a client maps only its own
 * allocations into its own ranges; each backend supplies the primitives
 * (struct vmm_ops).  The mapped parts of each range are the client's
 * memory for copies and kernels (rmem_add, runs of adjacent mappings as
 * one range, which cuMemFree does not free).  Everything still held goes
 * when the client does (vmm_drop).
 */
#ifndef SERVE_VMM_H
#define SERVE_VMM_H

#include <stdint.h>

#include "backend.h"

/* A CUmemAllocationProp, as R_VMM_CREATE carries it. */
struct vmm_prop {
	uint32_t	 type, loctype;
	int32_t		 locid;
	uint32_t	 htypes, compression, rdma, usage;
};

/* A CUmemAccessDesc. */
struct vmm_access {
	uint32_t	 type;
	int32_t		 id;
	uint32_t	 flags;
};

/* The primitives, each returning a CUresult (the driver's). */
struct vmm_ops {
	int	(*reserve)(uint64_t size, uint64_t align, uint64_t hint,
		    uint64_t flags, uint64_t *va);
	int	(*free)(uint64_t va, uint64_t size);
	int	(*create)(uint64_t size, const struct vmm_prop *, void **h);
	void	(*release)(void *h, uint64_t size);
	int	(*map)(uint64_t va, uint64_t size, uint64_t offset, void *h);
	int	(*unmap)(uint64_t va, uint64_t size);
	int	(*set_access)(uint64_t va, uint64_t size,
		    const struct vmm_access *, size_t n);
	/* NULL: the flags last set on the mapping at va are the answer. */
	int	(*get_access)(const struct vmm_access *where, uint64_t va,
		    uint64_t *flags);
};

/* An R_VMM_* call of c's client (its context checked by the caller). */
int	vmm_call(struct rcall *, const struct vmm_ops *);
/*
 * The backend's handle of the client's allocation id (R_VMM_CREATE's),
 * with its size; NULL if the client has none such.
 */
void	*vmm_handle(struct rclient *, uint64_t id, uint64_t *size);
/* 1 if the client holds no reservation, allocation or mapping. */
int	vmm_empty(const struct rclient *);
/* Unmaps, releases and frees everything the client still holds. */
void	vmm_drop(struct rclient *, const struct vmm_ops *);

#endif
