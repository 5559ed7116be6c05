/* Recursive-descent parser for bash command text, written for
 * classification and fail-closed.
 *
 * The parser does not build a full tree: classification needs every simple
 * command that could run, with its words, redirections, here-document
 * bodies and pipeline position. Each simple command becomes a node
 * (struct sh_node); compound commands (if/while/until/for/select/case,
 * subshells, brace groups, functions, [[ ]], (( )), coproc) are parsed for
 * syntax and for the commands inside them. Function bodies are reported
 * whether or not the function is called.
 *
 * Choices (details in word.c, vars.c, unwrap.c, interp.c, analyze.c):
 *  - Quoting and $'…' follow bash exactly (checked against bash by
 *    tests/shell-diff); brace expansion too. Globs stay literal.
 *  - "~", "~/x", "~user" stay literal; $HOME and ${HOME} at the start of a
 *    word become "~" (so `rm -rf $HOME` is `rm -rf ~`); policy resolves "~".
 *  - Other expansions keep their raw text ("$x", "$(…)") and mark the word
 *    unresolved; a command whose name is not static is unresolved.
 *    Variables assigned earlier at the top level of the same text are
 *    followed when that is provably safe (vars.c).
 *  - Bash does not split on Unicode spaces: an unquoted U+00A0, U+2000–
 *    U+200D, U+202F, U+205F, U+2060, U+3000 or U+FEFF stays in the word and
 *    marks it (command word: command unresolved "look-alike character";
 *    argument: word_unresolved). A Unicode dash U+2010–U+2015, U+2212 or
 *    U+FF0D starting a word is normalised to '-' and the word marked.
 *  - A brace sequence producing '\' or '`' (e.g. {Z..a}) is unresolved:
 *    bash re-reads those characters.
 *  - Aliases are not expanded (non-interactive bash does not); `alias
 *    x='…'` reports the value's commands with via "alias".
 *  - Syntax errors return -EINVAL with "at byte N"; limits return -E2BIG
 *    (length, nodes, brace fields) or -ELOOP (nesting, re-parse depth).
 *
 * Nesting is bounded by SH_MAX_NEST; every token, word and field is counted
 * against shell_limits.max_nodes, so work is linear in the input.
 */
#include "shell/internal.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int parse_list(struct sh_parser *p);
static int parse_command(struct sh_parser *p);

static int oom(struct sh_parser *p)
{
	return txbox_fail(p->ctx->err, -ENOMEM, "shell: out of memory");
}

static const char *tk_name(const struct sh_tok *t)
{
	switch (t->t) {
	case TK_EOF: return "end of input";
	case TK_NEWLINE: return "newline";
	case TK_WORD: return "word";
	case TK_SEMI: return "';'";
	case TK_AMP: return "'&'";
	case TK_AND: return "'&&'";
	case TK_OR: return "'||'";
	case TK_PIPE: return "'|'";
	case TK_PIPEAMP: return "'|&'";
	case TK_LPAREN: return "'('";
	case TK_RPAREN: return "')'";
	case TK_DLPAREN: return "'(('";
	case TK_DSEMI: return "';;'";
	case TK_SEMIAMP: return "';&'";
	case TK_DSEMIAMP: return "';;&'";
	case TK_REDIR: return "redirection";
	}
	return "token";
}

static int unexpected(struct sh_parser *p, const struct sh_tok *t)
{
	char msg[96];
	if (t->t == TK_WORD) {
		bool u;
		_cleanup_free_ char *txt = sh_word_text(&t->w, &u);
		snprintf(msg, sizeof(msg), "syntax error near unexpected '%.40s'", txt ? txt : "?");
	} else
		snprintf(msg, sizeof(msg), "syntax error near unexpected %s", tk_name(t));
	return sh_fail_at(p, t->pos, -EINVAL, msg);
}

static bool is_word(const struct sh_tok *t, const char *s)
{
	return t->t == TK_WORD && sh_word_is(&t->w, s);
}

/* Reserved words that end a list (in command position). */
static bool is_list_end(const struct sh_tok *t)
{
	static const char *const ends[] = {"then", "else", "elif", "fi", "do", "done", "esac", "}"};
	if (t->t == TK_EOF || t->t == TK_RPAREN || t->t == TK_DSEMI || t->t == TK_SEMIAMP ||
	    t->t == TK_DSEMIAMP)
		return true;
	if (t->t != TK_WORD)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(ends); i++)
		if (sh_word_is(&t->w, ends[i]))
			return true;
	return false;
}

static int skip_newlines(struct sh_parser *p)
{
	for (;;) {
		struct sh_tok *t;
		int rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (t->t != TK_NEWLINE)
			return 0;
		sh_consume(p);
	}
}

static int expect_word(struct sh_parser *p, const char *w)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (!is_word(t, w)) {
		char msg[64];
		if (t->t == TK_EOF) {
			snprintf(msg, sizeof(msg), "syntax error: missing '%s'", w);
			return sh_fail_at(p, t->pos, -EINVAL, msg);
		}
		return unexpected(p, t);
	}
	sh_consume(p);
	return 0;
}

