/* Wrappers: commands that run other commands.
 *
 * Every command is reported as written; what it runs is reported as a
 * further command whose via names the wrapper:
 *   sudo doas env command xargs watch                                 (argv)
 *   nice timeout flock taskset … and language runners: runners.c
 *   find -exec/-execdir/-ok/-okdir … ; / +                           (argv)
 *   sh/bash/zsh/dash/ksh/… -c TEXT, eval, watch, flock -c, su -c,
 *   script -c, git -c alias.x=!…, git -c core.pager=… etc., tar
 *   --to-command/--checkpoint-action=exec=/--use-compress-program/-I  (text,
 *   re-parsed with depth + 1)
 *   awk system()/pipes, python -c, perl -e, ruby -e, node -e, php -r  (code
 *   scanned by interp.c)
 * A shell or interpreter reading its program from stdin gets the here-
 * document / here-string body parsed; from a pipe or process substitution
 * it is unresolved.
 */
#include "shell/internal.h"
#include "shell/unwrap.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct sh_stdin no_stdin = {0};

void uw_mark(struct uw *u, const char *reason)
{
	sh_mark_unresolved(u->ctx, u->idx, reason);
}

/* The command is unresolved because of field f: through the environment's
 * values only, or through something the line computes. */
static void mark_by(struct uw *u, const struct sh_field *f, const char *reason)
{
	if (f->env_values && !f->lookalike && !f->procsub && f->sub_begin == f->sub_end)
		sh_mark_env(u->ctx, u->idx, reason);
	else
		uw_mark(u, reason);
}

__attribute__((format(printf, 2, 3))) void uw_markf(struct uw *u, const char *fmt, ...)
{
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	uw_mark(u, buf);
}

static bool is_downloader(const char *n)
{
	static const char *const l[] = {"curl", "wget", "fetch", "aria2c", "http", "https",
					"lynx", "links", "w3m", "nc", "ncat", "socat", "ftp",
					"tftp", "scp", "rsync", "gh", "lwp-request", "GET", NULL};
	return in_list(n, l);
}

static bool is_decoder(const char *n)
{
	static const char *const l[] = {"base64", "base32", "basenc", "xxd", "openssl",
					"uudecode", "gunzip", "zcat", "gzip", "bzip2", "bzcat",
					"xz", "xzcat", "unxz", "rev", "tr", "od", "printf", "echo",
					"python", "python3", "perl", NULL};
	return in_list(n, l);
}

/* Look at commands produced inside a word ($(…), <(…)) for a reason. */
static const char *sub_reason(const struct uw *u, const struct sh_field *f, const char *dflt)
{
	if (!u->ns)
		return dflt;
	size_t b = f->sub_begin, e = f->sub_end;
	if (e > u->ns->n)
		e = u->ns->n;
	bool dec = false;
	for (size_t i = b; i < e; i++) {
		const struct sh_node *nd = &u->ns->v[i];
		if (nd->argc == 0 || nd->argv[0].unres)
			continue;
		const char *nm = sh_basename(nd->argv[0].text);
		if (is_downloader(nm))
			return "downloaded code is executed";
		if (is_decoder(nm))
			dec = true;
	}
	return dec ? "decoded code is executed" : dflt;
}

/* Commands emitted while *dir is in effect run there: compose it with the
 * directory already in effect (returns the previous one to restore). */
int uw_chdir_push(struct sh_ctx *ctx, const struct sh_field *dir, char **saved, bool *saved_unres)
{
	*saved = ctx->chdir;
	*saved_unres = ctx->chdir_unres;
	char *next = NULL;
	if (dir->unres || dir->lookalike)
		ctx->chdir_unres = true;
	else if (dir->text[0] == '/' || dir->text[0] == '~' || !*saved)
		next = strdup(dir->text);
	else if (asprintf(&next, "%s/%s", *saved, dir->text) < 0)
		next = NULL;
	if (!ctx->chdir_unres && !next)
		return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
	ctx->chdir = ctx->chdir_unres ? NULL : next;
	if (ctx->chdir_unres)
		free(next);
	return 0;
}

void uw_chdir_pop(struct sh_ctx *ctx, char *saved, bool saved_unres)
{
	free(ctx->chdir);
	ctx->chdir = saved;
	ctx->chdir_unres = saved_unres;
}

/* Short options taking a value, per command that has a -C DIR option, as
 * its getopt string has them (optional values, which take the rest of a
 * cluster, count too): a cluster binds its value the way the program does. */
