/* NAME=VALUE prefixes of a command that make it run something besides
 * its arguments:
 *   - a variable naming a command (PAGER, GIT_SEQUENCE_EDITOR, …): the
 *     value is shell text (unwrap.c, sh_env_command);
 *   - BASH_ENV / ENV: a file a starting shell sources first, so
 *     `BASH_ENV=<(echo TEXT) bash -c true` runs TEXT: judged as `. FILE`;
 *   - GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: settings
 *     every git it starts reads, exactly `git -c KEY=VALUE` (an alias, a
 *     hooks path, an editor); GIT_CONFIG_PARAMETERS the same in git's own
 *     quoting, not followed here (unresolved).
 * They count for any command, not only a shell or git: a build tool or a
 * script passes its environment on to the shells and gits it runs.
 */
#include "shell/internal.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIT_CONFIG_MAX 16 /* settings followed per command; more are unresolved */

static bool name_is(const struct sh_field *f, const char *name)
{
	size_t n = strlen(name);
	return strncmp(f->text, name, n) == 0 && f->text[n] == '=';
}

/* GIT_CONFIG_KEY_<n>= / GIT_CONFIG_VALUE_<n>= : n, or -1. */
static int git_config_index(const char *text, size_t len, const char *prefix)
{
	size_t p = strlen(prefix);
	if (len <= p || strncmp(text, prefix, p) != 0 || len - p > 3 ||
	    strspn(text + p, "0123456789") != len - p)
		return -1;
	return atoi(text + p);
}

bool sh_env_names_setup(const char *name, size_t len)
{
	static const char *const l[] = {"BASH_ENV", "ENV", "GIT_CONFIG_COUNT",
					"GIT_CONFIG_PARAMETERS", NULL};
	for (const char *const *e = l; *e; e++)
		if (strlen(*e) == len && strncmp(*e, name, len) == 0)
			return true;
	return git_config_index(name, len, "GIT_CONFIG_KEY_") >= 0 ||
	       git_config_index(name, len, "GIT_CONFIG_VALUE_") >= 0;
}

static void mark(struct sh_ctx *ctx, int cmd_idx, const char *reason)
{
	if (cmd_idx >= 0)
		sh_mark_unresolved(ctx, cmd_idx, reason);
}

/* Append text single-quoted for the shell. */
static void put_quoted(struct sbuf *b, const char *text)
{
	sbuf_putc(b, '\'');
	for (const char *c = text; *c; c++) {
		if (*c == '\'')
			sbuf_puts(b, "'\\''");
		else
			sbuf_putc(b, *c);
	}
	sbuf_putc(b, '\'');
}

static int reparse_buf(struct sh_ctx *ctx, struct sbuf *b, const char *via, unsigned depth,
		       int cmd_idx)
{
	int rc = b->oom || !b->s ? txbox_fail(ctx->err, -ENOMEM, "shell: out of memory")
				 : sh_reparse(ctx, b->s, strlen(b->s), via, depth + 1, cmd_idx, NULL);
	sbuf_free(b);
	return rc;
}

/* BASH_ENV=FILE / ENV=FILE: the shell sources FILE; a process
 * substitution stays one (`. <(…)` is code nobody can read here). */
static int startup_file(struct sh_ctx *ctx, const struct sh_field *f, unsigned depth, int cmd_idx)
{
	const char *eq = strchr(f->text, '=');
	char via[16];
	snprintf(via, sizeof(via), "%.*s=", (int)(eq - f->text), f->text);
	if (f->unres || f->lookalike) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s names a startup file that is not static", via);
		mark(ctx, cmd_idx, buf);
		return 0;
	}
	const char *v = eq + 1;
	if (!*v)
		return 0;
	struct sbuf b = {0};
	sbuf_puts(&b, ". ");
	if ((v[0] == '<' || v[0] == '>') && v[1] == '(')
		sbuf_puts(&b, v);
	else
		put_quoted(&b, v);
	return reparse_buf(ctx, &b, via, depth, cmd_idx);
}

static const struct sh_field *find_indexed(const struct sh_field *env, size_t n,
					   const char *prefix, int idx)
{
	const struct sh_field *found = NULL;
	for (size_t k = 0; k < n; k++) {
		const char *eq = strchr(env[k].text, '=');
		if (eq && git_config_index(env[k].text, (size_t)(eq - env[k].text), prefix) == idx)
			found = &env[k]; /* the last assignment wins */
	}
	return found;
}

/* GIT_CONFIG_COUNT=N: settings 0..N-1, judged as `git -c KEY=VALUE`. */
static int git_config_env(struct sh_ctx *ctx, const struct sh_field *env, size_t n,
			  unsigned depth, int cmd_idx)
{
	const struct sh_field *count = NULL;
	for (size_t k = 0; k < n; k++) {
		if (name_is(&env[k], "GIT_CONFIG_PARAMETERS")) {
			mark(ctx, cmd_idx, "GIT_CONFIG_PARAMETERS sets git options that are not followed");
			return 0;
		}
		if (name_is(&env[k], "GIT_CONFIG_COUNT"))
			count = &env[k];
	}
	if (!count)
		return 0;
	const char *cv = strchr(count->text, '=') + 1;
	if (count->unres || strspn(cv, "0123456789") != strlen(cv) || strlen(cv) > 3 ||
	    atoi(cv) > GIT_CONFIG_MAX) {
		mark(ctx, cmd_idx, "GIT_CONFIG_COUNT is not static, or sets more settings than are followed");
		return 0;
	}
	int rc = 0;
	for (int i = 0; i < atoi(cv) && rc == 0; i++) {
		const struct sh_field *key = find_indexed(env, n, "GIT_CONFIG_KEY_", i);
		const struct sh_field *val = find_indexed(env, n, "GIT_CONFIG_VALUE_", i);
		if (!key || !val)
			continue; /* git refuses to start */
		if (key->unres || val->unres || key->lookalike || val->lookalike) {
			mark(ctx, cmd_idx, "GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n are not static");
			return 0;
		}
		struct sbuf b = {0};
		sbuf_puts(&b, "git -c ");
		_cleanup_free_ char *kv = NULL;
		if (asprintf(&kv, "%s=%s", strchr(key->text, '=') + 1, strchr(val->text, '=') + 1) < 0)
			kv = NULL;
		if (!kv)
			b.oom = true;
		else
			put_quoted(&b, kv);
		rc = reparse_buf(ctx, &b, "GIT_CONFIG_COUNT=", depth, cmd_idx);
	}
	return rc;
}

int sh_env_prefix(struct sh_ctx *ctx, const struct sh_field *env, size_t n, unsigned depth,
		  int cmd_idx)
{
	int rc = 0;
	for (size_t k = 0; k < n && rc == 0; k++) {
		const char *eq = strchr(env[k].text, '=');
		if (!eq)
			continue;
		if (sh_env_names_command(env[k].text, (size_t)(eq - env[k].text)))
			rc = sh_env_command(ctx, &env[k], depth, cmd_idx);
		else if (name_is(&env[k], "BASH_ENV") || name_is(&env[k], "ENV"))
			rc = startup_file(ctx, &env[k], depth, cmd_idx);
	}
	return rc < 0 ? rc : git_config_env(ctx, env, n, depth, cmd_idx);
}
