/* Two steps in one line: an alias defined and then used, or a file
 * written (or a program copied) and then executed in the same line, e.g.
 *   alias g=git; g clean -fdx               → git clean -fdx
 *   echo 'rm -rf ~' > x.sh && sh x.sh       → the text is analysed as shell code
 *   cp /bin/rm ./r && ./r -rf ~             → analysed as rm -rf ~
 *   curl -o x.sh URL; bash x.sh             → unresolved (content unknown)
 * Files are matched by the name as written ("./x" and "x" are the same);
 * a write whose content is not known (a download, a redirect of another
 * command, tee) makes running the file unresolved. */
#include "shell/internal.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NOTED 256 /* files written and aliases tracked per line */

struct written {
	const char *name; /* as written, without a leading "./" */
	char *text;       /* known shell text, or NULL */
	const char *copy_of; /* a program copied or linked there, or NULL */
	bool script;      /* package.json by `npm pkg set scripts.X=TEXT`: text is TEXT */
	char *own;        /* name when it is not a word of a command (sed's `w FILE`) */
};

static const char *plain_name(const char *s)
{
	while (s[0] == '.' && s[1] == '/')
		s += 2;
	return s;
}

static bool is_name(const char *s, const char *const *l)
{
	for (; *l; l++)
		if (strcmp(s, *l) == 0)
			return true;
	return false;
}

#define MAX_BODIES 64 /* here-documents kept per line; more: content unknown */

int sh_note_body(struct sh_ctx *ctx, int idx, const char *text)
{
	if (idx < 0 || ctx->nbodies >= MAX_BODIES)
		return 0;
	struct sh_body *v = realloc(ctx->bodies, (ctx->nbodies + 1) * sizeof(*v));
	if (!v)
		return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
	ctx->bodies = v;
	v[ctx->nbodies].idx = (size_t)idx;
	v[ctx->nbodies].text = strdup(text);
	if (!v[ctx->nbodies].text)
		return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
	ctx->nbodies++;
	return 0;
}

void sh_ctx_release(struct sh_ctx *ctx)
{
	for (size_t i = 0; i < ctx->nbodies; i++)
		free(ctx->bodies[i].text);
	free(ctx->bodies);
	ctx->bodies = NULL;
	ctx->nbodies = 0;
}

/* The here-document command idx copies out: `cat > F <<EOF` (cat with no
 * file operand), `tee F <<EOF`. */
static const char *body_of(const struct sh_ctx *ctx, size_t idx)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	bool cat = c->argc && !strcmp(sh_basename(c->argv[0]), "cat");
	for (size_t k = 1; cat && k < c->argc; k++)
		if (c->word_unresolved[k] || (c->argv[k][0] != '-' || !strcmp(c->argv[k], "--")))
			return NULL;
	for (size_t i = 0; i < ctx->nbodies; i++)
		if (ctx->bodies[i].idx == idx)
			return ctx->bodies[i].text;
	return NULL;
}

/* echo/printf with static words: the text they write (echo.c). */
static char *echoed_text(const shell_cmd *c)
{
	if (c->argc == 0 || c->word_unresolved[0])
		return NULL;
	const char *n = sh_basename(c->argv[0]);
	if (strcmp(n, "echo") && strcmp(n, "printf"))
		return NULL;
	for (size_t k = 1; k < c->argc; k++)
		if (c->word_unresolved[k])
			return NULL;
	return strcmp(n, "echo") ? sh_printf_text(c->argv, c->argc) : sh_echo_text(c->argv, c->argc);
}

/* Value of -o/--output/-O/--output-document (downloads), or NULL. */
static const char *download_target(const shell_cmd *c)
{
	static const char *const dl[] = {"curl", "wget", "wget2", "aria2c", "http", "https", NULL};
	if (!is_name(sh_basename(c->argv[0]), dl))
		return NULL;
	for (size_t k = 1; k + 1 < c->argc; k++)
		if (!strcmp(c->argv[k], "-o") || !strcmp(c->argv[k], "--output") ||
		    !strcmp(c->argv[k], "-O") || !strcmp(c->argv[k], "--output-document"))
			return c->word_unresolved[k + 1] ? NULL : c->argv[k + 1];
	return NULL;
}

