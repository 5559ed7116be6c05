#include "tx/lockdir.h"

#include "util/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void lock_name(dev_t dev, ino_t ino, char buf[static 64])
{
	snprintf(buf, 64, "%llu.%llu.lock", (unsigned long long)dev, (unsigned long long)ino);
}

/* Whether fd is still the file called name: a lock file is unlinked by
 * its holder (lockdir_forget, pruning), and a lock taken on the unlinked
 * file would exclude no one. */
static bool still_named(int lockdir_fd, const char *name, int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && fstatat(lockdir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Lock files of directories long gone pile up (one per workspace and per
 * transaction directory ever used): once the directory holds many,
 * those unchanged for a day that nobody holds are removed. */
#define PRUNE_DIR_SIZE (256u << 10)
#define PRUNE_AGE_S (24 * 3600)

static void prune(int dirfd)
{
	int dupfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
	if (!d) {
		if (dupfd >= 0)
			close(dupfd);
		return;
	}
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || now - st.st_mtime < PRUNE_AGE_S)
			continue;
		_cleanup_close_ int fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && still_named(dirfd, de->d_name, fd))
			unlinkat(dirfd, de->d_name, 0);
	}
}

int lockdir_open(uid_t owner, txbox_error *err)
{
	char path[64];
	if (owner == 0)
		snprintf(path, sizeof path, "/run/txbox");
	else
		snprintf(path, sizeof path, "/tmp/txbox-%u", (unsigned)owner);
	if (mkdir(path, 0700) == 0 && owner != geteuid() && chown(path, owner, (gid_t)-1) < 0) {
		int e = -errno;
		rmdir(path);
		return txbox_fail_errno(err, e, "giving the lock dir %s to uid %u", path, (unsigned)owner);
	}
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening the lock dir %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "stat of the lock dir %s", path);
	if (st.st_uid != owner || (st.st_mode & 077))
		return txbox_fail(err, -EPERM,
				  "refusing the lock dir %s: it is owned by uid %u with mode %o, not by uid %u "
				  "closed to others (remove it; txbox recreates it)",
				  path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)owner);
	if (st.st_size > PRUNE_DIR_SIZE)
		prune(fd);
	return steal_fd(fd);
}

int lockdir_take(int lockdir_fd, int target_fd, txbox_error *err)
{
	struct stat st;
	char name[64];
	if (fstat(target_fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "stat of a directory to lock");
	lock_name(st.st_dev, st.st_ino, name);
	for (int tries = 0; tries < 100; tries++) {
		_cleanup_close_ int fd = openat(lockdir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return txbox_fail_errno(err, -errno, "opening the lock file %s", name);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0)
			return errno == EWOULDBLOCK ? -EWOULDBLOCK : txbox_fail_errno(err, -errno, "locking %s", name);
		if (still_named(lockdir_fd, name, fd))
			return steal_fd(fd);
	}
	return txbox_fail(err, -EAGAIN, "the lock file %s keeps being replaced", name);
}

void lockdir_forget(int lockdir_fd, dev_t dev, ino_t ino)
{
	char name[64];
	lock_name(dev, ino, name);
	unlinkat(lockdir_fd, name, 0);
}
