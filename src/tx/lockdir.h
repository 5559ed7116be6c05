#pragma once
/* tx/lockdir: where txbox's locks live. A sandbox sees other workspaces'
 * state dirs read-only, and flock needs no write access: a lock taken on
 * a state dir's own files could be held by any sandboxed command, making
 * another workspace's txbox wait, or its recovery take a crashed
 * transaction for a live one. The locks are taken instead on files in a
 * directory no sandbox sees (the view replaces /run and /tmp), named by
 * the device and inode of what they lock:
 *   /run/txbox                for state dirs owned by root,
 *   /tmp/txbox-UID            for those owned by UID,
 * so that every txbox process (root acting in a user's workspace too)
 * agrees on one file per locked directory. */
#include "util/error.h"

#include <stdbool.h>
#include <sys/types.h>

/* Open (creating) the lock dir for state dirs owned by owner. The dir
 * must be owned by owner, a real directory, closed to group and others;
 * anything else is refused with a message naming it. */
int lockdir_open(uid_t owner, txbox_error *err);

/* Lock the directory target_fd stands for: an fd of its lock file,
 * flocked exclusively; -EWOULDBLOCK when someone holds it. */
int lockdir_take(int lockdir_fd, int target_fd, txbox_error *err);

/* The lock file of a directory that is gone (its holder calls this). */
void lockdir_forget(int lockdir_fd, dev_t dev, ino_t ino);
