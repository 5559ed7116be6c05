/* tx/lock: the locks of a state dir, which no sandboxed command can hold.
 *
 * A command sees every other workspace's state dir read-only, and any lock
 * it could take on a lock file (flock, or an fcntl read lock) would make
 * that workspace's txbox wait, or take a crashed transaction for a live
 * one. So a lock file is one nobody but txbox can open:
 *   - txbox holds only fcntl *write* locks (open file description locks,
 *     whole file), which need a descriptor open for writing, and a flock
 *     never conflicts with them; a sandbox sees the file on a read-only
 *     mount, so it cannot open it for writing;
 *   - the file's mode is 0200 (write-only for its owner), so opening it
 *     for reading needs CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH: a rootless
 *     command has no capabilities at all, and as root the file's group is
 *     TXLOCK_GID, the one gid the root-mode command's user namespace leaves
 *     unmapped — capabilities in a user namespace apply only to inodes
 *     whose owner and group are both mapped into it.
 * A lock file an older txbox made (mode 0600) is brought to that state by
 * the first txbox that takes it. A read lock found in the way (a process
 * that is not sandboxed, or a root-mode command reading another user's
 * state dir: ARCHITECTURE, Known limits) is waited for like a holder. */
#pragma once

#include "sandbox/sandbox.h"
#include "util/error.h"

#include <stdbool.h>
#include <sys/types.h>

/* The group of root's lock files: unmapped in the user namespace of a
 * root-mode command. */
#define TXLOCK_GID ((gid_t)SANDBOX_UNMAPPED_GID)

/* Take the lock file name beneath dirfd (created when create is set and it
 * is missing). Returns an fd holding the write lock, -EBUSY when it is
 * held (err says by whom: a txbox, or a reader that is not txbox),
 * -ENOENT when it is missing and not to be created, or another -errno
 * (err says which). Never waits. */
int txlock_try(int dirfd, const char *name, bool create, txbox_error *err);