static const char *chdir_valued(const char *name)
{
	static const struct {
		const char *name, *valued;
	} t[] = {
		{"make", "CfIoWEjl"},        {"gmake", "CfIoWEjl"},
		{"tar", "fCTXbHIKLNVFg"},    {"gtar", "fCTXbHIKLNVFg"},
		{"bsdtar", "fCTXbHIKLNVFgs"}, {"ninja", "dfjkltwC"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++)
		if (strcmp(name, t[i].name) == 0)
			return t[i].valued;
	return NULL;
}

/* -C's value in a cluster at word k (-sC DIR, -xzC/DIR): letters before it
 * must not take a value themselves (then the rest of the word is theirs). */
static bool cluster_chdir(const struct uw *u, size_t k, const char *valued,
			  struct sh_field *out, size_t *next)
{
	const struct sh_field *f = &u->v[k];
	const char *t = f->text;
	if (f->unres || t[0] != '-' || t[1] == '-' || !t[1])
		return false;
	for (size_t j = 1; t[j]; j++) {
		if (t[j] == 'C') {
			if (t[j + 1]) {
				*out = *f;
				out->text = (char *)t + j + 1;
				*next = k + 1;
				return true;
			}
			if (k + 1 >= u->n)
				return false;
			*out = u->v[k + 1];
			*next = k + 2;
			return true;
		}
		if (strchr(valued, t[j])) {
			if (!t[j + 1]) /* its value is the next word: not an option */
				*next = k + 2;
			return false;
		}
	}
	return false;
}

/* tar's dashless first word (tar xfC a.tar DIR): each letter taking a value
 * takes the next word, in order. Returns the first word after the values. */
static size_t tar_bundle_chdir(const struct uw *u, const char *valued, struct sh_field *dir,
			       bool *found)
{
	if (u->n < 2 || u->v[1].unres || !u->v[1].text[0] || u->v[1].text[0] == '-' ||
	    (strcmp(u->name, "tar") && strcmp(u->name, "gtar") && strcmp(u->name, "bsdtar")))
		return 1;
	const char *t = u->v[1].text;
	if (t[strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")])
		return 1;
	size_t next = 2;
	for (size_t j = 0; t[j]; j++) {
		if (!strchr(valued, t[j]) || next >= u->n)
			continue;
		if (t[j] == 'C') {
			*dir = u->v[next];
			*found = true;
		}
		next++;
	}
	return next;
}

/* The option of a command that moves where it (and what it runs) works:
 * git -C DIR (before the subcommand), make/tar/ninja -C DIR, --directory,
 * also inside a cluster (make -sC DIR) and tar's bundle (tar xfC A DIR). */
static bool own_chdir(const struct uw *u, struct sh_field *dir)
{
	bool git = strcmp(u->name, "git") == 0, found = false;
	const char *valued = git ? "" : chdir_valued(u->name);
	if (!valued)
		return false;
	for (size_t k = tar_bundle_chdir(u, valued, dir, &found); k < u->n;) {
		struct sh_field val;
		size_t next = k + 1;
		if (git && (u->v[k].unres || u->v[k].text[0] != '-'))
			break;
		if (uw_opt_value(u, k, "-C", git ? NULL : "--directory", &val, &next) ||
		    (!git && cluster_chdir(u, k, valued, &val, &next))) {
			*dir = val;
			found = true;
		} else if (git && (fis(&u->v[k], "-c") || fis(&u->v[k], "--git-dir") ||
				   fis(&u->v[k], "--work-tree") || fis(&u->v[k], "--namespace"))) {
			next = k + 2;
		}
		k = next;
	}
	return found;
}

/* A word that is not static as a whole but ends in a static file name after
 * a '/' ("$DIR/tools/build.py"): a path whose last component is known. */
bool sh_literal_tail(const struct sh_field *f)
{
	const char *sl = strrchr(f->text, '/');
	if (!sl || !sl[1] || f->lookalike)
		return false;
	if (strcmp(sl + 1, ".") == 0 || strcmp(sl + 1, "..") == 0)
		return false;
	return strpbrk(sl + 1, "$`\"'(){}[]*?\\") == NULL;
}

/* "$DIR/run-*.sh": a file (or files) by a pattern of names; a glob never
 * matches a '/', so what it names is a file in $DIR, as with a literal
 * name — but which program that is, is not known (no command name). */
static bool file_pattern_tail(const struct sh_field *f)
{
	const char *sl = strrchr(f->text, '/');
	if (!sl || !sl[1] || f->lookalike || !strcmp(sl + 1, ".") || !strcmp(sl + 1, ".."))
		return false;
	return strpbrk(sl + 1, "$`\"'(){}\\") == NULL;
}

int uw_inner(struct uw *u, size_t start, const char *via)
{
	if (start >= u->n)
		return 0;
	return sh_unwrap(u->ctx, u->v + start, u->n - start, NULL, 0, via, u->depth, u->in, u->ns);
}

/* uw_inner() for a wrapper whose option (short s / long l, before end) moves
 * where the command runs: env -C DIR, sudo -D DIR. */
static int inner_moved(struct uw *u, size_t end, const char *s, const char *l, size_t start,
		       const char *via)
{
	struct sh_field dir;
	bool moved = false;
	for (size_t k = 1; k < end && k < u->n;) {
		size_t next = k + 1;
		struct sh_field val;
		if (uw_opt_value(u, k, s, l, &val, &next)) {
			dir = val;
			moved = true;
		}
		k = next;
	}
	if (!moved)
		return uw_inner(u, start, via);
	char *saved;
	bool saved_unres;
	int rc = uw_chdir_push(u->ctx, &dir, &saved, &saved_unres);
	if (rc == 0)
		rc = uw_inner(u, start, via);
	uw_chdir_pop(u->ctx, saved, saved_unres);
	return rc;
}

/* Skip options. sarg: short options taking an argument; larg: long ones
 * (without "--") taking a separate argument when no '=' is given. Stops at
 * the first operand or after "--". An unresolved word where an option may
 * be makes the result unknown (*unk). */
size_t uw_skip_opts(const struct uw *u, size_t i, const char *sarg, const char *const *larg,
			bool *unk)
{
	while (i < u->n) {
		const struct sh_field *f = &u->v[i];
		if (f->unres) {
			*unk = true;
			return i;
		}
		const char *a = f->text;
		if (strcmp(a, "--") == 0)
			return i + 1;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		if (a[1] == '-') {
			if (!strchr(a, '=') && in_list(a + 2, larg))
				i++;
			i++;
			continue;
		}
		for (size_t j = 1; a[j]; j++)
			if (sarg && strchr(sarg, a[j])) {
				if (!a[j + 1])
					i++;
				break;
			}
		i++;
	}
	return i;
}

/* Does the option cluster / long option list before end contain c / l? */
bool uw_has_opt(const struct uw *u, size_t from, size_t end, char c, const char *l)
{
	for (size_t i = from; i < end && i < u->n; i++) {
		const char *a = u->v[i].text;
		if (a[0] != '-')
			continue;
		if (a[1] == '-') {
			if (l && strcmp(a + 2, l) == 0)
				return true;
			continue;
		}
		if (c && strchr(a + 1, c))
			return true;
	}
	return false;
}

static int reparse(struct uw *u, const char *text, const char *via)
{
	return sh_reparse(u->ctx, text, strlen(text), via, u->depth + 1, u->idx, NULL);
}

/* Text argument that is shell code. */
int uw_shell_text(struct uw *u, const struct sh_field *f, const char *via)
{
	if (f->unres || f->lookalike) {
		char buf[160];
		snprintf(buf, sizeof(buf), "%s: %s", via,
			 sub_reason(u, f, "shell code is not static"));
		mark_by(u, f, buf);
		return 0;
	}
	return reparse(u, f->text, via);
}

/* A shell/interpreter reading its program from stdin. lang NULL: shell. */
static int stdin_code(struct uw *u, const char *lang)
{
	const struct sh_stdin *in = u->in ? u->in : &no_stdin;
	char via[64];
	if (in->body) {
		snprintf(via, sizeof(via), "%s %s", u->name, in->here_string ? "<<<" : "<<");
		if (in->body_unres)
			uw_markf(u, "%s: here-document with unresolved expansions", u->name);
		if (!lang)
			return sh_reparse(u->ctx, in->body, strlen(in->body), via, u->depth + 1,
					  u->idx, NULL);
		return sh_interp_scan(u->ctx, lang, in->body, strlen(in->body), via, u->depth + 1,
				      u->idx);
	}
	if (in->procsub) {
		uw_markf(u, "%s reads code from a process substitution", u->name);
		return 0;
	}
	if (in->piped) {
		if (in->downloaded)
			uw_markf(u, "downloaded code piped into %s", u->name);
		else if (in->decoded)
			uw_markf(u, "decoded data piped into %s", u->name);
		else
			uw_markf(u, "pipeline into %s reading stdin", u->name);
	}
	return 0;
}

/* ---- variables that name a command -------------------------------------- */

bool sh_env_names_command(const char *name, size_t len)
{
	static const char *const l[] = {
		"PAGER", "MANPAGER", "GIT_PAGER", "SYSTEMD_PAGER", "BAT_PAGER", "DELTA_PAGER",
		"EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "FCEDIT",
		"SVN_EDITOR", "HGEDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PROXY_COMMAND",
		"GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "LESSOPEN",
		"LESSCLOSE", "BROWSER", "PROMPT_COMMAND", "RSYNC_RSH", "CVS_RSH", "RSH",
		"TERMINAL", "DIFFTOOL", "MERGETOOL", "K9S_EDITOR", "KUBE_EDITOR",
		/* cargo runs these around rustc / the built program; npm runs scripts with it */
		"RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER",
		"CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC", "RUSTC", "RUSTDOC",
		"npm_config_script_shell", "NPM_CONFIG_SCRIPT_SHELL", NULL};
	for (const char *const *e = l; *e; e++)
		if (strlen(*e) == len && strncmp(*e, name, len) == 0)
			return true;
	/* CARGO_TARGET_<triple>_RUNNER / _LINKER */
	static const char pre[] = "CARGO_TARGET_";
	return len > sizeof(pre) - 1 && strncmp(name, pre, sizeof(pre) - 1) == 0 &&
	       ((len > 7 && strncmp(name + len - 7, "_RUNNER", 7) == 0) ||
		(len > 7 && strncmp(name + len - 7, "_LINKER", 7) == 0));
}

int sh_env_command(struct sh_ctx *ctx, const struct sh_field *assign, unsigned depth, int cmd_idx)
{
	const char *eq = strchr(assign->text, '=');
	if (!eq)
		return 0;
	char via[48];
	snprintf(via, sizeof(via), "%.*s=", (int)(eq - assign->text), assign->text);
	if (assign->unres || assign->lookalike) {
		char buf[96];
		snprintf(buf, sizeof(buf), "%s names a command that is not static", via);
		if (cmd_idx >= 0)
			sh_mark_unresolved(ctx, cmd_idx, buf);
		return 0;
	}
	const char *v = eq + 1;
	while (*v == '|') /* LESSOPEN="|filter %s" */
		v++;
	return sh_reparse(ctx, v, strlen(v), via, depth + 1, cmd_idx, NULL);
}

/* NAME=VALUE words from..end-1 (of env, export): a value naming a
 * command is judged (one not static too, when unres_too), and start-up
 * settings (BASH_ENV, BASH_FUNC_x%%, GIT_CONFIG_*, …) together. */
static int judge_assignments(struct uw *u, size_t from, size_t end, bool unres_too)
{
	int rc = 0;
	_cleanup_free_ struct sh_field *setup = calloc(u->n, sizeof(*setup));
	size_t nsetup = 0;
	if (!setup)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	for (size_t i = from; i < end && i < u->n && rc == 0; i++) {
		const char *a = u->v[i].text, *eq = strchr(a, '=');
		if (!eq || a[0] == '-' || a[0] == '=')
			continue;
		if (sh_env_names_setup(a, (size_t)(eq - a)))
			setup[nsetup++] = u->v[i];
		else if ((unres_too || !u->v[i].unres) && sh_env_names_command(a, (size_t)(eq - a)))
			rc = sh_env_command(u->ctx, &u->v[i], u->depth, u->idx);
	}
	return rc < 0 ? rc : sh_env_prefix(u->ctx, setup, nsetup, u->depth, u->idx);
}

/* export / declare -x / readonly NAME=VALUE: the same for later commands. */
static int do_export(struct uw *u)
{
	return judge_assignments(u, 1, u->n, false);
}

/* <(echo TEXT) / <(printf %s TEXT) with static words is TEXT plus a
 * newline: what a shell reading it runs (BASH_ENV=<(echo …), sh <(echo …)).
 * Returns a malloc'd text, NULL otherwise (or on allocation failure, when
 * the caller falls back to "not static"). */
static char *echoed_text(const struct uw *u, const struct sh_field *f)
{
	if (!u->ns || !f->procsub || f->lookalike || f->sub_end != f->sub_begin + 1 ||
	    f->sub_end > u->ns->n)
		return NULL;
	const struct sh_node *nd = &u->ns->v[f->sub_begin];
	if (nd->argc < 2 || nd->nredirs || nd->nenv_cmds)
		return NULL;
	size_t first = 1;
	if (fis(&nd->argv[0], "printf") && nd->argc > 2 && fis(&nd->argv[1], "%s"))
		first = 2;
	else if (!fis(&nd->argv[0], "echo") || nd->argv[1].text[0] == '-')
		return NULL;
	struct sbuf b = {0};
	for (size_t i = first; i < nd->argc; i++) {
		if (nd->argv[i].unres || nd->argv[i].lookalike || nd->argv[i].procsub) {
			sbuf_free(&b);
			return NULL;
		}
		if (i > first && first == 1)
			sbuf_putc(&b, ' ');
		sbuf_puts(&b, nd->argv[i].text);
	}
	return sbuf_take(&b);
}

/* A shell reading code from process substitution f: the echoed text, or
 * unresolved with what was found. */
static int procsub_code(struct uw *u, const struct sh_field *f, const char *what)
{
	_cleanup_free_ char *text = echoed_text(u, f);
	char via[64];
	snprintf(via, sizeof(via), "%s <(echo …)", u->name);
	if (text)
		return reparse(u, text, via);
	uw_markf(u, "%s %s: %s", u->name, what, sub_reason(u, f, "code not static"));
	return 0;
}

/* ---- shells ------------------------------------------------------------- */

static int do_shell(struct uw *u)
{
	bool has_c = false, has_s = false;
	size_t i = 1;
	while (i < u->n) {
		const struct sh_field *f = &u->v[i];
		if (f->unres && file_pattern_tail(f))
			break; /* the script, "$DIR/run.sh", "$DIR"/run-*.sh */
		if (f->unres) {
			char buf[160];
			snprintf(buf, sizeof(buf), "%s: options are not static", u->name);
			mark_by(u, f, buf);
			return 0;
		}
		const char *a = f->text;
		if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
			i++;
			if (a[1] == '\0')
				has_s = true;
			break;
		}
		if ((a[0] != '-' && a[0] != '+') || a[1] == '\0')
			break;
		if (a[0] == '-' && a[1] == '-') {
			static const char *const la[] = {"rcfile", "init-file", NULL};
			if (in_list(a + 2, la))
				i++;
			if (strcmp(a + 2, "command") == 0) /* fish/zsh style */
				has_c = true;
			i++;
			continue;
		}
		size_t extra = 0;
		for (size_t j = 1; a[j]; j++) {
			if (a[j] == 'c' && a[0] == '-')
				has_c = true;
			else if (a[j] == 's' && a[0] == '-')
				has_s = true;
			else if (a[j] == 'o' || a[j] == 'O')
				extra++;
		}
		i += 1 + extra;
	}
	char via[64];
	if (has_c) {
		if (i >= u->n)
			return 0;
		snprintf(via, sizeof(via), "%s -c", u->name);
		return uw_shell_text(u, &u->v[i], via);
	}
	if (i < u->n && !has_s) {
		const struct sh_field *f = &u->v[i];
		if (f->procsub)
			return procsub_code(u, f, "runs a process substitution");
		if (f->unres && !file_pattern_tail(f)) { /* "$DIR/run.sh" is a script file */
			uw_markf(u, "%s: script path is not static", u->name);
			return 0;
		}
		if (strcmp(f->text, "/dev/stdin") == 0 || strcmp(f->text, "/proc/self/fd/0") == 0)
			return stdin_code(u, NULL);
		return 0; /* runs a script file: visible as this command */
	}
	return stdin_code(u, NULL);
}

/* A word that is the output of local commands and nothing else ("$(tool
 * init bash)", <(tool --zsh)): running it is running what those commands
 * print, no more than running a script file, which needs no resolving;
 * downloaded or decoded output is another matter (sub_reason). */
static bool local_program_output(const struct uw *u, const struct sh_field *f)
{
	size_t n = strlen(f->text);
	if (f->lookalike || f->sub_begin >= f->sub_end || n < 3 || sub_reason(u, f, NULL))
		return false;
	return ((f->text[0] == '$' || f->text[0] == '<') && f->text[1] == '(' && f->text[n - 1] == ')' &&
		!strchr(f->text + 2, '$')) ||
	       (f->text[0] == '`' && f->text[n - 1] == '`' && !strchr(f->text, '$'));
}

static int do_eval(struct uw *u)
{
	struct sbuf b = {0};
	if (u->n == 2 && local_program_output(u, &u->v[1]))
		return 0;
	for (size_t i = 1; i < u->n; i++) {
		if (u->v[i].unres || u->v[i].lookalike) {
			sbuf_free(&b);
			char buf[160];
			snprintf(buf, sizeof(buf), "eval: %s",
				 sub_reason(u, &u->v[i], "text is not static"));
			/* the first word the line computes, if any, names the cause */
			size_t k = i;
			while (k < u->n && (!u->v[k].unres || (u->v[k].env_values && !u->v[k].procsub &&
							       u->v[k].sub_begin == u->v[k].sub_end)))
				k++;
			mark_by(u, &u->v[k < u->n ? k : i], buf);
			return 0;
		}
		if (i > 1)
			sbuf_putc(&b, ' ');
		sbuf_puts(&b, u->v[i].text);
	}
	if (b.oom) {
		sbuf_free(&b);
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	}
	int rc = b.s ? reparse(u, b.s, "eval") : 0;
	sbuf_free(&b);
	return rc;
}

static int do_source(struct uw *u)
{
	if (u->n < 2)
		return 0;
	const struct sh_field *f = &u->v[1];
	if ((f->procsub && local_program_output(u, f)) || (f->unres && sh_literal_tail(f)))
		return 0; /* like running a script file */
	if (f->procsub)
		return procsub_code(u, f, "of a process substitution");
	if (f->unres) {
		uw_markf(u, "%s: path is not static", u->name);
		return 0;
	}
	if (strcmp(f->text, "/dev/stdin") == 0)
		return stdin_code(u, NULL);
	return 0;
}

/* alias NAME=VALUE: the value runs wherever NAME is used (when aliases are
 * expanded), so report what it would run. */
static int do_alias(struct uw *u)
{
	for (size_t i = 1; i < u->n; i++) {
		const struct sh_field *f = &u->v[i];
		const char *eq = strchr(f->text, '=');
		if (!eq)
			continue;
		struct sh_field g = *f;
		g.text = (char *)eq + 1;
		int rc = uw_shell_text(u, &g, "alias");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- simple wrappers ------------------------------------------------------ */

static int do_sudo(struct uw *u)
{
	static const char *const larg[] = {"close-from", "chdir", "group", "host", "prompt",
					   "chroot", "role", "type", "command-timeout",
					   "other-user", "user", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "CDghpRrtTUu", larg, &unk);
	if (unk) {
		uw_mark(u, "sudo: cannot tell which command runs");
		return 0;
	}
	if (uw_has_opt(u, 1, i, 'e', "edit") || uw_has_opt(u, 1, i, 'l', "list") ||
	    uw_has_opt(u, 1, i, 'v', "validate") || uw_has_opt(u, 1, i, 'K', "remove-timestamp"))
		return 0;
	while (i < u->n && !u->v[i].unres && strchr(u->v[i].text, '=') &&
	       u->v[i].text[0] != '=' && u->v[i].text[0] != '-')
		i++;
	if (i >= u->n) {
		if (uw_has_opt(u, 1, i, 's', "shell") || uw_has_opt(u, 1, i, 'i', "login"))
			return stdin_code(u, NULL);
		return 0;
	}
	return inner_moved(u, i, "-D", "--chdir", i, "sudo");
}

static int do_doas(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "uC", NULL, &unk);
	if (unk) {
		uw_mark(u, "doas: cannot tell which command runs");
		return 0;
	}
	if (uw_has_opt(u, 1, i, 'C', NULL))
		return 0;
	if (i >= u->n)
		return uw_has_opt(u, 1, i, 's', NULL) ? stdin_code(u, NULL) : 0;
	return uw_inner(u, i, "doas");
}

/* env -S: split like env(1) (quotes, backslashes, whitespace). */
static int env_split(const char *s, struct sh_field **out, size_t *nout, size_t *cap)
{
	struct sbuf w = {0};
	bool inword = false;
	for (size_t i = 0;; i++) {
		char c = s[i];
		bool end = c == '\0';
		if (!end && c == '\'') {
			inword = true;
			const char *q = strchr(s + i + 1, '\'');
			size_t e = q ? (size_t)(q - s) : strlen(s);
			sbuf_put(&w, s + i + 1, e - i - 1);
			i = q ? e : e - 1;
			continue;
		}
		if (!end && c == '"') {
			inword = true;
			size_t j = i + 1;
			for (; s[j] && s[j] != '"'; j++) {
				if (s[j] == '\\' && s[j + 1])
					j++;
				sbuf_putc(&w, s[j]);
			}
			i = s[j] ? j : j - 1;
			continue;
		}
		if (!end && c == '\\' && s[i + 1]) {
			inword = true;
			char n = s[++i];
			sbuf_putc(&w, n == 'n' ? '\n' : n == 't' ? '\t' : n == '_' ? ' ' : n);
			continue;
		}
		if (end || c == ' ' || c == '\t' || c == '\n') {
			if (inword) {
				if (sh_vec_reserve((void **)out, cap, *nout + 1, sizeof(**out)) < 0) {
					sbuf_free(&w);
					return -ENOMEM;
				}
				struct sh_field *f = &(*out)[*nout];
				memset(f, 0, sizeof(*f));
				f->text = sbuf_take(&w);
				if (!f->text)
					return -ENOMEM;
				(*nout)++;
				inword = false;
			}
			if (end)
				break;
			continue;
		}
		inword = true;
		sbuf_putc(&w, c);
	}
	sbuf_free(&w);
	return 0;
}

/* env -S STRING ARGS…: the command is the split string, then the words
 * after it (from word i). */
static int env_run_split(struct uw *u, size_t i, const struct sh_field *split,
			 const char *split_text)
{
	if (split && (split->unres || split->lookalike)) {
		uw_mark(u, "env -S: string is not static");
		return 0;
	}
	struct sh_field *nv = NULL;
	size_t nn = 0, cap = 0;
	int rc = env_split(split_text, &nv, &nn, &cap);
	for (size_t k = i; rc == 0 && k < u->n; k++) {
		if (sh_vec_reserve((void **)&nv, &cap, nn + 1, sizeof(*nv)) < 0) {
			rc = -ENOMEM;
			break;
		}
		nv[nn] = u->v[k];
		nv[nn].text = strdup(u->v[k].text);
		if (!nv[nn].text) {
			rc = -ENOMEM;
			break;
		}
		nn++;
	}
	if (rc < 0)
		rc = txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	else {
		/* leading NAME=value words of the split string */
		size_t k = 0;
		while (k < nn && strchr(nv[k].text, '=') && nv[k].text[0] != '-' &&
		       nv[k].text[0] != '=')
			k++;
		if (k < nn)
			rc = sh_unwrap(u->ctx, nv + k, nn - k, NULL, 0, "env -S", u->depth, u->in,
				       u->ns);
	}
	for (size_t k = 0; k < nn; k++)
		free(nv[k].text);
	free(nv);
	return rc;
}

static int do_env(struct uw *u)
{
	size_t i = 1;
	const struct sh_field *split = NULL;
	const char *split_text = NULL;
	while (i < u->n) {
		const struct sh_field *f = &u->v[i];
		if (f->unres) {
			uw_mark(u, "env: cannot tell which command runs");
			return 0;
		}
		const char *a = f->text;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-") == 0) {
			i++;
			continue;
		}
		if (a[0] == '-' && a[1] == '-') {
			if (starts_with(a, "--split-string")) {
				if (a[14] == '=')
					split_text = a + 15;
				else if (i + 1 < u->n) {
					split = &u->v[++i];
					split_text = split->text;
				}
				i++;
				break;
			}
			if ((strcmp(a, "--unset") == 0 || strcmp(a, "--chdir") == 0) && i + 1 < u->n)
				i++;
			i++;
			continue;
		}
		if (a[0] == '-') {
			bool brk = false;
			for (size_t j = 1; a[j]; j++) {
				if (a[j] == 'u' || a[j] == 'C' || a[j] == 'S') {
					const char *arg = a + j + 1;
					if (!*arg && i + 1 < u->n) {
						if (a[j] == 'S')
							split = &u->v[i + 1];
						arg = u->v[++i].text;
					}
					if (a[j] == 'S') {
						split_text = arg;
						brk = true;
					}
					break;
				}
			}
			i++;
			if (brk)
				break;
			continue;
		}
		if (strchr(a, '=') && a[0] != '=') {
			i++;
			continue;
		}
		break;
	}
	int rc = judge_assignments(u, 1, i, true);
	if (rc < 0)
		return rc;
	if (!split_text)
		return inner_moved(u, i, "-C", "--chdir", i, "env");
	return env_run_split(u, i, split, split_text);
}

static int do_command(struct uw *u)
{
	size_t i = 1;
	while (i < u->n && !u->v[i].unres && u->v[i].text[0] == '-') {
		const char *a = u->v[i].text;
		i++;
		if (strcmp(a, "--") == 0)
			break;
		if (strchr(a, 'v') || strchr(a, 'V'))
			return 0; /* lookup only */
	}
	if (i < u->n && u->v[i].unres && u->v[i].text[0] == '-')
		return 0;
	return uw_inner(u, i, u->name);
}

static int do_xargs(struct uw *u)
{
	static const char *const larg[] = {"arg-file", "delimiter", "max-args", "max-procs",
					   "max-chars", "process-slot-var", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "adEILnPs", larg, &unk);
	if (unk) {
		uw_mark(u, "xargs: cannot tell which command runs");
		return 0;
	}
	struct sh_field *nv = calloc(u->n - (i < u->n ? i : u->n) + 2, sizeof(*nv));
	if (!nv)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	size_t nn = 0;
	if (i >= u->n)
		nv[nn++] = (struct sh_field){.text = (char *)"echo"};
	for (size_t k = i; k < u->n; k++)
		nv[nn++] = u->v[k];
	/* the command also gets arguments read from stdin */
	nv[nn++] = (struct sh_field){.text = (char *)"…", .unres = true};
	int rc = sh_unwrap(u->ctx, nv, nn, NULL, 0, "xargs", u->depth, NULL, u->ns);
	free(nv);
	return rc;
}

static int do_watch(struct uw *u)
{
	static const char *const larg[] = {"interval", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "nq", larg, &unk);
	if (unk) {
		uw_mark(u, "watch: cannot tell which command runs");
		return 0;
	}
	if (uw_has_opt(u, 1, i, 'x', "exec"))
		return uw_inner(u, i, "watch");
	struct sbuf b = {0};
	for (size_t k = i; k < u->n; k++) {
		if (u->v[k].unres || u->v[k].lookalike) {
			sbuf_free(&b);
			uw_mark(u, "watch: command text is not static");
			return 0;
		}
		if (k > i)
			sbuf_putc(&b, ' ');
		sbuf_puts(&b, u->v[k].text);
	}
	if (b.oom) {
		sbuf_free(&b);
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	}
	int rc = b.s ? reparse(u, b.s, "watch") : 0;
	sbuf_free(&b);
	return rc;
}

static int do_find(struct uw *u)
{
	for (size_t k = 1; k < u->n; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres)
			continue;
		if (strcmp(f->text, "-exec") && strcmp(f->text, "-execdir") && strcmp(f->text, "-ok") &&
		    strcmp(f->text, "-okdir"))
			continue;
		size_t st = k + 1, e = st;
		while (e < u->n && !fis(&u->v[e], ";") &&
		       !(fis(&u->v[e], "+") && e > st && fis(&u->v[e - 1], "{}")))
			e++;
		char via[32];
		snprintf(via, sizeof(via), "find %s", f->text);
		if (e > st) {
			int rc = sh_unwrap(u->ctx, u->v + st, e - st, NULL, 0, via, u->depth, NULL,
					   u->ns);
			if (rc < 0)
				return rc;
		}
		k = e;
	}
	return 0;
}

static bool git_runs_shell(const char *key)
{
	static const char *const exact[] = {
		"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass",
		"core.gitproxy", "sequence.editor", "diff.external", "gpg.program",
		"gpg.ssh.program", "gpg.x509.program", "credential.helper",
		"uploadpack.packobjectshook", "interactive.difffilter", "diff.tool", "merge.tool",
		"web.browser", "sendemail.sendmailcmd", "sendemail.smtpserver", NULL};
	if (in_list(key, exact))
		return true;
	if (starts_with(key, "pager.") || starts_with(key, "filter.") || starts_with(key, "merge.") ||
	    starts_with(key, "difftool.") || starts_with(key, "mergetool.") ||
	    starts_with(key, "credential.") || starts_with(key, "man."))
		return true;
	size_t n = strlen(key);
	return (n > 9 && strcmp(key + n - 9, ".textconv") == 0) ||
	       (n > 8 && strcmp(key + n - 8, ".command") == 0) ||
	       (n > 4 && strcmp(key + n - 4, ".cmd") == 0);
}

/* A git setting KEY=VAL (from -c or `git config KEY VAL`) whose value runs:
 * an alias (`!cmd` is shell text, anything else a git command line), or a
 * key naming a command. key is lower case. */
static int git_setting(struct uw *u, const char *key, const struct sh_field *val, const char *via)
{
	bool alias = starts_with(key, "alias.");
	if (!alias && !git_runs_shell(key))
		return 0;
	if (val->unres || val->lookalike) {
		uw_markf(u, "%s %s: value is not static", via, key);
		return 0;
	}
	const char *v = val->text;
	if (v[0] == '!' || !alias)
		return reparse(u, v[0] == '!' ? v + 1 : v, via);
	struct sbuf b = {0};
	sbuf_puts(&b, "git ");
	sbuf_puts(&b, v);
	int rc = b.oom ? txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory") : reparse(u, b.s, via);
	sbuf_free(&b);
	return rc;
}

static void lower_key(char *key, size_t size, const char *s, size_t len)
{
	if (len >= size)
		len = size - 1;
	for (size_t k = 0; k < len; k++)
		key[k] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] + 32 : s[k]);
	key[len] = '\0';
}

