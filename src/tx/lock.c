/* tx/lock: write locks on files no sandbox can open (see lock.h).
 *
 * Taking a lock file: open it write-only (created sealed when asked), try
 * a write lock (F_OFD_SETLK, whole file), then check that the name still
 * leads to that file — a transaction's directory is emptied and removed
 * while its owner holds the lock, so a taker that opened the file just
 * before may lock an unlinked one — and seal a file an older txbox made
 * (mode and group as lock.h requires). */
#include "tx/lock.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum lock_state { LOCK_TAKEN, LOCK_HELD, LOCK_READER, LOCK_ERROR } lock_state;

/* Try the write lock on fd; say who is in the way when refused. */
static lock_state try_write_lock(int fd)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return LOCK_TAKEN;
		if (errno != EAGAIN && errno != EACCES && errno != EINTR)
			return LOCK_ERROR;
		struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(fd, F_OFD_GETLK, &q) < 0)
			return LOCK_ERROR;
		if (q.l_type == F_WRLCK)
			return LOCK_HELD;
		if (q.l_type == F_RDLCK)
			return LOCK_READER;
		/* released in between: try again */
	}
	return LOCK_HELD;
}

static bool still_named(int fd, int dirfd, const char *name)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && a.st_nlink > 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Root inside a user namespace that does not map TXLOCK_GID (a container
 * with 65536 ids) cannot give it; there a root-mode command's namespace
 * cannot be made either (sandbox.c maps every id but that one), so the
 * file keeps root's group. */
static int give_lock_group(int fd)
{
	return fchown(fd, (uid_t)-1, TXLOCK_GID) == 0 || errno == EINVAL ? 0 : -1;
}

/* Mode 0200 and, as root, group TXLOCK_GID (lock.h says why). */
static int seal(int fd, const char *name, txbox_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "the lock file %s", name);
	if ((st.st_mode & 07777) != 0200 && fchmod(fd, 0200) < 0)
		return txbox_fail_errno(err, -errno, "making the lock file %s write-only", name);
	if (geteuid() == 0 && st.st_gid != TXLOCK_GID && give_lock_group(fd) < 0)
		return txbox_fail_errno(err, -errno, "giving the lock file %s txbox's lock group", name);
	return 0;
}

#define LOCK_OPEN_FLAGS (O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* A new lock file that is sealed before it has a name (a reader watching
 * the directory could otherwise open it in between): as root an unnamed
 * file given its group, then linked; otherwise 0200 from its creation.
 * -EEXIST when the name was taken meanwhile. */
static int create_lock_file(int dirfd, const char *name, txbox_error *err)
{
	if (geteuid() == 0) {
		_cleanup_close_ int t = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0200);
		if (t >= 0) {
			if (give_lock_group(t) < 0)
				return txbox_fail_errno(err, -errno, "giving the lock file %s txbox's lock group", name);
			/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH in the initial
			 * user namespace; through /proc it needs nothing */
			char proc[40];
			snprintf(proc, sizeof proc, "/proc/self/fd/%d", t);
			if (linkat(t, "", dirfd, name, AT_EMPTY_PATH) == 0 ||
			    (errno != EEXIST && linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0))
				return steal_fd(t);
			if (errno == EEXIST)
				return -EEXIST;
		} else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return txbox_fail_errno(err, -errno, "creating the lock file %s", name);
		/* no O_TMPFILE, or no way to link one: created, then sealed (for
		 * a moment readable by root) */
	}
	int fd = openat(dirfd, name, LOCK_OPEN_FLAGS | O_CREAT | O_EXCL, 0200);
	if (fd < 0)
		return errno == EEXIST ? -EEXIST : txbox_fail_errno(err, -errno, "creating the lock file %s", name);
	return fd;
}

static int open_lock_file(int dirfd, const char *name, bool create, txbox_error *err)
{
	int fd = -1;
	for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
		fd = openat(dirfd, name, LOCK_OPEN_FLAGS);
		if (fd < 0 && (errno == ENXIO || errno == EISDIR)) /* a FIFO nobody reads, a directory */
			return txbox_fail(err, -EINVAL, "the lock file %s is not a regular file", name);
		if (fd < 0 && errno != ENOENT)
			return txbox_fail_errno(err, -errno, "opening the lock file %s", name);
		if (fd < 0 && !create)
			return -ENOENT;
		if (fd < 0 && (fd = create_lock_file(dirfd, name, err)) < 0 && fd != -EEXIST)
			return fd;
	}
	if (fd < 0)
		return txbox_fail(err, -EAGAIN, "the lock file %s kept appearing and vanishing", name);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return txbox_fail(err, -EINVAL, "the lock file %s is not a regular file", name);
	}
	return fd;
}

int txlock_try(int dirfd, const char *name, bool create, txbox_error *err)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		_cleanup_close_ int fd = open_lock_file(dirfd, name, create, err);
		if (fd < 0)
			return fd;
		switch (try_write_lock(fd)) {
		case LOCK_TAKEN:
			if (!still_named(fd, dirfd, name))
				continue; /* removed or replaced meanwhile */
			if (seal(fd, name, err) < 0)
				return err->code;
			return steal_fd(fd);
		case LOCK_HELD:
			return txbox_fail(err, -EBUSY,
					  "the lock file %s is held by another txbox process (or by another program "
					  "holding a write lock on it)",
					  name);
		case LOCK_READER:
			return txbox_fail(err, -EBUSY,
					  "the lock file %s is read-locked by a process that is not txbox (one that "
					  "could open it for reading: not sandboxed by txbox, or sandboxed as root "
					  "while the file belongs to another user)",
					  name);
		case LOCK_ERROR:
			return txbox_fail_errno(err, -errno, "locking %s", name);
		}
	}
	return txbox_fail(err, -EAGAIN, "the lock file %s kept changing while being taken", name);
}
