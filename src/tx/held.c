/* held: finishing a transaction that a hold decision left open. */
#include "tx/tx.h"

#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool has_journal(tx *t)
{
	return faccessat(t->fd, "journal", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The same journaled commit as txbox_run's: the state leaves "held"
 * (durably) before the first change, so a crash at any point is found and
 * reversed by recovery like any interrupted commit. */
static int commit_held(tx_state_dir *sd, tx *t, txbox_result *res, txbox_error *err)
{
	int r = tx_set_state(t, TX_APPLYING, err);
	if (r < 0)
		return r;
	tx_commit_info ci;
	r = tx_commit(sd, t, true, &ci, err);
	res->changes = ci.changes;
	res->nchanges = ci.nchanges;
	txbox_error re = TXBOX_ERROR_INIT;
	if (r < 0 && !has_journal(t))
		tx_set_state(t, TX_HELD, &re); /* refused before the commit point: still held (rt21) */
	else if (r < 0)
		tx_reverse_journal(sd, t, &re);
	else {
		res->outcome = TXBOX_COMMITTED;
		tx_remove(sd, t, &re);
	}
	txbox_error_clear(&re);
	return r;
}

#define HELD_BUSY_WAIT_NS (2ull * 1000000000ull)

int txbox_finish_held(const char *workspace, const char *state_dir, const char *txid, bool commit,
		      txbox_result **out, txbox_error *err)
{
	uint64_t t0 = clock_now_ns();
	*out = NULL;
	_cleanup_free_ char *ws = NULL;
	_cleanup_close_ int ws_fd = -1;
	/* Another user's workspace is no obstacle here: its state dir must be
	 * the caller's own (state_dir_open), which only an explicitly allowed
	 * run there can have made; none is created. */
	int r = workspace_open(workspace, WS_ALLOW_FOREIGN, &ws, &ws_fd, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *sdir = NULL;
	if ((r = state_dir_resolve(ws, ws_fd, state_dir, &sdir, err)) < 0)
		return r;
	tx_state_dir sd;
	r = state_dir_open(ws, ws_fd, sdir, 0, &sd, err);
	if (r < 0)
		return r;
	tx t;
	/* Busy: most likely a recovery looking at it (for microseconds); a
	 * concurrent commit or rollback of it leaves it gone (ENOENT). */
	uint64_t until = clock_now_ns() + HELD_BUSY_WAIT_NS;
	while ((r = tx_open(&sd, txid, &t, err)) == -EBUSY && clock_now_ns() < until) {
		txbox_error_clear(err);
		tx_close(&t);
		struct timespec nap = {0, 5 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
	if (r < 0)
		goto out;
	tx_status st;
	r = tx_get_state(&sd, &t, &st, err);
	if (r < 0)
		goto out;
	if (st != TX_HELD) {
		r = txbox_fail(err, -EINVAL, "transaction %s is %s, not held", txid, tx_status_name(st));
		goto out;
	}
	txbox_result *res = result_new();
	if (!res) {
		r = txbox_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	res->tx = strdup(txid);
	if (!commit) {
		/* a journal means a commit got under way (an older txbox, or a
		 * crash between its steps): reversing it restores the
		 * originals it displaced; discarding would delete them */
		r = has_journal(&t) ? tx_reverse_journal(&sd, &t, err) : tx_rollback(&sd, &t, err);
		res->outcome = TXBOX_ROLLED_BACK;
		res->rollback_reason = "policy";
		res->exit_status = 1;
	} else
		r = commit_held(&sd, &t, res, err);
	if (r < 0) {
		txbox_result_free(res);
		goto out;
	}
	res->timings.finish_ms = res->timings.total_ms = clock_ms_since(t0);
	*out = res;
out:
	tx_close(&t);
	state_dir_close(&sd);
	return r;
}
