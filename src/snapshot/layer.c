/* layer: one overlay layer of a transaction: layers/<n>/{upper,work}.
 * Creating it is O(1): two directories, whatever the workspace size. */
#include "snapshot/snapshot.h"

#include "util/cleanup.h"
#include "util/fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static bool keep_hidden_whiteout(int dirfd, const char *name, void *arg)
{
	const char *hide = arg;
	struct stat st;
	return hide && !strcmp(name, hide) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISCHR(st.st_mode) && st.st_rdev == 0;
}

/* Make an earlier transaction's layer dirs as good as new: an upper with
 * nothing but the state dir's whiteout and no xattrs on its root (overlay's
 * own included: the kernel sets them again for this workspace), an empty
 * overlay index. tx_recycle left them so but for overlay's xattrs; this
 * makes sure. work/work is the kernel's to clean at mount. */
int layer_scrub(int up, int wk, const char *hide, txbox_error *err)
{
	if (fs_empty_dir(up, keep_hidden_whiteout, (void *)hide, err) < 0)
		return err ? err->code : -EIO;
	/* index entries are extra links to committed files (overlayfs makes
	 * index/ mode 0: fs_empty_dir_at makes it ours to read) */
	struct stat ist;
	if (fstatat(wk, "index", &ist, AT_SYMLINK_NOFOLLOW) == 0 && fs_empty_dir_at(wk, "index", NULL, NULL, err) < 0)
		return err ? err->code : -EIO;
	char fdp[32], path[40];
	fs_fd_path(up, fdp);
	snprintf(path, sizeof path, "%s/.", fdp); /* the directory, not the magic link */
	_cleanup_free_ char *names = NULL;
	size_t len = 0;
	int r = fs_xattr_list(path, &names, &len);
	if (r < 0)
		return txbox_fail_errno(err, r, "listing the upper root's xattrs");
	for (size_t i = 0; i < len; i += strlen(names + i) + 1) {
		const char *n = names + i;
		if (fremovexattr(up, n) == 0 || errno == ENODATA)
			continue;
		/* a security module's label is the filesystem's, not the command's */
		if (!strncmp(n, "security.", 9) && (errno == EPERM || errno == EACCES || errno == EOPNOTSUPP))
			continue;
		return txbox_fail_errno(err, -errno, "removing the xattr %s from the upper root", n);
	}
	return 0;
}

int layer_create(int txfd, unsigned index, int ws_fd, const char *hide_name, layer *out, txbox_error *err)
{
	out->upper_fd = out->work_fd = -1;
	out->state_whiteout = false;
	char rel[64];
	snprintf(rel, sizeof rel, "layers/%u", index);
	/* A spare transaction directory (tx_recycle) has its layer already. */
	bool reused = true;
	_cleanup_close_ int lfd = openat(txfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0) {
		reused = false;
		lfd = fs_mkdir_p_at(txfd, rel, 0700, err);
		if (lfd < 0)
			return txbox_error_prefix(err, "creating layer %u", index);
		if (mkdirat(lfd, "upper", 0700) < 0 || mkdirat(lfd, "work", 0700) < 0)
			return txbox_fail_errno(err, -errno, "creating layer %u directories", index);
	}
	_cleanup_close_ int up = openat(lfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int wk = openat(lfd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (up < 0 || wk < 0)
		return txbox_fail_errno(err, -errno, "opening layer %u", index);
	if (reused && layer_scrub(up, wk, hide_name, err) < 0)
		return txbox_error_prefix(err, "reusing layer %u", index);

	/* The merged root shows the upper root's attributes: mirror the workspace. */
	struct stat st, cur;
	if (fstat(ws_fd, &st) < 0 || fstat(up, &cur) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace");
	if ((cur.st_uid != st.st_uid || cur.st_gid != st.st_gid) && fchown(up, st.st_uid, st.st_gid) < 0 &&
	    errno != EPERM)
		return txbox_fail_errno(err, -errno, "setting the layer's owner");
	if ((cur.st_mode & 07777) != (st.st_mode & 07777) && fchmod(up, st.st_mode & 07777) < 0)
		return txbox_fail_errno(err, -errno, "setting the layer's mode");
	if (hide_name) {
		if (mknodat(up, hide_name, S_IFCHR | 0, makedev(0, 0)) == 0)
			out->state_whiteout = true;
		else if (errno == EEXIST)
			out->state_whiteout = keep_hidden_whiteout(up, hide_name, (void *)hide_name);
	}
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	futimens(up, ts);
	/* What the upper root started as: without privileges the owner copy may
	 * fail (a group the caller is not in), and the commit must not take
	 * that for a change the command made (plan.c reads this back). */
	struct stat ust;
	char rec[96];
	if (fstat(up, &ust) < 0)
		return txbox_fail_errno(err, -errno, "stat of layer %u", index);
	int rn = snprintf(rec, sizeof rec, "%u %u %o\n", (unsigned)ust.st_uid, (unsigned)ust.st_gid,
			  (unsigned)(ust.st_mode & 07777));
	_cleanup_close_ int rfd = openat(lfd, "root", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (rfd < 0 || write(rfd, rec, (size_t)rn) != rn)
		return txbox_fail_errno(err, -errno, "recording layer %u", index);
	out->upper_fd = steal_fd(up);
	out->work_fd = steal_fd(wk);
	return 0;
}

void layer_close(layer *l)
{
	if (l->upper_fd >= 0)
		close(l->upper_fd);
	if (l->work_fd >= 0)
		close(l->work_fd);
	l->upper_fd = l->work_fd = -1;
}
