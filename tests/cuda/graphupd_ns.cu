// graphupd_ns: graphupd with -ns (one stream, the nodes never listed:
// llama.cpp's way), for tests/gpu/run, which runs programs without
// arguments.
#define GRAPHUPD_NS
#include "graphupd.cu"
