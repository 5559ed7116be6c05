/* snapshot/: the transaction's overlay layer, the commit plan computed from
 * it, and the journaled, crash-safe application of that plan.
 *
 *   layer.c    create a layer (upper + work dirs) under the transaction dir
 *   plan.c     walk the upper layer against the workspace → list of ops
 *   prepare.c  make the upper tree publishable (strip overlay xattrs,
 *              setuid bits, whiteouts inside new dirs; refuse devices)
 *   journal.c  the on-disk record of a plan, for recovery and undo
 *   commit.c   apply a plan with renames (RENAME_EXCHANGE / NOREPLACE),
 *              and reverse an applied or half-applied one */
#pragma once

#include "txbox.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct layer {
	int upper_fd; /* O_RDONLY|O_DIRECTORY */
	int work_fd;
	bool state_whiteout; /* upper holds a whiteout hiding the state dir */
} layer;

/* Create layers/<index>/{upper,work} in txfd. The upper root takes the
 * workspace root's mode, owner and times (the merged root shows them). When
 * hide_name is set, try to put a whiteout for it in the upper root. */
int layer_create(int txfd, unsigned index, int ws_fd, const char *hide_name, layer *out, txbox_error *err);
void layer_close(layer *l);


typedef enum plan_kind {
	PLAN_PUT = 0,   /* move the upper entry to the workspace, displacing what is there */
	PLAN_DELETE,    /* move the workspace entry aside */
	PLAN_META,      /* apply mode/owner/times/xattrs of the upper entry in place */
	PLAN_INPLACE,   /* rewrite the content of an existing hard-linked file in place (the
			 * original content is saved in displaced/<op> first), then META */
	PLAN_LINK,      /* hard-link the existing file at link_target to path (displacing what is there) */
} plan_kind;

typedef struct plan_op {
	plan_kind kind;
	char *path;            /* relative to the workspace root */
	char *link_target;     /* PLAN_LINK: workspace path of the file to link to, or NULL and… */
	int link_fd;           /* …an O_PATH fd of it (a hard-link group member renamed in the tx) */
	ino_t link_upper_ino;  /* PLAN_LINK by fd: the layer inode it stands for */
	bool existed;          /* the workspace had an entry at path */
	bool report;           /* appears in the change list */
	txbox_change_kind change;
	ino_t new_ino, old_ino;
	struct stat new_st, old_st;
} plan_op;

typedef struct plan {
	plan_op *ops;
	size_t n, cap;
	/* Names whose content or metadata changed without an op of their own:
	 * the other names of a hard-link group changed in place. Reported only. */
	char **also_changed;
	txbox_change_kind *also_kind;
	size_t n_also;
} plan;

typedef struct plan_opts {
	const char *skip_root_name; /* the state dir name at the root, never committed */
	bool strip_setuid;          /* drop setuid/setgid bits and security.capability */
	/* The upper root's owner and mode when the layer was made (layer.c's
	 * layers/<n>/root); a value still equal to it is no change. NULL: none. */
	const struct stat *root_initial;
} plan_opts;

/* Compute the plan and prepare the upper tree for publication. Nothing in
 * the workspace is touched. A device node or socket makes it fail with
 * -EPERM and a message naming the path. */
int plan_build(int ws_fd, int upper_fd, const plan_opts *o, plan *out, txbox_error *err);
void plan_free(plan *p);

/* Fill a change list from the plan (paths copied). */
int plan_changes(const plan *p, txbox_change **out, size_t *n, txbox_error *err);

/* ---- journal ----------------------------------------------------------- */

int journal_write(int txfd, const plan *p, txbox_error *err);
int journal_read(int txfd, plan *out, txbox_error *err);

/* ---- commit ------------------------------------------------------------ */

/* Apply the plan: ws_fd the workspace, upper_fd the layer's upper dir,
 * displaced_fd a directory on the same filesystem for deleted originals.
 * On failure, what was applied is reversed before returning. */
int commit_apply(int ws_fd, int upper_fd, int displaced_fd, const plan *p, txbox_error *err);

/* Reverse ops [0, n) of a plan that may have been applied partially
 * (crash recovery) or wholly (undo). Idempotent. */
int commit_reverse(int ws_fd, int upper_fd, int displaced_fd, const plan *p, size_t n, txbox_error *err);

/* Open the parent directory of rel beneath root (O_PATH|O_DIRECTORY), and
 * point *name at its last component. */
int snapshot_open_parent(int root_fd, const char *rel, const char **name, txbox_error *err);