static int expect_tok(struct sh_parser *p, enum sh_tk k, const char *what)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (t->t != k) {
		if (t->t == TK_EOF) {
			char msg[64];
			snprintf(msg, sizeof(msg), "syntax error: missing %s", what);
			return sh_fail_at(p, t->pos, -EINVAL, msg);
		}
		return unexpected(p, t);
	}
	sh_consume(p);
	return 0;
}

/* Append a finished node. */
static int push_node(struct sh_parser *p, struct sh_node *n)
{
	if (sh_vec_reserve((void **)&p->nodes->v, &p->nodes->cap, p->nodes->n + 1,
			   sizeof(*p->nodes->v)) < 0) {
		sh_node_free(n);
		return oom(p);
	}
	n->via = p->via ? strdup(p->via) : NULL;
	if (p->via && !n->via) {
		sh_node_free(n);
		return oom(p);
	}
	sh_var_command(p->vars, n->argv, n->argc);
	n->depth = p->depth;
	n->pipe_id = p->pipe_id;
	n->pipe_idx = p->pipe_idx;
	n->stdin_piped = p->stdin_piped;
	p->nodes->v[p->nodes->n++] = *n;
	memset(n, 0, sizeof(*n));
	return sh_budget(p->ctx, 1);
}

/* Parse a redirection whose operator token is current; adds to n. */
static int parse_redir(struct sh_parser *p, struct sh_node *n)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	int op = t->rop, fd = t->fd;
	size_t at = t->pos;
	if (fd == -2) /* {var}>file assigns var a descriptor number */
		sh_var_poison_all(p->vars);
	sh_consume(p);
	rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (t->t != TK_WORD) {
		if (t->t == TK_EOF)
			return sh_fail_at(p, at, -EINVAL, "syntax error: redirection without target");
		return unexpected(p, t);
	}
	struct sh_redir_raw *r = calloc(1, sizeof(*r));
	if (!r)
		return oom(p);
	r->op = op;
	r->fd = fd;
	if (sh_vec_reserve((void **)&n->redirs, &n->rcap, n->nredirs + 1, sizeof(*n->redirs)) < 0) {
		free(r);
		return oom(p);
	}
	n->redirs[n->nredirs++] = r;
	r->target = sh_word_text(&t->w, &r->unres);
	r->procsub = t->w.procsub;
	if (!r->target)
		return oom(p);
	if (op == R_DLT || op == R_DLTDASH) {
		r->here = true;
		r->here_quoted = t->w.quoted;
		r->unres = false;
		/* the delimiter is the word after quote removal, no expansion */
		free(r->target);
		r->target = strndup(p->s + t->w.start, t->w.end - t->w.start);
		if (!r->target)
			return oom(p);
		bool u;
		char *delim = sh_word_text(&t->w, &u);
		if (!delim)
			return oom(p);
		if (t->w.unres) {
			/* $x as delimiter is literal text "$x" */
			free(delim);
			delim = strndup(p->s + t->w.start, t->w.end - t->w.start);
			if (!delim)
				return oom(p);
		}
		if (sh_vec_reserve((void **)&p->pend, &p->pcap, p->npend + 1, sizeof(*p->pend)) < 0) {
			free(delim);
			return oom(p);
		}
		p->pend[p->npend++] = (struct sh_pending){.r = r, .delim = delim,
							   .strip_tabs = op == R_DLTDASH};
	} else if (op == R_TLT) {
		r->here = true;
		r->here_filled = true;
		size_t tl = strlen(r->target);
		r->body = malloc(tl + 2);
		if (!r->body)
			return oom(p);
		memcpy(r->body, r->target, tl);
		r->body[tl] = '\n';
		r->body[tl + 1] = '\0';
		r->body_unres = r->unres;
		r->sub_begin = t->w.sub_begin;
		r->sub_end = t->w.sub_end;
	}
	sh_consume(p);
	return 0;
}

/* Array assignment value "( … )" right after NAME=. */
static int parse_array_value(struct sh_parser *p)
{
	size_t at = p->pos;
	p->pos++; /* '(' */
	int rc = sh_nest_enter(p, at);
	if (rc < 0)
		return rc;
	for (;;) {
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0)
			break;
		if (t->t == TK_RPAREN) {
			sh_consume(p);
			break;
		}
		if (t->t == TK_NEWLINE) {
			sh_consume(p);
			continue;
		}
		if (t->t != TK_WORD) {
			rc = t->t == TK_EOF ? sh_fail_at(p, at, -EINVAL, "unterminated array assignment")
					    : unexpected(p, t);
			break;
		}
		sh_consume(p);
	}
	sh_nest_leave(p);
	return rc;
}

/* Compound commands may carry redirections: record them as a node with
 * no argv so writes are visible. */
static int parse_trailing_redirs(struct sh_parser *p)
{
	struct sh_node n = {0};
	int rc = 0;
	for (;;) {
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0 || t->t != TK_REDIR)
			break;
		rc = parse_redir(p, &n);
		if (rc < 0)
			break;
	}
	if (rc == 0 && n.nredirs) {
		n.compound_redirs = true;
		return push_node(p, &n);
	}
	sh_node_free(&n);
	return rc;
}

