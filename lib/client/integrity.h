/*
 * The hash behind the INTEGRITY_CHECK export table (dark-api.md §3):
 * HMAC-MD2 over the process's view of the driver.  Pure computation, so
 * that tests can feed it the document's vectors.
 */
#ifndef GLEAM_CLIENT_INTEGRITY_H
#define GLEAM_CLIENT_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

struct integrity_dev {
	uint8_t		 uuid[16];	/* cuDeviceGetUuid */
	int32_t		 pci_domain;	/* attribute 50 */
	int32_t		 pci_bus;	/* attribute 33 */
	int32_t		 pci_device;	/* attribute 34 */
};

struct integrity_in {
	uint32_t	 driver_version;	/* cuDriverGetVersion's */
	uint32_t	 version;	/* the slot's argument 1 */
	uint32_t	 pid;
	uint32_t	 tid;		/* caller's pthread_self, low 32 */
	uint64_t	 cudart_table;	/* the 6bd5fb6c table's address */
	uint64_t	 integrity_table; /* the d4082055 table's address */
	uint64_t	 slot1;		/* the d4082055 table's word 1 */
	uint64_t	 unix_seconds;	/* the slot's argument 2 */
	const struct integrity_dev *devs;
	size_t		 ndevs;
};

void	 integrity_md2(const void *, size_t, uint8_t [16]);
void	 integrity_hmac_md2(const uint8_t [16], const void *, size_t,
	    uint8_t [16]);
void	 integrity_hash(const struct integrity_in *, uint64_t [2]);

#endif
