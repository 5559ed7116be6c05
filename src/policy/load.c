/* YAML node tree -> validated policy. Every mistake is reported as
 * name:line:col with what was expected: unknown keys, wrong types, bad
 * decisions, duplicate rule ids, bad globs, bad flags, unknown path classes,
 * sizes over the limits. The schema is documented in policy/default.yaml. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct lctx {
	const char *name;
	txbox_error *err;
	arena *mem; /* the policy's: everything it holds lives there */
} lctx;

__attribute__((format(printf, 3, 4))) static int bad(lctx *L, const ynode *n, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	int r = txbox_fail(L->err, -EINVAL, "%s:%zu:%zu: %s", L->name, n ? n->line : 1,
			   n ? n->col : 1, msg ? msg : "invalid policy");
	free(msg);
	return r;
}

static int oom(lctx *L) { return txbox_fail(L->err, -ENOMEM, "%s: out of memory", L->name); }

static const char *type_name(const ynode *n)
{
	return n->type == YN_MAP ? "a mapping" : n->type == YN_SEQ ? "a list" : "a scalar";
}

/* Identifies this build of the loader for policy/cache.c: a cached policy
 * was made with these defaults and rules of reading. */
const char policy_loader_build[] = __DATE__ " " __TIME__;

/* ---- the sandbox section's defaults ------------------------------------ */

static const char *const default_masked[] = {
	"~/.ssh",    "~/.gnupg",  "~/.aws",           "~/.azure",          "~/.config/gcloud",
	"~/.kube",   "~/.docker/config.json", "~/.netrc", "~/.git-credentials", "~/.npmrc",
	"~/.pypirc", NULL,
};

static const char *const default_env_deny[] = {
	"*_TOKEN",      "*_TOKEN_*",    "*SECRET*",      "*_KEY",          "*_KEY_*",
	"*PASSWORD*",   "*PASSWD*",     "AWS_*",         "*_CREDENTIALS*", "GITHUB_TOKEN",
	"GH_TOKEN",     "*API_KEY*",    "*APIKEY*",      "*PRIVATE_KEY*",  "*ACCESS_KEY*",
	"AZURE_*",      "GOOGLE_APPLICATION_CREDENTIALS", "NPM_TOKEN",     "SSH_AUTH_SOCK",
	"*_PAT",        NULL,
};

static char **strv_dup(arena *mem, const char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	char **out = arena_calloc(mem, n + 1, sizeof(*out));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = arena_strdup(mem, v[i])))
			return NULL;
	return out;
}

void policy_sandbox_set_defaults(policy_sandbox *s, arena *mem)
{
	static const char *const none[] = {NULL};
	memset(s, 0, sizeof(*s));
	s->masked_paths = strv_dup(mem, default_masked);
	s->env_deny = strv_dup(mem, default_env_deny);
	s->allowed_sockets = strv_dup(mem, none);
	s->network = false;
	s->strip_setuid = true;
}

void policy_free(policy *p)
{
	if (!p || p->builtin)
		return;
	arena_free(&p->mem);
	free(p);
}

/* ---- scalars ------------------------------------------------------------- */

static int get_string(lctx *L, const ynode *n, const char *what, const char **out)
{
	if (n->type != YN_SCALAR)
		return bad(L, n, "%s must be a string, not %s", what, type_name(n));
	if (strlen(n->value) != n->len)
		return bad(L, n, "%s contains a NUL character", what);
	if (n->len > POLICY_MAX_STRING)
		return bad(L, n, "%s is %zu bytes, over the limit of %d", what, n->len, POLICY_MAX_STRING);
	*out = n->value;
	return 0;
}

static int get_bool(lctx *L, const ynode *n, const char *what, bool *out)
{
	if (n->type == YN_SCALAR && n->plain) {
		if (!strcmp(n->value, "true") || !strcmp(n->value, "True") || !strcmp(n->value, "TRUE")) {
			*out = true;
			return 0;
		}
		if (!strcmp(n->value, "false") || !strcmp(n->value, "False") ||
		    !strcmp(n->value, "FALSE")) {
			*out = false;
			return 0;
		}
	}
	return bad(L, n, "%s must be true or false", what);
}