static int note(struct written **w, size_t *n, const char *name, char *text, const char *copy_of)
{
	if (*n >= MAX_NOTED) { /* the last entry stands for every further write */
		free((*w)[MAX_NOTED - 1].text);
		free((*w)[MAX_NOTED - 1].own);
		(*w)[MAX_NOTED - 1] = (struct written){"", NULL, NULL, false, NULL};
		free(text);
		return 0;
	}
	struct written *v = realloc(*w, (*n + 1) * sizeof(**w));
	if (!v) {
		free(text);
		return -ENOMEM;
	}
	*w = v;
	v[*n] = (struct written){plain_name(name), text, copy_of, false, NULL};
	(*n)++;
	return 0;
}

static const struct written *find(const struct written *w, size_t n, const char *name);

/* A stream rather than a file (install /dev/stdin x): what it carries is
 * not known here. */
static bool is_stream(const char *s)
{
	return !strcmp(s, "-") || !strncmp(s, "/dev/", 5) || !strncmp(s, "/proc/", 6);
}

/* The replacement of s/RE/REPLACEMENT/ (t at the delimiter): text that
 * lands in the file. */
static char *sed_replacement(const char *t)
{
	char d = t[0];
	size_t i = 1;
	for (int part = 0; t[i]; i++) {
		if (t[i] == '\\' && t[i + 1]) {
			i++;
		} else if (t[i] == d && ++part == 1) {
			size_t b = i + 1, e = b;
			while (t[e] && t[e] != d)
				e += t[e] == '\\' && t[e + 1] ? 2 : 1;
			return strndup(t + b, e - b);
		}
	}
	return NULL;
}

/* sed -i with an insert, append or change command (`1i TEXT`, `$a TEXT`)
 * or a substitution: TEXT becomes (part of) lines of the file, shell code
 * when the file is run; the rest of the file was there before the line. */
static char *sed_inserted_text(const shell_cmd *c)
{
	for (size_t k = 1; k < c->argc; k++) {
		const char *t = c->argv[k];
		if (c->word_unresolved[k] || t[0] == '-')
			continue;
		t += strspn(t, "0123456789$,/ ");
		if (t[0] == 's' && t[1] && !strchr(" \\\n", t[1]))
			return sed_replacement(t + 1);
		if (!*t || !strchr("iac", *t) || !strchr(" \\", t[1]))
			return NULL;
		t++;
		t += strspn(t, " \\");
		return strdup(t);
	}
	return NULL;
}

/* cc/gcc/clang/g++/tcc: the program built from sources this line wrote
 * (-o NAME, or a.out) — its code is not known here. */
static int compiled(const shell_cmd *c, struct written **w, size_t *n)
{
	static const char *const cc[] = {"cc", "gcc", "clang", "c++", "g++", "clang++", "tcc",
					 "c99", "gcc-12", "clang-14", NULL};
	if (!is_name(sh_basename(c->argv[0]), cc))
		return 0;
	const char *out = "a.out";
	bool from_written = false;
	for (size_t k = 1; k < c->argc; k++) {
		if (!strcmp(c->argv[k], "-o") && k + 1 < c->argc) {
			out = c->argv[++k];
			continue;
		}
		if (!strncmp(c->argv[k], "-o", 2) && c->argv[k][2])
			out = c->argv[k] + 2;
		else if (c->argv[k][0] != '-' && (is_stream(c->argv[k]) || find(*w, *n, c->argv[k])))
			from_written = true;
	}
	return from_written ? note(w, n, out, NULL, NULL) : 0;
}

/* A copy of a stream or of a file this line wrote carries that content. */
static int copied(const shell_cmd *c, struct written **w, size_t *n)
{
	const char *src = c->word_unresolved[c->argc - 2] ? NULL : c->argv[c->argc - 2];
	const struct written *from = src ? find(*w, *n, src) : NULL;
	if (src && is_stream(src))
		return note(w, n, c->argv[c->argc - 1], NULL, NULL);
	if (from)
		return note(w, n, c->argv[c->argc - 1], from->text ? strdup(from->text) : NULL,
			    from->copy_of);
	return note(w, n, c->argv[c->argc - 1], NULL, src && src[0] != '-' ? src : NULL);
}

/* A file of unknown content named by the l bytes at name (a part of a
 * word): the entry keeps its own copy of the name. */
static int note_name(struct written **w, size_t *n, const char *name, size_t l)
{
	char *own = strndup(name, l);
	if (!own)
		return -ENOMEM;
	size_t before = *n;
	int rc = note(w, n, own, NULL, NULL);
	if (rc == 0 && *n > before)
		(*w)[*n - 1].own = own;
	else
		free(own);
	return rc;
}

