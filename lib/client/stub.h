/*
 * The generated stubs (stubs.c): every exported entry point exists as a
 * weak function that logs its name once and fails with
 * CUDA_ERROR_NOT_SUPPORTED.  To implement one, define it with the same
 * name and signature in a hand-written file of lib/client; being strong,
 * that definition replaces the stub in the library, in dlsym and in the
 * cuGetProcAddress table, and no generated file changes.  A driver
 * function that is not in the table yet goes into entry-points.extra,
 * then "make client-gen" adds it and all its ABI variants.
 */
#ifndef GLEAM_CLIENT_STUB_H
#define GLEAM_CLIENT_STUB_H

#define STUB	__attribute__((weak))

CUresult	 stub_unsupported(const char *, int);

extern const int stub_count;
extern int stub_said[];

#endif
