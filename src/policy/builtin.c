/* Built-in detectors that rules refer to with `builtin:`, and the folding of
 * look-alike characters that every command goes through before matching. */
#include "policy/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fork bombs --------------------------------------------------------------
 * A function whose body runs the function itself in a pipeline or in the
 * background: `:(){ :|:& };:`, `bomb() { bomb | bomb & }; bomb`,
 * `function f { f & f; }`. Textual, so it also works when the shell parser
 * gave up; bounded (at most 256 definitions, bodies of 4 KiB). */

static bool name_char(unsigned char c)
{
	return c > ' ' && !strchr(";&|(){}<>'\"`$\\", c);
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Does body (len) run name in a pipe or in the background? */
static bool body_forks_itself(const char *body, size_t len, const char *name, size_t nlen)
{
	for (size_t i = 0; i + nlen <= len; i++) {
		if (memcmp(body + i, name, nlen) != 0)
			continue;
		if (i > 0 && name_char((unsigned char)body[i - 1]))
			continue;
		if (i + nlen < len && name_char((unsigned char)body[i + nlen]))
			continue;
		/* after: spaces then `|` (not `||`) or `&` (not `&&`, `&>`) */
		size_t j = i + nlen;
		while (j < len && (body[j] == ' ' || body[j] == '\t'))
			j++;
		if (j < len && body[j] == '|' && (j + 1 >= len || body[j + 1] != '|'))
			return true;
		if (j < len && body[j] == '&' && (j + 1 >= len || (body[j + 1] != '&' && body[j + 1] != '>')))
			return true;
		/* before: `|` (not `||`) then spaces */
		size_t k = i;
		while (k > 0 && (body[k - 1] == ' ' || body[k - 1] == '\t'))
			k--;
		if (k > 0 && body[k - 1] == '|' && (k < 2 || body[k - 2] != '|'))
			return true;
	}
	return false;
}

static bool check_definition(const char *text, size_t len, size_t body_at, const char *name,
			     size_t nlen)
{
	size_t i = body_at;
	while (i < len && is_space(text[i]))
		i++;
	if (i >= len || (text[i] != '{' && text[i] != '('))
		return false;
	char open = text[i], close = open == '{' ? '}' : ')';
	size_t start = ++i, nest = 1;
	size_t limit = len - start > 4096 ? start + 4096 : len;
	for (; i < limit; i++) {
		if (text[i] == open)
			nest++;
		else if (text[i] == close && --nest == 0)
			break;
	}
	return body_forks_itself(text + start, i - start, name, nlen);
}

static bool word_at(const char *text, size_t len, size_t i, const char *w)
{
	size_t n = strlen(w);
	return len - i >= n && memcmp(text + i, w, n) == 0 &&
	       (i == 0 || !name_char((unsigned char)text[i - 1])) &&
	       (i + n == len || !name_char((unsigned char)text[i + n]));
}

/* Does body (up to `done`) start a background job (a lone `&`) and never
 * leave or wait (break, exit, return, wait)? */
static bool body_backgrounds(const char *text, size_t len, size_t from)
{
	bool bg = false;
	size_t end = len - from > 4096 ? from + 4096 : len; /* bounded: lines may hold many loops */
	for (size_t i = from; i < end; i++) {
		if (word_at(text, len, i, "done"))
			return bg;
		if (word_at(text, len, i, "break") || word_at(text, len, i, "exit") ||
		    word_at(text, len, i, "return") || word_at(text, len, i, "wait"))
			return false;
		if (text[i] == '&' && (i + 1 >= len || (text[i + 1] != '&' && text[i + 1] != '>')) &&
		    (i == 0 || (text[i - 1] != '&' && text[i - 1] != '>' && text[i - 1] != '<')))
			bg = true;
	}
	return false;
}

/* An endless loop (while true / while : / until false / for ((;;))) whose
 * body starts background jobs: processes pile up like a fork bomb. */
static bool endless_background_loop(const char *text, size_t len)
{
	static const char *const forever[] = {"while true", "while :", "while [ 1 ]", "while ((1))",
					      "while (( 1 ))", "while 1", "until false", "for ((;;))",
					      "for (( ; ; ))"};
	for (size_t i = 0; i < len; i++)
		for (size_t k = 0; k < sizeof(forever) / sizeof(*forever); k++) {
			size_t n = strlen(forever[k]);
			if (len - i >= n && memcmp(text + i, forever[k], n) == 0 &&
			    (i == 0 || !name_char((unsigned char)text[i - 1])) &&
			    body_backgrounds(text, len, i + n))
				return true;
		}
	return false;
}

bool builtin_fork_bomb(const char *text, size_t len)
{
	unsigned defs = 0;
	if (endless_background_loop(text, len))
		return true;
	for (size_t i = 0; i < len && defs < 256; i++) {
		if (text[i] == '(') {
			/* NAME ( ) */
			size_t j = i + 1;
			while (j < len && (text[j] == ' ' || text[j] == '\t'))
				j++;
			if (j >= len || text[j] != ')')
				continue;
			size_t e = i;
			while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t'))
				e--;
			size_t s = e;
			while (s > 0 && name_char((unsigned char)text[s - 1]) && e - s < 256)
				s--;
			if (s == e)
				continue;
			defs++;
			if (check_definition(text, len, j + 1, text + s, e - s))
				return true;
		} else if (len - i > 9 && memcmp(text + i, "function", 8) == 0 && is_space(text[i + 8]) &&
			   (i == 0 || !name_char((unsigned char)text[i - 1]))) {
			size_t s = i + 9;
			while (s < len && is_space(text[s]))
				s++;
			size_t e = s;
			while (e < len && name_char((unsigned char)text[e]) && e - s < 256)
				e++;
			if (s == e)
				continue;
			defs++;
			size_t b = e;
			while (b < len && (text[b] == ' ' || text[b] == '\t'))
				b++;
			if (b + 1 < len && text[b] == '(') { /* function f () { ... } */
				size_t c = b + 1;
				while (c < len && (text[c] == ' ' || text[c] == '\t'))
					c++;
				if (c < len && text[c] == ')')
					b = c + 1;
			}
			if (check_definition(text, len, b, text + s, e - s))
				return true;
		}
	}
	return false;
}

bool builtin_fork_bomb_unquoted(const char *text, size_t len)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return builtin_fork_bomb(text, len); /* fail closed */
	memcpy(copy, text, len);
	copy[len] = '\0';
	for (size_t i = 0; i < len; i++) {
		if (copy[i] == '\\') {
			i++;
		} else if (copy[i] == '\'') {
			size_t j = i + 1;
			while (j < len && copy[j] != '\'')
				copy[j++] = ' ';
			i = j;
		} else if (copy[i] == '"') {
			size_t j = i + 1;
			while (j < len && copy[j] != '"') {
				if (copy[j] == '\\' && j + 1 < len)
					copy[j++] = ' ';
				copy[j++] = ' ';
			}
			i = j;
		}
	}
	bool r = builtin_fork_bomb(copy, len);
	free(copy);
	return r;
}

