/* What the client library's own modules share. */
#ifndef GLEAM_CLIENT_CLIENT_H
#define GLEAM_CLIENT_CLIENT_H

/* CUDA_SUCCESS once cuInit(0) has succeeded, else why it has not. */
CUresult	 client_initialized(void);

#endif
