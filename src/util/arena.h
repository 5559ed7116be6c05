#pragma once
/* arena: a bump allocator for objects that live and die together (a
 * loaded policy: hundreds of small strings and arrays). One free for all,
 * no per-object malloc/free. Allocation failure returns NULL. */
#include <stddef.h>

typedef struct arena_chunk arena_chunk;
typedef struct arena {
	arena_chunk *head;
} arena;

void *arena_alloc(arena *a, size_t size);               /* zeroed, aligned for any type */
void *arena_calloc(arena *a, size_t n, size_t size);     /* zeroed; NULL on overflow */
char *arena_strdup(arena *a, const char *s);
void arena_free(arena *a);                               /* everything; the arena is reusable */
