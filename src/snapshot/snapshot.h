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
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct layer {
	int upper_fd; /* O_RDONLY|O_DIRECTORY */
	int work_fd;
	bool state_whiteout; /* upper holds a whiteout hiding the state dir */
} layer;

/* Create layers/<index>/{upper,work} in txfd. The upper root takes the
 * workspace root's mode, owner and times (the merged root shows them). When
 * hide_name is set, try to put a whiteout for it in the upper root.
 * userxattr: the overlay on it is mounted with userxattr (its private
 * xattrs are user.overlay.*, else trusted.overlay.*); recorded in
 * layers/<index>/root for the planner (layer_read_root). */
int layer_create(int txfd, unsigned index, int ws_fd, const char *hide_name, bool userxattr, layer *out,
		 txbox_error *err);
void layer_close(layer *l);

/* What layer_create recorded: the upper root's initial owner and mode, and
 * the overlay's xattr namespace. */
typedef struct layer_root {
	struct stat initial; /* st_uid, st_gid, st_mode (permission bits) */
	bool userxattr;
} layer_root;
int layer_read_root(int txfd, unsigned index, layer_root *out, txbox_error *err);


typedef enum plan_kind {
	PLAN_PUT = 0,   /* move the upper entry to the workspace, displacing what is there */
	PLAN_DELETE,    /* move the workspace entry aside */
	PLAN_META,      /* apply mode/owner/times/xattrs of the upper entry in place */
	/* 3 is no kind: content is never rewritten in place (a changed
	 * hard-link group member is a new inode published under each name),
	 * and a journal naming 3 is refused */
	PLAN_LINK = 4,  /* hard-link the existing file at link_target to path (displacing what is there) */
} plan_kind;
#define PLAN_KIND_MAX PLAN_LINK

typedef struct plan_op {
	plan_kind kind;
	char *path;            /* relative to the workspace root */
	char *link_target;     /* PLAN_LINK: workspace path of the file to link to, or NULL and… */
	int link_fd;           /* …an fd of it (a hard-link group member renamed in the tx, found in
				* the workspace by the census) */
	ino_t link_upper_ino;  /* PLAN_LINK by fd: the layer inode it stands for */
	bool existed;          /* the workspace had an entry at path */
	bool report;           /* appears in the change list */
	bool owner_mode;       /* PLAN_META changes owner or mode (the original is saved first) */
	const char *note;      /* static: said with the change in the result, or NULL */
	txbox_change_kind change;
	ino_t new_ino, old_ino;
	struct stat new_st, old_st;
} plan_op;

typedef struct plan {
	plan_op *ops;
	size_t n, cap;
	bool userxattr;        /* the overlay's private xattrs are user.overlay.* */
	/* Names whose content or metadata changed without an op of their own:
	 * the other names of a hard-link group changed in place. Reported only. */
	char **also_changed;
	txbox_change_kind *also_kind;
	size_t n_also;
} plan;

typedef struct plan_opts {
	const char *skip_root_name; /* the state dir name at the root, never committed */
	/* A name no command may create or change at any depth (txbox's state
	 * dir name): a committed `sub/.txbox` would be read back as a state dir
	 * by a later txbox run from `sub`, or from a --state-dir workspace. */
	const char *reserved_name;
	/* The file every state dir outside a workspace holds (TX_STATE_MARK):
	 * a directory holding it is another workspace's state dir, which a
	 * commit never changes (its workspace's commands see it writable). */
	const char *state_mark;
	bool strip_setuid;          /* drop setuid/setgid bits and security.capability */
	/* The upper root's owner and mode when the layer was made (layer.c's
	 * layers/<n>/root); a value still equal to it is no change. NULL: none. */
	const struct stat *root_initial;
	/* The overlay was mounted with userxattr: only user.overlay.* is its
	 * metadata; otherwise only trusted.overlay.* is, and user.overlay.* is
	 * the command's data like any other xattr. */
	bool userxattr;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC (clock_now_ns); 0: none */
	/* Only look: the layer is left as it is (nothing prepared, nothing
	 * refused) — the effect check's view of a transaction that may stay
	 * held. The plan already says what preparing will make of the layer
	 * (setuid bits and security.capability stripped), so when the check
	 * allows it, plan_prepare makes it committable as it is. */
	bool inspect;
} plan_opts;

/* Compute the plan and prepare the upper tree for publication. Nothing in
 * the workspace is touched. A device node or socket makes it fail with
 * -EPERM and a message naming the path; the deadline passing, with
 * -ETIMEDOUT. Its cost is bounded by what the command wrote (holes are
 * not read) plus, when a changed file has other hard links, one walk of
 * the workspace. */
int plan_build(int ws_fd, int upper_fd, const plan_opts *o, plan *out, txbox_error *err);
void plan_free(plan *p);

/* Prepare the layer entries an inspected plan publishes (what plan_build
 * does when not inspecting), without walking the layer or the workspace
 * again: the plan is the one that was judged. Refuses (-EPERM) what
 * plan_build would; -ESTALE when an entry is not what was planned. */
int plan_prepare(int upper_fd, const plan_opts *o, const plan *p, txbox_error *err);

/* Is the xattr name overlay metadata of a layer mounted with (or without) userxattr? */
bool snapshot_xattr_private(const char *name, bool userxattr);
/* POSIX ACLs (system.posix_acl_access, system.posix_acl_default): they
 * carry mode bits, so of the workspace root they are never published,
 * like its owner and mode. */
bool snapshot_xattr_is_acl(const char *name);

/* Fill a change list from the plan (paths copied). */
int plan_changes(const plan *p, txbox_change **out, size_t *n, txbox_error *err);

/* ---- journal ----------------------------------------------------------- */

/* What a journal may hold; journal_write refuses a plan beyond these
 * (before anything is applied), journal_read accepts all within them. */
#define JOURNAL_MAX (512u * 1024 * 1024)
#define JOURNAL_OPS_MAX (1u << 24)
#define JOURNAL_PATH_MAX 4096
int journal_write(int txfd, const plan *p, txbox_error *err);
int journal_read(int txfd, plan *out, txbox_error *err);
/* Parse a journal's bytes (hostile input: validated field by field). */
int journal_parse(const char *buf, size_t len, plan *out, txbox_error *err);

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
