/*
 * User objects: a destructor the program gives, run once the last
 * reference to its object goes.  The references the program holds are
 * counted here; those graphs hold (and their execs and clones) are the
 * server's: the server's object holds one reference for the program's
 * share, dropped when the count here reaches 0, and graphs' references
 * are its driver's.  When the server's object goes, its id comes in a
 * MSG_HOST notice (tagged UOBJ_NOTICE, gleam-protocol(5)) and the
 * destructor runs on the host functions' thread (hostcb.c), as the
 * driver runs it on a thread of its own.
 *
 * An object's id is its number in a table kept as long as the process,
 * so that a notice names an object without naming a pointer.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "client.h"
#include "graph.h"
#include "io.h"
#include "log.h"
#include "proto.h"

struct guobj {
	struct gobj	 o;
	uint64_t	 id;
	CUhostFn	 destroy;
	void		*ptr;
	unsigned long	 refs;		/* the program's */
};

static pthread_mutex_t	 uobj_lock = PTHREAD_MUTEX_INITIALIZER;
static struct guobj	**uobj_tab;	/* id - 1 indexes it */
static size_t		 uobj_n, uobj_cap;

CUresult
cuUserObjectCreate(CUuserObject *pu, void *ptr, CUhostFn destroy,
    unsigned int refs, unsigned int flags)
{
	struct rpc_val in[1];
	struct guobj *u, **t;
	CUresult rc;

	if (pu == NULL || destroy == NULL || refs == 0 || refs > INT_MAX ||
	    flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((u = calloc(1, sizeof *u)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	u->o.kind = GK_UOBJ;
	u->destroy = destroy;
	u->ptr = ptr;
	u->refs = refs;
	pthread_mutex_lock(&uobj_lock);
	if (uobj_n == uobj_cap) {
		size_t ncap = uobj_cap ? uobj_cap * 2 : 16;

		if ((t = realloc(uobj_tab, ncap * sizeof *t)) == NULL) {
			pthread_mutex_unlock(&uobj_lock);
			free(u);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		uobj_tab = t;
		uobj_cap = ncap;
	}
	uobj_tab[uobj_n] = u;
	u->id = ++uobj_n;
	pthread_mutex_unlock(&uobj_lock);
	/* Its notice's thread, before any notice can come. */
	if (hostcb_id(destroy, ptr) == 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	in[0].u = u->id;
	if ((rc = rpost(R_UOBJ_CREATE, in, 0)) != CUDA_SUCCESS)
		goto fail;
	gobj_publish(u);
	*pu = (CUuserObject)u;
	return CUDA_SUCCESS;
fail:
	pthread_mutex_lock(&uobj_lock);
	uobj_tab[u->id - 1] = NULL;
	pthread_mutex_unlock(&uobj_lock);
	free(u);
	return rc;
}

/* The program's references to u lose n; at 0 the server's share goes. */
static CUresult
uobj_drop(struct guobj *u, unsigned n)
{
	struct rpc_val in[1];
	int last;

	pthread_mutex_lock(&uobj_lock);
	if (u->refs < n) {
		pthread_mutex_unlock(&uobj_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	u->refs -= n;
	last = u->refs == 0;
	pthread_mutex_unlock(&uobj_lock);
	if (!last)
		return CUDA_SUCCESS;
	in[0].u = u->id;
	return rpost(R_UOBJ_RELEASE, in, 0);
}

/* A handle of the program's that still holds references, else NULL. */
static struct guobj *
uobj_of(CUuserObject h)
{
	struct guobj *u = gobj_check(h, GK_UOBJ);
	unsigned long refs;

	if (u == NULL)
		return NULL;
	pthread_mutex_lock(&uobj_lock);
	refs = u->refs;
	pthread_mutex_unlock(&uobj_lock);
	return refs > 0 ? u : NULL;
}

CUresult
cuUserObjectRetain(CUuserObject h, unsigned int n)
{
	struct guobj *u = uobj_of(h);

	if (u == NULL || n == 0 || n > INT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&uobj_lock);
	u->refs += n;
	pthread_mutex_unlock(&uobj_lock);
	return CUDA_SUCCESS;
}

CUresult
cuUserObjectRelease(CUuserObject h, unsigned int n)
{
	struct guobj *u = uobj_of(h);

	if (u == NULL || n == 0 || n > INT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return uobj_drop(u, n);
}

/* A graph's references: retained (new, or moved from the program's). */
CUresult
cuGraphRetainUserObject(CUgraph hg, CUuserObject h, unsigned int n,
    unsigned int flags)
{
	struct ggraph *g = gobj_check(hg, GK_GRAPH);
	struct guobj *u = uobj_of(h);
	struct rpc_val in[4], out[1];
	void *keep;
	CUresult rc;

	if (g == NULL || u == NULL || n == 0 || n > INT_MAX ||
	    (flags & ~(unsigned)CU_GRAPH_USER_OBJECT_MOVE) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(g);
	in[1].u = u->id;
	in[2].u = n;
	in[3].u = 1;
	rc = remote_call(R_GRAPH_UOBJ, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS && (flags & CU_GRAPH_USER_OBJECT_MOVE))
		rc = uobj_drop(u, n);
	return rc;
}

CUresult
cuGraphReleaseUserObject(CUgraph hg, CUuserObject h, unsigned int n)
{
	struct ggraph *g = gobj_check(hg, GK_GRAPH);
	struct guobj *u = gobj_check(h, GK_UOBJ);
	struct rpc_val in[4], out[1];
	void *keep;
	CUresult rc;

	/* The program may hold none: the graph's are released. */
	if (g == NULL || u == NULL || n == 0 || n > INT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(g);
	in[1].u = u->id;
	in[2].u = n;
	in[3].u = 0;
	rc = remote_call(R_GRAPH_UOBJ, in, out, &keep);
	free(keep);
	return rc;
}

/*
 * The server's object id went (hostcb.c's thread): its destructor runs,
 * and its handle with it.
 */
void
uobj_gone(uint64_t id)
{
	struct guobj *u = NULL;

	pthread_mutex_lock(&uobj_lock);
	if (id >= 1 && id <= uobj_n) {
		u = uobj_tab[id - 1];
		uobj_tab[id - 1] = NULL;
	}
	pthread_mutex_unlock(&uobj_lock);
	if (u == NULL) {
		log_warn("server %s: a user object this process never made "
		    "(%llu), or one already gone", io_peer(),
		    (unsigned long long)id);
		return;
	}
	u->destroy(u->ptr);
	u->o.magic = 0;
	free(u);
}
