/* census: the names, inside the workspace, of a few inodes (see census.c). */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct census_inode {
	ino_t ino;
	char **names; /* workspace-relative paths of its names found */
	size_t nnames;
} census_inode;

/* A file handle looked for (an overlay origin): the first workspace name
 * whose handle it is. */
typedef struct census_handle {
	int type;
	unsigned bytes;
	unsigned char data[128];
	char *name;     /* NULL: not found */
	struct stat st; /* of name */
} census_handle;

typedef struct census {
	census_inode *inodes; /* sorted by ino, unique */
	size_t n;
	census_handle *handles;
	size_t nh;
	/* Every directory of the workspace was read: a name not found is not in
	 * the workspace. When false, no count can prove anything. */
	bool complete;
} census;

/* Add an inode to look for (before census_run). */
int census_want(census *c, ino_t ino, txbox_error *err);
/* Add a file handle to look for among hard-linked files (st_nlink > 1);
 * *idx is its index in handles. */
int census_want_handle(census *c, int type, const unsigned char *data, unsigned bytes, size_t *idx,
		       txbox_error *err);
/* One walk of the workspace (not directories named skip_name — txbox's
 * state dir name — at any depth, not state dirs, not other mounts),
 * recording every name of the wanted inodes. -ETIMEDOUT when
 * deadline_ns (CLOCK_MONOTONIC, 0: none) passes. */
int census_run(census *c, int ws_fd, const char *skip_name, const char *state_mark, uint64_t deadline_ns,
	       txbox_error *err);
const census_inode *census_find(const census *c, ino_t ino);
/* Every one of nlink names of ino is inside the workspace (proven by the walk). */
bool census_all_inside(const census *c, ino_t ino, nlink_t nlink);
void census_free(census *c);