static int get_uint(lctx *L, const ynode *n, const char *what, bool size, uint64_t *out)
{
	if (n->type != YN_SCALAR || !n->plain || n->len == 0)
		return bad(L, n, "%s must be a number%s", what, size ? " (with an optional K, M, G or T suffix)" : "");
	const char *s = n->value;
	uint64_t v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return bad(L, n, "%s is too large", what);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return bad(L, n, "%s must be a non-negative integer, not '%s'", what, s);
	unsigned shift = 0;
	if (s[i] && size) {
		switch (s[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return bad(L, n, "%s: unknown size suffix in '%s' (use K, M, G or T)", what, s);
		}
		i++;
		if (s[i] == 'i')
			i++;
		if (s[i] == 'B')
			i++;
	}
	if (s[i])
		return bad(L, n, "%s must be %s, not '%s'", what,
			   size ? "a size such as 512M or 2G" : "a non-negative integer", s);
	if (shift && v > (UINT64_MAX >> shift))
		return bad(L, n, "%s is too large", what);
	*out = v << shift;
	return 0;
}

static int get_seconds(lctx *L, const ynode *n, const char *what, double *out)
{
	if (n->type != YN_SCALAR || !n->plain || n->len == 0)
		return bad(L, n, "%s must be a number of seconds", what);
	char *end = NULL;
	errno = 0;
	double d = strtod(n->value, &end);
	if (errno || *end || !isfinite(d) || d < 0 || d > 1e9)
		return bad(L, n, "%s must be a number of seconds between 0 and 1e9, not '%s'", what,
			   n->value);
	*out = d;
	return 0;
}

static int get_decision(lctx *L, const ynode *n, const char *what, bool allow_ok,
			policy_decision *out)
{
	const char *s;
	int r = get_string(L, n, what, &s);
	if (r < 0)
		return r;
	if (!strcmp(s, "allow") && allow_ok)
		*out = POLICY_ALLOW;
	else if (!strcmp(s, "hold"))
		*out = POLICY_HOLD;
	else if (!strcmp(s, "deny"))
		*out = POLICY_DENY;
	else
		return bad(L, n, "%s must be %s, not '%s'", what,
			   allow_ok ? "allow, hold or deny" : "hold or deny", s);
	return 0;
}

static const char *const effect_names[EFFECT_COUNT] = {
	[EFFECT_HOST] = "host",
	[EFFECT_WORKSPACE] = "workspace",
	[EFFECT_REMOTE] = "remote",
};

const char *rule_effect_name(rule_effect e) { return e < EFFECT_COUNT ? effect_names[e] : "?"; }

static int get_effect(lctx *L, const ynode *n, rule_effect *out)
{
	const char *s;
	int r = get_string(L, n, "effect", &s);
	if (r < 0)
		return r;
	for (size_t e = 0; e < EFFECT_COUNT; e++)
		if (!strcmp(s, effect_names[e])) {
			*out = (rule_effect)e;
			return 0;
		}
	return bad(L, n, "effect must be host, workspace or remote, not '%s'", s);
}

/* ---- lists ----------------------------------------------------------------- */

typedef int (*item_check)(lctx *L, const ynode *n, const char *what, const char *s);

static int check_glob(lctx *L, const ynode *n, const char *what, const char *s)
{
	if (!*s)
		return bad(L, n, "%s: empty pattern", what);
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '\\') {
			if (!s[i + 1])
				return bad(L, n, "%s: bad glob '%s': trailing backslash", what, s);
			i++;
		} else if (s[i] == '[') {
			size_t j = i + 1;
			if (s[j] == '!' || s[j] == '^')
				j++;
			if (s[j] == ']')
				j++;
			while (s[j] && s[j] != ']')
				j++;
			if (!s[j])
				return bad(L, n, "%s: bad glob '%s': '[' without a closing ']'", what, s);
			i = j;
		}
	}
	return 0;
}

/* A flag, or spellings of one flag separated by '|' ("-f|--force"). */
static int check_flag(lctx *L, const ynode *n, const char *what, const char *s)
{
	for (const char *p = s;; p++) {
		size_t len = strcspn(p, "|");
		if (p[0] != '-' || len < 2 || strcspn(p, " \t\n=") < len || (p[1] == '-' && p[2] == '-'))
			return bad(L, n,
				   "%s: bad flag '%s' (expected -x, --long, -word or --, without '=' "
				   "or spaces; spellings of one flag separated by '|')",
				   what, s);
		p += len;
		if (!*p)
			return 0;
	}
}

static int check_name(lctx *L, const ynode *n, const char *what, const char *s)
{
	if (!*s || strchr(s, '/'))
		return bad(L, n, "%s: '%s' must be a command name without '/'", what, s);
	return 0;
}

static int check_abs(lctx *L, const ynode *n, const char *what, const char *s)
{
	if (s[0] != '/' && !(s[0] == '~' && (s[1] == '/' || !s[1])))
		return bad(L, n, "%s: '%s' must be an absolute path or start with ~/", what, s);
	return 0;
}

