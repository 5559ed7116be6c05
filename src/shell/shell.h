/* shell/: parse bash-compatible command text for classification.
 *
 * Pure: no syscalls. Fail-closed: anything that cannot be resolved
 * statically is reported as unresolved, never silently dropped.
 * (Interface fixed by the core; implementation in src/shell/.) */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum shell_redir_kind {
	SHELL_REDIR_READ = 0,   /* <, <>, heredoc sources are not listed */
	SHELL_REDIR_WRITE,      /* >, >|, &> */
	SHELL_REDIR_APPEND,     /* >>, &>> */
} shell_redir_kind;

typedef struct shell_redir {
	shell_redir_kind kind;
	char *target;           /* expanded target word; NULL when unresolved */
	bool unresolved;
} shell_redir;

typedef struct shell_cmd {
	char **argv;            /* NULL-terminated; argv[0] is the command as written (path kept) */
	size_t argc;
	bool *word_unresolved;  /* per argv word: contains an expansion that cannot be known statically */
	bool unresolved;        /* the command itself cannot be known (e.g. `$cmd -rf /`, `eval "$x"`, `curl … | sh`) */
	char *unresolved_reason;/* NULL unless unresolved */
	bool contained;         /* unresolved only because interpreter code uses values of the
				 * environment's variables (static code around them, nothing
				 * computed or decoded in this line): the sandbox contains its
				 * effects unless the run lets something escape */
	bool env_only;          /* unresolved only through values of variables the line never
				 * sets (the environment's; implied by contained): nothing
				 * the line computes, decodes or downloads feeds it */
	shell_redir *redirs;
	size_t nredirs;
	char *via;              /* how it was reached: NULL for top level, else e.g. "sh -c", "$(…)", "xargs", "find -exec", "sudo" */
	char *cwd;              /* where it runs when an option moved it (env -C, sudo -D, git/make/tar -C),
				 * as written (relative to the line's directory); NULL: the line's */
	bool cwd_unresolved;    /* that directory cannot be known statically */
	unsigned depth;         /* nesting depth of re-parsing */
} shell_cmd;

typedef struct shell_analysis {
	shell_cmd *cmds;
	size_t ncmds;
	bool unresolved;        /* any command or word unresolved */
	char *unresolved_reason;/* first reason, NULL if resolved */
	/* shell_analyze_partial only, when it fails on a syntax error: */
	bool syntax_error;
	bool partial;           /* cmds are those parsed before the error */
} shell_analysis;

typedef struct shell_limits {
	size_t max_length;      /* bytes of input; 0: default 1 MiB */
	unsigned max_depth;     /* re-parse nesting; 0: default 8 */
	size_t max_nodes;       /* 0: default 100000 */
} shell_limits;

/* Analyse shell text. On a syntax error or a limit, returns a negative code
 * with err naming the problem (position included); callers treat that as
 * unresolved. On success out holds every command that would
 * execute. */
int shell_analyze(const char *text, size_t len, const shell_limits *lim,
		  shell_analysis *out, txbox_error *err);

/* The same, except that on a syntax error (returned, -EINVAL) out holds what
 * was parsed before it: syntax_error set, and if partial, the commands of
 * every complete simple command before the error, also inside a compound
 * command the error left unfinished (so a caller can still judge them).
 * The caller frees out whatever the return. */
int shell_analyze_partial(const char *text, size_t len, const shell_limits *lim,
			  shell_analysis *out, txbox_error *err);

/* Analyse an argv that is executed directly (no shell): wrappers such as
 * sudo/env/xargs and interpreters with -c are still unwrapped. */
int shell_analyze_argv(const char *const *argv, size_t argc, const shell_limits *lim,
		       shell_analysis *out, txbox_error *err);

void shell_analysis_free(shell_analysis *a);

/* literal.c: the words of shell text that is one plain command of ordinary
 * characters (no quoting, expansion, redirection, glob, assignment or
 * operator) whose command is not a shell builtin or keyword — text that
 * `sh -c` would simply exec — or NULL. Free with shell_literal_argv_free. */
char **shell_literal_argv(const char *text);
void shell_literal_argv_free(char **argv);
