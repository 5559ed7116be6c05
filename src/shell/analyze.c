/* shell_analyze: text → nodes (parser) → commands (unwrap), with limits.
 *
 * Output conventions (see also word.c for words):
 *  - every command that would run is listed, in source order of its
 *    innermost construct; wrappers are listed as written and again for
 *    what they run (via = wrapper name, same depth); re-parsed text (sh -c,
 *    eval, $(…), heredoc fed to a shell, interpreter code) gets depth + 1;
 *  - a command with only redirections (`> f`, `{ …; } > f`) is listed with
 *    argc 0 so its writes are visible;
 *  - syntax errors and limits of the top-level text are errors (negative
 *    return); syntax errors in re-parsed text mark the command that runs it
 *    unresolved instead (bash would fail there, but fail closed).
 */
#include "shell/internal.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_LENGTH ((size_t)1 << 20)
#define DEFAULT_MAX_DEPTH 8u
#define DEFAULT_MAX_NODES ((size_t)100000)
#define HARD_MAX_DEPTH 32u

int sh_budget(struct sh_ctx *ctx, size_t n)
{
	if (ctx->nodes_used > ctx->max_nodes || n > ctx->max_nodes - ctx->nodes_used)
		return txbox_fail(ctx->err, -E2BIG, "shell: too many nodes (limit %zu)",
				  ctx->max_nodes);
	ctx->nodes_used += n;
	return 0;
}

