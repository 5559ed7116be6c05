/* capture: bounded capture of a stream, optionally copied live to an fd
 * (the caller's terminal). The copy never blocks the supervisor: a
 * terminal or pipe that stops reading must not hold up the timeout, the
 * limits or the other stream. Bytes wait in a bounded queue and are written
 * only as much as the fd says it can take without blocking. */
#include "sandbox/capture.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PASS_QUEUE_MAX (8u << 20) /* beyond this, live output is dropped (still captured) */

void capture_init(capture *c, size_t limit, int passthrough)
{
	memset(c, 0, sizeof *c);
	c->limit = limit ? limit : 1024 * 1024;
	c->passthrough = passthrough;
	if (passthrough >= 0) {
		struct stat st;
		/* How much one write may carry without blocking once poll says
		 * POLLOUT: a pipe has a free page then; a terminal guarantees
		 * little (n_tty wakes writers at 256 bytes of room). */
		c->pass_sock = fstat(passthrough, &st) == 0 && S_ISSOCK(st.st_mode);
		c->pass_chunk = isatty(passthrough) ? 256 : 4096;
	}
}

static void queue(capture *c, const char *p, size_t n)
{
	if (c->pass_dropped || c->pend_len + n > PASS_QUEUE_MAX) {
		c->pass_dropped = true;
		return;
	}
	if (c->pend_off && c->pend_off == c->pend_len)
		c->pend_off = c->pend_len = 0;
	if (c->pend_len + n > c->pend_cap) {
		if (c->pend_off) { /* compact */
			memmove(c->pend, c->pend + c->pend_off, c->pend_len - c->pend_off);
			c->pend_len -= c->pend_off;
			c->pend_off = 0;
		}
		size_t ncap = c->pend_cap ? c->pend_cap : 65536;
		while (ncap < c->pend_len + n)
			ncap *= 2;
		if (ncap != c->pend_cap) {
			char *nb = realloc(c->pend, ncap);
			if (!nb) {
				c->pass_dropped = true;
				return;
			}
			c->pend = nb;
			c->pend_cap = ncap;
		}
	}
	memcpy(c->pend + c->pend_len, p, n);
	c->pend_len += n;
}

bool capture_pass_pending(const capture *c)
{
	return c->passthrough >= 0 && !c->pass_gone && c->pend_off < c->pend_len;
}

void capture_pass_flush(capture *c, int wait_ms)
{
	while (capture_pass_pending(c)) {
		struct pollfd pf = {.fd = c->passthrough, .events = POLLOUT};
		int pr = poll(&pf, 1, wait_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return; /* not writable now */
		if (pf.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			c->pass_gone = true; /* the terminal went away: keep capturing */
			return;
		}
		size_t n = c->pend_len - c->pend_off;
		if (n > c->pass_chunk)
			n = c->pass_chunk;
		ssize_t w = c->pass_sock ? send(c->passthrough, c->pend + c->pend_off, n, MSG_DONTWAIT | MSG_NOSIGNAL)
					 : write(c->passthrough, c->pend + c->pend_off, n);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			c->pass_gone = true;
			return;
		}
		c->pend_off += (size_t)w;
	}
}

bool capture_read(capture *c, int fd)
{
	return capture_read_some(c, fd, 16) > 0;
}

void capture_drain(capture *c, int fd)
{
	while (capture_read_some(c, fd, 16) == 1)
		;
}

int capture_read_some(capture *c, int fd, int rounds_max)
{
	char chunk[65536];
	for (int rounds = 0; rounds < rounds_max; rounds++) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 2 : 0;
		}
		if (n == 0)
			return 0;
		if (c->passthrough >= 0 && !c->pass_gone) {
			queue(c, chunk, (size_t)n);
			capture_pass_flush(c, 0);
		}
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
	return 1;
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
	free(c->pend);
	c->pend = NULL;
	c->pend_len = c->pend_off = c->pend_cap = 0;
	return b;
}