/* `git config [options] KEY VALUE` (also `config set`). */
static int git_config(struct uw *u, size_t i)
{
	size_t k = i + 1, ops[3], nops = 0;
	for (; k < u->n && nops < 3; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres && nops == 0) {
			uw_mark(u, "git config: the key is not static");
			return 0;
		}
		if (!f->unres && f->text[0] == '-') {
			if (fis(f, "-f") || fis(f, "--file") || fis(f, "--blob") || fis(f, "--type") ||
			    fis(f, "--default") || fis(f, "--comment") || fis(f, "--value"))
				k++;
			continue;
		}
		if (nops == 0 && (fis(f, "set") || fis(f, "add")))
			continue;
		ops[nops++] = k;
	}
	if (nops < 2)
		return 0;
	char key[128];
	lower_key(key, sizeof(key), u->v[ops[0]].text, strlen(u->v[ops[0]].text));
	return git_setting(u, key, &u->v[ops[1]], "git config");
}

/* git difftool -x CMD runs CMD with the two files of each difference
 * appended: the command is analysed with those operands ("$LOCAL" "$REMOTE",
 * which git also exports), so rules see what it does to them. */
static int difftool_cmd(struct uw *u, size_t k)
{
	const struct sh_field *f = &u->v[k];
	const char *t = NULL;
	bool unres = false;
	if ((fis(f, "-x") || fis(f, "--extcmd")) && k + 1 < u->n) {
		t = u->v[k + 1].text;
		unres = u->v[k + 1].unres || u->v[k + 1].lookalike;
	} else if (starts_with(f->text, "--extcmd=")) {
		t = f->text + 9;
	} else if (f->text[1] == 'x') {
		t = f->text + 2;
	}
	if (!t)
		return 0;
	if (unres) {
		uw_mark(u, "git difftool -x: command is not static");
		return 0;
	}
	struct sbuf b = {0};
	sbuf_puts(&b, t);
	sbuf_puts(&b, " \"$LOCAL\" \"$REMOTE\"");
	int rc = b.oom ? txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory")
		       : reparse(u, b.s, "git difftool -x");
	sbuf_free(&b);
	return rc;
}

