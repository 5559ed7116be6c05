/* capture: bounded capture of a stream, optionally copied live to an fd
 * without ever blocking on it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Escape-sequence filter for a live copy to a terminal: plain text, \t \n
 * \r \b and SGR colours (CSI digits/;/: m) pass; every other control,
 * ESC/CSI sequence and string (OSC, DCS, APC, PM, SOS) is dropped, also
 * when split across reads. The terminal is outside the sandbox: OSC 52
 * writes the clipboard, report requests type answers into the shell. */
typedef enum term_state {
	TERM_GROUND,
	TERM_ESC,       /* after ESC */
	TERM_ESC_INTER, /* ESC, intermediates: until a final byte */
	TERM_CSI,       /* ESC [ parameters */
	TERM_STRING,    /* OSC/DCS/APC/PM/SOS body: until BEL or ST */
	TERM_STRING_ESC,
} term_state;

typedef struct term_filter {
	term_state state;
	unsigned utf8_left;  /* continuation bytes still expected */
	bool utf8_c2;        /* the lead was 0xC2: U+0080..U+009F are C1 controls */
	bool csi_ok;         /* parameters so far fit an SGR sequence */
	size_t csi_len;
	char csi[32];
} term_filter;

/* Filter n bytes of in into out (room for n + sizeof csi + 3 bytes: a
 * sequence held back from earlier calls); returns
 * the bytes written. */
size_t term_filter_run(term_filter *f, const char *in, size_t n, char *out);

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
	bool pass_tty;      /* the fd is a terminal: the live copy is filtered */
	term_filter term;
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
