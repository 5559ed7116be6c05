/* One command's argv, normalised for matching: look-alike characters folded,
 * the command name without its path (`/bin/rm` -> rm), trivial wrappers
 * (`command`, `builtin`, `exec`, `time`, `noglob`) skipped, short flags
 * collected in any grouping (`-rf` == `-fr` == `-r -f`), long flags kept as
 * words, option values consumed where the policy's `commands:` hints say an
 * option takes one (`git -C dir`, `git commit -m msg`), and the remaining
 * words listed as positional operands. */
#include "policy/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const trivial_wrappers[] = {"command", "builtin", "exec", "time", "noglob",
					       "nocorrect"};

static const cmd_hint *find_hint(const policy *p, const char *name)
{
	for (size_t i = 0; i < p->nhints; i++)
		if (strcmp(p->hints[i].name, name) == 0)
			return &p->hints[i];
	return NULL;
}

static bool takes_value(const cmd_hint *h, const char *opt, size_t len)
{
	if (!h)
		return false;
	for (size_t i = 0; i < h->value_options.n; i++)
		if (strlen(h->value_options.v[i]) == len && memcmp(h->value_options.v[i], opt, len) == 0)
			return true;
	return false;
}

void cmdview_free(cmdview *v)
{
	if (v->words)
		for (size_t i = 0; i < v->nwords; i++)
			free(v->words[i]);
	free(v->words);
	free(v->unknown);
	free(v->positional);
	free(v->pos_unknown);
	free(v->is_value);
	free(v->value_of);
	memset(v, 0, sizeof(*v));
}

static const char *base_name(const char *w)
{
	const char *slash = strrchr(w, '/');
	if (slash && slash[1])
		return slash + 1;
	if (slash) { /* trailing slash: "dir/" -> "dir" is not a command; keep as is */
		return w;
	}
	return w;
}

/* sed 's/a/b/' FILE, grep PATTERN FILE, awk PROGRAM FILE: the first
 * operand is a program or pattern, not a file (unless given by option). */
static void drop_program_operand(cmdview *v)
{
	static const struct {
		const char *name, *by_option;
	} t[] = {
		{"sed", "-e|--expression|-f|--file"}, {"gsed", "-e|--expression|-f|--file"},
		{"grep", "-e|--regexp|-f|--file"},    {"egrep", "-e|--regexp|-f|--file"},
		{"fgrep", "-e|--regexp|-f|--file"},   {"rg", "-e|--regexp|-f|--file"},
		{"awk", "-f|--file"},                 {"gawk", "-f|--file"},
		{"mawk", "-f"},                       {"jq", "-f|--from-file"},
		{"yq", "--from-file"},
	};
	if (v->name_unknown || v->npositional == 0)
		return;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		if (strcmp(v->name, t[i].name) != 0)
			continue;
		if (cmdview_has_flag(v, t[i].by_option, false))
			return;
		v->is_value[v->positional[0]] = true;
		memmove(v->positional, v->positional + 1, (v->npositional - 1) * sizeof(*v->positional));
		memmove(v->pos_unknown, v->pos_unknown + 1, (v->npositional - 1) * sizeof(*v->pos_unknown));
		v->npositional--;
		return;
	}
}

/* tar's first word without a dash is a bundle of options (`tar xf a.tar
 * -C /` is `tar -x -f a.tar -C /`): read it as one, so flag conditions see
 * -x. Only a word of letters holding a function letter counts. Unlike a
 * dashed cluster, each letter of it that takes a value takes the next
 * unused word, in order: `tar xfC a.tar DIR` is -f a.tar -C DIR. */
