#include "util/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK 16384

struct arena_chunk {
	arena_chunk *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

void *arena_alloc(arena *a, size_t size)
{
	const size_t align = alignof(max_align_t);
	if (size > SIZE_MAX - align)
		return NULL;
	size = (size + align - 1) & ~(align - 1);
	arena_chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t cap = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = cap;
		if (cap == size && a->head) { /* a big one: keep filling the current chunk */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void *arena_calloc(arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arena_alloc(a, n * size);
}

char *arena_strdup(arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(a, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

void arena_free(arena *a)
{
	for (arena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}
