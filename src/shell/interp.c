/* Interpreter code strings (python -c, perl -e, ruby -e, node -e, php -r,
 * awk programs): recognise the obvious calls that run commands or delete
 * files and report them as commands of their own.
 *
 *   shell text   os.system("…"), os.popen, subprocess.*("…"), system "…",
 *                `…`, qx{…}, %x(…), execSync("…"), shell_exec("…"), awk
 *                system("…"), "…" | getline, print | "…"   → parsed as shell
 *   argv         subprocess.run(["rm", "-rf", "x"]), system("rm", "-rf"),
 *                spawnSync("rm", ["-rf", "x"])                → that argv
 *   deletions    shutil.rmtree(p), FileUtils.rm_rf(p), fs.rmSync(p),
 *                rmtree(p)                    → argv rm -rf p
 *                os.remove / os.unlink / unlink / fs.unlinkSync → rm p
 *                os.rmdir / rmdir                               → rmdir p
 * When such a call's argument is not a plain literal (a variable, a
 * concatenation, an interpolating string), the interpreter command is
 * marked unresolved. This is a heuristic scan, not a parser of these
 * languages: it errs towards reporting more.
 */
#include "shell/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* IK_RMRF and after: a call on one path, reported as the command doing the
 * same (IK_PATH: pathlib's Path("p").method(), IK_OPEN: open(p, mode) only
 * when mode writes); IK_KILL: kill(pid, …) with a literal number. */
enum ik { IK_SHELL, IK_ARGV, IK_SPAWN, IK_DOWNLOAD, IK_RMRF, IK_RM, IK_RMDIR, IK_MV, IK_CHMOD, IK_WRITE,
	  IK_OPEN, IK_PATH, IK_KILL, IK_KILL2 /* kill(SIGNAL, PID) */,
	  IK_COMPUTED /* getattr(o, NAME), __import__(NAME): NAME must be a literal */ };

struct ipat {
	const char *name;
	enum ik kind;
};

static const struct ipat py_pats[] = {
	{"os.system", IK_SHELL}, {"os.popen", IK_SHELL}, {"subprocess.run", IK_ARGV},
	{"subprocess.call", IK_ARGV}, {"subprocess.check_call", IK_ARGV},
	{"subprocess.check_output", IK_ARGV}, {"subprocess.Popen", IK_ARGV},
	{"subprocess.getoutput", IK_SHELL}, {"subprocess.getstatusoutput", IK_SHELL},
	{"commands.getoutput", IK_SHELL}, {"pty.spawn", IK_ARGV}, {"os.execvp", IK_SPAWN},
	{"os.execv", IK_SPAWN}, {"os.execlp", IK_ARGV}, {"os.execl", IK_ARGV},
	{"os.spawnlp", IK_ARGV}, {"shutil.rmtree", IK_RMRF}, {"os.remove", IK_RM},
	{"os.unlink", IK_RM}, {"os.rmdir", IK_RMDIR}, {"os.removedirs", IK_RMDIR},
	{"system", IK_SHELL}, {"rmtree", IK_RMRF}, {"check_output", IK_ARGV},
	{"check_call", IK_ARGV}, {"getoutput", IK_SHELL}, {"os.rename", IK_MV},
	{"os.replace", IK_MV}, {"os.renames", IK_MV}, {"shutil.move", IK_MV}, {"os.chmod", IK_CHMOD},
	{"os.chown", IK_CHMOD}, {"os.lchown", IK_CHMOD}, {"os.truncate", IK_WRITE},
	{"shutil.copy", IK_MV}, {"open", IK_OPEN}, {"Path", IK_PATH}, {"os.kill", IK_KILL},
	{"os.killpg", IK_KILL}, {"kill", IK_KILL}, {"urlretrieve", IK_DOWNLOAD},
	{"getattr", IK_COMPUTED}, {"__import__", IK_COMPUTED}, {"import_module", IK_COMPUTED},
	{NULL, 0},
};
static const struct ipat perl_pats[] = {
	{"kill", IK_KILL2}, {"system", IK_ARGV}, {"exec", IK_ARGV}, {"rmtree", IK_RMRF}, {"remove_tree", IK_RMRF},
	{"unlink", IK_RM}, {"rmdir", IK_RMDIR}, {NULL, 0},
};
static const struct ipat ruby_pats[] = {
	{"system", IK_ARGV}, {"exec", IK_ARGV}, {"spawn", IK_ARGV}, {"IO.popen", IK_SHELL},
	{"Open3.capture2", IK_ARGV}, {"Open3.capture2e", IK_ARGV}, {"Open3.capture3", IK_ARGV},
	{"Open3.popen3", IK_ARGV}, {"FileUtils.rm_rf", IK_RMRF}, {"FileUtils.rm_r", IK_RMRF},
	{"FileUtils.remove_dir", IK_RMRF}, {"FileUtils.remove_entry", IK_RMRF},
	{"FileUtils.rm", IK_RM}, {"File.delete", IK_RM}, {"File.unlink", IK_RM},
	{"Dir.rmdir", IK_RMDIR}, {"File.rename", IK_MV}, {"FileUtils.mv", IK_MV},
	{"File.write", IK_WRITE}, {"Process.kill", IK_KILL2}, {NULL, 0},
};
static const struct ipat node_pats[] = {
	{"execSync", IK_SHELL}, {"child_process.exec", IK_SHELL}, {"cp.exec", IK_SHELL},
	{"exec", IK_SHELL}, {"execFileSync", IK_SPAWN}, {"execFile", IK_SPAWN},
	{"spawnSync", IK_SPAWN}, {"spawn", IK_SPAWN}, {"rmSync", IK_RMRF}, {"rmdirSync", IK_RMRF},
	{"fs.rm", IK_RMRF}, {"fs.rmdir", IK_RMRF}, {"unlinkSync", IK_RM}, {"fs.unlink", IK_RM},
	{"Bun.spawn", IK_ARGV}, {"Deno.Command", IK_SPAWN}, {"Deno.removeSync", IK_RMRF},
	{"Deno.remove", IK_RMRF}, {"renameSync", IK_MV}, {"fs.rename", IK_MV},
	{"chmodSync", IK_CHMOD}, {"fs.chmod", IK_CHMOD}, {"chownSync", IK_CHMOD},
	{"writeFileSync", IK_WRITE}, {"fs.writeFile", IK_WRITE}, {"appendFileSync", IK_WRITE},
	{"process.kill", IK_KILL}, {"Deno.writeTextFileSync", IK_WRITE}, {NULL, 0},
};
static const struct ipat php_pats[] = {
	{"system", IK_SHELL}, {"exec", IK_SHELL}, {"shell_exec", IK_SHELL},
	{"passthru", IK_SHELL}, {"popen", IK_SHELL}, {"proc_open", IK_ARGV},
	{"pcntl_exec", IK_SPAWN}, {"unlink", IK_RM}, {"rmdir", IK_RMDIR}, {"rename", IK_MV},
	{"file_put_contents", IK_WRITE}, {"posix_kill", IK_KILL}, {NULL, 0},
};
static const struct ipat lua_pats[] = {
	{"os.execute", IK_SHELL}, {"io.popen", IK_SHELL}, {"os.remove", IK_RM},
	{"os.rename", IK_MV}, {NULL, 0},
};
static const struct ipat r_pats[] = {
	{"system", IK_SHELL}, {"shell", IK_SHELL}, {"system2", IK_SPAWN}, {"unlink", IK_RMRF},
	{"file.remove", IK_RM}, {"file.rename", IK_MV}, {NULL, 0},
};
/* julia: rm(p; recursive=true), mv, chmod; run(`…`) through backticks() */
static const struct ipat julia_pats[] = {
	{"rm", IK_RMRF}, {"Base.rm", IK_RMRF}, {"mv", IK_MV}, {"chmod", IK_CHMOD},
	{"chown", IK_CHMOD}, {"write", IK_WRITE}, {"kill", IK_KILL}, {NULL, 0},
};
static const struct ipat awk_pats[] = {
	{"system", IK_SHELL}, {NULL, 0},
};

