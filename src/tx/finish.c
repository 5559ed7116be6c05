/* finish: commit or roll back a transaction.
 *
 * Commit protocol (crash-safe; each step durable before the next):
 *   1. plan the merge from the layer and prepare the layer (plan.c)
 *   2. syncfs: the layer's data is on disk before any name points at it
 *   3. journal the plan, state := applying
 *   4. apply the plan with renames (commit.c)
 *   5. syncfs: the renames are on disk
 *   6. state := committed — the commit point — then remove the tx dir
 * A crash before 6 is reversed from the journal by `txbox recover` (or the
 * next txbox run): the workspace returns to the whole before-state. After
 * 6, the after-state stands. */
#include "tx/tx.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

static int lock_workspace(tx_state_dir *s, txbox_error *err)
{
	int fd = openat(s->state_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening the workspace lock");
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = -errno;
			close(fd);
			return txbox_fail_errno(err, e, "locking the workspace");
		}
	}
	return fd;
}

int tx_commit(tx_state_dir *s, tx *t, bool strip_setuid, bool userxattr, tx_commit_info *info, txbox_error *err)
{
	info->changes = NULL;
	info->nchanges = 0;
	info->refused = false;
	_cleanup_close_ int displaced = -1;
	_cleanup_close_ int lock = lock_workspace(s, err);
	if (lock < 0)
		return lock;
	plan p;
	plan_opts po = {
		.skip_root_name = s->state_inside ? TX_STATE_DIR_NAME : NULL,
		.strip_setuid = strip_setuid,
		.userxattr = userxattr,
	};
	int r = plan_build(s->ws_fd, t->top.upper_fd, &po, &p, err);
	if (r < 0) {
		info->refused = (r == -EPERM);
		return txbox_error_prefix(err, "planning the commit");
	}
	r = plan_changes(&p, &info->changes, &info->nchanges, err);
	if (r < 0)
		goto out;
	if (p.n == 0) { /* nothing to publish: no journal, no sync */
		r = 0;
		goto out;
	}
	if (syncfs(s->ws_fd) < 0) {
		r = txbox_fail_errno(err, -errno, "syncfs before commit");
		goto out;
	}
	r = journal_write(t->fd, &p, err);
	if (r < 0)
		goto out;
	r = tx_set_state(t, "applying", err);
	if (r < 0)
		goto out;
	displaced = openat(t->fd, "displaced", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (displaced < 0) {
		r = txbox_fail_errno(err, -errno, "opening the displaced dir");
		goto out;
	}
	r = commit_apply(s->ws_fd, t->top.upper_fd, displaced, &p, err);
	if (r < 0) {
		txbox_error e2 = TXBOX_ERROR_INIT;
		if (tx_set_state(t, "running", &e2) < 0) /* leave it for recover: journal still there */
			txbox_error_clear(&e2);
		goto out;
	}
	if (syncfs(s->ws_fd) < 0) {
		r = txbox_fail_errno(err, -errno, "syncfs after commit");
		goto out;
	}
	r = tx_set_state(t, "committed", err);
out:
	plan_free(&p);
	return r;
}

int tx_rollback(tx_state_dir *s, tx *t, txbox_error *err)
{
	return tx_remove(s, t, err);
}

int tx_reverse_journal(tx_state_dir *s, tx *t, txbox_error *err)
{
	_cleanup_close_ int lock = lock_workspace(s, err);
	if (lock < 0)
		return lock;
	plan p;
	int r = journal_read(t->fd, &p, err);
	if (r == -ENOENT) {
		txbox_error_clear(err);
		return tx_remove(s, t, err);
	}
	if (r < 0)
		return txbox_error_prefix(err, "recovering transaction %s", t->id);
	_cleanup_close_ int displaced = openat(t->fd, "displaced", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (displaced < 0 || t->top.upper_fd < 0) {
		plan_free(&p);
		return txbox_fail_errno(err, -errno, "recovering transaction %s: its directories are damaged", t->id);
	}
	r = commit_reverse(s->ws_fd, t->top.upper_fd, displaced, &p, p.n, err);
	plan_free(&p);
	if (r < 0)
		return txbox_error_prefix(err, "recovering transaction %s", t->id);
	if (syncfs(s->ws_fd) < 0)
		return txbox_fail_errno(err, -errno, "syncfs after recovery");
	return tx_remove(s, t, err);
}
