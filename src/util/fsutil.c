#include "util/fsutil.h"

#include "util/cleanup.h"
#include "util/syscalls.h"

#include <dirent.h>
#include <errno.h>
#include <sys/random.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int openat2_state = -1; /* -1 unknown, 0 missing, 1 present */

bool probe_openat2(void)
{
	if (openat2_state < 0) {
		struct txbox_open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH};
		int fd = sys_openat2(AT_FDCWD, ".", &how);
		if (fd >= 0) {
			close(fd);
			openat2_state = 1;
		} else {
			openat2_state = (errno == ENOSYS || errno == EPERM) ? 0 : 1;
		}
	}
	return openat2_state == 1;
}

void fs_fd_path(int fd, char buf[static 32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* O_NOFOLLOW walk: every intermediate component must be a real directory. */
static int open_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	_cleanup_close_ int cur = -1;
	int base = dirfd;
	char *save = NULL;
	char *comp = strtok_r(copy, "/", &save);
	if (!comp)
		return -EINVAL;
	for (;;) {
		char *next = strtok_r(NULL, "/", &save);
		if (strcmp(comp, "..") == 0)
			return -EXDEV;
		if (!next) {
			int fd = openat(base, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
			return fd >= 0 ? fd : -errno;
		}
		if (strcmp(comp, ".") != 0) {
			int nfd = openat(base, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (nfd < 0)
				return errno == ENOTDIR ? -ELOOP : -errno;
			closep(&cur);
			cur = nfd;
			base = cur;
		}
		comp = next;
	}
}

/* chmod what mkdirat just made, never through a symlink swapped in */
static int chmod_made(int dirfd, const char *name, mode_t mode)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = fchmod(fd, mode);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

int fs_mkdir_private(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) < 0)
		return -1;
	return chmod_made(dirfd, name, 0700);
}

int fs_dir_is_empty(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return 0;
	return 1;
}

bool fs_is_state_dir(int dirfd, const char *name, const char *mark)
{
	static const char *const parts[] = {"tx", "workspace"};
	static const mode_t types[] = {S_IFDIR, S_IFREG};
	struct stat dir, markst, st;
	char p[NAME_MAX + 64];
	/* the mark first: most directories fail here, after one lookup */
	if (!mark || snprintf(p, sizeof p, "%s/%s", name, mark) >= (int)sizeof p ||
	    fstatat(dirfd, p, &markst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(markst.st_mode) ||
	    fstatat(dirfd, name, &dir, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(dir.st_mode) || markst.st_uid != dir.st_uid)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		if (snprintf(p, sizeof p, "%s/%s", name, parts[i]) >= (int)sizeof p ||
		    fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0 || (st.st_mode & S_IFMT) != types[i] ||
		    st.st_uid != dir.st_uid)
			return false;
	return true;
}

int fs_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	if (!path || path[0] == '/' || path[0] == '\0')
		return -EINVAL;
	if (probe_openat2()) {
		struct txbox_open_how how = {
			.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd;
		do
			fd = sys_openat2(dirfd, path, &how);
		while (fd < 0 && errno == EAGAIN);
		return fd >= 0 ? fd : -errno;
	}
	return open_walk(dirfd, path, flags, mode);
}

/* Open a directory we are about to empty; overlayfs leaves work/work at
 * mode 0 and a command may leave unreadable directories: make it ours to
 * read (we own everything we remove). */
static int open_dir_for_removal(int dfd, const char *name)
{
	/* never another mount (EXDEV): emptying a mount point would empty
	 * the tree mounted there, nobody's to remove here (red teams rt21,
	 * rt22); checked before anything is changed */
	_cleanup_close_ int p = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p < 0)
		return -1;
	if (!fs_same_mount(p, dfd)) {
		errno = EXDEV;
		return -1;
	}
	int fd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 || errno != EACCES)
		return fd;
	/* chmod exactly that directory (never through a symlink swapped in) */
	char path[40];
	fs_fd_path(p, path);
	if (chmod(path, 0700) < 0)
		return -1;
	return openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define REMOVE_BUF 8192

/* A tree of any depth is removed with a bounded number of fds and bounded
 * recursion: a directory found deeper than HOIST_DEPTH below the sink (a
 * directory whose whole contents are going) is renamed into the sink and
 * removed from there later. All fd-relative; never `..`, never a path. */
#define HOIST_DEPTH 32

typedef struct rm_ctx {
	txbox_error *err;
	unsigned long hoisted; /* directories moved into a sink so far */
	unsigned long seq;     /* for their unique names */
} rm_ctx;

static int remove_children(rm_ctx *c, int dfd, bool own, unsigned depth, int sink, fs_keep_fn keep, void *arg);

/* Move dfd/name into sink under a fresh name: 1 done, 0 not possible. */
static int hoist(rm_ctx *c, int dfd, const char *name, int sink)
{
	for (int tries = 0; tries < 64; tries++) {
		char nn[48];
		snprintf(nn, sizeof nn, ".txbox-rm-%d-%lu", (int)getpid(), c->seq++);
		if (renameat2(dfd, name, sink, nn, RENAME_NOREPLACE) == 0) {
			c->hoisted++;
			return 1;
		}
		if (errno == EACCES && tries == 0) { /* moving a directory rewrites its "..": ours to make writable */
			_cleanup_close_ int p = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			char path[40];
			if (p < 0)
				return 0;
			fs_fd_path(p, path); /* that directory itself, never a symlink swapped in */
			if (chmod(path, 0700) < 0)
				return 0;
			continue;
		}
		if (errno != EEXIST)
			return 0;
	}
	return 0;
}

bool fs_same_mount(int a, int b)
{
	struct statx x, y;
	if (statx(a, "", AT_EMPTY_PATH, STATX_MNT_ID, &x) < 0 || statx(b, "", AT_EMPTY_PATH, STATX_MNT_ID, &y) < 0)
		return false;
	if (x.stx_mask & y.stx_mask & STATX_MNT_ID)
		return x.stx_mnt_id == y.stx_mnt_id;
	return x.stx_dev_major == y.stx_dev_major && x.stx_dev_minor == y.stx_dev_minor; /* before Linux 5.8 */
}

/* Remove the directory dfd/name and all below it. */
static int remove_subdir(rm_ctx *c, int dfd, const char *name, unsigned depth, int sink, bool *made_writable)
{
	if (sink >= 0 && depth >= HOIST_DEPTH && hoist(c, dfd, name, sink))
		return 0;
	_cleanup_close_ int cfd = open_dir_for_removal(dfd, name);
	if (cfd < 0 && errno == EACCES && !*made_writable) {
		/* no search permission here: this directory is ours to change */
		*made_writable = true;
		fchmod(dfd, 0700);
		cfd = open_dir_for_removal(dfd, name);
	}
	if (cfd < 0 && errno == EXDEV)
		return txbox_fail(c->err, -EXDEV, "%s is a mount point (or cannot be told from one): not removed", name);
	if (cfd < 0)
		return errno == ENOENT ? 0 : txbox_fail_errno(c->err, -errno, "opening %s", name);
	/* below depth 0 of fs_empty_dir, the first directory removed whole is the sink */
	int q = remove_children(c, cfd, true, sink >= 0 ? depth + 1 : 0, sink >= 0 ? sink : cfd, NULL, NULL);
	if (q < 0)
		return q;
	int u = unlinkat(dfd, name, AT_REMOVEDIR);
	if (u < 0 && (errno == EACCES || errno == EPERM) && !*made_writable) {
		*made_writable = true;
		fchmod(dfd, 0700);
		u = unlinkat(dfd, name, AT_REMOVEDIR);
	}
	if (u < 0 && errno != ENOENT)
		return txbox_fail_errno(c->err, -errno, "removing directory %s", name);
	return 0;
}

/* Remove one entry of dfd (a whole tree when it is a directory). */
static int remove_entry(rm_ctx *c, int dfd, const char *name, unsigned char type, unsigned depth, int sink,
			bool *made_writable)
{
	if (type != DT_DIR) {
		int u = unlinkat(dfd, name, 0);
		if (u < 0 && (errno == EACCES || errno == EPERM) && !*made_writable) {
			*made_writable = true; /* entries of a read-only directory */
			fchmod(dfd, 0700);
			u = unlinkat(dfd, name, 0);
		}
		if (u == 0 || errno == ENOENT)
			return 0;
		if (errno != EISDIR)
			return txbox_fail_errno(c->err, -errno, "removing %s", name);
	}
	return remove_subdir(c, dfd, name, depth, sink, made_writable);
}

/* Remove the entries of the directory dfd (whole trees), except those keep
 * accepts. Reads with getdents64 on its own descriptor (never sharing the
 * caller's position), trusts d_type to skip a failing unlink of a
 * directory, and makes a directory writable only when an unlink in it is
 * refused. Passes repeat until one finds nothing left to remove, so an
 * entry a filesystem's readdir skipped while its directory was changing is
 * not left behind; a sink's passes also repeat while directories are
 * hoisted into it. */
static int remove_children(rm_ctx *c, int dfd, bool own, unsigned depth, int sink, fs_keep_fn keep, void *arg)
{
	if (depth > 4096) /* only where hoisting was refused */
		return txbox_fail(c->err, -ELOOP, "directory tree deeper than 4096 levels that cannot be moved");
	bool made_writable = false;
	/* read through our own descriptor: never move a caller's position */
	_cleanup_close_ int dup = own ? -1 : openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!own && dup < 0 && errno == EACCES) { /* no search permission: it is ours to change */
		made_writable = fchmod(dfd, 0700) == 0;
		dup = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	int rd = own ? dfd : dup;
	if (rd < 0)
		return txbox_fail_errno(c->err, -errno, "opening a directory to empty it");
	_cleanup_free_ char *buf = malloc(REMOVE_BUF);
	if (!buf)
		return txbox_fail(c->err, -ENOMEM, "out of memory");
	int r = 0;
	for (int pass = 0; pass < 8; pass++) {
		size_t removed = 0, batches = 0;
		unsigned long hoisted = c->hoisted;
		if (pass && lseek(rd, 0, SEEK_SET) < 0)
			return txbox_fail_errno(c->err, -errno, "rewinding a directory");
		for (;;) {
			long n = syscall(SYS_getdents64, rd, buf, REMOVE_BUF);
			if (n < 0 && errno == ENOENT)
				return r; /* removed meanwhile (another txbox emptying it): done */
			if (n < 0)
				return txbox_fail_errno(c->err, -errno, "reading a directory");
			if (n == 0)
				break;
			batches++;
			for (long off = 0; off < n;) {
				struct linux_dirent64 *de = (struct linux_dirent64 *)(buf + off);
				off += de->d_reclen;
				const char *name = de->d_name;
				if (!strcmp(name, ".") || !strcmp(name, "..") || (keep && keep(dfd, name, arg)))
					continue;
				removed++;
				int q = remove_entry(c, dfd, name, de->d_type, depth, sink, &made_writable);
				if (q < 0)
					r = q;
			}
		}
		if (dfd == sink && c->hoisted != hoisted && r == 0) {
			pass = 0; /* more was moved in: passes start over (each hoist is real progress) */
			continue;
		}
		/* read in one batch before anything was removed: nothing skipped */
		if (removed == 0 || r < 0 || batches <= 1)
			break;
	}
	return r;
}

int fs_remove_tree_at(int dirfd, const char *name, txbox_error *err)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return txbox_fail_errno(err, -errno, "removing %s", name);
	_cleanup_close_ int fd = open_dir_for_removal(dirfd, name);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, errno == EXDEV ? "%s is a mount point: not removed" : "opening %s",
					name);
	rm_ctx c = {.err = err};
	int r = remove_children(&c, fd, true, 0, fd, NULL, NULL);
	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return txbox_fail_errno(err, -errno, "removing directory %s", name);
	return 0;
}