struct scan {
	struct sh_ctx *ctx;
	const char *lang;
	const char *s;
	size_t n;
	const char *via;
	unsigned depth;
	int idx;
	char reason[160];
	bool spawns; /* a call that runs a command was seen */
};

static bool ident(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

static void skip_ws(const struct scan *sc, size_t *i)
{
	while (*i < sc->n && strchr(" \t\r\n", sc->s[*i]))
		(*i)++;
}

static void unresolved(struct scan *sc, const char *what)
{
	snprintf(sc->reason, sizeof(sc->reason), "%s: %s with a non-literal argument", sc->via,
		 what);
	sh_mark_unresolved(sc->ctx, sc->idx, sc->reason);
}

static bool lang_is(const struct scan *sc, const char *l)
{
	return strcmp(sc->lang, l) == 0;
}

/* String literal at *i → out. Returns 1 when a static literal was read, 0
 * if there is no literal here, -1 if it is a literal with interpolation. */
static int literal(const struct scan *sc, size_t *i, struct sbuf *out);

/* Python's os.path.expanduser("~/x") is the literal "~/x": the path the
 * commands it is reported as expand the same way. */
static int expanduser_literal(const struct scan *sc, size_t *i, struct sbuf *out)
{
	static const char *const fns[] = {"os.path.expanduser(", "path.expanduser(",
					  "expanduser(", NULL};
	for (const char *const *f = fns; *f; f++) {
		size_t fl = strlen(*f);
		if (sc->n - *i < fl || strncmp(sc->s + *i, *f, fl) != 0)
			continue;
		size_t k = *i + fl;
		skip_ws(sc, &k);
		int r = literal(sc, &k, out);
		if (r != 1)
			return r == 0 ? -1 : r;
		skip_ws(sc, &k);
		if (k >= sc->n || sc->s[k] != ')')
			return -1;
		*i = k + 1;
		return 1;
	}
	return 0;
}

static int literal(const struct scan *sc, size_t *i, struct sbuf *out)
{
	const char *s = sc->s;
	size_t n = sc->n, p = *i;
	bool raw = false, fmt = false;
	if (lang_is(sc, "python") && *i < n && (s[*i] == 'o' || s[*i] == 'p' || s[*i] == 'e')) {
		int r = expanduser_literal(sc, i, out);
		if (r != 0)
			return r;
	}
	/* julia's homedir(), ruby's Dir.home: the home directory, as the
	 * shell spells it */
	const char *home = lang_is(sc, "julia") ? "homedir()" : lang_is(sc, "ruby") ? "Dir.home" : NULL;
	if (home && n - p >= strlen(home) && strncmp(s + p, home, strlen(home)) == 0 &&
	    (p + strlen(home) >= n || !ident(s[p + strlen(home)]))) {
		sbuf_putc(out, '~');
		*i = p + strlen(home);
		return 1;
	}
	if (lang_is(sc, "python")) {
		size_t k = p;
		while (k < n && k - p < 2 && strchr("rRbBuUfF", s[k])) {
			if (s[k] == 'r' || s[k] == 'R')
				raw = true;
			if (s[k] == 'f' || s[k] == 'F')
				fmt = true;
			k++;
		}
		if (k < n && (s[k] == '"' || s[k] == '\''))
			p = k;
	}
	if (p >= n)
		return 0;
	char q = s[p];
	bool ok_q = q == '"' || q == '\'' || (q == '`' && lang_is(sc, "node"));
	if (lang_is(sc, "awk"))
		ok_q = q == '"';
	if (!ok_q)
		return 0;
	size_t ql = 1;
	if (lang_is(sc, "python") && p + 2 < n && s[p + 1] == q && s[p + 2] == q)
		ql = 3;
	p += ql;
	bool interp = false;
	bool single_raw = q == '\'' && !lang_is(sc, "python") && !lang_is(sc, "node");
	for (;;) {
		if (p >= n)
			return 0; /* unterminated: not a literal we understand */
		char c = s[p];
		if (c == q && (ql == 1 || (p + 2 < n && s[p + 1] == q && s[p + 2] == q)))
			break;
		if (c == '\\' && p + 1 < n) {
			char e = s[p + 1];
			if (raw || (single_raw && e != '\\' && e != '\'')) {
				sbuf_putc(out, c);
				p++;
				continue;
			}
			p += 2;
			switch (e) {
			case 'n': sbuf_putc(out, '\n'); break;
			case 't': sbuf_putc(out, '\t'); break;
			case 'r': sbuf_putc(out, '\r'); break;
			case '0': sbuf_putc(out, '\0'); break;
			case '\n': break;
			default:
				if (e == q || e == '\\' || e == '"' || e == '\'' || e == '$' || e == '`' ||
				    e == '/')
					sbuf_putc(out, e);
				else {
					sbuf_putc(out, '\\');
					sbuf_putc(out, e);
				}
			}
			continue;
		}
		if (fmt && (c == '{'))
			interp = true;
		if (!single_raw && q != '\'' &&
		    ((c == '$' && (lang_is(sc, "perl") || lang_is(sc, "php")) && p + 1 < n &&
		      (ident(s[p + 1]) || s[p + 1] == '{')) ||
		     (c == '@' && lang_is(sc, "perl") && p + 1 < n && ident(s[p + 1])) ||
		     (c == '#' && lang_is(sc, "ruby") && p + 1 < n && s[p + 1] == '{') ||
		     (c == '$' && lang_is(sc, "julia") && p + 1 < n && (ident(s[p + 1]) || s[p + 1] == '(')) ||
		     (c == '$' && q == '`' && p + 1 < n && s[p + 1] == '{')))
			interp = true;
		sbuf_putc(out, c);
		p++;
	}
	*i = p + ql;
	return interp ? -1 : 1;
}

/* After a literal: is the argument finished (no concatenation etc.)? */
static bool arg_ends(const struct scan *sc, size_t i)
{
	skip_ws(sc, &i);
	if (i >= sc->n)
		return true;
	char c = sc->s[i];
	return c == ')' || c == ',' || c == ';' || c == ']' || c == '}' ||
	       (lang_is(sc, "perl") && (c == 'o' || c == 'a')) /* or/and */;
}

static int emit_argv(struct scan *sc, char **words, bool *unres, size_t nw)
{
	sc->spawns = true;
	if (nw == 0)
		return 0;
	struct sh_field *f = calloc(nw, sizeof(*f));
	int rc;
	if (!f) {
		rc = txbox_fail(sc->ctx->err, -ENOMEM, "shell: out of memory");
	} else {
		for (size_t k = 0; k < nw; k++) {
			f[k].text = words[k];
			f[k].unres = unres[k];
		}
		rc = sh_unwrap(sc->ctx, f, nw, NULL, 0, sc->via, sc->depth, NULL, NULL);
		free(f);
	}
	for (size_t k = 0; k < nw; k++)
		free(words[k]);
	return rc;
}

static int emit_shell(struct scan *sc, const char *text, size_t len)
{
	sc->spawns = true;
	return sh_reparse(sc->ctx, text, len, sc->via, sc->depth, sc->idx, NULL);
}

/* Read a list of literals "[a, b]" / "(a, b)" or bare "a, b" up to ')'.
 * Returns number of words (>= 0), words/unres filled (max cap). */
static size_t literal_list(struct scan *sc, size_t *i, char close, char **words, bool *unres,
			   size_t cap, bool *bad)
{
	size_t nw = 0;
	for (;;) {
		skip_ws(sc, i);
		if (*i >= sc->n)
			break;
		if (close && sc->s[*i] == close) {
			(*i)++;
			break;
		}
		struct sbuf b = {0};
		int r = literal(sc, i, &b);
		if (r == 1 && arg_ends(sc, *i)) {
			if (nw < cap) {
				words[nw] = sbuf_take(&b);
				unres[nw] = false;
				if (words[nw])
					nw++;
			} else
				sbuf_free(&b);
		} else {
			sbuf_free(&b);
			*bad = true;
			if (nw < cap) {
				words[nw] = strdup("…");
				unres[nw] = true;
				if (words[nw])
					nw++;
			}
			/* skip this element */
			size_t d = 0;
			while (*i < sc->n) {
				char c = sc->s[*i];
				if (c == '(' || c == '[' || c == '{')
					d++;
				else if (c == ')' || c == ']' || c == '}') {
					if (d == 0)
						break;
					d--;
				} else if (c == ',' && d == 0)
					break;
				(*i)++;
			}
		}
		skip_ws(sc, i);
		if (*i < sc->n && sc->s[*i] == ',') {
			(*i)++;
			continue;
		}
		if (close && *i < sc->n && sc->s[*i] == close)
			(*i)++;
		break;
	}
	return nw;
}

#define MAXW 64

/* kill(PID, …) with a literal pid: reported as kill -9 PID. */
static int kill_call(struct scan *sc, size_t i)
{
	size_t st = i, en = i;
	if (en < sc->n && (sc->s[en] == '-' || sc->s[en] == '+'))
		en++;
	while (en < sc->n && sc->s[en] >= '0' && sc->s[en] <= '9')
		en++;
	if (en == st || (en == st + 1 && !(sc->s[st] >= '0' && sc->s[st] <= '9')))
		return 0; /* not a literal pid: a variable is the common, harmless case */
	char *words[3] = {strdup("kill"), strdup("-9"), strndup(sc->s + st, en - st)};
	bool unres[3] = {false, false, false};
	if (!words[0] || !words[1] || !words[2]) {
		for (size_t k = 0; k < 3; k++)
			free(words[k]);
		return -ENOMEM;
	}
	return emit_argv(sc, words, unres, 3);
}

/* The command a one-path call amounts to, NULL for none. i: after the
 * path literal's call (for Path("p").method() and open(p, mode)). */
static const char *path_command(const struct scan *sc, const struct ipat *pt, size_t i, bool more)
{
	static const struct {
		const char *method, *cmd;
	} methods[] = {{".unlink(", "rm"}, {".rmdir(", "rmdir"}, {".rename(", "mv"},
		       {".replace(", "mv"}, {".chmod(", "chmod"}, {".write_text(", "tee"},
		       {".write_bytes(", "tee"}, {".touch(", "tee"}, {".symlink_to(", "ln"}};
	switch (pt->kind) {
	case IK_RMRF:
	case IK_RM:
		return "rm";
	case IK_RMDIR:
		return "rmdir";
	case IK_MV:
		return "mv";
	case IK_CHMOD:
		return "chmod";
	case IK_WRITE:
		return "tee";
	case IK_OPEN: {
		if (!more)
			return NULL;
		size_t k = i + 1;
		skip_ws(sc, &k);
		if (k >= sc->n || (sc->s[k] != '"' && sc->s[k] != '\''))
			return NULL;
		for (size_t m = k + 1; m < sc->n && sc->s[m] != sc->s[k]; m++)
			if (strchr("wax+", sc->s[m]))
				return "tee";
		return NULL;
	}
	case IK_PATH:
		if (i < sc->n && sc->s[i] == ')')
			i++;
		for (size_t m = 0; m < sizeof(methods) / sizeof(*methods); m++)
			if (sc->n - i >= strlen(methods[m].method) &&
			    strncmp(sc->s + i, methods[m].method, strlen(methods[m].method)) == 0)
				return methods[m].cmd;
		return NULL;
	default:
		return NULL;
	}
}

/* urlretrieve(URL, PATH): the download `curl -o PATH URL` would make. */
static int download_call(struct scan *sc, struct sbuf *url, size_t i, bool more)
{
	if (!more)
		return 0;
	i++;
	skip_ws(sc, &i);
	struct sbuf path = {0};
	int r = literal(sc, &i, &path);
	if (r != 1) {
		sbuf_free(&path);
		unresolved(sc, "urlretrieve");
		return 0;
	}
	char *words[4] = {strdup("curl"), strdup("-o"), sbuf_take(&path), sbuf_take(url)};
	bool unres[4] = {false, false, false, false};
	for (size_t k = 0; k < 4; k++)
		if (!words[k]) {
			for (size_t m = 0; m < 4; m++)
				free(words[m]);
			return -ENOMEM;
		}
	return emit_argv(sc, words, unres, 4);
}

/* getattr(obj, NAME) / __import__(NAME) / import_module(NAME): a name put
 * together at run time ('sys'+'tem') can be any function or module, so
 * the scan cannot see what is called. A plain literal name is fine. */
static int computed_name(struct scan *sc, const struct ipat *pt, size_t i)
{
	if (i >= sc->n || sc->s[i] != '(')
		return 0;
	i++;
	if (pt->name[0] == 'g') { /* skip the object: to the first top-level comma */
		int depth = 0;
		for (; i < sc->n && !(depth == 0 && sc->s[i] == ','); i++)
			depth += sc->s[i] == '(' || sc->s[i] == '[' ? 1 : sc->s[i] == ')' || sc->s[i] == ']' ? -1 : 0;
		if (i >= sc->n)
			return 0;
		i++;
	}
	skip_ws(sc, &i);
	struct sbuf b = {0};
	int r = literal(sc, &i, &b);
	sbuf_free(&b);
	skip_ws(sc, &i);
	if (r != 1 || !arg_ends(sc, i))
		unresolved(sc, pt->name);
	return 0;
}

static int handle_call(struct scan *sc, const struct ipat *pt, size_t i)
{
	skip_ws(sc, &i);
	if (pt->kind == IK_KILL || pt->kind == IK_KILL2) {
		bool paren = i < sc->n && sc->s[i] == '(';
		if (!paren && !lang_is(sc, "perl"))
			return 0;
		i += paren;
		skip_ws(sc, &i);
		if (pt->kind == IK_KILL2) { /* the pid list follows the signal */
			while (i < sc->n && sc->s[i] != ',' && sc->s[i] != ')' && sc->s[i] != ';')
				i++;
			if (i >= sc->n || sc->s[i] != ',')
				return 0;
			i++;
			skip_ws(sc, &i);
		}
		int r = kill_call(sc, i);
		return r == -ENOMEM ? txbox_fail(sc->ctx->err, -ENOMEM, "shell: out of memory") : r;
	}
	if (pt->kind == IK_COMPUTED)
		return computed_name(sc, pt, i);
	bool paren = i < sc->n && sc->s[i] == '(';
	bool bare_ok = lang_is(sc, "perl") || lang_is(sc, "ruby");
	if (!paren && !bare_ok)
		return 0;
	if (paren) {
		i++;
		skip_ws(sc, &i);
		if (i < sc->n && sc->s[i] == ')')
			return 0; /* no arguments: e.g. platform.system() */
	} else if (i >= sc->n || !(sc->s[i] == '"' || sc->s[i] == '\'' || sc->s[i] == '$' ||
				   sc->s[i] == '@')) {
		size_t k = i;
		while (k < sc->n && ident(sc->s[k]))
			k++;
		if (k > i && k < sc->n && sc->s[k] == '(' && pt->kind <= IK_RMDIR)
			unresolved(sc, pt->name); /* system pack("H*", …): computed */
		return 0; /* e.g. a method named system without arguments */
	}
	char *words[MAXW];
	bool unres[MAXW];
	int rc = 0;
	size_t nw = 0;
	if (i < sc->n && (sc->s[i] == '[' || (sc->s[i] == '(' && !lang_is(sc, "node")))) {
		/* list form: argv */
		if (pt->kind == IK_SHELL || pt->kind >= IK_RMRF) {
			unresolved(sc, pt->name);
			return 0;
		}
		char close = sc->s[i] == '[' ? ']' : ')';
		i++;
		bool bad = false;
		nw = literal_list(sc, &i, close, words, unres, MAXW, &bad);
		rc = emit_argv(sc, words, unres, nw);
		if (bad)
			unresolved(sc, pt->name);
		return rc;
	}
	struct sbuf b = {0};
	size_t at = i;
	int r = literal(sc, &i, &b);
	if (r != 1 || !arg_ends(sc, i)) {
		sbuf_free(&b);
		/* a computed path in a rename, chmod or write changes what the
		 * sandbox lets it change; only commands and deletions hold */
		if (pt->kind <= IK_RMDIR)
			unresolved(sc, pt->name);
		return 0;
	}
	skip_ws(sc, &i);
	bool more = i < sc->n && sc->s[i] == ',';
	switch (pt->kind) {
	case IK_SHELL:
		rc = b.oom ? -ENOMEM : emit_shell(sc, b.s ? b.s : "", b.len);
		break;
	case IK_ARGV:
		if (more && !lang_is(sc, "python")) {
			/* system("rm", "-rf", "/") */
			bool bad = false;
			i = at;
			nw = literal_list(sc, &i, paren ? ')' : 0, words, unres, MAXW, &bad);
			rc = emit_argv(sc, words, unres, nw);
			if (bad)
				unresolved(sc, pt->name);
		} else
			rc = b.oom ? -ENOMEM : emit_shell(sc, b.s ? b.s : "", b.len);
		break;
	case IK_SPAWN: {
		words[nw] = sbuf_take(&b);
		unres[nw] = false;
		if (words[nw])
			nw++;
		if (more) {
			i++;
			skip_ws(sc, &i);
			if (i < sc->n && sc->s[i] == '[') {
				i++;
				bool bad = false;
				nw += literal_list(sc, &i, ']', words + nw, unres + nw, MAXW - nw, &bad);
				if (bad)
					unresolved(sc, pt->name);
			}
		}
		rc = emit_argv(sc, words, unres, nw);
		break;
	}
	case IK_DOWNLOAD:
		rc = download_call(sc, &b, i, more);
		break;
	default: {
		const char *cmd = path_command(sc, pt, i, more);
		if (!cmd)
			break;
		words[nw] = strdup(cmd);
		unres[nw++] = false;
		if (pt->kind == IK_RMRF) {
			words[nw] = strdup("-rf");
			unres[nw++] = false;
		}
		words[nw] = sbuf_take(&b);
		unres[nw++] = false;
		bool fail = false;
		for (size_t k = 0; k < nw; k++)
			if (!words[k])
				fail = true;
		if (fail) {
			for (size_t k = 0; k < nw; k++)
				free(words[k]);
			return txbox_fail(sc->ctx->err, -ENOMEM, "shell: out of memory");
		}
		rc = emit_argv(sc, words, unres, nw);
		break;
	}
	}
	sbuf_free(&b);
	if (rc == -ENOMEM)
		rc = txbox_fail(sc->ctx->err, -ENOMEM, "shell: out of memory");
	return rc;
}

/* `…`, qx{…}, %x(…) in perl/ruby/php. */
static int backticks(struct scan *sc)
{
	const char *s = sc->s;
	size_t n = sc->n;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t st, en;
		char close;
		if (s[i] == '`') {
			st = i + 1;
			close = '`';
		} else if ((lang_is(sc, "perl") && s[i] == 'q' && i + 2 < n && s[i + 1] == 'x' &&
			    (i == 0 || !ident(s[i - 1])) && strchr("{([</|!", s[i + 2])) ||
			   (lang_is(sc, "ruby") && s[i] == '%' && i + 2 < n && s[i + 1] == 'x' &&
			    strchr("{([</|!", s[i + 2]))) {
			char o = s[i + 2];
			close = o == '{' ? '}' : o == '(' ? ')' : o == '[' ? ']' : o == '<' ? '>' : o;
			st = i + 3;
		} else
			continue;
		const char *e = memchr(s + st, close, n - st);
		if (!e)
			return 0;
		en = (size_t)(e - s);
		bool interp = false;
		for (size_t k = st; k < en; k++)
			if ((s[k] == '$' && k + 1 < en &&
			     (ident(s[k + 1]) || s[k + 1] == '{' ||
			      (s[k + 1] == '(' && lang_is(sc, "julia")))) || /* julia's $(expr) */
			    (s[k] == '#' && k + 1 < en && s[k + 1] == '{'))
				interp = true;
		if (interp)
			unresolved(sc, "backquoted command");
		else
			rc = emit_shell(sc, s + st, en - st);
		i = en;
	}
	return rc;
}

