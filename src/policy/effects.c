/* effects: deciding on a transaction's actual changes (effects.h). */
#include "policy/effects.h"

#include "policy/internal.h"
#include "util/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- globs on workspace paths ------------------------------------------- */

/* Split s (modified in place) at '/' into v; returns the count. */
static size_t split_segments(char *s, char **v, size_t max)
{
	size_t n = 0;
	for (char *p = s; n < max;) {
		v[n++] = p;
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	return n;
}

static bool match_segments(char **pat, size_t np, char **seg, size_t ns)
{
	while (np) {
		if (!strcmp(pat[0], "**")) {
			for (size_t skip = 0; skip <= ns; skip++)
				if (match_segments(pat + 1, np - 1, seg + skip, ns - skip))
					return true;
			return false;
		}
		if (!ns || fnmatch(pat[0], seg[0], 0) != 0)
			return false;
		pat++, np--, seg++, ns--;
	}
	return ns == 0;
}

static size_t count_segments(const char *s)
{
	size_t n = 1;
	for (; *s; s++)
		n += *s == '/';
	return n;
}

/* A quick rejection: every literal run of the glob (between wildcards,
 * less the '/' at its ends) must occur in the path. */
static bool literals_present(const char *glob, const char *path)
{
	char run[256];
	size_t n = 0;
	for (const char *g = glob;; g++) {
		if (*g == '\\' || *g == '[')
			return true; /* escapes and classes: not worth following */
		if (*g && *g != '*' && *g != '?' && n + 1 < sizeof run) {
			run[n++] = *g;
			continue;
		}
		while (n && run[n - 1] == '/') /* `**` next to it may take the separator with it */
			n--;
		run[n] = '\0';
		const char *r = run + strspn(run, "/");
		if (*r && !strstr(path, r))
			return false;
		n = 0;
		if (!*g)
			return true;
		if (*g != '*' && *g != '?') /* the run was full: this starts the next */
			run[n++] = *g;
	}
}

bool effect_glob_match(const char *glob, const char *path)
{
	if (!literals_present(glob, path))
		return false;
	if (!strchr(glob, '/')) { /* a name at any depth */
		const char *base = strrchr(path, '/');
		return fnmatch(glob, base ? base + 1 : path, 0) == 0;
	}
	size_t gl = strlen(glob) + 1, pl = strlen(path) + 1;
	size_t np = count_segments(glob), ns = count_segments(path);
	/* one allocation: both strings (split in place) and their segment vectors */
	_Alignas(char *) char stack[1024];
	size_t need = gl + pl + (np + ns) * sizeof(char *) + sizeof(char *);
	_cleanup_free_ char *heap = need > sizeof stack ? malloc(need) : NULL;
	char *buf = need > sizeof stack ? heap : stack;
	if (!buf)
		return true; /* out of memory: the rule is taken as matching (stricter) */
	char **v = (char **)(void *)(buf + ((gl + pl + sizeof(char *) - 1) & ~(sizeof(char *) - 1)));
	if ((char *)(v + np + ns) > buf + need)
		return true;
	memcpy(buf, glob, gl);
	memcpy(buf + gl, path, pl);
	split_segments(buf, v, np);
	split_segments(buf + gl, v + np, ns);
	return match_segments(v, np, v + np, ns);
}

/* Selected by the rule's paths: some glob matches and no "!glob" does. */
static bool paths_select(const strlist *globs, const char *path)
{
	bool in = false;
	for (size_t i = 0; i < globs->n; i++) {
		const char *g = globs->v[i];
		if (g[0] == '!') {
			if (effect_glob_match(g + 1, path))
				return false;
		} else if (!in)
			in = effect_glob_match(g, path);
	}
	return in;
}

/* ---- evaluation ------------------------------------------------------- */

unsigned policy_effects_needs(const policy *p)
{
	unsigned need = 0;
	for (size_t i = 0; i < p->neffects; i++) {
		const effect_rule *e = &p->effects[i];
		if (e->paths.n || e->kinds || e->deleted_min || e->deleted_share > 0 || e->policy_file)
			need |= EFFECT_NEED_CHANGES;
		if (e->deleted_share > 0)
			need |= EFFECT_NEED_TRACKED;
		if (e->git)
			need |= EFFECT_NEED_GIT | EFFECT_NEED_CHANGES;
		if (e->git_config.n)
			need |= EFFECT_NEED_CONFIG | EFFECT_NEED_CHANGES;
		if (e->found)
			need |= EFFECT_NEED_FOUND | EFFECT_NEED_CHANGES;
	}
	return need;
}

static bool change_selected(const effect_rule *e, const effect_facts *f, const effect_change *c)
{
	if (c->dir && !c->destroyed) /* a directory is no effect by itself; what is in it is listed */
		return false;
	if (e->kinds && !(e->kinds & (1u << c->kind)))
		return false;
	const char *alias = f->aliases ? f->aliases[c - f->changes] : NULL;
	if (e->paths.n && !paths_select(&e->paths, alias ? alias : c->path))
		return false;
	if (e->policy_file && (!f->policy_rel || strcmp(f->policy_rel, c->path) != 0))
		return false;
	return true;
}

static const char *const git_effect_names[] = {
	"refs deleted or moved", "reflog deleted or rewritten", "pack files deleted", "loose objects deleted",
	".git/shallow changed", "git objects or pack files rewritten (objects never change)",
	"stash entries lost", "a git remote redirected", "uncommitted changes discarded in",
	"a tracked path hidden by .git/info/exclude"};
static const char *const found_names[] = {"dependency code changed without an install", "npm lifecycle script",
					  "test run starts a program"};

/* *detail: "WHAT: WHERE" for the first bit of hit (names[bit], where[bit]). */
static int bit_detail(unsigned hit, const char *const *names, const char *const *where, size_t nbits, char **detail)
{
	size_t bit = (size_t)__builtin_ctz(hit);
	const char *at = bit < nbits ? where[bit] : NULL;
	free(*detail);
	if (at ? asprintf(detail, "%s: %s", names[bit], at) < 0 : !(*detail = strdup(names[bit]))) {
		*detail = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Selected by git_config globs: some glob matches and no "!glob" does
 * (the same as paths; "*" with exclusions is an allow-list of keys). A
 * glob with '=' is about values (KEY=VALUE, a value the key gained), one
 * without about keys: each kind of glob sees only its own kind of entry,
 * so "*" less data keys never reads a value as a key. */
static bool config_key_selected(const strlist *globs, const char *entry, bool value)
{
	bool in = false;
	for (size_t i = 0; i < globs->n; i++) {
		const char *g = globs->v[i], *pat = g + (g[0] == '!');
		if ((strchr(pat, '=') != NULL) != value)
			continue;
		if (g[0] == '!') {
			if (fnmatch(pat, entry, FNM_CASEFOLD) == 0)
				return false;
		} else if (!in)
			in = fnmatch(pat, entry, FNM_CASEFOLD) == 0;
	}
	return in;
}

static bool has_key_glob(const strlist *globs)
{
	for (size_t i = 0; i < globs->n; i++)
		if (!strchr(globs->v[i], '='))
			return true;
	return false;
}

/* How much of a deletion a change is for deleted_min/deleted_share: 1 for
 * a file gone or its content gone (emptied, replaced by another type), the
 * share of its bytes removed for a file cut down. */
static double deleted_weight(const effect_facts *f, const effect_change *c)
{
	if (c->kind == TXBOX_CHANGE_DELETED || c->destroyed)
		return 1;
	return f->lost ? f->lost[c - f->changes] : 0;
}

static int count_detail(char **detail, size_t count, size_t cut, double weight, uint64_t tracked,
			const char *first)
{
	char of[64] = "";
	if (tracked)
		snprintf(of, sizeof of, " of %llu tracked by git", (unsigned long long)tracked);
	int r = cut ? asprintf(detail, "%zu files deleted or emptied (%zu emptied, cut down or replaced; %.1f files' "
				       "worth of content)%s; first %s",
			       count, cut, weight, of, first)
		    : asprintf(detail, "%zu files deleted%s; first %s", count, of, first);
	if (r < 0)
		*detail = NULL;
	return r < 0 ? -ENOMEM : 0;
}

/* Does rule e match? *detail (malloc'd) says what matched. */
static int rule_matches(const effect_rule *e, const effect_facts *f, char **detail)
{
	*detail = NULL;
	bool counting = e->deleted_min || e->deleted_share > 0;
	bool selecting = e->paths.n || e->kinds || e->policy_file;
	if (counting || selecting) {
		size_t count = 0, cut = 0;
		double weight = 0;
		const char *first = NULL;
		for (size_t i = 0; i < f->nchanges; i++) {
			const effect_change *c = &f->changes[i];
			double w = counting ? deleted_weight(f, c) : 1;
			if (w <= 0 || !change_selected(e, f, c))
				continue;
			count++;
			weight += w;
			cut += c->kind != TXBOX_CHANGE_DELETED;
			if (!first)
				first = c->path;
			if (!counting)
				break;
		}
		if (!count)
			return 0;
		if (e->deleted_min && weight < (double)e->deleted_min)
			return 0;
		if (e->deleted_share > 0 && (!f->tracked || weight < e->deleted_share * (double)f->tracked))
			return 0;
		if (!counting ? !(*detail = strdup(first)) : count_detail(detail, count, cut, weight, f->tracked, first) < 0)
			return -ENOMEM;
	}
	if (e->git) {
		unsigned hit = e->git & f->git;
		if (!hit)
			goto no;
		if (bit_detail(hit, git_effect_names, f->git_path, EFFECT_GIT_KINDS, detail) < 0)
			return -ENOMEM;
	}
	if (e->found) {
		unsigned hit = e->found & f->found;
		if (!hit)
			goto no;
		if (bit_detail(hit, found_names, f->found_path, EFFECT_FOUND_KINDS, detail) < 0)
			return -ENOMEM;
	}
	if (e->git_config.n) {
		/* a config that cannot be read has no values to show: it is for
		 * the rules on keys */
		const char *key = f->config_unreadable && has_key_glob(&e->git_config) ? "a git config that cannot be read"
											: NULL;
		for (size_t i = 0; !key && i < f->nconfig_keys; i++)
			if (config_key_selected(&e->git_config, f->config_keys[i], false))
				key = f->config_keys[i];
		for (size_t i = 0; !key && i < f->nconfig_values; i++)
			if (config_key_selected(&e->git_config, f->config_values[i], true))
				key = f->config_values[i];
		if (!key)
			goto no;
		free(*detail);
		if (asprintf(detail, "git config %.300s%s", key, strlen(key) > 300 ? "..." : "") < 0) { /* values are long */
			*detail = NULL;
			return -ENOMEM;
		}
	}
	return 1;
no:
	free(*detail);
	*detail = NULL;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4) that is not a C1
 * control, or 0. */
static size_t utf8_printable(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 ? (s[0] <= 0xf4 ? 4 : 0) : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	/* a continuation byte stops the check at the terminating NUL */
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) /* U+0080..U+009F: C1 controls (CSI, OSC, ...) */
		return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, surrogates */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

/* The detail names what the command made (paths, config keys): its
 * control characters are written \xNN, so a reason shown on a terminal
 * cannot carry escape sequences. */
static char *printable(const char *in)
{
	const unsigned char *s = (const unsigned char *)in;
	char *out = malloc(4 * strlen(in) + 1), *o = out;
	if (!out)
		return NULL;
	while (*s) {
		size_t n = *s >= 0x20 && *s < 0x7f ? 1 : *s >= 0x80 ? utf8_printable(s) : 0;
		if (n) {
			memcpy(o, s, n);
			o += n, s += n;
		} else
			o += sprintf(o, "\\x%02x", *s++);
	}
	*o = '\0';
	return out;
}

static int verdict_set(effect_verdict *out, policy_decision d, const char *id, const char *reason,
		       const char *detail, const char *suggestion)
{
	effect_verdict_free(out);
	out->decision = d;
	out->rule = strdup(id);
	_cleanup_free_ char *shown = detail ? printable(detail) : NULL;
	if (detail ? !shown || asprintf(&out->reason, "%s (%s)", reason, shown) < 0 : !(out->reason = strdup(reason)))
		out->reason = NULL;
	out->suggestion = suggestion ? strdup(suggestion) : NULL;
	if (!out->rule || !out->reason || (suggestion && !out->suggestion))
		return -ENOMEM;
	return 0;
}

int policy_effects_check(const policy *p, const effect_facts *f, effect_verdict *out)
{
	memset(out, 0, sizeof *out);
	out->decision = POLICY_ALLOW;
	if (f->incomplete && (policy_effects_needs(p) & EFFECT_NEED_CHANGES))
		return verdict_set(out, POLICY_HOLD, "effects-limit",
				   "the transaction changed more entries than the effect check reads", NULL,
				   "review the changes with `txbox diff`, then `txbox commit` or `txbox rollback`");
	bool have = false;
	for (size_t i = 0; i < p->neffects; i++) {
		const effect_rule *e = &p->effects[i];
		if (have && e->decision <= out->decision)
			continue;
		_cleanup_free_ char *detail = NULL;
		int m = rule_matches(e, f, &detail);
		if (m < 0)
			return m;
		if (!m)
			continue;
		if (verdict_set(out, e->decision, e->id, e->reason, detail, e->suggestion) < 0)
			return -ENOMEM;
		have = true;
	}
	return 0;
}

void effect_verdict_free(effect_verdict *v)
{
	free(v->rule);
	free(v->reason);
	free(v->suggestion);
	v->rule = v->reason = v->suggestion = NULL;
}

/* ---- git config ------------------------------------------------------------
 * Follows git's config.c: `[section]`, `[section "sub"]` (sub case-sensitive,
 * `\` escapes the next character), legacy `[section.sub]` (lowercased), a
 * key may follow a header on the same line, `name = value` or a bare
 * `name`, values with "quotes", \t \n \b \\ \" escapes, `\` newline
 * continuation, `#`/`;` comments outside quotes, CRLF line ends. What git
 * would refuse is refused (-EINVAL): git then runs nothing from it. */

typedef struct cfg_reader {
	const char *p, *end;
	gitconfig_entry *v;
	size_t n, cap;
	char *section; /* section[.sub] of the current header */
} cfg_reader;

static int cfg_next(cfg_reader *c)
{
	if (c->p >= c->end)
		return EOF;
	int ch = (unsigned char)*c->p++;
	if (ch == '\r' && c->p < c->end && *c->p == '\n')
		ch = (unsigned char)*c->p++;
	return ch;
}

static bool cfg_keychar(int ch) { return ch != EOF && (isalnum(ch) || ch == '-'); }

/* A growing byte buffer for names and values. */
typedef struct cbuf {
	char *s;
	size_t n, cap;
} cbuf;

static int cbuf_put(cbuf *b, char ch)
{
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char *s = realloc(b->s, cap);
		if (!s)
			return -ENOMEM;
		b->s = s;
		b->cap = cap;
	}
	b->s[b->n++] = ch;
	b->s[b->n] = '\0';
	return 0;
}

/* After '[': the header up to ']'. */
static int cfg_header(cfg_reader *c)
{
	_cleanup_free_ char *old = c->section;
	c->section = NULL;
	cbuf b = {0};
	int ch, r = 0;
	while ((ch = cfg_next(c)) != ']' && r == 0) {
		if (ch == EOF || ch == '\n')
			r = -EINVAL;
		else if (isspace(ch)) { /* [section "sub"] */
			while ((ch = cfg_next(c)) == ' ' || ch == '\t')
				;
			if (ch != '"' || !b.n || cbuf_put(&b, '.') < 0) {
				r = -EINVAL;
				break;
			}
			while (r == 0 && (ch = cfg_next(c)) != '"') {
				if (ch == '\\')
					ch = cfg_next(c);
				if (ch == EOF || ch == '\n')
					r = -EINVAL;
				else
					r = cbuf_put(&b, (char)ch);
			}
			if (r == 0 && cfg_next(c) != ']')
				r = -EINVAL;
			break;
		} else if (ch == '.' || cfg_keychar(ch))
			r = cbuf_put(&b, (char)tolower(ch));
		else
			r = -EINVAL;
	}
	if (r == 0 && !b.n)
		r = -EINVAL;
	if (r < 0) {
		free(b.s);
		return r;
	}
	c->section = b.s;
	return 0;
}

/* After '=': the value up to the end of the line. */
static int cfg_value(cfg_reader *c, cbuf *b)
{
	bool quote = false;
	size_t spaces = 0;
	int r = 0;
	for (;;) {
		int ch = cfg_next(c);
		if (ch == EOF || ch == '\n')
			return quote ? -EINVAL : 0;
		if (!quote && (ch == ';' || ch == '#')) {
			while ((ch = cfg_next(c)) != EOF && ch != '\n')
				;
			return 0;
		}
		if (!quote && isspace(ch)) {
			if (b->n || spaces) /* leading blanks are dropped, inner ones kept */
				spaces++;
			continue;
		}
		for (; spaces && b->n && r == 0; spaces--)
			r = cbuf_put(b, ' ');
		spaces = 0;
		if (ch == '"') {
			quote = !quote;
			continue;
		}
		if (ch == '\\') {
			ch = cfg_next(c);
			if (ch == '\n')
				continue; /* continuation */
			ch = ch == 't' ? '\t' : ch == 'n' ? '\n' : ch == 'b' ? '\b' : ch == '\\' || ch == '"' ? ch : -1;
			if (ch < 0)
				return -EINVAL;
		}
		if (r == 0)
			r = cbuf_put(b, (char)ch);
		if (r < 0)
			return r;
	}
}

static int cfg_add(cfg_reader *c, char *key, char *value)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		gitconfig_entry *v = realloc(c->v, cap * sizeof *v);
		if (!v) {
			free(key);
			free(value);
			return -ENOMEM;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (gitconfig_entry){key, value};
	return 0;
}

/* A key starting with first: `name`, `name = value`. */
static int cfg_entry(cfg_reader *c, int first)
{
	if (!c->section || !isalpha(first))
		return -EINVAL;
	cbuf name = {0}, val = {0};
	int ch = first, r = 0;
	for (; cfg_keychar(ch) && r == 0; ch = cfg_next(c))
		r = cbuf_put(&name, (char)tolower(ch));
	while (ch == ' ' || ch == '\t')
		ch = cfg_next(c);
	bool bare = ch == '\n' || ch == EOF;
	if (r == 0 && !bare)
		r = ch == '=' ? cfg_value(c, &val) : -EINVAL;
	if (r == 0 && !bare && !val.s)
		r = cbuf_put(&val, '\0') < 0 ? -ENOMEM : 0; /* `name =`: the empty string */
	char *key = NULL;
	if (r == 0 && asprintf(&key, "%s.%s", c->section, name.s) < 0)
		r = -ENOMEM;
	free(name.s);
	if (r < 0) {
		free(val.s);
		return r;
	}
	if (!bare && val.s)
		val.s[val.n] = '\0';
	return cfg_add(c, key, bare ? NULL : val.s);
}

int gitconfig_parse(const char *buf, size_t len, gitconfig_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (len > GITCONFIG_MAX_BYTES)
		return -E2BIG;
	cfg_reader c = {.p = buf, .end = buf + len};
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		c.p += 3;
	int r = 0;
	for (int ch; r == 0 && (ch = cfg_next(&c)) != EOF;) {
		if (ch == '\n' || isspace(ch))
			continue;
		if (ch == '#' || ch == ';')
			while ((ch = cfg_next(&c)) != EOF && ch != '\n')
				;
		else if (ch == '[')
			r = cfg_header(&c);
		else
			r = cfg_entry(&c, ch);
	}
	free(c.section);
	if (r < 0) {
		gitconfig_free(c.v, c.n);
		return r;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

void gitconfig_free(gitconfig_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].key);
		free(e[i].value);
	}
	free(e);
}

static int entry_cmp(const void *x, const void *y)
{
	const gitconfig_entry *a = x, *b = y;
	int k = strcmp(a->key, b->key);
	if (k || a->value == b->value)
		return k;
	if (!a->value || !b->value)
		return a->value ? 1 : -1;
	return strcmp(a->value, b->value);
}

static int add_key(char ***keys, size_t *n, const char *key)
{
	if (*n && !strcmp((*keys)[*n - 1], key))
		return 0;
	char **v = realloc(*keys, (*n + 2) * sizeof *v);
	if (!v)
		return -ENOMEM;
	*keys = v;
	if (!(v[*n] = strdup(key)))
		return -ENOMEM;
	v[++*n] = NULL;
	return 0;
}

int gitconfig_changed_keys(gitconfig_entry *a, size_t na, gitconfig_entry *b, size_t nb, char ***keys,
			   size_t *nkeys)
{
	*keys = NULL;
	*nkeys = 0;
	if (na)
		qsort(a, na, sizeof *a, entry_cmp);
	if (nb)
		qsort(b, nb, sizeof *b, entry_cmp);
	size_t i = 0, j = 0;
	int r = 0;
	while (r == 0 && (i < na || j < nb)) {
		int d = i == na ? 1 : j == nb ? -1 : entry_cmp(&a[i], &b[j]);
		if (d == 0) {
			i++, j++;
			continue;
		}
		r = add_key(keys, nkeys, d < 0 ? a[i++].key : b[j++].key);
	}
	return r; /* the merge visits keys in order: they come out sorted, each once */
}

/* ---- git config: traffic of an existing remote sent elsewhere ------------- */

typedef struct cfg {
	const gitconfig_entry *e; /* sorted by entry_cmp */
	size_t n;
} cfg;

/* The entries of key: [*lo, *hi). */
static void cfg_range(cfg c, const char *key, size_t *lo, size_t *hi)
{
	size_t l = 0, h = c.n;
	while (l < h) {
		size_t m = l + (h - l) / 2;
		if (strcmp(c.e[m].key, key) < 0)
			l = m + 1;
		else
			h = m;
	}
	*lo = l;
	while (l < c.n && !strcmp(c.e[l].key, key))
		l++;
	*hi = l;
}

static const char *cfg_first(cfg c, const char *key)
{
	size_t lo, hi;
	cfg_range(c, key, &lo, &hi);
	return lo == hi ? NULL : c.e[lo].value ? c.e[lo].value : "true";
}

/* The first value of key in b that a has not, else b's first, or NULL
 * (both ranges are sorted: one merge). */
static const char *cfg_added(cfg a, cfg b, const char *key)
{
	size_t al, ah, bl, bh;
	cfg_range(a, key, &al, &ah);
	cfg_range(b, key, &bl, &bh);
	for (size_t j = bl; j < bh; j++) {
		while (al < ah && entry_cmp(&a.e[al], &b.e[j]) < 0)
			al++;
		if (al == ah || entry_cmp(&a.e[al], &b.e[j]) > 0)
			return b.e[j].value ? b.e[j].value : "true";
	}
	return cfg_first(b, key);
}

/* Do a's key1 and b's key2 hold the same values? */
static bool cfg_same(cfg a, const char *k1, cfg b, const char *k2)
{
	size_t al, ah, bl, bh;
	cfg_range(a, k1, &al, &ah);
	cfg_range(b, k2, &bl, &bh);
	if (ah - al != bh - bl)
		return false;
	for (; al < ah; al++, bl++)
		if (entry_cmp(&(gitconfig_entry){a.e[al].key, a.e[al].value}, &(gitconfig_entry){a.e[al].key, b.e[bl].value}))
			return false;
	return true;
}

/* key = section[.subsection].name: the section and the name. */
static bool key_is(const char *key, const char *section, const char *name)
{
	size_t sl = strlen(section);
	const char *dot = strrchr(key, '.');
	return !strncmp(key, section, sl) && key[sl] == '.' && dot && !strcmp(dot + 1, name);
}

/* remote.NAME.<name>, malloc'd; NULL: out of memory. */
static char *remote_key(const char *remote, size_t len, const char *name)
{
	char *k;
	return asprintf(&k, "remote.%.*s.%s", (int)len, remote, name) < 0 ? NULL : k;
}

/* The name of the remote of a remote.NAME.* key, or NULL. */
static const char *remote_name(const char *key, size_t *len)
{
	if (strncmp(key, "remote.", 7))
		return NULL;
	const char *dot = strrchr(key + 7, '.');
	if (!dot)
		return NULL;
	*len = (size_t)(dot - key - 7);
	return key + 7;
}

/* Has c a key remote.R.*? Or, with r NULL, any remote.*.*? */
static bool remote_exists(cfg c, const char *r, size_t len)
{
	_cleanup_free_ char *prefix = NULL;
	if (r ? asprintf(&prefix, "remote.%.*s.", (int)len, r) < 0 : !(prefix = strdup("remote.")))
		return true; /* out of memory: the stricter answer */
	size_t lo, hi, plen = strlen(prefix);
	cfg_range(c, prefix, &lo, &hi);
	for (; lo < c.n && !strncmp(c.e[lo].key, prefix, plen); lo++)
		if (r || strchr(c.e[lo].key + plen, '.'))
			return true;
	return false;
}

/* Has remote v of b the urls and pushurls that remote w of a had (a
 * rename keeps them)? v not a remote: git takes it for a URL or path.
 * -ENOMEM, 0 or 1. */
static int remote_same(cfg a, const char *w, cfg b, const char *v)
{
	_cleanup_free_ char *au = remote_key(w, strlen(w), "url"), *ap = remote_key(w, strlen(w), "pushurl");
	_cleanup_free_ char *bu = remote_key(v, strlen(v), "url"), *bp = remote_key(v, strlen(v), "pushurl");
	if (!au || !ap || !bu || !bp)
		return -ENOMEM;
	if (!cfg_first(b, bu) && !cfg_first(b, bp))
		return 0;
	return cfg_same(a, au, b, bu) && cfg_same(a, ap, b, bp);
}

/* The name of a's remote when it has one alone (an origin renamed), or
 * NULL (also out of memory). */
static char *only_remote(cfg a)
{
	const char *name = NULL;
	size_t namelen = 0;
	for (size_t i = 0; i < a.n; i++) {
		size_t len;
		const char *r = remote_name(a.e[i].key, &len);
		if (!r)
			continue;
		if (name && (len != namelen || strncmp(r, name, len)))
			return NULL;
		name = r, namelen = len;
	}
	return name ? strndup(name, namelen) : NULL;
}

/* key (a branch's remote or pushRemote, remote.pushDefault) names remote
 * v after the change: is it where this traffic went before, the key's old
 * remote or the repository's default (remote.pushDefault, else origin)?
 * A remote merely added earlier is not: that would let one transaction
 * add it and the next send the user's branches to it. */
static int remote_kept(cfg a, cfg b, const char *key, const char *v)
{
	if (!strcmp(v, "."))
		return 1; /* the repository itself */
	size_t lo, hi, dlo, dhi;
	cfg_range(a, key, &lo, &hi);
	cfg_range(a, "remote.pushdefault", &dlo, &dhi);
	int r = 0;
	for (size_t i = lo; r == 0 && i < hi; i++)
		r = a.e[i].value ? remote_same(a, a.e[i].value, b, v) : 0;
	for (size_t i = dlo; r == 0 && i < dhi; i++)
		r = a.e[i].value ? remote_same(a, a.e[i].value, b, v) : 0;
	if (r == 0 && dlo == dhi)
		r = remote_same(a, "origin", b, v);
	_cleanup_free_ char *only = NULL;
	if (r == 0 && dlo == dhi && (only = only_remote(a)))
		r = remote_same(a, only, b, v);
	return r;
}

/* Every value key has in b (git takes the last in file order, which the
 * sorted entries no longer show) names a remote kept? -ENOMEM, 0 or 1. */
static int remotes_kept(cfg a, cfg b, const char *key)
{
	size_t lo, hi;
	cfg_range(b, key, &lo, &hi);
	if (hi - lo > 64)
		return 0; /* no branch needs that many: not judged, held */
	int r = 1;
	for (; r == 1 && lo < hi; lo++)
		r = remote_kept(a, b, key, b.e[lo].value ? b.e[lo].value : "true");
	return r;
}

/* Has remote w of a gone to another name in b, the same urls kept
 * (`git remote rename`)? Removing it outright is held: a next
 * transaction could add it again, as new, with another url. -ENOMEM, 0
 * or 1. */
static int renamed_to(cfg a, const char *w, cfg b)
{
	const char *prev = NULL;
	size_t prevlen = 0, budget = 4096; /* names compared; more: not renamed */
	for (size_t i = 0; i < b.n && budget; i++) {
		size_t len;
		const char *r = remote_name(b.e[i].key, &len);
		if (!r || (prev && prevlen == len && !strncmp(prev, r, len)))
			continue;
		prev = r, prevlen = len, budget--;
		_cleanup_free_ char *v = strndup(r, len);
		if (!v)
			return -ENOMEM;
		int same = remote_same(a, w, b, v);
		if (same)
			return same;
	}
	return 0;
}

static bool name_in(const char *key, const char *const *names)
{
	const char *dot = strrchr(key, '.');
	for (; dot && *names; names++)
		if (!strcmp(dot + 1, *names))
			return true;
	return false;
}

/* Does a change of key, from config a to b, send git's fetches, pushes or
 * credentials for what the repository had elsewhere? -ENOMEM, 0 or 1. */
static int key_redirects(cfg a, cfg b, const char *key, enum gitconfig_role role)
{
	static const char *const transport[] = {"proxy", "proxyauthmethod", "proxysslcert", "proxysslkey",
						"proxysslcainfo", "sslverify", "sslcainfo", "sslcapath", "sslcert",
						"sslkey", "sslbackend", "pinnedpubkey", "extraheader", "cookiefile",
						"savecookies", "curloptresolve", "followredirects", "emptyauth", NULL};
	if (key_is(key, "url", "insteadof") || key_is(key, "url", "pushinsteadof"))
		return 1; /* rewrites the URLs of every remote, whatever its name */
	if ((!strncmp(key, "http.", 5) && name_in(key, transport)) || key_is(key, "remote", "proxy") ||
	    key_is(key, "remote", "proxyauthmethod"))
		return 1; /* where the traffic goes, or who can read it */
	if (role == GITCONFIG_NEW_REPO)
		return 0; /* `git clone`, `git init`: no traffic to redirect */
	if (!strcmp(key, "lfs.url") || !strcmp(key, "lfs.pushurl") || key_is(key, "remote", "lfsurl") ||
	    key_is(key, "remote", "lfspushurl"))
		return 1; /* where git-lfs sends the objects */
	size_t len;
	const char *r = remote_name(key, &len);
	bool urls = r && (key_is(key, "remote", "url") || key_is(key, "remote", "pushurl"));
	bool selects = key_is(key, "branch", "remote") || key_is(key, "branch", "pushremote") ||
		       !strcmp(key, "remote.pushdefault");
	if (role == GITCONFIG_OVERLAY)
		return urls || selects;
	if (urls) {
		if (!remote_exists(a, r, len))
			return 0; /* a new remote: nothing went there before */
		if (remote_exists(b, r, len))
			return 1;
		_cleanup_free_ char *name = strndup(r, len);
		if (!name)
			return -ENOMEM;
		int renamed = renamed_to(a, name, b);
		return renamed < 0 ? renamed : !renamed;
	}
	if (key_is(key, "submodule", "url"))
		return cfg_first(a, key) && cfg_first(b, key);
	if (!selects)
		return 0;
	if (!remote_exists(a, NULL, 0))
		return 0; /* no remote to redirect */
	int kept = remotes_kept(a, b, key);
	return kept < 0 ? kept : !kept;
}

/* Printable, bounded: the values are the command's. */
static void shown(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

int gitconfig_redirect(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb,
		       const char *const *keys, size_t nkeys, enum gitconfig_role role, char **what)
{
	*what = NULL;
	cfg ca = {a, na}, cb = {b, nb};
	for (size_t i = 0; i < nkeys; i++) {
		int r = key_redirects(ca, cb, keys[i], role);
		if (r <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		const char *o = cfg_first(ca, keys[i]), *n = cfg_added(ca, cb, keys[i]);
		char k[160], ov[160], nv[160];
		shown(k, sizeof k, keys[i]);
		shown(ov, sizeof ov, o ? o : "(unset)");
		shown(nv, sizeof nv, n ? n : "(unset)");
		return asprintf(what, "%s %s -> %s", k, ov, nv) < 0 ? -ENOMEM : 1;
	}
	return 0;
}

/* ---- git config: values gained ------------------------------------------ */

/* What git's config reader takes for true (git_parse_maybe_bool): a bare
 * key, true/yes/on, or a non-zero number. */
static bool cfg_true(const char *v)
{
	if (!v)
		return true;
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
		return true;
	char *end;
	long n = strtol(v, &end, 10);
	return *v && !*end && n != 0;
}

static int add_value(char ***vals, size_t *n, const char *key, const char *value)
{
	char **v = realloc(*vals, (*n + 2) * sizeof *v);
	if (!v)
		return -ENOMEM;
	*vals = v;
	if (asprintf(&v[*n], "%s=%s", key, value ? value : "true") < 0)
		return -ENOMEM;
	v[++*n] = NULL;
	return 0;
}

/* The values key has in b and not in a. */
static int key_gained(cfg a, cfg b, const char *key, char ***vals, size_t *n)
{
	size_t al, ah, bl, bh;
	cfg_range(a, key, &al, &ah);
	cfg_range(b, key, &bl, &bh);
	int r = 0;
	for (size_t j = bl; r == 0 && j < bh; j++) {
		while (al < ah && entry_cmp(&a.e[al], &b.e[j]) < 0)
			al++;
		if (al == ah || entry_cmp(&a.e[al], &b.e[j]) > 0)
			r = add_value(vals, n, key, b.e[j].value);
	}
	return r;
}

/* Pruning turned on changes what every fetch refspec it covers does (a
 * refspec into refs/heads/ then deletes the user's branches the remote
 * lacks): those refspecs count as gained too. */
static int prune_gained(cfg a, cfg b, const char *key, char ***vals, size_t *n)
{
	size_t rlen = 0;
	const char *remote = key_is(key, "remote", "prune") ? remote_name(key, &rlen) : NULL;
	const char *now = cfg_first(b, key), *was = cfg_first(a, key); /* a bare key reads "true" */
	if ((!remote && strcmp(key, "fetch.prune")) || !now || !cfg_true(now) || (was && cfg_true(was)))
		return 0;
	int r = 0;
	for (size_t i = 0; r == 0 && i < b.n; i++) {
		size_t len;
		const char *rn = remote_name(b.e[i].key, &len);
		if (rn && key_is(b.e[i].key, "remote", "fetch") && (!remote || (len == rlen && !strncmp(rn, remote, len))))
			r = add_value(vals, n, b.e[i].key, b.e[i].value);
	}
	return r;
}

int gitconfig_gained(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb,
		     const char *const *keys, size_t nkeys, enum gitconfig_role role, char ***vals, size_t *nvals)
{
	*vals = NULL;
	*nvals = 0;
	cfg ca = {a, na}, cb = {b, nb};
	int r = 0;
	for (size_t i = 0; r == 0 && i < nkeys; i++) {
		/* a repository the change made has no work of the user's for
		 * its format or checkout settings to break; its remotes and
		 * fetch settings still act on the remote's */
		if (role == GITCONFIG_NEW_REPO && strncmp(keys[i], "remote.", 7) && strncmp(keys[i], "fetch.", 6))
			continue;
		r = key_gained(ca, cb, keys[i], vals, nvals);
		if (r == 0)
			r = prune_gained(ca, cb, keys[i], vals, nvals);
	}
	if (r < 0) {
		for (size_t i = 0; i < *nvals; i++)
			free((*vals)[i]);
		free(*vals);
		*vals = NULL;
		*nvals = 0;
	}
	return r;
}

/* ---- package.json scripts ----------------------------------------------------
 * A bounded JSON reader (RFC 8259; as JSON.parse, the last of duplicate
 * keys wins) that keeps only the top-level "scripts" object's string
 * members, escapes decoded, so a hook named "pre\u0074est" is "pretest". */

#define JSON_DEPTH_MAX 128

typedef struct jreader {
	const char *p, *end;
	int depth;
} jreader;

static void j_ws(jreader *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c = p[i], d = isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
		if (d < 0)
			return -EINVAL;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

/* A \u escape at j->p (after the backslash and 'u'), a surrogate pair
 * joined, as UTF-8 into b. */
static int j_unicode(jreader *j, cbuf *b)
{
	unsigned u, lo;
	if (j->end - j->p < 4 || hex4(j->p, &u) < 0)
		return -EINVAL;
	j->p += 4;
	if (u >= 0xd800 && u < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' &&
	    hex4(j->p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		j->p += 6;
	}
	unsigned char out[4];
	size_t n = u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;
	static const unsigned char lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
	for (size_t i = n - 1; i > 0; i--, u >>= 6)
		out[i] = (unsigned char)(0x80 | (u & 0x3f));
	out[0] = (unsigned char)(lead[n] | u);
	for (size_t i = 0; i < n; i++)
		if (cbuf_put(b, (char)out[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* A string at j->p (its opening quote), decoded into b when b is set. */
static int j_string(jreader *j, cbuf *b)
{
	if (j->p >= j->end || *j->p != '"')
		return -EINVAL;
	for (j->p++; j->p < j->end; j->p++) {
		char c = *j->p;
		if (c == '"') {
			j->p++;
			return b ? cbuf_put(b, '\0') : 0;
		}
		if ((unsigned char)c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			if (++j->p >= j->end)
				return -EINVAL;
			static const char from[] = "\"\\/bfnrtu", to[] = "\"\\/\b\f\n\r\t";
			const char *esc = strchr(from, *j->p);
			if (!esc || !*j->p)
				return -EINVAL;
			if (*j->p == 'u') {
				j->p++;
				int r = b ? j_unicode(j, b) : j->end - j->p >= 4 ? 0 : -EINVAL;
				if (r < 0)
					return r;
				j->p += b ? -1 : 3;
				continue;
			}
			c = to[esc - from];
		}
		if (b && cbuf_put(b, c) < 0)
			return -ENOMEM;
	}
	return -EINVAL;
}

static int j_value(jreader *j);

#define SCRIPTS_MAX 10000

/* Set script key to val (both taken): the last of duplicate keys wins. */
static int script_set(gitconfig_entry **v, size_t *n, cbuf *key, cbuf *val)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, key->s)) {
			free((*v)[i].value);
			(*v)[i].value = steal_ptr(val->s);
			return 0;
		}
	if (*n >= SCRIPTS_MAX)
		return -E2BIG;
	gitconfig_entry *w = realloc(*v, (*n + 1) * sizeof *w);
	if (!w)
		return -ENOMEM;
	*v = w;
	w[(*n)++] = (gitconfig_entry){steal_ptr(key->s), steal_ptr(val->s)};
	return 0;
}

/* After an item of an object or array: 1 at a ',' (another item follows),
 * 0 at the closing character (the container is done), else -EINVAL. */
static int j_next_item(jreader *j, char close)
{
	j_ws(j);
	if (j->p < j->end && *j->p == ',') {
		j->p++;
		return 1;
	}
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	return -EINVAL;
}

/* An object at j->p; scripts: keep its string members (out, n), else
 * (out set) look for a top-level "scripts" member. */
static int j_object(jreader *j, gitconfig_entry **out, size_t *n, bool top, bool scripts)
{
	if (++j->depth > JSON_DEPTH_MAX)
		return -E2BIG;
	j->p++;
	j_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		cbuf key = {0};
		j_ws(j);
		int r = j_string(j, (top || scripts) ? &key : NULL);
		j_ws(j);
		if (r == 0 && (j->p >= j->end || *j->p++ != ':'))
			r = -EINVAL;
		j_ws(j);
		if (r == 0 && top && key.s && !strcmp(key.s, "scripts")) {
			gitconfig_free(*out, *n); /* the last "scripts" wins */
			*out = NULL;
			*n = 0;
			r = j->p < j->end && *j->p == '{' ? j_object(j, out, n, false, true) : j_value(j);
		} else if (r == 0 && scripts && j->p < j->end && *j->p == '"') {
			cbuf val = {0};
			r = j_string(j, &val);
			if (r == 0)
				r = script_set(out, n, &key, &val);
			free(val.s);
		} else if (r == 0)
			r = j_value(j);
		free(key.s);
		if (r < 0 || (r = j_next_item(j, '}')) <= 0)
			return r;
	}
}

static int j_array(jreader *j)
{
	if (++j->depth > JSON_DEPTH_MAX)
		return -E2BIG;
	j->p++;
	j_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		j_ws(j);
		int r = j_value(j);
		if (r < 0 || (r = j_next_item(j, ']')) <= 0)
			return r;
	}
}

/* Skip one value (a nested "scripts" is no script). */
static int j_value(jreader *j)
{
	if (j->p >= j->end)
		return -EINVAL;
	if (*j->p == '{') {
		gitconfig_entry *none = NULL;
		size_t nn = 0;
		return j_object(j, &none, &nn, false, false);
	}
	if (*j->p == '[')
		return j_array(j);
	if (*j->p == '"')
		return j_string(j, NULL);
	static const char *const words[] = {"true", "false", "null"};
	for (size_t i = 0; i < 3; i++)
		if ((size_t)(j->end - j->p) >= strlen(words[i]) && !strncmp(j->p, words[i], strlen(words[i]))) {
			j->p += strlen(words[i]);
			return 0;
		}
	const char *start = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	while (j->p < j->end && (isdigit((unsigned char)*j->p) || strchr(".eE+-", *j->p)))
		j->p++;
	return j->p > start && isdigit((unsigned char)j->p[-1]) ? 0 : -EINVAL;
}

int pkgjson_scripts(const char *buf, size_t len, gitconfig_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	jreader j = {buf, buf + len, 0};
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) /* npm strips a byte-order mark */
		j.p += 3;
	j_ws(&j);
	int r = j.p < j.end && *j.p == '{' ? j_object(&j, out, n, true, false) : -EINVAL;
	if (r == 0) {
		j_ws(&j);
		if (j.p != j.end)
			r = -EINVAL;
	}
	if (r < 0) {
		gitconfig_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return r;
}

/* Does npm run script `name` by itself: install, prepare, dependencies,
 * or pre/post of a lifecycle event or of another script? */
static bool lifecycle_hook(const char *name, const gitconfig_entry *v, size_t n)
{
	static const char *const events[] = {"install", "prepare", "dependencies", "uninstall", "publish", "pack",
					     "version", "test", "start", "stop", "restart", "shrinkwrap", "publishOnly",
					     "prepublishOnly", NULL};
	const char *base = !strncmp(name, "pre", 3) ? name + 3 : !strncmp(name, "post", 4) ? name + 4 : NULL;
	for (size_t i = 0; events[i]; i++)
		if (!strcmp(name, events[i]) ? i < 3 : base && !strcmp(base, events[i]))
			return true;
	for (size_t i = 0; base && *base && i < n; i++)
		if (!strcmp(v[i].key, base))
			return true;
	return false;
}

int pkgjson_hook_changed(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb, const char **name)
{
	*name = NULL;
	for (size_t i = 0; i < nb; i++) {
		if (!lifecycle_hook(b[i].key, b, nb))
			continue;
		const char *was = NULL;
		for (size_t k = 0; k < na && !was; k++)
			if (!strcmp(a[k].key, b[i].key))
				was = a[k].value;
		if (!was || strcmp(was, b[i].value)) {
			*name = b[i].key;
			return 1;
		}
	}
	return 0;
}