/* Files a sed script writes: `w FILE`, `s/a/b/w FILE` (the name runs to
 * the end of the line). Read loosely: a word that only looks like one
 * makes a later run of that name unresolved, nothing more. */
static int sed_w_files(const char *t, struct written **w, size_t *n)
{
	int rc = 0;
	for (const char *p = t; (p = strpbrk(p, "wW")) && rc == 0; p++) {
		if (p[1] != ' ' || (p > t && !strchr(";\n}/ $0123456789gpI", p[-1])))
			continue;
		const char *f = p + 1 + strspn(p + 1, " ");
		size_t l = strcspn(f, "\n");
		if (l && strncmp(f, "/dev/std", 8))
			rc = note_name(w, n, f, l);
	}
	return rc;
}

/* Files an awk program prints to: `print … > "FILE"` / `>> "FILE"`. */
static int awk_out_files(const char *t, struct written **w, size_t *n)
{
	int rc = 0;
	for (const char *p = t; (p = strchr(p, '>')) && rc == 0; p++) {
		const char *q = p + 1 + (p[1] == '>');
		q += strspn(q, " ");
		if (*q != '"')
			continue;
		size_t l = strcspn(q + 1, "\"");
		rc = note_name(w, n, q + 1, l);
	}
	return rc;
}

/* sed and awk scripts, find -fprint / -fprintf / -fls: files whose
 * content is not known here. */
static int tool_writes(const shell_cmd *c, const char *name, struct written **w, size_t *n)
{
	static const char *const awks[] = {"awk", "gawk", "mawk", "nawk", "busybox-awk", NULL};
	static const char *const fopts[] = {"-fprint", "-fprintf", "-fprint0", "-fls", NULL};
	bool sed = !strcmp(name, "sed"), awk = is_name(name, awks), find = !strcmp(name, "find");
	int rc = 0;
	for (size_t k = 1; k < c->argc && rc == 0; k++) {
		if (c->word_unresolved[k])
			continue;
		const char *a = c->argv[k];
		if (find && is_name(a, fopts) && k + 1 < c->argc)
			rc = note(w, n, c->argv[++k], NULL, NULL);
		else if (sed && a[0] != '-')
			rc = sed_w_files(a, w, n);
		else if (awk && a[0] != '-')
			rc = awk_out_files(a, w, n);
	}
	return rc;
}

/* `npm pkg set scripts.NAME=TEXT …` / `npm set-script NAME TEXT`: the
 * scripts of package.json, run by `npm run NAME` / `npm test`. */
static int npm_scripts(const shell_cmd *c, struct written **w, size_t *n)
{
	if (strcmp(sh_basename(c->argv[0]), "npm") || c->argc < 3)
		return 0;
	size_t from = 0;
	if (!strcmp(c->argv[1], "pkg") && !strcmp(c->argv[2], "set"))
		from = 3;
	else if (!strcmp(c->argv[1], "set-script") && c->argc >= 4)
		from = 3;
	int rc = 0;
	for (size_t k = from; from && k < c->argc && rc == 0; k++) {
		const char *v = c->argv[k];
		if (from == 3 && !strcmp(c->argv[1], "pkg")) {
			if (strncmp(v, "scripts.", 8) || !strchr(v, '='))
				continue;
			v = strchr(v, '=') + 1;
		}
		char *text = c->word_unresolved[k] ? NULL : strdup(v);
		if (!c->word_unresolved[k] && !text)
			return -ENOMEM;
		size_t before = *n;
		rc = note(w, n, "package.json", text, NULL);
		if (rc == 0 && *n > before)
			(*w)[*n - 1].script = text != NULL;
	}
	return rc;
}

/* The text command c writes to its standard output, or NULL. */
static char *output_text(const shell_cmd *c, const char *body)
{
	if (body && !strcmp(sh_basename(c->argv[0]), "cat"))
		return strdup(body);
	return echoed_text(c);
}