/* Keep NAME=value when NAME names a command the program may run, or sets
 * up what a shell or git it starts runs. */
static int note_env_command(struct sh_node *n, const struct sh_word *w, size_t al)
{
	const char *c = w->cells.c;
	if ((!sh_env_names_command(c, al - 1) && !sh_env_names_setup(c, al - 1)) || c[al - 1] != '=')
		return 0;
	struct sh_field *v = realloc(n->env_cmds, (n->nenv_cmds + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n->env_cmds = v;
	bool unres = false;
	char *text = sh_word_text_from(w, 0, &unres);
	if (!text)
		return -ENOMEM;
	n->env_cmds[n->nenv_cmds++] = (struct sh_field){.text = text, .unres = unres || w->unres};
	return 0;
}

/* Record an assignment word NAME=value as pending (vars.c). */
static void note_assignment(struct sh_parser *p, const struct sh_word *w, size_t al, bool array)
{
	if (!p->vars)
		return;
	const char *c = w->cells.c;
	size_t nl = 0;
	while (nl < al && c[nl] != '=' && c[nl] != '[' && c[nl] != '+')
		nl++;
	bool plain = nl + 1 == al && !array;
	if (!plain) {
		sh_var_poison(p->vars, c, nl);
		return;
	}
	bool unres = false;
	char *val = sh_word_text_from(w, al, &unres);
	sh_var_pend(p->vars, c, nl, unres ? NULL : val);
	free(val);
}

static int parse_simple(struct sh_parser *p)
{
	struct sh_node n = {0};
	int rc = 0;
	bool first = true;
	size_t pend_before = p->vars ? p->vars->npend : 0;
	for (;;) {
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0)
			goto fail;
		if (t->t == TK_REDIR) {
			rc = parse_redir(p, &n);
			if (rc < 0)
				goto fail;
			first = false;
			continue;
		}
		if (t->t != TK_WORD)
			break;
		if (n.argc == 0) {
			size_t al = sh_word_assign_len(&t->w);
			if (al) {
				bool array = al == t->w.cells.len && p->pos < p->len &&
					     p->s[p->pos] == '(' && t->w.end == p->pos;
				note_assignment(p, &t->w, al, array);
				if (!array && note_env_command(&n, &t->w, al) < 0) {
					rc = sh_fail_at(p, t->pos, -ENOMEM, "out of memory");
					goto fail;
				}
				sh_consume(p);
				if (array) {
					rc = parse_array_value(p);
					if (rc < 0)
						goto fail;
				}
				first = false;
				continue;
			}
		}
		rc = sh_word_fields(p, &t->w, &n);
		if (rc < 0)
			goto fail;
		bool was_first = first && n.nredirs == 0;
		first = false;
		sh_consume(p);
		if (was_first) {
			/* name () compound: function definition */
			struct sh_tok *t2;
			rc = sh_peek(p, &t2);
			if (rc < 0)
				goto fail;
			if (t2->t == TK_LPAREN) {
				sh_var_poison_all(p->vars); /* the body may assign when called */
				if (p->vars)
					p->vars->defines = true;
				sh_consume(p);
				rc = expect_tok(p, TK_RPAREN, "')'");
				if (rc == 0)
					rc = skip_newlines(p);
				if (rc == 0) {
					p->compound++;
					rc = parse_command(p);
					p->compound--;
				}
				sh_node_free(&n);
				return rc;
			}
		}
	}
	/* assignments stay pending only for a top-level assignment-only
	 * statement; anything else makes them unknowable */
	if (p->vars && p->vars->npend > pend_before &&
	    !(n.argc == 0 && n.nredirs == 0 && p->resolve_vars && p->compound == 0))
		sh_var_settle(p->vars, false);
	if (n.argc == 0 && n.nredirs == 0 && n.nenv_cmds == 0) {
		sh_node_free(&n);
		return 0;
	}
	return push_node(p, &n);
fail:
	/* after a syntax error the words read so far still show what the
	 * command was to run, for shell_analyze_partial */
	if (rc == -EINVAL && n.argc > 0)
		(void)push_node(p, &n);
	sh_node_free(&n);
	return rc;
}

/* Loop variables are bound to each word of a static list of at most this
 * many words; the bodies re-read that way in one text are bounded too. */
#define SH_LOOP_VALUES 16
#define SH_LOOP_BYTES (256u << 10)

struct loop_list {
	char *name;                   /* NULL: not a NAME that can be bound */
	char *values[SH_LOOP_VALUES];
	size_t n;
	bool pattern[SH_LOOP_VALUES]; /* that value is a pathname pattern */
	bool bindable;                /* every word static, at most SH_LOOP_VALUES */
	bool raw;                     /* read -r: backslashes are kept */
};

static void loop_list_free(struct loop_list *l)
{
	free(l->name);
	for (size_t i = 0; i < l->n; i++)
		free(l->values[i]);
}

/* The words after `in`: kept while they are static. */
static int read_loop_words(struct sh_parser *p, struct loop_list *l)
{
	struct sh_tok *t;
	int rc;
	while ((rc = sh_peek(p, &t)) == 0 && t->t == TK_WORD) {
		struct sh_node scratch = {0};
		rc = sh_word_fields(p, &t->w, &scratch);
		for (size_t i = 0; rc == 0 && i < scratch.argc; i++) {
			const struct sh_field *f = &scratch.argv[i];
			/* a pathname pattern is bound as itself: each value is a path it
			 * matches (or the pattern, matching none), which is what the
			 * policy's glob classes judge; "$f" keeps it one word */
			if (f->unres || f->lookalike || f->procsub || l->n == SH_LOOP_VALUES)
				l->bindable = false;
			else if (!(l->values[l->n] = strdup(f->text)))
				rc = oom(p);
			else
				l->pattern[l->n++] = f->glob;
		}
		sh_node_free(&scratch);
		if (rc < 0)
			return rc;
		sh_consume(p);
	}
	return rc;
}

/* for/select header up to the body: NAME [in WORDS] [;] */
static int parse_for_head(struct sh_parser *p, struct loop_list *l)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (t->t == TK_DLPAREN) {
		size_t at = t->pos;
		sh_consume(p);
		struct sh_word w = {0};
		rc = sh_read_arith(p, &w, at);
		sh_word_free(&w);
		return rc;
	}
	if (t->t != TK_WORD)
		return unexpected(p, t);
	bool unres = false;
	l->name = sh_word_text(&t->w, &unres);
	if (!l->name)
		return oom(p);
	if (unres || t->w.quoted || !l->name[0] || strspn(l->name, "abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") != strlen(l->name) ||
	    (l->name[0] >= '0' && l->name[0] <= '9')) {
		free(l->name);
		l->name = NULL;
		sh_var_poison_all(p->vars);
	} else {
		sh_var_poison(p->vars, l->name, strlen(l->name)); /* this loop assigns it */
	}
	sh_consume(p);
	rc = skip_newlines(p);
	if (rc == 0)
		rc = sh_peek(p, &t);
	if (rc < 0 || !is_word(t, "in"))
		return rc; /* no list: "$@", not static */
	sh_consume(p);
	l->bindable = true;
	return read_loop_words(p, l);
}

