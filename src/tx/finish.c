/* finish: commit or roll back a transaction.
 *
 * Commit protocol (crash-safe; each step durable before the next):
 *   0. plan the merge from the layer (plan.c); with effect rules, judge
 *      that plan first (tx/effects.c): a hold or deny leaves the layer as
 *      it was
 *   1. prepare the layer for that same plan (plan.c)
 *   2. the layer's data is made durable before any name points at it
 *      (fdatasync of each published file; syncfs for large plans)
 *   3. journal the plan (written, fsynced, renamed into place) — from now
 *      on the journal's presence means "applying"
 *   4. apply the plan with renames (commit.c)
 *   5. the renames are made durable (fsync of each changed directory;
 *      syncfs for large plans)
 *   6. state := committed — the commit point — then remove the tx dir
 * A crash before 6 is reversed from the journal by `txbox recover` (or the
 * next txbox run): the workspace returns to the whole before-state. After
 * 6, the after-state stands. */
#include "tx/tx.h"

#include "tx/lock.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Waiting for another transaction's commit is bounded: by the deadline,
 * or when there is none by LOCK_WAIT_MAX_NS (a commit's planning is bounded
 * by what its command wrote, so a holder that long is stuck). */
#define LOCK_WAIT_MAX_NS (600ull * 1000000000ull)

