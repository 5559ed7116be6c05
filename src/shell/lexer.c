/* Tokenizer: operators, words (read by word.c), comments, line
 * continuations and here-document bodies. One token of look-ahead. */
#include "shell/internal.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sh_fail_at(struct sh_parser *p, size_t pos, int code, const char *msg)
{
	return txbox_fail(p->ctx->err, code, "shell: %s%s at byte %zu", p->what ? p->what : "",
			  msg, pos);
}

int sh_nest_enter(struct sh_parser *p, size_t pos)
{
	if (++*p->nest > SH_MAX_NEST)
		return sh_fail_at(p, pos, -ELOOP, "nesting too deep");
	return 0;
}

void sh_nest_leave(struct sh_parser *p)
{
	--*p->nest;
}

void sh_tok_free(struct sh_tok *t)
{
	if (t->t == TK_WORD)
		sh_word_free(&t->w);
	t->t = TK_EOF;
}

/* Skip blanks, comments and line continuations between tokens. */
static void skip_blanks(struct sh_parser *p)
{
	const char *s = p->s;
	while (p->pos < p->len) {
		char c = s[p->pos];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
			p->pos++;
		else if (c == '\\' && p->pos + 1 < p->len && s[p->pos + 1] == '\n')
			p->pos += 2;
		else if (c == '#') {
			const char *nl = memchr(s + p->pos, '\n', p->len - p->pos);
			p->pos = nl ? (size_t)(nl - s) : p->len;
		} else
			break;
	}
}

static bool starts(const struct sh_parser *p, const char *op)
{
	size_t n = strlen(op);
	return p->len - p->pos >= n && memcmp(p->s + p->pos, op, n) == 0;
}

/* Read one here-document body for pend from p->pos. */
static int read_one_heredoc(struct sh_parser *p, struct sh_pending *pd)
{
	struct sbuf body = {0};
	size_t dlen = strlen(pd->delim);
	size_t body_pos = p->pos;
	bool found = false;
	while (p->pos < p->len) {
		const char *line = p->s + p->pos;
		const char *nl = memchr(line, '\n', p->len - p->pos);
		size_t ll = nl ? (size_t)(nl - line) : p->len - p->pos;
		size_t next = p->pos + ll + (nl ? 1 : 0);
		const char *l = line;
		size_t n = ll;
		if (pd->strip_tabs)
			while (n && *l == '\t') {
				l++;
				n--;
			}
		if (n == dlen && memcmp(l, pd->delim, dlen) == 0) {
			p->pos = next;
			found = true;
			break;
		}
		sbuf_put(&body, l, n);
		sbuf_putc(&body, '\n');
		p->pos = next;
	}
	(void)found; /* bash accepts a body delimited by end of input */
	if (body.oom) {
		sbuf_free(&body);
		return txbox_fail(p->ctx->err, -ENOMEM, "shell: out of memory");
	}
	struct sh_redir_raw *r = pd->r;
	r->here_filled = true;
	if (pd->r->here_quoted) {
		r->body = sbuf_take(&body);
		if (!r->body)
			return txbox_fail(p->ctx->err, -ENOMEM, "shell: out of memory");
		return 0;
	}
	int rc = sh_expand_body(p, body.s ? body.s : "", body.len, body_pos, &r->body,
				&r->body_unres, &r->sub_begin, &r->sub_end);
	sbuf_free(&body);
	return rc;
}

int sh_read_heredocs(struct sh_parser *p)
{
	int rc = 0;
	size_t i;
	for (i = 0; i < p->npend; i++) {
		rc = read_one_heredoc(p, &p->pend[i]);
		if (rc < 0)
			break;
	}
	for (size_t j = 0; j < p->npend; j++)
		free(p->pend[j].delim);
	p->npend = 0;
	return rc;
}

