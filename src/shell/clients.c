/* Client programs whose own command language runs shell commands:
 *
 *   sqlite3 DB [TEXT…]   `.shell CMD` / `.system CMD` at the start of a line
 *                        (operands after DB, -cmd TEXT, stdin)
 *   psql                 `\! CMD` (-c/--command TEXT, stdin)
 *   mysql / mariadb      `system CMD` / `\! CMD` (-e/--execute TEXT, stdin)
 *
 * CMD is the rest of the line, judged as shell text (the clients hand it
 * to system(3)). Stdin counts when it is a here-document / here-string,
 * or the static text of an echo / printf piping into the client; other
 * stdin (a file of the workspace, a dump) is data this file cannot read.
 */
#include "shell/unwrap.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum client { CLIENT_SQLITE, CLIENT_PSQL, CLIENT_MYSQL, CLIENT_COUNT };

static const struct client_spec {
	const char *names[3];
	const char *s, *l; /* the option carrying command text */
	const char *valued; /* short options taking a value (for finding operands) */
} clients[CLIENT_COUNT] = {
	[CLIENT_SQLITE] = {{"sqlite3", "sqlite", NULL}, "-cmd", NULL, ""},
	[CLIENT_PSQL] = {{"psql", NULL, NULL}, "-c", "--command", "cdfhLopPTUvF"},
	[CLIENT_MYSQL] = {{"mysql", "mariadb", NULL}, "-e", "--execute", "eDhPuS"}, /* -pPASS: attached */
};

static int client_of(const char *name)
{
	for (int c = 0; c < CLIENT_COUNT; c++)
		for (size_t k = 0; k < 3 && clients[c].names[k]; k++)
			if (strcmp(clients[c].names[k], name) == 0)
				return c;
	return -1;
}

/* Where in line ln a shell command starts for client c, or NULL. */
static const char *line_shell_command(enum client c, const char *ln)
{
	ln += strspn(ln, " \t");
	switch (c) {
	case CLIENT_SQLITE:
		if (strncmp(ln, ".shell", 6) == 0 && strchr(" \t", ln[6]) && ln[6])
			return ln + 7;
		if (strncmp(ln, ".system", 7) == 0 && strchr(" \t", ln[7]) && ln[7])
			return ln + 8;
		return NULL;
	case CLIENT_PSQL: {
		const char *b = strstr(ln, "\\!"); /* a meta-command ends the SQL before it */
		return b ? b + 2 : NULL;
	}
	case CLIENT_MYSQL:
		for (const char *p = ln; p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
			p += strspn(p, " \t");
			if (strncmp(p, "\\!", 2) == 0)
				return p + 2;
			if (strncasecmp(p, "system", 6) == 0 && p[6] && strchr(" \t", p[6]))
				return p + 7;
		}
		return NULL;
	default:
		return NULL;
	}
}

struct client_line {
	enum client c;
	const char *via;
};

static int client_line(struct uw *u, char *ln, const void *arg)
{
	const struct client_line *cl = arg;
	const char *cmd = line_shell_command(cl->c, ln);
	return cmd ? sh_reparse(u->ctx, cmd, strlen(cmd), cl->via, u->depth + 1, u->idx, NULL) : 0;
}

static int client_text(struct uw *u, enum client c, const char *text, const char *via)
{
	const struct client_line cl = {c, via};
	return uw_each_line(u, text, client_line, &cl);
}

bool sh_client_name(const char *name)
{
	return client_of(name) >= 0;
}

int sh_client_script(struct sh_ctx *ctx, const char *name, const char *text, unsigned depth,
		     int cmd_idx)
{
	int c = client_of(name);
	if (c < 0)
		return 0;
	struct uw u = {.ctx = ctx, .idx = cmd_idx, .name = name, .depth = depth};
	char via[64];
	snprintf(via, sizeof(via), "%s, a file written earlier", name);
	return client_text(&u, (enum client)c, text, via);
}

