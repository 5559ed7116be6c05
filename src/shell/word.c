/* Words: quoting, expansions and quote removal.
 *
 * A word is read into "cells": bytes with flags saying whether they were
 * quoted and whether they stand for an expansion whose value is unknown.
 * What the parser computes for each form:
 *
 *   '…'  "…"  \c  $'…' (all bash escapes; \u/\U give UTF-8)  $"…"
 *                       literal text, quotes removed, exactly as bash.
 *   $HOME ${HOME}       "~" when it starts the word, or follows '=', '@' or
 *                       ':', and is followed by "/" or the end; otherwise
 *                       the raw text, unresolved.
 *   ~ ~/x ~user         kept literally ("~/x"): policy resolves "~" against
 *                       HOME. (Note "~" from a quoted "~" is kept too, which
 *                       errs on the side of caution.)
 *   $x ${…} $((…)) $[…] raw text kept, word marked unresolved.
 *   $(…) `…`            raw text kept, word unresolved; the inner commands
 *                       are parsed and reported with via "$(…)" / "`…`".
 *   <(…) >(…)           raw text kept (word stays resolved, the path is
 *                       harmless); inner commands reported.
 *   {a,b} {1..3}        brace expansion as bash does it (word -> fields).
 *   * ? [               kept literally (no globbing).
 *
 * Non-ASCII look-alikes: bash does not split on Unicode spaces, so an
 * unquoted U+00A0, U+2000–U+200D, U+202F, U+205F, U+2060, U+3000 or U+FEFF
 * stays inside the word and marks it as a look-alike (the analyser makes a
 * command word with it unresolved and argument words word_unresolved). A
 * Unicode dash (U+2010–U+2015, U+2212, U+FF0D) that starts a word is
 * normalised to '-' and the word marked the same way.
 */
#include "shell/internal.h"

#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Zero-width marker: a quoting construct was present (for null-field rules). */
#define CF_NULLQ (1u << 3)

enum { LA_NONE = 0, LA_SPACE, LA_DASH };

/* Length of a look-alike UTF-8 sequence at s[pos] (0 if none). */
static size_t lookalike_at(const char *s, size_t len, size_t pos, int *kind)
{
	const unsigned char *u = (const unsigned char *)s + pos;
	size_t n = len - pos;
	*kind = LA_NONE;
	if (n >= 2 && u[0] == 0xC2 && u[1] == 0xA0) {
		*kind = LA_SPACE;
		return 2;
	}
	if (n < 3)
		return 0;
	if (u[0] == 0xE2 && u[1] == 0x80) {
		if (u[2] >= 0x80 && u[2] <= 0x8D)
			*kind = LA_SPACE; /* U+2000–U+200D */
		else if (u[2] >= 0x90 && u[2] <= 0x95)
			*kind = LA_DASH; /* U+2010–U+2015 */
		else if (u[2] == 0xAF)
			*kind = LA_SPACE; /* U+202F */
	} else if (u[0] == 0xE2 && u[1] == 0x81 && (u[2] == 0x9F || u[2] == 0xA0)) {
		*kind = LA_SPACE; /* U+205F, U+2060 */
	} else if (u[0] == 0xE2 && u[1] == 0x88 && u[2] == 0x92) {
		*kind = LA_DASH; /* U+2212 */
	} else if (u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) {
		*kind = LA_SPACE; /* U+3000 */
	} else if (u[0] == 0xEF && u[1] == 0xBC && u[2] == 0x8D) {
		*kind = LA_DASH; /* U+FF0D */
	} else if (u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) {
		*kind = LA_SPACE; /* U+FEFF */
	}
	return *kind ? 3 : 0;
}

void sh_word_free(struct sh_word *w)
{
	cells_free(&w->cells);
}

static int oom(struct sh_parser *p)
{
	return txbox_fail(p->ctx->err, -ENOMEM, "shell: out of memory");
}

static bool is_name_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static int read_dollar(struct sh_parser *p, struct sh_word *w, bool in_dq);
static int read_backquote(struct sh_parser *p, struct sh_word *w, bool in_dq);
static int read_dq(struct sh_parser *p, struct sh_word *w, bool heredoc);

/* Append raw text [st, p->pos) as an opaque expansion. */
static void add_opaque(struct sh_parser *p, struct sh_word *w, size_t st)
{
	cells_addn(&w->cells, p->s + st, p->pos - st, CF_EXP | CF_QUOTED);
	w->unres = true;
	w->unres_other = true;
}

/* $NAME / ${NAME} whose value is not known: [st, p->pos) as an opaque
 * expansion; it is the environment's value only if nothing in the text may
 * have set the name and the word is read once, in straight-line code. */
static void add_param(struct sh_parser *p, struct sh_word *w, size_t st, const char *name,
		      size_t len)
{
	bool other = w->unres_other;
	add_opaque(p, w, st);
	const struct sh_bind *b = p->binds;
	while (b && (b->len != len || memcmp(b->name, name, len) != 0))
		b = b->up;
	w->unres_other = other || b || p->compound || p->depth || !p->resolve_vars ||
			 !sh_var_untouched(p->vars, name, len);
}

/* Add one literal character (or look-alike sequence) from the text. */
static void add_text_char(struct sh_parser *p, struct sh_word *w, uint8_t f)
{
	int kind;
	size_t n = lookalike_at(p->s, p->len, p->pos, &kind);
	if (n) {
		if (kind == LA_DASH && w->cells.len == 0) {
			cells_add(&w->cells, '-', f);
			w->lookalike = true;
		} else {
			cells_addn(&w->cells, p->s + p->pos, n, f);
			if (kind == LA_SPACE) {
				if (f & CF_QUOTED)
					w->lookalike_q = true;
				else
					w->lookalike = true;
			}
		}
		p->pos += n;
		return;
	}
	cells_add(&w->cells, p->s[p->pos], f);
	p->pos++;
}

