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

#define LAYER_ROOT_MAX 96

static bool keep_hidden_whiteout(int dirfd, const char *name, void *arg)
{
	const char *hide = arg;
	struct stat st;
	return hide && !strcmp(name, hide) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISCHR(st.st_mode) && st.st_rdev == 0;
}

/* The workspace root's xattrs onto the upper root, best effort: the
 * command sees them, and the plan sees only what it changed. Never the
 * overlay's own (a user.overlay.opaque the workspace carries would hide
 * the whole workspace) nor security.* (the label is the file system's). */
static void mirror_root_xattrs(int ws_fd, int up)
{
	_cleanup_free_ char *names = NULL;
	size_t n = 0;
	char dst[32];
	if (fs_xattr_list_fd(ws_fd, &names, &n) < 0)
		return;
	fs_fd_path(up, dst);
	for (size_t off = 0; off < n; off += strlen(names + off) + 1) {
		const char *k = names + off;
		if (fs_xattr_is_overlay_private(k) || strncmp(k, "security.", 9) == 0)
			continue;
		_cleanup_free_ char *val = NULL;
		ssize_t vl = fs_xattr_get_fd(ws_fd, k, &val);
		if (vl >= 0)
			(void)setxattr(dst, k, val, (size_t)vl, 0);
	}
}

int layer_create(int txfd, unsigned index, int ws_fd, const char *hide_name, bool userxattr, layer *out,
		 txbox_error *err)
{
	out->upper_fd = out->work_fd = -1;
	out->state_whiteout = false;
	char rel[64];
	snprintf(rel, sizeof rel, "layers/%u", index);
	/* Always new directories: an old upper or work dir may still belong
	 * to an overlay kept alive after its sandbox died (a descriptor in
	 * flight in a Unix socket holds its superblock), and overlayfs
	 * refuses a second mount on them. */
	_cleanup_close_ int lfd = fs_mkdir_p_at(txfd, rel, 0700, err);
	if (lfd < 0)
		return txbox_error_prefix(err, "creating layer %u", index);
	if (fs_mkdir_private(lfd, "upper") < 0 || fs_mkdir_private(lfd, "work") < 0)
		return txbox_fail_errno(err, -errno, "creating layer %u directories", index);
	_cleanup_close_ int up = openat(lfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int wk = openat(lfd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (up < 0 || wk < 0)
		return txbox_fail_errno(err, -errno, "opening layer %u", index);

	/* The merged root shows the upper root's attributes: mirror the workspace. */
	struct stat st, cur;
	if (fstat(ws_fd, &st) < 0 || fstat(up, &cur) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace");
	if ((cur.st_uid != st.st_uid || cur.st_gid != st.st_gid) && fchown(up, st.st_uid, st.st_gid) < 0 &&
	    errno != EPERM)
		return txbox_fail_errno(err, -errno, "setting the layer's owner");
	if ((cur.st_mode & 07777) != (st.st_mode & 07777) && fchmod(up, st.st_mode & 07777) < 0)
		return txbox_fail_errno(err, -errno, "setting the layer's mode");
	mirror_root_xattrs(ws_fd, up);
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
	 * that for a change the command made (plan.c reads this back). The
	 * xattr namespace the overlay will use is recorded with it: the
	 * planner must know which overlay.* xattrs are the kernel's. */
	struct stat ust;
	char rec[LAYER_ROOT_MAX];
	if (fstat(up, &ust) < 0)
		return txbox_fail_errno(err, -errno, "stat of layer %u", index);
	int rn = snprintf(rec, sizeof rec, "%u %u %o %s\n", (unsigned)ust.st_uid, (unsigned)ust.st_gid,
			  (unsigned)(ust.st_mode & 07777), userxattr ? "userxattr" : "trusted");
	_cleanup_close_ int rfd = openat(lfd, "root", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (rfd < 0 || write(rfd, rec, (size_t)rn) != rn)
		return txbox_fail_errno(err, -errno, "recording layer %u", index);
	out->upper_fd = steal_fd(up);
	out->work_fd = steal_fd(wk);
	return 0;
}

int layer_read_root(int txfd, unsigned index, layer_root *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	char rel[64];
	snprintf(rel, sizeof rel, "layers/%u/root", index);
	_cleanup_free_ char *rec = NULL;
	size_t len;
	int r = fs_read_file_at(txfd, rel, LAYER_ROOT_MAX, &rec, &len, err);
	if (r < 0)
		return txbox_error_prefix(err, "reading the record of layer %u", index);
	unsigned u, g, m;
	char ns[16];
	int end = 0;
	if (sscanf(rec, "%u %u %o %15s%n", &u, &g, &m, ns, &end) != 4 || m > 07777 || (size_t)end + 1 != len ||
	    rec[end] != '\n' || (strcmp(ns, "userxattr") != 0 && strcmp(ns, "trusted") != 0))
		return txbox_fail(err, -EINVAL, "the record of layer %u is damaged", index);
	out->initial.st_uid = u;
	out->initial.st_gid = g;
	out->initial.st_mode = m;
	out->userxattr = strcmp(ns, "userxattr") == 0;
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