/* The static text an echo / printf earlier in the same pipeline writes
 * into this command's stdin; NULL when there is none (or no memory). */
static char *piped_echo(const struct uw *u)
{
	if (!u->ns || !u->in || !u->in->piped)
		return NULL;
	const struct sh_node *me = NULL, *prev = NULL;
	for (size_t k = 0; k < u->ns->n && !me; k++) {
		const struct sh_node *nd = &u->ns->v[k];
		if (nd->argv && u->v >= nd->argv && u->v < nd->argv + nd->argc) /* a node may have no words */
			me = nd;
	}
	for (size_t k = 0; me && me->pipe_idx > 0 && k < u->ns->n; k++) {
		const struct sh_node *nd = &u->ns->v[k];
		if (nd->pipe_id == me->pipe_id && nd->pipe_idx + 1 == me->pipe_idx)
			prev = nd;
	}
	if (!prev || prev->argc < 2 || prev->argv[0].unres)
		return NULL;
	bool echo = strcmp(prev->argv[0].text, "echo") == 0;
	if (!echo && strcmp(prev->argv[0].text, "printf") != 0)
		return NULL;
	_cleanup_free_ char **words = calloc(prev->argc, sizeof(*words));
	if (!words)
		return NULL;
	for (size_t k = 0; k < prev->argc; k++) {
		if (prev->argv[k].unres)
			return NULL;
		words[k] = prev->argv[k].text;
	}
	return echo ? sh_echo_text(words, prev->argc) : sh_printf_text(words, prev->argc);
}

static int client_stdin(struct uw *u, enum client c)
{
	char via[64];
	snprintf(via, sizeof(via), "%s stdin", u->name);
	if (u->in && u->in->body && !u->in->body_unres)
		return client_text(u, c, u->in->body, via);
	_cleanup_free_ char *piped = piped_echo(u);
	return piped ? client_text(u, c, piped, via) : 0;
}

/* A cluster of short options at word k, read as getopt does: the first
 * letter taking a value takes the rest of the word or the next word
 * (psql -Xc TEXT, mysql -uapp -e …); the command option's text is judged. */
static int client_cluster(struct uw *u, enum client c, size_t k, size_t *next, const char *via)
{
	const struct client_spec *cs = &clients[c];
	const char *t = u->v[k].text;
	for (size_t j = 1; t[j]; j++) {
		if (!strchr(cs->valued, t[j]))
			continue;
		const struct sh_field *val = &u->v[k];
		const char *text = t + j + 1;
		if (!t[j + 1]) {
			if (k + 1 >= u->n)
				return 0;
			val = &u->v[k + 1];
			text = val->text;
			*next = k + 2;
		}
		if (t[j] == cs->s[1] && !val->unres)
			return client_text(u, c, text, via);
		return 0;
	}
	return 0;
}

int uw_client(struct uw *u)
{
	int c = client_of(u->name);
	if (c < 0)
		return 0;
	const struct client_spec *cs = &clients[c];
	char via[64];
	snprintf(via, sizeof(via), "%s %s", u->name, cs->s);
	int rc = 0;
	size_t operands = 0;
	for (size_t k = 1; k < u->n && rc == 0;) {
		struct sh_field val;
		size_t next = k + 1;
		const struct sh_field *f = &u->v[k];
		if (uw_opt_value(u, k, cs->s, cs->l, &val, &next)) {
			if (!val.unres)
				rc = client_text(u, (enum client)c, val.text, via);
		} else if (!f->unres && f->text[0] == '-' && f->text[1]) {
			if (c != CLIENT_SQLITE && f->text[1] != '-')
				rc = client_cluster(u, (enum client)c, k, &next, via);
		} else if (c == CLIENT_SQLITE && operands++ > 0 && !f->unres) {
			rc = client_text(u, (enum client)c, f->text, "sqlite3"); /* after DB */
		}
		k = next;
	}
	return rc == 0 ? client_stdin(u, (enum client)c) : rc;
}