/* do LIST done  |  { LIST } */
static int parse_for_body(struct sh_parser *p)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (is_word(t, "{")) {
		sh_consume(p);
		rc = parse_list(p);
		return rc < 0 ? rc : expect_word(p, "}");
	}
	rc = expect_word(p, "do");
	if (rc == 0)
		rc = parse_list(p);
	if (rc == 0)
		rc = expect_word(p, "done");
	return rc;
}

/* Read the body from body_at with the loop variable bound to value idx of
 * the list (SIZE_MAX: unknown, hiding any outer binding); *assigns: something in it may assign
 * the variable. */
static int read_loop_body(struct sh_parser *p, const struct loop_list *l, size_t body_at,
			  size_t idx, bool *assigns)
{
	const char *value = idx < l->n ? l->values[idx] : NULL;
	struct sh_bind one = {l->name, l->name ? strlen(l->name) : 0, value, p->binds,
			      idx < l->n && l->pattern[idx]};
	struct sh_vars *v = p->vars;
	const char *watch = v ? v->watch : NULL;
	size_t watch_len = v ? v->watch_len : 0;
	bool watch_hit = v ? v->watch_hit : false;
	if (l->name) {
		p->binds = &one;
		if (v) {
			v->watch = l->name;
			v->watch_len = one.len;
			v->watch_hit = false;
		}
	}
	if (p->pos != body_at) {
		sh_consume(p);
		p->pos = body_at;
	}
	int rc = parse_for_body(p);
	*assigns = !v || v->watch_hit;
	if (v) {
		v->watch = watch;
		v->watch_len = watch_len;
		v->watch_hit = watch_hit || (l->name && v->watch_hit && watch_len == one.len &&
					     watch && memcmp(watch, l->name, one.len) == 0);
	}
	p->binds = one.up;
	return rc;
}

static void drop_nodes(struct sh_parser *p, size_t n0)
{
	while (p->nodes->n > n0)
		sh_node_free(&p->nodes->v[--p->nodes->n]);
}

/* The body is read with the loop variable unknown; then, when the list is
 * static, its commands are replaced by the body read once per word with the
 * variable bound, so every rule sees the operands — unless something in
 * the body may assign the variable, when the unknown reading stands. */
