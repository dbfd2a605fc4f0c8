/* The scheduler's view: allocation, look-ups, resident models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

void
sched_init(struct sched *s)
{
	memset(s, 0, sizeof *s);
}

void
sched_free(struct sched *s)
{
	int i, j;

	for (i = 0; i < s->nservers; i++) {
		for (j = 0; j < s->servers[i].nmodels; j++)
			free(s->servers[i].models[j]);
		free(s->servers[i].models);
	}
	free(s->servers);
	free(s->clients);
	free(s->links);
	free(s->tasks);
	free(s->media);
	memset(s, 0, sizeof *s);
}

int
sched_server_find(const struct sched *s, const char *name)
{
	int i;

	for (i = 0; i < s->nservers; i++)
		if (strcmp(s->servers[i].name, name) == 0)
			return i;
	return -1;
}

int
sched_client_find(const struct sched *s, const char *name)
{
	int i;

	for (i = 0; i < s->nclients; i++)
		if (strcmp(s->clients[i].name, name) == 0)
			return i;
	return -1;
}

int
sched_task_find(const struct sched *s, const char *name)
{
	int i;

	for (i = 0; i < s->ntasks; i++)
		if (strcmp(s->tasks[i].name, name) == 0)
			return i;
	return -1;
}

int
sched_resident(const struct sched_server *sv, const char *model)
{
	int i;

	if (*model == '\0')
		return 0;
	for (i = 0; i < sv->nmodels; i++)
		if (strcmp(sv->models[i], model) == 0)
			return 1;
	return 0;
}

int
sched_model_add(struct sched_server *sv, const char *model)
{
	char **nm;

	if (sched_resident(sv, model))
		return 0;
	if (sv->nmodels == SCHED_MAX_MODELS)
		return -1;
	if ((nm = realloc(sv->models, (size_t)(sv->nmodels + 1) *
	    sizeof *nm)) == NULL)
		return -1;
	sv->models = nm;
	if ((nm[sv->nmodels] = strdup(model)) == NULL)
		return -1;
	sv->nmodels++;
	return 0;
}

void
sched_model_remove(struct sched_server *sv, const char *model)
{
	int i;

	for (i = 0; i < sv->nmodels; i++) {
		if (strcmp(sv->models[i], model) != 0)
			continue;
		free(sv->models[i]);
		sv->models[i] = sv->models[--sv->nmodels];
		return;
	}
}

int
sched_medium(struct sched *s, const char *name)
{
	char (*nm)[SCHED_NAME_MAX];
	int i;

	for (i = 0; i < s->nmedia; i++)
		if (strcmp(s->media[i], name) == 0)
			return i + 1;
	if ((nm = realloc(s->media, (size_t)(s->nmedia + 1) *
	    sizeof *nm)) == NULL)
		return -1;
	s->media = nm;
	snprintf(nm[s->nmedia], sizeof nm[0], "%s", name);
	return ++s->nmedia;
}
