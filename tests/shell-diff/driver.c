/* shell-diff-driver: read NUL-separated command texts on stdin and print,
 * for each, the argv the parser computes for every simple command.
 *
 * Output per input case (binary safe, lengths in decimal):
 *   O<ncmds>:  then per command  <nwords>:  then per word  <len>:<bytes>
 * or, on a parse error:  E<len>:<message>
 * A command that is not a plain top-level command (nested, unresolved,
 * with redirections) gets a leading "\4" word so the comparison refuses to
 * hand that case to bash. */
#include "shell/shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *s, size_t n)
{
	printf("%zu:", n);
	fwrite(s, 1, n, stdout);
}

static void analyse(const char *text, size_t len)
{
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	if (shell_analyze(text, len, NULL, &a, &err) != 0) {
		const char *m = err.message ? err.message : "error";
		fputc('E', stdout);
		put(m, strlen(m));
		txbox_error_clear(&err);
		return;
	}
	printf("O%zu:", a.ncmds);
	for (size_t i = 0; i < a.ncmds; i++) {
		const shell_cmd *c = &a.cmds[i];
		bool odd = c->via || c->unresolved || c->nredirs;
		for (size_t k = 0; k < c->argc; k++)
			odd = odd || c->word_unresolved[k];
		printf("%zu:", c->argc + (odd ? 1 : 0));
		if (odd)
			put("\4", 1);
		for (size_t k = 0; k < c->argc; k++)
			put(c->argv[k], strlen(c->argv[k]));
	}
	shell_analysis_free(&a);
}

int main(void)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return 2;
	size_t n;
	while ((n = fread(buf + len, 1, cap - len, stdin)) > 0) {
		len += n;
		if (len == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return 2;
			buf = nb;
			cap *= 2;
		}
	}
	size_t st = 0;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\0') {
			analyse(buf + st, i - st);
			st = i + 1;
		}
	}
	if (st < len)
		analyse(buf + st, len - st);
	free(buf);
	return fflush(stdout) == 0 ? 0 : 1;
}