static int read_squote(struct sh_parser *p, struct sh_word *w)
{
	size_t st = p->pos++;
	w->quoted = true;
	cells_add(&w->cells, '\0', CF_NULLQ | CF_QUOTED);
	while (p->pos < p->len && p->s[p->pos] != '\'')
		add_text_char(p, w, CF_QUOTED);
	if (p->pos >= p->len)
		return sh_fail_at(p, st, -EINVAL, "unterminated single quote");
	p->pos++;
	return 0;
}

int sh_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* UTF-8 (extended to 6 bytes like bash) of v. */
static size_t utf8_encode(uint32_t v, char out[6])
{
	if (v < 0x80) {
		out[0] = (char)v;
		return 1;
	}
	int n = v < 0x800 ? 2 : v < 0x10000 ? 3 : v < 0x200000 ? 4 : v < 0x4000000 ? 5 : 6;
	static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC};
	for (int i = n - 1; i > 0; i--) {
		out[i] = (char)(0x80 | (v & 0x3F));
		v >>= 6;
	}
	out[0] = (char)(lead[n] | v);
	return (size_t)n;
}

/* $'…' with ANSI-C escapes. A NUL ends the string (bash drops the rest). */
static int read_ansi_c(struct sh_parser *p, struct sh_word *w)
{
	size_t st = p->pos;
	const char *s = p->s;
	p->pos += 2;
	w->quoted = true;
	cells_add(&w->cells, '\0', CF_NULLQ | CF_QUOTED);
	bool cut = false;
	while (p->pos < p->len && s[p->pos] != '\'') {
		if (s[p->pos] != '\\') {
			if (!cut)
				add_text_char(p, w, CF_QUOTED);
			else
				p->pos++;
			continue;
		}
		if (p->pos + 1 >= p->len)
			break;
		char e = s[p->pos + 1];
		size_t i = p->pos + 2;
		char buf[6];
		size_t bn = 0;
		uint32_t v = 0;
		switch (e) {
		case 'a': buf[bn++] = '\a'; break;
		case 'b': buf[bn++] = '\b'; break;
		case 'e':
		case 'E': buf[bn++] = 0x1b; break;
		case 'f': buf[bn++] = '\f'; break;
		case 'n': buf[bn++] = '\n'; break;
		case 'r': buf[bn++] = '\r'; break;
		case 't': buf[bn++] = '\t'; break;
		case 'v': buf[bn++] = '\v'; break;
		case '\\':
		case '\'':
		case '"':
		case '?': buf[bn++] = e; break;
		case '0': case '1': case '2': case '3':
		case '4': case '5': case '6': case '7': {
			i = p->pos + 1;
			for (int k = 0; k < 3 && i < p->len && s[i] >= '0' && s[i] <= '7'; k++, i++)
				v = v * 8 + (uint32_t)(s[i] - '0');
			buf[bn++] = (char)(v & 0xFF);
			break;
		}
		case 'x': {
			int k = 0;
			for (; k < 2 && i < p->len && sh_hexval(s[i]) >= 0; k++, i++)
				v = v * 16 + (uint32_t)sh_hexval(s[i]);
			if (k == 0) {
				buf[bn++] = '\\';
				buf[bn++] = 'x';
			} else
				buf[bn++] = (char)v;
			break;
		}
		case 'u':
		case 'U': {
			int max = e == 'u' ? 4 : 8, k = 0;
			for (; k < max && i < p->len && sh_hexval(s[i]) >= 0; k++, i++)
				v = v * 16 + (uint32_t)sh_hexval(s[i]);
			if (k == 0) {
				buf[bn++] = '\\';
				buf[bn++] = e;
			} else if (v > 0x7FFFFFFF) {
				bn = 0; /* not representable; bash prints nothing useful */
			} else
				bn = utf8_encode(v, buf);
			break;
		}
		case 'c': {
			if (i >= p->len || s[i] == '\'') {
				buf[bn++] = '\\';
				buf[bn++] = 'c';
				break;
			}
			char x = s[i++];
			if (x == '\\' && i < p->len && s[i] == '\\')
				i++;
			if (x == '?')
				buf[bn++] = 0x7f;
			else
				buf[bn++] = (char)(x & 0x1f);
			break;
		}
		default:
			buf[bn++] = '\\';
			buf[bn++] = e;
			break;
		}
		p->pos = i;
		for (size_t k = 0; k < bn && !cut; k++) {
			if (buf[k] == '\0')
				cut = true;
			else
				cells_add(&w->cells, buf[k], CF_QUOTED);
		}
	}
	if (p->pos >= p->len)
		return sh_fail_at(p, st, -EINVAL, "unterminated $'…' quote");
	p->pos++;
	return 0;
}

/* Inside "…" (or a here-document body when heredoc is set, which ends at
 * the end of the text and treats '"' literally). p->pos is after the quote. */
