/* commit: apply a plan to the workspace, and reverse it.
 *
 * Every change is one rename on the same filesystem, never a data copy:
 *   PUT over an existing entry   renameat2(RENAME_EXCHANGE): the new entry
 *                                appears atomically and the original lands in
 *                                the layer, where it stays for undo
 *   PUT into an empty slot       renameat2(RENAME_NOREPLACE)
 *   DELETE                       the original is renamed into displaced/<op>
 *   META                         mode, owner, times and xattrs set in place
 *                                (the original owner and mode are first kept
 *                                as those of a real file, displaced/<op>.m)
 *   LINK                         the entry there is moved to displaced/<op>,
 *                                then a hard link is made
 * Rootless, a rename may need a directory's write bit: it is lent for the
 * rename and given back, the original mode journaled first as
 * displaced/<op>.l<inode> (move_entry); a LINK op's parent times likewise
 * as displaced/<op>.t. A kill inside an op is thus undone too.
 * Content is never rewritten in place: a changed member of a hard-link
 * group is published as a new inode under each of its names (plan.c), so
 * every op is reversed by a rename and no copy of a file is ever needed.
 * Parents are opened beneath the workspace without following symlinks or
 * `..` and without crossing a mount point (fs_open_entry: openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_XDEV), and a META op acts
 * only on an O_PATH fd of the entry, checked to be the planned inode, so
 * nothing is ever changed outside the workspace, whatever the layer or the
 * workspace contain or a racing writer swaps in. Reversal uses the inode numbers in the journal to tell
 * which ops were applied, so it is idempotent after a crash. */
#include "snapshot/snapshot.h"

#include "snapshot/prepare.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

int snapshot_open_parent(int root_fd, const char *rel, const char **name, txbox_error *err)
{
	const char *slash = strrchr(rel, '/');
	if (!slash) {
		*name = rel;
		int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
		return fd >= 0 ? fd : txbox_fail_errno(err, -errno, "dup");
	}
	*name = slash + 1;
	_cleanup_free_ char *parent = strndup(rel, (size_t)(slash - rel));
	if (!parent)
		return txbox_fail(err, -ENOMEM, "out of memory");
	int fd = fs_open_entry(root_fd, parent, O_PATH | O_DIRECTORY, 0);
	if (fd == -EXDEV)
		return txbox_fail(err, fd, "%s crosses a mount point: a commit never changes another filesystem",
				  parent);
	/* A path past PATH_MAX is no race: say so, and keep the message
	 * readable (its head and tail) rather than 5 KB of path. */
	if (fd == -ENAMETOOLONG && strlen(parent) > 240)
		return txbox_fail(err, fd, "%.80s\xe2\x80\xa6%s: the path is longer than PATH_MAX (%d bytes), "
				  "which a commit cannot open; keep changes that deep out of a transaction",
				  parent, parent + strlen(parent) - 120, PATH_MAX);
	if (fd < 0)
		return txbox_fail_errno(err, fd, "opening %s beneath the workspace (a symlink or `..` on the way?)",
					parent);
	return fd;
}

/* Make the xattrs of dst (non overlay-private) equal to those of src;
 * both are O_PATH fds of the very inodes (see fs_xattr_list_fd). For the
 * workspace root (root): ACLs are left alone and nothing is removed (the
 * upper root only mirrors the workspace root's xattrs best effort: a name
 * it lacks may be one the mirror could not copy). */
