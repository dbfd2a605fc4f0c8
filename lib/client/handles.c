/*
 * Handles: the program's contexts, modules, functions, streams and events
 * are client structs whose address is the handle (client.h), checked by
 * a magic number and kind before any use.
 */
#include <stdint.h>

#include "client.h"

void *
gobj_check(const void *h, int kind)
{
	const struct gobj *o = h;

	if (o == NULL || (uintptr_t)o < 4096 || ((uintptr_t)o & 7) != 0)
		return NULL;
	/* Acquire: pairs with gobj_publish, wherever the handle travelled. */
	if (__atomic_load_n(&o->magic, __ATOMIC_ACQUIRE) != GOBJ_MAGIC ||
	    (int)o->kind != kind)
		return NULL;
	return (void *)(uintptr_t)o;
}

void
gobj_publish(void *h)
{
	__atomic_store_n(&((struct gobj *)h)->magic, GOBJ_MAGIC,
	    __ATOMIC_RELEASE);
}

uint64_t
gobj_id(const void *h)
{
	return (uint64_t)(uintptr_t)h;
}