/* Files command c writes (body: the here-document it reads, or NULL). */
static int collect(const shell_cmd *c, const char *body, struct written **w, size_t *n)
{
	static const char *const copiers[] = {"cp", "install", "ln", "mv", "rsync", NULL};
	static const char *const writers[] = {"tee", "sponge", "dd", NULL};
	int rc = 0;
	for (size_t i = 0; i < c->nredirs && rc == 0; i++)
		if (c->redirs[i].kind != SHELL_REDIR_READ && c->redirs[i].target)
			rc = note(w, n, c->redirs[i].target, output_text(c, body), NULL);
	if (rc < 0 || c->argc < 2 || c->word_unresolved[0])
		return rc;
	const char *name = sh_basename(c->argv[0]);
	const char *dl = download_target(c);
	if (dl)
		return note(w, n, dl, NULL, NULL);
	rc = tool_writes(c, name, w, n);
	if (rc == 0)
		rc = npm_scripts(c, w, n);
	if (rc < 0)
		return rc;
	if (is_name(name, copiers) && !c->word_unresolved[c->argc - 1] && c->argc >= 3)
		return copied(c, w, n);
	bool sed_i = (!strcmp(name, "sed") || !strcmp(name, "perl")) && c->argc > 2;
	bool inplace = false;
	for (size_t k = 1; sed_i && k < c->argc; k++)
		if (!strncmp(c->argv[k], "-i", 2) || !strncmp(c->argv[k], "-pi", 3) ||
		    !strcmp(c->argv[k], "--in-place"))
			inplace = true;
	if (inplace) { /* the edited files: the last operand at least */
		const char *t = c->word_unresolved[c->argc - 1] ? "" : c->argv[c->argc - 1];
		return note(w, n, t, strcmp(name, "sed") ? NULL : sed_inserted_text(c), NULL);
	}
	bool tee = !strcmp(name, "tee") && body;
	if (is_name(name, writers))
		for (size_t k = 1; k < c->argc && rc == 0; k++)
			if (!c->word_unresolved[k] && c->argv[k][0] != '-')
				rc = note(w, n, !strncmp(c->argv[k], "of=", 3) ? c->argv[k] + 3 : c->argv[k],
					  tee ? strdup(body) : NULL, NULL);
	return rc == 0 ? compiled(c, w, n) : rc;
}

static const struct written *find(const struct written *w, size_t n, const char *name)
{
	name = plain_name(name);
	if (n >= MAX_NOTED) /* too many to tell: any may be this one */
		return &w[MAX_NOTED - 1];
	for (size_t i = n; i > 0; i--)
		if (!strcmp(w[i - 1].name, name))
			return &w[i - 1];
	return NULL;
}

/* The written file command c runs: as its command name (a path), or as the
 * script operand of a shell or interpreter. *args: index of the first
 * argument the file gets. */
static const struct written *runs(const shell_cmd *c, const struct written *w, size_t n,
				  size_t *args, bool *as_shell)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash",
					     "source", ".", NULL};
	static const char *const interps[] = {"python", "python3", "perl", "ruby", "node", "php",
					      "lua", NULL};
	if (c->argc == 0 || c->word_unresolved[0])
		return NULL;
	if (strchr(c->argv[0], '/')) {
		*args = 1;
		*as_shell = false;
		return find(w, n, c->argv[0]);
	}
	const char *name = sh_basename(c->argv[0]);
	*as_shell = is_name(name, shells);
	if (!*as_shell && !is_name(name, interps))
		return NULL;
	for (size_t k = 1; k < c->argc; k++) {
		if (c->word_unresolved[k])
			return NULL;
		if (c->argv[k][0] == '-')
			continue;
		*args = k + 1;
		return find(w, n, c->argv[k]);
	}
	return NULL;
}

/* The language sh_interp_scan reads for interpreter name, or NULL. */
static const char *interp_lang(const char *name)
{
	static const char *const l[][2] = {{"python", "python"}, {"perl", "perl"}, {"ruby", "ruby"},
					   {"node", "node"},     {"php", "php"}};
	for (size_t i = 0; i < sizeof(l) / sizeof(*l); i++)
		if (strncmp(name, l[i][0], strlen(l[i][0])) == 0)
			return l[i][1];
	return NULL;
}

