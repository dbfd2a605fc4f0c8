/*
 * tabletrace: a libcuda.so.1 that forwards every call to the real driver
 * and traces the private export tables (cuGetExportTable).  Shared by
 * tabletrace.c and the assembly (tramp.S): the trampolines' frame.
 */
#ifndef TABLETRACE_H
#define TABLETRACE_H

#define TT_NTABLES	64	/* distinct UUIDs wrapped */
#define TT_NSLOTS	256	/* words a table may have */
#define TT_STACKW	16	/* words of stack arguments passed on */
#define TT_PEEK		32	/* bytes shown at a pointer argument */

/* struct tt_regs, as tramp.S addresses it. */
#define R_GP		0	/* rdi, rsi, rdx, rcx, r8, r9 */
#define R_RAX		48	/* al: vector registers of a variadic call */
#define R_IDX		56	/* table * TT_NSLOTS + slot */
#define R_FN		64	/* the real slot */
#define R_RETADDR	72	/* the caller's return address */
#define R_RET		80	/* rax, rdx after the call */
#define R_XMM		96	/* xmm0-7 before the call */
#define R_XRET		224	/* xmm0-1 after the call */
#define R_SEQ		256
#define R_SIZE		512	/* the rest: tabletrace.c's own */

#define TT_FRAME	(TT_STACKW * 8 + R_SIZE)

#ifndef __ASSEMBLER__
#include <stdint.h>

struct tt_regs {
	uint64_t	 gp[6];
	uint64_t	 rax;
	uint64_t	 idx;
	uint64_t	 fn;
	uint64_t	 retaddr;
	uint64_t	 ret[2];
	uint8_t		 xmm[8][16];
	uint8_t		 xret[2][16];
	uint64_t	 seq;
	uint32_t	 nbefore[6];	/* bytes read at gp[i] before */
	uint8_t		 before[6][TT_PEEK];
};

extern const int tt_nfwd;
extern void *tt_fwd[] __attribute__((visibility("hidden")));
extern const char *const tt_fwd_names[];
extern char tt_tramp_base[];

uint64_t	 tt_enter(struct tt_regs *);
void		 tt_leave(struct tt_regs *);
#endif

#endif
