/* Corpus reader: one command line per line, '#' comments and blank lines
 * skipped, "@ " lines decoded (\n newline, \t tab, \\ backslash). */
#include "corpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *decode(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

int corpus_load(const char *path, corpus *c)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, no = 0, alloc = 0;
	ssize_t len;
	memset(c, 0, sizeof(*c));
	if (!f)
		return -errno;
	while ((len = getline(&line, &cap, f)) >= 0) {
		no++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		char *entry = strncmp(line, "@ ", 2) == 0 ? decode(line + 2)
			    : line[0] == '@' ? decode(line + 1)
					     : strdup(line);
		if (!entry)
			break;
		if (c->n == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			char **l = realloc(c->lines, alloc * sizeof(*l));
			size_t *n = realloc(c->lineno, alloc * sizeof(*n));
			if (l)
				c->lines = l;
			if (n)
				c->lineno = n;
			if (!l || !n) {
				free(entry);
				break;
			}
		}
		c->lines[c->n] = entry;
		c->lineno[c->n++] = no;
	}
	free(line);
	fclose(f);
	return 0;
}

void corpus_free(corpus *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->lines[i]);
	free(c->lines);
	free(c->lineno);
	memset(c, 0, sizeof(*c));
}