static int read_dq(struct sh_parser *p, struct sh_word *w, bool heredoc)
{
	size_t st = p->pos ? p->pos - 1 : 0;
	int rc = sh_nest_enter(p, p->pos);
	if (rc < 0)
		return rc;
	const char *s = p->s;
	w->quoted = true;
	cells_add(&w->cells, '\0', CF_NULLQ | CF_QUOTED);
	while (p->pos < p->len) {
		char c = s[p->pos];
		if (c == '"' && !heredoc)
			break;
		if (c == '\\' && p->pos + 1 < p->len) {
			char n = s[p->pos + 1];
			if (n == '\n') {
				p->pos += 2;
				continue;
			}
			if (n == '$' || n == '`' || n == '\\' || (n == '"' && !heredoc)) {
				cells_add(&w->cells, n, CF_QUOTED);
				p->pos += 2;
				continue;
			}
			cells_add(&w->cells, '\\', CF_QUOTED);
			p->pos++;
			continue;
		}
		if (c == '$') {
			rc = read_dollar(p, w, true);
		} else if (c == '`') {
			rc = read_backquote(p, w, true);
		} else {
			add_text_char(p, w, CF_QUOTED);
			rc = 0;
		}
		if (rc < 0)
			goto out;
	}
	if (!heredoc) {
		if (p->pos >= p->len) {
			rc = sh_fail_at(p, st, -EINVAL, "unterminated double quote");
			goto out;
		}
		p->pos++;
	}
	rc = 0;
out:
	sh_nest_leave(p);
	return rc;
}

/* A variable assigned earlier in this text (vars.c): insert its value. */
static bool known_var(struct sh_parser *p, struct sh_word *w, const char *name, size_t len,
		      bool in_dq)
{
	const struct sh_bind *b = p->binds;
	while (b && (b->len != len || memcmp(b->name, name, len) != 0))
		b = b->up;
	if (!b && (!p->vars || !p->resolve_vars || p->compound))
		return false;
	const char *v = b ? b->value : sh_var_get(p->vars, name, len);
	if (!v)
		return false;
	/* unquoted, bash would split and glob it (a pattern bound by a loop
	 * stands for one path it matched) */
	if (!in_dq && strpbrk(v, " \t\n*?[") && !(b && b->pattern && !strpbrk(v, " \t\n")))
		return false;
	/* (an unquoted empty value leaves nothing: the word may vanish) */
	if (!b || !b->pattern) {
		cells_addn(&w->cells, v, strlen(v), CF_QUOTED);
		return true;
	}
	/* the pattern stays one: the word is a pathname pattern (its
	 * wildcards unquoted) that is neither split nor brace-expanded */
	for (const char *c = v; *c; c++)
		cells_add(&w->cells, *c, strchr("*?[]", *c) ? 0 : CF_QUOTED);
	return true;
}

/* $PWD is the directory the policy tracks (bash's `~+`) unless this text
 * may set PWD itself: it names PWD other than in $PWD / ${PWD} (PWD=…,
 * read PWD, declare -n r=PWD, for PWD in …). OLDPWD is another name. */
static bool pwd_is_cwd(const struct sh_parser *p)
{
	for (const char *q = p->s; (q = memmem(q, (size_t)(p->s + p->len - q), "PWD", 3)); q += 3) {
		size_t at = (size_t)(q - p->s);
		if (at + 3 < p->len && is_name_char(q[3]))
			continue;
		if (at >= 1 && q[-1] == '$')
			continue;
		if (at >= 2 && q[-1] == '{' && q[-2] == '$' && at + 3 < p->len && q[3] == '}')
			continue;
		if (at >= 1 && is_name_char(q[-1]))
			continue;
		return false;
	}
	return true;
}

/* $PWD / ${PWD}: "~+" for the policy when it starts the word (cells_text). */
static bool pwd_var(struct sh_parser *p, struct sh_word *w, const char *name, size_t len)
{
	if (len != 3 || memcmp(name, "PWD", 3) != 0 || !pwd_is_cwd(p))
		return false;
	cells_add(&w->cells, '~', CF_HOME | CF_PWD | CF_QUOTED);
	return true;
}

/* $(dirname ARG) of a static ARG, [st, p->pos) being the substitution: its
 * value lexically is ARG/.. (for an ARG whose last name is not . or ..),
 * and $PWD there is "~+": `rm -rf "$(dirname "$PWD")"/x` is `~+/../x`. */
static bool static_dirname(struct sh_parser *p, struct sh_word *w, size_t st)
{
	const char *b = p->s + st + 2, *e = p->s + p->pos - 1;
	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e - b < 9 || memcmp(b, "dirname", 7) != 0 || (b[7] != ' ' && b[7] != '\t'))
		return false;
	b += 8;
	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	if (e - b >= 2 && *b == '"' && e[-1] == '"')
		b++, e--;
	size_t n = (size_t)(e - b);
	bool pwd = (n == 4 && memcmp(b, "$PWD", 4) == 0) || (n == 6 && memcmp(b, "${PWD}", 6) == 0);
	if (pwd && !pwd_is_cwd(p))
		return false;
	if (!pwd) {
		if (n == 0 || b[0] == '-' || strspn(b, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						"0123456789_./+-") < n)
			return false;
		const char *last = e;
		while (last > b && last[-1] == '/')
			last--;
		const char *name = last;
		while (name > b && name[-1] != '/')
			name--;
		if (name == last || (last - name == 1 && *name == '.') ||
		    (last - name == 2 && name[0] == '.' && name[1] == '.'))
			return false;
		cells_addn(&w->cells, b, n, CF_QUOTED);
	} else {
		cells_add(&w->cells, '~', CF_HOME | CF_PWD | CF_QUOTED);
	}
	cells_addn(&w->cells, "/..", 3, CF_QUOTED);
	return true;
}

