/* tx/lock: write locks that a reader cannot block (see lock.h).
 *
 * Taking a lock file:
 *   1. open it read-write and try a write lock (F_OFD_SETLK, whole file);
 *      once held, check the name still leads to that file (a swap, step 3,
 *      may have replaced it meanwhile) — then it is ours;
 *   2. refused: ask which lock is in the way (F_OFD_GETLK). A write lock
 *      is a live txbox: busy. A read lock is a reader's, never txbox's;
 *   3. then swap the file for a new one that is write-locked before it gets
 *      its name: create `.claim-<random>`, lock it, exchange it with the
 *      lock file (renameat2 RENAME_EXCHANGE: atomic, so the name always
 *      leads to a file), and look at the file it displaced: if a txbox has
 *      meanwhile write-locked that one (it took it in the instant between
 *      the reader's release and the swap), exchange back and report busy;
 *      otherwise the new file is the lock, and we hold it.
 * While a swap is under way the name leads to the swapper's own locked
 * file, so nobody else takes the lock, and whoever had already locked the
 * displaced file either sees at step 1 that the name moved (and retries)
 * or had seen it before the swap (and the swapper gives it back).
 * A swapper killed between its two exchanges leaves the name on its own,
 * now unlocked, file: the lock is then free for the next taker while the
 * displaced holder still runs. That needs a reader holding the lock file,
 * a concurrent take and a SIGKILL within microseconds; ARCHITECTURE lists it. */
#include "tx/lock.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum lock_state { LOCK_TAKEN, LOCK_LIVE, LOCK_FOREIGN, LOCK_ERROR } lock_state;

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
			return LOCK_LIVE;
		if (q.l_type == F_RDLCK)
			return LOCK_FOREIGN;
		/* released in between: try again */
	}
	return LOCK_LIVE;
}

static bool same_file(int fd, int dirfd, const char *name)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int open_lock_file(int dirfd, const char *name, int flags, txbox_error *err)
{
	int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags, 0600);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : txbox_fail_errno(err, -errno, "opening the lock file %s", name);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return txbox_fail(err, -EINVAL, "the lock file %s is not a regular file", name);
	}
	return fd;
}

/* A new lock file under a name nobody else uses, write-locked; -EAGAIN
 * when a reader locked it first (it has to guess the name and be quick). */
static int new_claim(int dirfd, char claim[static 32], txbox_error *err)
{
	unsigned int rnd;
	if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
		return txbox_fail_errno(err, -errno, "getrandom");
	snprintf(claim, 32, ".claim-%08x", rnd);
	int fd = open_lock_file(dirfd, claim, O_CREAT | O_EXCL, err);
	if (fd < 0)
		return fd == -ENOENT ? txbox_fail(err, -ENOENT, "creating the lock file %s", claim) : fd;
	if (try_write_lock(fd) == LOCK_TAKEN)
		return fd;
	close(fd);
	unlinkat(dirfd, claim, 0);
	return -EAGAIN;
}

/* Step 3 of the header: replace name, which a reader holds, by a file we
 * hold. Returns its fd, -EBUSY, -EAGAIN (start again) or -errno. */
static int swap_out_reader(int dirfd, const char *name, txbox_error *err)
{
	char claim[32];
	_cleanup_close_ int fd = new_claim(dirfd, claim, err);
	if (fd < 0)
		return fd;
	if (renameat2(dirfd, name, dirfd, claim, RENAME_EXCHANGE) < 0) {
		int e = errno;
		if (e == ENOENT && renameat2(dirfd, claim, dirfd, name, RENAME_NOREPLACE) == 0)
			return same_file(fd, dirfd, name) ? steal_fd(fd) : -EAGAIN;
		unlinkat(dirfd, claim, 0);
		if (e == ENOENT || e == EEXIST)
			return -EAGAIN;
		return txbox_fail_errno(err, -e,
					"the lock file %s is held by a reader that is not txbox, and this "
					"filesystem cannot swap it for a new one",
					name);
	}
	_cleanup_close_ int old = open_lock_file(dirfd, claim, 0, NULL);
	if (old >= 0 && try_write_lock(old) == LOCK_LIVE) {
		/* a txbox took the displaced file before the swap: give it back */
		if (renameat2(dirfd, name, dirfd, claim, RENAME_EXCHANGE) == 0)
			unlinkat(dirfd, claim, 0);
		return -EBUSY;
	}
	unlinkat(dirfd, claim, 0);
	return steal_fd(fd);
}

int txlock_try(int dirfd, const char *name, bool create, txbox_error *err)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		_cleanup_close_ int fd = open_lock_file(dirfd, name, create ? O_CREAT : 0, err);
		if (fd < 0)
			return fd;
		int r;
		switch (try_write_lock(fd)) {
		case LOCK_TAKEN:
			if (same_file(fd, dirfd, name))
				return steal_fd(fd);
			continue; /* swapped meanwhile */
		case LOCK_LIVE:
			return -EBUSY;
		case LOCK_FOREIGN:
			r = swap_out_reader(dirfd, name, err);
			if (r != -EAGAIN)
				return r;
			continue;
		case LOCK_ERROR:
			return txbox_fail_errno(err, -errno, "locking %s", name);
		}
	}
	return txbox_fail(err, -EAGAIN, "the lock file %s kept changing while being taken", name);
}
