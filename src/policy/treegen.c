/* treegen: a build-time tool. Loads policy/default.yaml with the policy
 * engine's own reader and validator (yamltree.c, load.c) and writes the
 * resulting policy — rules, hints, sandbox settings — as static C data, so
 * the built-in policy costs nothing to load at run time (parsing and
 * compiling it was most of the cost of every `txbox run` before the
 * sandbox starts). An invalid default policy fails the build.
 * Usage: treegen IN.yaml OUT.c */
#include "policy/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long counter;

static void emit_string(FILE *f, const char *s)
{
	if (!s) {
		fputs("NULL", f);
		return;
	}
	fputs("(char *)\"", f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p >= 0x20 && *p < 0x7f && *p != '?') /* '?' avoids trigraphs */
			fputc(*p, f);
		else
			fprintf(f, "\\%03o", *p);
	}
	fputc('"', f);
}

/* A NULL-terminated string vector as a static array; returns its name. */
static unsigned long emit_strv(FILE *f, char *const *v, size_t n)
{
	unsigned long id = counter++;
	fprintf(f, "static char *v%lu[] = {", id);
	for (size_t i = 0; i < n; i++) {
		emit_string(f, v[i]);
		fputs(", ", f);
	}
	fputs("NULL};\n", f);
	return id;
}

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Arrays a strlist needs (before the initializer that uses it). */
static void pre_strlist(FILE *f, const strlist *l, unsigned long *id)
{
	*id = l->v ? emit_strv(f, l->v, l->n) : 0;
}

static void init_strlist(FILE *f, const strlist *l, unsigned long id)
{
	if (l->v)
		fprintf(f, "{v%lu, %zu, %zu}", id, l->n, l->n + 1);
	else
		fputs("{NULL, 0, 0}", f);
}

static void init_pathcond(FILE *f, const pathcond *c, unsigned long id)
{
	fprintf(f, "{%s, %uu, ", c->set ? "true" : "false", c->classes);
	init_strlist(f, &c->globs, id);
	fputc('}', f);
}

enum { NLISTS = 16 };
typedef struct match_ids {
	unsigned long lists[NLISTS], subs, opts;
} match_ids;

static void match_lists(const rule_match *m, const strlist *out[NLISTS])
{
	const strlist *l[NLISTS] = {&m->command, &m->command_not, &m->flags, &m->flags_any, &m->flags_none,
				    &m->args,    &m->args_all,    &m->words, &m->words_all, &m->with,
				    &m->via,     &m->text,        &m->paths.globs, &m->dest.globs,
				    &m->redirects.globs, &m->reads.globs};
	memcpy(out, l, sizeof l);
}

/* The static arrays one rule's match refers to. */
static void emit_match_arrays(FILE *f, const rule_match *m, match_ids *ids)
{
	const strlist *lists[NLISTS];
	match_lists(m, lists);
	for (size_t i = 0; i < NLISTS; i++)
		pre_strlist(f, lists[i], &ids->lists[i]);
	ids->subs = ids->opts = 0;
	if (m->nsubcommands) {
		unsigned long *sid = calloc(m->nsubcommands, sizeof *sid);
		if (!sid)
			exit(1);
		for (size_t i = 0; i < m->nsubcommands; i++)
			pre_strlist(f, &m->subcommands[i], &sid[i]);
		ids->subs = counter++;
		fprintf(f, "static strlist s%lu[] = {", ids->subs);
		for (size_t i = 0; i < m->nsubcommands; i++) {
			init_strlist(f, &m->subcommands[i], sid[i]);
			fputs(", ", f);
		}
		fputs("};\n", f);
		free(sid);
	}
	if (m->noptions) {
		unsigned long *oid = calloc(m->noptions, sizeof *oid);
		if (!oid)
			exit(1);
		for (size_t i = 0; i < m->noptions; i++)
			pre_strlist(f, &m->options[i].cond.globs, &oid[i]);
		ids->opts = counter++;
		fprintf(f, "static optpath o%lu[] = {", ids->opts);
		for (size_t i = 0; i < m->noptions; i++) {
			fputc('{', f);
			emit_string(f, m->options[i].key);
			fputs(", ", f);
			init_pathcond(f, &m->options[i].cond, oid[i]);
			fputs("}, ", f);
		}
		fputs("};\n", f);
		free(oid);
	}
}

/* The match's initializer (constant expressions only: the arrays above). */
static void init_match(FILE *f, const rule_match *m, const match_ids *ids)
{
	const strlist *lists[NLISTS];
	match_lists(m, lists);
	static const char *const names[] = {"command", "command_not", "flags", "flags_any", "flags_none",
					    "args",    "args_all",    "words", "words_all", "with",
					    "via",     "text"};
	fputs("{\n", f);
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		fprintf(f, "\t\t.%s = ", names[i]);
		init_strlist(f, lists[i], ids->lists[i]);
		fputs(",\n", f);
	}
	static const char *const conds[] = {"paths", "dest", "redirects", "reads"};
	const pathcond *pcs[] = {&m->paths, &m->dest, &m->redirects, &m->reads};
	for (size_t i = 0; i < 4; i++) {
		fprintf(f, "\t\t.%s = ", conds[i]);
		init_pathcond(f, pcs[i], ids->lists[12 + i]);
		fputs(",\n", f);
	}
	if (m->nsubcommands)
		fprintf(f, "\t\t.subcommands = s%lu, .nsubcommands = %zu,\n", ids->subs, m->nsubcommands);
	if (m->noptions)
		fprintf(f, "\t\t.options = o%lu, .noptions = %zu,\n", ids->opts, m->noptions);
	fprintf(f, "\t\t.icase = %s, .nargs_min = %ld, .nargs_max = %ld, .unresolved = %d, .builtins = %uu,\n"
		   "\t\t.effect = %d,\n\t}",
		m->icase ? "true" : "false", m->nargs_min, m->nargs_max, m->unresolved, m->builtins, (int)m->effect);
}