static int parse_loop_body(struct sh_parser *p, struct loop_list *l, size_t body_at,
			   int (*fill)(struct sh_parser *, struct loop_list *))
{
	size_t n0 = p->nodes->n, pend0 = p->npend;
	bool assigns = false, defines = p->vars && p->vars->defines;
	int rc = read_loop_body(p, l, body_at, SIZE_MAX, &assigns);
	size_t end = p->pos;
	if (rc == 0 && fill)
		rc = fill(p, l);
	if (rc < 0 || !l->name || !l->bindable || l->n == 0 || pend0 || p->npend || p->have_la ||
	    !p->vars || defines ||
	    p->ctx->loop_bytes + (end - body_at) * l->n > SH_LOOP_BYTES)
		return rc;
	p->ctx->loop_bytes += (end - body_at) * l->n;
	p->vars->defines = false; /* what the unknown reading set, the bound ones set again */
	drop_nodes(p, n0);
	assigns = false;
	for (size_t i = 0; i < l->n && rc == 0 && !assigns; i++)
		rc = read_loop_body(p, l, body_at, i, &assigns);
	if (rc == 0 && assigns) {
		drop_nodes(p, n0);
		rc = read_loop_body(p, l, body_at, SIZE_MAX, &assigns);
	}
	if (rc == 0 && (p->pos != end || p->npend || p->have_la))
		rc = sh_fail_at(p, body_at, -EINVAL, "syntax error: loop body read differently");
	return rc;
}

/* The loop's values: the lines of static text v. A line with blanks at either end is left unknown (IFS
 * may be set for the read), so is a backslash without -r (an escape, or a
 * line continued). */
static int bind_lines(struct sh_parser *p, struct loop_list *l, char *v)
{
	for (char *line = v; l->bindable && line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		size_t n = strlen(line);
		if (l->n == SH_LOOP_VALUES || (!l->raw && strchr(line, '\\')) ||
		    (n && (strchr(" \t", line[0]) || strchr(" \t", line[n - 1]))))
			l->bindable = false;
		else if (!(l->values[l->n++] = strdup(line)))
			return oom(p);
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* `done <<DELIM` ending its line: the here-document's body, read ahead
 * (with the redirection into a scratch node) when it is static. */
static int heredoc_lines(struct sh_parser *p, struct loop_list *l)
{
	struct sh_node tmp = {0};
	int rc = parse_redir(p, &tmp);
	struct sh_tok *t;
	if (rc == 0)
		rc = sh_peek(p, &t); /* a newline reads the body */
	if (rc == 0 && (t->t == TK_NEWLINE || t->t == TK_EOF) && p->npend == 0 && tmp.nredirs == 1) {
		struct sh_redir_raw *r = tmp.redirs[0];
		char *v = r->here_filled && !r->body_unres && r->sub_begin == r->sub_end && r->body
				  ? strdup(r->body)
				  : NULL;
		size_t vl = v ? strlen(v) : 0;
		if (vl && v[vl - 1] == '\n') /* it ends the last line */
			v[vl - 1] = '\0';
		l->bindable = v != NULL;
		if (v)
			rc = bind_lines(p, l, v);
		free(v);
	}
	/* a body not read yet must not be read into the scratch node */
	for (size_t i = 0; i < p->npend; i++)
		free(p->pend[i].delim);
	p->npend = 0;
	sh_node_free(&tmp);
	return rc;
}

/* The lines `read NAME` gets after `done` from a static here-string
 * (`done <<< "a b"`) or here-document: the loop's values. The redirection
 * is only peeked at (what reading it emitted is dropped);
 * parse_trailing_redirs reads it. */
static int fed_lines(struct sh_parser *p, struct loop_list *l)
{
	size_t at = p->pos, n0 = p->nodes->n;
	struct sh_tok *t;
	if (p->npend) /* a newline next would read their bodies */
		return 0;
	int rc = sh_peek(p, &t);
	if (rc < 0 || t->t != TK_REDIR || t->fd > 0)
		goto out;
	if (t->rop == R_DLT || t->rop == R_DLTDASH) {
		rc = heredoc_lines(p, l);
		goto out;
	}
	if (t->rop != R_TLT)
		goto out;
	sh_consume(p);
	if ((rc = sh_peek(p, &t)) < 0 || t->t != TK_WORD)
		goto out;
	bool unres = false;
	char *v = sh_word_text(&t->w, &unres);
	if (!v) {
		rc = oom(p);
		goto out;
	}
	l->bindable = !unres && !t->w.procsub && !t->w.lookalike;
	rc = bind_lines(p, l, v);
	free(v);
out:
	sh_consume(p);
	drop_nodes(p, n0);
	p->pos = at;
	return rc;
}

/* A while condition that is one `read [-r] NAME`, just parsed as node n0. */
static void while_read_name(struct sh_parser *p, size_t n0, struct loop_list *l)
{
	if (p->nodes->n != n0 + 1)
		return;
	const struct sh_node *n = &p->nodes->v[n0];
	size_t k = 1;
	if (n->argc < 2 || n->nredirs || n->argv[0].unres || strcmp(n->argv[0].text, "read"))
		return;
	if (!n->argv[1].unres && strcmp(n->argv[1].text, "-r") == 0) {
		l->raw = true;
		k++;
	}
	const char *name = n->argv[k].text;
	if (k + 1 != n->argc || n->argv[k].unres || !name[0] || (name[0] >= '0' && name[0] <= '9') ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") !=
		strlen(name))
		return;
	l->name = strdup(name); /* NULL on OOM: not bound */
}

/* while LIST; do LIST; done — with `while read NAME … done <<< TEXT` (or a
 * here-document), NAME bound to each line of a static TEXT, as a for
 * loop's variable is. */
static int parse_while(struct sh_parser *p)
{
	struct loop_list l = {0};
	size_t n0 = p->nodes->n;
	int rc = parse_list(p);
	struct sh_tok *t;
	if (rc == 0)
		rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (is_word(t, "do"))
		while_read_name(p, n0, &l);
	rc = parse_loop_body(p, &l, t->pos, l.name ? fed_lines : NULL);
	loop_list_free(&l);
	return rc;
}

/* for/select NAME [in WORDS] ; do LIST done   |  for (( … )) ; do … done */
static int parse_for(struct sh_parser *p, bool select)
{
	struct loop_list l = {0};
	struct sh_tok *t;
	int rc = parse_for_head(p, &l);
	/* select sets NAME to "" on a reply that is not a number of the list */
	if (rc == 0 && select && l.bindable && l.n < SH_LOOP_VALUES && !(l.values[l.n++] = strdup("")))
		rc = oom(p);
	if (rc == 0)
		rc = sh_peek(p, &t);
	if (rc == 0 && t->t == TK_SEMI)
		sh_consume(p);
	if (rc == 0)
		rc = skip_newlines(p);
	if (rc == 0)
		rc = sh_peek(p, &t);
	if (rc == 0) {
		size_t body_at = t->pos;
		rc = parse_loop_body(p, &l, body_at, NULL);
	}
	loop_list_free(&l);
	return rc;
}

static int parse_case(struct sh_parser *p)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	if (t->t != TK_WORD)
		return t->t == TK_EOF ? sh_fail_at(p, t->pos, -EINVAL, "syntax error: incomplete case")
				      : unexpected(p, t);
	sh_consume(p);
	rc = skip_newlines(p);
	if (rc == 0)
		rc = expect_word(p, "in");
	for (;;) {
		if (rc == 0)
			rc = skip_newlines(p);
		if (rc < 0)
			return rc;
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (is_word(t, "esac")) {
			sh_consume(p);
			return 0;
		}
		if (t->t == TK_LPAREN) {
			sh_consume(p);
			rc = sh_peek(p, &t);
			if (rc < 0)
				return rc;
		}
		/* patterns */
		for (;;) {
			if (t->t != TK_WORD)
				return t->t == TK_EOF ? sh_fail_at(p, t->pos, -EINVAL,
								   "syntax error: missing 'esac'")
						      : unexpected(p, t);
			sh_consume(p);
			rc = sh_peek(p, &t);
			if (rc < 0)
				return rc;
			if (t->t == TK_PIPE) {
				sh_consume(p);
				rc = sh_peek(p, &t);
				if (rc < 0)
					return rc;
				continue;
			}
			break;
		}
		rc = expect_tok(p, TK_RPAREN, "')' in case pattern");
		if (rc == 0)
			rc = parse_list(p);
		if (rc < 0)
			return rc;
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (t->t == TK_DSEMI || t->t == TK_SEMIAMP || t->t == TK_DSEMIAMP)
			sh_consume(p);
		else if (!is_word(t, "esac"))
			return t->t == TK_EOF ? sh_fail_at(p, t->pos, -EINVAL,
							   "syntax error: missing 'esac'")
					      : unexpected(p, t);
	}
}

static int parse_if(struct sh_parser *p)
{
	int rc = parse_list(p);
	if (rc == 0)
		rc = expect_word(p, "then");
	if (rc == 0)
		rc = parse_list(p);
	while (rc == 0) {
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0)
			break;
		if (is_word(t, "elif")) {
			sh_consume(p);
			rc = parse_list(p);
			if (rc == 0)
				rc = expect_word(p, "then");
			if (rc == 0)
				rc = parse_list(p);
			continue;
		}
		if (is_word(t, "else")) {
			sh_consume(p);
			rc = parse_list(p);
			if (rc == 0)
				rc = expect_word(p, "fi");
			break;
		}
		rc = expect_word(p, "fi");
		break;
	}
	return rc;
}

