/* Shared helpers for the escape-suite attack programs.
 * Every attempt prints one line:
 *   BLOCKED name: reason     the attack step failed (good)
 *   ESCAPED name: detail     the attack step worked (a sandbox hole)
 * and every program ends with "PROBE-DONE" so the runner knows it ran to
 * the end. Programs exit 0 (so the transaction commits and the commit path
 * is exercised too); the runner reads the lines. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static int probe_escapes;

static void escaped(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void escaped(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("ESCAPED %s: ", name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	probe_escapes++;
}

static void blocked(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void blocked(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("BLOCKED %s: ", name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/* The call must fail (return < 0). Closes a returned fd. */
#define EXPECT_FAIL(name, call)                                                          \
	do {                                                                             \
		errno = 0;                                                               \
		long r_ = (long)(call);                                                  \
		if (r_ >= 0)                                                             \
			escaped(name, "returned %ld", r_);                               \
		else                                                                     \
			blocked(name, "%s", strerror(errno));                            \
	} while (0)

/* Like EXPECT_FAIL but the call returns an fd to close on success. */
#define EXPECT_FAIL_FD(name, call)                                                       \
	do {                                                                             \
		errno = 0;                                                               \
		long r_ = (long)(call);                                                  \
		if (r_ >= 0) {                                                           \
			escaped(name, "returned fd %ld", r_);                            \
			close((int)r_);                                                  \
		} else                                                                   \
			blocked(name, "%s", strerror(errno));                            \
	} while (0)

static int probe_done(void) __attribute__((unused));
static int probe_done(void)
{
	printf("PROBE-DONE\n");
	fflush(stdout);
	return 0;
}
