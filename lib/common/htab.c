/* Open-addressing hash table of u64 keys. */
#include <stdlib.h>
#include <string.h>

#include "htab.h"

static size_t
htab_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (size_t)k;
}

void
htab_init(struct htab *t)
{
	memset(t, 0, sizeof *t);
}

void
htab_free(struct htab *t)
{
	free(t->e);
	memset(t, 0, sizeof *t);
}

static int
htab_grow(struct htab *t)
{
	struct hent *old = t->e;
	size_t i, oldcap = t->cap, cap = t->cap ? t->cap * 2 : 16;

	/* Mostly deleted slots: rehash at the same size. */
	if (t->n * 4 < oldcap)
		cap = oldcap;
	if ((t->e = calloc(cap, sizeof *t->e)) == NULL) {
		t->e = old;
		return -1;
	}
	t->cap = cap;
	t->n = t->used = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i].key != 0 && old[i].key != HTAB_DEAD)
			htab_put(t, old[i].key, old[i].val);
	free(old);
	return 0;
}

int
htab_put(struct htab *t, uint64_t key, void *val)
{
	size_t i, dead = SIZE_MAX;

	if (key == 0 || key == HTAB_DEAD)
		return -1;
	if ((t->used + 1) * 4 > t->cap * 3 && htab_grow(t) == -1)
		return -1;
	for (i = htab_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (t->e[i].key == key) {
			t->e[i].val = val;
			return 0;
		}
		if (t->e[i].key == HTAB_DEAD && dead == SIZE_MAX)
			dead = i;
		if (t->e[i].key == 0)
			break;
	}
	if (dead != SIZE_MAX)
		i = dead;
	else
		t->used++;
	t->e[i].key = key;
	t->e[i].val = val;
	t->n++;
	return 0;
}

static struct hent *
htab_find(const struct htab *t, uint64_t key)
{
	size_t i;

	if (t->cap == 0 || key == 0 || key == HTAB_DEAD)
		return NULL;
	for (i = htab_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (t->e[i].key == key)
			return &t->e[i];
		if (t->e[i].key == 0)
			return NULL;
	}
}

void *
htab_get(const struct htab *t, uint64_t key)
{
	struct hent *e = htab_find(t, key);

	return e != NULL ? e->val : NULL;
}

void *
htab_del(struct htab *t, uint64_t key)
{
	struct hent *e = htab_find(t, key);
	void *v;

	if (e == NULL)
		return NULL;
	v = e->val;
	e->key = HTAB_DEAD;
	e->val = NULL;
	t->n--;
	return v;
}

int
htab_next(const struct htab *t, size_t *i, uint64_t *key, void **val)
{
	for (; *i < t->cap; (*i)++) {
		if (t->e[*i].key != 0 && t->e[*i].key != HTAB_DEAD) {
			*key = t->e[*i].key;
			*val = t->e[*i].val;
			(*i)++;
			return 1;
		}
	}
	return 0;
}