/* masked_paths: a path, or "!path" (a built-in mask the policy lifts) */
static int check_mask(lctx *L, const ynode *n, const char *what, const char *s)
{
	return check_abs(L, n, what, s + (s[0] == '!'));
}

static int check_any(lctx *L, const ynode *n, const char *what, const char *s)
{
	(void)L, (void)n, (void)what, (void)s;
	return 0;
}

static int reserve(lctx *L, strlist *l, size_t more)
{
	if (l->n + more + 1 <= l->cap)
		return 0;
	size_t cap = l->cap * 2 > l->n + more + 1 ? l->cap * 2 : l->n + more + 1;
	char **v = arena_calloc(L->mem, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (l->n)
		memcpy(v, l->v, l->n * sizeof(*v));
	l->v = v;
	l->cap = cap;
	return 0;
}

static int add_string(lctx *L, strlist *l, const char *s)
{
	if (reserve(L, l, 1) < 0)
		return -ENOMEM;
	if (!(l->v[l->n] = arena_strdup(L->mem, s)))
		return -ENOMEM;
	l->v[++l->n] = NULL;
	return 0;
}

/* A string or a list of strings. */
static int get_list(lctx *L, const ynode *n, const char *what, item_check check, strlist *out)
{
	const ynode *const *items = (const ynode *const *)&n;
	size_t count = 1;
	if (n->type == YN_SEQ) {
		items = (const ynode *const *)n->items;
		count = n->n;
	} else if (n->type != YN_SCALAR) {
		return bad(L, n, "%s must be a string or a list of strings, not %s", what, type_name(n));
	}
	if (count > POLICY_MAX_LIST)
		return bad(L, n, "%s has %zu items, over the limit of %d", what, count, POLICY_MAX_LIST);
	if (reserve(L, out, count) < 0)
		return oom(L);
	for (size_t i = 0; i < count; i++) {
		const char *s;
		int r = get_string(L, items[i], what, &s);
		if (r < 0)
			return r;
		if ((r = check(L, items[i], what, s)) < 0)
			return r;
		if (add_string(L, out, s) < 0)
			return oom(L);
	}
	return 0;
}

/* An absolute or ~/ glob; "!" before one excludes what it matches. */
static bool is_path_glob(const char *s)
{
	return s[0] == '/' || (s[0] == '~' && (s[1] == '/' || !s[1]));
}

static int get_pathcond(lctx *L, const ynode *n, const char *what, pathcond *pc)
{
	strlist items = {0};
	int r = get_list(L, n, what, check_any, &items);
	if (r < 0)
		return r;
	pc->set = true;
	const ynode *const *nodes = n->type == YN_SEQ ? (const ynode *const *)n->items : (const ynode *const *)&n;
	for (size_t i = 0; i < items.n && r == 0; i++) {
		const char *s = items.v[i];
		unsigned c = path_class_from_name(s);
		if (c) {
			pc->classes |= c;
		} else if (is_path_glob(s) || (s[0] == '!' && is_path_glob(s + 1))) {
			if ((r = check_glob(L, nodes[i], what, s)) == 0 && add_string(L, &pc->globs, s) < 0)
				r = oom(L);
		} else {
			r = bad(L, nodes[i],
				"%s: unknown path class '%s' (expected inside, workspace, outside, ancestor, "
				"home, system, device, network, tmp, pseudo, other, unknown, or an "
				"absolute or ~/ glob, \"!\" before one to exclude it)",
				what, s);
		}
	}
	return r;
}

static int get_long(lctx *L, const ynode *n, const char *what, long *out)
{
	uint64_t v;
	int r = get_uint(L, n, what, false, &v);
	if (r < 0)
		return r;
	if (v > 100000)
		return bad(L, n, "%s is too large", what);
	*out = (long)v;
	return 0;
}

/* ---- mappings ----------------------------------------------------------------- */

/* Check n is a mapping with scalar, unique keys. */
static int check_map(lctx *L, const ynode *n, const char *what)
{
	if (n->type != YN_MAP)
		return bad(L, n, "%s must be a mapping, not %s", what, type_name(n));
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const ynode *k = n->items[i];
		if (k->type != YN_SCALAR)
			return bad(L, k, "keys of %s must be strings", what);
		for (size_t j = 0; j < i; j += 2)
			if (!strcmp(n->items[j]->value, k->value))
				return bad(L, k, "duplicate key '%s' in %s (first at line %zu)", k->value,
					   what, n->items[j]->line);
	}
	return 0;
}