static bool tar_old_style(const cmdview *v, size_t start)
{
	if (start + 1 >= v->nwords || v->unknown[start + 1])
		return false;
	const char *n = v->words[start] ? base_name(v->words[start]) : "";
	const char *w = v->words[start + 1];
	return !(strcmp(n, "tar") && strcmp(n, "gtar") && strcmp(n, "bsdtar")) && w[0] != '-' &&
	       w[0] && !w[strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")] &&
	       strpbrk(w, "ctxurAd");
}

/* git push's -u is --set-upstream, a flag (`git push -uf origin main` forces);
 * `commands:` lists -u as taking a value for git's other subcommands (clone -u
 * PROGRAM, branch -u UPSTREAM). The subcommand is the first operand. */
static bool git_push_flag(const cmdview *v, const char *opt, size_t len)
{
	return len == 2 && memcmp(opt, "-u", 2) == 0 && !v->name_unknown && strcmp(v->name, "git") == 0 &&
	       v->npositional > 0 && strcmp(v->words[v->positional[0]], "push") == 0;
}

static bool view_takes_value(const cmdview *v, const char *opt, size_t len)
{
	return takes_value(v->hint, opt, len) && !git_push_flag(v, opt, len);
}

static bool short_takes_value(const cmdview *v, char c)
{
	char opt[3] = {'-', c, '\0'};
	return view_takes_value(v, opt, 2);
}

/* The dashless bundle at i: its letters are flags, and each one taking a
 * value binds the next word not bound yet. */
static void bind_old_style(cmdview *v, size_t i)
{
	const char *w = v->words[i];
	size_t next = i + 1;
	for (size_t j = 0; w[j]; j++) {
		v->short_flags[(unsigned char)w[j]] = true;
		if (short_takes_value(v, w[j]) && next < v->nwords) {
			v->is_value[next] = true;
			v->value_of[next++] = w[j];
		}
	}
}

/* A cluster of short options (-xzvf a.tar): every letter is a flag up to the
 * first one that takes a value, whose value is the rest of the word or, when
 * it ends the word, the next word (getopt). Returns the index of the last
 * word it used. */
static size_t bind_cluster(cmdview *v, size_t i)
{
	const char *w = v->words[i];
	for (size_t j = 1; w[j]; j++) {
		v->short_flags[(unsigned char)w[j]] = true;
		if (!short_takes_value(v, w[j]))
			continue;
		if (w[j + 1] == '\0' && i + 1 < v->nwords) {
			v->is_value[i + 1] = true; /* value is the next word */
			v->value_of[i + 1] = w[j];
			return i + 1;
		}
		break; /* else the rest of the word is the value */
	}
	return i;
}

/* Sort the words after the command name into flags, option values and
 * operands. */
static int split_words(cmdview *v, size_t start)
{
	v->positional = calloc(v->nwords + 1, sizeof(*v->positional));
	v->pos_unknown = calloc(v->nwords + 1, sizeof(*v->pos_unknown));
	v->is_value = calloc(v->nwords + 1, sizeof(*v->is_value));
	v->value_of = calloc(v->nwords + 1, sizeof(*v->value_of));
	if (!v->positional || !v->pos_unknown || !v->is_value || !v->value_of)
		return -ENOMEM;
	v->dashdash_at = v->nwords;
	size_t from = start + 1;
	if (tar_old_style(v, start)) {
		bind_old_style(v, start + 1);
		char *dashed = NULL; /* so that it reads as options wherever words are looked at */
		if (asprintf(&dashed, "-%s", v->words[start + 1]) < 0)
			return -ENOMEM;
		free(v->words[start + 1]);
		v->words[start + 1] = dashed;
		from++;
	}
	for (size_t i = from; i < v->nwords; i++) {
		const char *w = v->words[i];
		if (v->is_value[i])
			continue;
		bool operand = v->dashdash || w[0] != '-' || w[1] == '\0';
		if (!operand && strcmp(w, "--") == 0) {
			v->dashdash = true;
			v->dashdash_at = i;
		} else if (operand) {
			v->pos_unknown[v->npositional] =
			    v->unknown[i] || (v->implicit_unknown_operand && strstr(w, "{}"));
			v->positional[v->npositional++] = i;
		} else if (w[1] == '-') { /* --long[=value] */
			if (!strchr(w, '=') && takes_value(v->hint, w, strlen(w)) && i + 1 < v->nwords)
				v->is_value[++i] = true;
		} else if (view_takes_value(v, w, strlen(w))) { /* -name VALUE (find style), -x VALUE */
			if (w[2] == '\0')
				v->short_flags[(unsigned char)w[1]] = true;
			if (i + 1 < v->nwords) {
				v->is_value[i + 1] = true;
				v->value_of[i + 1] = w[2] == '\0' ? w[1] : 0;
				i++;
			}
		} else {
			i = bind_cluster(v, i);
		}
	}
	return 0;
}

/* kill -s 0 / -n 0 / --signal=0 is kill -0 (signal 0 only tests that a
 * process exists): read it as -0, so a rule written once for -0 sees each
 * spelling. Only when every signal given is 0 and nothing else is set
 * (`kill -s 0 -s 9 1` sends 9). */
static void kill_null_signal(cmdview *v)
{
	static const char *const keys[] = {"-s", "-n", "--signal"};
	size_t zeros = 0;
	if (v->name_unknown || strcmp(v->name, "kill") != 0)
		return;
	for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
		size_t pos = 0;
		bool unk = false;
		const char *val;
		while ((val = cmdview_option_value(v, keys[k], &pos, &unk))) {
			if (unk || strcmp(val, "0") != 0)
				return;
			zeros++;
		}
	}
	for (size_t c = 0; c < sizeof(v->short_flags); c++)
		if (v->short_flags[c] && c != 's' && c != 'n')
			return;
	for (size_t i = v->start + 1; i < v->dashdash_at && i < v->nwords; i++)
		if (!v->is_value[i] && strncmp(v->words[i], "--", 2) == 0 &&
		    strncmp(v->words[i], "--signal", 8) != 0)
			return;
	if (zeros)
		v->short_flags['0'] = true;
}

