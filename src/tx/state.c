/* state: the workspace's state dir (.txbox), transaction ids and
 * directories, their locks, and recovery of transactions whose txbox
 * process died (SIGKILL, power loss). */
#include "tx/tx.h"

#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
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

static void make_id(char id[TX_ID_MAX], const unsigned char rnd[4])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	clock_utc ut;
	clock_utc_from_epoch((long long)ts.tv_sec, &ut);
	snprintf(id, TX_ID_MAX, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x%02x", ut.year, ut.month, ut.day, ut.hour,
		 ut.minute, ut.second, rnd[0], rnd[1], rnd[2], rnd[3]);
}

/* Publish a locked, prepared directory (a spare or a new one, under a dot
 * name that recovery leaves alone) under a fresh transaction id. It is
 * locked before it gets a name recovery looks at, so no other txbox can
 * take it for the leftover of a dead one. */
static int publish(tx_state_dir *s, const char *from, tx *out, txbox_error *err)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		make_id(out->id, rnd);
		if (renameat2(s->txs_fd, from, s->txs_fd, out->id, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST || attempt == 7)
			return txbox_fail_errno(err, -errno, "naming transaction %s", out->id);
	}
	return txbox_fail(err, -EEXIST, "naming a transaction");
}

typedef struct keep_names {
	const char *a, *b;
	const char *whiteout; /* also keep this name when it is a 0/0 whiteout */
} keep_names;

static bool keep_listed(int dirfd, const char *name, void *arg)
{
	const keep_names *k = arg;
	if ((k->a && !strcmp(name, k->a)) || (k->b && !strcmp(name, k->b)))
		return true;
	if (k->whiteout && !strcmp(name, k->whiteout)) {
		struct stat st;
		return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0;
	}
	return false;
}

/* Call fn for each spare in tx/ until it returns true; returns how many
 * were seen. */
static int each_spare(tx_state_dir *s, bool (*fn)(tx_state_dir *s, const char *name, void *arg), void *arg)
{
	int dupfd = openat(s->txs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own readdir position */
	if (dupfd < 0)
		return -errno;
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return -errno;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, ".spare-", 7) == 0) {
			n++;
			if (fn && fn(s, de->d_name, arg))
				break;
		}
	return n;
}

/* A spare: the emptied directory of an earlier transaction (tx_recycle).
 * Taking one saves creating (and later deleting) five directories. */