static int run_written(struct sh_ctx *ctx, size_t idx, const struct written *f, size_t args,
		       bool as_shell)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	if (f->copy_of) { /* the copied program, with this command's arguments */
		size_t n = 1 + (c->argc > args ? c->argc - args : 0);
		_cleanup_free_ struct sh_field *v = calloc(n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		v[0].text = (char *)f->copy_of;
		for (size_t k = args, j = 1; k < c->argc; k++, j++)
			v[j] = (struct sh_field){.text = c->argv[k], .unres = c->word_unresolved[k]};
		_cleanup_free_ char *via = strdup("a copy written earlier");
		return via ? sh_unwrap(ctx, v, n, NULL, 0, via, c->depth + 1, NULL, NULL) : -ENOMEM;
	}
	if (f->text && (as_shell || strchr(c->argv[0], '/')))
		return sh_reparse(ctx, f->text, strlen(f->text), "a file written earlier",
				  c->depth + 1, (int)idx, NULL);
	const char *lang = f->text ? interp_lang(sh_basename(c->argv[0])) : NULL;
	if (lang) /* a script of an interpreter: the calls it makes */
		return sh_interp_scan(ctx, lang, f->text, strlen(f->text), "a file written earlier",
				      c->depth + 1, (int)idx);
	sh_mark_unresolved(ctx, (int)idx, "runs a file written earlier in this line (its content is not known)");
	return 0;
}

/* A shell or interpreter reading its program from standard input (`sh <
 * x`, `bash -s < x`, `python3 - < x`): no script operand, no -c / -e
 * code. *as_shell: a shell's. */
static const struct written *stdin_program(const shell_cmd *c, const struct written *w, size_t n,
					   bool *as_shell)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", NULL};
	if (c->argc == 0 || c->word_unresolved[0])
		return NULL;
	const char *name = sh_basename(c->argv[0]);
	*as_shell = is_name(name, shells);
	if (!*as_shell && !interp_lang(name))
		return NULL;
	const char *code = *as_shell ? "c" : "cemE";
	for (size_t k = 1; k < c->argc; k++) {
		const char *a = c->argv[k];
		if (c->word_unresolved[k] || (a[0] == '-' && a[1] != '-' && strpbrk(a + 1, code)))
			return NULL;
		if (!strcmp(a, "-") || (*as_shell && a[0] == '-' && a[1] != '-' && strchr(a, 's')))
			break; /* the rest are arguments */
		if (a[0] != '-' && a[0] != '+')
			return NULL; /* a script operand: runs() */
	}
	const struct written *f = NULL;
	for (size_t r = 0; r < c->nredirs; r++)
		if (c->redirs[r].kind == SHELL_REDIR_READ && c->redirs[r].target)
			f = find(w, n, c->redirs[r].target); /* the last one is stdin */
	return f;
}

/* The file a word reads as a whole: `$(<x)`, `$(< x)`, `$(cat x)`, `` `cat x` ``
 * (quotes dropped), or NULL. */
static const struct written *substituted(const char *word, const struct written *w, size_t n)
{
	_cleanup_free_ char *t = strdup(word);
	if (!t)
		return NULL;
	size_t j = 0;
	for (size_t i = 0; t[i]; i++)
		if (t[i] != '"' && t[i] != '\'')
			t[j++] = t[i];
	t[j] = '\0';
	const char *p = NULL;
	if (!strncmp(t, "$(", 2) && j > 3 && t[j - 1] == ')')
		p = t + 2, t[j - 1] = '\0';
	else if (t[0] == '`' && j > 2 && t[j - 1] == '`')
		p = t + 1, t[j - 1] = '\0';
	if (!p)
		return NULL;
	p += strspn(p, " ");
	if (*p == '<')
		p++;
	else if (!strncmp(p, "cat ", 4))
		p += 4;
	else
		return NULL;
	p += strspn(p, " ");
	char *e = (char *)p + strcspn(p, " ");
	*e = '\0';
	return *p ? find(w, n, p) : NULL;
}

/* `eval "$(<x)"`, `sh -c "$(cat x)"`: the written text is run. */
static const struct written *evaluated(const shell_cmd *c, const struct written *w, size_t n)
{
	static const char *const evals[] = {"eval", "sh", "bash", "dash", "zsh", "ksh", NULL};
	if (c->argc < 2 || c->word_unresolved[0] || !is_name(sh_basename(c->argv[0]), evals))
		return NULL;
	for (size_t k = 1; k < c->argc; k++) {
		const struct written *f = substituted(c->argv[k], w, n);
		if (f)
			return f;
	}
	return NULL;
}

/* xargs -a FILE / --arg-file=FILE / < FILE: its words become arguments of
 * the command xargs runs; judged as that command followed by the text
 * (as shell text when it is `sh -c`). */
