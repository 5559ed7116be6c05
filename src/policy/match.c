/* One rule against one command. Every condition present in `match:` must
 * hold (AND); inside one list any item may hold (OR), except `flags` and
 * `*_all` lists, where every item must.
 *
 * A word that cannot be resolved statically is "unknown". It is a reason to
 * hold only where the effect it could have escapes the sandbox of this run
 * (the workspace, which is committed; the network when granted; anything
 * when a host socket is allowed): then, for hold/deny rules that name
 * commands, an unknown word satisfies the condition and the rule fires
 * capped at the policy's `unresolved:` decision, reported as unresolved,
 * never with the rule's own reason. A read-only host, masked secrets and
 * no network contain every other effect. For allow rules an unknown word
 * never satisfies a condition, and every path must be in the listed classes. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool glob_one(const char *pat, const char *s, int flags)
{
	if (!strpbrk(pat, "*?[\\")) /* literal: skip fnmatch */
		return (flags & FNM_CASEFOLD ? strcasecmp(pat, s) : strcmp(pat, s)) == 0;
	return fnmatch(pat, s, flags) == 0;
}

static bool glob_any(const strlist *l, const char *s, int flags)
{
	for (size_t i = 0; i < l->n; i++)
		if (glob_one(l->v[i], s, flags))
			return true;
	return false;
}

/* `~/x` patterns against the home of the context; NULL when there is none. */
static char *expand_pattern(const char *pat, const char *home)
{
	char *s = NULL;
	if (pat[0] != '~')
		return strdup(pat);
	if (!home)
		return NULL;
	if (asprintf(&s, "%s%s", strcmp(home, "/") == 0 ? "" : home, pat + 1) < 0)
		return NULL;
	return s;
}

static bool has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

/* Could a glob word whose literal directory is `resolved` up to its first
 * wildcard reach something matched by pattern? Over-approximates. */
static bool glob_word_may_reach(const char *resolved, const char *pattern)
{
	const char *g = strpbrk(resolved, "*?[");
	size_t plen = (size_t)(g - resolved);
	while (plen > 0 && resolved[plen - 1] != '/')
		plen--;
	return strncmp(pattern, resolved, plen) == 0;
}

/* A "!glob" of the condition excludes what it matches from the whole
 * condition (all of ~/.ssh but its `*.pub`: a public key is no secret).
 * Only a literal path is excluded; a pattern word may still reach the
 * rest. */
static bool path_glob_excluded(const pathcond *pc, const char *resolved, const char *home)
{
	if (has_glob(resolved))
		return false;
	for (size_t i = 0; i < pc->globs.n; i++) {
		if (pc->globs.v[i][0] != '!')
			continue;
		_cleanup_free_ char *pat = expand_pattern(pc->globs.v[i] + 1, home);
		if (pat && fnmatch(pat, resolved, 0) == 0)
			return true;
	}
	return false;
}

static bool path_glob_match(const pathcond *pc, const char *resolved, const char *home)
{
	for (size_t i = 0; i < pc->globs.n; i++) {
		if (pc->globs.v[i][0] == '!')
			continue;
		_cleanup_free_ char *pat = expand_pattern(pc->globs.v[i], home);
		if (!pat)
			continue;
		if (fnmatch(pat, resolved, 0) == 0)
			return true;
		if (has_glob(resolved) && glob_word_may_reach(resolved, pat))
			return true;
	}
	return false;
}

/* Could an effect on an unknown path in condition pc leave the sandbox?
 * Only through a class this run lets the command change: the workspace (it
 * is committed), a network socket or any path (`unknown`) when the network
 * is granted; anything when a daemon behind a host socket acts for it. */
static bool unknown_path_escapes(const pathcond *pc, const policy_ctx *ctx)
{
	unsigned reach = PC_INSIDE | PC_WORKSPACE;
	if (ctx->host_sockets)
		return true;
	if (ctx->network)
		reach |= PC_NETWORK | PC_UNKNOWN;
	return (pc->classes & reach) != 0;
}

/* The same for a rule's content conditions (flags, operands, words). */
static bool unknown_word_escapes(rule_effect e, const policy_ctx *ctx)
{
	switch (e) {
	case EFFECT_WORKSPACE:
		return true;
	case EFFECT_REMOTE:
		return ctx->network || ctx->host_sockets;
	case EFFECT_HOST:
	case EFFECT_COUNT:
		break;
	}
	return ctx->host_sockets;
}

enum pstate { P_NONE = 0, P_UNKNOWN = 1, P_DEFINITE = 2 };

/* "$DIR/json.hpp~" names a file called json.hpp~: it is neither the
 * workspace root (unless that is its name) nor one of its ancestors. */
static bool tail_is_literal(const char *word)
{
	const char *sl = strrchr(word, '/');
	if (!sl || !sl[1] || !strcmp(sl + 1, ".") || !strcmp(sl + 1, ".."))
		return false;
	return strpbrk(sl + 1, "$`\"'(){}[]*?\\") == NULL;
}

