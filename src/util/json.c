#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void sep(json_writer *w)
{
	if (w->need_comma)
		strbuf_append(&w->out, ",", 1);
	w->need_comma = true;
}

void json_obj_begin(json_writer *w)
{
	sep(w);
	strbuf_append(&w->out, "{", 1);
	w->need_comma = false;
}

void json_obj_end(json_writer *w)
{
	strbuf_append(&w->out, "}", 1);
	w->need_comma = true;
}

void json_arr_begin(json_writer *w)
{
	sep(w);
	strbuf_append(&w->out, "[", 1);
	w->need_comma = false;
}

void json_arr_end(json_writer *w)
{
	strbuf_append(&w->out, "]", 1);
	w->need_comma = true;
}

void json_key(json_writer *w, const char *key)
{
	sep(w);
	strbuf_append(&w->out, "\"", 1);
	json_escape_into(&w->out, key, strlen(key));
	strbuf_append(&w->out, "\":", 2);
	w->need_comma = false;
}

/* Length of a valid UTF-8 sequence at s (max n bytes), 0 if invalid. */
static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	else if ((c & 0xE0) == 0xC0) {
		len = 2;
		cp = c & 0x1F;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3;
		cp = c & 0x0F;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4;
		cp = c & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates, out of range */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

void json_escape_into(strbuf *sb, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			strbuf_append(sb, e, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			char e[8];
			switch (c) {
			case '\n': strbuf_append(sb, "\\n", 2); break;
			case '\r': strbuf_append(sb, "\\r", 2); break;
			case '\t': strbuf_append(sb, "\\t", 2); break;
			case '\b': strbuf_append(sb, "\\b", 2); break;
			case '\f': strbuf_append(sb, "\\f", 2); break;
			default:
				snprintf(e, sizeof e, "\\u%04x", c);
				strbuf_append(sb, e, 6);
			}
			i++;
		} else if (c < 0x80) {
			/* run of plain ASCII */
			size_t j = i;
			while (j < n && p[j] >= 0x20 && p[j] < 0x7f && p[j] != '"' && p[j] != '\\')
				j++;
			strbuf_append(sb, s + i, j - i);
			i = j;
		} else {
			size_t l = utf8_valid_len(p + i, n - i);
			if (l) {
				strbuf_append(sb, s + i, l);
				i += l;
			} else {
				char e[8];
				snprintf(e, sizeof e, "\\udc%02x", c);
				strbuf_append(sb, e, 6);
				i++;
			}
		}
	}
}

void json_strn(json_writer *w, const char *s, size_t n)
{
	sep(w);
	if (!s) {
		strbuf_append(&w->out, "null", 4);
		return;
	}
	strbuf_append(&w->out, "\"", 1);
	json_escape_into(&w->out, s, n);
	strbuf_append(&w->out, "\"", 1);
}

void json_str(json_writer *w, const char *s)
{
	json_strn(w, s, s ? strlen(s) : 0);
}

void json_int(json_writer *w, int64_t v)
{
	sep(w);
	strbuf_appendf(&w->out, "%lld", (long long)v);
}

void json_uint(json_writer *w, uint64_t v)
{
	sep(w);
	strbuf_appendf(&w->out, "%llu", (unsigned long long)v);
}

void json_double(json_writer *w, double v)
{
	sep(w);
	if (!isfinite(v))
		strbuf_append(&w->out, "null", 4);
	else
		strbuf_appendf(&w->out, "%.3f", v);
}

void json_bool(json_writer *w, bool v)
{
	sep(w);
	strbuf_append_str(&w->out, v ? "true" : "false");
}

void json_null(json_writer *w)
{
	sep(w);
	strbuf_append(&w->out, "null", 4);
}

void json_kv_str(json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_str(w, s);
}

void json_kv_int(json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_int(w, v);
}

void json_kv_bool(json_writer *w, const char *key, bool v)
{
	json_key(w, key);
	json_bool(w, v);
}

char *json_finish(json_writer *w)
{
	return strbuf_steal(&w->out, NULL);
}
