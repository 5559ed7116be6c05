#include "sandbox/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void capture_init(capture *c, size_t limit, int passthrough)
{
	memset(c, 0, sizeof *c);
	c->limit = limit ? limit : 1024 * 1024;
	c->passthrough = passthrough;
}

static void pass(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* the terminal went away: keep capturing */
		}
		p += w;
		n -= (size_t)w;
	}
}

bool capture_read(capture *c, int fd)
{
	char chunk[65536];
	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN;
		}
		if (n == 0)
			return false;
		if (c->passthrough >= 0)
			pass(c->passthrough, chunk, (size_t)n);
		size_t room = c->limit - c->len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		if (take < (size_t)n)
			c->truncated = true;
		if (take) {
			if (c->len + take + 1 > c->cap) {
				size_t ncap = c->cap ? c->cap : 4096;
				while (ncap < c->len + take + 1)
					ncap *= 2;
				if (ncap > c->limit + 1)
					ncap = c->limit + 1;
				char *nb = realloc(c->buf, ncap);
				if (!nb) {
					c->truncated = true;
					continue;
				}
				c->buf = nb;
				c->cap = ncap;
			}
			memcpy(c->buf + c->len, chunk, take);
			c->len += take;
		}
	}
	return true;
}

char *capture_take(capture *c, size_t *len, bool *truncated)
{
	if (!c->buf) {
		c->buf = calloc(1, 1);
		c->len = 0;
	} else
		c->buf[c->len] = '\0';
	char *b = c->buf;
	*len = c->len;
	*truncated = c->truncated;
	c->buf = NULL;
	return b;
}