/* [[ … ]]: words and operators up to "]]". */
static int parse_cond(struct sh_parser *p, size_t at)
{
	for (;;) {
		struct sh_tok *t;
		int rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (t->t == TK_EOF)
			return sh_fail_at(p, at, -EINVAL, "syntax error: missing ']]'");
		if (is_word(t, "]]")) {
			sh_consume(p);
			return 0;
		}
		if (t->t == TK_REDIR && (t->rop == R_DLT || t->rop == R_DLTDASH))
			return unexpected(p, t);
		sh_consume(p);
	}
}

static int parse_compound_inner(struct sh_parser *p, struct sh_tok *t);

static int parse_compound_body(struct sh_parser *p, struct sh_tok *t)
{
	p->compound++;
	int rc = parse_compound_inner(p, t);
	p->compound--;
	return rc;
}

static int parse_compound_inner(struct sh_parser *p, struct sh_tok *t)
{
	int rc;
	size_t at = t->pos;
	if (t->t == TK_LPAREN) {
		sh_consume(p);
		rc = parse_list(p);
		return rc < 0 ? rc : expect_tok(p, TK_RPAREN, "')'");
	}
	if (t->t == TK_DLPAREN) {
		sh_consume(p);
		if (!sh_arith_probe(p->s, p->len, p->pos)) {
			/* "((" opens two nested subshells */
			p->pos = at + 1;
			rc = parse_list(p);
			return rc < 0 ? rc : expect_tok(p, TK_RPAREN, "')'");
		}
		struct sh_word w = {0};
		rc = sh_read_arith(p, &w, at);
		sh_word_free(&w);
		return rc;
	}
	if (is_word(t, "{")) {
		sh_consume(p);
		rc = parse_list(p);
		return rc < 0 ? rc : expect_word(p, "}");
	}
	if (is_word(t, "if")) {
		sh_consume(p);
		return parse_if(p);
	}
	if (is_word(t, "while")) {
		sh_consume(p);
		return parse_while(p);
	}
	if (is_word(t, "until")) {
		sh_consume(p);
		rc = parse_list(p);
		if (rc == 0)
			rc = expect_word(p, "do");
		if (rc == 0)
			rc = parse_list(p);
		if (rc == 0)
			rc = expect_word(p, "done");
		return rc;
	}
	if (is_word(t, "for") || is_word(t, "select")) {
		bool select = is_word(t, "select");
		/* (an enclosing loop's variable is assigned only if it is this
		 * loop's: parse_for_head) */
		bool hit = p->vars && p->vars->watch_hit;
		sh_var_poison_all(p->vars);
		if (p->vars)
			p->vars->watch_hit = hit;
		sh_consume(p);
		return parse_for(p, select);
	}
	if (is_word(t, "case")) {
		sh_consume(p);
		return parse_case(p);
	}
	if (is_word(t, "[[")) {
		sh_consume(p);
		return parse_cond(p, at);
	}
	if (is_word(t, "function")) {
		sh_var_poison_all(p->vars);
		if (p->vars)
			p->vars->defines = true;
		sh_consume(p);
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (t->t != TK_WORD)
			return unexpected(p, t);
		sh_consume(p);
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (t->t == TK_LPAREN) {
			sh_consume(p);
			rc = expect_tok(p, TK_RPAREN, "')'");
			if (rc < 0)
				return rc;
		}
		rc = skip_newlines(p);
		return rc < 0 ? rc : parse_command(p);
	}
	return 1; /* not compound */
}