/* ${…}: p->pos at '$'. */
static int read_param(struct sh_parser *p, struct sh_word *w, bool in_dq)
{
	size_t st = p->pos;
	const char *s = p->s;
	if (p->len - st >= 7 && memcmp(s + st, "${HOME}", 7) == 0) {
		p->pos += 7;
		cells_add(&w->cells, '~', CF_HOME | CF_QUOTED);
		return 0;
	}
	{
		size_t e = st + 2;
		while (e < p->len && is_name_char(s[e]))
			e++;
		if (e > st + 2 && e < p->len && s[e] == '}' && is_name_start(s[st + 2])) {
			p->pos = e + 1;
			if (!pwd_var(p, w, s + st + 2, e - st - 2) &&
			    !known_var(p, w, s + st + 2, e - st - 2, in_dq))
				add_param(p, w, st, s + st + 2, e - st - 2);
			return 0;
		}
	}
	int rc = sh_nest_enter(p, st);
	if (rc < 0)
		return rc;
	struct sh_word scratch = {0};
	p->pos += 2;
	size_t depth = 0;
	rc = 0;
	while (rc == 0) {
		if (p->pos >= p->len) {
			rc = sh_fail_at(p, st, -EINVAL, "unterminated ${…}");
			break;
		}
		char c = s[p->pos];
		if (c == '\\') {
			p->pos += 2;
			if (p->pos > p->len)
				p->pos = p->len;
		} else if (c == '\'' && !in_dq) {
			const char *q = memchr(s + p->pos + 1, '\'', p->len - p->pos - 1);
			if (!q)
				rc = sh_fail_at(p, p->pos, -EINVAL, "unterminated single quote");
			else
				p->pos = (size_t)(q - s) + 1;
		} else if (c == '"') {
			p->pos++;
			rc = read_dq(p, &scratch, false);
		} else if (c == '$') {
			rc = read_dollar(p, &scratch, in_dq);
		} else if (c == '`') {
			rc = read_backquote(p, &scratch, in_dq);
		} else if (c == '{') {
			depth++;
			p->pos++;
		} else if (c == '}') {
			p->pos++;
			if (depth == 0)
				break;
			depth--;
		} else {
			if (c == '=')
				sh_var_poison_all(p->vars); /* ${x=…} / ${x:=…} assign */
			p->pos++;
		}
		if (scratch.cells.len > 4096)
			cells_free(&scratch.cells);
	}
	cells_free(&scratch.cells);
	sh_nest_leave(p);
	if (rc < 0)
		return rc;
	add_opaque(p, w, st);
	return 0;
}

/* Arithmetic text after "((" / "$((" up to the closing "))". */
int sh_read_arith(struct sh_parser *p, struct sh_word *w, size_t open_pos)
{
	sh_var_poison_all(p->vars); /* arithmetic may assign */
	int rc = sh_nest_enter(p, open_pos);
	if (rc < 0)
		return rc;
	const char *s = p->s;
	size_t depth = 0;
	struct sh_word scratch = {0};
	rc = 0;
	while (rc == 0) {
		if (p->pos >= p->len) {
			rc = sh_fail_at(p, open_pos, -EINVAL, "unterminated arithmetic");
			break;
		}
		char c = s[p->pos];
		if (c == '\\') {
			p->pos += 2;
			if (p->pos > p->len)
				p->pos = p->len;
		} else if (c == '\'') {
			const char *q = memchr(s + p->pos + 1, '\'', p->len - p->pos - 1);
			if (!q)
				rc = sh_fail_at(p, p->pos, -EINVAL, "unterminated single quote");
			else
				p->pos = (size_t)(q - s) + 1;
		} else if (c == '"') {
			p->pos++;
			rc = read_dq(p, &scratch, false);
		} else if (c == '$') {
			rc = read_dollar(p, &scratch, false);
		} else if (c == '`') {
			rc = read_backquote(p, &scratch, false);
		} else if (c == '(') {
			depth++;
			p->pos++;
		} else if (c == ')') {
			if (depth == 0) {
				if (p->pos + 1 < p->len && s[p->pos + 1] == ')') {
					p->pos += 2;
					break;
				}
				rc = sh_fail_at(p, p->pos, -EINVAL, "unbalanced ')' in arithmetic");
				break;
			}
			depth--;
			p->pos++;
		} else
			p->pos++;
		if (scratch.cells.len > 4096)
			cells_free(&scratch.cells);
	}
	if (scratch.unres)
		w->unres = true;
	cells_free(&scratch.cells);
	sh_nest_leave(p);
	return rc;
}

/* $[ … ] (obsolete arithmetic). */
static int read_old_arith(struct sh_parser *p, struct sh_word *w)
{
	size_t st = p->pos;
	size_t depth = 0;
	p->pos += 2;
	sh_var_poison_all(p->vars);
	while (p->pos < p->len) {
		char c = p->s[p->pos++];
		if (c == '[')
			depth++;
		else if (c == ']') {
			if (depth == 0) {
				add_opaque(p, w, st);
				return 0;
			}
			depth--;
		}
	}
	return sh_fail_at(p, st, -EINVAL, "unterminated $[…]");
}

