/* tx/: transactions — objects with an id and on-disk state under the
 * workspace's state dir (.txbox/):
 *
 *   .txbox/.gitignore          "*"
 *   .txbox/lock                write-locked (tx/lock.h): serialises commits
 *                              on the workspace
 *   .txbox/state-dir           (state elsewhere: the marker's only record)
 *                              where the state lives
 *   STATE/workspace            (a --state-dir) the one workspace it serves
 *   .txbox/tx/<id>/            one transaction
 *       lock                   write-locked (tx/lock.h) while a txbox
 *                              process owns it
 *   .txbox/tx/.new-<id>/       one being created (locked, then renamed)
 *   .txbox/tx/.spare-<id>/     an emptied one kept for reuse (tx_recycle): displaced/ and
 *                              stale/ (its emptied layer, deleted by the next user)
 *   .txbox/tx/.trash-<id>/     one being deleted
 *       state                  running | held | applying | committed
 *       workspace              "<dev> <ino> <path>" of the workspace it acts on
 *       layers/<n>/{upper,work}  the overlay layers (a stack; n = savepoint)
 *       journal                the commit plan (journal.c)
 *       displaced/             originals moved aside by a commit
 *
 *   state.c     the state dir, ids, locks, stale-transaction recovery
 *   workspace.c resolving and vetting the workspace directory
 *   run.c       txbox_run: classify → snapshot → execute → validate → finish
 *   finish.c    commit and rollback of a transaction
 *   result.c    result objects and their JSON */
#pragma once

#include "policy/effects.h"
#include "snapshot/snapshot.h"
#include "txbox.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define TX_STATE_DIR_NAME ".txbox"
#define TX_ID_MAX 64
#define TX_SPARES_MAX 2 /* emptied transaction directories kept for reuse */
#define TX_STALE_NAME "stale" /* a spare's previous, emptied layer, deleted by the next user */
#define TX_STATE_MARK ".txbox-state" /* in every --state-dir: commits leave such a dir alone */
#define TX_LOCK_NAME "lock"   /* a transaction's lock file (tx/lock.h) */

typedef struct tx_state_dir {
	int ws_fd;     /* the workspace (O_RDONLY|O_DIRECTORY) */
	int state_fd;  /* .txbox */
	int txs_fd;    /* .txbox/tx */
	char *ws_path; /* canonical absolute path */
	char *state_path; /* for messages: WS/.txbox or the --state-dir given */
	bool state_inside; /* the state dir is WS/.txbox (hidden from the sandbox) */
	/* spares seen by tx_recover_stale (saves tx_create a second readdir) */
	bool spares_known;
	unsigned nspares;
	char spares[4][TX_ID_MAX + 8];
} tx_state_dir;

typedef struct tx {
	char id[TX_ID_MAX];
	int fd;        /* .txbox/tx/<id> */
	int lock_fd;   /* its lock file, write-locked (tx/lock.h) */
	layer top;
	bool has_stale; /* it holds that transaction's emptied layer (stale/) */
} tx;

/* What a transaction's state file says (one string table in state.c). */
typedef enum tx_status {
	TX_RUNNING = 0,
	TX_HELD,
	TX_APPLYING,
	TX_COMMITTED,
} tx_status;
const char *tx_status_name(tx_status st);

/* workspace.c: resolve and vet; ws_fd is returned open. Errors name the
 * problem (missing, not a directory, a system directory, on overlayfs, …).
 * The path (NULL: the current directory, its logical $PWD when that is the
 * same directory) must not pass through a symlink inside a txbox workspace
 * (a directory holding .txbox/). A directory inside a workspace of the
 * caller's is refused when named, and stands for that (outermost)
 * workspace when it is the current directory. A current directory known
 * only by its physical path ($PWD does not name it) must be (inside) a
 * workspace already (it holds .txbox/) unless flags has WS_CWD_NEW. A
 * workspace owned by another
 * user is refused unless flags has WS_ALLOW_FOREIGN. */
enum {
	WS_ALLOW_FOREIGN = 1 << 0,
	/* the current directory may become a workspace whatever path it was
	 * reached by: for what neither reads nor changes it (txbox check) */
	WS_CWD_NEW = 1 << 1,
};
int workspace_open(const char *path, unsigned flags, char **canonical, int *ws_fd, txbox_error *err);
/* "name (uid N)" for messages */
void tx_owner_name(uid_t uid, char buf[static 96]);