static const struct written *xargs_file(const shell_cmd *c, const struct written *w, size_t n,
					size_t *cmd)
{
	static const char *const valued[] = {"-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n",
					     "-P", "-s", "--arg-file", "--delimiter", "--eof",
					     "--replace", "--max-lines", "--max-args", "--max-procs",
					     "--max-chars", "--process-slot-var", NULL};
	if (c->argc < 2 || c->word_unresolved[0] || strcmp(sh_basename(c->argv[0]), "xargs"))
		return NULL;
	const char *file = NULL;
	size_t k = 1;
	for (; k < c->argc && c->argv[k][0] == '-'; k++) {
		const char *a = c->argv[k];
		if (!strcmp(a, "--")) {
			k++;
			break;
		}
		if ((!strcmp(a, "-a") || !strcmp(a, "--arg-file")) && k + 1 < c->argc)
			file = c->argv[k + 1];
		else if (!strncmp(a, "--arg-file=", 11))
			file = a + 11;
		else if (!strncmp(a, "-a", 2) && a[2])
			file = a + 2;
		if (is_name(a, valued))
			k++;
	}
	*cmd = k;
	for (size_t r = 0; !file && r < c->nredirs; r++)
		if (c->redirs[r].kind == SHELL_REDIR_READ && c->redirs[r].target)
			file = c->redirs[r].target;
	return file ? find(w, n, file) : NULL;
}

static int run_xargs(struct sh_ctx *ctx, size_t idx, const struct written *f, size_t from)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	if (!f->text) /* operands not known: judged as xargs's input always is */
		return 0;
	struct sbuf b = {0};
	bool shell_c = from + 1 < c->argc && !strcmp(c->argv[from + 1], "-c");
	for (size_t k = from; !shell_c && k < c->argc; k++) {
		if (c->word_unresolved[k]) {
			sh_mark_unresolved(ctx, (int)idx, "xargs runs a command that is not static");
			return 0;
		}
		sbuf_puts(&b, c->argv[k]);
		sbuf_putc(&b, ' ');
	}
	for (const char *t = f->text; *t; t++) /* one command line, or the shell's text */
		sbuf_putc(&b, *t == '\n' && !shell_c ? ' ' : *t);
	int rc = b.oom ? -ENOMEM
		       : b.s ? sh_reparse(ctx, b.s, b.len, "xargs -a", c->depth + 1, (int)idx, NULL)
			     : 0;
	sbuf_free(&b);
	return rc;
}

static int run_project(struct sh_ctx *ctx, size_t idx, const struct written *w, size_t n)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	int lang = 0;
	const char *const *files = sh_project_files(c, &lang);
	for (size_t i = 0; files && i < 4 && files[i]; i++) {
		char path[4096];
		if (c->cwd && !c->cwd_unresolved)
			snprintf(path, sizeof(path), "%s/%s", c->cwd, files[i]);
		else
			snprintf(path, sizeof(path), "%s", files[i]);
		const struct written *f = find(w, n, path);
		if (f && f->copy_of && !f->text)
			return 0; /* a copy of a project file that was there before the line */
		if (f)
			return sh_project_run(ctx, idx, files[i], f->text, lang, f->script);
	}
	return 0;
}

/* A database client reading a script the line wrote: `psql -f F`
 * (--file=F), or any of them (sqlite3, psql, mysql) with stdin `< F`. A
 * file of unknown content is data here (a dump restored), not code. */
static const struct written *client_script(const shell_cmd *c, const struct written *w, size_t n)
{
	if (c->argc == 0 || c->word_unresolved[0] || !sh_client_name(sh_basename(c->argv[0])))
		return NULL;
	const struct written *f = NULL;
	for (size_t r = 0; r < c->nredirs; r++)
		if (c->redirs[r].kind == SHELL_REDIR_READ && c->redirs[r].target)
			f = find(w, n, c->redirs[r].target);
	bool psql = strcmp(sh_basename(c->argv[0]), "psql") == 0;
	for (size_t k = 1; psql && k < c->argc; k++) {
		const char *a = c->argv[k], *file = NULL;
		if (c->word_unresolved[k])
			continue;
		if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && k + 1 < c->argc &&
		    !c->word_unresolved[k + 1])
			file = c->argv[++k];
		else if (!strncmp(a, "--file=", 7))
			file = a + 7;
		else if (!strncmp(a, "-f", 2) && a[2])
			file = a + 2;
		const struct written *script = file ? find(w, n, file) : NULL;
		if (script)
			f = script;
	}
	return f && f->text ? f : NULL;
}