static int unknown_key(lctx *L, const ynode *k, const char *what, const char *expected)
{
	return bad(L, k, "unknown key '%s' in %s (expected one of: %s)", k->value, what, expected);
}

static int parse_subcommands(lctx *L, const ynode *n, rule_match *m)
{
	strlist alts = {0};
	int r = get_list(L, n, "match.subcommand", check_glob, &alts);
	if (r == 0) {
		m->subcommands = arena_calloc(L->mem, alts.n ? alts.n : 1, sizeof(*m->subcommands));
		if (!m->subcommands)
			r = oom(L);
	}
	for (size_t i = 0; r == 0 && i < alts.n; i++) {
		char *save = NULL;
		strlist *w = &m->subcommands[m->nsubcommands++];
		for (char *tok = strtok_r(alts.v[i], " \t", &save); tok && r == 0;
		     tok = strtok_r(NULL, " \t", &save))
			if (add_string(L, w, tok) < 0)
				r = oom(L);
		if (r == 0 && w->n == 0)
			r = bad(L, n, "match.subcommand: empty subcommand");
	}
	return r;
}

static int parse_builtins(lctx *L, const ynode *n, rule_match *m)
{
	strlist l = {0};
	int r = get_list(L, n, "match.builtin", check_any, &l);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		if (!strcmp(l.v[i], "fork-bomb"))
			m->builtins |= BUILTIN_FORK_BOMB;
		else if (!strcmp(l.v[i], "non-ascii-command"))
			m->builtins |= BUILTIN_NON_ASCII_COMMAND;
		else if (!strcmp(l.v[i], "dir-pathspec"))
			m->builtins |= BUILTIN_DIR_PATHSPEC;
		else
			r = bad(L, n,
				"match.builtin: unknown check '%s' (expected fork-bomb, non-ascii-command or dir-pathspec)",
				l.v[i]);
	}
	return r;
}

static int parse_options(lctx *L, const ynode *n, rule_match *m)
{
	int r = check_map(L, n, "match.options");
	if (r < 0)
		return r;
	m->options = arena_calloc(L->mem, n->n / 2 + 1, sizeof(*m->options));
	if (!m->options)
		return oom(L);
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const ynode *k = n->items[i];
		size_t kl = strlen(k->value);
		if (!*k->value || strpbrk(k->value, " \t=") || !strcmp(k->value, "-") ||
		    !strcmp(k->value, "--") || strstr(k->value, "||") || k->value[0] == '|' ||
		    k->value[kl - 1] == '|')
			return bad(L, k, "match.options: bad option name '%s'", k->value);
		optpath *o = &m->options[m->noptions++];
		o->key = arena_strdup(L->mem, k->value);
		if (!o->key)
			return oom(L);
		if ((r = get_pathcond(L, n->items[i + 1], "match.options", &o->cond)) < 0)
			return r;
	}
	return 0;
}

#define MATCH_KEYS                                                                             \
	"command, command_not, subcommand, flags, flags_any, flags_none, args, args_all, words, " \
	"words_all, icase, paths, dest, options, redirects, reads, nargs_min, nargs_max, with, "  \
	"via, text, unresolved, builtin"