typedef struct pcheck {
	const pathcond *pc;
	bool allow;
	const policy_ctx *ctx;
	bool unknown_ok; /* an unknown path may satisfy the condition */
	bool contents;   /* words stand for what is found below them (find start paths) */
	int state;     /* existential (hold/deny): best enum pstate seen */
	bool all_ok;   /* universal (allow): every candidate matched */
	size_t seen;
	char *detail;
	const char *unk_word; /* the unknown word that satisfied it */
	bool oom;
} pcheck;

/* An unknown word with a literal last name cannot reach the classes of
 * the condition that escape: only the root or its ancestors would. */
static bool tail_rules_out(const pcheck *pk, const char *word)
{
	if (!tail_is_literal(word) || pk->ctx->host_sockets)
		return false;
	const char *ws_name = strrchr(pk->ctx->workspace, '/');
	if (ws_name && strcmp(ws_name + 1, strrchr(word, '/') + 1) == 0)
		return false;
	unsigned reach = PC_INSIDE | (pk->ctx->network ? PC_NETWORK | PC_UNKNOWN : 0);
	return (pk->pc->classes & reach) == 0;
}

static void pcheck_word(pcheck *pk, const char *word, bool unknown)
{
	_cleanup_free_ char *resolved = NULL;
	unsigned c = path_classify_word(word, unknown, pk->ctx, &resolved);
	bool hit = false;
	if (pk->contents && c == PC_WORKSPACE)
		c = PC_INSIDE;
	pk->seen++;
	if (c & PC_UNKNOWN) {
		if (pk->allow) {
			pk->all_ok = false;
			return;
		}
		if (pk->unknown_ok && pk->state < P_UNKNOWN && !tail_rules_out(pk, word)) {
			pk->state = P_UNKNOWN;
			pk->unk_word = word;
			free(pk->detail);
			if (asprintf(&pk->detail, "%s: cannot be resolved statically", word) < 0) {
				pk->detail = NULL;
				pk->oom = true;
			}
		}
		return;
	}
	hit = (c & pk->pc->classes) != 0 ||
	      (resolved && pk->pc->globs.n && path_glob_match(pk->pc, resolved, pk->ctx->home));
	if (hit && resolved && path_glob_excluded(pk->pc, resolved, pk->ctx->home))
		hit = false;
	if (pk->allow) {
		if (!hit)
			pk->all_ok = false;
		return;
	}
	if (hit && pk->state < P_DEFINITE) {
		pk->state = P_DEFINITE;
		free(pk->detail);
		pk->detail = strdup(resolved ? resolved : word);
		if (!pk->detail)
			pk->oom = true;
	}
}

/* Result of a finished check: P_NONE (fails), P_UNKNOWN or P_DEFINITE. */
static int pcheck_done(pcheck *pk)
{
	if (pk->allow)
		return pk->all_ok && pk->seen > 0 ? P_DEFINITE : P_NONE;
	return pk->state;
}

static void pcheck_init(pcheck *pk, const pathcond *pc, bool allow, bool unknown_ok,
			const policy_ctx *ctx)
{
	memset(pk, 0, sizeof(*pk));
	pk->pc = pc;
	pk->allow = allow;
	pk->unknown_ok = (unknown_ok || (pc->classes & PC_UNKNOWN)) && unknown_path_escapes(pc, ctx);
	pk->ctx = ctx;
	pk->all_ok = true;
}

typedef struct mstate {
	bool unknown_used;
	unsigned unk_conds; /* conditions that held only through unknown words */
	const char *unk_word;
	char *detail;
	bool oom;
} mstate;

/* Fold a finished path check into the rule state; false when it failed. */
static bool take_pcheck(mstate *ms, pcheck *pk)
{
	int st = pcheck_done(pk);
	if (pk->oom)
		ms->oom = true;
	if (st == P_NONE) {
		free(pk->detail);
		return false;
	}
	if (st == P_UNKNOWN) {
		ms->unk_conds++;
		if (!ms->unknown_used)
			ms->unk_word = pk->unk_word;
		ms->unknown_used = true;
	}
	if (!ms->detail || st == P_DEFINITE) {
		free(ms->detail);
		ms->detail = pk->detail;
	} else {
		free(pk->detail);
	}
	return true;
}

static const char *word_at(const cmdview *v, size_t k) { return v->words[v->positional[k]]; }

/* `{}` of find -exec, and the `…` the parser appends for what xargs reads:
 * stand-ins for the implicit operands. */
static bool is_implicit_word(const cmdview *v, size_t k)
{
	if (!v->implicit_unknown_operand)
		return false;
	const char *w = word_at(v, k);
	return strstr(w, "{}") || (v->pos_unknown[k] && strcmp(w, "\u2026") == 0);
}

