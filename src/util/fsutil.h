/* fsutil: directory-fd-relative file operations that never follow a
 * symlink or `..` out of the directory they start from. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Open path (relative, no leading '/') beneath dirfd without following any
 * symlink or crossing `..` above dirfd: openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it, an
 * O_NOFOLLOW component walk otherwise. O_CLOEXEC is always added. Returns
 * an fd or -errno. The last component is not followed either (use
 * O_PATH|O_NOFOLLOW semantics for symlinks). */
int fs_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* fs_open_beneath for an entry of a workspace or a layer, whose contents
 * the sandboxed command chose: it also never crosses a mount point
 * (RESOLVE_NO_XDEV: -EXDEV) and never waits — O_NONBLOCK|O_NOCTTY are added
 * unless O_PATH, so a FIFO opens at once and a file under another
 * process's lease fails with -EWOULDBLOCK. The caller checks the type with
 * fstat: a FIFO or a device may be what it got. */
int fs_open_entry(int dirfd, const char *path, int flags, mode_t mode);

/* Do the two fds (O_PATH too) lie on the same mount? Without mount ids
 * (Linux < 5.8): on the same device. False when unknown. */
bool fs_same_mount(int a, int b);

/* Remove name (file, symlink or whole tree) beneath dirfd, never following
 * symlinks. Missing is not an error. */
int fs_remove_tree_at(int dirfd, const char *name, txbox_error *err);

/* Remove every entry of the directory dirfd (whole trees, never following
 * symlinks) except those keep() accepts (keep may be NULL: all go). */
typedef bool (*fs_keep_fn)(int dirfd, const char *name, void *arg);
int fs_empty_dir(int dirfd, fs_keep_fn keep, void *arg, txbox_error *err);
/* The same for the directory name beneath dirfd (never a symlink). */
int fs_empty_dir_at(int dirfd, const char *name, fs_keep_fn keep, void *arg, txbox_error *err);

/* mkdir -p of a relative path beneath dirfd with mode; returns an O_PATH
 * directory fd (O_DIRECTORY) or -errno. */
int fs_mkdir_p_at(int dirfd, const char *path, mode_t mode, txbox_error *err);

/* mkdirat(dirfd, name, 0700) whatever the umask (0222 would make a
 * directory its owner cannot write in): 0, or -1 with errno (EEXIST too). */
int fs_mkdir_private(int dirfd, const char *name);

/* 1 when the directory dirfd has no entries, 0 when it has, or -errno. */
int fs_dir_is_empty(int dirfd);

/* Whether name beneath dirfd ("." for dirfd itself) is a --state-dir:
 * it holds the regular file mark (tx.h's TX_STATE_MARK), a tx/ directory
 * and a workspace record, each owned by the directory's owner, whoever
 * that is. A stray file of that name alone is not one, nor parts another
 * user planted in a shared directory (/tmp). A state dir inside its
 * workspace is known by its name (.txbox) instead. */
bool fs_is_state_dir(int dirfd, const char *name, const char *mark);

/* Write a whole small file atomically (tmp + fsync + rename) beneath dirfd. */
int fs_write_file_atomic(int dirfd, const char *name, const void *data, size_t len,
			 mode_t mode, txbox_error *err);
/* The same for a file that must not be replaced: -EEXIST (err untouched)
 * when name exists — a reader never finds a file that is being replaced. */
int fs_write_file_new(int dirfd, const char *name, const void *data, size_t len, mode_t mode, txbox_error *err);

/* Read a whole small file (at most max bytes) beneath dirfd; NUL-terminated. */
int fs_read_file_at(int dirfd, const char *name, size_t max, char **out, size_t *len,
		    txbox_error *err);

/* All xattr names of path (never following a final symlink), allocated,
 * NUL-separated; none (0, empty) where xattrs are not supported. Any size:
 * the contents are the sandboxed command's. 0 or -errno. */
int fs_xattr_list(const char *path, char **names, size_t *len);
/* The value of one xattr, allocated (any size up to the kernel's limit);
 * its length, or -errno (-ENODATA when absent). */
ssize_t fs_xattr_get(const char *path, const char *name, char **val);

/* The same for the inode fd (O_PATH too, a symlink's included) refers to. */
int fs_xattr_list_fd(int fd, char **names, size_t *len);
ssize_t fs_xattr_get_fd(int fd, const char *name, char **val);

/* True when name is an overlay-private xattr (trusted.overlay.* / user.overlay.*). */
bool fs_xattr_is_overlay_private(const char *name);

/* Path of an fd as "/proc/self/fd/N" (for *xattr and utimensat on O_PATH fds). */
void fs_fd_path(int fd, char buf[static 32]);