/* awk: system("…") handled by patterns; here pipes: "cmd" | getline,
 * print … | "cmd", cmd | getline with a variable. */
/* Does this command text start a shell or interpreter reading stdin? */
static bool pipe_to_shell(const char *cmd)
{
	static const char *const l[] = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox",
					"python", "python3", "perl", "ruby", "node", "php", "lua",
					"tclsh", "xargs", "env", "sudo", "exec", NULL};
	cmd += strspn(cmd, " \t");
	size_t n = strcspn(cmd, " \t;|&");
	const char *base = cmd;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '/')
			base = cmd + i + 1;
	size_t bl = n - (size_t)(base - cmd);
	for (const char *const *p = l; *p; p++)
		if (strlen(*p) == bl && strncmp(*p, base, bl) == 0)
			return true;
	return false;
}

static int awk_pipes(struct scan *sc)
{
	const char *s = sc->s;
	size_t n = sc->n;
	size_t last_lit_end = (size_t)-1;
	struct sbuf last = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0;) {
		char c = s[i];
		if (c == '"') {
			sbuf_free(&last);
			size_t k = i;
			int r = literal(sc, &k, &last);
			if (r == 0) {
				i++;
				continue;
			}
			i = k;
			last_lit_end = i;
			continue;
		}
		if (c == '|' && i + 1 < n && s[i + 1] == '|') {
			i += 2;
			continue;
		}
		if (c == '|') {
			size_t j = i + 1;
			if (j < n && s[j] == '&')
				j++;
			skip_ws(sc, &j);
			bool before_lit = false;
			size_t b = i;
			while (b > 0 && strchr(" \t", s[b - 1]))
				b--;
			if (last_lit_end != (size_t)-1 && b == last_lit_end)
				before_lit = true;
			if (j + 7 <= n && strncmp(s + j, "getline", 7) == 0) {
				if (before_lit)
					rc = emit_shell(sc, last.s ? last.s : "", last.len);
				else
					unresolved(sc, "command | getline");
			} else if (j < n && s[j] == '"') {
				struct sbuf cmd = {0};
				size_t k = j;
				int r = literal(sc, &k, &cmd);
				if (r == 1)
					rc = emit_shell(sc, cmd.s ? cmd.s : "", cmd.len);
				else
					unresolved(sc, "print | command");
				if (rc == 0 && r == 1 && pipe_to_shell(cmd.s ? cmd.s : "")) {
					/* what is printed is the shell's program */
					if (before_lit)
						rc = emit_shell(sc, last.s ? last.s : "", last.len);
					else
						unresolved(sc, "print | shell");
				}
				sbuf_free(&cmd);
			} else {
				unresolved(sc, "print | command");
			}
			i = j;
			continue;
		}
		i++;
	}
	sbuf_free(&last);
	return rc;
}