/* Options of git subcommands whose value is shell text. */
static int git_command_options(struct uw *u, size_t i)
{
	static const struct {
		const char *sub, *s, *l;
	} opts[] = {
		{"rebase", "-x", "--exec"},       {"mergetool", NULL, "--tool-cmd"}, {"send-email", NULL, "--sendmail-cmd"},
		{"filter-branch", NULL, "--tree-filter"}, {"filter-branch", NULL, "--index-filter"},
		{"filter-branch", NULL, "--msg-filter"}, {"filter-branch", NULL, "--commit-filter"},
		{"filter-branch", NULL, "--env-filter"}, {"filter-branch", NULL, "--parent-filter"},
		{"am", NULL, "--exec"},
		/* the program run at the other end: locally for a path or file://
		 * remote, on the host for ssh */
		{"clone", "-u", "--upload-pack"},  {"fetch", NULL, "--upload-pack"},
		{"pull", NULL, "--upload-pack"},   {"ls-remote", NULL, "--upload-pack"},
		{"fetch-pack", NULL, "--upload-pack"}, {"fetch-pack", NULL, "--exec"},
		{"push", NULL, "--receive-pack"},  {"push", NULL, "--exec"},
		{"send-pack", NULL, "--receive-pack"}, {"send-pack", NULL, "--exec"},
		{"archive", NULL, "--exec"},
	};
	const char *sub = u->v[i].text;
	int rc = 0;
	for (size_t k = i + 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres)
			continue;
		if (strcmp(sub, "difftool") == 0 && (fis(f, "-x") || fis(f, "--extcmd") ||
						     starts_with(f->text, "--extcmd=") ||
						     (starts_with(f->text, "-x") && f->text[2]))) {
			rc = difftool_cmd(u, k);
			continue;
		}
		for (size_t o = 0; o < ARRAY_SIZE(opts) && rc == 0; o++) {
			if (strcmp(opts[o].sub, sub) != 0)
				continue;
			size_t ll = strlen(opts[o].l);
			char via[64];
			snprintf(via, sizeof(via), "git %s %s", sub, opts[o].l);
			if (((opts[o].s && fis(f, opts[o].s)) || fis(f, opts[o].l)) && k + 1 < u->n) {
				rc = uw_shell_text(u, &u->v[k + 1], via);
			} else if (strncmp(f->text, opts[o].l, ll) == 0 && f->text[ll] == '=') {
				struct sh_field g = *f;
				g.text = f->text + ll + 1;
				rc = uw_shell_text(u, &g, via);
			} else if (opts[o].s && strncmp(f->text, opts[o].s, 2) == 0 && f->text[2]) {
				struct sh_field g = *f; /* -xCMD */
				g.text = f->text + 2;
				rc = uw_shell_text(u, &g, via);
			}
		}
	}
	return rc;
}

/* `git grep -OCMD` / `--open-files-in-pager=CMD`: CMD (shell text) opens
 * the matching files. The value is optional and only ever attached. */
static int git_grep_pager(struct uw *u, size_t i)
{
	int rc = 0;
	for (size_t k = i + 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres || fis(f, "--"))
			break;
		struct sh_field g = *f;
		if (starts_with(f->text, "--open-files-in-pager="))
			g.text = f->text + 22;
		else if (f->text[0] == '-' && f->text[1] == 'O' && f->text[2])
			g.text = f->text + 2;
		else
			continue;
		rc = uw_shell_text(u, &g, "git grep --open-files-in-pager");
	}
	return rc;
}

/* `ext::CMD ARGS` remote URLs: git runs CMD with ARGS (split at spaces,
 * "% " a space, "%%" a percent; %s/%S the service name) when the ext
 * transport is allowed. Judged as that command whether or not it is:
 * the setting may come from a config file this line cannot see. */
static int git_ext_url(struct uw *u, const struct sh_field *f)
{
	struct sbuf b = {0};
	bool q = false;
	for (const char *c = f->text + 5; *c; c++) {
		if (*c == '%' && c[1]) {
			c++;
			if (*c == 's' || *c == 'S') {
				sbuf_puts(&b, q ? "'git-upload-pack'" : "git-upload-pack");
				continue;
			}
			if (!q)
				sbuf_putc(&b, '\'');
			q = true;
			sbuf_puts(&b, *c == '\'' ? "'\\''" : (char[]){*c, '\0'});
			continue;
		}
		if (*c == ' ' && q) {
			sbuf_putc(&b, '\'');
			q = false;
		}
		if (*c != ' ' && !q) {
			sbuf_putc(&b, '\'');
			q = true;
		}
		if (*c == '\'')
			sbuf_puts(&b, "'\\''");
		else
			sbuf_putc(&b, *c);
	}
	if (q)
		sbuf_putc(&b, '\'');
	int rc = b.oom ? txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory")
		 : b.s ? reparse(u, b.s, "git ext::")
		       : 0;
	sbuf_free(&b);
	return rc;
}

static int git_ext_urls(struct uw *u, size_t i)
{
	int rc = 0;
	for (size_t k = i + 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (!starts_with(f->text, "ext::"))
			continue;
		if (f->unres || f->lookalike)
			uw_mark(u, "git ext:: URL: the command is not static");
		else
			rc = git_ext_url(u, f);
	}
	return rc;
}

/* How a command in `git -c KEY=VALUE` is reached: editors keep their key,
 * rules tell a scripted todo-list editor from a pager. */
static const char *git_c_via(const char *key)
{
	if (starts_with(key, "alias."))
		return "git alias";
	if (strcmp(key, "sequence.editor") == 0)
		return "git -c sequence.editor";
	if (strcmp(key, "core.editor") == 0)
		return "git -c core.editor";
	return "git -c";
}

static int do_git(struct uw *u)
{
	size_t i = 1;
	int rc = 0;
	while (i < u->n && rc == 0) {
		const struct sh_field *f = &u->v[i];
		if (f->unres) {
			uw_mark(u, "git: options are not static");
			return 0;
		}
		const char *a = f->text;
		if (a[0] != '-')
			break;
		if (strcmp(a, "-c") == 0 && i + 1 < u->n) {
			const struct sh_field *kv = &u->v[i + 1];
			const char *eq = strchr(kv->text, '=');
			if (kv->unres || kv->lookalike) {
				uw_mark(u, "git -c: value is not static");
			} else if (eq) {
				char key[128];
				lower_key(key, sizeof(key), kv->text, (size_t)(eq - kv->text));
				struct sh_field val = *kv;
				val.text = (char *)eq + 1;
				if (strcmp(key, "core.hookspath") == 0 || strcmp(key, "include.path") == 0 ||
				    starts_with(key, "includeif."))
					uw_markf(u, "git -c %s: runs or loads code from elsewhere", key);
				else
					rc = git_setting(u, key, &val, git_c_via(key));
			}
			i += 2;
			continue;
		}
		if (strcmp(a, "-C") == 0 || strcmp(a, "--git-dir") == 0 ||
		    strcmp(a, "--work-tree") == 0 || strcmp(a, "--namespace") == 0 ||
		    strcmp(a, "--config-env") == 0 || strcmp(a, "--super-prefix") == 0) {
			i += 2;
			continue;
		}
		i++;
	}
	if (rc < 0 || i >= u->n)
		return rc;
	const struct sh_field *sub = &u->v[i];
	if (sub->unres)
		return 0;
	if (strcmp(sub->text, "config") == 0)
		return git_config(u, i);
	if ((rc = git_command_options(u, i)) < 0 || (rc = git_ext_urls(u, i)) < 0)
		return rc;
	if (strcmp(sub->text, "grep") == 0 && (rc = git_grep_pager(u, i)) < 0)
		return rc;
	if (strcmp(sub->text, "submodule") == 0 && i + 1 < u->n && fis(&u->v[i + 1], "foreach")) {
		size_t k = i + 2;
		while (k < u->n && !u->v[k].unres && u->v[k].text[0] == '-')
			k++;
		if (k < u->n) {
			struct sbuf b = {0};
			for (size_t j = k; j < u->n; j++) {
				if (u->v[j].unres) {
					sbuf_free(&b);
					uw_mark(u, "git submodule foreach: command is not static");
					return 0;
				}
				if (j > k)
					sbuf_putc(&b, ' ');
				sbuf_puts(&b, u->v[j].text);
			}
			rc = b.s && !b.oom ? reparse(u, b.s, "git submodule foreach") : 0;
			sbuf_free(&b);
		}
		return rc;
	}
	if (strcmp(sub->text, "bisect") == 0 && i + 1 < u->n && fis(&u->v[i + 1], "run"))
		return uw_inner(u, i + 2, "git bisect run");
	return 0;
}

static int do_tar(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres)
			continue;
		const char *a = f->text;
		static const char *const eqopts[] = {"--checkpoint-action=exec=", "--to-command=",
						     "--use-compress-program=", "--info-script=",
						     "--new-volume-script=", NULL};
		static const char *const sepopts[] = {"--to-command", "--use-compress-program",
						      "--info-script", "--new-volume-script", "-I",
						      "-F", NULL};
		bool done = false;
		for (const char *const *o = eqopts; *o && !done; o++)
			if (starts_with(a, *o)) {
				struct sh_field g = *f;
				g.text = (char *)a + strlen(*o);
				rc = uw_shell_text(u, &g, "tar");
				done = true;
			}
		if (done)
			continue;
		if (in_list(a, sepopts) && k + 1 < u->n) {
			rc = uw_shell_text(u, &u->v[++k], "tar");
			continue;
		}
		if (a[0] == '-' && a[1] == 'I' && a[2]) {
			struct sh_field g = *f;
			g.text = (char *)a + 2;
			rc = uw_shell_text(u, &g, "tar");
		}
	}
	return rc;
}

/* A short-option cluster that ends in `c` (-qc, -lc) takes the command
 * from the next word; letters in valued take a value themselves, so the
 * cluster ends there (-sc is -s with value "c"). */
static bool cluster_ends_in_c(const char *t, const char *valued)
{
	if (t[0] != '-' || t[1] == '-' || !t[1])
		return false;
	for (const char *c = t + 1; *c; c++) {
		if (*c == 'c')
			return c[1] == '\0';
		if (strchr(valued, *c))
			return false;
	}
	return false;
}

static int do_su(struct uw *u)
{
	/* options taking a value: su/runuser -s -g -G -w, script -E -I -O -T -B */
	const char *valued = strcmp(u->name, "script") == 0 ? "EIOTBm" : "sgGw";
	for (size_t k = 1; k < u->n; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres)
			continue;
		if ((fis(f, "--command") || cluster_ends_in_c(f->text, valued)) && k + 1 < u->n)
			return uw_shell_text(u, &u->v[k + 1], u->name);
		if (f->text[0] == '-' && f->text[1] == 'c' && f->text[2]) {
			struct sh_field g = *f;
			g.text = f->text + 2;
			return uw_shell_text(u, &g, u->name);
		}
		if (starts_with(f->text, "--command=")) {
			struct sh_field g = *f;
			g.text = f->text + 10;
			return uw_shell_text(u, &g, u->name);
		}
	}
	if (strcmp(u->name, "script") == 0)
		return 0;
	return stdin_code(u, NULL);
}

/* ---- interpreters ------------------------------------------------------ */

static int code_arg(struct uw *u, const struct sh_field *f, const char *arg_text,
		    const char *lang, const char *flag)
{
	char via[64];
	snprintf(via, sizeof(via), "%s %s", u->name, flag);
	if (f->unres && f->env_only && !f->lookalike && f->sub_begin == f->sub_end) {
		/* static code around values of the environment's variables
		 * (perl -pi -e "s/x/$VERSION/" f): what it may do, the sandbox
		 * contains; what the static code does is judged as usual */
		char buf[160];
		snprintf(buf, sizeof(buf), "%s: code uses values of environment variables", via);
		sh_mark_contained(u->ctx, u->idx, buf);
		return sh_interp_scan(u->ctx, lang, arg_text, strlen(arg_text), via, u->depth + 1,
				      u->idx);
	}
	if (f->unres || f->lookalike) {
		char buf[160];
		snprintf(buf, sizeof(buf), "%s: %s", via, sub_reason(u, f, "code is not static"));
		mark_by(u, f, buf);
		return 0;
	}
	return sh_interp_scan(u->ctx, lang, arg_text, strlen(arg_text), via, u->depth + 1, u->idx);
}

