/* prepare: make upper-layer entries publishable (see prepare.c). */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* "/proc/self/fd/<dirfd>/<name>", for l*xattr calls that must not follow name. */
void prepare_xattr_path(int dirfd, const char *name, char *buf, size_t len);
bool prepare_is_whiteout(int dirfd, const char *name, const struct stat *st);
bool prepare_is_opaque(int dirfd, const char *name);
/* One entry: refuse devices/sockets, strip overlay xattrs (and setuid). */
int prepare_entry(int dirfd, const char *name, const struct stat *st, const char *relpath, bool strip_setuid,
		  txbox_error *err);
/* The entry and, for a directory, everything beneath it. */
int prepare_tree(int dirfd, const char *name, const struct stat *st, const char *relpath, bool strip_setuid,
		 txbox_error *err);