static int parse_command(struct sh_parser *p)
{
	struct sh_tok *t;
	int rc = sh_peek(p, &t);
	if (rc < 0)
		return rc;
	size_t at = t->pos;
	rc = sh_nest_enter(p, at);
	if (rc < 0)
		return rc;
	p->stmt_cmds++;
	static const char *const bad[] = {"then", "else", "elif", "fi", "do", "done", "esac", "}",
					  "in", "]]"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (is_word(t, bad[i])) {
			rc = unexpected(p, t);
			goto out;
		}
	if (is_word(t, "coproc")) {
		sh_consume(p);
		rc = parse_command(p);
		goto out;
	}
	rc = parse_compound_body(p, t);
	if (rc == 0)
		rc = parse_trailing_redirs(p);
	else if (rc == 1) {
		if (t->t != TK_WORD && t->t != TK_REDIR)
			rc = t->t == TK_EOF ? sh_fail_at(p, at, -EINVAL, "syntax error: missing command")
					    : unexpected(p, t);
		else
			rc = parse_simple(p);
	}
out:
	sh_nest_leave(p);
	return rc;
}

static int parse_pipeline(struct sh_parser *p)
{
	struct sh_tok *t;
	int rc;
	/* time [-p], ! prefixes */
	for (;;) {
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (is_word(t, "!")) {
			sh_consume(p);
			continue;
		}
		if (is_word(t, "time")) {
			sh_consume(p);
			rc = sh_peek(p, &t);
			if (rc < 0)
				return rc;
			if (is_word(t, "-p"))
				sh_consume(p);
			continue;
		}
		break;
	}
	unsigned save_id = p->pipe_id, save_idx = p->pipe_idx;
	bool save_piped = p->stdin_piped;
	p->pipe_id = ++p->ctx->pipe_seq;
	p->pipe_idx = 0;
	for (;;) {
		rc = sh_peek(p, &t);
		if (rc < 0)
			break;
		if (p->pipe_idx > 0 && (t->t == TK_EOF || is_list_end(t))) {
			rc = t->t == TK_EOF ? sh_fail_at(p, t->pos, -EINVAL,
							 "syntax error: missing command after '|'")
					    : unexpected(p, t);
			break;
		}
		rc = parse_command(p);
		if (rc < 0)
			break;
		rc = sh_peek(p, &t);
		if (rc < 0)
			break;
		if (t->t != TK_PIPE && t->t != TK_PIPEAMP)
			break;
		sh_consume(p);
		rc = skip_newlines(p);
		if (rc < 0)
			break;
		p->pipe_idx++;
		p->stdin_piped = true;
	}
	p->pipe_id = save_id;
	p->pipe_idx = save_idx;
	p->stdin_piped = save_piped;
	return rc;
}

static int parse_and_or(struct sh_parser *p)
{
	int rc = parse_pipeline(p);
	while (rc == 0) {
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0)
			break;
		if (t->t != TK_AND && t->t != TK_OR)
			break;
		sh_consume(p);
		rc = skip_newlines(p);
		if (rc == 0)
			rc = parse_pipeline(p);
	}
	return rc;
}

