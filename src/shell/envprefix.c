/* NAME=VALUE prefixes of a command that make it run something besides
 * its arguments:
 *   - a variable naming a command (PAGER, GIT_SEQUENCE_EDITOR, …): the
 *     value is shell text (unwrap.c, sh_env_command);
 *   - BASH_ENV / ENV: a file a starting shell sources first, so
 *     `BASH_ENV=<(echo TEXT) bash -c true` runs TEXT: judged as `. FILE`;
 *   - GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: settings
 *     every git it starts reads, exactly `git -c KEY=VALUE` (an alias, a
 *     hooks path, an editor); GIT_CONFIG_PARAMETERS the same in git's own
 *     quoting ('key'='value' …);
 *   - BASH_FUNC_NAME%%=() { BODY; }: a function every bash it starts
 *     defines (env export): BODY is judged;
 *   - interpreter start-up: PYTHONSTARTUP=FILE (`python3 FILE`),
 *     NODE_OPTIONS --require/--import/--loader FILE (`node FILE`), RUBYOPT
 *     -rFILE (`ruby FILE`), PERL5OPT -MMODULE (`perl -e 'use MODULE;'`, and
 *     any code after the module name), JAVA_TOOL_OPTIONS / _JAVA_OPTIONS /
 *     JDK_JAVA_OPTIONS (-XX:OnError=CMD judged, a -javaagent unresolved),
 *     LD_PRELOAD / LD_AUDIT (a library in every program: unresolved);
 *   - TAR_OPTIONS: options of every tar (`tar VALUE`), where
 *     --to-command=TEXT and the like run TEXT;
 *   - GIT_TRACE*=PATH (GIT_TRACE, GIT_TRACE_PACKET, GIT_TRACE2_EVENT, …):
 *     an absolute path is a file every git appends its trace to, judged
 *     as `git >> PATH` (a number or "true" is a descriptor: nothing).
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

static bool starts_with_str(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

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

/* BASH_FUNC_NAME%% (bash's name for an exported function; "()" before 4.4). */
static bool is_bash_func(const char *name, size_t len)
{
	return len > 12 && strncmp(name, "BASH_FUNC_", 10) == 0 &&
	       (strncmp(name + len - 2, "%%", 2) == 0 || strncmp(name + len - 2, "()", 2) == 0);
}