/* Generic interpreter option walk. code_opts: short options whose argument
 * is code; arg_opts: short options taking an argument (attached or next);
 * attached_only: options whose argument can only be attached. */
static int framework_console(struct uw *u, size_t i, const char *prog);

/* An interpreter without inline code: its program is word i (a script,
 * "-" or /dev/stdin for stdin, a process substitution) or stdin; a
 * framework's console script (manage.py, bin/rails) may take inline code. */
static int interp_program(struct uw *u, size_t i, const char *lang)
{
	if (i >= u->n)
		return stdin_code(u, lang);
	const struct sh_field *f = &u->v[i];
	if (!f->unres && (strcmp(sh_basename(f->text), "manage.py") == 0 ||
			  strcmp(sh_basename(f->text), "rails") == 0))
		return framework_console(u, i + 1, sh_basename(f->text));
	if (f->procsub) {
		char buf[160];
		snprintf(buf, sizeof(buf), "%s runs a process substitution: %s", u->name,
			 sub_reason(u, f, "code not static"));
		uw_mark(u, buf);
		return 0;
	}
	if (!f->unres && (strcmp(f->text, "-") == 0 || strcmp(f->text, "/dev/stdin") == 0))
		return stdin_code(u, lang);
	return 0;
}

static int do_interp(struct uw *u, const char *lang, const char *code_opts, const char *arg_opts,
		     const char *attached_only, const char *const *long_code,
		     const char *const *long_arg, const char *stop_opts)
{
	size_t i = 1;
	bool had_code = false;
	int rc = 0;
	while (i < u->n && rc == 0) {
		const struct sh_field *f = &u->v[i];
		if (f->unres && sh_literal_tail(f))
			break; /* the script, "$DIR/tool.py" */
		if (f->unres) {
			char buf[160];
			snprintf(buf, sizeof(buf), "%s: options are not static", u->name);
			mark_by(u, f, buf);
			return 0;
		}
		const char *a = f->text;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			bool is_code = false;
			for (const char *const *l = long_code; l && *l; l++)
				if (strlen(*l) == nl && strncmp(a + 2, *l, nl) == 0)
					is_code = true;
			if (is_code) {
				had_code = true;
				if (eq) {
					rc = code_arg(u, f, eq + 1, lang, "--eval");
				} else if (i + 1 < u->n) {
					i++;
					rc = code_arg(u, &u->v[i], u->v[i].text, lang, a);
				}
				i++;
				continue;
			}
			if (!eq && in_list(a + 2, long_arg))
				i++;
			i++;
			continue;
		}
		bool consumed_next = false;
		for (size_t j = 1; a[j]; j++) {
			char c = a[j];
			if (strchr(code_opts, c)) {
				char flag[3] = {'-', c, '\0'};
				had_code = true;
				if (a[j + 1]) {
					rc = code_arg(u, f, a + j + 1, lang, flag);
				} else if (i + 1 < u->n) {
					rc = code_arg(u, &u->v[i + 1], u->v[i + 1].text, lang, flag);
					consumed_next = true;
				}
				break;
			}
			if (stop_opts && strchr(stop_opts, c))
				return rc; /* e.g. python -m: runs a module */
			if (attached_only && strchr(attached_only, c))
				break;
			if (arg_opts && strchr(arg_opts, c)) {
				if (!a[j + 1])
					consumed_next = true;
				break;
			}
		}
		i += consumed_next ? 2 : 1;
	}
	if (rc < 0 || had_code)
		return rc;
	return interp_program(u, i, lang);
}

/* Framework consoles running inline code: Django's `manage.py shell -c
 * CODE` / `--command CODE` (also django-admin), Rails' `rails runner CODE`
 * / `rails r CODE` (a *.rb operand is a script file). Word i is the
 * subcommand of prog. */
static int framework_console(struct uw *u, size_t i, const char *prog)
{
	bool rails = strcmp(prog, "rails") == 0;
	if (i >= u->n || !(rails ? fis(&u->v[i], "runner") || fis(&u->v[i], "r")
				 : fis(&u->v[i], "shell")))
		return 0;
	char via[48]; /* code_arg puts the command's name first */
	if (strcmp(u->name, prog) == 0)
		snprintf(via, sizeof(via), "%s", u->v[i].text);
	else
		snprintf(via, sizeof(via), "%s %s", prog, u->v[i].text);
	for (size_t k = i + 1; k < u->n; k++) {
		const struct sh_field *f = &u->v[k];
		struct sh_field val;
		size_t next = k + 1;
		if (!rails && uw_opt_value(u, k, "-c", "--command", &val, &next))
			return code_arg(u, &val, val.text, "python", via);
		if (!rails)
			continue;
		if (uw_opt_value(u, k, "-e", "--environment", &val, &next)) {
			k = next - 1;
			continue;
		}
		if (!f->unres && f->text[0] == '-')
			continue;
		size_t l = strlen(f->text);
		if (!f->unres && l > 3 && strcmp(f->text + l - 3, ".rb") == 0)
			return 0; /* a script file */
		return code_arg(u, f, f->text, "ruby", via);
	}
	return 0;
}

static int do_console(struct uw *u)
{
	return framework_console(u, 1, u->name);
}

static int do_python(struct uw *u)
{
	return do_interp(u, "python", "c", "WXQ", NULL, NULL, NULL, "m");
}

static int do_perl(struct uw *u)
{
	return do_interp(u, "perl", "eE", "", "0lixCdDIMmV", NULL, NULL, NULL);
}

/* ruby -run -e CMD [--] ARGS: un.rb's CMD (rm, cp, mv, …) is that command
 * with those arguments, options included (`ruby -run -e rm -- -rf ~`). */
static int ruby_un(struct uw *u, bool *handled)
{
	static const char *const cmds[] = {"rm", "rmdir", "cp", "mv", "install", "ln", "mkdir",
					   "chmod", "touch", NULL};
	bool un = false;
	size_t e = 0;
	for (size_t k = 1; k < u->n && !e; k++) {
		if (fis(&u->v[k], "-run"))
			un = true;
		else if (fis(&u->v[k], "-r") && k + 1 < u->n && fis(&u->v[k + 1], "un")) {
			un = true;
			k++;
		} else if (fis(&u->v[k], "-e") && k + 1 < u->n)
			e = k + 1;
		else if (u->v[k].unres || u->v[k].text[0] != '-')
			break;
	}
	*handled = un && e;
	if (!*handled)
		return 0;
	if (u->v[e].unres) {
		uw_mark(u, "ruby -run: the command is not static");
		return 0;
	}
	if (!in_list(u->v[e].text, cmds))
		return 0; /* httpd, help, mkmf: no command of ours */
	size_t rest = e + 1 + (e + 1 < u->n && fis(&u->v[e + 1], "--"));
	_cleanup_free_ struct sh_field *argv = calloc(u->n - rest + 1, sizeof(*argv));
	if (!argv)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	argv[0] = u->v[e];
	for (size_t k = rest; k < u->n; k++)
		argv[1 + k - rest] = u->v[k];
	return sh_unwrap(u->ctx, argv, u->n - rest + 1, NULL, 0, "ruby -run", u->depth, u->in,
			 u->ns);
}

static int do_ruby(struct uw *u)
{
	bool un;
	int rc = ruby_un(u, &un);
	if (un)
		return rc;
	return do_interp(u, "ruby", "e", "rICEF", "xTWK0l", NULL, NULL, NULL);
}

static int do_node(struct uw *u)
{
	static const char *const lc[] = {"eval", "print", NULL};
	static const char *const la[] = {"require", "import", "loader", "input-type", NULL};
	return do_interp(u, "node", "ep", "r", NULL, lc, la, NULL);
}

static int do_php(struct uw *u)
{
	return do_interp(u, "php", "rBRE", "dcfFz", NULL, NULL, NULL, NULL);
}

static int do_awk(struct uw *u)
{
	static const char *const larg[] = {"field-separator", "assign", "file", "source", "include",
					   "load", "exec", NULL};
	size_t i = 1;
	bool from_file = false, had_src = false;
	int rc = 0;
	while (i < u->n && rc == 0) {
		const struct sh_field *f = &u->v[i];
		if (f->unres) {
			char buf[160];
			snprintf(buf, sizeof(buf), "%s: options are not static", u->name);
			mark_by(u, f, buf);
			return 0;
		}
		const char *a = f->text;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (a[1] == '-') {
			bool src = starts_with(a, "--source");
			if (starts_with(a, "--file") || starts_with(a, "--exec"))
				from_file = true;
			const char *eq = strchr(a, '=');
			const struct sh_field *arg = NULL;
			if (eq) {
				if (src) {
					struct sh_field g = *f;
					g.text = (char *)eq + 1;
					had_src = true;
					rc = code_arg(u, &g, g.text, "awk", "--source");
				}
			} else if (in_list(a + 2, larg) && i + 1 < u->n) {
				arg = &u->v[++i];
				if (src) {
					had_src = true;
					rc = code_arg(u, arg, arg->text, "awk", "--source");
				}
			}
			i++;
			continue;
		}
		char c = a[1];
		const struct sh_field *arg = f;
		const char *val = a + 2;
		if (strchr("FvfeiElW", c) && !a[2] && i + 1 < u->n) {
			arg = &u->v[++i];
			val = arg->text;
		}
		if (c == 'f' || c == 'E')
			from_file = true;
		if (c == 'e') {
			had_src = true;
			rc = code_arg(u, arg, val, "awk", "-e");
		}
		i++;
	}
	if (rc < 0 || from_file || had_src || i >= u->n)
		return rc;
	const struct sh_field *prog = &u->v[i];
	if (prog->unres || prog->lookalike) {
		if (strstr(prog->text, "system") || strchr(prog->text, '|') ||
		    strstr(prog->text, "getline"))
			uw_markf(u, "%s: program is not static", u->name);
		return 0;
	}
	char via[64];
	snprintf(via, sizeof(via), "%s", u->name);
	return sh_interp_scan(u->ctx, "awk", prog->text, strlen(prog->text), via, u->depth + 1,
			      u->idx);
}

/* ---- runners: programs that run a command given in their own syntax ------ */

/* Words from..end joined with spaces, analysed as shell text. */
int uw_joined_text(struct uw *u, size_t from, size_t end, const char *via)
{
	struct sbuf b = {0};
	for (size_t k = from; k < end && k < u->n; k++) {
		if (u->v[k].unres || u->v[k].lookalike) {
			sbuf_free(&b);
			uw_markf(u, "%s: command text is not static", via);
			return 0;
		}
		if (k > from)
			sbuf_putc(&b, ' ');
		sbuf_puts(&b, u->v[k].text);
	}
	if (b.oom) {
		sbuf_free(&b);
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	}
	int rc = b.s ? reparse(u, b.s, via) : 0;
	sbuf_free(&b);
	return rc;
}

/* Value of option s (short, also attached) or l (long, also l=VALUE) at
 * word k, as a field in *out; false when word k is not that option. */
bool uw_opt_value(const struct uw *u, size_t k, const char *s, const char *l,
		      struct sh_field *out, size_t *next)
{
	const struct sh_field *f = &u->v[k];
	if (f->unres)
		return false;
	size_t sl = s ? strlen(s) : 0, ll = l ? strlen(l) : 0;
	if (((s && fis(f, s)) || (l && fis(f, l))) && k + 1 < u->n) {
		*out = u->v[k + 1];
		*next = k + 2;
		return true;
	}
	const char *val = NULL;
	if (l && strncmp(f->text, l, ll) == 0 && f->text[ll] == '=')
		val = f->text + ll + 1;
	else if (s && sl == 2 && strncmp(f->text, s, 2) == 0 && f->text[2] && f->text[1] != '-')
		val = f->text + 2;
	if (!val)
		return false;
	*out = *f;
	out->text = (char *)val;
	*next = k + 1;
	return true;
}