static int read_dollar(struct sh_parser *p, struct sh_word *w, bool in_dq)
{
	size_t st = p->pos;
	const char *s = p->s;
	char n = st + 1 < p->len ? s[st + 1] : '\0';
	int rc;
	if (n == '\'' && !in_dq)
		return read_ansi_c(p, w);
	if (n == '"' && !in_dq) {
		p->pos += 2;
		return read_dq(p, w, false);
	}
	if (n == '(') {
		if (st + 2 < p->len && s[st + 2] == '(' && sh_arith_probe(s, p->len, st + 3)) {
			p->pos = st + 3;
			rc = sh_read_arith(p, w, st);
			if (rc < 0)
				return rc;
			add_opaque(p, w, st);
			return 0;
		}
		p->pos = st + 2;
		rc = sh_parse_subst(p, "$(…)", p->stdin_piped);
		if (rc < 0)
			return rc;
		if (!static_dirname(p, w, st))
			add_opaque(p, w, st);
		return 0;
	}
	if (n == '[')
		return read_old_arith(p, w);
	if (n == '{')
		return read_param(p, w, in_dq);
	if (is_name_start(n)) {
		size_t e = st + 1;
		while (e < p->len && is_name_char(s[e]))
			e++;
		p->pos = e;
		if (e - st - 1 == 4 && memcmp(s + st + 1, "HOME", 4) == 0) {
			cells_add(&w->cells, '~', CF_HOME | CF_QUOTED);
			return 0;
		}
		if (pwd_var(p, w, s + st + 1, e - st - 1) || known_var(p, w, s + st + 1, e - st - 1, in_dq))
			return 0;
		add_param(p, w, st, s + st + 1, e - st - 1);
		return 0;
	}
	if ((n >= '0' && n <= '9') || (n && strchr("@*#?-$!", n))) {
		p->pos = st + 2;
		add_opaque(p, w, st);
		return 0;
	}
	cells_add(&w->cells, '$', in_dq ? CF_QUOTED : 0);
	p->pos++;
	return 0;
}

static int read_backquote(struct sh_parser *p, struct sh_word *w, bool in_dq)
{
	size_t st = p->pos;
	const char *s = p->s;
	struct sbuf in = {0};
	size_t i = st + 1;
	while (i < p->len && s[i] != '`') {
		if (s[i] == '\\' && i + 1 < p->len) {
			char n = s[i + 1];
			if (n == '$' || n == '`' || n == '\\' || (in_dq && n == '"')) {
				sbuf_putc(&in, n);
				i += 2;
				continue;
			}
			sbuf_putc(&in, '\\');
			sbuf_putc(&in, n);
			i += 2;
			continue;
		}
		sbuf_putc(&in, s[i]);
		i++;
	}
	if (i >= p->len) {
		sbuf_free(&in);
		return sh_fail_at(p, st, -EINVAL, "unterminated `…`");
	}
	if (in.oom) {
		sbuf_free(&in);
		return oom(p);
	}
	p->pos = i + 1;
	int rc = sh_parse_backquote(p, in.s ? in.s : "", in.len, st);
	sbuf_free(&in);
	if (rc < 0)
		return rc;
	add_opaque(p, w, st);
	return 0;
}

int sh_read_word(struct sh_parser *p, struct sh_word *w)
{
	memset(w, 0, sizeof(*w));
	w->start = p->pos;
	w->sub_begin = p->nodes->n;
	const char *s = p->s;
	int rc = 0;
	while (p->pos < p->len && rc == 0) {
		char c = s[p->pos];
		if (strchr(" \t\n;&|()<>", c)) {
			if ((c == '<' || c == '>') && p->pos + 1 < p->len && s[p->pos + 1] == '(') {
				size_t st = p->pos;
				p->pos += 2;
				rc = sh_parse_subst(p, c == '<' ? "<(…)" : ">(…)",
						    c == '>' ? true : p->stdin_piped);
				if (rc == 0) {
					cells_addn(&w->cells, s + st, p->pos - st, CF_QUOTED);
					w->procsub = true;
				}
				continue;
			}
			break;
		}
		switch (c) {
		case '\\':
			if (p->pos + 1 < p->len && s[p->pos + 1] == '\n') {
				p->pos += 2;
				break;
			}
			w->quoted = true;
			if (p->pos + 1 >= p->len) {
				cells_add(&w->cells, '\\', CF_QUOTED);
				p->pos++;
				break;
			}
			p->pos++;
			add_text_char(p, w, CF_QUOTED);
			break;
		case '\'':
			rc = read_squote(p, w);
			break;
		case '"':
			p->pos++;
			rc = read_dq(p, w, false);
			break;
		case '$':
			rc = read_dollar(p, w, false);
			break;
		case '`':
			rc = read_backquote(p, w, false);
			break;
		default:
			add_text_char(p, w, 0);
			break;
		}
	}
	w->end = p->pos;
	w->sub_end = p->nodes->n;
	if (rc == 0 && w->cells.oom)
		rc = oom(p);
	if (rc == 0)
		rc = sh_budget(p->ctx, 1);
	if (rc < 0)
		sh_word_free(w);
	return rc;
}

int sh_expand_body(struct sh_parser *parent, const char *body, size_t len, size_t body_pos,
		   char **out, bool *unres, size_t *sub_begin, size_t *sub_end)
{
	(void)body_pos;
	struct sh_parser sub = {
		.ctx = parent->ctx,
		.nodes = parent->nodes,
		.s = body,
		.len = len,
		.via = parent->via,
		.depth = parent->depth,
		.nest = parent->nest,
		.stdin_piped = parent->stdin_piped,
		.what = "in here-document ",
		.vars = parent->vars,
		.binds = parent->binds,
	};
	struct sh_word w = {0};
	*sub_begin = parent->nodes->n;
	int rc = read_dq(&sub, &w, true);
	/* a here-document begun in a substitution of the body ($(cat <<E)) has
	 * only the rest of the body to read from */
	if (rc == 0)
		rc = sh_read_heredocs(&sub);
	for (size_t i = 0; i < sub.npend; i++)
		free(sub.pend[i].delim);
	free(sub.pend);
	*sub_end = parent->nodes->n;
	if (rc == 0) {
		*out = sh_word_text(&w, unres);
		if (!*out)
			rc = oom(parent);
	}
	sh_word_free(&w);
	return rc;
}