int fs_empty_dir(int dirfd, fs_keep_fn keep, void *arg, txbox_error *err)
{
	_cleanup_close_ int up = openat(dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (up < 0 || !fs_same_mount(up, dirfd))
		return txbox_fail(err, -EXDEV, "a directory to empty is a mount point (or cannot be told from one): not "
					       "emptied");
	rm_ctx c = {.err = err};
	return remove_children(&c, dirfd, false, 0, -1, keep, arg);
}

int fs_empty_dir_at(int dirfd, const char *name, fs_keep_fn keep, void *arg, txbox_error *err)
{
	_cleanup_close_ int fd = open_dir_for_removal(dirfd, name);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, errno == EXDEV ? "%s is a mount point: not emptied" : "opening %s",
					name);
	rm_ctx c = {.err = err};
	return remove_children(&c, fd, true, 0, -1, keep, arg);
}

int fs_mkdir_p_at(int dirfd, const char *path, mode_t mode, txbox_error *err)
{
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return txbox_fail(err, -ENOMEM, "out of memory");
	int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return txbox_fail_errno(err, -errno, "dup");
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".") || !strcmp(c, ".."))
			continue;
		int made = mkdirat(cur, c, mode);
		if ((made == 0 && chmod_made(cur, c, mode) < 0) || (made < 0 && errno != EEXIST)) {
			int e = -errno;
			close(cur);
			return txbox_fail_errno(err, e, "creating directory %s", c);
		}
		int n = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = -errno;
		close(cur);
		if (n < 0)
			return txbox_fail_errno(err, e, "opening directory %s", c);
		cur = n;
	}
	return cur;
}