/* vim -c CMD / --cmd CMD / +CMD: an Ex command; `!…` runs shell text. */
static int do_vim(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		bool is = uw_opt_value(u, k, "-c", "--cmd", &val, &next);
		if (!is && !u->v[k].unres && u->v[k].text[0] == '+' && u->v[k].text[1]) {
			val = u->v[k];
			val.text = u->v[k].text + 1;
			is = true;
		}
		k = next;
		if (!is)
			continue;
		if (val.unres) {
			uw_markf(u, "%s -c: command is not static", u->name);
			continue;
		}
		const char *c = val.text;
		while (*c == ':' || *c == ' ')
			c++;
		if (starts_with(c, "silent!"))
			c += 7;
		else if (starts_with(c, "silent"))
			c += 6;
		while (*c == ' ')
			c++;
		if (*c == '!' || starts_with(c, "r !") || starts_with(c, "r!"))
			rc = reparse(u, strchr(c, '!') + 1, "vim !");
		else if (strstr(c, "system(") || starts_with(c, "term") || starts_with(c, "py") ||
			 starts_with(c, "lua") || starts_with(c, "perl") || starts_with(c, "ruby"))
			uw_markf(u, "%s -c: runs code (%.40s)", u->name, c);
	}
	return rc;
}

/* trap 'COMMAND' SIGNAL…: the handler is shell text run later. */
static int do_trap(struct uw *u)
{
	size_t i = 1;
	if (i < u->n && fis(&u->v[i], "--"))
		i++;
	if (i >= u->n || fis(&u->v[i], "-") || fis(&u->v[i], "-p") || fis(&u->v[i], "-l") ||
	    i + 1 >= u->n)
		return 0;
	return uw_shell_text(u, &u->v[i], "trap");
}

/* ssh [options] HOST [COMMAND…]: -o ProxyCommand / LocalCommand run here,
 * the command runs on the host (judged as written: the agent needs the
 * reason either way). */
static int do_ssh(struct uw *u)
{
	static const char *const local_keys[] = {"proxycommand", "localcommand",
						 "knownhostscommand", "remotecommand", NULL};
	size_t i = 1;
	int rc = 0;
	while (i < u->n && rc == 0) {
		const struct sh_field *f = &u->v[i];
		if (f->unres || f->text[0] != '-')
			break;
		struct sh_field val;
		size_t next;
		if (uw_opt_value(u, i, "-o", NULL, &val, &next)) {
			char key[32];
			size_t kl = strcspn(val.text, "= ");
			lower_key(key, sizeof(key), val.text, kl);
			if (in_list(key, local_keys) && val.text[kl]) {
				struct sh_field cmd = val;
				cmd.text = val.text + kl + 1 + strspn(val.text + kl + 1, "= ");
				rc = uw_shell_text(u, &cmd, "ssh -o");
			}
			i = next;
			continue;
		}
		bool takes = f->text[1] && strchr("BbcDEeFIiJLlmOopQRSWw", f->text[strlen(f->text) - 1]) &&
			     f->text[1] != '-';
		i += takes ? 2 : 1;
	}
	if (rc < 0 || i + 1 >= u->n || !strcmp(u->name, "scp") || !strcmp(u->name, "sftp"))
		return rc;
	return uw_joined_text(u, i + 1, u->n, "ssh");
}

/* Tcl text: `exec CMD …`, `spawn CMD …` (expect), `system …` at the start
 * of a command or of a [bracketed] one run a command up to the end of
 * that command; `file delete` and `open "|…"` are held. */
static int tcl_text(struct uw *u, const char *text, const char *via)
{
	static const char *const runs[] = {"exec ", "spawn ", "system ", NULL};
	int rc = 0;
	for (size_t i = 0; text[i] && rc == 0; i++) {
		if (i > 0 && !strchr(" \t\n;[{", text[i - 1]))
			continue;
		if (starts_with(text + i, "file delete") || starts_with(text + i, "open \"|") ||
		    starts_with(text + i, "open |") || starts_with(text + i, "eval ")) {
			uw_markf(u, "%s: script deletes files or runs computed commands", via);
			continue;
		}
		for (const char *const *r = runs; *r && rc == 0; r++) {
			if (!starts_with(text + i, *r))
				continue;
			const char *b = text + i + strlen(*r);
			size_t len = strcspn(b, "];\n");
			_cleanup_free_ char *cmd = strndup(b, len);
			if (!cmd)
				return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
			rc = reparse(u, cmd, via);
		}
	}
	return rc;
}

/* expect -c SCRIPT: Tcl. */
static int do_expect(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		if (!uw_opt_value(u, k, "-c", NULL, &val, &next)) {
			k = next;
			continue;
		}
		k = next;
		if (val.unres)
			uw_mark(u, "expect -c: script is not static");
		else
			rc = tcl_text(u, val.text, "expect spawn");
	}
	return rc;
}

/* tclsh/wish/jimsh: a script file, or the program read from stdin. */
static int do_tclsh(struct uw *u)
{
	size_t i = 1;
	while (i < u->n && !u->v[i].unres && u->v[i].text[0] == '-' && u->v[i].text[1])
		i++;
	if (i < u->n && !(fis(&u->v[i], "-") || fis(&u->v[i], "/dev/stdin"))) {
		if (u->v[i].procsub)
			uw_markf(u, "%s runs a process substitution", u->name);
		return 0;
	}
	const struct sh_stdin *in = u->in ? u->in : &no_stdin;
	if (in->body) {
		if (in->body_unres)
			uw_markf(u, "%s: here-document with unresolved expansions", u->name);
		return tcl_text(u, in->body, u->name);
	}
	return stdin_code(u, "tcl");
}

/* A recipe as the shell sees it: make expands $(NAME) and ${NAME} (here:
 * the environment's variable, unknown) and $$ to $; $(shell CMD) runs CMD. */
static char *make_vars_as_shell(const char *rec)
{
	struct sbuf b = {0};
	for (size_t i = 0; rec[i]; i++) {
		if (rec[i] != '$') {
			sbuf_putc(&b, rec[i]);
			continue;
		}
		if (rec[i + 1] == '$') {
			sbuf_putc(&b, '$');
			i++;
		} else if (rec[i + 1] == '(' && starts_with(rec + i + 2, "shell ")) {
			sbuf_puts(&b, "$(");
			i += 7;
		} else if (rec[i + 1] == '(' || rec[i + 1] == '{') {
			char close = rec[i + 1] == '(' ? ')' : '}';
			size_t n = strspn(rec + i + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
			if (n && rec[i + 2 + n] == close) {
				sbuf_puts(&b, "${");
				for (size_t k = 0; k < n; k++)
					sbuf_putc(&b, rec[i + 2 + k]);
				sbuf_putc(&b, '}');
				i += 2 + n;
			} else {
				sbuf_putc(&b, '$');
			}
		} else {
			sbuf_putc(&b, '$');
		}
	}
	if (b.oom || !b.s) {
		sbuf_free(&b);
		return b.oom ? NULL : strdup("");
	}
	return b.s;
}

/* $(shell CMD) / ${shell CMD} outside recipes run while make reads the
 * text, and so does `NAME != CMD`: each CMD is shell text (after make's
 * own expansion, see make_vars_as_shell). */
static int make_parse_time(struct uw *u, const char *ln, const char *via)
{
	int rc = 0;
	for (const char *p = ln; rc == 0 && (p = strchr(p, '$')) != NULL; p++) {
		if ((p[1] != '(' && p[1] != '{') || !starts_with(p + 2, "shell") ||
		    !p[7] || !strchr(" \t", p[7]))
			continue;
		char open = p[1], close = open == '(' ? ')' : '}';
		size_t depth = 1, k = 7;
		for (; p[k] && depth; k++)
			depth += p[k] == open ? 1 : p[k] == close ? -1 : 0;
		if (depth) {
			uw_markf(u, "%s: unterminated $(shell …)", via);
			return 0;
		}
		_cleanup_free_ char *cmd = strndup(p + 8, k - 9);
		_cleanup_free_ char *sh = cmd ? make_vars_as_shell(cmd) : NULL;
		if (!sh)
			return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
		rc = reparse(u, sh, via);
		p += k - 1; /* a $(shell …) inside was part of this one */
	}
	const char *bang = strstr(ln, "!=");
	if (rc == 0 && bang && bang > ln && ln[0] != '\t' &&
	    strspn(ln, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-+ \t") ==
		    (size_t)(bang - ln)) {
		_cleanup_free_ char *sh = make_vars_as_shell(bang + 2);
		if (!sh)
			return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
		rc = reparse(u, sh, via);
	}
	return rc;
}

int uw_each_line(struct uw *u, const char *text, int (*fn)(struct uw *u, char *line, const void *arg),
		 const void *arg)
{
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	int rc = 0;
	for (char *save = NULL, *ln = strtok_r(copy, "\n", &save); ln && rc == 0;
	     ln = strtok_r(NULL, "\n", &save))
		rc = fn(u, ln, arg);
	return rc;
}

/* One line of makefile text: what runs while make reads it, and a recipe. */
static int makefile_line(struct uw *u, char *ln, const void *via)
{
	const char *rec = NULL;
	if (ln[0] != '\t') {
		int rc = make_parse_time(u, ln, via);
		if (rc != 0)
			return rc;
	}
	if (ln[0] == '\t')
		rec = ln + 1;
	else if (strchr(ln, ':') && strchr(ln, ';') && strchr(ln, ';') > strchr(ln, ':'))
		rec = strchr(ln, ';') + 1;
	if (!rec)
		return 0;
	rec += strspn(rec, " \t@-+");
	_cleanup_free_ char *sh = make_vars_as_shell(rec);
	if (!sh)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	return reparse(u, sh, via);
}

/* Recipes of makefile text (--eval, or a makefile read from a here-document). */
static int makefile_text(struct uw *u, const char *text, const char *via)
{
	return uw_each_line(u, text, makefile_line, via);
}

static int make_overrides(struct uw *u);

static int do_make(struct uw *u)
{
	int rc = make_overrides(u);
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		if (uw_opt_value(u, k, "-E", "--eval", &val, &next)) {
			if (val.unres)
				uw_mark(u, "make --eval: text is not static");
			else
				rc = makefile_text(u, val.text, "make --eval");
		} else if (uw_opt_value(u, k, "-f", "--file", &val, &next) ||
			   uw_opt_value(u, k, NULL, "--makefile", &val, &next)) {
			if (val.procsub) {
				char buf[160];
				snprintf(buf, sizeof(buf), "make reads its makefile from a process substitution: %s",
					 sub_reason(u, &val, "code not static"));
				uw_mark(u, buf);
			} else if (!val.unres && (!strcmp(val.text, "-") || !strcmp(val.text, "/dev/stdin"))) {
				const struct sh_stdin *in = u->in ? u->in : &no_stdin;
				if (in->body && !in->body_unres)
					rc = makefile_text(u, in->body, "make -f -");
				else
					uw_mark(u, "make reads its makefile from stdin");
			}
		}
		k = next;
	}
	return rc;
}

/* A make variable set on the command line whose value make runs as a
 * command (CC=…, SHELL=…), or that carries shell separators into the
 * recipes that expand it: its value is shell text. */
static bool make_command_var(const char *name, size_t len)
{
	static const char *const l[] = {"CC", "CXX", "CPP", "LD", "AR", "AS", "FC", "RANLIB",
					"STRIP", "OBJCOPY", "INSTALL", "RM", "MAKE", "YACC", "LEX",
					"PKG_CONFIG", "SHELL", "HOSTCC", "NM", "PYTHON", "PERL",
					"MKDIR", "CP", "MV", "LN", "SED", "AWK", "TAR", NULL};
	for (const char *const *p = l; *p; p++)
		if (strlen(*p) == len && strncmp(*p, name, len) == 0)
			return true;
	return len > 3 && (strncmp(name + len - 3, "_CC", 3) == 0 ||
			   strncmp(name + len - 3, "CMD", 3) == 0);
}

/* Does .SHELLFLAGS hold an operand (a word not an option, nor the value
 * of -o / +o / -O)? Then `SHELL FLAGS RECIPE` runs that word as its
 * command text: `.SHELLFLAGS='-c rm -rf ~ #'`. */
static bool shellflags_operand(const char *flags)
{
	bool value = false;
	for (const char *w = flags + strspn(flags, " \t"); *w; w += strspn(w, " \t")) {
		size_t l = strcspn(w, " \t");
		if (!value && w[0] != '-' && w[0] != '+')
			return true;
		value = !value && l == 2 && strchr("-+", w[0]) && strchr("oO", w[1]);
		w += l;
	}
	return false;
}

static int make_assignment(struct uw *u, const struct sh_field *f, const char *shell)
{
	const char *eq = strchr(f->text, '=');
	size_t len = (size_t)(eq - f->text);
	while (len > 0 && strchr(":+?!", f->text[len - 1]))
		len--;
	struct sh_field val = *f;
	val.text = (char *)eq + 1;
	if (len == 11 && strncmp(f->text, ".SHELLFLAGS", 11) == 0) {
		if (val.unres) {
			uw_mark(u, "make .SHELLFLAGS: flags are not static");
			return 0;
		}
		if (shellflags_operand(val.text))
			uw_mark(u, "make .SHELLFLAGS: the flags carry a command of their own "
				   "(make splits them; the recipe is no longer what runs)");
		_cleanup_free_ char *t = NULL;
		if (asprintf(&t, "%s %s :", shell, val.text) < 0)
			return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
		return reparse(u, t, "make .SHELLFLAGS");
	}
	if (!(make_command_var(f->text, len) || strpbrk(val.text, ";&|`\n") ||
	      strstr(val.text, "$(")))
		return 0;
	if (val.unres || !strstr(val.text, "$("))
		return uw_shell_text(u, &val, "make variable");
	/* make's own syntax: $(shell CMD) runs CMD, $(NAME) is a variable */
	_cleanup_free_ char *sh = make_vars_as_shell(val.text);
	if (!sh)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	return reparse(u, sh, "make variable");
}

/* make VAR=VALUE operands: SHELL and .SHELLFLAGS run every recipe. */
static int make_overrides(struct uw *u)
{
	const char *shell = "/bin/sh";
	for (size_t k = 1; k < u->n; k++)
		if (!u->v[k].unres && starts_with(u->v[k].text, "SHELL="))
			shell = u->v[k].text + 6;
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		const char *eq = strchr(f->text, '=');
		if (f->text[0] == '-' || !eq || eq == f->text)
			continue;
		if (strspn(f->text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:+?!") !=
		    (size_t)(eq - f->text))
			continue;
		rc = make_assignment(u, f, shell);
	}
	return rc;
}

/* The argv of a cmake -E tool as the command doing the same: rm. */
static int cmake_as_rm(struct uw *u, size_t i, bool recursive)
{
	size_t n = u->n - i + (recursive ? 1 : 0);
	_cleanup_free_ struct sh_field *v = calloc(n, sizeof(*v));
	if (!v)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	v[0] = u->v[i];
	v[0].text = (char *)"rm";
	size_t o = 1;
	if (recursive) {
		v[1] = u->v[i];
		v[1].text = (char *)"-r";
		o = 2;
	}
	for (size_t k = i + 1; k < u->n; k++)
		v[o++] = u->v[k];
	return sh_unwrap(u->ctx, v, n, NULL, 0, "cmake -E", u->depth, u->in, u->ns);
}

/* cmake -E TOOL: rm/remove/remove_directory are file deletions; chdir,
 * env and time run a command. */
static int cmake_tool(struct uw *u, size_t i)
{
	if (i >= u->n || u->v[i].unres)
		return 0;
	const char *t = u->v[i].text;
	if (!strcmp(t, "rm") || !strcmp(t, "remove"))
		return cmake_as_rm(u, i, false);
	if (!strcmp(t, "remove_directory"))
		return cmake_as_rm(u, i, true);
	if (!strcmp(t, "time"))
		return uw_inner(u, i + 1, "cmake -E time");
	if (!strcmp(t, "env")) {
		size_t k = i + 1;
		while (k < u->n && !u->v[k].unres &&
		       (u->v[k].text[0] == '-' || strchr(u->v[k].text, '=')))
			k++;
		return uw_inner(u, k, "cmake -E env");
	}
	if (!strcmp(t, "chdir") && i + 2 < u->n) {
		char *saved;
		bool saved_unres;
		int rc = uw_chdir_push(u->ctx, &u->v[i + 1], &saved, &saved_unres);
		if (rc == 0)
			rc = uw_inner(u, i + 2, "cmake -E chdir");
		uw_chdir_pop(u->ctx, saved, saved_unres);
		return rc;
	}
	return 0;
}

/* cmake -E TOOL …; cmake -P SCRIPT read from stdin or a process
 * substitution is a program nobody can read here. */
static int do_cmake(struct uw *u)
{
	for (size_t k = 1; k < u->n;) {
		struct sh_field val;
		size_t next = k + 1;
		if (fis(&u->v[k], "-E"))
			return cmake_tool(u, k + 1);
		if (uw_opt_value(u, k, "-P", NULL, &val, &next) &&
		    (val.procsub || val.unres || !strcmp(val.text, "-") ||
		     starts_with(val.text, "/dev/stdin") || starts_with(val.text, "/dev/fd/") ||
		     starts_with(val.text, "/proc/self/fd/"))) {
			uw_mark(u, "cmake -P runs a script that is not a file of the workspace");
			return 0;
		}
		k = next;
	}
	return 0;
}

/* less +CMD / -+CMD / --init… : an initial command; `!TEXT` runs shell
 * text, `|…` pipes to one. */
static int do_less(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->text[0] != '+')
			continue;
		const char *bang = strchr(f->text, '!');
		if (f->unres || f->lookalike) {
			if (bang || strchr(f->text, '|'))
				mark_by(u, f, "less +: initial command is not static");
		} else if (bang) {
			rc = reparse(u, bang + 1, "less +!");
		} else if (strchr(f->text, '|')) {
			uw_mark(u, "less +|: pipes to a shell command");
		}
	}
	return rc;
}

