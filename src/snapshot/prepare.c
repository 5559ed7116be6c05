/* prepare: make entries of the upper layer publishable before they are
 * renamed into the workspace. Everything here touches only the layer
 * (the sandbox is dead by now, so nothing races with us there):
 *   - overlay-private xattrs removed: trusted.overlay.*, and user.overlay.*
 *     when the overlay was mounted with userxattr — otherwise those are
 *     the command's own data (it may set them, as root, like any xattr);
 *   - setuid/setgid bits and security.capability dropped (when asked);
 *   - whiteouts inside a directory that moves as a whole removed (they
 *     would hide nothing once published);
 *   - device nodes and sockets refused. */
#include "snapshot/prepare.h"
#include "snapshot/snapshot.h"

#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

void prepare_xattr_path(int dirfd, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name);
}

bool snapshot_xattr_private(const char *name, bool userxattr)
{
	return strncmp(name, "trusted.overlay.", 16) == 0 || (userxattr && strncmp(name, "user.overlay.", 13) == 0);
}

bool snapshot_xattr_is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 || strcmp(name, "system.posix_acl_default") == 0;
}

/* The overlay's xattr name for what (e.g. "opaque") in its namespace. */
static const char *ovl_xattr(const char *what, bool userxattr, char *buf, size_t len)
{
	snprintf(buf, len, "%s.overlay.%s", userxattr ? "user" : "trusted", what);
	return buf;
}

const char *prepare_reserved(const char *name, const char *reserved_name, const char *state_mark)
{
	if (reserved_name && !strcmp(name, reserved_name))
		return "the name of txbox's state directory";
	if (state_mark && !strcmp(name, state_mark))
		return "the mark of a txbox state directory (a copy of one?)";
	return NULL;
}

bool prepare_is_whiteout(int dirfd, const char *name, const struct stat *st, bool userxattr)
{
	if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0))
		return true;
	if (S_ISREG(st->st_mode) && st->st_size == 0) {
		char p[PATH_MAX], k[32];
		prepare_xattr_path(dirfd, name, p, sizeof p);
		char v[4];
		if (lgetxattr(p, ovl_xattr("whiteout", userxattr, k, sizeof k), v, sizeof v) >= 0)
			return true;
	}
	return false;
}

bool prepare_is_opaque(int dirfd, const char *name, bool userxattr)
{
	char p[PATH_MAX], k[32];
	prepare_xattr_path(dirfd, name, p, sizeof p);
	char v[4] = {0};
	ssize_t n = lgetxattr(p, ovl_xattr("opaque", userxattr, k, sizeof k), v, sizeof v - 1);
	return n == 1 && v[0] == 'y';
}

ssize_t prepare_ovl_getxattr(int dirfd, const char *name, const char *what, bool userxattr, void *buf, size_t len)
{
	char p[PATH_MAX], k[32];
	prepare_xattr_path(dirfd, name, p, sizeof p);
	return lgetxattr(p, ovl_xattr(what, userxattr, k, sizeof k), buf, len);
}

int prepare_entry(int dirfd, const char *name, const struct stat *st, const char *relpath,
		  const prepare_opts *po, txbox_error *err)
{
	bool strip_setuid = po->strip_setuid;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return txbox_fail(err, -EPERM, "refusing to commit the device node %s", relpath);
	if (S_ISSOCK(st->st_mode))
		return txbox_fail(err, -EPERM, "refusing to commit the socket %s", relpath);
	const char *own = prepare_reserved(name, po->reserved_name, po->state_mark);
	if (own)
		return txbox_fail(err, -EPERM,
				  "%s: the command created an entry named %s, %s; such entries are never committed",
				  relpath, name, own);
	char p[PATH_MAX];
	prepare_xattr_path(dirfd, name, p, sizeof p);
	_cleanup_free_ char *list = NULL;
	size_t n = 0;
	int lr = fs_xattr_list(p, &list, &n);
	if (lr == -E2BIG) /* the kernel lists at most XATTR_LIST_MAX bytes of names */
		return txbox_fail(err, lr, "%s: its extended attribute names take more than 64 KiB, more "
				  "than the kernel can list, so txbox cannot commit it", relpath);
	if (lr < 0)
		return txbox_fail_errno(err, lr, "listing xattrs of %s", relpath);
	for (size_t off = 0; off < n; off += strlen(list + off) + 1) {
		const char *k = list + off;
		if (snapshot_xattr_private(k, po->userxattr) || (strip_setuid && strcmp(k, "security.capability") == 0)) {
			if (lremovexattr(p, k) == 0 || errno == ENODATA)
				continue;
			/* Without CAP_FOWNER (rootless), changing xattrs needs write
			 * permission: lend it for the removal. */
			if (errno == EACCES && !S_ISLNK(st->st_mode) &&
			    fchmodat(dirfd, name, (st->st_mode | S_IWUSR) & 07777, 0) == 0) {
				int rr = lremovexattr(p, k);
				int e = errno;
				if (fchmodat(dirfd, name, st->st_mode & 07777, 0) < 0 && rr == 0)
					return txbox_fail_errno(err, -errno, "restoring the mode of %s", relpath);
				if (rr == 0 || e == ENODATA)
					continue;
				errno = e;
			}
			return txbox_fail_errno(err, -errno, "removing xattr %s from %s", k, relpath);
		}
	}
	if (strip_setuid && (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && (st->st_mode & (S_ISUID | S_ISGID))) {
		/* Invariant 5: no setuid/setgid bit is ever published — on
		 * directories either (setgid there hands the group to new files). */
		mode_t m = st->st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID);
		if (fchmodat(dirfd, name, m, 0) < 0)
			return txbox_fail_errno(err, -errno, "clearing setuid/setgid bits of %s", relpath);
	}
	return 0;
}

static int prepare_dir_children(int dfd, const char *relpath, const prepare_opts *po, unsigned depth,
				txbox_error *err)
{
	if (depth > 4096)
		return txbox_fail(err, -ELOOP, "%s: directory tree deeper than 4096 levels", relpath);
	int dupfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset: never share a readdir position */
	if (dupfd < 0)
		return txbox_fail_errno(err, -errno, "dup");
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return txbox_fail_errno(err, -errno, "reading %s", relpath);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (po->deadline_ns && clock_now_ns() >= po->deadline_ns)
			return txbox_fail(err, -ETIMEDOUT, "the time limit passed while preparing the commit (at %s); "
							   "nothing was published", relpath);
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return txbox_fail_errno(err, -errno, "stat %s/%s", relpath, de->d_name);
		_cleanup_free_ char *child = NULL;
		if (asprintf(&child, "%s/%s", relpath, de->d_name) < 0)
			return txbox_fail(err, -ENOMEM, "out of memory");
		if (prepare_is_whiteout(dfd, de->d_name, &st, po->userxattr)) {
			if (unlinkat(dfd, de->d_name, 0) < 0)
				return txbox_fail_errno(err, -errno, "removing whiteout %s", child);
			continue;
		}
		int r = prepare_entry(dfd, de->d_name, &st, child, po, err);
		if (r < 0)
			return r;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0)
				return txbox_fail_errno(err, -errno, "opening %s", child);
			r = prepare_dir_children(cfd, child, po, depth + 1, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int prepare_tree(int dirfd, const char *name, const struct stat *st, const char *relpath,
		 const prepare_opts *po, txbox_error *err)
{
	int r = prepare_entry(dirfd, name, st, relpath, po, err);
	if (r < 0 || !S_ISDIR(st->st_mode))
		return r;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening %s", relpath);
	return prepare_dir_children(fd, relpath, po, 0, err);
}
