/* capture: bounded capture of a stream, optionally copied live to an fd
 * (the caller's terminal). The copy never blocks the supervisor: a
 * terminal or pipe that stops reading must not hold up the timeout, the
 * limits or the other stream. Bytes wait in a bounded queue and are written
 * only as much as the fd says it can take without blocking. */
#include "sandbox/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
	c->pass_own = -1;
	if (passthrough >= 0) {
		struct stat st;
		c->pass_sock = fstat(passthrough, &st) == 0 && S_ISSOCK(st.st_mode);
		c->pass_chunk = 4096;
		/* A terminal or a pipe: write through a description of our own
		 * opened non-blocking (the caller's, shared with its shell, keeps
		 * its flags), so a write never sleeps whatever room poll saw.
		 * Sockets get send(MSG_DONTWAIT); regular files do not block. */
		/* (never a pty master: reopening /dev/ptmx makes a new pty) */
		bool master = S_ISCHR(st.st_mode) && isatty(passthrough) && ptsname(passthrough) != NULL;
		if (!c->pass_sock && !master && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
			char path[40];
			snprintf(path, sizeof path, "/proc/self/fd/%d", passthrough);
			c->pass_own = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		}
		if (c->pass_own < 0 && S_ISCHR(st.st_mode) && isatty(passthrough))
			c->pass_chunk = 256; /* no own description (another user's tty): n_tty's wake-up room */
		c->pass_tty = S_ISCHR(st.st_mode) && isatty(passthrough);
	}
}

static bool is_string_intro(unsigned char b)
{
	return b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X';
}

/* Text, or a C0/C1 control to drop. UTF-8 is passed whole except the
 * encodings of C1 controls (C2 80..C2 9F); a stray byte 0x80..0x9F is a C1
 * control to an 8-bit terminal and is dropped. */
static size_t ground_byte(term_filter *f, unsigned char b, char *out)
{
	if (f->utf8_left) {
		if (b >= 0x80 && b < 0xc0) {
			f->utf8_left--;
			if (f->utf8_c2) {
				f->utf8_c2 = false;
				if (b < 0xa0)
					return 0; /* C1 control: the lead was held back, drop both */
				out[0] = (char)0xc2;
				out[1] = (char)b;
				return 2;
			}
			out[0] = (char)b;
			return 1;
		}
		f->utf8_left = 0; /* broken sequence: judge this byte afresh */
		f->utf8_c2 = false;
	}
	if (b == 0x1b) {
		f->state = TERM_ESC;
		return 0;
	}
	if (b >= 0xc2 && b < 0xf5) {
		f->utf8_left = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
		f->utf8_c2 = b == 0xc2;
		if (f->utf8_c2)
			return 0; /* held back until its continuation says what it is */
		out[0] = (char)b;
		return 1;
	}
	bool text = (b >= 0x20 && b < 0x7f) || b == '\t' || b == '\n' || b == '\r' || b == '\b';
	if (!text)
		return 0;
	out[0] = (char)b;
	return 1;
}

static size_t csi_byte(term_filter *f, unsigned char b, char *out)
{
	if (b >= 0x40 && b <= 0x7e) { /* final byte */
		f->state = TERM_GROUND;
		if (b != 'm' || !f->csi_ok)
			return 0;
		out[0] = 0x1b;
		out[1] = '[';
		memcpy(out + 2, f->csi, f->csi_len);
		out[2 + f->csi_len] = 'm';
		return f->csi_len + 3;
	}
	if (b >= 0x20 && b <= 0x3f) {
		bool sgr = (b >= '0' && b <= '9') || b == ';' || b == ':';
		if (!sgr || f->csi_len == sizeof f->csi)
			f->csi_ok = false;
		else
			f->csi[f->csi_len++] = (char)b;
		return 0;
	}
	f->state = b == 0x1b ? TERM_ESC : TERM_GROUND; /* anything else aborts it */
	return 0;
}

static size_t esc_byte(term_filter *f, unsigned char b)
{
	if (b == '[') {
		f->state = TERM_CSI;
		f->csi_len = 0;
		f->csi_ok = true;
	} else if (is_string_intro(b))
		f->state = TERM_STRING;
	else if (b >= 0x20 && b <= 0x2f)
		f->state = TERM_ESC_INTER;
	else if (b != 0x1b)
		f->state = TERM_GROUND; /* a final byte (dropped with its ESC), or an abort */
	return 0;
}

static size_t term_byte(term_filter *f, unsigned char b, char *out)
{
	switch (f->state) {
	case TERM_GROUND:
		return ground_byte(f, b, out);
	case TERM_ESC:
		return esc_byte(f, b);
	case TERM_ESC_INTER:
		if (b < 0x20 || b > 0x2f)
			f->state = b == 0x1b ? TERM_ESC : TERM_GROUND;
		return 0;
	case TERM_CSI:
		return csi_byte(f, b, out);
	case TERM_STRING:
		if (b == 0x07 || b == 0x18 || b == 0x1a)
			f->state = TERM_GROUND;
		else if (b == 0x1b)
			f->state = TERM_STRING_ESC;
		return 0;
	case TERM_STRING_ESC:
		if (b == '\\') {
			f->state = TERM_GROUND;
			return 0;
		}
		return esc_byte(f, b); /* ESC ends the string and starts a sequence */
	}
	return 0;
}

size_t term_filter_run(term_filter *f, const char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		o += term_byte(f, (unsigned char)in[i], out + o);
	return o;
}

static void queue(capture *c, const char *p, size_t n)
{
	if (c->pend_off && c->pend_off == c->pend_len)
		c->pend_off = c->pend_len = 0;
	if (c->pass_dropped || c->pend_len - c->pend_off + n > PASS_QUEUE_MAX) {
		c->pass_dropped = true; /* the reader fell 8 MiB behind: stop the live copy */
		return;
	}
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
		ssize_t w = c->pass_sock   ? send(c->passthrough, c->pend + c->pend_off, n, MSG_DONTWAIT | MSG_NOSIGNAL)
			    : c->pass_own >= 0 ? write(c->pass_own, c->pend + c->pend_off, n)
					       : write(c->passthrough, c->pend + c->pend_off, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return; /* full after all: wait for the next POLLOUT */
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
			if (c->pass_tty) {
				char safe[sizeof chunk + sizeof c->term.csi + 3];
				queue(c, safe, term_filter_run(&c->term, chunk, (size_t)n, safe));
			} else
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
	if (c->pass_own >= 0)
		close(c->pass_own);
	c->pass_own = -1;
	free(c->pend);
	c->pend = NULL;
	c->pend_len = c->pend_off = c->pend_cap = 0;
	return b;
}
