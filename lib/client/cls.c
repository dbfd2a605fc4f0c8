/*
 * Context-local storage.  A list, newest first, behind one mutex: cudart
 * keeps a few keys per context and instance, so a walk is short, and the
 * order is the one destructors must run in.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cls.h"

#define CLS_OK		0	/* CUDA_SUCCESS */
#define CLS_NO_KEY	400	/* CUDA_ERROR_INVALID_HANDLE */
#define CLS_NO_MEMORY	2	/* CUDA_ERROR_OUT_OF_MEMORY */

struct cls_entry {
	struct cls_entry	*next;
	struct CUctx_st		*ctx;
	void			*key;
	void			*val;
	cls_dtor		 dtor;
};

static struct cls_entry	*cls_head;
static pthread_mutex_t	 cls_lock = PTHREAD_MUTEX_INITIALIZER;

/* The link that points at (ctx, key)'s entry, or at the final NULL. */
static struct cls_entry **
cls_find(struct CUctx_st *ctx, void *key)
{
	struct cls_entry **pp;

	for (pp = &cls_head; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->ctx == ctx && (*pp)->key == key)
			break;
	return pp;
}

int
cls_put(struct CUctx_st *ctx, void *key, void *val, cls_dtor dtor)
{
	struct cls_entry *e;
	int rc = CLS_OK;

	if ((e = malloc(sizeof *e)) == NULL)
		return CLS_NO_MEMORY;
	e->ctx = ctx;
	e->key = key;
	e->val = val;
	e->dtor = dtor;
	pthread_mutex_lock(&cls_lock);
	if (*cls_find(ctx, key) != NULL)
		rc = CLS_NO_KEY;
	else {
		e->next = cls_head;
		cls_head = e;
		e = NULL;
	}
	pthread_mutex_unlock(&cls_lock);
	free(e);
	return rc;
}

int
cls_del(struct CUctx_st *ctx, void *key)
{
	struct cls_entry **pp, *e;

	pthread_mutex_lock(&cls_lock);
	pp = cls_find(ctx, key);
	if ((e = *pp) != NULL)
		*pp = e->next;
	pthread_mutex_unlock(&cls_lock);
	if (e == NULL)
		return CLS_NO_KEY;
	free(e);
	return CLS_OK;
}

int
cls_get(struct CUctx_st *ctx, void *key, void **val)
{
	struct cls_entry *e;

	pthread_mutex_lock(&cls_lock);
	if ((e = *cls_find(ctx, key)) != NULL)
		*val = e->val;
	pthread_mutex_unlock(&cls_lock);
	return e != NULL ? CLS_OK : CLS_NO_KEY;
}

/*
 * Unlink the context's entries first and call the destructors without the
 * lock held, since a destructor may well use the table again.
 */
void
cls_destroy(struct CUctx_st *ctx)
{
	struct cls_entry **pp, *e, *gone = NULL, **tail = &gone;

	pthread_mutex_lock(&cls_lock);
	for (pp = &cls_head; (e = *pp) != NULL; ) {
		if (e->ctx != ctx) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		*tail = e;
		tail = &e->next;
	}
	pthread_mutex_unlock(&cls_lock);
	while ((e = gone) != NULL) {
		gone = e->next;
		if (e->dtor != NULL)
			e->dtor(ctx, e->key, e->val);
		free(e);
	}
}
