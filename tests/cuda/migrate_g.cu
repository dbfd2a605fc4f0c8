// migrate_g: migrate.cu with a __device__ global (see there).
#define MIGRATE_GLOBALS 1
#include "migrate.cu"