static int parse_match(lctx *L, const ynode *n, rule_match *m)
{
	int r = check_map(L, n, "match");
	if (r < 0)
		return r;
	m->nargs_min = m->nargs_max = -1;
	m->unresolved = -1;
	if (n->n == 0)
		return bad(L, n, "match needs at least one condition");
	for (size_t i = 0; i + 1 < n->n && r == 0; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *key = k->value;
		bool b;
		if (!strcmp(key, "command"))
			r = get_list(L, v, "match.command", check_glob, &m->command);
		else if (!strcmp(key, "command_not"))
			r = get_list(L, v, "match.command_not", check_glob, &m->command_not);
		else if (!strcmp(key, "subcommand"))
			r = parse_subcommands(L, v, m);
		else if (!strcmp(key, "flags"))
			r = get_list(L, v, "match.flags", check_flag, &m->flags);
		else if (!strcmp(key, "flags_any"))
			r = get_list(L, v, "match.flags_any", check_flag, &m->flags_any);
		else if (!strcmp(key, "flags_none"))
			r = get_list(L, v, "match.flags_none", check_flag, &m->flags_none);
		else if (!strcmp(key, "args"))
			r = get_list(L, v, "match.args", check_glob, &m->args);
		else if (!strcmp(key, "args_all"))
			r = get_list(L, v, "match.args_all", check_glob, &m->args_all);
		else if (!strcmp(key, "words"))
			r = get_list(L, v, "match.words", check_glob, &m->words);
		else if (!strcmp(key, "words_all"))
			r = get_list(L, v, "match.words_all", check_glob, &m->words_all);
		else if (!strcmp(key, "icase")) {
			if ((r = get_bool(L, v, "match.icase", &b)) == 0)
				m->icase = b;
		} else if (!strcmp(key, "paths"))
			r = get_pathcond(L, v, "match.paths", &m->paths);
		else if (!strcmp(key, "dest"))
			r = get_pathcond(L, v, "match.dest", &m->dest);
		else if (!strcmp(key, "redirects"))
			r = get_pathcond(L, v, "match.redirects", &m->redirects);
		else if (!strcmp(key, "reads"))
			r = get_pathcond(L, v, "match.reads", &m->reads);
		else if (!strcmp(key, "options"))
			r = parse_options(L, v, m);
		else if (!strcmp(key, "nargs_min"))
			r = get_long(L, v, "match.nargs_min", &m->nargs_min);
		else if (!strcmp(key, "nargs_max"))
			r = get_long(L, v, "match.nargs_max", &m->nargs_max);
		else if (!strcmp(key, "with"))
			r = get_list(L, v, "match.with", check_glob, &m->with);
		else if (!strcmp(key, "text"))
			r = get_list(L, v, "match.text", check_glob, &m->text);
		else if (!strcmp(key, "via"))
			r = get_list(L, v, "match.via", check_glob, &m->via);
		else if (!strcmp(key, "unresolved")) {
			if ((r = get_bool(L, v, "match.unresolved", &b)) == 0)
				m->unresolved = b;
		} else if (!strcmp(key, "builtin"))
			r = parse_builtins(L, v, m);
		else
			r = unknown_key(L, k, "match", MATCH_KEYS);
	}
	if (r == 0 && (m->builtins & BUILTIN_FORK_BOMB) && n->n != 2)
		r = bad(L, n, "match: builtin fork-bomb looks at the whole line and takes no other condition");
	if (r == 0 && m->nargs_min >= 0 && m->nargs_max >= 0 && m->nargs_min > m->nargs_max)
		r = bad(L, n, "match: nargs_min is greater than nargs_max");
	return r;
}

static int check_id(lctx *L, const ynode *n, const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > POLICY_MAX_ID)
		return bad(L, n, "rule id must be 1 to %d characters", POLICY_MAX_ID);
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
			return bad(L, n, "rule id '%s' may only use letters, digits, '.', '_' and '-'", s);
	if (!strcmp(s, "default") || !strcmp(s, "unresolved"))
		return bad(L, n, "rule id '%s' is reserved", s);
	return 0;
}

static int parse_rule(lctx *L, const ynode *n, policy *p, rule *ru)
{
	int r = check_map(L, n, "a rule");
	const ynode *id = NULL, *dec = NULL, *reason = NULL, *match = NULL;
	if (r < 0)
		return r;
	ru->line = n->line;
	ru->m.nargs_min = ru->m.nargs_max = -1;
	ru->m.unresolved = -1;
	for (size_t i = 0; i + 1 < n->n && r == 0; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *s;
		if (!strcmp(k->value, "id")) {
			id = v;
			if ((r = get_string(L, v, "id", &s)) == 0 && (r = check_id(L, v, s)) == 0 &&
			    !(ru->id = arena_strdup(L->mem, s)))
				r = oom(L);
		} else if (!strcmp(k->value, "decision")) {
			dec = v;
			r = get_decision(L, v, "decision", true, &ru->decision);
		} else if (!strcmp(k->value, "reason")) {
			reason = v;
			if ((r = get_string(L, v, "reason", &s)) == 0 && !(ru->reason = arena_strdup(L->mem, s)))
				r = oom(L);
		} else if (!strcmp(k->value, "suggestion")) {
			if ((r = get_string(L, v, "suggestion", &s)) == 0 && !(ru->suggestion = arena_strdup(L->mem, s)))
				r = oom(L);
		} else if (!strcmp(k->value, "match")) {
			match = v;
			r = parse_match(L, v, &ru->m);
		} else if (!strcmp(k->value, "effect")) {
			r = get_effect(L, v, &ru->m.effect);
		} else {
			r = unknown_key(L, k, "a rule", "id, decision, reason, suggestion, effect, match");
		}
	}
	if (r < 0)
		return r;
	if (!id)
		return bad(L, n, "rule without an id");
	if (!dec)
		return bad(L, n, "rule '%s' has no decision (allow, hold or deny)", ru->id);
	if (!reason)
		return bad(L, n, "rule '%s' has no reason", ru->id);
	if (!match)
		return bad(L, n, "rule '%s' has no match", ru->id);
	for (size_t i = 0; i < p->nrules; i++)
		if (!strcmp(p->rules[i].id, ru->id))
			return bad(L, id, "duplicate rule id '%s' (first defined at line %zu)", ru->id,
				   p->rules[i].line);
	return 0;
}