static void cmd_free(shell_cmd *c)
{
	for (size_t i = 0; c->argv && i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	free(c->word_unresolved);
	free(c->unresolved_reason);
	for (size_t i = 0; i < c->nredirs; i++)
		free(c->redirs[i].target);
	free(c->redirs);
	free(c->via);
	free(c->cwd);
}

void shell_analysis_free(shell_analysis *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->ncmds; i++)
		cmd_free(&a->cmds[i]);
	free(a->cmds);
	free(a->unresolved_reason);
	memset(a, 0, sizeof(*a));
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* File redirection kind, or -1 for dups, closes and here-documents. */
static int redir_kind(const struct sh_redir_raw *r)
{
	if (r->procsub && (strncmp(r->target, "<(", 2) == 0 || strncmp(r->target, ">(", 2) == 0))
		return -1; /* > >(cmd): a pipe; cmd is reported itself (a target that
			    * only contains one, `> ~/x<(:)`, is still a file) */
	switch (r->op) {
	case R_LT:
		return SHELL_REDIR_READ;
	case R_LTGT: /* <> opens read-write and creates: a write as far as policy goes */
		return SHELL_REDIR_WRITE;
	case R_GT:
	case R_CLOBBER:
	case R_AMPGT:
		return SHELL_REDIR_WRITE;
	case R_DGT:
	case R_AMPDGT:
		return SHELL_REDIR_APPEND;
	case R_GTAMP:
		if (!r->unres && (all_digits(r->target) || strcmp(r->target, "-") == 0))
			return -1;
		return SHELL_REDIR_WRITE;
	case R_LTAMP:
		if (!r->unres && (all_digits(r->target) || strcmp(r->target, "-") == 0))
			return -1;
		return SHELL_REDIR_READ;
	default:
		return -1;
	}
}

int sh_emit(struct sh_ctx *ctx, const struct sh_field *argv, size_t argc,
	    const struct sh_redir_raw *const *redirs, size_t nredirs, const char *via,
	    unsigned depth)
{
	int rc = sh_budget(ctx, argc + 1);
	if (rc < 0)
		return rc;
	shell_analysis *a = ctx->out;
	if (a->ncmds >= (size_t)0x7fffffff)
		return txbox_fail(ctx->err, -E2BIG, "shell: too many commands");
	if (sh_vec_reserve((void **)&a->cmds, &ctx->out_cap, a->ncmds + 1, sizeof(*a->cmds)) < 0)
		return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
	shell_cmd *c = &a->cmds[a->ncmds];
	memset(c, 0, sizeof(*c));
	c->depth = depth;
	c->argv = calloc(argc + 1, sizeof(*c->argv));
	c->word_unresolved = calloc(argc + 1, sizeof(*c->word_unresolved));
	if (via)
		c->via = strdup(via);
	if (ctx->chdir)
		c->cwd = strdup(ctx->chdir);
	c->cwd_unresolved = ctx->chdir_unres;
	if (!c->argv || !c->word_unresolved || (via && !c->via) || (ctx->chdir && !c->cwd))
		goto nomem;
	for (size_t i = 0; i < argc; i++) {
		c->argv[i] = strdup(argv[i].text);
		if (!c->argv[i])
			goto nomem;
		c->argc = i + 1;
		/* a look-alike argument is matched as its folded text (what it
		 * pretends to be); only the command name's look-alikes are flagged */
		c->word_unresolved[i] = argv[i].unres || (i == 0 && argv[i].lookalike);
	}
	size_t nr = 0;
	for (size_t i = 0; i < nredirs; i++)
		if (redir_kind(redirs[i]) >= 0)
			nr++;
	if (nr) {
		c->redirs = calloc(nr, sizeof(*c->redirs));
		if (!c->redirs)
			goto nomem;
		for (size_t i = 0; i < nredirs; i++) {
			int k = redir_kind(redirs[i]);
			if (k < 0)
				continue;
			shell_redir *r = &c->redirs[c->nredirs];
			r->kind = (shell_redir_kind)k;
			r->unresolved = redirs[i]->unres;
			if (!r->unresolved) {
				r->target = strdup(redirs[i]->target);
				if (!r->target)
					goto nomem;
			}
			c->nredirs++;
		}
	}
	a->ncmds++;
	return (int)(a->ncmds - 1);
nomem:
	cmd_free(c);
	return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
}

void sh_mark_unresolved(struct sh_ctx *ctx, int idx, const char *reason)
{
	if (idx < 0 || (size_t)idx >= ctx->out->ncmds)
		return;
	shell_cmd *c = &ctx->out->cmds[idx];
	c->unresolved = true;
	if (c->env_only) { /* a reason of another kind replaces it */
		free(c->unresolved_reason);
		c->unresolved_reason = NULL;
		c->contained = false;
		c->env_only = false;
	}
	if (!c->unresolved_reason)
		c->unresolved_reason = strdup(reason); /* NULL on OOM: still unresolved */
}

void sh_mark_contained(struct sh_ctx *ctx, int idx, const char *reason)
{
	if (idx < 0 || (size_t)idx >= ctx->out->ncmds || ctx->out->cmds[idx].unresolved)
		return;
	sh_mark_unresolved(ctx, idx, reason);
	ctx->out->cmds[idx].contained = true;
	ctx->out->cmds[idx].env_only = true;
}

void sh_mark_env(struct sh_ctx *ctx, int idx, const char *reason)
{
	if (idx < 0 || (size_t)idx >= ctx->out->ncmds || ctx->out->cmds[idx].unresolved)
		return;
	sh_mark_unresolved(ctx, idx, reason);
	ctx->out->cmds[idx].env_only = true;
}

static bool name_in(const struct sh_node *n, bool (*pred)(const char *))
{
	if (n->argc == 0 || n->argv[0].unres)
		return false;
	return pred(sh_basename(n->argv[0].text));
}

static bool downloader(const char *n)
{
	static const char *const l[] = {"curl", "wget", "fetch", "aria2c", "http", "https",
					"lynx", "w3m", "nc", "ncat", "socat", "gh"};
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		if (strcmp(n, l[i]) == 0)
			return true;
	return false;
}

static bool decoder(const char *n)
{
	static const char *const l[] = {"base64", "base32", "basenc", "xxd", "openssl",
					"uudecode", "gunzip", "zcat", "gzip", "bzip2", "bzcat",
					"xz", "xzcat", "unxz", "rev", "tr", "od"};
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		if (strcmp(n, l[i]) == 0)
			return true;
	return false;
}

static bool is_stdin_redir(const struct sh_redir_raw *r)
{
	if (r->fd > 0 || r->fd == -2)
		return false;
	return r->op == R_LT || r->op == R_LTGT || r->op == R_DLT || r->op == R_DLTDASH ||
	       r->op == R_TLT;
}

/* Here-documents / here-strings opened on descriptors 1..9: by `exec N<<<
 * TEXT` for the rest of the text, or on the command itself. */
struct here_fds {
	const struct sh_redir_raw *fd[10];
};

static bool here_fd_target(const struct sh_redir_raw *r, int *fd)
{
	const char *t = r->target;
	if (r->op != R_LTAMP || r->fd > 0 || r->fd == -2 || r->unres || !t || t[0] < '1' ||
	    t[0] > '9' || t[1])
		return false;
	*fd = t[0] - '0';
	return true;
}

/* What the node's standard input is: a pipe, a here-document (also one
 * duplicated from another descriptor: `exec 3<<< TEXT; sh <&3`), a file
 * or a process substitution. The last redirection wins. */
static void node_stdin(const struct sh_node *n, struct here_fds *open, struct sh_stdin *in)
{
	struct here_fds own = *open;
	bool exec_only = n->argc == 1 && !n->argv[0].unres && strcmp(n->argv[0].text, "exec") == 0;
	*in = (struct sh_stdin){.piped = n->stdin_piped};
	for (size_t k = 0; k < n->nredirs; k++) {
		const struct sh_redir_raw *r = n->redirs[k];
		int fd = -1;
		if (r->fd >= 1 && r->fd <= 9)
			own.fd[r->fd] = r->here ? r : NULL;
		if (!is_stdin_redir(r) && !here_fd_target(r, &fd))
			continue;
		if (fd > 0)
			r = own.fd[fd];
		*in = (struct sh_stdin){0};
		if (!r) {
			in->redirected = true; /* a descriptor opened elsewhere */
		} else if (r->here) {
			in->body = r->body ? r->body : "";
			in->body_unres = r->body_unres;
			in->here_string = r->op == R_TLT;
		} else if (r->procsub) {
			in->procsub = true;
		} else {
			in->redirected = true;
		}
	}
	if (exec_only)
		*open = own;
}

static int analyze_nodes(struct sh_ctx *ctx, const struct sh_nodes *ns)
{
	/* per pipeline: has a downloader (1) / decoder (2) run so far; nodes
	 * of element k come after those of elements < k */
	size_t npipes = (size_t)ctx->pipe_seq + 1;
	uint8_t *pipe_src = calloc(npipes, 1);
	if (!pipe_src)
		return txbox_fail(ctx->err, -ENOMEM, "shell: out of memory");
	int rc = 0;
	struct here_fds fds = {0};
	for (size_t i = 0; i < ns->n && rc == 0; i++) {
		const struct sh_node *n = &ns->v[i];
		struct sh_stdin in;
		node_stdin(n, &fds, &in);
		bool known = n->pipe_id < npipes;
		if (in.piped && known) {
			in.downloaded = pipe_src[n->pipe_id] & 1;
			in.decoded = pipe_src[n->pipe_id] & 2;
		}
		if (known && name_in(n, downloader))
			pipe_src[n->pipe_id] |= 1;
		if (known && name_in(n, decoder))
			pipe_src[n->pipe_id] |= 2;
		int idx = (int)ctx->out->ncmds; /* the node's own command, if it emits one */
		bool files = n->argc > 0;
		for (size_t k = 0; k < n->nredirs; k++)
			if (redir_kind(n->redirs[k]) >= 0)
				files = true;
		if (files)
			rc = sh_unwrap(ctx, n->argv, n->argc,
				       (const struct sh_redir_raw *const *)n->redirs, n->nredirs,
				       n->via, n->depth, &in, ns);
		if (rc == 0)
			rc = sh_env_prefix(ctx, n->env_cmds, n->nenv_cmds, n->depth, files ? idx : -1);
	}
	free(pipe_src);
	return rc;
}

int sh_reparse(struct sh_ctx *ctx, const char *text, size_t len, const char *via,
	       unsigned depth, int cmd_idx, const struct sh_stdin *in)
{
	if (depth > ctx->max_depth)
		return txbox_fail(ctx->err, -ELOOP, "shell: re-parse depth limit (%u) exceeded (%s)",
				  ctx->max_depth, via ? via : "");
	struct sh_nodes ns = {0};
	txbox_error sub = TXBOX_ERROR_INIT;
	txbox_error *saved = ctx->err;
	ctx->err = &sub;
	int rc = sh_parse_text(ctx, &ns, text, len, via, depth, in ? in->piped : false);
	ctx->err = saved;
	if (rc == -EINVAL && cmd_idx >= 0) {
		char buf[200];
		snprintf(buf, sizeof(buf), "%s: %s", via ? via : "re-parse",
			 sub.message ? sub.message : "syntax error");
		sh_mark_unresolved(ctx, cmd_idx, buf);
		rc = 0;
	} else if (rc < 0) {
		txbox_error_move(ctx->err, &sub);
		if (ctx->err)
			txbox_error_prefix(ctx->err, "%s", via ? via : "re-parse");
	} else {
		rc = analyze_nodes(ctx, &ns);
	}
	txbox_error_clear(&sub);
	sh_nodes_free(&ns);
	return rc;
}

static void finish(shell_analysis *a)
{
	const char *reason = NULL;
	for (size_t i = 0; i < a->ncmds; i++) {
		shell_cmd *c = &a->cmds[i];
		if (c->unresolved) {
			a->unresolved = true;
			if (!reason)
				reason = c->unresolved_reason ? c->unresolved_reason : "unresolved command";
		}
	}
	for (size_t i = 0; i < a->ncmds && !reason; i++) {
		shell_cmd *c = &a->cmds[i];
		for (size_t k = 0; k < c->argc && !reason; k++)
			if (c->word_unresolved[k])
				reason = "argument contains an unresolved expansion or look-alike character";
		for (size_t k = 0; k < c->nredirs && !reason; k++)
			if (c->redirs[k].unresolved)
				reason = "redirection target is not static";
	}
	if (reason) {
		a->unresolved = true;
		a->unresolved_reason = strdup(reason);
	}
}

static void ctx_init(struct sh_ctx *ctx, const shell_limits *lim, shell_analysis *out,
		     txbox_error *err)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->max_length = lim && lim->max_length ? lim->max_length : DEFAULT_MAX_LENGTH;
	ctx->max_depth = lim && lim->max_depth ? lim->max_depth : DEFAULT_MAX_DEPTH;
	if (ctx->max_depth > HARD_MAX_DEPTH)
		ctx->max_depth = HARD_MAX_DEPTH;
	ctx->max_nodes = lim && lim->max_nodes ? lim->max_nodes : DEFAULT_MAX_NODES;
	ctx->err = err;
	ctx->out = out;
}