/* Operands a command gets from xargs / find -exec: the start paths of a
 * `find` feeding it (its operands: what it walks), else unknown. */
static void implicit_operands(pcheck *pk, const cmdview *v)
{
	const cmdview *src = v->operand_source;
	if (!src || src->npositional == 0) {
		pcheck_word(pk, "{}", true);
		return;
	}
	pk->contents = true;
	for (size_t k = 0; k < src->npositional; k++)
		pcheck_word(pk, word_at(src, k), src->pos_unknown[k]);
	pk->contents = false;
}

/* Values of an option given as spellings separated by '|' ("-o|--output"). */
static void option_values(pcheck *pk, const cmdview *v, const char *keys)
{
	char key[256];
	while (spelling_next(&keys, key, sizeof(key))) {
		size_t pos = 0;
		bool unk = false;
		const char *val;
		while ((val = cmdview_option_value(v, key, &pos, &unk)))
			pcheck_word(pk, val, unk);
	}
}

/* What a find's tests say of the paths it hands to -exec: in the branch
 * of the expression before the first -exec (after the last -o / ,), a
 * `-name X` not negated is START/X, `-path X` is X itself. So `find .
 * -name .git -prune -exec rm -rf {} +` feeds ./.git; `! -name .git` and
 * `-name .git -prune -o … -exec` feed something else. */
static bool find_test_glob(const cmdview *src, const strlist *globs, int fl)
{
	static const char *const execs[] = {"-exec", "-execdir", "-ok", "-okdir", NULL};
	size_t from = src->start + 1, end = src->nwords;
	for (size_t k = from; k < end; k++)
		for (const char *const *e = execs; *e; e++)
			if (strcmp(src->words[k], *e) == 0)
				end = k;
	for (size_t k = from; k < end; k++)
		if (!strcmp(src->words[k], "-o") || !strcmp(src->words[k], "-or") ||
		    !strcmp(src->words[k], ","))
			from = k + 1;
	for (size_t k = from; k + 1 < end; k++) {
		const char *t = src->words[k], *x = src->words[k + 1];
		bool neg = k > from && (!strcmp(src->words[k - 1], "!") || !strcmp(src->words[k - 1], "-not"));
		if (neg || src->unknown[k + 1])
			continue;
		if (!strcmp(t, "-path") || !strcmp(t, "-wholename")) {
			if (glob_any(globs, x, fl))
				return true;
		} else if (!strcmp(t, "-name")) {
			for (size_t p = 0; p < src->npositional; p++) {
				_cleanup_free_ char *path = NULL;
				if (src->pos_unknown[p] || asprintf(&path, "%s/%s", word_at(src, p), x) < 0)
					continue;
				if (glob_any(globs, path, fl))
					return true;
			}
		}
	}
	return false;
}

/* Does some operand match one of globs: its own, or for operands fed by
 * xargs / find -exec, the start paths of the find that feeds them (and
 * what its -name / -path tests tell of them). */
static bool operand_glob(const cmdview *v, size_t sub, const strlist *globs, int fl)
{
	for (size_t k = sub; k < v->npositional; k++)
		if (!v->pos_unknown[k] && glob_any(globs, word_at(v, k), fl))
			return true;
	const cmdview *src = v->implicit_unknown_operand ? v->operand_source : NULL;
	for (size_t k = 0; src && k < src->npositional; k++)
		if (!src->pos_unknown[k] && glob_any(globs, word_at(src, k), fl))
			return true;
	return src && !src->name_unknown && strcmp(src->name, "find") == 0 &&
	       find_test_glob(src, globs, fl);
}

/* The first character of an unknown word of git's, as far as the line
 * shows it. git parses an option only from a word that starts with '-', and
 * a refspec forces with a leading '+' or deletes with ':'; a word like
 * "feature-$N" starts with 'f' whatever $N is. The operands of git push
 * are its repository and refspecs: "$NAME" / "${NAME}" there, of a
 * variable the line never sets, is the branch the caller's environment
 * names (CI's $GITHUB_REF_NAME, an agent's $BRANCH): the line did not
 * choose it, so it is taken for no option and no forced or deleting
 * refspec (LEAD_PLAIN). Anything else (other expansions, quoting, globs,
 * "$(git branch --show-current)": a branch may be called "+main") may
 * start with any character: returns 0. */
static bool is_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Does the line's text hold one of words as a word of its own? */
static bool text_has_word(const char *text, const char *const *words)
{
	const char *p = text;
	while (*p) {
		while (*p && strchr(" \t\n;|&(){}`$\"'", *p))
			p++;
		const char *b = p;
		while (*p && !strchr(" \t\n;|&(){}`$\"'", *p))
			p++;
		for (size_t i = 0; words[i]; i++)
			if (strlen(words[i]) == (size_t)(p - b) && !strncmp(b, words[i], (size_t)(p - b)))
				return true;
	}
	return false;
}