int cmdview_init(cmdview *v, const policy *p, const shell_cmd *cmd)
{
	memset(v, 0, sizeof(*v));
	v->cmd = cmd;
	size_t cap = 0;
	bool *unk = NULL;
	size_t ucap = 0;
	for (size_t i = 0; i < cmd->argc && cmd->argv[i]; i++) {
		size_t before = v->nwords;
		if (builtin_normalise_word(cmd->argv[i], &v->words, &v->nwords, &cap) < 0)
			goto oom;
		if (v->nwords > ucap) {
			size_t c = cap > v->nwords ? cap : v->nwords + 1;
			bool *u = realloc(unk, c * sizeof(*u));
			if (!u)
				goto oom;
			unk = u;
			ucap = c;
		}
		for (size_t j = before; j < v->nwords; j++)
			unk[j] = cmd->word_unresolved ? cmd->word_unresolved[i] : false;
	}
	v->unknown = unk;
	unk = NULL;

	/* skip trivial wrappers and their options */
	size_t start = 0;
	for (;;) {
		if (start >= v->nwords)
			break;
		const char *n = base_name(v->words[start]);
		bool wrapper = false;
		for (size_t k = 0; k < sizeof(trivial_wrappers) / sizeof(*trivial_wrappers); k++)
			if (strcmp(n, trivial_wrappers[k]) == 0)
				wrapper = true;
		if (!wrapper || start + 1 >= v->nwords)
			break;
		start++;
		while (start < v->nwords && v->words[start][0] == '-' && v->words[start][1]) {
			bool dd = strcmp(v->words[start], "--") == 0;
			start++;
			if (dd)
				break;
		}
	}
	if (start >= v->nwords) {
		v->name = v->nwords ? base_name(v->words[0]) : "";
		start = v->nwords;
	} else {
		v->name = base_name(v->words[start]);
		v->name_unknown = v->unknown[start];
	}
	v->name_non_ascii = builtin_non_ascii(v->name);
	if (cmd->via && (strstr(cmd->via, "xargs") || strstr(cmd->via, "find") ||
			 strstr(cmd->via, "parallel")))
		v->implicit_unknown_operand = true;

	v->hint = find_hint(p, v->name);
	if (split_words(v, start) < 0)
		goto oom;
	v->start = start;
	drop_program_operand(v);
	kill_null_signal(v);
	return 0;
oom:
	free(unk);
	cmdview_free(v);
	return -ENOMEM;
}

static bool has_one_flag(const cmdview *v, const char *spec, bool abbrev);

bool spelling_next(const char **p, char *buf, size_t size)
{
	while (**p) {
		size_t len = strcspn(*p, "|");
		bool fits = len < size;
		if (fits) {
			memcpy(buf, *p, len);
			buf[len] = '\0';
		}
		*p += len + ((*p)[len] == '|');
		if (fits)
			return true;
	}
	return false;
}

bool cmdview_has_flag(const cmdview *v, const char *spec, bool abbrev)
{
	char one[256];
	if (!strchr(spec, '|'))
		return has_one_flag(v, spec, abbrev);
	while (spelling_next(&spec, one, sizeof(one)))
		if (has_one_flag(v, one, abbrev))
			return true;
	return false;
}