/* After a syntax error: the commands of the nodes parsed before it (every
 * complete simple command, also inside a compound command the error left
 * unfinished). Errors of that analysis leave out empty. */
static void analyze_partial(struct sh_ctx *ctx, const struct sh_nodes *ns, shell_analysis *out)
{
	txbox_error scratch = TXBOX_ERROR_INIT;
	txbox_error *err = ctx->err;
	ctx->err = &scratch;
	int rc = analyze_nodes(ctx, ns);
	if (rc == 0)
		rc = sh_written_then_run(ctx);
	sh_ctx_release(ctx);
	ctx->err = err;
	txbox_error_clear(&scratch);
	if (rc < 0)
		shell_analysis_free(out);
	else
		finish(out);
	out->syntax_error = true;
	out->partial = rc == 0;
}

static int analyze_text(const char *text, size_t len, const shell_limits *lim, shell_analysis *out,
			bool partial, txbox_error *err)
{
	if (!out)
		return txbox_fail(err, -EINVAL, "shell: no output");
	memset(out, 0, sizeof(*out));
	if (!text && len)
		return txbox_fail(err, -EINVAL, "shell: no input");
	struct sh_ctx ctx;
	ctx_init(&ctx, lim, out, err);
	if (len > ctx.max_length)
		return txbox_fail(err, -E2BIG, "shell: command text too long (%zu bytes, limit %zu)",
				  len, ctx.max_length);
	if (len && memchr(text, '\0', len))
		return txbox_fail(err, -EINVAL, "shell: NUL byte in command text at byte %zu",
				  (size_t)((const char *)memchr(text, '\0', len) - text));
	struct sh_nodes ns = {0};
	int rc = sh_parse_text(&ctx, &ns, text ? text : "", len, NULL, 0, false);
	if (rc == -EINVAL && partial) {
		analyze_partial(&ctx, &ns, out);
		sh_nodes_free(&ns);
		return rc;
	}
	if (rc == 0)
		rc = analyze_nodes(&ctx, &ns);
	if (rc == 0)
		rc = sh_written_then_run(&ctx);
	sh_ctx_release(&ctx);
	sh_nodes_free(&ns);
	if (rc < 0) {
		shell_analysis_free(out);
		return rc;
	}
	finish(out);
	return 0;
}

