/* The text echo and printf write, as the file a line writes and then runs
 * holds it: escapes (\n, \x72, \162) and printf's format are applied, so
 * `printf 'echo hi\nrm -rf ~\n' > x.sh` is read as two commands, not as
 * one named "echo" with the argument "hinrm". */
#include "shell/internal.h"

#include <stdlib.h>
#include <string.h>

/* A NUL would end the text here: dropped, as the shell reading it does. */
static void put_byte(struct sbuf *b, int v)
{
	if (v)
		sbuf_putc(b, (char)v);
}

/* One backslash escape at s (after the backslash) into b; returns the
 * characters read. octal0: \0NNN is octal (echo, %b), else \NNN (format).
 * *stop is set by \c, which ends all output. */
static size_t put_escape(struct sbuf *b, const char *s, bool octal0, bool *stop)
{
	static const char from[] = "abefnrtv\\\"'", to[] = "\a\b\033\f\n\r\t\v\\\"'";
	const char *m = *s ? strchr(from, *s) : NULL;
	if (m) {
		sbuf_putc(b, to[m - from]);
		return 1;
	}
	if (*s == 'c') {
		*stop = true;
		return 1;
	}
	if (*s == 'x' && sh_hexval(s[1]) >= 0) {
		int v = sh_hexval(s[1]);
		size_t n = 2;
		if (sh_hexval(s[2]) >= 0)
			v = v * 16 + sh_hexval(s[n++]);
		put_byte(b, v);
		return n;
	}
	size_t i = octal0 && *s == '0' ? 1 : 0;
	if (s[i] >= '0' && s[i] <= '7') {
		int v = 0;
		size_t end = i + 3;
		for (; i < end && s[i] >= '0' && s[i] <= '7'; i++)
			v = v * 8 + (s[i] - '0');
		put_byte(b, v);
		return i;
	}
	sbuf_putc(b, '\\'); /* not an escape: kept as written */
	return 0;
}

static void put_escaped(struct sbuf *b, const char *s, bool octal0, bool *stop)
{
	for (; *s && !*stop; s++) {
		if (*s != '\\' || !s[1])
			sbuf_putc(b, *s);
		else
			s += put_escape(b, s + 1, octal0, stop);
	}
}

/* One pass of printf's format over args from *k; returns whether a
 * conversion consumed an argument. */
static bool format_once(struct sbuf *b, const char *f, char *const *args, size_t n, size_t *k,
			bool *stop)
{
	bool used = false;
	for (; *f && !*stop; f++) {
		if (*f == '\\' && f[1]) {
			f += put_escape(b, f + 1, false, stop);
			continue;
		}
		if (*f != '%') {
			sbuf_putc(b, *f);
			continue;
		}
		f++;
		f += strspn(f, "-+ #0123456789.*");
		if (*f == '%') {
			sbuf_putc(b, '%');
			continue;
		}
		if (!*f)
			break;
		const char *a = *k < n ? args[(*k)++] : "";
		used = true;
		if (*f == 'b')
			put_escaped(b, a, true, stop);
		else if (*f == 'c')
			put_byte(b, a[0]);
		else
			sbuf_puts(b, a); /* %s, and numbers as written */
	}
	return used;
}

char *sh_printf_text(char *const *argv, size_t argc)
{
	struct sbuf b = {0};
	size_t k = 1;
	if (k < argc && strcmp(argv[k], "--") == 0)
		k++;
	if (k >= argc)
		return strdup("");
	const char *fmt = argv[k++];
	bool stop = false;
	/* the format is reused while arguments remain (bounded by them) */
	while (format_once(&b, fmt, argv, argc, &k, &stop) && k < argc && !stop)
		;
	if (b.oom) {
		sbuf_free(&b);
		return NULL;
	}
	return b.s ? b.s : strdup("");
}

char *sh_echo_text(char *const *argv, size_t argc)
{
	size_t k = 1;
	bool esc = false, nl = true;
	for (; k < argc && argv[k][0] == '-' && argv[k][1] &&
	       strspn(argv[k] + 1, "neE") == strlen(argv[k] + 1);
	     k++) {
		for (const char *o = argv[k] + 1; *o; o++) {
			if (*o == 'e')
				esc = true;
			else if (*o == 'E')
				esc = false;
			else
				nl = false;
		}
	}
	struct sbuf raw = {0}, dec = {0};
	bool stop = false;
	for (size_t i = k; i < argc; i++) {
		if (i > k) {
			sbuf_putc(&raw, ' ');
			if (!stop)
				sbuf_putc(&dec, ' ');
		}
		sbuf_puts(&raw, argv[i]);
		put_escaped(&dec, argv[i], true, &stop);
	}
	/* Without -e bash writes the backslashes as they are but dash (sh)
	 * decodes them: both readings are kept, one a line after the other. */
	if (!esc && raw.s && (!dec.s || strcmp(raw.s, dec.s) != 0)) {
		sbuf_putc(&dec, '\n');
		sbuf_puts(&dec, raw.s);
	}
	if (nl && !stop)
		sbuf_putc(&dec, '\n');
	sbuf_free(&raw);
	if (dec.oom) {
		sbuf_free(&dec);
		return NULL;
	}
	return dec.s ? dec.s : strdup("");
}