static bool has_one_flag(const cmdview *v, const char *spec, bool abbrev)
{
	size_t slen = strlen(spec);
	if (strcmp(spec, "--") == 0)
		return v->dashdash;
	if (slen == 2 && spec[0] == '-')
		return v->short_flags[(unsigned char)spec[1]];
	const char *name = spec[1] == '-' ? spec + 2 : spec + 1; /* without dashes */
	size_t nlen = strlen(name);
	for (size_t i = v->start + 1; i < v->dashdash_at; i++) {
		const char *w = v->words[i];
		if (w[0] != '-')
			continue;
		const char *wn = w[1] == '-' ? w + 2 : w + 1;
		bool wlong = w[1] == '-';
		if (!wlong && spec[1] == '-')
			continue; /* "-force" is not "--force" */
		size_t wlen = strcspn(wn, "=");
		if (wlen == nlen && strncmp(wn, name, nlen) == 0)
			return true;
		/* an abbreviation, unless it ends where a hyphenated part of the
		 * name does: --export is an option of its own, not --export-secret-keys */
		if (abbrev && wlong && spec[1] == '-' && wlen >= 1 && wlen < nlen &&
		    strncmp(wn, name, wlen) == 0 && name[wlen] != '-')
			return true;
	}
	return false;
}

/* A value of short option c inside a cluster word w (-xzC/etc: "/etc"), or
 * the next word when c ends the cluster (-xzC DIR, for a command whose
 * hint does not say c takes a value). NULL when an earlier letter takes the
 * rest of the cluster as its own value. */
static const char *cluster_value(const cmdview *v, size_t i, char c, bool *next_word)
{
	const char *w = v->words[i];
	*next_word = false;
	if (w[0] != '-' || w[1] == '-')
		return NULL;
	for (size_t j = 1; w[j]; j++) {
		if (w[j] == c) {
			if (w[j + 1])
				return w + j + 1;
			*next_word = !v->value_of[i + 1] && i + 1 < v->nwords && !strchr(w, '=');
			return NULL;
		}
		if (short_takes_value(v, w[j]))
			return NULL;
	}
	return NULL;
}

const char *cmdview_option_value(const cmdview *v, const char *key, size_t *pos, bool *unknown)
{
	size_t klen = strlen(key);
	bool shortkey = klen == 2 && key[0] == '-' && key[1] != '-';
	size_t i = *pos < v->start + 1 ? v->start + 1 : *pos;
	for (; i < v->nwords; i++) {
		const char *w = v->words[i];
		if (key[0] != '-') { /* dd style key=value operand */
			if (strncmp(w, key, klen) == 0 && w[klen] == '=') {
				*pos = i + 1;
				*unknown = v->unknown[i];
				return w + klen + 1;
			}
			continue;
		}
		if (i >= v->dashdash_at)
			break;
		if (shortkey && v->value_of[i] == key[1]) { /* bound by a cluster or tar's bundle */
			*pos = i + 1;
			*unknown = v->unknown[i];
			return w;
		}
		if (v->is_value[i])
			continue;
		if (strcmp(w, key) == 0) {
			if (i + 1 >= v->nwords)
				break;
			*pos = i + 2;
			*unknown = v->unknown[i + 1];
			return v->words[i + 1];
		}
		if (!shortkey && strncmp(w, key, klen) == 0 && w[klen] == '=' && klen > 2) {
			*pos = i + 1;
			*unknown = v->unknown[i];
			return w + klen + 1;
		}
		if (!shortkey)
			continue;
		bool next_word;
		const char *val = cluster_value(v, i, key[1], &next_word);
		if (val) { /* -xVALUE, -zxC/etc */
			*pos = i + 1;
			*unknown = v->unknown[i];
			return val;
		}
		if (next_word) { /* the option last in a cluster: -fsSLo VALUE */
			*pos = i + 2;
			*unknown = v->unknown[i + 1];
			return v->words[i + 1];
		}
	}
	*pos = v->nwords;
	return NULL;
}

bool cmdview_target_option(const cmdview *v)
{
	return short_takes_value(v, 't') && cmdview_has_flag(v, "-t|--target-directory", true);
}