/* state.c: the state dir and everything txbox reads back from it must be
 * the caller's own: owned by the effective uid, writable by nobody else,
 * never a symlink, regular files with one link; anything else is refused
 * with an error naming the path and its owner. In another user's
 * workspace the state dir must be outside it. STATE_CREATE: make the
 * state dir when it is missing (else -ENOENT). */
enum { STATE_CREATE = 1 << 0 };
/* The state dir to use for the workspace: given (--state-dir, or NULL),
 * or the one its W/.txbox/state-dir records when none is given; NULL in
 * *effective: W/.txbox itself. Refused: a given one other than the
 * recorded one, or one given for a workspace whose state is in W/.txbox
 * (two state dirs would mean two locks for one workspace). */
int state_dir_resolve(const char *ws_path, int ws_fd, const char *given, char **effective, txbox_error *err);
int state_dir_open(const char *ws_path, int ws_fd, const char *state_dir, unsigned flags, tx_state_dir *out,
		   txbox_error *err);
void state_dir_close(tx_state_dir *s);
int tx_create(tx_state_dir *s, tx *out, txbox_error *err);
/* -ENOENT: no such transaction; -EBUSY: another txbox process owns it. */
int tx_open(tx_state_dir *s, const char *id, tx *out, txbox_error *err);
void tx_close(tx *t);
int tx_set_state(tx *t, tx_status st, txbox_error *err);
/* A missing or empty state file reads as running ("running" is not made
 * durable); anything but "<known state> <pid>\n" is an error. */
int tx_get_state(const tx_state_dir *s, tx *t, tx_status *out, txbox_error *err);
/* Remove the transaction's directory (all layers and displaced originals). */
int tx_remove(tx_state_dir *s, tx *t, txbox_error *err);
/* Done with the transaction (its sandbox gone): empty its directory and
 * keep it as a spare for the next one, or remove it (tx_remove) when that
 * fails or enough spares exist. */
int tx_recycle(tx_state_dir *s, tx *t, txbox_error *err);
/* Delete the previous transaction's layer a spare still holds (stale/):
 * done while the command runs, off the critical path. */
int tx_delete_stale(tx *t, txbox_error *err);
/* Roll back or finish transactions whose owner died. Returns how many. */
int tx_recover_stale(tx_state_dir *s, txbox_error *err);

/* effects.c: judge the plan's changes by the policy's effect rules
 * (policy/effects.h) before anything is journaled; policy_rel is the
 * --policy file relative to the workspace, or NULL. Returns 1 when it
 * judged, 0 when there was nothing to judge (no rules, no changes). */
int tx_effects_check(int ws_fd, int upper_fd, const plan *p, const struct policy *pol, const char *policy_rel,
		     effect_verdict *out, txbox_error *err);

/* finish.c */
typedef struct tx_effects_in {
	const struct policy *policy; /* its effect rules judge the plan */
	const char *policy_rel;
} tx_effects_in;

typedef struct tx_commit_info {
	txbox_change *changes;
	size_t nchanges;
	bool refused;  /* the layer holds something that may not be published */
	bool timed_out; /* the deadline passed (planning, or waiting for the lock): nothing applied */
	/* The effect check (when asked): hold or deny means nothing was
	 * applied and the transaction is as it was. Freed by the caller. */
	bool effects_checked;
	effect_verdict effects;
} tx_commit_info;
int tx_commit(tx_state_dir *s, tx *t, bool strip_setuid, tx_commit_info *info, txbox_error *err);
/* The same, bounded: deadline_ns (CLOCK_MONOTONIC, clock_now_ns; 0: none)
 * covers waiting for the workspace lock and planning. */
int tx_commit_by(tx_state_dir *s, tx *t, bool strip_setuid, uint64_t deadline_ns, tx_commit_info *info,
		 txbox_error *err);
/* The same, judging the changes by fx's effect rules first (fx NULL: none). */
int tx_commit_checked(tx_state_dir *s, tx *t, bool strip_setuid, uint64_t deadline_ns, const tx_effects_in *fx,
		      tx_commit_info *info, txbox_error *err);
int tx_rollback(tx_state_dir *s, tx *t, txbox_error *err);
/* Reverse an interrupted commit from its journal, then remove the tx. */
int tx_reverse_journal(tx_state_dir *s, tx *t, txbox_error *err);

/* run.c: shared with check.c */
struct policy;
struct policy_verdict;
int run_load_policy(const char *file, struct policy **out, txbox_error *err);
int run_fill_decision(const struct policy_verdict *v, txbox_decision *d);
/* The directory the command starts in: the caller's cwd when it is inside
 * the workspace (and not in its state dir), else the workspace root. */
char *run_start_dir(const char *ws);

/* result.c */
txbox_result *result_new(void);
