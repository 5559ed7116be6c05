/* Internal interface between unwrap.c (the walker: shells, eval, git,
 * interpreters, make, sed, …) and runners.c (programs that run a command
 * given as their arguments: sudo-like wrappers, nice/timeout/taskset-like
 * tools, language runners such as `uv run` or `bundle exec`). Nothing
 * here leaves src/shell/. */
#pragma once

#include "shell/internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* One command being unwrapped. */
struct uw {
	struct sh_ctx *ctx;
	const struct sh_field *v;
	size_t n;
	int idx;          /* index of this command in ctx->out */
	const char *name; /* basename of argv[0] */
	const char *via;
	unsigned depth;
	const struct sh_stdin *in;
	const struct sh_nodes *ns;
};

typedef int (*uw_fn)(struct uw *u);

static inline bool fis(const struct sh_field *f, const char *s)
{
	return !f->unres && strcmp(f->text, s) == 0;
}

static inline bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static inline bool in_list(const char *s, const char *const *l)
{
	for (; l && *l; l++)
		if (strcmp(s, *l) == 0)
			return true;
	return false;
}

/* ---- unwrap.c ---------------------------------------------------------- */

/* Mark the command unresolved with a reason. */
void uw_mark(struct uw *u, const char *reason);
__attribute__((format(printf, 2, 3))) void uw_markf(struct uw *u, const char *fmt, ...);
/* Unwrap argv[start..] as the command this one runs. */
int uw_inner(struct uw *u, size_t start, const char *via);
/* Skip options from word i. sarg: short options taking an argument; larg:
 * long ones (without "--") taking a separate argument when no '=' is
 * given. Stops at the first operand or after "--"; an unresolved word
 * where an option may be sets *unk. */
size_t uw_skip_opts(const struct uw *u, size_t i, const char *sarg, const char *const *larg,
		    bool *unk);
/* Does the option cluster / long option list from..end contain c / l? */
bool uw_has_opt(const struct uw *u, size_t from, size_t end, char c, const char *l);
/* A word that is shell text the program runs. */
int uw_shell_text(struct uw *u, const struct sh_field *f, const char *via);
/* Words from..end joined with spaces, analysed as shell text. */
int uw_joined_text(struct uw *u, size_t from, size_t end, const char *via);
/* Value of option s (short, also attached) or l (long, also l=VALUE) at
 * word k, as a field in *out; false when word k is not that option. */
bool uw_opt_value(const struct uw *u, size_t k, const char *s, const char *l,
		  struct sh_field *out, size_t *next);

/* fn(u, line, arg) for each non-empty line of text (a copy), until one
 * returns non-zero. */
int uw_each_line(struct uw *u, const char *text, int (*fn)(struct uw *u, char *line, const void *arg),
		 const void *arg);

/* Commands emitted while *dir is in effect run there: compose it with the
 * directory already in effect; uw_chdir_pop restores the previous one. */
int uw_chdir_push(struct sh_ctx *ctx, const struct sh_field *dir, char **saved, bool *saved_unres);
void uw_chdir_pop(struct sh_ctx *ctx, char *saved, bool saved_unres);

/* ---- clients.c --------------------------------------------------------- */

/* sqlite3, psql, mysql/mariadb: their command language's shell escapes. */
int uw_client(struct uw *u);

/* ---- runners.c --------------------------------------------------------- */

/* The handler of a runner named name (a basename), or NULL. */
uw_fn uw_runner(const char *name);
