/* capture: bounded capture of a stream, optionally copied live to an fd. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct capture {
	char *buf;
	size_t len, cap, limit;
	bool truncated;
	int passthrough; /* fd or -1 */
} capture;

void capture_init(capture *c, size_t limit, int passthrough);
/* Read what is available from fd; returns false at EOF or error. Bytes past
 * the limit are discarded (and flagged) but still passed through. */
bool capture_read(capture *c, int fd);
/* Hand the buffer over (NUL-terminated, never NULL unless out of memory). */
char *capture_take(capture *c, size_t *len, bool *truncated);