/* Python `import M as A` / `from M import N as A`: the code with every use
 * of A (an identifier not after '.') spelled as what it names, so the
 * patterns see os.system and rmtree however they were imported. NULL when
 * there is no alias (or on allocation failure: the code is scanned as is). */
static char *python_unalias(const char *code, size_t len, size_t *out_len)
{
	struct {
		const char *name, *alias;
		size_t nl, al;
	} al[16];
	size_t na = 0;
	for (const char *p = code; na < 16 && (p = memmem(p, len - (size_t)(p - code), " as ", 4));
	     p += 4) {
		const char *ne = p, *ns = p;
		while (ns > code && (ident(ns[-1]) || ns[-1] == '.'))
			ns--;
		const char *as = p + 4, *ae = as;
		while (ae < code + len && ident(*ae))
			ae++;
		if (ns == ne || ae == as)
			continue;
		al[na].name = ns;
		al[na].nl = (size_t)(ne - ns);
		al[na].alias = as;
		al[na].al = (size_t)(ae - as);
		na++;
	}
	if (na == 0)
		return NULL;
	struct sbuf b = {0};
	for (size_t i = 0; i < len;) {
		size_t k = 0;
		if (ident(code[i]) && (i == 0 || (!ident(code[i - 1]) && code[i - 1] != '.'))) {
			for (; k < na; k++)
				if (len - i >= al[k].al && memcmp(code + i, al[k].alias, al[k].al) == 0 &&
				    (i + al[k].al == len || !ident(code[i + al[k].al])) &&
				    !(i >= 4 && memcmp(code + i - 4, " as ", 4) == 0))
					break;
		} else {
			k = na;
		}
		if (k < na) {
			sbuf_put(&b, al[k].name, al[k].nl);
			i += al[k].al;
		} else {
			sbuf_putc(&b, code[i++]);
		}
	}
	if (b.oom) {
		sbuf_free(&b);
		return NULL;
	}
	*out_len = b.len;
	return b.s;
}

