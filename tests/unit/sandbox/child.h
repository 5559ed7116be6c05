/* Helpers for sandbox unit tests: run a check in a forked child (hardening
 * is irreversible) and report the failing line back to cmocka. */
#pragma once

#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child: on failure print why and exit with the line number
 * (mod 256, never 0). */
#define CHILD_CHECK(cond)                                                             \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: child check failed: %s (errno %d: %s)\n", \
				__FILE__, __LINE__, #cond, errno, strerror(errno));   \
			_exit((__LINE__ % 254) + 1);                                  \
		}                                                                     \
	} while (0)

/* Exit code meaning "skip this test" (mechanism unavailable in the child). */
#define CHILD_SKIP 255

typedef void (*child_fn)(void *arg);

/* Fork, run fn(arg) in the child (which must _exit or return: return means
 * success), and return the child's wait status. */
static inline int run_child_status(child_fn fn, void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static inline void run_child(child_fn fn, void *arg)
{
	int st = run_child_status(fn, arg);
	if (WIFSIGNALED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_SKIP)
		skip();
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("child failed (exit %d), see stderr", WEXITSTATUS(st));
}

/* Become nobody (for the "degrade when not root" checks). */
static inline int drop_to_nobody(void)
{
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		return -1;
	if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
		return -1;
	return 0;
}