static int read_token(struct sh_parser *p, struct sh_tok *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	skip_blanks(p);
	t->pos = p->pos;
	int rc = sh_budget(p->ctx, 1);
	if (rc < 0)
		return rc;
	if (p->pos >= p->len) {
		t->t = TK_EOF;
		return 0;
	}
	char c = p->s[p->pos];
	static const struct {
		const char *op;
		enum sh_tk t;
		int rop;
	} ops[] = {
		{";;&", TK_DSEMIAMP, 0}, {";;", TK_DSEMI, 0}, {";&", TK_SEMIAMP, 0},
		{";", TK_SEMI, 0}, {"&&", TK_AND, 0}, {"&>>", TK_REDIR, R_AMPDGT},
		{"&>", TK_REDIR, R_AMPGT}, {"&", TK_AMP, 0}, {"||", TK_OR, 0},
		{"|&", TK_PIPEAMP, 0}, {"|", TK_PIPE, 0}, {"((", TK_DLPAREN, 0},
		{"(", TK_LPAREN, 0}, {")", TK_RPAREN, 0}, {"<<<", TK_REDIR, R_TLT},
		{"<<-", TK_REDIR, R_DLTDASH}, {"<<", TK_REDIR, R_DLT}, {"<&", TK_REDIR, R_LTAMP},
		{"<>", TK_REDIR, R_LTGT}, {"<", TK_REDIR, R_LT}, {">>", TK_REDIR, R_DGT},
		{">&", TK_REDIR, R_GTAMP}, {">|", TK_REDIR, R_CLOBBER}, {">", TK_REDIR, R_GT},
	};
	if (c == '\n') {
		p->pos++;
		t->t = TK_NEWLINE;
		if (p->npend)
			return sh_read_heredocs(p);
		return 0;
	}
	bool procsub = (c == '<' || c == '>') && p->pos + 1 < p->len && p->s[p->pos + 1] == '(';
	if (!procsub && strchr(";&|()<>", c)) {
		for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
			if (starts(p, ops[i].op)) {
				t->t = ops[i].t;
				t->rop = ops[i].rop;
				p->pos += strlen(ops[i].op);
				return 0;
			}
		}
	}
	t->t = TK_WORD;
	rc = sh_read_word(p, &t->w);
	if (rc < 0)
		return rc;
	/* IO number: digits or {name} immediately followed by < or > */
	if (p->pos < p->len && (p->s[p->pos] == '<' || p->s[p->pos] == '>') &&
	    !(p->pos + 1 < p->len && p->s[p->pos + 1] == '(') && !t->w.quoted && !t->w.unres &&
	    t->w.cells.len > 0) {
		const char *w = t->w.cells.c;
		size_t n = t->w.cells.len;
		bool digits = n <= 9, var = false;
		for (size_t i = 0; i < n && digits; i++)
			digits = w[i] >= '0' && w[i] <= '9';
		if (!digits && n >= 3 && w[0] == '{' && w[n - 1] == '}') {
			var = true;
			for (size_t i = 1; i + 1 < n && var; i++)
				var = w[i] == '_' || (w[i] >= 'a' && w[i] <= 'z') ||
				      (w[i] >= 'A' && w[i] <= 'Z') ||
				      (i > 1 && w[i] >= '0' && w[i] <= '9');
		}
		if (digits || var) {
			int fd = var ? -2 : atoi(w);
			sh_word_free(&t->w);
			memset(&t->w, 0, sizeof(t->w));
			for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
				if (ops[i].t == TK_REDIR && starts(p, ops[i].op)) {
					t->t = TK_REDIR;
					t->rop = ops[i].rop;
					t->fd = fd;
					p->pos += strlen(ops[i].op);
					return 0;
				}
			}
			return sh_fail_at(p, p->pos, -EINVAL, "bad redirection");
		}
	}
	return 0;
}

int sh_peek(struct sh_parser *p, struct sh_tok **out)
{
	if (!p->have_la) {
		int rc = read_token(p, &p->la);
		if (rc < 0) {
			sh_tok_free(&p->la);
			return rc;
		}
		p->have_la = true;
	}
	*out = &p->la;
	return 0;
}

void sh_consume(struct sh_parser *p)
{
	if (p->have_la) {
		sh_tok_free(&p->la);
		p->have_la = false;
	}
}

/* Decide whether text after "((" is arithmetic ending in "))" (1) or a
 * nested subshell/substitution (0). Lexical only: quotes are skipped, parens
 * counted. Unterminated text counts as arithmetic (the reader reports it). */
int sh_arith_probe(const char *s, size_t len, size_t pos)
{
	size_t depth = 0;
	while (pos < len) {
		char c = s[pos];
		if (c == '\\') {
			pos += 2;
			continue;
		}
		if (c == '\'' || c == '"') {
			const char *q = memchr(s + pos + 1, c, len - pos - 1);
			if (!q)
				return 1;
			pos = (size_t)(q - s) + 1;
			continue;
		}
		if (c == '(')
			depth++;
		else if (c == ')') {
			if (depth == 0)
				return pos + 1 < len && s[pos + 1] == ')';
			depth--;
		}
		pos++;
	}
	return 1;
}