static bool take_one(tx_state_dir *s, const char *name, void *arg)
{
	tx *out = arg;
	int fd = openat(s->txs_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) { /* another txbox is taking it */
		close(fd);
		return false;
	}
	/* Still under that name (not taken and renamed before our lock)? */
	struct stat a, b;
	txbox_error e = TXBOX_ERROR_INIT;
	if (fstat(fd, &a) < 0 || fstatat(s->txs_fd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(fd);
		return false;
	}
	/* Before it gets a name recovery reads: its old journal and state and
	 * anything else but the skeleton go (layer_create makes a new layer;
	 * the old one, stale/, is deleted while the command runs). */
	static const keep_names skeleton = {"displaced", TX_STALE_NAME, NULL};
	if (fs_empty_dir(fd, keep_listed, (void *)&skeleton, &e) < 0 ||
	    fs_empty_dir_at(fd, "displaced", NULL, NULL, &e) < 0 || publish(s, name, out, &e) < 0) {
		txbox_error_clear(&e);
		close(fd);
		out->fd = -1;
		return false; /* left as a spare or removed by recovery */
	}
	out->fd = fd;
	out->has_stale = faccessat(fd, TX_STALE_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	return true;
}

int tx_delete_stale(tx *t, txbox_error *err)
{
	if (t->fd < 0 || !t->has_stale)
		return 0;
	t->has_stale = false;
	return fs_remove_tree_at(t->fd, TX_STALE_NAME, err);
}

static bool take_spare(tx_state_dir *s, tx *out)
{
	if (s->spares_known) {
		for (unsigned i = 0; i < s->nspares && out->fd < 0; i++)
			take_one(s, s->spares[i], out);
		s->spares_known = false;
		return out->fd >= 0;
	}
	each_spare(s, take_one, out);
	return out->fd >= 0;
}

int tx_create(tx_state_dir *s, tx *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	out->top.upper_fd = out->top.work_fd = -1;
	if (!take_spare(s, out)) {
		char tmp[TX_ID_MAX + 8];
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		char id[TX_ID_MAX];
		make_id(id, rnd);
		snprintf(tmp, sizeof tmp, ".new-%s", id);
		if (mkdirat(s->txs_fd, tmp, 0700) < 0)
			return txbox_fail_errno(err, -errno, "creating a transaction directory");
		out->fd = openat(s->txs_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (out->fd < 0)
			return txbox_fail_errno(err, -errno, "opening a new transaction directory");
		if (flock(out->fd, LOCK_EX | LOCK_NB) < 0 || mkdirat(out->fd, "displaced", 0700) < 0) {
			int e = -errno;
			fs_remove_tree_at(s->txs_fd, tmp, NULL);
			return txbox_fail_errno(err, e, "preparing a new transaction directory");
		}
		if (publish(s, tmp, out, err) < 0) {
			fs_remove_tree_at(s->txs_fd, tmp, NULL);
			return err ? err->code : -EEXIST;
		}
	}
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
	trace_mark("remove: layer closed");
	if (renameat(s->txs_fd, t->id, s->txs_fd, trash) == 0)
		r = fs_remove_tree_at(s->txs_fd, trash, err);
	else
		r = fs_remove_tree_at(s->txs_fd, t->id, err);
	trace_mark("remove: removed");
	return r;
}

/* ---- recycling ------------------------------------------------------- */

/* Park the transaction's directory as a spare. What must not outlive the
 * transaction goes now: the originals a commit displaced, whatever the
 * command wrote that was not published, and overlay index entries (extra
 * links to committed files). The emptied layer is renamed aside (stale/)
 * and deleted by the transaction that takes the spare, while its command
 * runs; journal and state files (right after a commit's fsyncs their
 * unlinks wait for the filesystem journal) and stray files are removed by
 * the taker before the spare gets a transaction's name (take_one). A
 * spare's name is never read by recovery. */
static int recycle(tx_state_dir *s, tx *t, txbox_error *err)
{
	const keep_names upper = {NULL, NULL, s->state_inside ? TX_STATE_DIR_NAME : NULL};
	int r;
	if (t->top.upper_fd < 0 || t->top.work_fd < 0)
		return txbox_fail(err, -EBADF, "the layer is not open");
	trace_mark("recycle: start");
	struct stat st;
	if ((r = fs_empty_dir_at(t->fd, "displaced", NULL, NULL, err)) < 0 ||
	    (r = fs_empty_dir(t->top.upper_fd, keep_listed, (void *)&upper, err)) < 0 ||
	    (fstatat(t->top.work_fd, "index", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     (r = fs_empty_dir_at(t->top.work_fd, "index", NULL, NULL, err)) < 0))
		return r;
	/* xattrs the command set on the workspace root and did not publish
	 * (overlay's own are the kernel's; the layer goes with stale/) */
	char fdp[32], path[40];
	fs_fd_path(t->top.upper_fd, fdp);
	snprintf(path, sizeof path, "%s/.", fdp);
	_cleanup_free_ char *names = NULL;
	size_t len = 0;
	if ((r = fs_xattr_list(path, &names, &len)) < 0)
		return txbox_fail_errno(err, r, "listing the upper root's xattrs");
	for (size_t i = 0; i < len; i += strlen(names + i) + 1)
		if (!fs_xattr_is_overlay_private(names + i) && strncmp(names + i, "security.", 9) != 0 &&
		    fremovexattr(t->top.upper_fd, names + i) < 0 && errno != ENODATA)
			return txbox_fail_errno(err, -errno, "removing the xattr %s from the upper root", names + i);
	trace_mark("recycle: emptied");
	int spares = each_spare(s, NULL, NULL);
	if (spares < 0 || spares >= TX_SPARES_MAX)
		return txbox_fail(err, -ENOSPC, "enough spares");
	/* The emptied layer is set aside, not reused (layer_create makes new
	 * dirs); the next transaction deletes it while its command runs. An
	 * older one still there (its deletion failed) goes first. */
	if (renameat2(t->fd, "layers", t->fd, TX_STALE_NAME, RENAME_NOREPLACE) < 0 &&
	    (errno != EEXIST || fs_remove_tree_at(t->fd, TX_STALE_NAME, err) < 0 ||
	     renameat2(t->fd, "layers", t->fd, TX_STALE_NAME, RENAME_NOREPLACE) < 0))
		return txbox_fail_errno(err, -errno, "setting the layer of %s aside", t->id);
	char name[TX_ID_MAX + 8];
	snprintf(name, sizeof name, ".spare-%s", t->id);
	if (renameat2(s->txs_fd, t->id, s->txs_fd, name, RENAME_NOREPLACE) < 0)
		return txbox_fail_errno(err, -errno, "parking transaction %s", t->id);
	return 0;
}

int tx_recycle(tx_state_dir *s, tx *t, txbox_error *err)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int r = t->fd >= 0 ? recycle(s, t, &e) : -EBADF;
	txbox_error_clear(&e);
	if (r == 0) {
		layer_close(&t->top);
		return 0;
	}
	return tx_remove(s, t, err);
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
	s->nspares = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') {
			if (!strncmp(de->d_name, ".spare-", 7)) {
				if (s->nspares < ARRAY_SIZE(s->spares) && strlen(de->d_name) < sizeof s->spares[0])
					snprintf(s->spares[s->nspares++], sizeof s->spares[0], "%s", de->d_name);
				continue;
			}
			if (!strncmp(de->d_name, ".new-", 5)) {
				/* a txbox died creating it — unless it is locked, or so
				 * young its creator may not have locked it yet */
				_cleanup_close_ int fd = openat(s->txs_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				struct stat nst;
				if (fd >= 0 && fstat(fd, &nst) == 0 && time(NULL) - nst.st_mtime > 60 &&
				    flock(fd, LOCK_EX | LOCK_NB) == 0) {
					txbox_error e = TXBOX_ERROR_INIT;
					fs_remove_tree_at(s->txs_fd, de->d_name, &e);
					txbox_error_clear(&e);
				}
				continue;
			}
			if (!strncmp(de->d_name, ".trash-", 7)) {
				/* its owner may still be deleting it (it keeps the lock) */
				_cleanup_close_ int fd = openat(s->txs_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
					txbox_error e = TXBOX_ERROR_INIT;
					fs_remove_tree_at(s->txs_fd, de->d_name, &e);
					txbox_error_clear(&e);
				}
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
	s->spares_known = true;
	return count;
}