int sh_normalize_lookalike(char **text, bool cmd, bool *flag)
{
	char *t = *text;
	size_t n = strlen(t);
	for (size_t i = 0; i < n;) {
		int kind;
		size_t l = lookalike_at(t, n, i, &kind);
		if (!l) {
			i++;
			continue;
		}
		if (cmd || kind == LA_SPACE)
			*flag = true;
		if (!cmd && kind == LA_DASH && i == 0) {
			*flag = true;
			char *r = malloc(n - l + 2);
			if (!r)
				return -ENOMEM;
			r[0] = '-';
			memcpy(r + 1, t + l, n - l + 1);
			free(t);
			*text = t = r;
			n = strlen(t);
			i = 1;
			continue;
		}
		i += l;
	}
	return 0;
}

/* $HOME right after an unquoted '=', '@' or ':' (--out=$HOME/x, curl -d
 * @$HOME/f, PATH-like lists) is read as "~": the tool takes what follows
 * the separator as a path of its own, and the word as a whole keeps its
 * lexical class (it starts with the same prefix either way). */
static bool home_after_separator(const char *c, const uint8_t *f, size_t first, size_t i)
{
	size_t k = i;
	while (k > first && (f[k - 1] & CF_NULLQ))
		k--;
	return k > first && !(f[k - 1] & (CF_EXP | CF_HOME)) && strchr("=@:", c[k - 1]);
}

/* Text of cells [0, n) without markers; CF_HOME (and CF_PWD) handled. */
static char *cells_text(const char *c, const uint8_t *f, size_t n, bool *unres)
{
	struct sbuf b = {0};
	sbuf_put(&b, "", 0);
	size_t first = 0;
	while (first < n && (f[first] & CF_NULLQ))
		first++;
	for (size_t i = 0; i < n; i++) {
		if (f[i] & CF_NULLQ)
			continue;
		if (f[i] & CF_HOME) {
			size_t j = i + 1;
			while (j < n && (f[j] & CF_NULLQ))
				j++;
			bool pwd = f[i] & CF_PWD;
			if ((i == first || (!pwd && home_after_separator(c, f, first, i))) &&
			    (j == n || c[j] == '/')) {
				sbuf_puts(&b, pwd ? "~+" : "~");
			} else {
				sbuf_puts(&b, pwd ? "$PWD" : "$HOME");
				*unres = true;
			}
			continue;
		}
		if (f[i] & CF_EXP)
			*unres = true;
		sbuf_putc(&b, c[i]);
	}
	return sbuf_take(&b);
}

char *sh_word_text(const struct sh_word *w, bool *unres)
{
	bool u = w->unres;
	char *t = cells_text(w->cells.c, w->cells.f, w->cells.len, &u);
	if (unres)
		*unres = u;
	return t;
}

char *sh_word_text_from(const struct sh_word *w, size_t from, bool *unres)
{
	bool u = false;
	if (from > w->cells.len)
		from = w->cells.len;
	char *t = cells_text(w->cells.c + from, w->cells.f + from, w->cells.len - from, &u);
	if (unres)
		*unres = u;
	return t;
}

bool sh_word_is(const struct sh_word *w, const char *s)
{
	size_t n = strlen(s);
	if (w->quoted || w->unres || w->cells.len != n)
		return false;
	return memcmp(w->cells.c, s, n) == 0;
}

size_t sh_word_assign_len(const struct sh_word *w)
{
	const char *c = w->cells.c;
	const uint8_t *f = w->cells.f;
	size_t n = w->cells.len, i = 0;
	if (n == 0 || f[0] || !is_name_start(c[0]))
		return 0;
	while (i < n && !f[i] && is_name_char(c[i]))
		i++;
	if (i < n && !f[i] && c[i] == '[') {
		size_t d = 0;
		for (; i < n; i++) {
			if (f[i])
				continue;
			if (c[i] == '[')
				d++;
			else if (c[i] == ']' && --d == 0)
				break;
		}
		if (i >= n)
			return 0;
		i++;
	}
	if (i < n && !f[i] && c[i] == '+')
		i++;
	if (i < n && !f[i] && c[i] == '=')
		return i + 1;
	return 0;
}

/* ---- brace expansion ----------------------------------------------------- */

struct cstr {
	char *c;
	uint8_t *f;
	size_t n;
};

struct clist {
	struct cstr *v;
	size_t n, cap;
	size_t bytes;
};

struct bx {
	struct sh_parser *p;
	size_t calls;
	bool too_big;
	bool unres; /* a sequence produced '\\' or '`': bash re-reads those */
};

static void clist_free(struct clist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].c);
		free(l->v[i].f);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Append the concatenation a + b (either may be NULL/empty). */
static int clist_push2(struct bx *bx, struct clist *l, const char *ac, const uint8_t *af,
		       size_t an, const char *bc, const uint8_t *bf, size_t bn)
{
	if (l->n >= SH_MAX_FIELDS || l->bytes + an + bn > SH_MAX_FIELD_BYTES) {
		bx->too_big = true;
		return -E2BIG;
	}
	if (sh_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)) < 0)
		return -ENOMEM;
	struct cstr *c = &l->v[l->n];
	c->n = an + bn;
	c->c = malloc(c->n + 1);
	c->f = malloc(c->n + 1);
	if (!c->c || !c->f) {
		free(c->c);
		free(c->f);
		return -ENOMEM;
	}
	if (an) {
		memcpy(c->c, ac, an);
		memcpy(c->f, af, an);
	}
	if (bn) {
		memcpy(c->c + an, bc, bn);
		memcpy(c->f + an, bf, bn);
	}
	c->c[c->n] = '\0';
	c->f[c->n] = 0;
	l->n++;
	l->bytes += c->n;
	return 0;
}

