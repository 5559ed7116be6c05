/* Helpers shared by the shell parser unit tests. */
#pragma once

#include "shell/shell.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* Analyse text; fails the test on error. Caller frees with shell_analysis_free. */
static inline shell_analysis analyze_ok(const char *text)
{
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	int rc = shell_analyze(text, strlen(text), NULL, &a, &err);
	if (rc != 0)
		fail_msg("shell_analyze(%s) failed: %d %s", text, rc, err.message ? err.message : "");
	txbox_error_clear(&err);
	return a;
}

/* Analyse text expecting an error; returns the code and copies the message. */
static inline int analyze_err(const char *text, char *msg, size_t msglen)
{
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	int rc = shell_analyze(text, strlen(text), NULL, &a, &err);
	if (rc == 0) {
		shell_analysis_free(&a);
		fail_msg("shell_analyze(%s) unexpectedly succeeded", text);
	}
	assert_non_null(err.message);
	if (msg)
		snprintf(msg, msglen, "%s", err.message);
	txbox_error_clear(&err);
	return rc;
}

/* argv joined with single spaces (static buffer). */
static inline const char *joined(const shell_cmd *c)
{
	static char buf[4096];
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < c->argc; i++)
		n += (size_t)snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0, "%s%s",
				      i ? " " : "", c->argv[i]);
	return buf;
}

/* First command whose joined argv equals j (and whose via equals via, if
 * via is not "*"; via NULL means top level). */
static inline const shell_cmd *find_cmd_via(const shell_analysis *a, const char *j,
					    const char *via)
{
	for (size_t i = 0; i < a->ncmds; i++) {
		const shell_cmd *c = &a->cmds[i];
		if (strcmp(joined(c), j) != 0)
			continue;
		if (via && strcmp(via, "*") == 0)
			return c;
		if (!via && !c->via)
			return c;
		if (via && c->via && strcmp(via, c->via) == 0)
			return c;
	}
	return NULL;
}

static inline const shell_cmd *find_cmd(const shell_analysis *a, const char *j)
{
	return find_cmd_via(a, j, "*");
}

/* Like find_cmd_via but fails the test when there is none. */
__attribute__((returns_nonnull)) static inline const shell_cmd *
get_cmd_via(const shell_analysis *a, const char *j, const char *via)
{
	const shell_cmd *c = find_cmd_via(a, j, via);
	if (!c) {
		fail_msg("no command '%s' via %s", j, via ? via : "(top)");
		abort(); /* not reached */
	}
	return c;
}

#define get_cmd(a, j) get_cmd_via((a), (j), "*")

static inline const char *via_name(const char *via)
{
	return via ? via : "(top)";
}

static inline void dump(const shell_analysis *a)
{
	for (size_t i = 0; i < a->ncmds; i++) {
		const shell_cmd *c = &a->cmds[i];
		print_message("  [%s d%u]%s %s%s%s\n", c->via ? c->via : "-", c->depth,
			      c->unresolved ? " UNRES" : "", joined(c),
			      c->unresolved_reason ? " -- " : "",
			      c->unresolved_reason ? c->unresolved_reason : "");
	}
}

/* Assert text yields a command j reached via via. */
#define assert_cmd(a, j, via)                                                  \
	do {                                                                   \
		if (!find_cmd_via(&(a), (j), (via))) {                         \
			dump(&(a));                                            \
			fail_msg("no command '%s' via %s", (j), via_name(via)); \
		}                                                              \
	} while (0)

#define assert_no_cmd(a, j)                                                    \
	do {                                                                   \
		if (find_cmd(&(a), (j))) {                                     \
			dump(&(a));                                            \
			fail_msg("unexpected command '%s'", (j));              \
		}                                                              \
	} while (0)

/* The single word list of a one-command text. */
static inline void assert_words(const char *text, size_t n, ...)
{
	shell_analysis a = analyze_ok(text);
	if (a.ncmds < 1)
		fail_msg("%s: no command", text);
	const shell_cmd *c = &a.cmds[a.ncmds - 1];
	va_list ap;
	va_start(ap, n);
	if (c->argc != n) {
		dump(&a);
		fail_msg("%s: argc %zu, want %zu", text, c->argc, n);
	}
	for (size_t i = 0; i < n; i++) {
		const char *w = va_arg(ap, const char *);
		if (strcmp(c->argv[i], w) != 0)
			fail_msg("%s: argv[%zu] = '%s', want '%s'", text, i, c->argv[i], w);
	}
	va_end(ap);
	assert_null(c->argv[c->argc]);
	shell_analysis_free(&a);
}