bool builtin_non_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return true;
	return false;
}

/* ---- look-alike folding ---------------------------------------------------- */

static unsigned decode(const unsigned char *s, unsigned *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*cp = ((unsigned)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
		return 2;
	}
	if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*cp = ((unsigned)(s[0] & 0x0f) << 12) | ((unsigned)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
		return 3;
	}
	*cp = 0xfffd;
	return 1; /* invalid or 4-byte: copy one byte as is */
}

enum fold { KEEP, DASH, DROP, SPACE, ASCII };

static enum fold fold_of(unsigned cp, char *ascii)
{
	if ((cp >= 0x2010 && cp <= 0x2015) || cp == 0x2212 || cp == 0xfe58 || cp == 0xfe63 ||
	    cp == 0xff0d || cp == 0x2043 || cp == 0x02d7)
		return DASH;
	if (cp == 0x200b || cp == 0x200c || cp == 0x200d || cp == 0x2060 || cp == 0xfeff ||
	    cp == 0x00ad || cp == 0x180e)
		return DROP;
	if (cp == 0x00a0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x202f ||
	    cp == 0x205f || cp == 0x3000 || cp == 0x0085)
		return SPACE;
	if (cp >= 0xff01 && cp <= 0xff5e) { /* fullwidth ASCII */
		*ascii = (char)(cp - 0xfee0);
		return ASCII;
	}
	if (cp == 0x2044 || cp == 0x2215 || cp == 0xff0f) { /* fraction / division slash */
		*ascii = '/';
		return ASCII;
	}
	return KEEP;
}

