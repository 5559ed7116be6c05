/* state: the workspace's state dir (.txbox), transaction ids and
 * directories, their locks, and recovery of transactions whose txbox
 * process died (SIGKILL, power loss). */
#include "tx/tx.h"

#include "util/cleanup.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int state_dir_open(const char *ws_path, int ws_fd, const char *state_dir, tx_state_dir *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->ws_fd = out->state_fd = out->txs_fd = -1;
	struct stat wst, sst;
	if (fstat(ws_fd, &wst) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace");
	_cleanup_close_ int sfd = -1;
	if (!state_dir) {
		if (mkdirat(ws_fd, TX_STATE_DIR_NAME, 0700) < 0 && errno != EEXIST)
			return txbox_fail_errno(err, -errno, "creating %s/%s", ws_path, TX_STATE_DIR_NAME);
		sfd = openat(ws_fd, TX_STATE_DIR_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			return txbox_fail_errno(err, -errno,
						"opening %s/%s (is it a symlink? it must be a real directory)", ws_path,
						TX_STATE_DIR_NAME);
		out->state_inside = true;
	} else {
		if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
			return txbox_fail_errno(err, -errno, "creating the state dir %s", state_dir);
		sfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sfd < 0)
			return txbox_fail_errno(err, -errno, "opening the state dir %s", state_dir);
	}
	if (fstat(sfd, &sst) < 0)
		return txbox_fail_errno(err, -errno, "stat of the state dir");
	if (sst.st_dev != wst.st_dev)
		return txbox_fail(err, -EXDEV,
				  "the state dir %s is on another filesystem than the workspace %s: commit must be "
				  "renames on one filesystem; choose a state dir on the workspace's filesystem",
				  state_dir ? state_dir : TX_STATE_DIR_NAME, ws_path);
	/* The state dir must never become part of a commit or of git. */
	if (faccessat(sfd, ".gitignore", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		txbox_error ig = TXBOX_ERROR_INIT;
		fs_write_file_atomic(sfd, ".gitignore", "*\n", 2, 0644, &ig);
		txbox_error_clear(&ig);
	}
	if (mkdirat(sfd, "tx", 0700) < 0 && errno != EEXIST)
		return txbox_fail_errno(err, -errno, "creating the transactions dir");
	int tfd = openat(sfd, "tx", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return txbox_fail_errno(err, -errno, "opening the transactions dir");
	out->ws_fd = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
	out->ws_path = strdup(ws_path);
	if (out->ws_fd < 0 || !out->ws_path) {
		close(tfd);
		state_dir_close(out);
		return txbox_fail(err, -ENOMEM, "out of resources");
	}
	out->state_fd = steal_fd(sfd);
	out->txs_fd = tfd;
	return 0;
}

void state_dir_close(tx_state_dir *s)
{
	if (s->ws_fd >= 0)
		close(s->ws_fd);
	if (s->state_fd >= 0)
		close(s->state_fd);
	if (s->txs_fd >= 0)
		close(s->txs_fd);
	free(s->ws_path);
	memset(s, 0, sizeof *s);
	s->ws_fd = s->state_fd = s->txs_fd = -1;
}

static bool valid_id(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n >= TX_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') || id[i] == '-'))
			return false;
	return true;
}

int tx_create(tx_state_dir *s, tx *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	out->top.upper_fd = out->top.work_fd = -1;
	for (int attempt = 0; attempt < 8; attempt++) {
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		snprintf(out->id, sizeof out->id, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x%02x", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1], rnd[2], rnd[3]);
		if (mkdirat(s->txs_fd, out->id, 0700) == 0)
			break;
		if (errno != EEXIST || attempt == 7)
			return txbox_fail_errno(err, -errno, "creating transaction %s", out->id);
	}
	out->fd = openat(s->txs_fd, out->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out->fd < 0)
		return txbox_fail_errno(err, -errno, "opening transaction %s", out->id);
	if (flock(out->fd, LOCK_EX | LOCK_NB) < 0)
		return txbox_fail_errno(err, -errno, "locking transaction %s", out->id);
	if (mkdirat(out->fd, "displaced", 0700) < 0)
		return txbox_fail_errno(err, -errno, "creating transaction %s", out->id);
	return tx_set_state(out, "running", err);
}

int tx_open(tx_state_dir *s, const char *id, tx *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	out->top.upper_fd = out->top.work_fd = -1;
	if (!valid_id(id))
		return txbox_fail(err, -EINVAL, "not a transaction id: %s", id);
	snprintf(out->id, sizeof out->id, "%s", id);
	out->fd = openat(s->txs_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out->fd < 0)
		return txbox_fail(err, -ENOENT, "no open transaction %s in %s", id, s->ws_path);
	if (flock(out->fd, LOCK_EX | LOCK_NB) < 0)
		return txbox_fail(err, -EBUSY, "transaction %s is in use by another txbox process", id);
	out->top.upper_fd = openat(out->fd, "layers/0/upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	out->top.work_fd = openat(out->fd, "layers/0/work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return 0;
}

void tx_close(tx *t)
{
	layer_close(&t->top);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

int tx_set_state(tx *t, const char *state, txbox_error *err)
{
	char buf[128];
	int n = snprintf(buf, sizeof buf, "%s %d\n", state, (int)getpid());
	/* "running" need not be durable: after a crash a missing or stale state
	 * reads as running, and running transactions are rolled back. */
	if (!strcmp(state, "running")) {
		_cleanup_close_ int fd = openat(t->fd, "state", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			return txbox_fail_errno(err, -errno, "writing the state of %s", t->id);
		return 0;
	}
	return fs_write_file_atomic(t->fd, "state", buf, (size_t)n, 0600, err);
}

int tx_get_state(tx *t, char *buf, size_t len, txbox_error *err)
{
	_cleanup_free_ char *s = NULL;
	size_t n;
	int r = fs_read_file_at(t->fd, "state", 256, &s, &n, err);
	if (r < 0)
		return r;
	size_t w = strcspn(s, " \n");
	if (w >= len)
		w = len - 1;
	memcpy(buf, s, w);
	buf[w] = '\0';
	return 0;
}

int tx_remove(tx_state_dir *s, tx *t, txbox_error *err)
{
	/* Rename out of tx/ first so a half-removed transaction is never taken
	 * for a live one, then delete. */
	char trash[TX_ID_MAX + 16];
	snprintf(trash, sizeof trash, ".trash-%s", t->id);
	int r;
	layer_close(&t->top);
	if (renameat(s->txs_fd, t->id, s->txs_fd, trash) == 0)
		r = fs_remove_tree_at(s->txs_fd, trash, err);
	else
		r = fs_remove_tree_at(s->txs_fd, t->id, err);
	return r;
}

int tx_recover_stale(tx_state_dir *s, txbox_error *err)
{
	int dupfd = openat(s->txs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset: never share a readdir position */
	if (dupfd < 0)
		return txbox_fail_errno(err, -errno, "dup");
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return txbox_fail_errno(err, -errno, "reading the transactions dir");
	}
	int count = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') {
			if (!strncmp(de->d_name, ".trash-", 7)) {
				txbox_error e = TXBOX_ERROR_INIT;
				fs_remove_tree_at(s->txs_fd, de->d_name, &e);
				txbox_error_clear(&e);
			}
			continue;
		}
		tx t;
		txbox_error e = TXBOX_ERROR_INIT;
		if (tx_open(s, de->d_name, &t, &e) < 0) { /* busy: a live txbox owns it */
			txbox_error_clear(&e);
			tx_close(&t);
			continue;
		}
		char st[32] = "";
		if (tx_get_state(&t, st, sizeof st, &e) < 0)
			snprintf(st, sizeof st, "running");
		txbox_error_clear(&e);
		if (!strcmp(st, "held")) {
			tx_close(&t);
			continue; /* open on purpose, waiting for commit/rollback */
		}
		/* A journal without the commit point: the commit was under way. */
		int r;
		if (strcmp(st, "committed") != 0 && faccessat(t.fd, "journal", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			r = tx_reverse_journal(s, &t, err);
		else
			r = tx_remove(s, &t, err);
		tx_close(&t);
		if (r < 0)
			return r;
		count++;
	}
	return count;
}