/* One line of an ed/ex script: `!CMD`, `w !CMD`, `r !CMD`, `e !CMD` run
 * shell text (after an address). */
static int ed_line(struct uw *u, char *ln, const void *via)
{
	const char *p = ln + strspn(ln, " \t:0123456789,.;$+-");
	if (starts_with(p, "silent")) { /* silent !CMD, silent! !CMD */
		p += 6;
		if (p[0] == '!' && (p[1] == ' ' || p[1] == '\t'))
			p++;
		p += strspn(p, " \t");
	}
	if (*p && strchr("wWreE", *p)) {
		p++;
		p += strspn(p, "q ");
	}
	if (*p == '!' && p[1])
		return reparse(u, p + 1, via);
	if (strstr(ln, "system(") || strstr(ln, "systemlist("))
		uw_markf(u, "%s: script calls system()", u->name);
	return 0;
}

static int ed_script(struct uw *u, const char *text, const char *via)
{
	return uw_each_line(u, text, ed_line, via);
}

/* ed/ex reading their script from stdin. */
static int ed_stdin(struct uw *u)
{
	const struct sh_stdin *in = u->in ? u->in : &no_stdin;
	char via[64];
	snprintf(via, sizeof(via), "%s !", u->name);
	if (in->body) {
		if (in->body_unres)
			uw_markf(u, "%s: here-document with unresolved expansions", u->name);
		return ed_script(u, in->body, via);
	}
	if (in->procsub)
		uw_markf(u, "%s reads its script from a process substitution", u->name);
	else if (in->piped && (in->downloaded || in->decoded))
		uw_markf(u, "%s reads a %s script", u->name, in->downloaded ? "downloaded" : "decoded");
	return 0;
}

static int do_ed(struct uw *u)
{
	return ed_stdin(u);
}

static int do_ex(struct uw *u)
{
	int rc = do_vim(u);
	return rc == 0 ? ed_stdin(u) : rc;
}

/* Emacs Lisp: (shell-command "TEXT") and friends run shell text; other
 * process starters and file deletions are held. */
static int elisp_code(struct uw *u, const char *code)
{
	static const char *const shell[] = {"(shell-command-to-string", "(async-shell-command",
					    "(call-process-shell-command", "(shell-command", NULL};
	static const char *const other[] = {"(call-process", "(start-process", "(make-process",
					    "(process-lines", "(delete-directory", "(delete-file",
					    "(rename-file", "(eval", "(funcall", "(apply", NULL};
	int rc = 0;
	for (const char *p = strchr(code, '('); p && rc == 0; p = strchr(p + 1, '(')) {
		bool sh = false, oth = false;
		size_t len = 0;
		for (const char *const *l = shell; *l && !sh; l++)
			if (starts_with(p, *l) && !strchr("-", p[strlen(*l)]))
				sh = true, len = strlen(*l);
		for (const char *const *l = other; *l && !sh && !oth; l++)
			if (starts_with(p, *l) && strchr(" \t\n)", p[strlen(*l)]))
				oth = true;
		if (oth)
			uw_markf(u, "%s: code starts processes or deletes files", u->name);
		if (!sh)
			continue;
		const char *q = p + len + strspn(p + len, " \t\n");
		size_t n = *q == '"' ? strcspn(q + 1, "\"\\") : 0;
		if (*q != '"' || q[1 + n] != '"') {
			uw_markf(u, "%s: shell-command with a non-literal argument", u->name);
			continue;
		}
		_cleanup_free_ char *t = strndup(q + 1, n);
		if (!t)
			return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
		rc = reparse(u, t, "emacs shell-command");
	}
	return rc;
}

/* emacs --eval CODE / -eval / --execute; -l/--load of stdin is held. */
static int do_emacs(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		if (uw_opt_value(u, k, NULL, "--eval", &val, &next) ||
		    uw_opt_value(u, k, NULL, "-eval", &val, &next) ||
		    uw_opt_value(u, k, NULL, "--execute", &val, &next)) {
			if (val.unres || val.lookalike)
				mark_by(u, &val, "emacs --eval: code is not static");
			else
				rc = elisp_code(u, val.text);
		} else if ((uw_opt_value(u, k, "-l", "--load", &val, &next) ||
			    uw_opt_value(u, k, NULL, "--script", &val, &next)) &&
			   (val.procsub || val.unres || starts_with(val.text, "/dev/") ||
			    starts_with(val.text, "/proc/"))) {
			uw_mark(u, "emacs loads code that is not a file of the workspace");
		}
		k = next;
	}
	return rc;
}

/* Rscript -e EXPR / R -e EXPR */
static int do_rscript(struct uw *u)
{
	static const char *const la[] = {"file", NULL};
	return do_interp(u, "r", "e", "", NULL, NULL, la, NULL);
}

/* curl -K/--config FILE, wget --config FILE / -i FILE: options (output=,
 * url=) read from a file; one that is not a file of the workspace (a
 * process substitution, stdin) sets what nobody can see here. */
static int do_curl(struct uw *u)
{
	for (size_t k = 1; k < u->n; k++) {
		struct sh_field val;
		size_t next = k + 1;
		const struct sh_field *f = &u->v[k];
		bool cfg = uw_opt_value(u, k, NULL, "--config", &val, &next) ||
			   (strcmp(u->name, "curl") == 0 && uw_opt_value(u, k, "-K", NULL, &val, &next));
		if (!cfg && strcmp(u->name, "curl") == 0 && !f->unres && f->text[0] == '-' &&
		    f->text[1] != '-' && strchr(f->text, 'K') && !strchr(f->text, 'K')[1] &&
		    k + 1 < u->n) {
			val = u->v[k + 1]; /* -sK FILE */
			cfg = true;
		}
		if (cfg && (val.procsub || val.unres || !strcmp(val.text, "-") ||
			    starts_with(val.text, "/dev/") || starts_with(val.text, "/proc/"))) {
			uw_markf(u, "%s reads its options from a stream nobody can read here", u->name);
			return 0;
		}
		k = next - 1;
	}
	return 0;
}

/* ---- sed: the `e` command and the `e` flag of `s` run commands ---------- */

/* End of a delimited part of s/y starting after its delimiter d. */
static size_t sed_delimited(const char *t, size_t i, char d)
{
	while (t[i] && t[i] != d)
		i += (t[i] == '\\' && t[i + 1]) ? 2 : 1;
	return t[i] ? i + 1 : i;
}

/* Past an address: N, $, /re/ or \cREc, with ,addr2 / ~N / +N and '!'. */
static size_t sed_address(const char *t, size_t i)
{
	for (int part = 0; part < 2; part++) {
		if (t[i] == '/' || (t[i] == '\\' && t[i + 1])) {
			char d = t[i] == '/' ? '/' : t[i + 1];
			i = sed_delimited(t, i + (t[i] == '/' ? 1 : 2), d);
			while (t[i] == 'I' || t[i] == 'M')
				i++;
		}
		i += strspn(t + i, "0123456789$~+");
		if (part == 0 && t[i] == ',')
			i++;
		else
			break;
	}
	i += strspn(t + i, " \t");
	while (t[i] == '!' || t[i] == ' ' || t[i] == '\t')
		i++;
	return i;
}