/* Python `__import__('M')` and `importlib.import_module("M")` with a
 * literal name are the module M: the code with each spelled as M, so
 * `__import__('subprocess').call([...])` is seen as subprocess.call. NULL
 * when there is none (or on allocation failure: the code is scanned as is). */
static char *python_dynamic_imports(const char *code, size_t len, size_t *out_len)
{
	static const char *const fns[] = {"__import__(", "importlib.import_module(", NULL};
	struct sbuf b = {0};
	bool any = false;
	for (size_t i = 0; i < len;) {
		size_t fl = 0;
		for (size_t k = 0; fns[k] && !fl; k++)
			if (len - i > strlen(fns[k]) && memcmp(code + i, fns[k], strlen(fns[k])) == 0 &&
			    (i == 0 || (!ident(code[i - 1]) && code[i - 1] != '.')))
				fl = strlen(fns[k]);
		size_t q = i + fl, e = q + 1;
		if (fl && q < len && (code[q] == '\'' || code[q] == '"')) {
			while (e < len && (ident(code[e]) || code[e] == '.'))
				e++;
			if (e + 1 < len && code[e] == code[q] && code[e + 1] == ')' && e > q + 1) {
				sbuf_put(&b, code + q + 1, e - q - 1);
				i = e + 2;
				any = true;
				continue;
			}
		}
		sbuf_putc(&b, code[i++]);
	}
	if (!any || b.oom) {
		sbuf_free(&b);
		return NULL;
	}
	*out_len = b.len;
	return b.s;
}