static bool special(const uint8_t *f, size_t i)
{
	return (f[i] & (CF_QUOTED | CF_EXP | CF_NULLQ)) == 0;
}

/* Parse a sequence bound: integer (sign allowed) or single letter. */
static bool seq_int(const char *c, const uint8_t *f, size_t n, intmax_t *v)
{
	if (n == 0 || n > 18)
		return false;
	size_t i = 0;
	bool neg = false;
	for (size_t k = 0; k < n; k++)
		if (!special(f, k))
			return false;
	if (c[0] == '-' || c[0] == '+') {
		neg = c[0] == '-';
		i = 1;
	}
	if (i >= n)
		return false;
	intmax_t x = 0;
	for (; i < n; i++) {
		if (c[i] < '0' || c[i] > '9')
			return false;
		x = x * 10 + (c[i] - '0');
	}
	*v = neg ? -x : x;
	return true;
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* {x..y[..incr]} → tack; returns 1 if valid, 0 if not a sequence, <0 error. */
static int expand_seq(struct bx *bx, const char *c, const uint8_t *f, size_t n, struct clist *out)
{
	/* split at ".." (unquoted) */
	size_t dots[3], nd = 0;
	for (size_t i = 0; i + 1 < n && nd < 3; i++)
		if (c[i] == '.' && c[i + 1] == '.' && special(f, i) && special(f, i + 1)) {
			dots[nd++] = i;
			i++;
		}
	if (nd != 1 && nd != 2)
		return 0;
	size_t l0 = 0, l1 = dots[0];
	size_t r0 = dots[0] + 2, r1 = nd == 2 ? dots[1] : n;
	intmax_t incr = 1;
	if (nd == 2) {
		if (!seq_int(c + dots[1] + 2, f + dots[1] + 2, n - dots[1] - 2, &incr))
			return 0;
	}
	if (incr < 0)
		incr = -incr;
	if (incr == 0)
		incr = 1;
	intmax_t a, b;
	bool chars = false;
	if (seq_int(c + l0, f + l0, l1 - l0, &a) && seq_int(c + r0, f + r0, r1 - r0, &b)) {
		;
	} else if (l1 - l0 == 1 && r1 - r0 == 1 && special(f, l0) && special(f, r0) &&
		   is_alpha(c[l0]) && is_alpha(c[r0])) {
		a = (unsigned char)c[l0];
		b = (unsigned char)c[r0];
		chars = true;
	} else
		return 0;
	int width = 0;
	if (!chars) {
		size_t ln = l1 - l0, rn = r1 - r0;
		const char *lc = c + l0, *rc = c + r0;
		bool pad = (ln > 1 && lc[0] == '0') || (rn > 1 && rc[0] == '0') ||
			   (ln > 2 && lc[0] == '-' && lc[1] == '0') ||
			   (rn > 2 && rc[0] == '-' && rc[1] == '0');
		if (pad)
			width = (int)(ln > rn ? ln : rn);
	}
	intmax_t span = a > b ? a - b : b - a;
	if (span / incr + 1 > SH_MAX_FIELDS) {
		bx->too_big = true;
		return -E2BIG;
	}
	for (intmax_t x = a;; x += a <= b ? incr : -incr) {
		if ((a <= b && x > b) || (a > b && x < b))
			break;
		char buf[64];
		int len;
		if (chars) {
			len = snprintf(buf, sizeof(buf), "%c", (char)x);
			/* bash inserts these into the word text, where a backslash
			 * then quotes the next character and a backquote starts a
			 * command substitution: do not pretend to know the result */
			if (x == '\\' || x == '`')
				bx->unres = true;
		}
		else
			len = snprintf(buf, sizeof(buf), "%0*jd", width, x);
		uint8_t fl[64];
		memset(fl, CF_QUOTED, sizeof(fl));
		int rc = clist_push2(bx, out, buf, fl, (size_t)len, NULL, NULL, 0);
		if (rc < 0)
			return rc;
	}
	return 1;
}

static int brace_expand(struct bx *bx, const char *c, const uint8_t *f, size_t n,
			struct clist *out);

/* result = a × b (concatenations), stored into a. */
static int clist_product(struct bx *bx, struct clist *a, const struct clist *b)
{
	struct clist r = {0};
	int rc = 0;
	for (size_t i = 0; i < a->n && rc == 0; i++)
		for (size_t j = 0; j < b->n && rc == 0; j++)
			rc = clist_push2(bx, &r, a->v[i].c, a->v[i].f, a->v[i].n, b->v[j].c,
					 b->v[j].f, b->v[j].n);
	clist_free(a);
	if (rc < 0) {
		clist_free(&r);
		return rc;
	}
	*a = r;
	return 0;
}

static int brace_expand(struct bx *bx, const char *c, const uint8_t *f, size_t n,
			struct clist *out)
{
	if (++bx->calls > 100000) {
		bx->too_big = true;
		return -E2BIG;
	}
	/* match braces with a stack; note level-0 ',' and '..' per pair */
	size_t *stack = NULL, sp = 0, scap = 0;
	size_t best_open = SIZE_MAX, best_close = 0;
	int rc = 0;
	bool *sep = calloc(n + 1, sizeof(bool));
	if (!sep)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!special(f, i))
			continue;
		if (c[i] == '{') {
			if (sh_vec_reserve((void **)&stack, &scap, sp + 1, sizeof(*stack)) < 0) {
				rc = -ENOMEM;
				break;
			}
			stack[sp++] = i;
		} else if (c[i] == '}' && sp) {
			size_t o = stack[--sp];
			if (sep[o] && o < best_open) {
				best_open = o;
				best_close = i;
			}
		} else if (sp && c[i] == ',') {
			sep[stack[sp - 1]] = true;
		} else if (sp && c[i] == '.' && i + 2 < n && c[i + 1] == '.' && special(f, i + 1) &&
			   !(c[i + 2] == '}' && special(f, i + 2))) {
			sep[stack[sp - 1]] = true;
		}
	}
	free(stack);
	free(sep);
	if (rc < 0)
		return rc;
	if (best_open == SIZE_MAX)
		return clist_push2(bx, out, c, f, n, NULL, NULL, 0);

	size_t i = best_open, j = best_close;
	const char *ac = c + i + 1;
	const uint8_t *af = f + i + 1;
	size_t an = j - i - 1;
	bool flat_comma = false;
	for (size_t k = 0; k < an; k++)
		if (special(af, k) && ac[k] == ',')
			flat_comma = true;
	struct clist tack = {0};
	if (!flat_comma) {
		rc = expand_seq(bx, ac, af, an, &tack);
		if (rc < 0)
			goto fail;
		if (rc == 0) {
			if (j + 1 >= n) {
				clist_free(&tack);
				return clist_push2(bx, out, c, f, n, NULL, NULL, 0);
			}
			rc = clist_push2(bx, &tack, c + i, f + i, j - i + 1, NULL, NULL, 0);
			if (rc < 0)
				goto fail;
		}
	} else {
		/* split amble at level-0 commas; expand each piece */
		size_t st = 0, lvl = 0;
		for (size_t k = 0; k <= an; k++) {
			if (k < an && special(af, k)) {
				if (ac[k] == '{')
					lvl++;
				else if (ac[k] == '}' && lvl)
					lvl--;
			}
			if (k == an || (lvl == 0 && special(af, k) && ac[k] == ',')) {
				rc = brace_expand(bx, ac + st, af + st, k - st, &tack);
				if (rc < 0)
					goto fail;
				st = k + 1;
			}
		}
	}
	struct clist res = {0};
	rc = clist_push2(bx, &res, c, f, i, NULL, NULL, 0);
	if (rc == 0)
		rc = clist_product(bx, &res, &tack);
	if (rc == 0 && j + 1 < n) {
		struct clist post = {0};
		rc = brace_expand(bx, c + j + 1, f + j + 1, n - j - 1, &post);
		if (rc == 0)
			rc = clist_product(bx, &res, &post);
		clist_free(&post);
	}
	for (size_t k = 0; k < res.n && rc == 0; k++)
		rc = clist_push2(bx, out, res.v[k].c, res.v[k].f, res.v[k].n, NULL, NULL, 0);
	clist_free(&res);