static int write_file(int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool replace,
		      txbox_error *err)
{
	/* A name of its own: concurrent writers of one file must not share (and
	 * truncate, rename or unlink) one temporary. */
	char tmp[300];
	_cleanup_close_ int fd = -1;
	for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
		unsigned int rnd = 0;
		if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		if (snprintf(tmp, sizeof tmp, ".%s.%08x.tmp", name, rnd) >= (int)sizeof tmp)
			return txbox_fail(err, -ENAMETOOLONG, "file name too long: %s", name);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			return txbox_fail_errno(err, -errno, "creating %s", tmp);
	}
	if (fd < 0)
		return txbox_fail(err, -EEXIST, "creating a temporary for %s: every name taken", name);
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			unlinkat(dirfd, tmp, 0);
			return txbox_fail_errno(err, e, "writing %s", tmp);
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0) {
		int e = -errno;
		unlinkat(dirfd, tmp, 0);
		return txbox_fail_errno(err, e, "fsync %s", tmp);
	}
	if (renameat2(dirfd, tmp, dirfd, name, replace ? 0 : RENAME_NOREPLACE) < 0) {
		int e = -errno;
		unlinkat(dirfd, tmp, 0);
		return !replace && e == -EEXIST ? -EEXIST : txbox_fail_errno(err, e, "renaming %s", tmp);
	}
	return 0;
}

