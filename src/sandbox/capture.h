/* capture: bounded capture of a stream, optionally copied live to an fd
 * without ever blocking on it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct capture {
	char *buf;
	size_t len, cap, limit;
	bool truncated;
	int passthrough;    /* fd or -1 */
	int pass_own;       /* our own non-blocking description of it, or -1 */
	char *pend;         /* live copy not yet written */
	size_t pend_off, pend_len, pend_cap;
	size_t pass_chunk;  /* bytes one write may carry when the fd polls writable */
	bool pass_sock;     /* the fd is a socket: send(MSG_DONTWAIT) */
	bool pass_gone;     /* the fd failed: no more live copy */
	bool pass_dropped;  /* the queue overflowed: live copy stopped (capture goes on) */
} capture;

void capture_init(capture *c, size_t limit, int passthrough);
/* Read what is available from fd; returns false at EOF or error. Bytes past
 * the limit are discarded (and flagged) but still passed through. */
bool capture_read(capture *c, int fd);
/* One batch (at most rounds_max reads): 1 more may follow, 2 none waiting
 * now (EAGAIN), 0 EOF or error. */
int capture_read_some(capture *c, int fd, int rounds_max);
/* What is in the pipe now, never waiting for its end (a writer may live on
 * only as a descriptor in flight, which never closes). */
void capture_drain(capture *c, int fd);
/* Live copy still waiting for the fd to take it? */
bool capture_pass_pending(const capture *c);
/* Write waiting live copy while the fd takes it without blocking, waiting
 * at most wait_ms for it to become writable each time. */
void capture_pass_flush(capture *c, int wait_ms);
/* Hand the buffer over (NUL-terminated, never NULL unless out of memory). */
char *capture_take(capture *c, size_t *len, bool *truncated);