/* Is every mention of variable NAME (n bytes) in the text an expansion
 * ($NAME, ${NAME...}), and no command there one that sets variables
 * without NAME= (read NAME, for NAME in, eval, source ...)? */
static bool name_only_expanded(const char *text, const char *name, size_t n)
{
	static const char *const setters[] = {"eval", "source", ".", "declare", "typeset", "export",
					      "local", "readonly", "read", "mapfile", "readarray",
					      "printf", "let", "getopts", "for", "select", NULL};
	if (!text || text_has_word(text, setters))
		return false;
	size_t len = strlen(text);
	for (const char *q = memmem(text, len, name, n); q;
	     q = memmem(q + 1, len - (size_t)(q + 1 - text), name, n)) {
		if ((q > text && is_name_char(q[-1])) || is_name_char(q[n]))
			continue;
		bool dollar = (q > text && q[-1] == '$') || (q > text + 1 && q[-1] == '{' && q[-2] == '$');
		/* ${NAME=…} and ${NAME:=…} assign */
		if (!dollar || q[n] == '=' || (q[-1] == '{' && q[n] == ':' && q[n + 1] == '='))
			return false;
	}
	return true;
}

/* Is word "$NAME" or "${NAME}" of a variable the line only reads? */
static bool is_environment_word(const char *text, const char *w)
{
	bool brace = w[0] == '$' && w[1] == '{';
	const char *name = w + (brace ? 2 : 1);
	size_t n = 0;
	if (w[0] != '$' || !((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
			     name[0] == '_'))
		return false;
	while (is_name_char(name[n]))
		n++;
	if (strcmp(name + n, brace ? "}" : "") != 0)
		return false;
	if ((n == 3 && !strncmp(name, "PWD", 3)) || (n == 6 && !strncmp(name, "OLDPWD", 6)))
		return false; /* cd sets these */
	return name_only_expanded(text, name, n);
}

/* The value of a word made of the current directory and literal text
 * ("$PWD":/src, "$PWD:$PWD", "$(pwd)"/x), when the line moves to no other
 * directory and sets no PWD: the parser leaves it unknown unless a path
 * follows. NULL otherwise (malloc'd). */
static char *pwd_word_value(const match_ctx *mc, const char *w)
{
	static const char *const forms[] = {"${PWD}", "$PWD", "$(pwd)", NULL};
	static const char *const movers[] = {"cd", "pushd", "popd", NULL};
	const policy_ctx *c = mc->ctx;
	if (!c->cwd || c->cwd_alt || c->cwd_climbed || !mc->text || (!strstr(w, "PWD") && !strstr(w, "$(pwd)")))
		return NULL;
	if (text_has_word(mc->text, movers) || !name_only_expanded(mc->text, "PWD", 3))
		return NULL;
	_cleanup_free_ char *val = calloc(1, strlen(w) / 4 * strlen(c->cwd) + strlen(w) + 1);
	char *o = val;
	while (val && *w) {
		size_t i = 0, n = 0;
		for (; forms[i]; i++) {
			n = strlen(forms[i]);
			if (strncmp(w, forms[i], n) == 0 && !is_name_char(w[n]))
				break;
		}
		if (forms[i]) {
			o = stpcpy(o, c->cwd);
			w += n;
		} else if (strchr("$`\"'\\*?[{~", *w)) {
			return NULL; /* another expansion */
		} else {
			*o++ = *w++;
		}
	}
	return steal_ptr(val);
}

#define LEAD_PLAIN '\1' /* some character other than '-', '+' and ':' */

static char unknown_word_lead(const cmdview *v, const char *text, const char *w)
{
	if (v->name_unknown || strcmp(v->name, "git") != 0)
		return 0;
	if (*w && !strchr("$`\"'\\*?[{~", *w))
		return *w;
	bool push = v->npositional > 0 && strcmp(word_at(v, 0), "push") == 0;
	return push && is_environment_word(text, w) ? LEAD_PLAIN : 0;
}

/* Could an unknown word be an option (start with '-')? */
static bool unknown_may_be_flag(const cmdview *v, const char *text, const char *w)
{
	char lead = unknown_word_lead(v, text, w);
	return !lead || lead == '-';
}

/* Could its value match glob g, as far as their first characters tell? */
static bool unknown_lead_may_match(const cmdview *v, const char *text, const char *w, const char *g,
				   int fl)
{
	char lead = unknown_word_lead(v, text, w);
	if (!lead || !*g || strchr("*?[\\", *g))
		return true;
	if (lead == LEAD_PLAIN)
		return !strchr("-+:", *g);
	return fl & FNM_CASEFOLD ? strncasecmp(&lead, g, 1) == 0 : lead == *g;
}

/* Could some value of an unknown word match one of globs? A word like
 * "$DIR/json.hpp~" ends in "/json.hpp~" whatever $DIR is, so a glob can
 * match it only if the literal end of the glob (after its last wildcard)
 * and "/json.hpp~" are suffixes of one string: one ends with the other.
 * Over-approximates (escapes and classes count as wildcards). */
static bool ends_with(const char *s, const char *suf, int fl)
{
	size_t n = strlen(s), m = strlen(suf);
	if (m > n)
		return false;
	return (fl & FNM_CASEFOLD ? strcasecmp(s + n - m, suf) : strcmp(s + n - m, suf)) == 0;
}

static bool unknown_may_match(const match_ctx *mc, const cmdview *v, const strlist *globs,
			      const char *word, int fl)
{
	_cleanup_free_ char *pwd = pwd_word_value(mc, word);
	if (pwd)
		return glob_any(globs, pwd, fl);
	bool literal_tail = tail_is_literal(word);
	const char *tail = strrchr(word, '/');
	for (size_t i = 0; i < globs->n; i++) {
		if (!unknown_lead_may_match(v, mc->text, word, globs->v[i], fl))
			continue;
		if (!literal_tail)
			return true;
		const char *g = globs->v[i], *lit = g;
		for (const char *c = g; *c; c++)
			if (strchr("*?[]\\", *c))
				lit = c + 1;
		if (lit == g ? ends_with(g, tail, fl) : ends_with(lit, tail, fl) || ends_with(tail, lit, fl))
			return true;
	}
	return false;
}

/* Where the words that can be an interpreter's code or options end: after
 * `python3 scripts/convert.py` (a script named by a word the line spells
 * out; or `-c CODE`) every further word is the script's argv, whatever it
 * holds, also what xargs puts there; a rule about one-liner code or
 * interpreter flags cannot be met by them. nwords for other commands. */
static size_t code_words_end(const cmdview *v)
{
	static const char *const interps[] = {"python*", "pypy*", "perl", "ruby", "node", "nodejs",
					      "php*", "lua*", NULL};
	if (v->name_unknown || v->npositional == 0 || v->pos_unknown[0] || v->unknown[v->positional[0]])
		return v->nwords;
	/* (without a `commands:` hint any option before it may have taken it as
	 * its value: `perl -I lib -e CODE`) */
	if (!v->hint && v->positional[0] != v->start + 1)
		return v->nwords;
	for (size_t i = 0; interps[i]; i++)
		if (fnmatch(interps[i], v->name, 0) == 0)
			return v->positional[0] + 1;
	return v->nwords;
}

/* An operand (from sub on) or, with all_words, any word that cannot be
 * resolved and could match one of globs; what xargs reads could be any. */
static bool unknown_could_match(const match_ctx *mc, const cmdview *v, size_t sub, bool all_words,
				const strlist *globs, int fl)
{
	size_t end = all_words ? code_words_end(v) : v->nwords;
	if (v->implicit_unknown_operand && (!v->operand_source || v->operand_source->npositional == 0) &&
	    end == v->nwords)
		return true;
	if (all_words) {
		for (size_t k = v->start + 1; k < end; k++)
			if (v->unknown[k] && strcmp(v->words[k], "\u2026") != 0 &&
			    unknown_may_match(mc, v, globs, v->words[k], fl))
				return true;
		return false;
	}
	for (size_t k = sub; k < v->npositional; k++)
		if (v->pos_unknown[k] && !is_implicit_word(v, k) &&
		    unknown_may_match(mc, v, globs, word_at(v, k), fl))
			return true;
	return false;
}

/* Commands whose first operand names a subcommand, never a file. */
static bool first_operand_is_subcommand(const cmdview *v)
{
	return !v->name_unknown && strcmp(v->name, "git") == 0;
}

/* The operands a `paths` condition judges. A subcommand word is no file
 * (`git -C ~/.ssh init` does not touch ~/.ssh/init); for such a command
 * the directory an option moved it to (git -C DIR) is where it works, so
 * that directory is judged instead. */
static void path_operands(pcheck *pk, const cmdview *v, size_t sub, const policy_ctx *ctx)
{
	size_t from = sub;
	if (sub == 0 && v->npositional > 0 && !v->pos_unknown[0] && first_operand_is_subcommand(v)) {
		from = 1;
		if (v->cmd->cwd && !v->cmd->cwd_unresolved && ctx->cwd)
			pcheck_word(pk, ctx->cwd, false);
	}
	for (size_t k = from; k < v->npositional; k++)
		if (!is_implicit_word(v, k))
			pcheck_word(pk, word_at(v, k), v->pos_unknown[k]);
}

/* Words of the command (and redirection targets) that cannot be resolved. */
static unsigned unknown_words(const cmdview *v)
{
	unsigned n = 0;
	for (size_t k = v->start + 1; k < v->nwords; k++)
		n += v->unknown[k];
	for (size_t i = 0; i < v->cmd->nredirs; i++)
		n += v->cmd->redirs[i].unresolved;
	return n;
}

/* A redirection reaches the network only through bash's /dev/tcp and
 * /dev/udp, spelt out as such in its target. Is every redirection target
 * of the line, wherever a '<' or '>' stands (in quotes too: `sh -c '… >
 * "$F"'`, "$(cmd > $F)"), unable to start so: a literal start that is no
 * beginning of "/dev/tcp/" (out-$N.txt, /tmp/$X, ~/x), or a variable of the
 * caller's environment the line never sets ("$GITHUB_OUTPUT")? */
static bool redirect_target_local(const char *text, const char *w)
{
	char word[256];
	size_t n = strcspn(w, " \t\n;|&()<>");
	if (n >= sizeof(word))
		return false;
	memcpy(word, w, n);
	word[n] = '\0';
	const char *t = word + (word[0] == '"');
	if (t[0] == '$') { /* $NAME…, ${NAME}…: the rest is literal */
		size_t k = t[1] == '{' ? 2 : 1, b = k;
		while (is_name_char(t[k]))
			k++;
		bool name = isalpha((unsigned char)t[b]) || t[b] == '_';
		if (!name || (b == 2 && t[k++] != '}') || strpbrk(t + k, "$`\\"))
			return false;
		return name_only_expanded(text, t + b, k - b - (b == 2));
	}
	size_t lit = strcspn(t, "$`\"'\\*?[{");
	if (lit == 0)
		return false;
	return strncmp(t, "/dev/tcp/", lit < 9 ? lit : 9) != 0 && strncmp(t, "/dev/udp/", lit < 9 ? lit : 9) != 0;
}

static bool line_redirects_local(const char *text)
{
	for (const char *p = text ? strpbrk(text, "<>") : NULL; p; p = strpbrk(p, "<>")) {
		const char *q = p + 1;
		if (*p == '<' && (*q == '<' || *q == '(')) { /* here-document / string, <(…) */
			p = q + strspn(q, "<(");
			continue;
		}
		if (*p == '>' && (*q == '>' || *q == '|'))
			q++;
		if (*q == '&' || (*p == '>' && *q == '(')) { /* a dup (2>&1, <&0) or >(…) */
			p = q + 1;
			continue;
		}
		q += strspn(q, " \t");
		if (!redirect_target_local(text, q))
			return false;
		p = q;
	}
	return true;
}

/* Is a pathspec word a directory, as far as its text tells? A name with
 * an extension (f1.py), a well-known extensionless file or a dot file is
 * a file; anything else (src, src/, lib/core, a word that cannot be
 * resolved) may be a directory: a restore of it discards every uncommitted
 * edit under it. Lexical, like the rest of matching. */
static bool dir_like(const char *w, bool unknown)
{
	static const char *const files[] = {"Makefile", "GNUmakefile", "makefile", "Dockerfile",
					    "Containerfile", "Gemfile", "Rakefile", "Procfile",
					    "Jenkinsfile", "Vagrantfile", "Pipfile", "Justfile",
					    "justfile", "Brewfile", "LICENSE", "LICENCE", "COPYING",
					    "README", "AUTHORS", "CHANGELOG", "CHANGES", "NEWS",
					    "NOTICE", "VERSION", "CODEOWNERS", "configure", NULL};
	static const char *const dot_dirs[] = {".github", ".gitlab", ".vscode", ".idea", ".circleci",
					       ".husky", ".devcontainer", ".config", ".cargo", NULL};
	if (unknown || !*w || w[strlen(w) - 1] == '/')
		return true;
	const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
	for (const char *const *d = dot_dirs; *d; d++)
		if (strcmp(base, *d) == 0)
			return true;
	if (strchr(base, '.'))
		return strcmp(base, ".") == 0 || strcmp(base, "..") == 0;
	for (const char *const *f = files; *f; f++)
		if (strcmp(base, *f) == 0)
			return false;
	return true;
}

/* builtin dir-pathspec: the operands after `--`, or without one every
 * operand after the subcommand (git restore/rm take no tree-ish operand). */
static bool has_dir_pathspec(const cmdview *v)
{
	for (size_t k = v->dashdash ? 0 : 1; k < v->npositional; k++) {
		if (v->dashdash && v->positional[k] <= v->dashdash_at)
			continue;
		if (dir_like(word_at(v, k), v->pos_unknown[k]))
			return true;
	}
	return false;
}

int rule_match_cmd(const rule *r, const match_ctx *mc, match_result *res)
{
	const cmdview *v = &mc->views[mc->self];
	const rule_match *m = &r->m;
	const shell_cmd *cmd = v->cmd;
	bool allow = r->decision == POLICY_ALLOW;
	int fl = m->icase ? FNM_CASEFOLD : 0;
	mstate ms = {0};

	memset(res, 0, sizeof(*res));
	if (m->builtins & BUILTIN_FORK_BOMB)
		return 0; /* line-level, see decide.c */
	if ((m->builtins & BUILTIN_NON_ASCII_COMMAND) && (!v->name_non_ascii || v->name_unknown))
		return 0;
	if ((m->builtins & BUILTIN_DIR_PATHSPEC) && !has_dir_pathspec(v))
		return 0;
	if (m->command.n && (v->name_unknown || !glob_any(&m->command, v->name, 0)))
		return 0;
	if (m->command_not.n && !v->name_unknown && glob_any(&m->command_not, v->name, 0))
		return 0;
	/* (a command unresolved only through the environment's values is fed
	 * by no substitution or download in the line) */
	bool unresolved = (cmd->unresolved && !cmd->env_only) || v->name_unknown;
	if (m->unresolved >= 0 && unresolved != (m->unresolved != 0))
		return 0;
	if (m->via.n && !glob_any(&m->via, cmd->via ? cmd->via : "", 0))
		return 0;

	/* A dynamic word could be any subcommand, flag or operand: for hold/deny
	 * rules about specific commands whose effect would escape, it satisfies
	 * those conditions (the decision is then capped like for unknown paths). */
	bool unk_content = !allow && m->command.n && unknown_word_escapes(m->effect, mc->ctx);
	size_t sub = 0;
	if (m->nsubcommands) {
		bool ok = false;
		for (size_t a = 0; a < m->nsubcommands && !ok; a++) {
			const strlist *alt = &m->subcommands[a];
			if (alt->n > v->npositional)
				continue;
			bool all = true, unk = false;
			for (size_t k = 0; k < alt->n && all; k++) {
				if (v->pos_unknown[k] && unk_content)
					unk = true;
				else if (v->pos_unknown[k] || !glob_one(alt->v[k], word_at(v, k), 0))
					all = false;
			}
			if (all) {
				ok = true;
				sub = alt->n;
				for (size_t k = 0; unk && k < alt->n && !ms.unk_word; k++)
					if (v->pos_unknown[k])
						ms.unk_word = word_at(v, k);
				ms.unknown_used = ms.unknown_used || unk;
				ms.unk_conds += unk;
			}
		}
		if (!ok)
			return 0;
	}

	bool unk_words = false, unk_ops = false, unk_flags = false;
	const char *first_unk = NULL;
	if (unk_content) {
		size_t end = code_words_end(v);
		for (size_t k = v->start + 1; k < end; k++)
			if (v->unknown[k] && strcmp(v->words[k], "\u2026") != 0) {
				unk_words = true;
				/* a value is no flag, nor a word that cannot start with '-' */
				unk_flags = unk_flags || (!v->is_value[k] &&
							  unknown_may_be_flag(v, mc->text, v->words[k]));
				first_unk = first_unk ? first_unk : v->words[k];
			}
		for (size_t k = sub; k < v->npositional; k++)
			if (v->pos_unknown[k] && !is_implicit_word(v, k))
				unk_ops = true;
		/* what xargs reads could be any operand or flag */
		const cmdview *src = v->operand_source;
		if (v->implicit_unknown_operand && (!src || src->npositional == 0)) {
			unk_ops = true;
			unk_words = unk_flags = unk_words || end == v->nwords;
			first_unk = first_unk ? first_unk : "\u2026";
		}
	}
#define NEED(cond, unk)                          \
	do {                                     \
		if (!(cond)) {                   \
			if (!(unk))              \
				goto no;         \
			ms.unknown_used = true;  \
			ms.unk_conds++;          \
			if (!ms.unk_word)        \
				ms.unk_word = first_unk; \
		}                                \
	} while (0)

	for (size_t i = 0; i < m->flags.n; i++)
		NEED(cmdview_has_flag(v, m->flags.v[i], true), unk_flags);
	if (m->flags_any.n) {
		bool any = false;
		for (size_t i = 0; i < m->flags_any.n && !any; i++)
			any = cmdview_has_flag(v, m->flags_any.v[i], true);
		NEED(any, unk_flags);
	}
	for (size_t i = 0; i < m->flags_none.n; i++)
		if (cmdview_has_flag(v, m->flags_none.v[i], false))
			goto no;

	size_t nops = v->npositional - sub + (v->implicit_unknown_operand ? 1 : 0);
	if (m->nargs_min >= 0 && nops < (size_t)m->nargs_min)
		goto no;
	if (m->nargs_max >= 0 && nops > (size_t)m->nargs_max)
		goto no;

	if (m->args.n)
		NEED(operand_glob(v, sub, &m->args, fl),
		     unk_ops && unknown_could_match(mc, v, sub, false, &m->args, fl));
	for (size_t i = 0; i < m->args_all.n; i++) {
		char *one[] = {m->args_all.v[i], NULL};
		strlist l = {one, 1, 1};
		NEED(operand_glob(v, sub, &l, fl), unk_ops && unknown_could_match(mc, v, sub, false, &l, fl));
	}
	if (m->words.n) {
		bool any = false;
		for (size_t k = v->start + 1; k < v->nwords && !any; k++)
			any = !v->unknown[k] && glob_any(&m->words, v->words[k], fl);
		NEED(any, unk_words && unknown_could_match(mc, v, sub, true, &m->words, fl));
	}
	unsigned before_all = ms.unk_conds; /* one word can hold every words_all glob */
	for (size_t i = 0; i < m->words_all.n; i++) {
		char *one[] = {m->words_all.v[i], NULL};
		strlist l = {one, 1, 1};
		bool any = false;
		for (size_t k = v->start + 1; k < v->nwords && !any; k++)
			any = !v->unknown[k] && fnmatch(m->words_all.v[i], v->words[k], fl) == 0;
		NEED(any, unk_words && unknown_could_match(mc, v, sub, true, &l, fl));
	}
	if (ms.unk_conds > before_all + 1)
		ms.unk_conds = before_all + 1;
#undef NEED

	size_t ri = (size_t)(r - mc->p->rules);
	if (m->with.n) {
		if (mc->with_count[ri] < 0) {
			long count = 0;
			for (size_t j = 0; j < mc->nviews; j++)
				count += !mc->views[j].name_unknown && glob_any(&m->with, mc->views[j].name, 0);
			mc->with_count[ri] = count;
		}
		long others = mc->with_count[ri] - (!v->name_unknown && glob_any(&m->with, v->name, 0));
		if (others <= 0)
			goto no;
	}

	if (m->text.n) {
		if (mc->text_hit[ri] < 0)
			mc->text_hit[ri] = glob_any(&m->text, mc->text, fl);
		if (!mc->text_hit[ri])
			goto no;
	}

	/* Unknown paths satisfy path conditions of rules about specific
	 * commands (rm "$x" may well be rm /), and conditions that list the
	 * class `unknown`; rules about any command would otherwise fire on
	 * every "$x". */
	bool unk_paths = m->command.n > 0;
	pcheck pk;
	if (m->paths.set) {
		pcheck_init(&pk, &m->paths, allow, unk_paths, mc->ctx);
		path_operands(&pk, v, sub, mc->ctx);
		if (v->implicit_unknown_operand)
			implicit_operands(&pk, v);
		if (!take_pcheck(&ms, &pk))
			goto no;
	}
	if (m->dest.set) {
		pcheck_init(&pk, &m->dest, allow, unk_paths, mc->ctx);
		if (v->implicit_unknown_operand)
			implicit_operands(&pk, v);
		else if (v->npositional > sub && !cmdview_target_option(v))
			pcheck_word(&pk, word_at(v, v->npositional - 1), v->pos_unknown[v->npositional - 1]);
		if (!take_pcheck(&ms, &pk))
			goto no;
	}
	if (m->noptions) { /* any option (of its spellings) with a value in its classes */
		bool any = false;
		for (size_t o = 0; o < m->noptions; o++) {
			pcheck_init(&pk, &m->options[o].cond, allow, unk_paths, mc->ctx);
			option_values(&pk, v, m->options[o].key);
			any = take_pcheck(&ms, &pk) || any;
		}
		if (!any)
			goto no;
	}
	if (m->redirects.set || m->reads.set) {
		for (int pass = 0; pass < 2; pass++) {
			const pathcond *pc = pass == 0 ? &m->redirects : &m->reads;
			if (!pc->set)
				continue;
			/* (no target that could be /dev/tcp: the network is no escape) */
			policy_ctx local = *mc->ctx;
			local.network = local.network && !line_redirects_local(mc->text);
			pcheck_init(&pk, pc, allow, unk_paths, &local);
			for (size_t i = 0; i < cmd->nredirs; i++) {
				const shell_redir *rd = &cmd->redirs[i];
				bool is_read = rd->kind == SHELL_REDIR_READ;
				if (is_read != (pass == 1))
					continue;
				pcheck_word(&pk, rd->target ? rd->target : "the redirection target",
					    rd->unresolved || !rd->target);
			}
			if (!take_pcheck(&ms, &pk))
				goto no;
		}
	}
	if (ms.oom)
		goto oom;
	/* one unknown word stands for one word: `rm -f "$f"` cannot be both
	 * -r and the workspace (what xargs reads, or an unknown directory, can
	 * be anything) */
	if (ms.unk_conds > 1 && !v->implicit_unknown_operand && mc->ctx->cwd &&
	    ms.unk_conds > unknown_words(v))
		goto no;
	res->matched = true;
	res->unknown_only = ms.unknown_used;
	res->unknown_word = ms.unk_word;
	res->detail = ms.detail;
	return 0;
no:
	free(ms.detail);
	if (ms.oom)
		return -ENOMEM;
	return 0;
oom:
	free(ms.detail);
	return -ENOMEM;
}
