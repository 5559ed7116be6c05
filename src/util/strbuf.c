#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(strbuf *sb, size_t extra)
{
	if (sb->oom)
		return false;
	if (sb->len + extra + 1 <= sb->cap)
		return true;
	size_t ncap = sb->cap ? sb->cap : 64;
	while (ncap < sb->len + extra + 1) {
		if (ncap > ((size_t)-1) / 2) {
			sb->oom = true;
			return false;
		}
		ncap *= 2;
	}
	char *n = realloc(sb->buf, ncap);
	if (!n) {
		sb->oom = true;
		return false;
	}
	sb->buf = n;
	sb->cap = ncap;
	return true;
}

bool strbuf_append(strbuf *sb, const void *data, size_t len)
{
	if (!grow(sb, len))
		return false;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return true;
}

bool strbuf_append_str(strbuf *sb, const char *s)
{
	return strbuf_append(sb, s, strlen(s));
}

bool strbuf_appendf(strbuf *sb, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	if ((size_t)n < sizeof small)
		return strbuf_append(sb, small, (size_t)n);
	if (!grow(sb, (size_t)n))
		return false;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return true;
}

char *strbuf_steal(strbuf *sb, size_t *len)
{
	if (sb->oom) {
		strbuf_free(sb);
		return NULL;
	}
	if (!sb->buf && !grow(sb, 0))
		return NULL;
	if (sb->len == 0)
		sb->buf[0] = '\0';
	char *b = sb->buf;
	if (len)
		*len = sb->len;
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return b;
}

void strbuf_free(strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
}
