/* Reading the command-line corpora of tests/corpus/ (shared by the corpus
 * test and bench-policy). See the top of tests/corpus/high-risk.txt for the
 * format. */
#pragma once

#include <stddef.h>

typedef struct corpus {
	char **lines; /* decoded command lines */
	size_t *lineno;
	size_t n;
} corpus;

/* Returns 0, or -errno when the file cannot be read. */
int corpus_load(const char *path, corpus *c);
void corpus_free(corpus *c);
