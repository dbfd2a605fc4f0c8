/*
 * Unit tests for the client library's context-local storage
 * (lib/client/cls.c), with the semantics dark-api.md §2.2 measured on the
 * real driver: duplicate keys refused, delete without destructor,
 * destructors most recent first when a context is destroyed.
 */
#include <stdint.h>

#include "../../lib/client/cls.c"
#include "t.h"

#define CTX(n)	((struct CUctx_st *)(uintptr_t)(0x1000 * (n)))
#define KEY(n)	((void *)(uintptr_t)(0x10 * (n)))
#define VAL(n)	((void *)(uintptr_t)(0x100 * (n)))

static uintptr_t	 order[16];
static int		 norder;

/* Record which value was destroyed; check the context and key it got. */
static void
dtor(struct CUctx_st *ctx, void *key, void *val)
{
	void *v;

	if (norder < 16)
		order[norder++] = (uintptr_t)val;
	CHECK((uintptr_t)val / 0x100 == (uintptr_t)key / 0x10);
	/* A destructor may use the table: its own entry is gone. */
	CHECK(cls_get(ctx, key, &v) == 400);
}

static void
test_map(void)
{
	void *v;

	CHECK(cls_get(CTX(1), KEY(1), &v) == 400);
	CHECK(cls_put(CTX(1), KEY(1), VAL(1), dtor) == 0);
	CHECK(cls_put(CTX(1), KEY(1), VAL(9), dtor) == 400);
	CHECK(cls_get(CTX(1), KEY(1), &v) == 0 && v == VAL(1));
	CHECK(cls_get(CTX(2), KEY(1), &v) == 400);
	CHECK(cls_put(CTX(2), KEY(1), VAL(1), dtor) == 0);
	CHECK(cls_del(CTX(1), KEY(1)) == 0);
	CHECK(cls_del(CTX(1), KEY(1)) == 400);
	CHECK(cls_get(CTX(1), KEY(1), &v) == 400);
	CHECK(cls_get(CTX(2), KEY(1), &v) == 0 && v == VAL(1));
	CHECK(norder == 0);	/* delete runs no destructor */
	CHECK(cls_del(CTX(2), KEY(1)) == 0);
}

static void
test_destroy(void)
{
	void *v;
	int i;

	for (i = 1; i <= 4; i++)
		CHECK(cls_put(CTX(3), KEY(i), VAL(i), dtor) == 0);
	CHECK(cls_put(CTX(4), KEY(5), VAL(5), dtor) == 0);
	CHECK(cls_put(CTX(3), KEY(6), VAL(6), NULL) == 0);
	CHECK(cls_del(CTX(3), KEY(2)) == 0);

	cls_destroy(CTX(3));
	CHECK(norder == 3);
	CHECK(order[0] == (uintptr_t)VAL(4));
	CHECK(order[1] == (uintptr_t)VAL(3));
	CHECK(order[2] == (uintptr_t)VAL(1));
	for (i = 1; i <= 6; i++)
		CHECK(cls_get(CTX(3), KEY(i), &v) == 400);
	CHECK(cls_get(CTX(4), KEY(5), &v) == 0 && v == VAL(5));

	/* A context made again starts empty; destroying twice is harmless. */
	CHECK(cls_put(CTX(3), KEY(1), VAL(1), dtor) == 0);
	cls_destroy(CTX(3));
	cls_destroy(CTX(3));
	CHECK(norder == 4 && order[3] == (uintptr_t)VAL(1));
	cls_destroy(CTX(4));
	CHECK(norder == 5 && order[4] == (uintptr_t)VAL(5));
}

int
main(void)
{
	test_map();
	test_destroy();
	return t_done("client_cls");
}
