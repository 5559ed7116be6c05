/* policy_decide: parse the line, decide every command that would execute,
 * and combine. For each command the first matching rule (in file order)
 * decides; a command the parser could not resolve gets at least the
 * policy's `unresolved:` decision; the strictest command decides the line.
 * Text that does not parse is allowed where the sandbox contains it, else
 * unresolved; what was parsed before the error is decided all the same.
 * Line-level checks (fork bombs) look at the raw text, so they work even
 * when parsing fails. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_MAX 160 /* bytes of a command shown in a reason */

static const char unresolved_suggestion[] =
	"spell the command out without dynamic parts (variables, command substitution, eval, "
	"piping into a shell), or have a supervisor review the held transaction";

/* "rm -rf /" for reasons: argv joined, control characters escaped, bounded. */
static char *show_argv(char *const *argv, size_t argc, const char *via)
{
	size_t cap = SHOW_MAX + 64, o = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	for (size_t i = 0; i < argc && argv[i] && o < SHOW_MAX; i++) {
		if (i)
			s[o++] = ' ';
		for (const char *c = argv[i]; *c && o < SHOW_MAX; c++) {
			if ((unsigned char)*c < 0x20 || *c == 0x7f) {
				o += (size_t)snprintf(s + o, cap - o, "\\x%02x", (unsigned char)*c);
			} else {
				s[o++] = *c;
			}
		}
	}
	if (o >= SHOW_MAX) {
		memcpy(s + o, "...", 3);
		o += 3;
	}
	s[o] = '\0';
	if (via) {
		char *t = NULL;
		if (asprintf(&t, "%s (via %s)", s, via) < 0)
			t = NULL;
		free(s);
		return t;
	}
	return s;
}

static char *show_text(const char *text)
{
	char *const one[] = {(char *)text, NULL};
	return show_argv(one, 1, NULL);
}

/* A command with its redirections, for reasons: "echo x > /etc/passwd". */
static char *show_cmd(const shell_cmd *cmd)
{
	char *base = show_argv(cmd->argv, cmd->argc, NULL);
	for (size_t i = 0; base && i < cmd->nredirs && i < 4; i++) {
		const shell_redir *rd = &cmd->redirs[i];
		const char *op = rd->kind == SHELL_REDIR_READ ? "<" : rd->kind == SHELL_REDIR_APPEND ? ">>" : ">";
		char *t = NULL;
		if (asprintf(&t, "%s %s %.*s", base, op, SHOW_MAX, rd->target ? rd->target : "?") < 0)
			t = NULL;
		free(base);
		base = t;
	}
	if (base && cmd->via) {
		char *t = NULL;
		if (asprintf(&t, "%s (via %s)", base, cmd->via) < 0)
			t = NULL;
		free(base);
		base = t;
	}
	return base;
}