/* GIT_TRACE, GIT_TRACE_<KIND>, GIT_TRACE2, GIT_TRACE2_<KIND>. */
static bool is_git_trace(const char *name, size_t len)
{
	return len >= 9 && strncmp(name, "GIT_TRACE", 9) == 0 &&
	       strspn(name + 9, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len - 9;
}

bool sh_env_names_setup(const char *name, size_t len)
{
	static const char *const l[] = {"BASH_ENV", "ENV", "GIT_CONFIG_COUNT",
					"GIT_CONFIG_PARAMETERS", "PYTHONSTARTUP", "NODE_OPTIONS",
					"RUBYOPT", "PERL5OPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
					"JDK_JAVA_OPTIONS", "LD_PRELOAD", "LD_AUDIT", "TAR_OPTIONS",
					NULL};
	for (const char *const *e = l; *e; e++)
		if (strlen(*e) == len && strncmp(*e, name, len) == 0)
			return true;
	if (is_bash_func(name, len) || is_git_trace(name, len))
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

/* BASH_FUNC_NAME%%=() { BODY; }: bash defines the function; BODY runs
 * whenever a script it runs calls NAME: judged as if it were run. */
static int bash_func(struct sh_ctx *ctx, const struct sh_field *f, unsigned depth, int cmd_idx)
{
	if (f->unres || f->lookalike) {
		mark(ctx, cmd_idx, "an exported bash function that is not static");
		return 0;
	}
	const char *v = strchr(f->text, '=') + 1;
	v += strspn(v, " \t");
	if (strncmp(v, "()", 2) != 0)
		return 0; /* bash imports only values starting "() {" */
	v += 2;
	return sh_reparse(ctx, v, strlen(v), "BASH_FUNC_", depth + 1, cmd_idx, NULL);
}

/* Judge `PROG 'FILE'`: the file the interpreter loads at start-up. */
static int loads_file(struct sh_ctx *ctx, const char *prog, const char *file, size_t len,
		      const char *via, unsigned depth, int cmd_idx)
{
	struct sbuf b = {0};
	_cleanup_free_ char *f = strndup(file, len);
	sbuf_puts(&b, prog);
	sbuf_putc(&b, ' ');
	if (f)
		put_quoted(&b, f);
	else
		b.oom = true;
	return reparse_buf(ctx, &b, via, depth, cmd_idx);
}

/* The word at p of an options value split at blanks: its length. */
static size_t word_len(const char *p)
{
	return strcspn(p, " \t");
}

/* NODE_OPTIONS / RUBYOPT: the files preloaded (--require X, -r X, -rX,
 * --import=X, --loader X …), each judged as run by the interpreter. */
static int preloads(struct sh_ctx *ctx, const char *v, const char *prog, const char *const *opts,
		    const char *via, unsigned depth, int cmd_idx)
{
	int rc = 0;
	for (const char *p = v + strspn(v, " \t"); *p && rc == 0; p += strspn(p, " \t")) {
		size_t l = word_len(p);
		for (const char *const *o = opts; *o && rc == 0; o++) {
			size_t ol = strlen(*o);
			if (l < ol || strncmp(p, *o, ol) != 0)
				continue;
			const char *f = p + ol;
			if (f == p + l) { /* the file is the next word */
				f += strspn(f, " \t");
				l = (size_t)(f - p) + word_len(f);
			} else if (*f == '=') {
				f++;
			} else if (ol > 2) {
				continue; /* --requirex: another option */
			}
			if (f < p + l)
				rc = loads_file(ctx, prog, f, (size_t)(p + l - f), via, depth, cmd_idx);
			break;
		}
		p += l;
	}
	return rc;
}

/* PERL5OPT: -MMODULE / -mMODULE runs `use MODULE` (text after the name,
 * `-MX;system(…)`, is code too); -e is refused by perl but judged. */
static int perl_opts(struct sh_ctx *ctx, const char *v, unsigned depth, int cmd_idx)
{
	struct sbuf code = {0};
	for (const char *p = v + strspn(v, " \t"); *p; p += strspn(p, " \t")) {
		size_t l = word_len(p);
		if (l > 2 && (strncmp(p, "-M", 2) == 0 || strncmp(p, "-m", 2) == 0)) {
			sbuf_puts(&code, "use ");
			for (size_t i = 2; i < l; i++) /* -MX=a,b imports a, b */
				sbuf_putc(&code, p[i] == '=' ? ' ' : p[i]);
			sbuf_puts(&code, ";\n");
		} else if (strncmp(p, "-e", 2) == 0 || strncmp(p, "-E", 2) == 0) {
			sbuf_puts(&code, p + 2);
			break;
		}
		p += l;
	}
	if (!code.s && !code.oom)
		return 0;
	struct sbuf b = {0};
	sbuf_puts(&b, "perl -e ");
	if (code.s)
		put_quoted(&b, code.s);
	b.oom |= code.oom;
	sbuf_free(&code);
	return reparse_buf(ctx, &b, "PERL5OPT=", depth, cmd_idx);
}

/* JAVA_TOOL_OPTIONS and the like: -XX:OnError=CMD / OnOutOfMemoryError=CMD
 * run CMD; an agent is code nobody reads here. */
static int java_opts(struct sh_ctx *ctx, const char *v, unsigned depth, int cmd_idx)
{
	static const char *const on[] = {"-XX:OnError=", "-XX:OnOutOfMemoryError=", NULL};
	if (strstr(v, "-javaagent:") || strstr(v, "-agentpath:") || strstr(v, "-agentlib:")) {
		mark(ctx, cmd_idx, "the Java options load an agent (code that is not read here)");
		return 0;
	}
	for (const char *const *o = on; *o; o++) {
		const char *c = strstr(v, *o);
		if (c)
			return sh_reparse(ctx, c + strlen(*o), strlen(c + strlen(*o)), "-XX:OnError=",
					  depth + 1, cmd_idx, NULL);
	}
	return 0;
}

/* TAR_OPTIONS: `tar VALUE`; an option running a command takes the rest of
 * the value as its text (however tar splits it, nothing more runs). */
static int tar_opts(struct sh_ctx *ctx, const char *v, unsigned depth, int cmd_idx)
{
	static const char *const ex[] = {"--to-command=", "--use-compress-program=", "--info-script=",
					 "--new-volume-script=", "--rsh-command=", "exec=", NULL};
	struct sbuf b = {0};
	sbuf_puts(&b, "tar ");
	sbuf_puts(&b, v);
	int rc = reparse_buf(ctx, &b, "TAR_OPTIONS=", depth, cmd_idx);
	for (const char *const *o = ex; *o && rc == 0; o++) {
		const char *c = strstr(v, *o);
		if (c)
			rc = sh_reparse(ctx, c + strlen(*o), strlen(c + strlen(*o)), "TAR_OPTIONS=",
					depth + 1, cmd_idx, NULL);
	}
	return rc;
}

/* GIT_TRACE*=PATH: git appends to PATH (GIT_TRACE2* also writes files in a
 * directory PATH, or connects to af_unix:PATH): a write like `>> PATH`.
 * A path that is not static is left to the sandbox: the trace is no code
 * and the workspace is the only place it could escape to. */
static int git_trace(struct sh_ctx *ctx, const struct sh_field *f, unsigned depth, int cmd_idx)
{
	const char *eq = strchr(f->text, '=');
	if (f->unres || f->lookalike)
		return 0; /* a file the sandbox contains, unless it is in the workspace */
	const char *v = eq + 1;
	if (starts_with_str(v, "af_unix:"))
		v += 8 + (starts_with_str(v + 8, "stream:") ? 7 : starts_with_str(v + 8, "dgram:") ? 6 : 0);
	if (v[0] != '/' && v[0] != '~')
		return 0; /* 1, 2, true, 0: a descriptor or off */
	struct sbuf b = {0};
	sbuf_puts(&b, "git >> ");
	if (v[0] == '~') { /* the shell expanded it: keep it a home path */
		size_t user = strcspn(v, "/");
		if (strspn(v + 1, "abcdefghijklmnopqrstuvwxyz0123456789._-") < user - 1) {
			sbuf_free(&b);
			return 0; /* not a tilde prefix bash expands */
		}
		sbuf_puts(&b, "~");
		for (size_t k = 1; k < user; k++)
			sbuf_putc(&b, v[k]);
		v += user;
		if (*v == '/') {
			sbuf_putc(&b, '/');
			v++;
		}
	}
	if (*v)
		put_quoted(&b, v);
	char via[48];
	snprintf(via, sizeof(via), "%.*s=", (int)(eq - f->text), f->text);
	return reparse_buf(ctx, &b, via, depth, cmd_idx);
}

/* Interpreter and program start-up variables (see the top of the file). */
static int startup_options(struct sh_ctx *ctx, const struct sh_field *f, unsigned depth,
			   int cmd_idx)
{
	static const char *const node[] = {"--require", "-r", "--import", "--loader",
					   "--experimental-loader", NULL};
	static const char *const ruby[] = {"-r", NULL};
	const char *eq = strchr(f->text, '=');
	const char *v = eq + 1;
	if (!*v)
		return 0;
	if (f->unres || f->lookalike) {
		char buf[96];
		snprintf(buf, sizeof(buf), "%.*s= sets start-up code that is not static",
			 (int)(eq - f->text), f->text);
		mark(ctx, cmd_idx, buf);
		return 0;
	}
	if (name_is(f, "PYTHONSTARTUP"))
		return loads_file(ctx, "python3", v, strlen(v), "PYTHONSTARTUP=", depth, cmd_idx);
	if (name_is(f, "NODE_OPTIONS"))
		return preloads(ctx, v, "node", node, "NODE_OPTIONS=", depth, cmd_idx);
	if (name_is(f, "RUBYOPT"))
		return preloads(ctx, v, "ruby", ruby, "RUBYOPT=", depth, cmd_idx);
	if (name_is(f, "PERL5OPT"))
		return perl_opts(ctx, v, depth, cmd_idx);
	if (name_is(f, "TAR_OPTIONS"))
		return tar_opts(ctx, v, depth, cmd_idx);
	if (name_is(f, "LD_PRELOAD") || name_is(f, "LD_AUDIT")) {
		mark(ctx, cmd_idx, "LD_PRELOAD / LD_AUDIT load a library into every program started "
				   "(its code is not read here)");
		return 0;
	}
	return java_opts(ctx, v, depth, cmd_idx);
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

/* One single-quoted word of GIT_CONFIG_PARAMETERS at *p ('it'\''s'
 * quoting, as git writes it) into b; false when it is not one. */
static bool gcp_word(const char **p, struct sbuf *b)
{
	const char *s = *p;
	if (*s != '\'')
		return false;
	for (s++;; s++) {
		if (!*s)
			return false;
		if (*s != '\'') {
			sbuf_putc(b, *s);
			continue;
		}
		if (strncmp(s, "'\\''", 4) != 0)
			break;
		sbuf_putc(b, '\'');
		s += 3;
	}
	*p = s + 1;
	return true;
}

/* GIT_CONFIG_PARAMETERS="'key'='value' 'key2'": each setting judged as
 * `git -c key=value`; text git would not read is unresolved. */
static int git_config_parameters(struct sh_ctx *ctx, const struct sh_field *f, unsigned depth,
				 int cmd_idx)
{
	if (f->unres || f->lookalike) {
		mark(ctx, cmd_idx, "GIT_CONFIG_PARAMETERS is not static");
		return 0;
	}
	const char *p = strchr(f->text, '=') + 1;
	int rc = 0;
	for (unsigned n = 0; rc == 0; n++) {
		p += strspn(p, " ");
		if (!*p)
			break;
		struct sbuf kv = {0};
		bool ok = n < GIT_CONFIG_MAX && gcp_word(&p, &kv);
		if (ok && *p == '=') {
			sbuf_putc(&kv, '=');
			p++;
			ok = gcp_word(&p, &kv);
		}
		if (!ok || kv.oom || !kv.s || (*p && *p != ' ')) {
			sbuf_free(&kv);
			if (!kv.oom)
				mark(ctx, cmd_idx, "GIT_CONFIG_PARAMETERS: settings that are not read here");
			return kv.oom ? -ENOMEM : 0;
		}
		struct sbuf b = {0};
		sbuf_puts(&b, "git -c ");
		put_quoted(&b, kv.s);
		sbuf_free(&kv);
		rc = reparse_buf(ctx, &b, "GIT_CONFIG_PARAMETERS=", depth, cmd_idx);
	}
	return rc;
}

/* GIT_CONFIG_COUNT=N: settings 0..N-1, judged as `git -c KEY=VALUE`. */
static int git_config_env(struct sh_ctx *ctx, const struct sh_field *env, size_t n,
			  unsigned depth, int cmd_idx)
{
	const struct sh_field *count = NULL;
	for (size_t k = 0; k < n; k++) {
		if (name_is(&env[k], "GIT_CONFIG_PARAMETERS")) {
			int rc = git_config_parameters(ctx, &env[k], depth, cmd_idx);
			if (rc < 0)
				return rc;
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
		else if (is_bash_func(env[k].text, (size_t)(eq - env[k].text)))
			rc = bash_func(ctx, &env[k], depth, cmd_idx);
		else if (is_git_trace(env[k].text, (size_t)(eq - env[k].text)))
			rc = git_trace(ctx, &env[k], depth, cmd_idx);
		else if (strncmp(env[k].text, "GIT_CONFIG_", 11) != 0 && /* below */
			 sh_env_names_setup(env[k].text, (size_t)(eq - env[k].text)))
			rc = startup_options(ctx, &env[k], depth, cmd_idx);
	}
	return rc < 0 ? rc : git_config_env(ctx, env, n, depth, cmd_idx);
}