/* A command-running or deleting function used as a value: its name as a
 * whole string literal ("unlink" passed to array_map, getattr(os,
 * "system")) or assigned / passed without a call (f=os.popen). Whatever
 * later calls it is not visible to this scan. */
static bool named_not_called(const struct scan *sc, const struct ipat *pt, size_t at, size_t nl)
{
	if (pt->kind == IK_OPEN || pt->kind == IK_PATH || pt->kind == IK_KILL || pt->kind == IK_COMPUTED ||
	    pt->kind == IK_KILL2 || pt->kind == IK_CHMOD || pt->kind == IK_WRITE)
		return false;
	const char *s = sc->s;
	if (at > 0 && at + nl < sc->n && (s[at - 1] == '"' || s[at - 1] == '\'') &&
	    s[at + nl] == s[at - 1])
		return true;
	if (lang_is(sc, "perl") || lang_is(sc, "ruby"))
		return false;
	size_t i = at + nl;
	while (i < sc->n && strchr(" \t", s[i]))
		i++;
	if (i < sc->n && s[i] == '(')
		return false;
	size_t b = at;
	while (b > 0 && strchr(" \t", s[b - 1]))
		b--;
	return b > 0 && s[b - 1] == '=' && (b < 2 || !strchr("=!<>", s[b - 2]));
}