/* A list: stops (without consuming) at a reserved terminator, ')', ';;',
 * or end of input. */
static int parse_list(struct sh_parser *p)
{
	for (;;) {
		int rc = skip_newlines(p);
		if (rc < 0)
			return rc;
		struct sh_tok *t;
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (is_list_end(t))
			return 0;
		if (t->t == TK_SEMI || t->t == TK_AMP)
			return unexpected(p, t);
		bool top = p->vars && p->resolve_vars && p->compound == 0;
		if (top)
			p->stmt_cmds = 0;
		rc = parse_and_or(p);
		if (rc < 0)
			return rc;
		rc = sh_peek(p, &t);
		if (rc < 0)
			return rc;
		if (top)
			sh_var_settle(p->vars, p->stmt_cmds == 1 && t->t != TK_AMP);
		if (t->t == TK_SEMI || t->t == TK_AMP || t->t == TK_NEWLINE) {
			sh_consume(p);
			continue;
		}
		return 0;
	}
}

static void parser_done(struct sh_parser *p)
{
	sh_consume(p);
	for (size_t i = 0; i < p->npend; i++)
		free(p->pend[i].delim);
	free(p->pend);
	p->pend = NULL;
	p->npend = p->pcap = 0;
}

/* Here-documents still pending at end of input get an empty body. */
static int finish_pending(struct sh_parser *p)
{
	return sh_read_heredocs(p);
}

int sh_parse_text(struct sh_ctx *ctx, struct sh_nodes *ns, const char *s, size_t len,
		  const char *via, unsigned depth, bool stdin_piped)
{
	unsigned nest = 0;
	struct sh_vars vars = {0};
	struct sh_parser p = {
		.ctx = ctx,
		.nodes = ns,
		.s = s,
		.len = len,
		.via = via,
		.depth = depth,
		.nest = &nest,
		.stdin_piped = stdin_piped,
		.what = "",
		.vars = &vars,
		.resolve_vars = true,
	};
	int rc = parse_list(&p);
	if (rc == 0) {
		struct sh_tok *t;
		rc = sh_peek(&p, &t);
		if (rc == 0 && t->t != TK_EOF)
			rc = unexpected(&p, t);
	}
	if (rc == 0)
		rc = finish_pending(&p);
	parser_done(&p);
	sh_vars_free(&vars);
	return rc;
}

int sh_parse_subst(struct sh_parser *p, const char *via, bool stdin_piped)
{
	size_t at = p->pos >= 2 ? p->pos - 2 : 0;
	int rc = sh_nest_enter(p, at);
	if (rc < 0)
		return rc;
	struct sh_parser sub = {
		.ctx = p->ctx,
		.nodes = p->nodes,
		.s = p->s,
		.len = p->len,
		.pos = p->pos,
		.via = via,
		.depth = p->depth + 1,
		.nest = p->nest,
		.stdin_piped = stdin_piped,
		.what = p->what,
		.vars = p->vars,
		.binds = p->binds,
	};
	rc = parse_list(&sub);
	if (rc == 0) {
		struct sh_tok *t;
		rc = sh_peek(&sub, &t);
		if (rc == 0 && t->t != TK_RPAREN)
			rc = t->t == TK_EOF ? sh_fail_at(p, at, -EINVAL, "unterminated substitution")
					    : unexpected(&sub, t);
	}
	if (rc == 0) {
		sh_consume(&sub);
		p->pos = sub.pos;
		/* here-documents started inside continue after it */
		for (size_t i = 0; i < sub.npend && rc == 0; i++) {
			if (sh_vec_reserve((void **)&p->pend, &p->pcap, p->npend + 1,
					   sizeof(*p->pend)) < 0) {
				rc = oom(p);
				break;
			}
			p->pend[p->npend++] = sub.pend[i];
			sub.pend[i].delim = NULL;
		}
		sub.npend = 0;
	}
	parser_done(&sub);
	sh_nest_leave(p);
	return rc;
}

int sh_parse_backquote(struct sh_parser *p, const char *text, size_t len, size_t at)
{
	int rc = sh_nest_enter(p, at);
	if (rc < 0)
		return rc;
	struct sh_parser sub = {
		.ctx = p->ctx,
		.nodes = p->nodes,
		.s = text,
		.len = len,
		.via = "`…`",
		.depth = p->depth + 1,
		.nest = p->nest,
		.stdin_piped = p->stdin_piped,
		.what = "in `…` ",
		.vars = p->vars,
		.binds = p->binds,
	};
	rc = parse_list(&sub);
	if (rc == 0) {
		struct sh_tok *t;
		rc = sh_peek(&sub, &t);
		if (rc == 0 && t->t != TK_EOF)
			rc = unexpected(&sub, t);
	}
	if (rc == 0)
		rc = finish_pending(&sub);
	parser_done(&sub);
	sh_nest_leave(p);
	return rc;
}
