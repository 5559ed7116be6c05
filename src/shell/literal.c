/* literal: shell text that is one plain command — words of ordinary
 * characters separated by blanks, no quoting, expansion, redirection,
 * globbing, assignment or operator — and whose command word is not a
 * shell builtin or keyword. /bin/sh -c would only look the command up in
 * PATH and exec it with those words; running it directly is the same
 * thing without starting a shell (about 0.5 ms a command). Anything else
 * goes through the shell. */
#include "shell/shell.h"

#include <stdlib.h>
#include <string.h>

#define LITERAL_MAX_WORDS 256
#define LITERAL_MAX_LEN 4096

static bool plain_char(unsigned char c)
{
	/* no blanks (separators), quotes, $ ` \ ; & | < > ( ) * ? [ ] ~ # { } ! = (checked apart), no
	 * control or non-ASCII bytes (a locale could make them blanks) */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-' || c == '.' || c == '/' || c == ',' || c == ':' || c == '@' || c == '%' || c == '+' ||
	       c == '=';
}

/* dash's builtins and reserved words, plus bash's (whose behaviour a
 * command of that name in PATH would not reproduce). true and false are
 * not here: the programs do exactly what the builtins do. */
static const char *const shell_words[] = {
	".",       ":",      "[",        "[[",     "]]",      "alias",   "bg",       "bind",    "break",
	"builtin", "case",   "cd",       "chdir",  "command", "compgen", "complete", "continue", "declare",
	"dirs",    "disown", "do",       "done",   "echo",    "elif",    "else",     "enable",  "esac",
	"eval",    "exec",   "exit",     "export", "fc",      "fg",      "fi",       "for",     "function",
	"getopts", "hash",   "help",     "history", "if",     "in",      "jobs",     "kill",    "let",
	"local",   "logout", "mapfile",  "popd",   "printf",  "pushd",   "pwd",      "read",    "readarray",
	"readonly", "return", "select",  "set",    "shift",   "shopt",   "source",   "suspend", "test",
	"then",    "time",   "times",    "trap",   "type",    "typeset", "ulimit",   "umask",   "unalias",
	"unset",   "until",  "wait",     "while",
};

char **shell_literal_argv(const char *text)
{
	size_t len = strlen(text);
	if (len == 0 || len > LITERAL_MAX_LEN)
		return NULL;
	size_t words = 0;
	bool in_word = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == ' ' || c == '\t') {
			in_word = false;
			continue;
		}
		if (!plain_char(c))
			return NULL;
		if (!in_word) {
			words++;
			in_word = true;
		}
	}
	if (words == 0 || words > LITERAL_MAX_WORDS)
		return NULL;
	char *copy = strdup(text);
	char **argv = calloc(words + 2, sizeof *argv); /* words, NULL, the copy (for free) */
	if (!copy || !argv) {
		free(copy);
		free(argv);
		return NULL;
	}
	argv[words + 1] = copy;
	size_t n = 0;
	char *save = NULL;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	/* VAR=value as the first word is an assignment, not a command */
	bool ok = strchr(argv[0], '=') == NULL;
	for (size_t i = 0; ok && i < sizeof shell_words / sizeof *shell_words; i++)
		ok = strcmp(argv[0], shell_words[i]) != 0;
	if (!ok) {
		free(copy);
		free(argv);
		return NULL;
	}
	return argv;
}

void shell_literal_argv_free(char **argv)
{
	if (argv) {
		size_t n = 0;
		while (argv[n])
			n++;
		free(argv[n + 1]);
		free(argv);
	}
}