int fs_write_file_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			 txbox_error *err)
{
	return write_file(dirfd, name, data, len, mode, true, err);
}

int fs_write_file_new(int dirfd, const char *name, const void *data, size_t len, mode_t mode, txbox_error *err)
{
	return write_file(dirfd, name, data, len, mode, false, err);
}

int fs_read_file_at(int dirfd, const char *name, size_t max, char **out, size_t *len, txbox_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening %s", name);
	_cleanup_free_ char *buf = malloc(max + 1);
	if (!buf)
		return txbox_fail(err, -ENOMEM, "out of memory");
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, max - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return txbox_fail_errno(err, -errno, "reading %s", name);
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == max) {
			char c;
			if (read(fd, &c, 1) > 0)
				return txbox_fail(err, -EFBIG, "%s is larger than %zu bytes", name, max);
			break;
		}
	}
	buf[got] = '\0';
	if (len)
		*len = got;
	*out = steal_ptr(buf);
	return 0;
}

bool fs_xattr_is_overlay_private(const char *name)
{
	return strncmp(name, "trusted.overlay.", 16) == 0 || strncmp(name, "user.overlay.", 13) == 0;
}

static int xattr_list(const char *path, bool follow, char **names, size_t *len)
{
	*names = NULL;
	*len = 0;
	for (int attempt = 0; attempt < 4; attempt++) { /* the list may grow between the two calls */
		ssize_t need = follow ? listxattr(path, NULL, 0) : llistxattr(path, NULL, 0);
		if (need < 0)
			return (errno == ENOTSUP || errno == EPERM) ? 0 : -errno;
		if (need == 0)
			return 0;
		char *buf = malloc((size_t)need);
		if (!buf)
			return -ENOMEM;
		ssize_t n = follow ? listxattr(path, buf, (size_t)need) : llistxattr(path, buf, (size_t)need);
		if (n >= 0) {
			*names = buf;
			*len = (size_t)n;
			return 0;
		}
		free(buf);
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

static ssize_t xattr_get(const char *path, bool follow, const char *name, char **val)
{
	*val = NULL;
	for (int attempt = 0; attempt < 4; attempt++) {
		ssize_t need = follow ? getxattr(path, name, NULL, 0) : lgetxattr(path, name, NULL, 0);
		if (need < 0)
			return -errno;
		char *buf = malloc((size_t)need + 1);
		if (!buf)
			return -ENOMEM;
		ssize_t n = follow ? getxattr(path, name, buf, (size_t)need) : lgetxattr(path, name, buf, (size_t)need);
		if (n >= 0) {
			*val = buf;
			return n;
		}
		free(buf);
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

int fs_xattr_list(const char *path, char **names, size_t *len)
{
	return xattr_list(path, false, names, len);
}

ssize_t fs_xattr_get(const char *path, const char *name, char **val)
{
	return xattr_get(path, false, name, val);
}

/* Through the fd's magic link, followed: the kernel resolves it to exactly
 * the fd's inode (a symlink itself for an O_PATH|O_NOFOLLOW fd), never to
 * whatever name it had. */
int fs_xattr_list_fd(int fd, char **names, size_t *len)
{
	char p[32];
	fs_fd_path(fd, p);
	return xattr_list(p, true, names, len);
}

ssize_t fs_xattr_get_fd(int fd, const char *name, char **val)
{
	char p[32];
	fs_fd_path(fd, p);
	return xattr_get(p, true, name, val);
}

int fs_open_entry(int dirfd, const char *path, int flags, mode_t mode)
{
	if (!path || path[0] == '/' || path[0] == '\0')
		return -EINVAL;
	flags |= O_NOFOLLOW | O_CLOEXEC;
	if (!(flags & O_PATH)) /* openat2 refuses any other flag with O_PATH */
		flags |= O_NONBLOCK | O_NOCTTY;
	if (probe_openat2()) {
		struct txbox_open_how how = {
			.flags = (uint64_t)flags,
			.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
		};
		/* EAGAIN: a rename raced the lookup, or (O_NONBLOCK) a lease
		 * holder has not given way yet — either way a bounded retry. */
		int fd = -1;
		for (int i = 0; i < 64 && fd < 0; i++)
			if ((fd = sys_openat2(dirfd, path, &how)) < 0 && errno != EAGAIN)
				break;
		return fd >= 0 ? fd : -errno;
	}
	int fd = open_walk(dirfd, path, flags, mode);
	if (fd >= 0 && !fs_same_mount(dirfd, fd)) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

