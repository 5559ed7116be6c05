/* run: one command as a transaction —
 *   classify (policy/) → snapshot (layer) → execute (sandbox/) → validate →
 *   commit or roll back (finish.c) → result. */
#include "tx/tx.h"

#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "shell/shell.h"
#include "util/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

void txbox_run_opts_init(txbox_run_opts *o)
{
	memset(o, 0, sizeof *o);
	o->passthrough_stdout = -1;
	o->passthrough_stderr = -1;
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Copy a policy verdict into the public decision struct. */
int run_fill_decision(const policy_verdict *v, txbox_decision *d)
{
	memset(d, 0, sizeof *d);
	d->decision = xstrdup(policy_decision_name(v->decision));
	d->rule = xstrdup(v->rule);
	d->reason = xstrdup(v->reason);
	d->suggestion = xstrdup(v->suggestion);
	d->unresolved = v->unresolved;
	if (v->ncmds) {
		d->commands = calloc(v->ncmds, sizeof *d->commands);
		if (!d->commands)
			return -ENOMEM;
		d->ncommands = v->ncmds;
		for (size_t i = 0; i < v->ncmds; i++) {
			size_t n = 0;
			while (v->cmds[i].argv && v->cmds[i].argv[n])
				n++;
			d->commands[i].argv = calloc(n + 1, sizeof(char *));
			if (!d->commands[i].argv)
				return -ENOMEM;
			for (size_t j = 0; j < n; j++)
				d->commands[i].argv[j] = xstrdup(v->cmds[i].argv[j]);
			d->commands[i].decision = xstrdup(policy_decision_name(v->cmds[i].decision));
			d->commands[i].rule = xstrdup(v->cmds[i].rule);
		}
	}
	return 0;
}

int run_load_policy(const char *file, policy **out, txbox_error *err)
{
	if (file)
		return policy_load_file(file, out, err);
	return policy_load_default(out, err);
}

static void set_error(txbox_result *res, txbox_error *e)
{
	res->outcome = TXBOX_ERROR;
	res->exit_status = 125;
	if (!res->rollback_reason && res->ran)
		res->rollback_reason = "error";
	free(res->error);
	res->error = xstrdup(e->message ? e->message : "unknown error");
}

/* The directory inside the view to start in: the caller's cwd when it is
 * inside the workspace, else the workspace root. */
char *run_start_dir(const char *ws)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	size_t n = strlen(ws);
	if (cwd && strncmp(cwd, ws, n) == 0 && (cwd[n] == '/' || cwd[n] == '\0')) {
		/* never start inside the hidden state dir */
		const char *rest = cwd + n;
		if (strncmp(rest, "/" TX_STATE_DIR_NAME, sizeof(TX_STATE_DIR_NAME)) == 0 &&
		    (rest[sizeof(TX_STATE_DIR_NAME)] == '/' || rest[sizeof(TX_STATE_DIR_NAME)] == '\0'))
			return strdup(ws);
		return steal_ptr(cwd);
	}
	return strdup(ws);
}

/* Whether /bin/sh is dash: then a literal command may be exec'ed directly
 * as `sh -c` would (bash as sh would also import exported functions and
 * set SHLVL and _). The command's environment decides the rest, in the
 * sandbox (it is filtered there). */
static bool sh_is_dash(void)
{
	static int dash = -1;
	if (dash < 0) {
		char buf[PATH_MAX];
		char *real = realpath("/bin/sh", buf);
		const char *base = real ? strrchr(real, '/') : NULL;
		dash = base && !strcmp(base, "/dash");
	}
	return dash;
}

/* The --policy file relative to the workspace when it is inside it (its
 * effect rules may protect it), else NULL. */
static char *policy_rel_path(const char *file, const char *ws)
{
	if (!file)
		return NULL;
	_cleanup_free_ char *abs = realpath(file, NULL);
	size_t n = strlen(ws);
	if (!abs || strncmp(abs, ws, n) != 0 || abs[n] != '/')
		return NULL;
	return strdup(abs + n + 1);
}

/* The effect check's verdict into the result; a hold keeps the
 * transaction open, a deny rolls it back (nothing was applied). */