/* One sed script: each `e COMMAND` is shell text; a bare `e` and the `e`
 * flag of `s` run what the input makes, which is not known. */
static int sed_script(struct uw *u, const char *t)
{
	int rc = 0;
	for (size_t i = 0; t[i] && rc == 0;) {
		i += strspn(t + i, " \t\n;{}");
		i = sed_address(t, i);
		char c = t[i];
		if (!c)
			break;
		size_t eol = i + 1 + strcspn(t + i + 1, "\n");
		if (c == 'e') {
			_cleanup_free_ char *cmd = strndup(t + i + 1, eol - i - 1);
			if (!cmd)
				return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
			if (!cmd[strspn(cmd, " \t")])
				uw_mark(u, "sed e runs the pattern space as a command");
			else
				rc = reparse(u, cmd, "sed e");
			i = eol;
		} else if ((c == 's' || c == 'y') && t[i + 1] && t[i + 1] != '\n') {
			char d = t[i + 1];
			i = sed_delimited(t, sed_delimited(t, i + 2, d), d);
			size_t fl = strcspn(t + i, ";\n} \tw");
			if (c == 's' && memchr(t + i, 'e', fl))
				uw_mark(u, "sed s///e runs the result as a command");
			i += fl;
			if (t[i] == 'w')
				i = eol;
		} else if (strchr("aicrRwW#", c)) {
			i = eol; /* text, a file name or a comment: to the end of the line */
		} else if (strchr(":btT", c)) {
			i += 1 + strcspn(t + i + 1, ";\n"); /* a label */
		} else {
			i++;
		}
	}
	return rc;
}

/* A script with unknown parts (s/x/$V/) is read as written: what the
 * parts hold comes from the caller's environment, not from the line; a
 * script that is only an expansion ("$SCRIPT") is not known at all. */
static int sed_script_field(struct uw *u, const struct sh_field *f)
{
	if (f->unres && (f->text[0] == '$' || f->text[0] == '`')) {
		uw_mark(u, "sed: script is not static");
		return 0;
	}
	return sed_script(u, f->text);
}

/* sed -e SCRIPT / --expression=SCRIPT / -eSCRIPT, else the first operand
 * (unless -f gives the script: a file, opaque). */
static int do_sed(struct uw *u)
{
	int rc = 0;
	bool given = false;
	size_t first = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		const struct sh_field *f = &u->v[k];
		if (uw_opt_value(u, k, "-e", "--expression", &val, &next)) {
			given = true;
			rc = sed_script_field(u, &val);
		} else if (uw_opt_value(u, k, "-f", "--file", &val, &next)) {
			given = true;
		} else if (!uw_opt_value(u, k, "-l", "--line-length", &val, &next) && !first &&
			   (f->unres || f->text[0] != '-')) {
			first = k;
		}
		k = next;
	}
	if (rc == 0 && !given && first)
		rc = sed_script_field(u, &u->v[first]);
	return rc;
}

/* gdb -ex CMD (also --ex, -iex, --eval-command=CMD): `shell X` and `!X`
 * run shell text, `python X` Python code; -x FILE is a script, opaque. */
static int gdb_command(struct uw *u, const struct sh_field *val)
{
	if (val->unres) {
		uw_mark(u, "gdb -ex: command is not static");
		return 0;
	}
	const char *t = val->text + strspn(val->text, " \t");
	struct sh_field g = *val;
	if (t[0] == '!' || (starts_with(t, "shell") && (!t[5] || t[5] == ' ' || t[5] == '\t'))) {
		g.text = (char *)(t + (t[0] == '!' ? 1 : 5));
		return uw_shell_text(u, &g, "gdb shell");
	}
	static const char *const py[] = {"python ", "py ", "pi ", "python-interactive ", NULL};
	for (size_t i = 0; py[i]; i++)
		if (starts_with(t, py[i]))
			return code_arg(u, &g, t + strlen(py[i]), "python", "-ex python");
	return 0;
}

static int do_gdb(struct uw *u)
{
	static const char *const opts[][2] = {
		{"-ex", "--eval-command"}, {"--ex", "-eval-command"},
		{"-iex", "--init-eval-command"}, {"--iex", "-init-eval-command"},
	};
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
			if (uw_opt_value(u, k, opts[i][0], opts[i][1], &val, &next)) {
				rc = gdb_command(u, &val);
				break;
			}
		k = next;
	}
	return rc;
}

/* lua -e CODE; deno eval CODE */
static int do_lua(struct uw *u)
{
	return do_interp(u, "lua", "e", "l", NULL, NULL, NULL, NULL);
}

static int do_deno(struct uw *u)
{
	if (u->n >= 3 && fis(&u->v[1], "eval"))
		return code_arg(u, &u->v[2], u->v[2].text, "node", "eval");
	return do_interp(u, "node", "ep", "r", NULL, NULL, NULL, NULL);
}

/* julia -e / -E / --eval / --print CODE */
static int do_julia(struct uw *u)
{
	static const char *const lc[] = {"eval", "print", NULL};
	static const char *const la[] = {"procs", "threads", "sysimage", "load", "cpu-target",
					 "machine-file", "depwarn", "color", "history-file", NULL};
	return do_interp(u, "julia", "eE", "ptJLC", "Og", lc, la, NULL);
}

struct handler {
	const char *name;
	int (*fn)(struct uw *u);
};

static const struct handler handlers[] = {
	{"sh", do_shell}, {"bash", do_shell}, {"zsh", do_shell}, {"dash", do_shell},
	{"ksh", do_shell}, {"mksh", do_shell}, {"ash", do_shell}, {"yash", do_shell},
	{"posh", do_shell}, {"rbash", do_shell}, {"fish", do_shell}, {"ksh93", do_shell},
	{"tcsh", do_shell}, {"csh", do_shell}, {"eval", do_eval}, {"source", do_source},
	{".", do_source}, {"alias", do_alias}, {"export", do_export}, {"declare", do_export},
	{"typeset", do_export}, {"readonly", do_export}, {"local", do_export},
	{"sudo", do_sudo}, {"doas", do_doas}, {"env", do_env}, {"command", do_command},
	{"xargs", do_xargs}, {"watch", do_watch}, {"find", do_find}, {"git", do_git},
	{"tar", do_tar}, {"gtar", do_tar}, {"bsdtar", do_tar}, {"su", do_su},
	{"runuser", do_su}, {"script", do_su}, {"awk", do_awk}, {"gawk", do_awk},
	{"mawk", do_awk}, {"nawk", do_awk}, {"perl", do_perl}, {"ruby", do_ruby},
	{"node", do_node}, {"nodejs", do_node}, {"php", do_php}, {"vim", do_vim},
	{"vi", do_vim}, {"nvim", do_vim}, {"view", do_vim}, {"vimdiff", do_vim}, {"ex", do_ex},
	{"gvim", do_vim}, {"trap", do_trap}, {"ssh", do_ssh}, {"expect", do_expect},
	{"make", do_make}, {"gmake", do_make}, {"lua", do_lua}, {"luajit", do_lua},
	{"lua5.1", do_lua}, {"lua5.3", do_lua}, {"lua5.4", do_lua}, {"gdb", do_gdb},
	{"gdb-multiarch", do_gdb}, {"sed", do_sed}, {"gsed", do_sed}, {"bmake", do_make},
	{"cmake", do_cmake}, {"less", do_less}, {"ed", do_ed}, {"red", do_ed},
	{"tclsh", do_tclsh}, {"wish", do_tclsh}, {"jimsh", do_tclsh}, {"tclsh8.6", do_tclsh},
	{"emacs", do_emacs}, {"Rscript", do_rscript}, {"R", do_rscript}, {"curl", do_curl},
	{"wget", do_curl}, {"julia", do_julia}, {"sqlite3", uw_client}, {"sqlite", uw_client},
	{"psql", uw_client}, {"mysql", uw_client}, {"mariadb", uw_client},
	{"manage.py", do_console}, {"django-admin", do_console}, {"rails", do_console},
};

static bool is_python(const char *n)
{
	if (starts_with(n, "pypy"))
		return true;
	if (!starts_with(n, "python"))
		return false;
	for (n += 6; *n; n++)
		if (!((*n >= '0' && *n <= '9') || *n == '.'))
			return false;
	return true;
}

static bool is_perl(const char *n)
{
	if (!starts_with(n, "perl"))
		return false;
	for (n += 4; *n; n++)
		if (!((*n >= '0' && *n <= '9') || *n == '.'))
			return false;
	return true;
}

static int unwrap_one(struct uw *u, const struct sh_redir_raw *const *redirs, size_t nredirs);

int sh_unwrap(struct sh_ctx *ctx, const struct sh_field *argv, size_t argc,
	      const struct sh_redir_raw *const *redirs, size_t nredirs,
	      const char *via, unsigned depth, const struct sh_stdin *in,
	      const struct sh_nodes *ns)
{
	struct uw u = {
		.ctx = ctx, .v = argv, .n = argc, .idx = -1, .via = via, .depth = depth,
		.in = in, .ns = ns,
	};
	struct sh_field dir;
	if (argc == 0 || argv[0].unres)
		return unwrap_one(&u, redirs, nredirs);
	u.name = sh_basename(argv[0].text);
	if (!own_chdir(&u, &dir))
		return unwrap_one(&u, redirs, nredirs);
	char *saved;
	bool saved_unres;
	int rc = uw_chdir_push(ctx, &dir, &saved, &saved_unres);
	if (rc == 0)
		rc = unwrap_one(&u, redirs, nredirs);
	uw_chdir_pop(ctx, saved, saved_unres);
	return rc;
}

/* Emit the command and whatever it runs. */
static int unwrap_one(struct uw *up, const struct sh_redir_raw *const *redirs, size_t nredirs)
{
	struct sh_ctx *ctx = up->ctx;
	const struct sh_field *argv = up->v;
	size_t argc = up->n;
	int idx = sh_emit(ctx, argv, argc, redirs, nredirs, up->via, up->depth);
	if (idx < 0)
		return idx;
	if (argc == 0)
		return 0;
	if (up->in && up->in->body && !up->in->body_unres && !argv[0].unres &&
	    (!strcmp(sh_basename(argv[0].text), "cat") || !strcmp(sh_basename(argv[0].text), "tee"))) {
		int rc = sh_note_body(ctx, idx, up->in->body); /* what a file it writes holds */
		if (rc < 0)
			return rc;
	}
	struct uw u = *up;
	u.idx = idx;
	if (argv[0].unres && sh_literal_tail(&argv[0])) {
		/* "$DIR/bin/tool": a program named tool; its own name decides */
		ctx->out->cmds[idx].word_unresolved[0] = false;
		u.name = sh_basename(argv[0].text);
	} else if (argv[0].unres) {
		char buf[160];
		snprintf(buf, sizeof(buf), "command name is not static (%s)",
			 sub_reason(&u, &argv[0], "expansion"));
		uw_mark(&u, buf);
		return 0;
	}
	if (argv[0].lookalike || argv[0].lookalike_q) {
		uw_mark(&u, "look-alike character in command name");
		return 0;
	}
	if (argv[0].glob) {
		/* /???/b??/r? is whatever the file system matches: rm, or anything */
		uw_mark(&u, "command name is a pathname pattern");
		return 0;
	}
	u.name = sh_basename(argv[0].text);
	int (*fn)(struct uw *) = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(handlers) && !fn; i++)
		if (strcmp(handlers[i].name, u.name) == 0)
			fn = handlers[i].fn;
	if (!fn)
		fn = uw_runner(u.name);
	if (!fn && is_python(u.name))
		fn = do_python;
	if (!fn && is_perl(u.name))
		fn = do_perl;
	if (!fn && strcmp(u.name, "bun") == 0)
		fn = do_node;
	if (!fn && strcmp(u.name, "deno") == 0)
		fn = do_deno;
	if (!fn)
		return 0;
	if (ctx->wrap_nest >= 64) {
		uw_mark(&u, "too many nested wrappers");
		return 0;
	}
	ctx->wrap_nest++;
	int rc = fn(&u);
	ctx->wrap_nest--;
	return rc;
}