/* The effects section as a static array; returns its name (0: none). */
static unsigned long emit_effects(FILE *f, const policy *p)
{
	if (!p->neffects)
		return 0;
	unsigned long *ids = calloc(2 * p->neffects, sizeof *ids);
	if (!ids)
		exit(1);
	for (size_t i = 0; i < p->neffects; i++) {
		pre_strlist(f, &p->effects[i].paths, &ids[2 * i]);
		pre_strlist(f, &p->effects[i].git_config, &ids[2 * i + 1]);
	}
	unsigned long id = counter++;
	fprintf(f, "\nstatic effect_rule e%lu[%zu] = {\n", id, p->neffects + 1);
	for (size_t i = 0; i < p->neffects; i++) {
		const effect_rule *e = &p->effects[i];
		fputs("\t{.id = ", f);
		emit_string(f, e->id);
		fprintf(f, ", .decision = %d, .reason = ", (int)e->decision);
		emit_string(f, e->reason);
		fputs(", .suggestion = ", f);
		emit_string(f, e->suggestion);
		fputs(", .paths = ", f);
		init_strlist(f, &e->paths, ids[2 * i]);
		fputs(", .git_config = ", f);
		init_strlist(f, &e->git_config, ids[2 * i + 1]);
		fprintf(f, ", .kinds = %uu, .deleted_min = %" PRIu64 "u, .deleted_share = %.17g, .git = %uu, "
			   ".found = %uu, .policy_file = %s, .line = %zu},\n",
			e->kinds, e->deleted_min, e->deleted_share, e->git, e->found, e->policy_file ? "true" : "false", e->line);
	}
	fputs("};\n", f);
	free(ids);
	return id;
}

static void emit_policy(FILE *f, const policy *p)
{
	match_ids *mid = calloc(p->nrules + 1, sizeof *mid);
	unsigned long *hid = calloc(p->nhints + 1, sizeof *hid);
	if (!mid || !hid)
		exit(1);
	for (size_t i = 0; i < p->nrules; i++)
		emit_match_arrays(f, &p->rules[i].m, &mid[i]);
	for (size_t i = 0; i < p->nhints; i++)
		pre_strlist(f, &p->hints[i].value_options, &hid[i]);
	fprintf(f, "\nstatic rule rules[%zu] = {\n", p->nrules + 1);
	for (size_t i = 0; i < p->nrules; i++) {
		const rule *r = &p->rules[i];
		fputs("\t{.id = ", f);
		emit_string(f, r->id);
		fprintf(f, ", .decision = %d, .reason = ", (int)r->decision);
		emit_string(f, r->reason);
		fputs(", .suggestion = ", f);
		emit_string(f, r->suggestion);
		fputs(", .m = ", f);
		init_match(f, &r->m, &mid[i]);
		fprintf(f, ", .line = %zu},\n", r->line);
	}
	fprintf(f, "};\n\nstatic cmd_hint hints[%zu] = {\n", p->nhints + 1);
	for (size_t i = 0; i < p->nhints; i++) {
		fputs("\t{", f);
		emit_string(f, p->hints[i].name);
		fputs(", ", f);
		init_strlist(f, &p->hints[i].value_options, hid[i]);
		fputs("},\n", f);
	}
	fputs("};\n\n", f);
	unsigned long eff = emit_effects(f, p);
	const policy_sandbox *s = &p->sandbox;
	unsigned long mp = emit_strv(f, s->masked_paths, strv_len(s->masked_paths));
	unsigned long ed = emit_strv(f, s->env_deny, strv_len(s->env_deny));
	unsigned long as = emit_strv(f, s->allowed_sockets, strv_len(s->allowed_sockets));
	fprintf(f,
		"\nstatic policy compiled = {\n"
		"\t.rules = rules, .nrules = %zu, .hints = hints, .nhints = %zu, .unresolved = %d,\n"
		"\t.sandbox = {.masked_paths = v%lu, .env_deny = v%lu, .allowed_sockets = v%lu,\n"
		"\t\t.network = %s, .memory_bytes = %" PRIu64 "u, .pids = %" PRIu64 "u, .cpu_seconds = %" PRIu64 "u,\n"
		"\t\t.disk_bytes = %" PRIu64 "u, .nofile = %" PRIu64 "u, .fsize_bytes = %" PRIu64 "u,\n"
		"\t\t.timeout_sec = %.17g, .strip_setuid = %s},\n"
		"\t.builtin = true,\n",
		p->nrules, p->nhints, (int)p->unresolved, mp, ed, as, s->network ? "true" : "false", s->memory_bytes,
		s->pids, s->cpu_seconds, s->disk_bytes, s->nofile, s->fsize_bytes, s->timeout_sec,
		s->strip_setuid ? "true" : "false");
	if (eff)
		fprintf(f, "\t.effects = e%lu, .neffects = %zu,\n", eff, p->neffects);
	fputs("};\n\npolicy *const policy_default_compiled = &compiled;\n", f);
	free(mid);
	free(hid);
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
	policy *p = NULL;
	if (ytree_parse("policy/default.yaml", buf, len, &mem, &root, &e) < 0 || !root ||
	    policy_from_tree("policy/default.yaml", root, &p, &e) < 0) {
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
	emit_policy(out, p);
	if (fclose(out) != 0) {
		perror(argv[2]);
		return 1;
	}
	policy_free(p);
	arena_free(&mem);
	return 0;
}
