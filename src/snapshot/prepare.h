/* prepare: make upper-layer entries publishable (see prepare.c). */
#pragma once
#include <stdint.h>

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/stat.h>

/* "/proc/self/fd/<dirfd>/<name>", for l*xattr calls that must not follow name. */
void prepare_xattr_path(int dirfd, const char *name, char *buf, size_t len);
/* Overlay metadata is read only in the namespace the mount used
 * (userxattr: user.overlay.*, else trusted.overlay.*). */
/* What name is when it is one of txbox's own, which no commit creates,
 * changes or removes at any depth: the name of a state dir inside a
 * workspace (reserved_name), or the mark of a --state-dir (state_mark).
 * NULL otherwise. */
const char *prepare_reserved(const char *name, const char *reserved_name, const char *state_mark);
bool prepare_is_whiteout(int dirfd, const char *name, const struct stat *st, bool userxattr);
bool prepare_is_opaque(int dirfd, const char *name, bool userxattr);
/* The overlay xattr <ns>.overlay.<what> of dirfd/name (lgetxattr's result). */
ssize_t prepare_ovl_getxattr(int dirfd, const char *name, const char *what, bool userxattr, void *buf, size_t len);
typedef struct prepare_opts {
	bool strip_setuid;  /* drop setuid/setgid bits and security.capability */
	bool userxattr;     /* the overlay's namespace (snapshot_xattr_private) */
	const char *reserved_name; /* refused at any depth (plan_opts.reserved_name) */
	const char *state_mark;    /* refused at any depth too: a copy of a state dir (plan_opts.state_mark) */
	uint64_t deadline_ns;      /* 0: none; past it every entry fails with -ETIMEDOUT */
} prepare_opts;

/* One entry: refuse devices/sockets, strip overlay xattrs (and setuid). */
int prepare_entry(int dirfd, const char *name, const struct stat *st, const char *relpath,
		  const prepare_opts *po, txbox_error *err);
/* The entry and, for a directory, everything beneath it. */
int prepare_tree(int dirfd, const char *name, const struct stat *st, const char *relpath,
		 const prepare_opts *po, txbox_error *err);