static int sync_xattrs(int src, int dst, bool ux, bool root, txbox_error *err)
{
	_cleanup_free_ char *dnames = NULL, *snames = NULL;
	size_t dn, sn;
	char sp[32], dp[32];
	fs_fd_path(src, sp);
	fs_fd_path(dst, dp);
	int r = fs_xattr_list_fd(dst, &dnames, &dn);
	if (r == 0)
		r = fs_xattr_list_fd(src, &snames, &sn);
	if (r < 0)
		return txbox_fail_errno(err, r, "listing xattrs");
	for (size_t off = 0; !root && off < dn; off += strlen(dnames + off) + 1) {
		const char *k = dnames + off;
		if (!snapshot_xattr_private(k, ux) && getxattr(sp, k, NULL, 0) < 0 && errno == ENODATA &&
		    removexattr(dp, k) < 0 && errno != ENODATA)
			return txbox_fail_errno(err, -errno, "removing xattr %s", k);
	}
	for (size_t off = 0; off < sn; off += strlen(snames + off) + 1) {
		const char *k = snames + off;
		if (snapshot_xattr_private(k, ux) || (root && snapshot_xattr_is_acl(k)))
			continue;
		_cleanup_free_ char *val = NULL;
		ssize_t vl = fs_xattr_get_fd(src, k, &val);
		if (vl == -ENODATA)
			continue;
		if (vl < 0)
			return txbox_fail_errno(err, (int)vl, "reading xattr %s", k);
		if (setxattr(dp, k, val, (size_t)vl, 0) < 0 && errno != ENOTSUP && errno != EPERM)
			return txbox_fail_errno(err, -errno, "setting xattr %s", k);
	}
	return 0;
}

/* renameat2 that also works without CAP_DAC_OVERRIDE (rootless): moving a
 * directory to another parent rewrites its "..", which needs write
 * permission on it, and both parents must be writable. On EACCES the
 * directories involved are lent the owner's write bit for the rename and
 * given their modes back right after. A loan is journaled before it is
 * made: the directory's mode is kept as that of a real, empty file,
 * displaced/<op>.l<inode> (the first loan of a directory in an op wins:
 * it holds the mode from before the op), so a kill between the loan and
 * its return is undone by the reversal (restore_loans). */
typedef struct loan_log {
	int displaced_fd;
	size_t idx;
} loan_log;

static void loan_name(size_t idx, ino_t ino, char buf[static 48])
{
	snprintf(buf, 48, "%zu.l%llu", idx, (unsigned long long)ino);
}