int shell_analyze(const char *text, size_t len, const shell_limits *lim, shell_analysis *out,
		  txbox_error *err)
{
	return analyze_text(text, len, lim, out, false, err);
}

int shell_analyze_partial(const char *text, size_t len, const shell_limits *lim,
			  shell_analysis *out, txbox_error *err)
{
	return analyze_text(text, len, lim, out, true, err);
}

int shell_analyze_argv(const char *const *argv, size_t argc, const shell_limits *lim,
		       shell_analysis *out, txbox_error *err)
{
	if (!out)
		return txbox_fail(err, -EINVAL, "shell: no output");
	memset(out, 0, sizeof(*out));
	if (!argv && argc)
		return txbox_fail(err, -EINVAL, "shell: no argv");
	struct sh_ctx ctx;
	ctx_init(&ctx, lim, out, err);
	size_t total = 0;
	for (size_t i = 0; i < argc; i++) {
		if (!argv[i])
			return txbox_fail(err, -EINVAL, "shell: argv[%zu] is NULL", i);
		total += strlen(argv[i]) + 1;
	}
	if (total > ctx.max_length)
		return txbox_fail(err, -E2BIG, "shell: argv too long (%zu bytes, limit %zu)", total,
				  ctx.max_length);
	struct sh_field *f = calloc(argc + 1, sizeof(*f));
	if (!f)
		return txbox_fail(err, -ENOMEM, "shell: out of memory");
	int rc = 0;
	for (size_t i = 0; i < argc && rc == 0; i++) {
		f[i].text = strdup(argv[i]);
		if (!f[i].text) {
			rc = txbox_fail(err, -ENOMEM, "shell: out of memory");
			break;
		}
		rc = sh_normalize_lookalike(&f[i].text, i == 0, &f[i].lookalike);
		if (rc < 0)
			rc = txbox_fail(err, rc, "shell: out of memory");
	}
	if (rc == 0 && argc)
		rc = sh_unwrap(&ctx, f, argc, NULL, 0, NULL, 0, NULL, NULL);
	sh_ctx_release(&ctx);
	for (size_t i = 0; i < argc; i++)
		free(f[i].text);
	free(f);
	if (rc < 0) {
		shell_analysis_free(out);
		return rc;
	}
	finish(out);
	return 0;
}