static int parse_rules(lctx *L, const ynode *n, policy *p)
{
	if (n->type != YN_SEQ)
		return bad(L, n, "rules must be a list, not %s", type_name(n));
	if (n->n > POLICY_MAX_RULES)
		return bad(L, n->items[POLICY_MAX_RULES], "more than %d rules", POLICY_MAX_RULES);
	p->rules = arena_calloc(L->mem, n->n + 1, sizeof(*p->rules));
	if (!p->rules)
		return oom(L);
	for (size_t i = 0; i < n->n; i++) {
		rule *ru = &p->rules[p->nrules];
		int r = parse_rule(L, n->items[i], p, ru);
		p->nrules++;
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_commands(lctx *L, const ynode *n, policy *p)
{
	int r = check_map(L, n, "commands");
	if (r < 0)
		return r;
	p->hints = arena_calloc(L->mem, n->n / 2 + 1, sizeof(*p->hints));
	if (!p->hints)
		return oom(L);
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		if ((r = check_name(L, k, "commands", k->value)) < 0)
			return r;
		cmd_hint *h = &p->hints[p->nhints++];
		if (!(h->name = arena_strdup(L->mem, k->value)))
			return oom(L);
		if ((r = check_map(L, v, "a command entry")) < 0)
			return r;
		for (size_t j = 0; j + 1 < v->n; j += 2) {
			const ynode *kk = v->items[j];
			if (!strcmp(kk->value, "value_options"))
				r = get_list(L, v->items[j + 1], "value_options", check_flag, &h->value_options);
			else
				r = unknown_key(L, kk, "a command entry", "value_options");
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int set_strv(lctx *L, const ynode *n, const char *what, item_check check, char ***out)
{
	strlist l = {0};
	int r = get_list(L, n, what, check, &l);
	if (r < 0)
		return r;
	if (!l.v && !(l.v = arena_calloc(L->mem, 1, sizeof(char *)))) /* empty list */
		return oom(L);
	*out = l.v;
	return 0;
}

static int parse_limits(lctx *L, const ynode *n, policy_sandbox *s)
{
	int r = check_map(L, n, "sandbox.limits");
	for (size_t i = 0; r == 0 && i + 1 < n->n; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *key = k->value;
		if (!strcmp(key, "memory"))
			r = get_uint(L, v, "limits.memory", true, &s->memory_bytes);
		else if (!strcmp(key, "pids"))
			r = get_uint(L, v, "limits.pids", false, &s->pids);
		else if (!strcmp(key, "cpu"))
			r = get_uint(L, v, "limits.cpu (seconds)", false, &s->cpu_seconds);
		else if (!strcmp(key, "disk"))
			r = get_uint(L, v, "limits.disk", true, &s->disk_bytes);
		else if (!strcmp(key, "nofile"))
			r = get_uint(L, v, "limits.nofile", false, &s->nofile);
		else if (!strcmp(key, "fsize"))
			r = get_uint(L, v, "limits.fsize", true, &s->fsize_bytes);
		else if (!strcmp(key, "timeout"))
			r = get_seconds(L, v, "limits.timeout", &s->timeout_sec);
		else
			r = unknown_key(L, k, "sandbox.limits", "memory, pids, cpu, disk, nofile, fsize, timeout");
	}
	return r;
}

static int parse_sandbox(lctx *L, const ynode *n, policy_sandbox *s)
{
	int r = check_map(L, n, "sandbox");
	for (size_t i = 0; r == 0 && i + 1 < n->n; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *key = k->value;
		if (!strcmp(key, "network"))
			r = get_bool(L, v, "sandbox.network", &s->network);
		else if (!strcmp(key, "strip_setuid"))
			r = get_bool(L, v, "sandbox.strip_setuid", &s->strip_setuid);
		else if (!strcmp(key, "masked_paths"))
			r = set_strv(L, v, "sandbox.masked_paths", check_mask, &s->masked_paths);
		else if (!strcmp(key, "env_deny"))
			r = set_strv(L, v, "sandbox.env_deny", check_glob, &s->env_deny);
		else if (!strcmp(key, "allowed_sockets"))
			r = set_strv(L, v, "sandbox.allowed_sockets", check_abs, &s->allowed_sockets);
		else if (!strcmp(key, "limits"))
			r = parse_limits(L, v, s);
		else
			r = unknown_key(L, k, "sandbox",
					"network, strip_setuid, masked_paths, env_deny, allowed_sockets, limits");
	}
	return r;
}

/* ---- the effects section (checked on a transaction's changes: effects.c) ---- */

static int check_effect_glob(lctx *L, const ynode *n, const char *what, const char *s)
{
	const char *g = s + (s[0] == '!');
	if (g[0] == '/' || !strcmp(g, "..") || !strncmp(g, "../", 3) || strstr(g, "/../"))
		return bad(L, n, "%s: '%s' must be relative to the workspace, without '..'", what, s);
	return check_glob(L, n, what, g);
}

static int parse_effect_names(lctx *L, const ynode *n, const char *what, const char *const *names,
			      unsigned *out)
{
	strlist l = {0};
	int r = get_list(L, n, what, check_any, &l);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		size_t j = 0;
		while (names[j] && strcmp(names[j], l.v[i]))
			j++;
		if (!names[j]) {
			char all[256] = "";
			for (size_t k = 0; names[k]; k++)
				snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", k ? ", " : "", names[k]);
			return bad(L, n->type == YN_SEQ ? n->items[i] : n, "%s: unknown value '%s' (expected %s)", what,
				   l.v[i], all);
		}
		*out |= 1u << j;
	}
	return r;
}

static const char *const effect_kind_names[] = {"added", "modified", "deleted", "type_changed", "metadata", NULL};
static const char *const effect_git_names[] = {"refs-deleted",    "reflog-deleted",  "packs-deleted",
					       "objects-deleted", "shallow-changed", "objects-rewritten", "stash-dropped",
					       "remote-redirected", "work-discarded", "tracked-hidden", NULL};
static const char *const effect_found_names[] = {"dependency-code", "lifecycle-script", "test-autorun", NULL};

static int get_share(lctx *L, const ynode *n, double *out)
{
	char *end = NULL;
	double d = n->type == YN_SCALAR && n->plain ? strtod(n->value, &end) : NAN;
	if (!end || *end || !(d > 0 && d <= 1))
		return bad(L, n, "match.deleted_share must be a number above 0 and at most 1");
	*out = d;
	return 0;
}

#define EFFECT_MATCH_KEYS "paths, kinds, deleted_min, deleted_share, git, found, git_config, policy_file"

static int parse_effect_match(lctx *L, const ynode *n, effect_rule *e)
{
	int r = check_map(L, n, "match");
	if (r == 0 && n->n == 0)
		r = bad(L, n, "match needs at least one condition");
	for (size_t i = 0; i + 1 < n->n && r == 0; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *key = k->value;
		if (!strcmp(key, "paths"))
			r = get_list(L, v, "match.paths", check_effect_glob, &e->paths);
		else if (!strcmp(key, "kinds"))
			r = parse_effect_names(L, v, "match.kinds", effect_kind_names, &e->kinds);
		else if (!strcmp(key, "deleted_min")) {
			if ((r = get_uint(L, v, "match.deleted_min", false, &e->deleted_min)) == 0 && !e->deleted_min)
				r = bad(L, v, "match.deleted_min must be at least 1");
		} else if (!strcmp(key, "deleted_share"))
			r = get_share(L, v, &e->deleted_share);
		else if (!strcmp(key, "git"))
			r = parse_effect_names(L, v, "match.git", effect_git_names, &e->git);
		else if (!strcmp(key, "found"))
			r = parse_effect_names(L, v, "match.found", effect_found_names, &e->found);
		else if (!strcmp(key, "git_config"))
			r = get_list(L, v, "match.git_config", check_glob, &e->git_config);
		else if (!strcmp(key, "policy_file"))
			r = get_bool(L, v, "match.policy_file", &e->policy_file);
		else
			r = unknown_key(L, k, "an effect's match", EFFECT_MATCH_KEYS);
	}
	bool positive = false;
	for (size_t i = 0; i < e->paths.n; i++)
		positive |= e->paths.v[i][0] != '!';
	if (r == 0 && e->paths.n && !positive)
		r = bad(L, n, "match.paths has only exclusions ('!glob'): it selects nothing");
	return r;
}

static int parse_effect(lctx *L, const ynode *n, const policy *p, effect_rule *e)
{
	int r = check_map(L, n, "an effect rule");
	const ynode *id = NULL, *dec = NULL, *reason = NULL, *match = NULL;
	e->line = n->line;
	for (size_t i = 0; i + 1 < n->n && r == 0; i += 2) {
		const ynode *k = n->items[i], *v = n->items[i + 1];
		const char *s;
		char **dst = NULL;
		if (!strcmp(k->value, "id")) {
			id = v;
			if ((r = get_string(L, v, "id", &s)) == 0 && (r = check_id(L, v, s)) == 0)
				dst = &e->id;
		} else if (!strcmp(k->value, "decision")) {
			dec = v;
			r = get_decision(L, v, "decision", true, &e->decision);
		} else if (!strcmp(k->value, "reason")) {
			reason = v;
			if ((r = get_string(L, v, "reason", &s)) == 0)
				dst = &e->reason;
		} else if (!strcmp(k->value, "suggestion")) {
			if ((r = get_string(L, v, "suggestion", &s)) == 0)
				dst = &e->suggestion;
		} else if (!strcmp(k->value, "match")) {
			match = v;
			r = parse_effect_match(L, v, e);
		} else
			r = unknown_key(L, k, "an effect rule", "id, decision, reason, suggestion, match");
		if (r == 0 && dst && !(*dst = arena_strdup(L->mem, s)))
			r = oom(L);
	}
	if (r < 0)
		return r;
	if (!id || !dec || !reason || !match)
		return bad(L, n, "effect rule%s%s needs %s", id ? " " : "", id ? e->id : "",
			   !id ? "an id" : !dec ? "a decision (allow, hold or deny)" : !reason ? "a reason" : "a match");
	for (size_t i = 0; i < p->neffects; i++)
		if (!strcmp(p->effects[i].id, e->id))
			return bad(L, id, "duplicate effect rule id '%s' (first defined at line %zu)", e->id,
				   p->effects[i].line);
	return 0;
}

static int parse_effects(lctx *L, const ynode *n, policy *p)
{
	if (n->type != YN_SEQ)
		return bad(L, n, "effects must be a list, not %s", type_name(n));
	if (n->n > POLICY_MAX_RULES)
		return bad(L, n->items[POLICY_MAX_RULES], "more than %d effect rules", POLICY_MAX_RULES);
	p->effects = arena_calloc(L->mem, n->n + 1, sizeof(*p->effects));
	if (!p->effects)
		return oom(L);
	for (size_t i = 0; i < n->n; i++) {
		int r = parse_effect(L, n->items[i], p, &p->effects[p->neffects]);
		if (r < 0)
			return r;
		p->neffects++;
	}
	return 0;
}

int policy_from_tree(const char *name, const ynode *root, policy **out, txbox_error *err)
{
	lctx L = {name, err, NULL};
	policy *p = calloc(1, sizeof(*p));
	bool have_version = false;
	int r = 0;
	*out = NULL;
	if (!p)
		return oom(&L);
	L.mem = &p->mem;
	p->unresolved = POLICY_HOLD;
	policy_sandbox_set_defaults(&p->sandbox, &p->mem);
	if (!p->sandbox.masked_paths || !p->sandbox.env_deny || !p->sandbox.allowed_sockets) {
		r = oom(&L);
		goto fail;
	}
	if (!root) {
		r = bad(&L, NULL, "empty policy (expected a mapping with at least 'version: 1')");
		goto fail;
	}
	if ((r = check_map(&L, root, "the policy")) < 0)
		goto fail;
	for (size_t i = 0; r == 0 && i + 1 < root->n; i += 2) {
		const ynode *k = root->items[i], *v = root->items[i + 1];
		const char *key = k->value;
		if (!strcmp(key, "version")) {
			have_version = true;
			if (v->type != YN_SCALAR || strcmp(v->value, "1") != 0)
				r = bad(&L, v, "unsupported policy version '%s' (this txbox reads version 1)",
					v->type == YN_SCALAR ? v->value : type_name(v));
		} else if (!strcmp(key, "unresolved"))
			r = get_decision(&L, v, "unresolved", false, &p->unresolved);
		else if (!strcmp(key, "sandbox"))
			r = parse_sandbox(&L, v, &p->sandbox);
		else if (!strcmp(key, "commands"))
			r = parse_commands(&L, v, p);
		else if (!strcmp(key, "rules"))
			r = parse_rules(&L, v, p);
		else if (!strcmp(key, "effects"))
			r = parse_effects(&L, v, p);
		else
			r = unknown_key(&L, k, "the policy", "version, unresolved, sandbox, commands, rules, effects");
	}
	if (r == 0 && !have_version)
		r = bad(&L, root, "missing 'version: 1'");
	if (r < 0)
		goto fail;
	*out = p;
	return 0;
fail:
	policy_free(p);
	return r;
}
