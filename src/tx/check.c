/* check: classification without execution (`txbox check`), policy file
 * validation, and recovery of a workspace's interrupted transactions. */
#include "tx/tx.h"

#include "policy/policy.h"
#include "sandbox/harden.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int txbox_check(const txbox_check_opts *opts, txbox_decision *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	if (!opts->argv || opts->argc == 0 || !opts->argv[0])
		return txbox_fail(err, -EINVAL, "no command given");
	_cleanup_free_ char *ws = NULL;
	_cleanup_close_ int ws_fd = -1;
	int r = workspace_open(opts->workspace, WS_ALLOW_FOREIGN | WS_CWD_NEW, &ws, &ws_fd, err); /* reads nothing of it */
	if (r < 0)
		return r;
	policy *pol = NULL;
	r = run_load_policy(opts->policy_file, &pol, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *cwd = run_start_dir(ws);
	/* as run: the policy's own grants are or'ed in by policy_decide */
	policy_ctx ctx = {.workspace = ws, .cwd = cwd ? cwd : ws, .home = getenv("HOME"),
			  .network = opts->net};
	policy_verdict v;
	r = policy_decide(pol, &ctx, opts->argv, opts->argc, &v, err);
	if (r >= 0) {
		if (run_fill_decision(&v, out) < 0)
			r = txbox_fail(err, -ENOMEM, "out of memory");
		policy_verdict_free(&v);
	}
	policy_free(pol);
	return r < 0 ? r : 0;
}

int txbox_policy_check(const char *path, txbox_error *err)
{
	policy *pol = NULL;
	int r = policy_load_file(path, &pol, err);
	policy_free(pol);
	return r < 0 ? r : 0;
}

int txbox_recover(const char *workspace, const char *state_dir, txbox_error *err)
{
	_cleanup_free_ char *ws = NULL;
	_cleanup_close_ int ws_fd = -1;
	/* as txbox_finish_held: only the caller's own state dir, none made */
	int r = workspace_open(workspace, WS_ALLOW_FOREIGN, &ws, &ws_fd, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *sdir = NULL;
	if ((r = state_dir_resolve(ws, ws_fd, state_dir, &sdir, err)) < 0)
		return r;
	tx_state_dir sd;
	r = state_dir_open(ws, ws_fd, sdir, 0, &sd, err);
	if (r == -ENOENT) {
		txbox_error_clear(err);
		return 0; /* no state dir: nothing to recover */
	}
	if (r < 0)
		return r;
	r = tx_recover_stale(&sd, err);
	state_dir_close(&sd);
	if (r >= 0) { /* cgroups a killed txbox left behind */
		txbox_error ce = TXBOX_ERROR_INIT;
		limits_cgroup_reap_stale(&ce);
		txbox_error_clear(&ce);
	}
	return r;
}
