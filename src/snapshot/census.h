/* census: the names, inside the workspace, of a few inodes (see census.c). */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct census_inode {
	ino_t ino;
	char **names; /* workspace-relative paths of its names found */
	size_t nnames;
} census_inode;

typedef struct census {
	census_inode *inodes; /* sorted by ino, unique */
	size_t n;
	/* Every directory of the workspace was read: a name not found is not in
	 * the workspace. When false, no count can prove anything. */
	bool complete;
} census;

/* Add an inode to look for (before census_run). */
int census_want(census *c, ino_t ino, txbox_error *err);
/* One walk of the workspace (not its state dir skip_root_name, not other
 * mounts), recording every name of the wanted inodes. -ETIMEDOUT when
 * deadline_ns (CLOCK_MONOTONIC, 0: none) passes. */
int census_run(census *c, int ws_fd, const char *skip_root_name, uint64_t deadline_ns, txbox_error *err);
const census_inode *census_find(const census *c, ino_t ino);
/* Every one of nlink names of ino is inside the workspace (proven by the walk). */
bool census_all_inside(const census *c, ino_t ino, nlink_t nlink);
void census_free(census *c);