static char **copy_argv(char *const *argv, size_t argc)
{
	char **v = calloc(argc + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < argc; i++) {
		v[i] = strdup(argv[i] ? argv[i] : "");
		if (!v[i]) {
			while (i > 0)
				free(v[--i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

void policy_verdict_free(policy_verdict *v)
{
	if (!v)
		return;
	free(v->rule);
	free(v->reason);
	free(v->suggestion);
	for (size_t i = 0; i < v->ncmds; i++) {
		if (v->cmds[i].argv)
			for (char **q = v->cmds[i].argv; *q; q++)
				free(*q);
		free(v->cmds[i].argv);
		free(v->cmds[i].rule);
	}
	free(v->cmds);
	memset(v, 0, sizeof(*v));
}

/* The line's current strictest decision and its explanation. */
typedef struct line_state {
	bool set;
	policy_decision d;
	const char *rule;
	char *reason;
	const char *suggestion;
} line_state;

static void line_offer(line_state *ls, policy_decision d, const char *rule_id, char *reason,
		       const char *suggestion)
{
	if (ls->set && d <= ls->d) {
		free(reason);
		return;
	}
	free(ls->reason);
	ls->set = true;
	ls->d = d;
	ls->rule = rule_id;
	ls->reason = reason;
	ls->suggestion = suggestion;
}

static char *join_words(const char *const *argv, size_t argc)
{
	size_t len = 1;
	for (size_t i = 0; i < argc; i++)
		len += strlen(argv[i] ? argv[i] : "") + 1;
	char *s = malloc(len), *o = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < argc; i++) {
		if (i)
			*o++ = ' ';
		o = stpcpy(o, argv[i] ? argv[i] : "");
	}
	*o = '\0';
	return s;
}

static bool inside_workspace(const char *path, const char *ws)
{
	size_t n = strlen(ws);
	return path && strncmp(path, ws, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Did a relative move from `from` (the line's directory under ctx) to `to`
 * leave the workspace? Then relative paths there are its neighbours. */
static bool climbs_out(const policy_ctx *ctx, const char *from, const char *to)
{
	return from && (ctx->cwd_climbed || path_within(from, ctx->workspace)) &&
	       !path_within(to, ctx->workspace);
}

/* `cd DIR` / `pushd DIR` moves where later relative paths start; an
 * unknown target (or popd, cd -) makes it unknown (ctx->cwd NULL).
 * The analysis does not know whether a cd runs in this shell (a subshell,
 * a pipeline, `&`, a substitution) or succeeds, nor what CDPATH does. A cd
 * from inside the workspace to inside it is simply followed (either way
 * relative paths land inside). Any other cd keeps two hypotheses — the
 * target and where we were (ctx->cwd_alt) — and paths are judged under
 * both; a further cd while two are open, or a line touching CDPATH, makes
 * the directory unknown, and unknown paths never satisfy an allow. */
static int track_cd(const cmdview *v, policy_ctx *ctx, char **cwd, char **alt, bool cdpath)
{
	if (v->name_unknown || (strcmp(v->name, "cd") && strcmp(v->name, "pushd") &&
				strcmp(v->name, "popd")))
		return 0;
	char *next = NULL;
	bool climbed = false;
	if (strcmp(v->name, "popd") == 0) {
		next = NULL;
	} else if (v->npositional == 0) {
		if (ctx->home && !(next = strdup(ctx->home)))
			return -ENOMEM;
	} else {
		const char *w = v->words[v->positional[0]];
		if (!v->pos_unknown[0] && strcmp(w, "-") != 0 && (ctx->cwd || !path_is_relative(w))) {
			next = path_resolve(w, ctx->cwd ? ctx->cwd : "/", ctx->home);
			if (!next && (w[0] != '~' || ctx->home))
				return -ENOMEM;
			climbed = next && path_is_relative(w) && climbs_out(ctx, ctx->cwd, next);
		}
	}
	char *prev = *cwd;
	bool settled = !*alt && inside_workspace(prev, ctx->workspace) && inside_workspace(next, ctx->workspace);
	if (next && !cdpath && !settled && !*alt && prev) {
		*alt = prev; /* the cd may not have happened */
		prev = NULL;
	} else if (next && (cdpath || !settled)) {
		free(next); /* too many hypotheses: unknown */
		next = NULL;
		free(*alt);
		*alt = NULL;
	}
	free(prev);
	*cwd = next;
	ctx->cwd = next;
	ctx->cwd_alt = *alt;
	ctx->cwd_climbed = next && climbed;
	return 0;
}

/* Fork bombs: in the line outside quoted strings, or in the code a shell
 * command runs (sh -c '...', eval '...'), where quotes no longer hide it. */
static bool line_has_fork_bomb(const char *text, size_t len, const cmdview *views, size_t n)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash",
					     "busybox", "eval", "su", "sudo", "script", "watch"};
	if (builtin_fork_bomb_unquoted(text, len))
		return true;
	for (size_t c = 0; c < n; c++) {
		bool shell = false;
		for (size_t k = 0; k < sizeof(shells) / sizeof(*shells) && !views[c].name_unknown; k++)
			shell = shell || strcmp(views[c].name, shells[k]) == 0;
		for (size_t w = views[c].start + 1; shell && w < views[c].nwords; w++)
			if (builtin_fork_bomb(views[c].words[w], strlen(views[c].words[w])))
				return true;
	}
	return false;
}

/* A command an option moved (env -C DIR, git -C DIR, …) resolves its
 * relative paths there: under both hypotheses of the line's directory the
 * moved one is the same when DIR is absolute; else unknown where the line's
 * is, or DIR is not static. */
static int cmd_moved_ctx(const shell_cmd *cmd, const policy_ctx *line, policy_ctx *out, char **moved)
{
	*moved = NULL;
	if (!cmd->cwd && !cmd->cwd_unresolved)
		return 0;
	out->cwd_alt = NULL;
	out->cwd = NULL;
	out->cwd_climbed = false;
	if (cmd->cwd_unresolved || !cmd->cwd)
		return 0;
	bool absolute = !path_is_relative(cmd->cwd);
	if (!absolute && (!line->cwd || line->cwd_alt))
		return 0;
	*moved = path_resolve(cmd->cwd, absolute ? "/" : line->cwd, line->home);
	if (!*moved && (cmd->cwd[0] != '~' || line->home))
		return -ENOMEM;
	out->cwd = *moved;
	out->cwd_climbed = !absolute && climbs_out(line, line->cwd, *moved);
	return 0;
}

/* What this run lets escape the sandbox, for reasons. */
static const char *escape_text(const policy_ctx *ctx)
{
	if (ctx->host_sockets)
		return "the workspace is committed and a host socket is reachable";
	if (ctx->network)
		return "the workspace is committed and the network is granted";
	return "the workspace is committed";
}

/* A rule matched only through words that cannot be resolved: the reason
 * says what was found (that word), never the rule's own label. */
static int offer_unknown(line_state *ls, const policy *p, const policy_ctx *ctx,
			 const shell_cmd *cmd, const rule *hit, const match_result *res)
{
	_cleanup_free_ char *shown = show_cmd(cmd);
	const char *w = res->unknown_word ? res->unknown_word : "a word";
	if (strcmp(w, "\u2026") == 0 || strstr(w, "{}"))
		w = "what it is fed (xargs, find -exec)";
	else if (cmd->cwd_unresolved)
		w = "the directory it runs in (a -C / --chdir option)";
	_cleanup_free_ char *word = show_text(w);
	char *reason = NULL;
	if (!shown || !word ||
	    asprintf(&reason,
		     "%s: %s cannot be resolved statically, and some values of it would make "
		     "rule %s apply, whose effect the sandbox would not contain (%s)",
		     shown, word, hit->id, escape_text(ctx)) < 0)
		return -ENOMEM;
	policy_decision d = hit->decision < p->unresolved ? hit->decision : p->unresolved;
	line_offer(ls, d, "unresolved", reason, unresolved_suggestion);
	return 0;
}

static void analysisp(shell_analysis *a) { shell_analysis_free(a); }
static void errorp(txbox_error *e) { txbox_error_clear(e); }

/* Text that does not parse as POSIX shell (a Makefile recipe, PowerShell,
 * nushell): /bin/sh most likely refuses it too, and where it and our parser
 * disagree the sandbox and the effect policy still contain what it does —
 * unless this run lets effects escape, where it is held. The commands
 * parsed before the error are judged all the same (a holds them), so a
 * resolved `rm -rf ~` there still decides. */
static int offer_unparsed(const policy *p, const policy_ctx *ctx, const char *text,
			  const txbox_error *perr, const shell_analysis *a, line_state *ls)
{
	bool escapes = ctx->network || ctx->host_sockets;
	bool contained = !escapes && a->partial;
	const char *msg = perr->message ? perr->message : "syntax error";
	_cleanup_free_ char *shown = show_text(text);
	char *reason = NULL;
	int r;
	if (!shown)
		return -ENOMEM;
	if (contained)
		r = asprintf(&reason, "%s: not parsed as POSIX shell (%s); the sandbox contains "
				      "whatever it does", shown, msg);
	else
		r = asprintf(&reason, "%s: cannot be parsed, so it cannot be classified (%s)%s%s%s",
			     shown, msg, escapes ? ", and the sandbox would not contain its effect (" : "",
			     escapes ? escape_text(ctx) : "", escapes ? ")" : "");
	if (r < 0)
		return -ENOMEM;
	line_offer(ls, contained ? POLICY_ALLOW : p->unresolved, "unresolved", reason,
		   contained ? NULL : unresolved_suggestion);
	return 0;
}

/* Parse the line into a; a line that does not parse offers its decision. */
static int analyze_line(const policy *p, const policy_ctx *ctx, const char *const *argv,
			size_t argc, const char *text, shell_analysis *a, line_state *ls,
			policy_verdict *out)
{
	_cleanup_(errorp) txbox_error perr = TXBOX_ERROR_INIT;
	int pr = argc == 1 ? shell_analyze_partial(text, strlen(text), NULL, a, &perr)
			   : shell_analyze_argv(argv, argc, NULL, a, &perr);
	out->unresolved = pr < 0 || a->unresolved;
	if (pr >= 0)
		return 0;
	if (pr == -ENOMEM && !perr.message)
		return pr;
	if (argc == 1 && a->syntax_error)
		return offer_unparsed(p, ctx, text, &perr, a, ls);
	shell_analysis_free(a);
	_cleanup_free_ char *shown = show_text(text);
	char *reason = NULL;
	if (!shown || asprintf(&reason, "%s: cannot be parsed, so it cannot be classified (%s)",
			       shown, perr.message ? perr.message : "syntax error") < 0)
		return -ENOMEM;
	line_offer(ls, p->unresolved, "unresolved", reason, unresolved_suggestion);
	return 0;
}

int policy_decide(const policy *p, const policy_ctx *ctx, const char *const *argv, size_t argc,
		  policy_verdict *out, txbox_error *err)
{
	_cleanup_(analysisp) shell_analysis a = {0};
	_cleanup_free_ char *ws = NULL, *cwd = NULL, *cwd_alt = NULL, *home = NULL, *joined = NULL;
	cmdview *views = NULL;
	_cleanup_free_ long *with_count = NULL;
	_cleanup_free_ signed char *text_hit = NULL;
	size_t nviews = 0;
	line_state ls = {0};
	int r = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!p || !ctx || !argv || argc == 0)
		return txbox_fail(err, -EINVAL, "policy_decide: no policy, context or command");
	for (size_t i = 0; i < argc; i++)
		if (!argv[i])
			return txbox_fail(err, -EINVAL, "policy_decide: argv[%zu] is NULL", i);
	if (!ctx->workspace || ctx->workspace[0] != '/')
		return txbox_fail(err, -EINVAL, "policy_decide: the workspace must be an absolute path");
	ws = path_resolve(ctx->workspace, "/", NULL);
	cwd = path_resolve(ctx->cwd && ctx->cwd[0] == '/' ? ctx->cwd : ctx->workspace, "/", NULL);
	if (ctx->home && ctx->home[0] == '/')
		home = path_resolve(ctx->home, "/", NULL);
	if (!ws || !cwd || (ctx->home && ctx->home[0] == '/' && !home))
		goto oom;
	const char *const *socks = (const char *const *)p->sandbox.allowed_sockets;
	policy_ctx nctx = {.workspace = ws,
			   .cwd = cwd,
			   .home = home,
			   .network = ctx->network || p->sandbox.network,
			   .host_sockets = ctx->host_sockets || (socks && socks[0])};

	const char *text = argv[0];
	/* CDPATH changes where a relative `cd` goes (txbox removes it from the
	 * command's environment; a line may still set it) */
	bool cdpath = false;
	for (size_t i = 0; i < argc && !cdpath; i++)
		cdpath = argv[i] && strstr(argv[i], "CDPATH") != NULL;
	if (argc > 1) {
		if (!(joined = join_words(argv, argc)))
			goto oom;
		text = joined;
	}
	size_t tlen = strlen(text);

	if (analyze_line(p, &nctx, argv, argc, text, &a, &ls, out) < 0)
		goto oom;

	views = calloc(a.ncmds + 1, sizeof(*views));
	with_count = malloc((p->nrules + 1) * sizeof(*with_count));
	text_hit = malloc(p->nrules + 1);
	if (!views || !with_count || !text_hit)
		goto oom;
	for (size_t i = 0; i < p->nrules; i++) {
		with_count[i] = -1;
		text_hit[i] = -1;
	}
	out->cmds = calloc(a.ncmds + 1, sizeof(*out->cmds));
	if (!views || !out->cmds)
		goto oom;
	/* feeds later xargs / find -exec commands: a find walks its start paths,
	 * ls prints names in (or of) its operands (ls -d ~/.ssh/x* | xargs cat) */
	const cmdview *last_find = NULL;
	for (; nviews < a.ncmds; nviews++) {
		cmdview *cv = &views[nviews];
		if (cmdview_init(cv, p, &a.cmds[nviews]) < 0)
			goto oom;
		if (cv->implicit_unknown_operand)
			cv->operand_source = last_find;
		if (!cv->name_unknown && (strcmp(cv->name, "find") == 0 || strcmp(cv->name, "ls") == 0))
			last_find = cv;
	}

	/* line-level built-ins */
	for (size_t i = 0; i < p->nrules; i++) {
		const rule *ru = &p->rules[i];
		if ((ru->m.builtins & BUILTIN_FORK_BOMB) && line_has_fork_bomb(text, tlen, views, nviews)) {
			_cleanup_free_ char *shown = show_text(text);
			char *reason = NULL;
			if (!shown || asprintf(&reason, "%s: %s", shown, ru->reason) < 0)
				goto oom;
			line_offer(&ls, ru->decision, ru->id, reason, ru->suggestion);
			break;
		}
	}

	for (size_t c = 0; c < a.ncmds; c++) {
		const shell_cmd *cmd = &a.cmds[c];
		_cleanup_free_ char *moved = NULL;
		policy_ctx cctx = nctx;
		if (cmd_moved_ctx(cmd, &nctx, &cctx, &moved) < 0)
			goto oom;
		match_ctx mc = {p, &cctx, &a, views, nviews, c, text, with_count, text_hit};
		policy_decision d = POLICY_ALLOW;
		const rule *hit = NULL;
		match_result res = {0};
		for (size_t i = 0; i < p->nrules; i++) {
			if ((r = rule_match_cmd(&p->rules[i], &mc, &res)) < 0)
				goto oom;
			if (!res.matched)
				continue;
			hit = &p->rules[i];
			d = hit->decision;
			if (res.unknown_only && d > p->unresolved)
				d = p->unresolved;
			break;
		}
		_cleanup_free_ char *detail = res.detail;
		const char *rid = hit ? hit->id : "default";
		if (hit && res.unknown_only) {
			if (offer_unknown(&ls, p, &nctx, cmd, hit, &res) < 0)
				goto oom;
			rid = "unresolved";
			out->unresolved = true;
			hit = NULL;
		}
		/* unresolved only in what the sandbox contains: allowed unless this
		 * run lets something escape */
		bool escapes = nctx.network || nctx.host_sockets;
		bool unresolved = (cmd->unresolved && (!cmd->contained || escapes)) ||
				  views[c].name_unknown;
		_cleanup_free_ char *shown = NULL;
		if ((hit || unresolved) && !(shown = show_cmd(cmd)))
			goto oom;
		if (unresolved && p->unresolved > d) {
			d = p->unresolved;
			rid = "unresolved";
			char *reason = NULL;
			if (asprintf(&reason, "%s: cannot be resolved statically (%s)%s%s%s", shown,
				     cmd->unresolved_reason ? cmd->unresolved_reason
							    : "the command name is dynamic",
				     cmd->contained ? ", and the sandbox would not contain its effect (" : "",
				     cmd->contained ? escape_text(&nctx) : "", cmd->contained ? ")" : "") < 0)
				goto oom;
			line_offer(&ls, d, rid, reason, unresolved_suggestion);
			out->unresolved = true;
		} else if (hit) {
			char *reason = NULL;
			if (asprintf(&reason, "%s: %s%s%s%s", shown, hit->reason, detail ? " (" : "",
				     detail ? detail : "", detail ? ")" : "") < 0)
				goto oom;
			line_offer(&ls, d, rid, reason, hit->suggestion);
		}
		if (track_cd(&views[c], &nctx, &cwd, &cwd_alt, cdpath) < 0)
			goto oom;
		policy_cmd_verdict *cv = &out->cmds[out->ncmds];
		cv->argv = copy_argv(cmd->argv, cmd->argc);
		cv->rule = strdup(rid);
		cv->decision = d;
		out->ncmds++;
		if (!cv->argv || !cv->rule)
			goto oom;
	}

	if (!ls.set) {
		_cleanup_free_ char *shown = show_text(text);
		char *reason = NULL;
		if (!shown || asprintf(&reason, "%s: no rule matched", shown) < 0)
			goto oom;
		line_offer(&ls, POLICY_ALLOW, "default", reason, NULL);
	}
	out->decision = ls.d;
	out->rule = strdup(ls.rule);
	out->reason = ls.reason;
	ls.reason = NULL;
	out->suggestion = strdup(ls.suggestion ? ls.suggestion : "");
	if (!out->rule || !out->suggestion)
		goto oom;
	r = 0;
	goto done;
oom:
	r = txbox_fail(err, -ENOMEM, "policy: out of memory while classifying");
	free(ls.reason);
	policy_verdict_free(out);
done:
	for (size_t i = 0; i < nviews; i++)
		cmdview_free(&views[i]);
	free(views);
	return r;
}