/* An endless loop (while true / while(1) / for(;;) / loop do / repeat
 * … until false): with a call that runs commands, unbounded spawning. */
static bool endless_loop(const char *code, size_t len)
{
	static const char *const l[] = {"while true", "while True", "while 1", "while(1)",
					"while (1)", "while(true)", "while (true)", "for(;;)",
					"for (;;)", "loop do", "until false", "repeat", NULL};
	for (const char *const *p = l; *p; p++)
		if (memmem(code, len, *p, strlen(*p)))
			return true;
	return false;
}

int sh_interp_scan(struct sh_ctx *ctx, const char *lang, const char *code, size_t len,
		   const char *via, unsigned depth, int cmd_idx)
{
	if (strcmp(lang, "python") == 0) {
		size_t dlen = 0;
		char *dyn = python_dynamic_imports(code, len, &dlen);
		if (dyn) {
			int rc = sh_interp_scan(ctx, "python", dyn, dlen, via, depth, cmd_idx);
			free(dyn);
			return rc;
		}
		size_t ulen = 0;
		char *un = python_unalias(code, len, &ulen);
		if (un) {
			int rc = sh_interp_scan(ctx, "python-unaliased", un, ulen, via, depth, cmd_idx);
			free(un);
			return rc;
		}
	}
	if (strcmp(lang, "python-unaliased") == 0)
		lang = "python";
	struct scan sc = {
		.ctx = ctx, .lang = lang, .s = code, .n = len, .via = via, .depth = depth,
		.idx = cmd_idx,
	};
	if (depth > ctx->max_depth)
		return txbox_fail(ctx->err, -ELOOP, "shell: re-parse depth limit (%u) exceeded (%s)",
				  ctx->max_depth, via);
	const struct ipat *pats = strcmp(lang, "python") == 0 ? py_pats
				  : strcmp(lang, "perl") == 0 ? perl_pats
				  : strcmp(lang, "ruby") == 0 ? ruby_pats
				  : strcmp(lang, "node") == 0 ? node_pats
				  : strcmp(lang, "php") == 0  ? php_pats
				  : strcmp(lang, "lua") == 0  ? lua_pats
				  : strcmp(lang, "r") == 0    ? r_pats
				  : strcmp(lang, "julia") == 0 ? julia_pats
							      : awk_pats;
	int rc = 0;
	size_t *done = NULL, ndone = 0, dcap = 0, matches = 0;
	for (size_t pi = 0; pats[pi].name && rc == 0; pi++) {
		const char *nm = pats[pi].name;
		size_t nl = strlen(nm);
		const char *p = code;
		while (rc == 0 && (p = memmem(p, len - (size_t)(p - code), nm, nl)) != NULL) {
			size_t at = (size_t)(p - code);
			p += nl;
			if (at > 0 && (ident(code[at - 1]) || code[at - 1] == '$' ||
				       code[at - 1] == '>' || code[at - 1] == ':'))
				continue;
			if (at + nl < len && ident(code[at + nl]))
				continue;
			if (!lang_is(&sc, "awk") && named_not_called(&sc, &pats[pi], at, nl)) {
				unresolved(&sc, "a function named, not called (callback or alias)");
				continue;
			}
			/* os.system and system match the same call: once only */
			bool seen = false;
			for (size_t k = 0; k < ndone && !seen; k++)
				seen = done[k] == at + nl;
			if (seen)
				continue;
			if (++matches > 1000) {
				sh_mark_unresolved(ctx, cmd_idx, "interpreter code: too many calls");
				free(done);
				return 0;
			}
			if (sh_vec_reserve((void **)&done, &dcap, ndone + 1, sizeof(*done)) < 0) {
				free(done);
				return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
			}
			done[ndone++] = at + nl;
			rc = handle_call(&sc, &pats[pi], at + nl);
		}
	}
	free(done);
	if (rc == 0 && (lang_is(&sc, "perl") || lang_is(&sc, "ruby") || lang_is(&sc, "php") ||
			lang_is(&sc, "julia")))
		rc = backticks(&sc);
	if (rc == 0 && lang_is(&sc, "awk"))
		rc = awk_pipes(&sc);
	if (rc == 0 && sc.spawns && endless_loop(code, len))
		sh_mark_unresolved(ctx, cmd_idx, "interpreter code runs commands in an endless loop");
	return rc;
}
