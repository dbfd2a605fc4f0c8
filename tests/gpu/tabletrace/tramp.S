/*
 * The trampolines: one for each slot of each table (TT_NTABLES x
 * TT_NSLOTS), then one for each forwarder that TABLETRACE_CALLS logs
 * (TT_NCALLS).  Trampoline i (16 bytes each, from tt_tramp_base) puts i
 * in r11 and enters tt_common, which saves the argument registers (six
 * integer, rax, xmm0-7), lets tt_enter log them and name the real
 * function, copies TT_STACKW words of the caller's stack arguments,
 * calls the real function with every register as it came, saves its
 * results (rax, rdx, xmm0-1) for tt_leave to log, and returns them.
 */
#include "tabletrace.h"

	.text
	.globl	tt_tramp_base
	.hidden	tt_tramp_base
	.balign	16
tt_tramp_base:
	.set	i, 0
	.rept	TT_NTRAMP
	.balign	16
	movl	$i, %r11d
	jmp	tt_common
	.set	i, i + 1
	.endr

#define REG(off)	(TT_STACKW * 8 + (off))(%rsp)

	.balign	16
	.type	tt_common, @function
tt_common:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$TT_FRAME, %rsp
	movq	%rdi, REG(R_GP)
	movq	%rsi, REG(R_GP + 8)
	movq	%rdx, REG(R_GP + 16)
	movq	%rcx, REG(R_GP + 24)
	movq	%r8, REG(R_GP + 32)
	movq	%r9, REG(R_GP + 40)
	movq	%rax, REG(R_RAX)
	movq	%r11, REG(R_IDX)
	movq	8(%rbp), %rax
	movq	%rax, REG(R_RETADDR)
	movaps	%xmm0, REG(R_XMM)
	movaps	%xmm1, REG(R_XMM + 16)
	movaps	%xmm2, REG(R_XMM + 32)
	movaps	%xmm3, REG(R_XMM + 48)
	movaps	%xmm4, REG(R_XMM + 64)
	movaps	%xmm5, REG(R_XMM + 80)
	movaps	%xmm6, REG(R_XMM + 96)
	movaps	%xmm7, REG(R_XMM + 112)
	leaq	REG(0), %rdi
	call	tt_enter
	movq	%rax, REG(R_FN)
	/* The caller's stack arguments, if any, where the slot expects them. */
	.set	k, 0
	.rept	TT_STACKW
	movq	16 + 8 * k(%rbp), %rax
	movq	%rax, 8 * k(%rsp)
	.set	k, k + 1
	.endr
	movaps	REG(R_XMM), %xmm0
	movaps	REG(R_XMM + 16), %xmm1
	movaps	REG(R_XMM + 32), %xmm2
	movaps	REG(R_XMM + 48), %xmm3
	movaps	REG(R_XMM + 64), %xmm4
	movaps	REG(R_XMM + 80), %xmm5
	movaps	REG(R_XMM + 96), %xmm6
	movaps	REG(R_XMM + 112), %xmm7
	movq	REG(R_GP), %rdi
	movq	REG(R_GP + 8), %rsi
	movq	REG(R_GP + 16), %rdx
	movq	REG(R_GP + 24), %rcx
	movq	REG(R_GP + 32), %r8
	movq	REG(R_GP + 40), %r9
	movq	REG(R_FN), %r11
	movq	REG(R_RAX), %rax
	call	*%r11
	movq	%rax, REG(R_RET)
	movq	%rdx, REG(R_RET + 8)
	movaps	%xmm0, REG(R_XRET)
	movaps	%xmm1, REG(R_XRET + 16)
	leaq	REG(0), %rdi
	call	tt_leave
	movq	REG(R_RET), %rax
	movq	REG(R_RET + 8), %rdx
	movaps	REG(R_XRET), %xmm0
	movaps	REG(R_XRET + 16), %xmm1
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	tt_common, .-tt_common

	.section .note.GNU-stack,"",@progbits