static int append(char ***out, size_t *n, size_t *cap, char *w)
{
	if (*n + 2 > *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		char **v = realloc(*out, c * sizeof(*v));
		if (!v) {
			free(w);
			return -ENOMEM;
		}
		*out = v;
		*cap = c;
	}
	(*out)[(*n)++] = w;
	(*out)[*n] = NULL;
	return 0;
}

/* ---- IPv4 literals ------------------------------------------------------------
 * Programs that resolve a host with inet_aton (curl, wget, ping, nc) read
 * 0xa9fea9fe, 2852039166, 0251.0376.0251.0376 and 169.254.43518 as
 * 169.254.169.254. A URL's host (after "://" or "@", or a word's host
 * followed by '/' or ':') spelt as such a number is rewritten as its dotted
 * quad, so rules name an address once. A bare number without a scheme
 * stays as it is (head -n 2852039166 is a count, not a host). */
static char *canonical_ipv4_host(const char *w)
{
	const char *h = strstr(w, "://");
	h = h ? h + 3 : w;
	const char *end = h + strcspn(h, "/?#");
	const char *at = memchr(h, '@', (size_t)(end - h));
	bool scheme = h != w || at;
	if (at)
		h = at + 1;
	size_t hl = strcspn(h, "/:?#");
	if (hl == 0 || hl > 40 || strspn(h, "0123456789abcdefABCDEFxX.") != hl)
		return NULL;
	if (!scheme && (h[hl] != '/' && h[hl] != ':'))
		return NULL;
	char host[48];
	memcpy(host, h, hl);
	host[hl] = '\0';
	struct in_addr a;
	if (!strpbrk(host, "0123456789") || inet_aton(host, &a) == 0)
		return NULL;
	char dotted[INET_ADDRSTRLEN];
	if (!inet_ntop(AF_INET, &a, dotted, sizeof(dotted)) || strcmp(dotted, host) == 0)
		return NULL;
	if (!scheme && strchr(host, '.') == NULL && strstr(host, "0x") == NULL &&
	    strstr(host, "0X") == NULL && ntohl(a.s_addr) < (1u << 24))
		return NULL; /* "12/…" reads as a path, not a host */
	char *r = NULL;
	if (asprintf(&r, "%.*s%s%s", (int)(h - w), w, dotted, h + hl) < 0)
		return NULL;
	return r;
}

int builtin_normalise_word(const char *w, char ***out, size_t *n, size_t *cap)
{
	size_t len = strlen(w);
	char *cur = malloc(len + 1);
	if (!cur)
		return -ENOMEM;
	size_t o = 0;
	bool any_split = false;
	const unsigned char *s = (const unsigned char *)w;
	while (*s) {
		unsigned cp;
		unsigned k = decode(s, &cp);
		char ascii = 0;
		switch (cp < 0x80 ? KEEP : fold_of(cp, &ascii)) {
		case KEEP:
			memcpy(cur + o, s, k);
			o += k;
			break;
		case DASH:
			cur[o++] = '-';
			break;
		case DROP:
			break;
		case ASCII:
			cur[o++] = ascii;
			break;
		case SPACE:
			any_split = true;
			if (o > 0) {
				cur[o] = '\0';
				char *word = strdup(cur);
				if (!word || append(out, n, cap, word) < 0) {
					free(cur); /* append freed word */
					return -ENOMEM;
				}
				o = 0;
			}
			break;
		}
		s += k;
	}
	cur[o] = '\0';
	if (o == 0 && any_split) {
		free(cur);
		return 0;
	}
	char *ip = canonical_ipv4_host(cur);
	if (ip) {
		free(cur);
		cur = ip;
	}
	return append(out, n, cap, cur);
}