static void fill_effects(txbox_result *res, effect_verdict *v)
{
	res->has_effects = true;
	res->effects.decision = xstrdup(policy_decision_name(v->decision));
	res->effects.rule = steal_ptr(v->rule);
	res->effects.reason = steal_ptr(v->reason);
	res->effects.suggestion = steal_ptr(v->suggestion);
}

static int finish_effects(tx_state_dir *sd, tx *t, tx_commit_info *ci, txbox_result *res, txbox_error *e)
{
	policy_decision d = ci->effects.decision;
	fill_effects(res, &ci->effects);
	if (d == POLICY_HOLD) {
		if (tx_set_state(t, TX_HELD, e) < 0)
			return -1;
		res->outcome = TXBOX_HELD;
		res->exit_status = 3;
	} else if (d == POLICY_DENY) {
		res->outcome = TXBOX_ROLLED_BACK;
		res->rollback_reason = "effects";
		res->exit_status = 126;
		txbox_error re = TXBOX_ERROR_INIT;
		tx_rollback(sd, t, &re); /* nothing reached the workspace: a failed clean-up is garbage only */
		txbox_error_clear(&re);
	}
	return 0;
}

static void delete_stale(void *arg)
{
	txbox_error e = TXBOX_ERROR_INIT;
	tx_delete_stale(arg, &e); /* a failure: recycle retries, else the tx dir is removed */
	txbox_error_clear(&e);
}

