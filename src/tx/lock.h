/* tx/lock: the locks of a state dir, which no sandboxed command can hold.
 *
 * A command sees every other workspace's state dir read-only, and a file
 * opened read-only can be flock()ed or read-locked; either would make that
 * workspace's txbox wait, or take a crashed transaction for a live one.
 * So txbox holds only *write* locks (open file description locks), which
 * need a file opened for writing: a lock is live when, and only when,
 * a write lock is held on it. A read lock found on a lock file is never
 * txbox's; that file is swapped for a new one, write-locked before it has
 * a name (lock.c explains why no live lock is lost on the way). */
#pragma once

#include "util/error.h"

#include <stdbool.h>

/* Take the lock file name beneath dirfd (created when create is set and it
 * is missing). Returns an fd holding the write lock, -EBUSY when a live
 * txbox holds it, -ENOENT when it is missing and not to be created, or
 * another -errno (err says which). Never waits. */
int txlock_try(int dirfd, const char *name, bool create, txbox_error *err);