static int lock_workspace(tx_state_dir *s, uint64_t deadline_ns, txbox_error *err)
{
	uint64_t until = deadline_ns ? deadline_ns : clock_now_ns() + LOCK_WAIT_MAX_NS;
	for (;;) {
		txbox_error e = TXBOX_ERROR_INIT;
		int fd = txlock_try(s->state_fd, "lock", true, &e);
		if (fd >= 0)
			return fd;
		if (fd != -EBUSY && fd != -EAGAIN) {
			txbox_error_move(err, &e);
			return txbox_error_prefix(err, "locking the workspace");
		}
		if (clock_now_ns() >= until) {
			txbox_error_move(err, &e); /* who holds it, as txlock_try saw */
			err->code = -ETIMEDOUT;
			return txbox_error_prefix(err, "timed out waiting for the workspace lock %s/lock",
						  s->state_path);
		}
		txbox_error_clear(&e);
		struct timespec nap = {0, 5 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
}

/* Small plans sync exactly what they touch; large ones sync the filesystem. */
#define SYNC_PER_FILE_MAX 256

static int sync_layer_data(tx_state_dir *s, tx *t, const plan *p, txbox_error *err)
{
	bool whole = p->n > SYNC_PER_FILE_MAX;
	for (size_t i = 0; i < p->n && !whole; i++) {
		const plan_op *o = &p->ops[i];
		if (o->kind != PLAN_PUT)
			continue;
		if (S_ISDIR(o->new_st.st_mode)) {
			whole = true; /* a whole tree moves: its files are many and unknown here */
			break;
		}
		if (!S_ISREG(o->new_st.st_mode))
			continue;
		_cleanup_close_ int fd = fs_open_entry(t->top.upper_fd, o->path, O_RDONLY, 0);
		if (fd < 0 || fdatasync(fd) < 0)
			whole = true;
	}
	if (whole && syncfs(s->ws_fd) < 0)
		return txbox_fail_errno(err, -errno, "syncfs before commit");
	return 0;
}

static int sync_workspace_dirs(tx_state_dir *s, const plan *p, txbox_error *err)
{
	if (p->n > SYNC_PER_FILE_MAX) {
		if (syncfs(s->ws_fd) < 0)
			return txbox_fail_errno(err, -errno, "syncfs after commit");
		return 0;
	}
	const char *last = NULL;
	size_t last_len = 0;
	for (size_t i = 0; i < p->n; i++) {
		const char *path = p->ops[i].path;
		const char *slash = strrchr(path, '/');
		size_t plen = slash ? (size_t)(slash - path) : 0;
		if (last && plen == last_len && !strncmp(last, path, plen))
			continue;
		last = path;
		last_len = plen;
		int fd;
		if (!plen)
			fd = openat(s->ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else {
			_cleanup_free_ char *parent = strndup(path, plen);
			fd = parent ? fs_open_entry(s->ws_fd, parent, O_RDONLY | O_DIRECTORY, 0) : -ENOMEM;
		}
		if (fd < 0 || fsync(fd) < 0) {
			if (fd >= 0)
				close(fd);
			if (syncfs(s->ws_fd) < 0)
				return txbox_fail_errno(err, -errno, "syncfs after commit");
			return 0;
		}
		close(fd);
	}
	return 0;
}

/* The effect check, before anything is prepared or journaled, on the
 * inspected plan (the layer untouched: a held transaction is planned again
 * when it is committed). 1: held or denied (info->changes filled), 0: go
 * on with this very plan, <0: error. */
static int check_effects(tx_state_dir *s, tx *t, const plan *p, const tx_effects_in *fx, tx_commit_info *info,
			 txbox_error *err)
{
	int r = p->n ? tx_effects_check(s->ws_fd, t->top.upper_fd, p, fx->policy, fx->policy_rel, &info->effects, err)
		     : 0;
	info->effects_checked = r > 0;
	if (r > 0 && info->effects.decision != POLICY_ALLOW)
		r = plan_changes(p, &info->changes, &info->nchanges, err) < 0 ? -ENOMEM : 1;
	else if (r > 0)
		r = 0;
	trace_mark("commit: effects checked");
	return r;
}

int tx_commit(tx_state_dir *s, tx *t, bool strip_setuid, tx_commit_info *info, txbox_error *err)
{
	return tx_commit_by(s, t, strip_setuid, 0, info, err);
}

/* --timeout bounds the transaction up to the commit point (the journal):
 * past it nothing is published. After it, applying costs one rename per
 * top-most change and cannot be stopped halfway without reversing. */
static int before_deadline(uint64_t deadline_ns, const char *phase, tx_commit_info *info, txbox_error *err)
{
	if (!deadline_ns || clock_now_ns() < deadline_ns)
		return 0;
	info->timed_out = true;
	return txbox_fail(err, -ETIMEDOUT, "the time limit passed while %s; nothing was published", phase);
}

int tx_commit_by(tx_state_dir *s, tx *t, bool strip_setuid, uint64_t deadline_ns, tx_commit_info *info,
		 txbox_error *err)
{
	return tx_commit_checked(s, t, strip_setuid, deadline_ns, NULL, info, err);
}

int tx_commit_checked(tx_state_dir *s, tx *t, bool strip_setuid, uint64_t deadline_ns, const tx_effects_in *fx,
		      tx_commit_info *info, txbox_error *err)
{
	memset(&info->effects, 0, sizeof info->effects);
	info->effects_checked = false;
	info->changes = NULL;
	info->nchanges = 0;
	info->refused = false;
	info->timed_out = false;
	_cleanup_close_ int displaced = -1;
	_cleanup_close_ int lock = lock_workspace(s, deadline_ns, err);
	if (lock < 0) {
		info->timed_out = lock == -ETIMEDOUT;
		return lock;
	}
	trace_mark("commit: locked");
	plan p;
	layer_root lr;
	int r = layer_read_root(t->fd, 0, &lr, err);
	if (r < 0)
		return txbox_error_prefix(err, "planning the commit");
	plan_opts po = {
		.root_initial = &lr.initial,
		.skip_root_name = s->state_inside ? TX_STATE_DIR_NAME : NULL,
		.reserved_name = TX_STATE_DIR_NAME,
		.state_mark = TX_STATE_MARK,
		.strip_setuid = strip_setuid,
		.userxattr = lr.userxattr,
		.deadline_ns = deadline_ns,
	};
	/* One walk: the plan the effect rules judge is the plan published. */
	po.inspect = fx && policy_effects_needs(fx->policy);
	r = plan_build(s->ws_fd, t->top.upper_fd, &po, &p, err);
	if (r == 0 && po.inspect) {
		int c = check_effects(s, t, &p, fx, info, err);
		if (c == 0)
			c = before_deadline(deadline_ns, "judging the changes", info, err);
		if (c != 0) { /* held or denied: the layer is as the command left it */
			plan_free(&p);
			return c < 0 ? c : 0;
		}
		r = plan_prepare(t->top.upper_fd, &po, &p, err);
		if (r < 0)
			plan_free(&p);
	}
	if (r < 0) {
		info->refused = (r == -EPERM);
		info->timed_out = (r == -ETIMEDOUT);
		return txbox_error_prefix(err, "planning the commit");
	}
	trace_mark("commit: planned");
	r = plan_changes(&p, &info->changes, &info->nchanges, err);
	if (r < 0)
		goto out;
	if (p.n == 0) { /* nothing to publish: no journal, no sync */
		r = 0;
		goto out;
	}
	r = sync_layer_data(s, t, &p, err);
	if (r == 0)
		r = before_deadline(deadline_ns, "writing the changes to disk", info, err);
	if (r < 0)
		goto out;
	r = journal_write(t->fd, &p, err);
	if (r < 0)
		goto out;
	displaced = openat(t->fd, "displaced", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (displaced < 0) {
		r = txbox_fail_errno(err, -errno, "opening the displaced dir");
		goto out;
	}
	r = commit_apply(s->ws_fd, t->top.upper_fd, displaced, &p, err);
	if (r < 0) /* reversed already; the journal stays for recover if that failed */
		goto out;
	r = sync_workspace_dirs(s, &p, err);
	if (r < 0)
		goto out;
	r = tx_set_state(t, TX_COMMITTED, err);
out:
	plan_free(&p);
	return r;
}

int tx_rollback(tx_state_dir *s, tx *t, txbox_error *err)
{
	return tx_recycle(s, t, err);
}

int tx_reverse_journal(tx_state_dir *s, tx *t, txbox_error *err)
{
	/* No journal: nothing was applied (it is written before the first
	 * rename, under the transaction's lock, which we hold) — no need to
	 * wait for the workspace lock, which another commit may hold. */
	struct stat jst;
	if (fstatat(t->fd, "journal", &jst, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return tx_remove(s, t, err);
	_cleanup_close_ int lock = lock_workspace(s, 0, err);
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