/* Other ways command idx runs what the line wrote: a shell's standard
 * input, an eval of the file's text, xargs's argument file, a project
 * file of its tool, a database client's script. */
static int run_other(struct sh_ctx *ctx, size_t idx, const struct written *w, size_t n)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	size_t from = 0;
	bool as_shell = true;
	const struct written *f = stdin_program(c, w, n, &as_shell);
	if (!f) {
		as_shell = true;
		f = evaluated(c, w, n);
	}
	if (f)
		return run_written(ctx, idx, f, c->argc, as_shell);
	f = xargs_file(c, w, n, &from);
	if (f)
		return run_xargs(ctx, idx, f, from);
	f = client_script(c, w, n);
	if (f)
		return sh_client_script(ctx, sh_basename(c->argv[0]), f->text, c->depth, (int)idx);
	return run_project(ctx, idx, w, n);
}

/* `alias NAME=VALUE` (static): later commands named NAME run VALUE with
 * their arguments. (Shells expand an alias only in lines read after its
 * definition; treating every later command as expanded errs towards
 * reporting more.) */
static const char *alias_value(const shell_cmd *c, const char *name)
{
	if (c->argc < 2 || c->word_unresolved[0] || strcmp(sh_basename(c->argv[0]), "alias"))
		return NULL;
	size_t nl = strlen(name);
	for (size_t k = 1; k < c->argc; k++)
		if (!c->word_unresolved[k] && strncmp(c->argv[k], name, nl) == 0 && c->argv[k][nl] == '=')
			return c->argv[k] + nl + 1;
	return NULL;
}

static int run_alias(struct sh_ctx *ctx, size_t idx, const size_t *defs, size_t ndefs)
{
	const shell_cmd *c = &ctx->out->cmds[idx];
	if (c->argc == 0 || c->word_unresolved[0] || strchr(c->argv[0], '/'))
		return 0;
	const char *val = NULL;
	for (size_t i = ndefs; i > 0 && !val; i--)
		val = alias_value(&ctx->out->cmds[defs[i - 1]], c->argv[0]);
	if (!val)
		return 0;
	struct sbuf b = {0};
	sbuf_puts(&b, val);
	for (size_t k = 1; k < c->argc; k++) {
		if (c->word_unresolved[k]) {
			sbuf_free(&b);
			sh_mark_unresolved(ctx, (int)idx, "alias used with arguments that are not static");
			return 0;
		}
		sbuf_putc(&b, ' ');
		sbuf_puts(&b, c->argv[k]); /* words as expanded: quoting is not kept */
	}
	if (b.oom) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	int rc = sh_reparse(ctx, b.s, b.len, "alias", c->depth + 1, (int)idx, NULL);
	sbuf_free(&b);
	return rc;
}

int sh_written_then_run(struct sh_ctx *ctx)
{
	struct written *w = NULL;
	size_t nw = 0, ncmds = ctx->out->ncmds, defs[64], ndefs = 0;
	int rc = 0;
	for (size_t i = 0; i < ncmds && rc == 0; i++) {
		size_t args = 1;
		bool as_shell = false;
		const shell_cmd *c = &ctx->out->cmds[i];
		const struct written *f = nw ? runs(c, w, nw, &args, &as_shell) : NULL;
		if (f)
			rc = run_written(ctx, i, f, args, as_shell);
		else if (nw)
			rc = run_other(ctx, i, w, nw);
		if (rc == 0 && ndefs)
			rc = run_alias(ctx, i, defs, ndefs);
		c = &ctx->out->cmds[i]; /* the list may have grown */
		if (rc == 0 && c->argc > 1 && !c->word_unresolved[0] &&
		    strcmp(sh_basename(c->argv[0]), "alias") == 0) {
			if (ndefs == 64)
				sh_mark_unresolved(ctx, (int)i, "too many aliases in one line");
			else
				defs[ndefs++] = i;
		}
		if (rc == 0)
			rc = collect(&ctx->out->cmds[i], body_of(ctx, i), &w, &nw);
	}
	for (size_t i = 0; i < nw && i < MAX_NOTED; i++) {
		free(w[i].text);
		free(w[i].own);
	}
	free(w);
	return rc == -ENOMEM ? txbox_fail(ctx->err, -ENOMEM, "shell: out of memory") : rc;
}