fail:
	clist_free(&tack);
	return rc;
}

/* Would bash expand the field as a pathname pattern? */
static bool is_glob(const char *c, const uint8_t *f, size_t len)
{
	bool open = false;
	for (size_t i = 0; i < len; i++) {
		if (!special(f, i))
			continue;
		if (c[i] == '*' || c[i] == '?' || (open && c[i] == ']'))
			return true;
		open = open || c[i] == '[';
	}
	return false;
}

static bool has_static_text(const char *c, const uint8_t *f, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!(f[i] & CF_EXP) && c[i] != ' ' && c[i] != '\t' && c[i] != '\n' && c[i] != '\0')
			return true;
	return false;
}

static int add_field(struct sh_parser *p, const struct sh_word *w, struct sh_node *n,
		     const char *c, const uint8_t *f, size_t len, bool unres)
{
	/* an unquoted word that expands to nothing is removed */
	if (len == 0)
		return 0;
	if (sh_vec_reserve((void **)&n->argv, &n->cap, n->argc + 2, sizeof(*n->argv)) < 0)
		return oom(p);
	struct sh_field *fl = &n->argv[n->argc];
	memset(fl, 0, sizeof(*fl));
	bool u = unres;
	fl->text = cells_text(c, f, len, &u);
	if (!fl->text)
		return oom(p);
	fl->unres = u;
	fl->lookalike = w->lookalike;
	fl->lookalike_q = w->lookalike_q;
	fl->procsub = w->procsub;
	fl->env_values = u && !w->unres_other;
	fl->env_only = fl->env_values && has_static_text(c, f, len);
	fl->glob = is_glob(c, f, len);
	fl->sub_begin = w->sub_begin;
	fl->sub_end = w->sub_end;
	n->argc++;
	return sh_budget(p->ctx, 1);
}

int sh_word_fields(struct sh_parser *p, const struct sh_word *w, struct sh_node *n)
{
	const char *c = w->cells.c ? w->cells.c : "";
	const uint8_t *f = w->cells.f ? w->cells.f : (const uint8_t *)"";
	size_t len = w->cells.len;
	size_t braces = 0;
	for (size_t i = 0; i < len; i++)
		if (special(f, i) && c[i] == '{')
			braces++;
	if (braces == 0)
		return add_field(p, w, n, c, f, len, false);
	if (braces > 256)
		return add_field(p, w, n, c, f, len, true);
	struct bx bx = {.p = p};
	struct clist out = {0};
	int rc = brace_expand(&bx, c, f, len, &out);
	if (rc < 0) {
		clist_free(&out);
		if (bx.too_big)
			return sh_fail_at(p, w->start, -E2BIG, "brace expansion too large");
		return oom(p);
	}
	for (size_t i = 0; i < out.n && rc == 0; i++)
		rc = add_field(p, w, n, out.v[i].c, out.v[i].f, out.v[i].n, bx.unres);
	clist_free(&out);
	return rc;
}
