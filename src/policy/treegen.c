/* treegen: a build-time tool. Parses policy/default.yaml with the policy
 * engine's own YAML reader (yamltree.c) and writes the tree as static C
 * data, so loading the built-in policy skips YAML parsing at run time (it
 * was most of the cost of every `txbox run`). Usage: treegen IN.yaml OUT.c */
#include "policy/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long counter;

static void emit_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f && c != '?') /* '?' avoids trigraphs */
			fputc(c, f);
		else
			fprintf(f, "\\%03o", c);
	}
	fputc('"', f);
}

/* Emit n and its children (children first); returns n's number. */
static unsigned long emit(FILE *f, const ynode *n)
{
	unsigned long *kids = NULL;
	if (n->n) {
		kids = calloc(n->n, sizeof *kids);
		if (!kids) {
			fprintf(stderr, "treegen: out of memory\n");
			exit(1);
		}
		for (size_t i = 0; i < n->n; i++)
			kids[i] = emit(f, n->items[i]);
	}
	unsigned long id = counter++;
	if (n->n) {
		fprintf(f, "static ynode *items%lu[] = {", id);
		for (size_t i = 0; i < n->n; i++)
			fprintf(f, "%s&n%lu", i ? ", " : "", kids[i]);
		fprintf(f, "};\n");
	}
	static const char *const types[] = {"YN_SCALAR", "YN_SEQ", "YN_MAP"};
	fprintf(f, "static ynode n%lu = {%s, %zu, %zu, ", id, types[n->type], n->line, n->col);
	if (n->value) {
		fputs("(char *)", f);
		emit_string(f, n->value, n->len);
	} else
		fputs("NULL", f);
	fprintf(f, ", %zu, %s, ", n->len, n->plain ? "true" : "false");
	if (n->n)
		fprintf(f, "items%lu, %zu, %zu};\n", id, n->n, n->n);
	else
		fputs("NULL, 0, 0};\n", f);
	free(kids);
	return id;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: treegen IN.yaml OUT.c\n");
		return 2;
	}
	FILE *in = fopen(argv[1], "rb");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	static char buf[4 * 1024 * 1024];
	size_t len = fread(buf, 1, sizeof buf - 1, in);
	fclose(in);
	ynode *root = NULL;
	txbox_error e = TXBOX_ERROR_INIT;
	arena mem = {0};
	if (ytree_parse("policy/default.yaml", buf, len, &mem, &root, &e) < 0 || !root) {
		fprintf(stderr, "treegen: %s\n", e.message ? e.message : "empty policy");
		return 1;
	}
	FILE *out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "/* Generated from policy/default.yaml by src/policy/treegen.c. Do not edit. */\n"
		     "#include \"policy/internal.h\"\n\n");
	unsigned long r = emit(out, root);
	fprintf(out, "\nconst ynode *const policy_default_tree = &n%lu;\n", r);
	if (fclose(out) != 0) {
		perror(argv[2]);
		return 1;
	}
	arena_free(&mem);
	return 0;
}
