/* strbuf: a growable byte buffer with an optional hard cap. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
	char *buf;   /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
	bool oom;    /* an allocation failed; content is incomplete */
} strbuf;

#define STRBUF_INIT {NULL, 0, 0, false}

bool strbuf_append(strbuf *sb, const void *data, size_t len);
bool strbuf_append_str(strbuf *sb, const char *s);
bool strbuf_appendf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the buffer over (never NULL unless oom); sb becomes empty. */
char *strbuf_steal(strbuf *sb, size_t *len);
void strbuf_free(strbuf *sb);
