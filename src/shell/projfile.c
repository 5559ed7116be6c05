/* Project files a tool runs code from: a line that writes one and then
 * starts its tool runs the code it wrote, e.g.
 *   printf 'all:\n\trm -rf ~\n' > Makefile && make      → rm -rf ~
 *   npm pkg set scripts.test='rm -rf ~' && npm test       → rm -rf ~
 *   printf 'import os\nos.system(…)' > conftest.py && pytest
 * steps.c notes the files a line writes; this file says which project
 * files a command reads (sh_project_files) and judges what they run
 * (sh_project_run). */
#include "shell/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kind of code a project file holds. */
enum proj_lang {
	PROJ_RECIPES, /* indented lines are shell commands (make, just) */
	PROJ_SCRIPTS, /* JSON "scripts" values are shell commands (package.json) */
	PROJ_PYTHON,  /* Python code (conftest.py, setup.py, sitecustomize.py) */
	PROJ_OPAQUE,  /* code nobody reads here (build.rs, Taskfile) */
};

static const struct {
	const char *tool; /* basename of the command; "python*" any python */
	const char *sub;  /* its subcommands that read the files ("|" separated), or NULL: any */
	const char *files[4];
	enum proj_lang lang;
} project[] = {
	{"make", NULL, {"Makefile", "makefile", "GNUmakefile"}, PROJ_RECIPES},
	{"gmake", NULL, {"Makefile", "makefile", "GNUmakefile"}, PROJ_RECIPES},
	{"just", NULL, {"justfile", "Justfile", ".justfile"}, PROJ_RECIPES},
	{"npm", NULL, {"package.json"}, PROJ_SCRIPTS},
	{"yarn", NULL, {"package.json"}, PROJ_SCRIPTS},
	{"pnpm", NULL, {"package.json"}, PROJ_SCRIPTS},
	{"bun", NULL, {"package.json"}, PROJ_SCRIPTS},
	{"pytest", NULL, {"conftest.py"}, PROJ_PYTHON},
	{"py.test", NULL, {"conftest.py"}, PROJ_PYTHON},
	{"pip", "install", {"setup.py"}, PROJ_PYTHON},
	{"pip3", "install", {"setup.py"}, PROJ_PYTHON},
	{"python*", NULL, {"sitecustomize.py", "usercustomize.py", "setup.py", "conftest.py"},
	 PROJ_PYTHON},
	{"cargo", "build|b|run|r|test|t|check|c|bench|install|clippy|doc", {"build.rs"}, PROJ_OPAQUE},
	{"task", NULL, {"Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "Taskfile.dist.yml"},
	 PROJ_OPAQUE},
};

static bool tool_is(const char *pattern, const char *name)
{
	size_t n = strlen(pattern);
	if (pattern[n - 1] == '*')
		return strncmp(pattern, name, n - 1) == 0;
	return strcmp(pattern, name) == 0;
}

/* Is the first operand of c one of sub's words? */
static bool sub_is(const shell_cmd *c, const char *sub)
{
	for (size_t k = 1; k < c->argc; k++) {
		if (c->argv[k][0] == '-')
			continue;
		size_t l = strlen(c->argv[k]);
		for (const char *s = sub; *s;) {
			size_t w = strcspn(s, "|");
			if (w == l && strncmp(s, c->argv[k], l) == 0)
				return true;
			s += w + (s[w] == '|');
		}
		return false;
	}
	return false;
}

const char *const *sh_project_files(const shell_cmd *c, int *lang)
{
	if (c->argc == 0 || c->word_unresolved[0])
		return NULL;
	const char *name = sh_basename(c->argv[0]);
	for (size_t i = 0; i < sizeof(project) / sizeof(*project); i++) {
		if (!tool_is(project[i].tool, name) || (project[i].sub && !sub_is(c, project[i].sub)))
			continue;
		*lang = (int)project[i].lang;
		return project[i].files;
	}
	return NULL;
}

/* Judge the commands collected in b (freed) for command idx. */
static int reparse_buf(struct sh_ctx *ctx, size_t idx, struct sbuf *b, const char *via)
{
	int rc = b->oom ? -ENOMEM
		 : b->s ? sh_reparse(ctx, b->s, b->len, via, ctx->out->cmds[idx].depth + 1, (int)idx, NULL)
			: 0;
	sbuf_free(b);
	return rc;
}

/* Indented lines (recipes of make and just): a leading '@', '-' or '+'
 * only changes how make reports the command. */
static int run_recipes(struct sh_ctx *ctx, size_t idx, const char *text, const char *via)
{
	struct sbuf b = {0};
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		if (l[0] == '\t' || l[0] == ' ') {
			size_t s = strspn(l, " \t");
			s += strspn(l + s, "@-+");
			sbuf_put(&b, l + s, n - s);
			sbuf_putc(&b, '\n');
		}
		l += n + (l[n] == '\n');
	}
	return reparse_buf(ctx, idx, &b, via);
}

/* The JSON strings after "scripts": each one a command line. Strings are
 * read up to the object's end; keys are read as commands too (a name is
 * a harmless command), which keeps this reader small and fail-closed. */
static int run_scripts(struct sh_ctx *ctx, size_t idx, const char *text, const char *via)
{
	const char *p = strstr(text, "\"scripts\"");
	if (!p) /* no scripts: nothing runs, unless it is not JSON at all */
		return 0;
	p = strchr(p + 9, '{');
	struct sbuf b = {0};
	for (int depth = p ? 1 : 0; p && *++p && depth > 0;) {
		if (*p == '{')
			depth++;
		else if (*p == '}')
			depth--;
		else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1]) {
					p++;
					sbuf_putc(&b, *p == 'n' ? '\n' : *p == 't' ? '\t' : *p);
				} else {
					sbuf_putc(&b, *p);
				}
			}
			sbuf_putc(&b, '\n');
			if (!*p)
				break;
		}
	}
	return reparse_buf(ctx, idx, &b, via);
}

int sh_project_run(struct sh_ctx *ctx, size_t idx, const char *file, const char *text, int lang,
		   bool script_text)
{
	char via[96];
	snprintf(via, sizeof(via), "%s written earlier", file);
	if (!text) {
		char why[160];
		snprintf(why, sizeof(why), "runs code from %s, written earlier in this line (its content is not known)",
			 file);
		sh_mark_unresolved(ctx, (int)idx, why);
		return 0;
	}
	if (script_text) /* a script set by `npm pkg set scripts.X=TEXT` */
		return sh_reparse(ctx, text, strlen(text), via, ctx->out->cmds[idx].depth + 1,
				  (int)idx, NULL);
	switch ((enum proj_lang)lang) {
	case PROJ_RECIPES:
		return run_recipes(ctx, idx, text, via);
	case PROJ_SCRIPTS:
		return run_scripts(ctx, idx, text, via);
	case PROJ_PYTHON:
		return sh_interp_scan(ctx, "python", text, strlen(text), via,
				      ctx->out->cmds[idx].depth + 1, (int)idx);
	case PROJ_OPAQUE:
	default: {
		char why[160];
		snprintf(why, sizeof(why), "runs code from %s, written earlier in this line", file);
		sh_mark_unresolved(ctx, (int)idx, why);
		return 0;
	}
	}
}