static int loan_record(const loan_log *lg, const struct stat *st)
{
	char fn[48];
	loan_name(lg->idx, st->st_ino, fn);
	_cleanup_close_ int fd =
		openat(lg->displaced_fd, fn, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -1;
	return fchmod(fd, st->st_mode & 07777) < 0 || fsync(fd) < 0 ? -1 : 0;
}

static void chmod_fd(int fd, mode_t m)
{
	char p[32];
	fs_fd_path(fd, p);
	if (chmod(p, m) < 0) { /* best effort: the rename reports the real failure */
	}
}

/* Only the directory dfd/name itself: never a symlink or a mount swapped in. */
static void chmod_at(int dfd, const char *name, mode_t m)
{
	_cleanup_close_ int fd = fs_open_entry(dfd, name, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0)
		chmod_fd(fd, m);
}

/* The directories a rename may need writable: the entry, the entry it is
 * exchanged with, and both parents. */
typedef struct loans {
	struct stat st[4];
	bool lent[4];
} loans;

static int loan_stat(int i, int od, const char *on, int nd, const char *nn, unsigned flags, struct stat *st)
{
	switch (i) {
	case 0:
		return fstatat(od, on, st, AT_SYMLINK_NOFOLLOW);
	case 1:
		return (flags & RENAME_EXCHANGE) ? fstatat(nd, nn, st, AT_SYMLINK_NOFOLLOW) : -1;
	case 2:
		return fstat(od, st);
	default:
		return fstat(nd, st);
	}
}

static bool loans_find(loans *l, int od, const char *on, int nd, const char *nn, unsigned flags)
{
	bool any = false;
	for (int i = 0; i < 4; i++) {
		int r = loan_stat(i, od, on, nd, nn, flags, &l->st[i]);
		l->lent[i] = r == 0 && S_ISDIR(l->st[i].st_mode) && !(l->st[i].st_mode & S_IWUSR);
		any |= l->lent[i];
	}
	return any;
}

/* Set (lend) or give back the write bits; entry 0 lives at nd/nn and entry
 * 1 at od/on once the rename succeeded. */
static void loans_set(const loans *l, int od, const char *on, int nd, const char *nn, bool lend, bool moved)
{
	for (int i = 0; i < 4; i++) {
		if (!l->lent[i])
			continue;
		mode_t m = (l->st[i].st_mode | (lend ? S_IWUSR : 0)) & 07777;
		bool at_old = (i == 0) != moved; /* where the entry is now */
		if (i < 2)
			chmod_at(at_old ? od : nd, at_old ? on : nn, m);
		else
			chmod_fd(i == 2 ? od : nd, m);
	}
}

static int move_entry(const loan_log *lg, int od, const char *on, int nd, const char *nn, unsigned flags)
{
	if (renameat2(od, on, nd, nn, flags) == 0)
		return 0;
	if (errno != EACCES)
		return -1;
	loans l;
	if (!loans_find(&l, od, on, nd, nn, flags)) {
		errno = EACCES;
		return -1;
	}
	for (int i = 0; i < 4; i++)
		if (l.lent[i] && loan_record(lg, &l.st[i]) < 0)
			return -1;
	loans_set(&l, od, on, nd, nn, true, false);
	int r = renameat2(od, on, nd, nn, flags);
	int e = errno;
	loans_set(&l, od, on, nd, nn, false, r == 0);
	errno = e;
	return r;
}

/* Set owner and mode (when owner_mode) and times of the inode efd (an
 * O_PATH fd from open_meta_entry) refers to: never a name that may have
 * been swapped since it was checked. */
static int set_meta(int efd, const char *rel, const struct stat *st, bool owner_mode, txbox_error *err)
{
	char p[32];
	fs_fd_path(efd, p);
	if (owner_mode && fchownat(efd, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0 && errno != EPERM)
		return txbox_fail_errno(err, -errno, "changing owner of %s", rel);
	/* The magic link resolves to efd's inode itself; a symlink has no mode. */
	if (owner_mode && !S_ISLNK(st->st_mode) && chmod(p, st->st_mode & 07777) < 0)
		return txbox_fail_errno(err, -errno, "changing mode of %s", rel);
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	if (utimensat(AT_FDCWD, p, ts, 0) < 0)
		return txbox_fail_errno(err, -errno, "setting times of %s", rel);
	return 0;
}

/* The entry dirfd/name (dirfd itself when name is "") as an O_PATH fd:
 * never through a symlink and never across a mount point, whatever was
 * swapped in; *cur is its stat. The caller compares it with the plan. */
static int open_meta_entry(int dirfd, const char *name, const char *rel, struct stat *cur, txbox_error *err)
{
	_cleanup_close_ int fd = name[0] ? fs_open_entry(dirfd, name, O_PATH, 0) : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		int e = name[0] ? fd : -errno;
		if (e == -EXDEV)
			return txbox_fail(err, -EXDEV, "%s is a mount point: a commit never changes another filesystem",
					  rel);
		return txbox_fail_errno(err, e, "opening %s", rel);
	}
	if (fstat(fd, cur) < 0)
		return txbox_fail_errno(err, -errno, "stat of %s", rel);
	return steal_fd(fd);
}

/* The original owner and mode of an entry a META op changes, kept as those
 * of a real, empty file (displaced/<idx>.m), durable before the change. A
 * reversal restores owner and mode only from there: never to values a
 * journal merely claims. */
static int save_owner_mode(int displaced_fd, size_t idx, const struct stat *cur, txbox_error *err)
{
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.m", idx);
	_cleanup_close_ int fd = openat(displaced_fd, fn, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "saving the owner and mode of op %zu", idx);
	if ((fchown(fd, cur->st_uid, cur->st_gid) < 0 && errno != EPERM) || fchmod(fd, cur->st_mode & 07777) < 0 ||
	    fsync(fd) < 0)
		return txbox_fail_errno(err, -errno, "saving the owner and mode of op %zu", idx);
	return 0;
}

/* What save_owner_mode kept: 1 found (*out filled), 0 none, <0 damaged. */
static int saved_owner_mode(int displaced_fd, size_t idx, struct stat *out, txbox_error *err)
{
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.m", idx);
	_cleanup_close_ int fd = openat(displaced_fd, fn, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : txbox_fail_errno(err, -errno, "reading the saved owner of op %zu", idx);
	if (fstat(fd, out) < 0 || !S_ISREG(out->st_mode) || out->st_nlink != 1 || out->st_size != 0)
		return txbox_fail(err, -EINVAL, "the saved owner and mode of op %zu are damaged", idx);
	return 1;
}

/* Does path carry any non-overlay xattr? */
static bool has_own_xattrs(int fd, bool ux)
{
	_cleanup_free_ char *names = NULL;
	size_t n;
	if (fs_xattr_list_fd(fd, &names, &n) < 0)
		return true; /* unknown: save what can be read */
	for (size_t off = 0; off < n; off += strlen(names + off) + 1)
		if (!snapshot_xattr_private(names + off, ux))
			return true;
	return false;
}

/* Save the xattrs of path as displaced/<idx>.x ([u32 len][name][u32 len][value]…)
 * when it or the layer's entry has any, so a reversal can restore them. */
static int save_xattrs(int wfd, int ufd, int displaced_fd, size_t idx, bool ux, txbox_error *err)
{
	if (!has_own_xattrs(wfd, ux) && !has_own_xattrs(ufd, ux))
		return 0;
	_cleanup_free_ char *names = NULL;
	size_t n;
	int r = fs_xattr_list_fd(wfd, &names, &n);
	if (r < 0)
		return txbox_fail_errno(err, r, "saving xattrs");
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.x", idx);
	_cleanup_close_ int fd = openat(displaced_fd, fn, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "saving xattrs");
	for (size_t off = 0; off < n; off += strlen(names + off) + 1) {
		if (snapshot_xattr_private(names + off, ux))
			continue;
		_cleanup_free_ char *val = NULL;
		ssize_t vl = fs_xattr_get_fd(wfd, names + off, &val);
		if (vl < 0)
			continue;
		uint32_t kl = (uint32_t)strlen(names + off), l = (uint32_t)vl;
		if (write(fd, &kl, 4) != 4 || write(fd, names + off, kl) != (ssize_t)kl || write(fd, &l, 4) != 4 ||
		    write(fd, val, l) != (ssize_t)l)
			return txbox_fail_errno(err, -errno, "saving xattrs");
	}
	if (fsync(fd) < 0)
		return txbox_fail_errno(err, -errno, "saving xattrs");
	return 0;
}

static int restore_xattrs(int efd, int displaced_fd, size_t idx, bool ux, txbox_error *err)
{
	char path[32];
	fs_fd_path(efd, path);
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.x", idx);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	txbox_error e = TXBOX_ERROR_INIT;
	if (fs_read_file_at(displaced_fd, fn, 16 * 1024 * 1024, &buf, &len, &e) < 0) {
		txbox_error_clear(&e); /* nothing saved: nothing to restore */
		return 0;
	}
	_cleanup_free_ char *names = NULL;
	size_t n;
	if (fs_xattr_list_fd(efd, &names, &n) == 0)
		for (size_t off = 0; off < n; off += strlen(names + off) + 1)
			if (!snapshot_xattr_private(names + off, ux))
				removexattr(path, names + off);
	size_t pos = 0;
	while (pos + 4 <= len) {
		uint32_t kl, vl;
		memcpy(&kl, buf + pos, 4);
		pos += 4;
		if (kl == 0 || kl > 255 || pos + kl + 4 > len)
			return txbox_fail(err, -EINVAL, "damaged saved xattrs for op %zu", idx);
		char name[256];
		memcpy(name, buf + pos, kl);
		name[kl] = '\0';
		pos += kl;
		memcpy(&vl, buf + pos, 4);
		pos += 4;
		if (pos + vl > len)
			return txbox_fail(err, -EINVAL, "damaged saved xattrs for op %zu", idx);
		if (setxattr(path, name, buf + pos, vl, 0) < 0 && errno != ENOTSUP)
			return txbox_fail_errno(err, -errno, "restoring xattr %s", name);
		pos += vl;
	}
	return 0;
}

static int apply_meta(int ws_fd, int upper_fd, int displaced_fd, size_t idx, const plan_op *o, bool ux,
		      txbox_error *err)
{
	const char *wname = "", *uname = "";
	const char *rel = o->path[0] ? o->path : ".";
	_cleanup_close_ int wpar = o->path[0] ? snapshot_open_parent(ws_fd, o->path, &wname, err) : -1;
	_cleanup_close_ int upar = o->path[0] ? snapshot_open_parent(upper_fd, o->path, &uname, err) : -1;
	if (o->path[0] && (wpar < 0 || upar < 0))
		return err->code;
	struct stat cur, ust;
	_cleanup_close_ int wfd = open_meta_entry(o->path[0] ? wpar : ws_fd, wname, rel, &cur, err);
	if (wfd < 0)
		return wfd;
	_cleanup_close_ int ufd = open_meta_entry(o->path[0] ? upar : upper_fd, uname, rel, &ust, err);
	if (ufd < 0)
		return ufd;
	if ((cur.st_mode & S_IFMT) != (o->old_st.st_mode & S_IFMT) || cur.st_ino != o->old_ino)
		return txbox_fail(err, -ESTALE, "%s changed in the workspace during the transaction", rel);
	int r = save_xattrs(wfd, ufd, displaced_fd, idx, ux, err);
	if (r < 0)
		return r;
	if (o->owner_mode && (r = save_owner_mode(displaced_fd, idx, &cur, err)) < 0)
		return r;
	r = sync_xattrs(ufd, wfd, ux, !o->path[0], err);
	if (r < 0)
		return r;
	struct stat want = o->new_st;
	want.st_mode = (cur.st_mode & S_IFMT) | (o->new_st.st_mode & 07777);
	return set_meta(wfd, rel, &want, o->owner_mode, err);
}

static int displaced_name(size_t idx, char buf[static 32])
{
	return snprintf(buf, 32, "%zu", idx);
}

/* A link op must not touch its parent's times (a content change, natively,
 * does not): they are put back after the rename and the link. */
typedef struct parent_times {
	int fd;
	struct timespec ts[2];
	bool ok;
} parent_times;

static parent_times parent_times_save(int dirfd)
{
	struct stat st;
	parent_times t = {.fd = dirfd};
	t.ok = fstat(dirfd, &st) == 0;
	t.ts[0] = st.st_atim;
	t.ts[1] = st.st_mtim;
	return t;
}

/* Journaled like a loan: a kill between the link and the restore is undone
 * from displaced/<idx>.t, an empty file holding the parent's times. */
static int parent_times_record(const parent_times *t, int displaced_fd, size_t idx, txbox_error *err)
{
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.t", idx);
	_cleanup_close_ int fd = openat(displaced_fd, fn, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return 0; /* the first record holds the times from before the op */
	if (fd < 0 || futimens(fd, t->ts) < 0 || fsync(fd) < 0)
		return txbox_fail_errno(err, -errno, "saving the times of the parent of op %zu", idx);
	return 0;
}

/* The times parent_times_record kept, if any, replace t's. */
static void parent_times_recorded(parent_times *t, int displaced_fd, size_t idx)
{
	char fn[40];
	snprintf(fn, sizeof fn, "%zu.t", idx);
	struct stat st;
	if (fstatat(displaced_fd, fn, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
		t->ts[0] = st.st_atim;
		t->ts[1] = st.st_mtim;
		t->ok = true;
	}
}

static void parent_times_restore(const parent_times *t)
{
	char p[32];
	fs_fd_path(t->fd, p);
	if (t->ok && utimensat(AT_FDCWD, p, t->ts, 0) < 0) { /* best effort: times only */
	}
}

static int apply_link(int ws_fd, int displaced_fd, const plan_op *o, size_t idx, txbox_error *err)
{
	const char *wname, *tname;
	_cleanup_close_ int wpar = snapshot_open_parent(ws_fd, o->path, &wname, err);
	if (wpar < 0)
		return wpar;
	_cleanup_close_ int tpar = -1;
	if (o->link_target) {
		tpar = snapshot_open_parent(ws_fd, o->link_target, &tname, err);
		if (tpar < 0)
			return tpar;
	} else if (o->link_fd < 0) {
		return txbox_fail(err, -EINVAL, "linking %s: no target", o->path);
	}
	struct stat cur;
	if (o->link_target && (fstatat(tpar, tname, &cur, AT_SYMLINK_NOFOLLOW) < 0 || cur.st_ino != o->new_ino))
		return txbox_fail(err, -ESTALE, "%s: its link target %s is not the recorded file", o->path,
				  o->link_target);
	parent_times pt = parent_times_save(wpar);
	if (pt.ok && parent_times_record(&pt, displaced_fd, idx, err) < 0)
		return err->code;
	loan_log lg = {displaced_fd, idx};
	if (o->existed) {
		char dn[32];
		displaced_name(idx, dn);
		if (fstatat(wpar, wname, &cur, AT_SYMLINK_NOFOLLOW) < 0 || cur.st_ino != o->old_ino)
			return txbox_fail(err, -ESTALE, "%s changed in the workspace during the transaction", o->path);
		if (move_entry(&lg, wpar, wname, displaced_fd, dn, RENAME_NOREPLACE) < 0)
			return txbox_fail_errno(err, -errno, "moving %s aside", o->path);
	}
	char fdp[40];
	if (!o->link_target)
		snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", o->link_fd);
	int lr = o->link_target ? linkat(tpar, tname, wpar, wname, 0)
				: linkat(AT_FDCWD, fdp, wpar, wname, AT_SYMLINK_FOLLOW);
	if (lr < 0)
		return txbox_fail_errno(err, -errno, "linking %s to %s", o->path,
					o->link_target ? o->link_target : "its hard-link group");
	parent_times_restore(&pt);
	return 0;
}

static int apply_one(int ws_fd, int upper_fd, int displaced_fd, const plan *p, size_t idx, txbox_error *err)
{
	const plan_op *o = &p->ops[idx];
	if (o->kind == PLAN_META)
		return apply_meta(ws_fd, upper_fd, displaced_fd, idx, o, p->userxattr, err);
	if (o->kind == PLAN_LINK)
		return apply_link(ws_fd, displaced_fd, o, idx, err);
	loan_log lg = {displaced_fd, idx};
	const char *wname, *uname;
	_cleanup_close_ int wpar = snapshot_open_parent(ws_fd, o->path, &wname, err);
	if (wpar < 0)
		return wpar;
	struct stat cur;
	if (o->existed && (fstatat(wpar, wname, &cur, AT_SYMLINK_NOFOLLOW) < 0 || cur.st_ino != o->old_ino))
		return txbox_fail(err, -ESTALE, "%s changed in the workspace during the transaction", o->path);
	if (o->kind == PLAN_DELETE) {
		char dn[32];
		displaced_name(idx, dn);
		if (move_entry(&lg, wpar, wname, displaced_fd, dn, RENAME_NOREPLACE) < 0)
			return txbox_fail_errno(err, -errno, "moving %s aside", o->path);
		return 0;
	}
	_cleanup_close_ int upar = snapshot_open_parent(upper_fd, o->path, &uname, err);
	if (upar < 0)
		return upar;
	if (move_entry(&lg, upar, uname, wpar, wname, o->existed ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST)
			return txbox_fail(err, -EEXIST, "%s appeared in the workspace during the transaction", o->path);
		return txbox_fail_errno(err, -errno, "publishing %s", o->path);
	}
	return 0;
}

/* Move displaced/<idx> back to dirfd/name when it is the op's original
 * (the inode number the journal recorded). */
static int restore_displaced(int displaced_fd, size_t idx, int wpar, const char *wname, const plan_op *o,
			     txbox_error *err)
{
	char dn[32];
	displaced_name(idx, dn);
	loan_log lg = {displaced_fd, idx};
	struct stat cur;
	if (fstatat(displaced_fd, dn, &cur, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* never moved */
	if (cur.st_ino != o->old_ino)
		return txbox_fail(err, -ESTALE, "the original of %s kept for reversal is not the recorded one", o->path);
	if (move_entry(&lg, displaced_fd, dn, wpar, wname, RENAME_NOREPLACE) < 0)
		return txbox_fail_errno(err, -errno, "restoring %s", o->path);
	return 0;
}

static int reverse_link(int ws_fd, int displaced_fd, const plan_op *o, size_t idx, txbox_error *err)
{
	const char *wname;
	_cleanup_close_ int wpar = snapshot_open_parent(ws_fd, o->path, &wname, err);
	if (wpar < 0)
		return wpar;
	parent_times pt = parent_times_save(wpar);
	parent_times_recorded(&pt, displaced_fd, idx);
	struct stat cur;
	if (fstatat(wpar, wname, &cur, AT_SYMLINK_NOFOLLOW) == 0 && cur.st_ino == o->new_ino &&
	    unlinkat(wpar, wname, 0) < 0)
		return txbox_fail_errno(err, -errno, "removing the link %s", o->path);
	int r = o->existed ? restore_displaced(displaced_fd, idx, wpar, wname, o, err) : 0;
	parent_times_restore(&pt);
	return r;
}

static int reverse_meta(int ws_fd, int displaced_fd, const plan *p, size_t idx, txbox_error *err)
{
	const plan_op *o = &p->ops[idx];
	const char *wname = "";
	const char *rel = o->path[0] ? o->path : ".";
	_cleanup_close_ int wpar = o->path[0] ? snapshot_open_parent(ws_fd, o->path, &wname, err) : -1;
	if (o->path[0] && wpar < 0)
		return wpar;
	struct stat cur, saved;
	txbox_error oerr = TXBOX_ERROR_INIT;
	_cleanup_close_ int efd = open_meta_entry(o->path[0] ? wpar : ws_fd, wname, rel, &cur, &oerr);
	bool gone = efd == -ENOENT;
	txbox_error_clear(&oerr);
	if (gone || (efd >= 0 && cur.st_ino != o->old_ino))
		return 0; /* not ours any more */
	if (efd < 0)
		return txbox_fail_errno(err, efd, "opening %s to restore its metadata", rel);
	int r = restore_xattrs(efd, displaced_fd, idx, p->userxattr, err);
	if (r < 0)
		return r;
	int have = saved_owner_mode(displaced_fd, idx, &saved, err);
	if (have < 0)
		return have;
	struct stat old = o->old_st;
	old.st_mode = (cur.st_mode & S_IFMT) | (have ? saved.st_mode & 07777 : 0);
	if (have) {
		old.st_uid = saved.st_uid;
		old.st_gid = saved.st_gid;
	}
	return set_meta(efd, rel, &old, have, err);
}

static int reverse_one(int ws_fd, int upper_fd, int displaced_fd, const plan *p, size_t idx, txbox_error *err)
{
	const plan_op *o = &p->ops[idx];
	if (o->kind == PLAN_LINK)
		return reverse_link(ws_fd, displaced_fd, o, idx, err);
	if (o->kind == PLAN_META)
		return reverse_meta(ws_fd, displaced_fd, p, idx, err);
	loan_log lg = {displaced_fd, idx};
	const char *wname, *uname;
	_cleanup_close_ int wpar = snapshot_open_parent(ws_fd, o->path, &wname, err);
	if (wpar < 0)
		return wpar;
	if (o->kind == PLAN_DELETE)
		return restore_displaced(displaced_fd, idx, wpar, wname, o, err);
	struct stat cur;
	if (fstatat(wpar, wname, &cur, AT_SYMLINK_NOFOLLOW) < 0 || cur.st_ino != o->new_ino)
		return 0; /* never published */
	_cleanup_close_ int upar = snapshot_open_parent(upper_fd, o->path, &uname, err);
	if (upar < 0)
		return upar;
	if (move_entry(&lg, wpar, wname, upar, uname, o->existed ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0)
		return txbox_fail_errno(err, -errno, "restoring %s", o->path);
	return 0;
}

/* Give back the loans move_entry journaled for op idx, wherever the
 * reversal left their directories: the entry at the op's path or its
 * parent, in the workspace or the layer, or the displaced original. Only
 * the directory with the recorded inode number, only to the mode of the
 * real file kept for it. */
static int restore_loan(int dirfd, const char *name, int displaced_fd, size_t idx, txbox_error *err)
{
	_cleanup_close_ int fd = name ? fs_open_entry(dirfd, name, O_PATH | O_DIRECTORY, 0)
				      : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	struct stat st, saved;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0; /* not a directory here: nothing of ours */
	char fn[48];
	loan_name(idx, st.st_ino, fn);
	_cleanup_close_ int rfd = openat(displaced_fd, fn, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? 0 : txbox_fail_errno(err, -errno, "reading the loan record %s", fn);
	if (fstat(rfd, &saved) < 0 || !S_ISREG(saved.st_mode) || saved.st_nlink != 1 || saved.st_size != 0)
		return txbox_fail(err, -EINVAL, "the loan record %s is damaged", fn);
	char p[32];
	fs_fd_path(fd, p);
	if ((st.st_mode & 07777) != (saved.st_mode & 07777) && chmod(p, saved.st_mode & 07777) < 0)
		return txbox_fail_errno(err, -errno, "giving back the mode of a directory (op %zu)", idx);
	return 0;
}

static int restore_loans(int ws_fd, int upper_fd, int displaced_fd, const plan_op *o, size_t idx,
			 txbox_error *err)
{
	int r = 0;
	char dn[32];
	displaced_name(idx, dn);
	int roots[2] = {ws_fd, upper_fd};
	for (int i = 0; i < 2; i++) {
		const char *name;
		txbox_error oerr = TXBOX_ERROR_INIT;
		_cleanup_close_ int par = snapshot_open_parent(roots[i], o->path, &name, &oerr);
		txbox_error_clear(&oerr);
		if (par < 0)
			continue; /* gone: it holds nothing of ours */
		int q = restore_loan(par, name, displaced_fd, idx, err);
		if (q == 0)
			q = restore_loan(par, NULL, displaced_fd, idx, err);
		if (q < 0)
			r = q;
	}
	int q = restore_loan(displaced_fd, dn, displaced_fd, idx, err);
	return q < 0 ? q : r;
}

int commit_reverse(int ws_fd, int upper_fd, int displaced_fd, const plan *p, size_t n, txbox_error *err)
{
	int r = 0;
	/* Entries first (newest op first), then the metadata and times of
	 * directories — restoring an entry changes its parent's mtime. */
	for (size_t i = n; i-- > 0;) {
		if (p->ops[i].kind == PLAN_META)
			continue;
		int q = reverse_one(ws_fd, upper_fd, displaced_fd, p, i, err);
		if (q < 0)
			r = q; /* keep going: restore as much as possible */
		q = restore_loans(ws_fd, upper_fd, displaced_fd, &p->ops[i], i, err);
		if (q < 0)
			r = q;
	}
	for (size_t i = p->n; i-- > 0;) { /* all METAs: one may have been half-applied */
		if (p->ops[i].kind != PLAN_META || i > n)
			continue;
		int q = reverse_one(ws_fd, upper_fd, displaced_fd, p, i, err);
		if (q < 0)
			r = q;
	}
	return r;
}

/* Fault injection for the crash-safety tests: TXBOX_FAULT_COMMIT_AFTER=N
 * kills the process with SIGKILL after N ops of a commit were applied. */
static long fault_after(void)
{
	const char *v = getenv("TXBOX_FAULT_COMMIT_AFTER");
	if (!v || !*v)
		return -1;
	char *end;
	long n = strtol(v, &end, 10);
	return (*end || n < 0) ? -1 : n;
}

int commit_apply(int ws_fd, int upper_fd, int displaced_fd, const plan *p, txbox_error *err)
{
	long crash_at = fault_after();
	for (size_t i = 0; i < p->n; i++) {
		if (crash_at >= 0 && (long)i == crash_at)
			raise(SIGKILL);
		int r = apply_one(ws_fd, upper_fd, displaced_fd, p, i, err);
		if (r < 0) {
			txbox_error rerr = TXBOX_ERROR_INIT;
			if (commit_reverse(ws_fd, upper_fd, displaced_fd, p, i, &rerr) < 0)
				txbox_error_prefix(err, "and restoring the workspace failed too (%s); run `txbox "
							"recover`",
						   rerr.message ? rerr.message : "?");
			txbox_error_clear(&rerr);
			return r;
		}
	}
	return 0;
}