int txbox_run(const txbox_run_opts *opts, txbox_result **out, txbox_error *err)
{
	uint64_t t0 = clock_now_ns();
	*out = NULL;
	if (!opts->argv || opts->argc == 0 || !opts->argv[0])
		return txbox_fail(err, -EINVAL, "no command given");
	txbox_result *res = result_new();
	if (!res)
		return txbox_fail(err, -ENOMEM, "out of memory");
	*out = res;

	txbox_error e = TXBOX_ERROR_INIT;
	_cleanup_free_ char *ws = NULL;
	_cleanup_close_ int ws_fd = -1;
	policy *pol = NULL;
	tx_state_dir sd = {.ws_fd = -1, .state_fd = -1, .txs_fd = -1};
	tx t = {.fd = -1, .lock_fd = -1, .top = {.upper_fd = -1, .work_fd = -1}};
	_cleanup_free_ const char **masked = NULL;
	_cleanup_free_ char *cwd_in = NULL;
	_cleanup_free_ char *state_abs = NULL;
	_cleanup_free_ char *state_dir = NULL; /* --state-dir, or the one the workspace records */
	_cleanup_free_ char *policy_rel = NULL;
	_cleanup_free_ const char **argv = NULL;
	char **literal = NULL, **vliteral = NULL;
	policy_verdict verdict;
	memset(&verdict, 0, sizeof verdict);
	bool have_verdict = false;
	sandbox_outcome so;
	memset(&so, 0, sizeof so);

	if (workspace_open(opts->workspace, opts->allow_foreign_workspace ? WS_ALLOW_FOREIGN : 0, &ws, &ws_fd, &e) < 0)
		goto fail;

	if (state_dir_resolve(ws, ws_fd, opts->state_dir, &state_dir, &e) < 0)
		goto fail;
	trace_mark("run: workspace opened");
	/* The policy (its sandbox settings are needed to start the sandbox). */
	uint64_t tp = clock_now_ns();
	if ((opts->policy_file ? policy_load_file_in(opts->policy_file, ws_fd, &pol, &e)
			       : policy_load_default(&pol, &e)) < 0)
		goto fail;
	const policy_sandbox *ps = policy_get_sandbox(pol);
	const char *home = getenv("HOME");
	cwd_in = run_start_dir(ws); /* where the command starts: relative paths are judged from there */
	double policy_ms = clock_ms_since(tp);
	trace_mark("run: policy loaded");

	/* Effective limits: the command line overrides the policy. */
	res->limits.memory_bytes = opts->limits.memory_bytes ? opts->limits.memory_bytes : ps->memory_bytes;
	res->limits.pids = opts->limits.pids ? opts->limits.pids : ps->pids;
	res->limits.cpu_seconds = opts->limits.cpu_seconds ? opts->limits.cpu_seconds : ps->cpu_seconds;
	res->limits.disk_bytes = opts->limits.disk_bytes ? opts->limits.disk_bytes : ps->disk_bytes;
	res->network_host = opts->net || ps->network;
	double timeout = opts->timeout_sec > 0 ? opts->timeout_sec : ps->timeout_sec;

	/* A state dir outside the workspace exists before the sandbox starts
	 * (the sandbox opens it); the workspace's own .txbox is made only for a
	 * command that is not denied. */
	if (state_dir) {
		if (state_dir_open(ws, ws_fd, state_dir, STATE_CREATE, &sd, &e) < 0)
			goto fail;
		state_abs = realpath(state_dir, NULL);
		if (!state_abs) {
			txbox_fail_errno(&e, -errno, "resolving the state dir %s", state_dir);
			goto fail;
		}
	}

	/* The policy's secrets ("~/" is expanded by secrets.c), plus a state dir
	 * outside the workspace: it holds other transactions' layers. */
	size_t nmask = 0;
	while (ps->masked_paths && ps->masked_paths[nmask])
		nmask++;
	masked = calloc(nmask + 2, sizeof *masked);
	if (masked) {
		for (size_t i = 0; i < nmask; i++)
			masked[i] = ps->masked_paths[i];
		if (state_abs)
			masked[nmask] = state_abs;
	}
	if (!masked) {
		txbox_fail(&e, -ENOMEM, "out of memory");
		goto fail;
	}
	const char *shargv[] = {"/bin/sh", "-c", opts->argv[0], NULL};
	/* One plain command (no quoting, expansion, operator, builtin) is
	 * exec'ed as the shell would, without starting one. */
	if (opts->argc == 1 && sh_is_dash())
		literal = shell_literal_argv(opts->argv[0]);
	if (opts->validate && sh_is_dash())
		vliteral = shell_literal_argv(opts->validate);
	if (opts->argc > 1) {
		argv = calloc(opts->argc + 1, sizeof *argv);
		if (!argv) {
			txbox_fail(&e, -ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(argv, opts->argv, opts->argc * sizeof *argv);
	}
	static const char *const writable[] = {"/tmp", "/var/tmp", "/dev/shm", "/dev/null", "/dev/zero",
					       "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", NULL};
	bool rootless = geteuid() != 0;
	sandbox_spec spec = {
		.workspace = ws,
		.cwd = cwd_in ? cwd_in : ws,
		.state_name = state_abs ? NULL : TX_STATE_DIR_NAME,
		.state_path = state_abs,
		.argv = literal ? (const char *const *)literal : opts->argc == 1 ? shargv : argv,
		.shell_text = literal ? opts->argv[0] : NULL,
		.validate = opts->validate,
		.validate_argv = (const char *const *)vliteral,
		.envp = environ,
		.env_deny = (const char *const *)ps->env_deny,
		.timeout_sec = timeout,
		.output_limit = opts->output_limit ? opts->output_limit : 1024 * 1024,
		.passthrough_stdout = opts->passthrough_stdout,
		.passthrough_stderr = opts->passthrough_stderr,
		.network = res->network_host,
		.use_userns = rootless,
		.masked_paths = masked,
		.allowed_sockets = (const char *const *)ps->allowed_sockets,
		.home = home,
		.harden =
			{
				.workspace = ws,
				.writable = writable,
				.network = res->network_host,
				.in_userns = rootless,
				.keep_namespaced_caps = !rootless,
				.cpu_seconds = res->limits.cpu_seconds,
				.nofile = ps->nofile,
				.fsize_bytes = ps->fsize_bytes,
				.no_core = true,
			},
		.limits = res->limits,
	};
	/* The sandbox starts now: creating its namespaces and the parts of its
	 * view that need no layer runs on the other CPU while the command is
	 * classified and the snapshot taken. Nothing runs in it before the
	 * verdict; a denied command's sandbox is killed unused. */
	sandbox *sb = NULL;
	trace_mark("run: spec ready");
	/* A sandbox that cannot start is reported after classification: a
	 * command the policy denies is denied whatever this machine offers. */
	txbox_error start_err = TXBOX_ERROR_INIT;
	sandbox_start(&spec, &sb, &start_err);

	/* 1–2: classify. */
	tp = clock_now_ns();
	if (!opts->skip_policy) {
		policy_ctx ctx = {.workspace = ws, .cwd = cwd_in ? cwd_in : ws, .home = home,
				  .network = res->network_host};
		if (policy_decide(pol, &ctx, opts->argv, opts->argc, &verdict, &e) < 0) {
			sandbox_abort(sb);
			txbox_error_clear(&start_err);
			goto fail;
		}
		have_verdict = true;
		if (run_fill_decision(&verdict, &res->decision) < 0) {
			sandbox_abort(sb);
			txbox_error_clear(&start_err);
			txbox_fail(&e, -ENOMEM, "out of memory");
			goto fail;
		}
		res->has_decision = true;
	}
	res->timings.policy_ms = policy_ms + clock_ms_since(tp);
	trace_mark("run: policy decided");
	if (have_verdict && verdict.decision == POLICY_DENY) {
		sandbox_abort(sb);
		txbox_error_clear(&start_err);
		res->outcome = TXBOX_DENIED;
		res->exit_status = 126;
		res->rollback_reason = "policy";
		goto done;
	}
	if (!sb) {
		txbox_error_move(&e, &start_err);
		goto fail;
	}

	/* 3: snapshot. */
	uint64_t ts = clock_now_ns();
	if (!state_dir && state_dir_open(ws, ws_fd, NULL, STATE_CREATE, &sd, &e) < 0) {
		sandbox_abort(sb);
		goto fail;
	}
	if (tx_recover_stale(&sd, &e) < 0 || tx_create(&sd, &t, &e) < 0) {
		sandbox_abort(sb);
		goto fail;
	}
	res->tx = strdup(t.id);
	if (layer_create(t.fd, 0, ws_fd, sd.state_inside ? TX_STATE_DIR_NAME : NULL, spec.use_userns, &t.top, &e) <
	    0) {
		sandbox_abort(sb);
		goto fail_tx;
	}
	res->timings.snapshot_ms = clock_ms_since(ts);
	trace_mark("run: snapshot layer created");

	/* 4–5: execute and validate. */
	char layer_rel[TX_ID_MAX + 32];
	snprintf(layer_rel, sizeof layer_rel, "tx/%s/layers/0", t.id);
	sandbox_layer sl = {
		.rel = layer_rel,
		.upper_fd = t.top.upper_fd,
		.hide_state_by_whiteout = t.top.state_whiteout,
		.txid = t.id,
		.while_running = delete_stale,
		.while_running_arg = &t,
	};
	if (sandbox_run_layer(sb, &sl, &so, &e) < 0) {
		res->stdout_buf = steal_ptr(so.out);
		res->stdout_len = so.out_len;
		res->stderr_buf = steal_ptr(so.err);
		res->stderr_len = so.err_len;
		goto fail_tx;
	}
	res->timings.exec_ms = so.exec_ms;
	res->ran = so.started || so.timed_out;
	res->exit_code = so.exit_code;
	res->signal = so.timed_out ? 0 : so.signal;
	res->limit_mechanism = so.mechanism;
	res->stdout_buf = steal_ptr(so.out);
	res->stdout_len = so.out_len;
	res->stdout_truncated = so.out_truncated;
	res->stderr_buf = steal_ptr(so.err);
	res->stderr_len = so.err_len;
	res->stderr_truncated = so.err_truncated;
	if (opts->validate) {
		res->has_validation = true;
		res->validation_exit_code = so.validation_ran ? so.validation_exit : -1;
	}

	trace_mark("run: sandbox done");
	/* Decide. */
	uint64_t tf = clock_now_ns();
	if (so.timed_out) {
		res->rollback_reason = "timeout";
		res->exit_status = 124;
	} else if (so.limit) {
		res->rollback_reason = "limit";
		res->limit = so.limit;
		if (so.limit_detail[0] && !res->error)
			res->error = strdup(so.limit_detail); /* NULL (no detail) if out of memory */
		res->exit_status = so.exit_code ? so.exit_code : 1;
	} else if (so.signal) {
		res->rollback_reason = "signal";
		res->exit_status = 128 + so.signal;
	} else if (so.exit_code != 0) {
		res->rollback_reason = "exit_status";
		res->exit_status = so.exit_code;
	} else if (so.validation_ran && so.validation_exit != 0) {
		res->rollback_reason = "validation";
		res->exit_status = so.validation_exit;
	}

	if (res->rollback_reason) {
		res->outcome = TXBOX_ROLLED_BACK;
		sandbox_reap(&so);
		/* nothing of the layer reached the workspace: a failed clean-up
		 * leaves garbage for recovery, not a failed rollback */
		if (tx_rollback(&sd, &t, &e) < 0)
			txbox_error_clear(&e);
	} else if (have_verdict && verdict.decision == POLICY_HOLD) {
		sandbox_reap(&so);
		if (tx_set_state(&t, TX_HELD, &e) < 0)
			goto fail_tx;
		res->outcome = TXBOX_HELD;
		res->exit_status = 3;
	} else {
		tx_commit_info ci;
		/* Init tears its namespaces down on the other CPU meanwhile. */
		/* --timeout bounds the whole transaction, its commit included */
		uint64_t deadline = timeout > 0 ? t0 + (uint64_t)(timeout * 1e9) : 0;
		policy_rel = policy_rel_path(opts->policy_file, ws);
		tx_effects_in fx = {.policy = pol, .policy_rel = policy_rel};
		int r = tx_commit_checked(&sd, &t, ps->strip_setuid, deadline, &fx, &ci, &e);
		sandbox_reap(&so); /* deleting while it tears down only slows both */
		res->changes = ci.changes;
		res->nchanges = ci.nchanges;
		if (r >= 0 && ci.effects_checked && ci.effects.decision != POLICY_ALLOW) {
			r = finish_effects(&sd, &t, &ci, res, &e);
			effect_verdict_free(&ci.effects);
			if (r < 0)
				goto fail_tx;
		} else if (r < 0) {
			bool refused = ci.refused;
			txbox_error re = TXBOX_ERROR_INIT;
			/* Nothing of it stays: the journal reverses any partial apply. */
			tx_reverse_journal(&sd, &t, &re);
			txbox_error_clear(&re);
			if (refused || ci.timed_out) {
				res->outcome = TXBOX_ROLLED_BACK;
				res->rollback_reason = refused ? "policy" : "timeout";
				res->exit_status = refused ? 126 : 124; /* refused by policy, like a deny */
				res->error = xstrdup(e.message);
				txbox_error_clear(&e);
			} else
				goto fail_tx_noremove;
		} else {
			if (ci.effects_checked)
				fill_effects(res, &ci.effects);
			res->outcome = TXBOX_COMMITTED;
			res->exit_status = 0;
			if (tx_recycle(&sd, &t, &e) < 0) { /* committed; leftovers are cleaned next time */
				txbox_error_clear(&e);
			}
		}
	}
	sandbox_reap(&so);
	res->timings.finish_ms = clock_ms_since(tf);
	trace_mark("run: finished (commit/rollback + tx removed)");
	goto done;

fail_tx:
	sandbox_reap(&so);
	if (t.fd >= 0) {
		txbox_error re = TXBOX_ERROR_INIT;
		tx_rollback(&sd, &t, &re);
		txbox_error_clear(&re);
	}
fail_tx_noremove:
	sandbox_reap(&so);
fail:
	set_error(res, &e);
done:
	res->timings.total_ms = clock_ms_since(t0);
	sandbox_outcome_free(&so);
	tx_close(&t);
	state_dir_close(&sd);
	if (have_verdict)
		policy_verdict_free(&verdict);
	policy_free(pol);
	shell_literal_argv_free(literal);
	shell_literal_argv_free(vliteral);
	txbox_error_clear(&e);
	return 0;
}
