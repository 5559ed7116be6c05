/* state: the workspace's state dir (.txbox), transaction ids and
 * directories, their locks, and recovery of transactions whose txbox
 * process died (SIGKILL, power loss). Whoever owns a workspace can plant a
 * .txbox in it, so everything read back from the state dir is opened
 * through open_trusted: the caller's own, writable by nobody else, never a
 * symlink, a FIFO or a hard link. */
#include "tx/tx.h"

#include "tx/lock.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/trace.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* ---- trust ----------------------------------------------------------- */

static const char *const status_names[] = {
	[TX_RUNNING] = "running",
	[TX_HELD] = "held",
	[TX_APPLYING] = "applying",
	[TX_COMMITTED] = "committed",
};

const char *tx_status_name(tx_status st)
{
	return (unsigned)st < ARRAY_SIZE(status_names) ? status_names[st] : "unknown";
}

void tx_owner_name(uid_t uid, char buf[static 96])
{
	struct passwd pw, *res = NULL;
	char tmp[1024];
	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
		snprintf(buf, 96, "%.60s (uid %u)", pw.pw_name, (unsigned)uid);
	else
		snprintf(buf, 96, "uid %u", (unsigned)uid);
}

/* A name from the state dir for a message: bytes outside printable ASCII
 * (newlines above all) as \xNN. */
static void escape_name(const char *name, char *out, size_t len)
{
	size_t o = 0;
	for (const unsigned char *c = (const unsigned char *)name; *c && o + 5 < len; c++)
		o += (size_t)snprintf(out + o, len - o, *c >= 0x20 && *c < 0x7f && *c != '\\' ? "%c" : "\\x%02x", *c);
	out[o] = '\0';
}

/* Whether st may not be trusted as an object of the state dir (why says
 * why). ACLs need no look of their own: with an ACL the group bits are its
 * mask, which bounds every named entry. */
#define WHY_MAX 240
static bool untrusted(const struct stat *st, mode_t type, char why[static WHY_MAX])
{
	if ((st->st_mode & S_IFMT) != type) {
		snprintf(why, WHY_MAX, "%s", S_ISLNK(st->st_mode) ? "it is a symlink"
					    : type == S_IFDIR ? "it is not a directory"
							      : "it is not a regular file");
		return true;
	}
	if (st->st_uid != geteuid()) {
		char who[96], me[96];
		tx_owner_name(st->st_uid, who);
		tx_owner_name(geteuid(), me);
		snprintf(why, WHY_MAX, "it is owned by %s, not by you, %s", who, me);
		return true;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, WHY_MAX, "it is writable by its group or by others (mode %04o)", st->st_mode & 07777);
		return true;
	}
	if (type == S_IFREG && st->st_nlink != 1) {
		snprintf(why, WHY_MAX, "it has %lu hard links", (unsigned long)st->st_nlink);
		return true;
	}
	return false;
}

static int refuse(txbox_error *err, const char *where, const char *name, const char *why)
{
	char esc[512];
	escape_name(name, esc, sizeof esc);
	return txbox_fail(err, -EPERM,
			  "refusing the state dir entry %s%s%s: %s; txbox trusts only state its own user made "
			  "(owned by you, writable by nobody else, no symlinks): remove it, or use another --state-dir",
			  where, where[0] ? "/" : "", esc, why);
}

/* What name beneath dirfd is now, checked: 0, -ENOENT when missing, or
 * an error refusing it. */
static int stat_trusted(int dirfd, const char *name, const char *where, mode_t type, struct stat *st,
			txbox_error *err)
{
	char why[WHY_MAX];
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		snprintf(why, sizeof why, "stat failed: %s", strerror(errno));
		return refuse(err, where, name, why);
	}
	if (untrusted(st, type, why))
		return refuse(err, where, name, why);
	return 0;
}

/* Open name beneath dirfd (where: that directory's path for messages, ""
 * when name is a whole path) as a trusted object of the given type:
 * O_NOFOLLOW, files non-blocking (a FIFO never hangs; O_DIRECTORY refuses
 * one before any wait), checked before and after opening. flags: 0 for
 * read-only. -ENOENT when missing. */
static int open_trusted(int dirfd, const char *name, const char *where, mode_t type, int flags, txbox_error *err)
{
	struct stat a, b;
	char why[WHY_MAX];
	int r = stat_trusted(dirfd, name, where, type, &a, err);
	if (r < 0)
		return r;
	bool dir = type == S_IFDIR;
	int how = (flags ? flags : dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | (dir ? 0 : O_NONBLOCK);
	int fd = openat(dirfd, name, how | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		snprintf(why, sizeof why, "it cannot be opened: %s", strerror(errno));
		return refuse(err, where, name, why);
	}
	if (fstat(fd, &b) < 0 || b.st_ino != a.st_ino || b.st_dev != a.st_dev) {
		close(fd);
		return refuse(err, where, name, "it changed while it was opened");
	}
	if (untrusted(&b, type, why)) {
		close(fd);
		return refuse(err, where, name, why);
	}
	if (dir || (flags & O_NONBLOCK))
		return fd;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

/* Check an entry without keeping it open (missing is fine): what it is
 * now, all that a check without a descriptor can tell. */
static int check_trusted(int dirfd, const char *name, const char *where, mode_t type, txbox_error *err)
{
	struct stat st;
	int r = stat_trusted(dirfd, name, where, type, &st, err);
	return r == -ENOENT ? 0 : r;
}

static int open_state_root(const char *ws_path, int ws_fd, const char *state_dir, unsigned flags, int *out,
			   txbox_error *err)
{
	int dirfd = state_dir ? AT_FDCWD : ws_fd;
	const char *name = state_dir ? state_dir : TX_STATE_DIR_NAME;
	const char *where = state_dir ? "" : ws_path;
	if ((flags & STATE_CREATE) && fs_mkdir_private(dirfd, name) < 0 && errno != EEXIST)
		return txbox_fail_errno(err, -errno, "creating the state dir %s%s%s", where, where[0] ? "/" : "", name);
	int fd = open_trusted(dirfd, name, where, S_IFDIR, 0, err);
	if (fd == -ENOENT)
		return txbox_fail(err, -ENOENT, "no state dir %s%s%s", where, where[0] ? "/" : "", name);
	if (fd < 0)
		return fd;
	*out = fd;
	return 0;
}

/* Walk up from the directory dirfd by "..", which a rename cannot fool
 * (it is the directory's real parent), asking visit at each directory:
 * WALK_ON goes on; the walk answers true at WALK_YES, false at WALK_NO or
 * at /, and unsure when a directory cannot be looked at. */
typedef enum walk_step { WALK_ON, WALK_YES, WALK_NO } walk_step;
static bool walk_up(int dirfd, walk_step (*visit)(int fd, const struct stat *st, void *arg), void *arg,
		    bool unsure)
{
	_cleanup_close_ int fd = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int depth = 0; fd >= 0 && depth < 4096; depth++) {
		struct stat st, up;
		if (fstat(fd, &st) < 0)
			return unsure;
		walk_step w = visit(fd, &st, arg);
		if (w != WALK_ON)
			return w == WALK_YES;
		int parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up) < 0) {
			if (parent >= 0)
				close(parent);
			return unsure;
		}
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino) {
			close(parent);
			return false; /* reached / */
		}
		close(fd);
		fd = parent;
	}
	return unsure;
}

static walk_step is_ws(int fd, const struct stat *st, void *arg)
{
	const struct stat *ws = arg;
	(void)fd;
	return st->st_dev == ws->st_dev && st->st_ino == ws->st_ino ? WALK_YES : WALK_ON;
}

/* Whether the directory dirfd is ws or beneath it. */
static bool beneath(int dirfd, const struct stat *ws)
{
	return walk_up(dirfd, is_ws, (void *)ws, true); /* cannot tell: assume the worst */
}

/* In another user's workspace the state dir must be outside it: its owner
 * could rename one inside into the view of the caller's commands, let them
 * change it, and rename it back. sfd < 0: not open yet. */
static int foreign_state_where(const char *ws_path, const struct stat *wst, const char *state_dir, int sfd,
			       txbox_error *err)
{
	if (wst->st_uid == geteuid() || (sfd >= 0 && !beneath(sfd, wst)))
		return 0;
	char who[96];
	tx_owner_name(wst->st_uid, who);
	return txbox_fail(err, -EPERM,
			  "refusing a state dir inside %s (%s%s%s): the workspace is owned by %s, who could rename "
			  "it to where your commands see and change it; give --state-dir DIR, a directory of yours "
			  "outside the workspace on its filesystem",
			  ws_path, state_dir ? state_dir : ws_path, state_dir ? "" : "/", state_dir ? "" : TX_STATE_DIR_NAME,
			  who);
}

/* ---- workspace identity ---------------------------------------------
 * A transaction acts on one workspace only: the one it was opened on. Its
 * identity (device and inode of the root; the path for messages) is
 * recorded in each transaction ("workspace") and in a state dir outside
 * the workspace, which serves that workspace alone. */

#define IDENTITY_NAME "workspace"
#define IDENTITY_MAX (PATH_MAX + 64)

typedef struct ws_identity {
	unsigned long long dev, ino;
	char path[PATH_MAX];
} ws_identity;

static int format_identity(const tx_state_dir *s, char buf[static IDENTITY_MAX])
{
	struct stat st;
	if (fstat(s->ws_fd, &st) < 0)
		return -errno;
	return snprintf(buf, IDENTITY_MAX, "%llu %llu %s\n", (unsigned long long)st.st_dev,
			(unsigned long long)st.st_ino, s->ws_path);
}

/* Up to size - 1 bytes of the trusted regular file name beneath dirfd,
 * NUL-terminated: their count, -ENOENT when missing, or an error. */
static ssize_t read_small_trusted(int dirfd, const char *name, const char *where, char *buf, size_t size,
				  txbox_error *err)
{
	_cleanup_close_ int fd = open_trusted(dirfd, name, where, S_IFREG, 0, err);
	if (fd < 0)
		return fd;
	ssize_t n;
	while ((n = read(fd, buf, size - 1)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return txbox_fail_errno(err, -errno, "reading %s/%s", where, name);
	buf[n] = '\0';
	return n;
}

/* Read a recorded identity: -ENOENT when missing or empty (a crash before
 * it reached the disk), an error when it is not one. */
static int read_identity(int dirfd, const char *where, ws_identity *id, txbox_error *err)
{
	char buf[IDENTITY_MAX + 1];
	ssize_t n = read_small_trusted(dirfd, IDENTITY_NAME, where, buf, sizeof buf, err);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ENOENT;
	buf[n] = '\0';
	int off = 0;
	if (buf[n - 1] != '\n' || sscanf(buf, "%llu %llu %n", &id->dev, &id->ino, &off) != 2 || off == 0)
		return refuse(err, where, IDENTITY_NAME, "it is not \"<device> <inode> <path>\"");
	buf[n - 1] = '\0';
	escape_name(buf + off, id->path, sizeof id->path);
	return 0;
}

/* Whether id is the workspace s->ws_fd; else an error naming both. */
static int check_identity(const tx_state_dir *s, const ws_identity *id, const char *what, const char *hint,
			  txbox_error *err)
{
	struct stat st;
	if (fstat(s->ws_fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace %s", s->ws_path);
	if (id->dev == (unsigned long long)st.st_dev && id->ino == (unsigned long long)st.st_ino)
		return 0;
	return txbox_fail(err, -EXDEV,
			  "refusing %s: it belongs to the workspace %s (device %llu, inode %llu), not to %s "
			  "(device %llu, inode %llu); %s",
			  what, id->path, id->dev, id->ino, s->ws_path, (unsigned long long)st.st_dev,
			  (unsigned long long)st.st_ino, hint);
}

/* A state dir outside the workspace is bound to the first workspace that
 * uses it: shared, one workspace's recovery would reverse another's
 * journal into it. */
static int bind_state_dir(tx_state_dir *s, unsigned flags, txbox_error *err)
{
	ws_identity id;
	int r = read_identity(s->state_fd, s->state_path, &id, err);
	if (r == 0) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof what, "the state dir %s", s->state_path);
		return check_identity(s, &id, what,
				      "a state dir serves one workspace only: give this one its own --state-dir", err);
	}
	if (r != -ENOENT || !(flags & STATE_CREATE)) /* only a run binds; each transaction still checks */
		return r == -ENOENT ? 0 : r;
	char buf[IDENTITY_MAX];
	int n = format_identity(s, buf);
	if (n < 0 || n >= IDENTITY_MAX)
		return txbox_fail(err, n < 0 ? n : -ENAMETOOLONG, "recording the workspace of %s", s->state_path);
	/* never replaced: a concurrent first run reads it (a replaced file has
	 * no link left, which the trust check refuses) */
	int w = fs_write_file_new(s->state_fd, IDENTITY_NAME, buf, (size_t)n, 0600, err);
	return w == -EEXIST ? bind_state_dir(s, 0, err) : w; /* bound meanwhile: check it */
}

/* The transaction's own record, made with it (not synced: the journal's
 * fsyncs come later; a record lost in a crash falls back on the state
 * dir's binding). */
static int record_tx_identity(const tx_state_dir *s, tx *t, txbox_error *err)
{
	char buf[IDENTITY_MAX];
	int n = format_identity(s, buf);
	if (n < 0 || n >= IDENTITY_MAX)
		return txbox_fail(err, n < 0 ? n : -ENAMETOOLONG, "recording the workspace of %s", t->id);
	if (unlinkat(t->fd, IDENTITY_NAME, 0) < 0 && errno != ENOENT)
		return txbox_fail_errno(err, -errno, "replacing the workspace record of %s", t->id);
	_cleanup_close_ int fd =
		openat(t->fd, IDENTITY_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		return txbox_fail_errno(err, -errno, "recording the workspace of %s", t->id);
	return 0;
}

static int check_tx_identity(const tx_state_dir *s, tx *t, txbox_error *err)
{
	char where[PATH_MAX];
	snprintf(where, sizeof where, "%s/tx/%s", s->state_path, t->id);
	ws_identity id;
	int r = read_identity(t->fd, where, &id, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	char what[TX_ID_MAX + 32];
	snprintf(what, sizeof what, "transaction %s", t->id);
	return check_identity(s, &id, what,
			      "a transaction acts only on the workspace it was opened on (name that one with -w)", err);
}

/* A --state-dir that serves a workspace (its record) always has its mark
 * (made first): one without it may be a copy that replaced it, made by a
 * command of a workspace around it, which cannot commit the mark (plan.c):
 * refused, never marked again (red team rt19). */
static int refuse_lost_mark(int sfd, const char *spath, txbox_error *err)
{
	if (faccessat(sfd, TX_STATE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	/* it served one: its record, or a transaction (a copy may drop either) */
	_cleanup_close_ int tfd = openat(sfd, "tx", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool served = tfd >= 0 &&
		      (faccessat(sfd, IDENTITY_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || fs_dir_is_empty(tfd) == 0);
	if (!served)
		return 0;
	return txbox_fail(err, -EPERM,
			  "refusing the state dir %s: it serves a workspace but has lost its mark %s, so it may be "
			  "a copy that replaced it; check its transactions, then `: > %s/%s` to use it again",
			  spath, TX_STATE_MARK, spath, TX_STATE_MARK);
}

/* commit, rollback and recover never make a state dir what it was not:
 * a --state-dir must be whole (mark, tx/ and record: rt20 had recovery
 * mark and trust a copy). */
static int require_state_dir(int sfd, const char *spath, txbox_error *err)
{
	if (faccessat(sfd, TX_STATE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0; /* a record lost in a crash is absent: the binding checks the rest */
	int r = refuse_lost_mark(sfd, spath, err);
	return r < 0 ? r
		     : txbox_fail(err, -EPERM, "refusing the state dir %s: it has no %s, so no txbox made it", spath,
				  TX_STATE_MARK);
}

static int mark_state_dir(int sfd, const char *spath, txbox_error *err)
{
	if (faccessat(sfd, TX_STATE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return check_trusted(sfd, TX_STATE_MARK, spath, S_IFREG, err);
	int r = refuse_lost_mark(sfd, spath, err);
	if (r < 0)
		return r;
	int fd = openat(sfd, TX_STATE_MARK, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EEXIST)
		return txbox_fail_errno(err, -errno, "marking the state dir %s", spath);
	return check_trusted(sfd, TX_STATE_MARK, spath, S_IFREG, err);
}

static int read_state_marker(int ws_fd, const char *ws_path, char **out, bool *has_tx, txbox_error *err);

/* A workspace whose state lives elsewhere keeps a W/.txbox all the same,
 * recording where: what makes a directory recognisable as a workspace
 * (a symlink inside one is never followed to name a workspace; the current
 * directory must be one). Only in one's own workspace: another user's is
 * theirs to arrange. */
static int mark_workspace(const tx_state_dir *s, const struct stat *wst, txbox_error *err)
{
	if (wst->st_uid != geteuid())
		return 0;
	if (fs_mkdir_private(s->ws_fd, TX_STATE_DIR_NAME) < 0 && errno != EEXIST)
		return txbox_fail_errno(err, -errno, "creating the workspace marker %s/%s", s->ws_path,
					TX_STATE_DIR_NAME);
	_cleanup_close_ int fd = open_trusted(s->ws_fd, TX_STATE_DIR_NAME, s->ws_path, S_IFDIR, 0, err);
	if (fd < 0)
		return fd == -ENOENT ? txbox_fail(err, -ENOENT, "%s/%s vanished", s->ws_path, TX_STATE_DIR_NAME) : fd;
	_cleanup_free_ char *real = realpath(s->state_path, NULL);
	if (!real)
		return txbox_fail_errno(err, -errno, "resolving the state dir %s", s->state_path);
	_cleanup_free_ char *line = NULL;
	int n = asprintf(&line, "%s\n", real);
	if (n < 0)
		return txbox_fail(err, -ENOMEM, "out of memory");
	int r = faccessat(fd, ".gitignore", F_OK, AT_SYMLINK_NOFOLLOW) == 0
			? 0
			: fs_write_file_atomic(fd, ".gitignore", "*\n", 2, 0644, err);
	if (r == 0)
		r = fs_write_file_new(fd, "state-dir", line, (size_t)n, 0600, err);
	if (r != -EEXIST)
		return r;
	/* there already, maybe made meanwhile by another first run: it must
	 * name this one */
	_cleanup_free_ char *marked = NULL;
	bool has_tx;
	if ((r = read_state_marker(s->ws_fd, s->ws_path, &marked, &has_tx, err)) < 0)
		return r;
	return marked && !strcmp(marked, real)
		       ? 0
		       : txbox_fail(err, -EEXIST, "the workspace %s keeps its state in %s, not in %s", s->ws_path,
				    marked ? marked : "?", real);
}

typedef struct other_ws {
	const struct stat *ws;
	char *where;
	char why[PATH_MAX + 200];
	bool first; /* visiting the state dir itself */
	bool past_own; /* above its own workspace */
	struct stat prev; /* the directory visited before (once !first) */
} other_ws;

/* Whether fd (stat st) is root's workspace, for a caller that is not
 * root: its .txbox and the directory holding it root's. Root's commands
 * write files of any owner there, so they could replace the caller's state
 * with a forged copy (red team rt18 X62); another user's commands write
 * only as that user (and anyone may make a .txbox where they can write:
 * counting those let a user block root's runs, rt22 S1). */
static bool others_workspace(int fd, const struct stat *st)
{
	struct stat t;
	return geteuid() != 0 && st->st_uid == 0 && fstatat(fd, TX_STATE_DIR_NAME, &t, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(t.st_mode) && t.st_uid == 0;
}

/* The path of the directory fd (for messages), suffix appended. */
static void fd_where(int fd, const char *suffix, char where[static PATH_MAX])
{
	char p[32];
	fs_fd_path(fd, p);
	size_t room = PATH_MAX - strlen(suffix) - 1;
	ssize_t n = readlink(p, where, room);
	snprintf(where + (n > 0 ? n : 0), PATH_MAX - (size_t)(n > 0 ? n : 0), "%s", suffix);
}

/* Whether the directory visited before fd on a walk up (prev) is fd's
 * .txbox: a state dir inside a workspace, whoever's. Its path goes to
 * where. */
static bool came_from_state_name(int fd, const struct stat *prev, char where[static PATH_MAX])
{
	struct stat t;
	if (fstatat(fd, TX_STATE_DIR_NAME, &t, AT_SYMLINK_NOFOLLOW) < 0 || t.st_dev != prev->st_dev ||
	    t.st_ino != prev->st_ino)
		return false;
	fd_where(fd, "/" TX_STATE_DIR_NAME, where);
	return true;
}

static walk_step holds_other_ws(int fd, const struct stat *st, void *arg)
{
	other_ws *o = arg;
	bool itself = o->first;
	o->first = false;
	struct stat prev = o->prev;
	o->prev = *st;
	if (!itself && came_from_state_name(fd, &prev, o->where)) {
		snprintf(o->why, sizeof o->why, "it is inside the txbox state dir %s", o->where);
		return WALK_YES;
	}
	/* below its own workspace it is hidden from its commands; the
	 * workspace itself is no place for it (they would see it all) */
	bool own = is_ws(fd, st, (void *)o->ws) == WALK_YES;
	if (o->past_own || (own && !itself)) {
		/* Above it, a workspace of another user's around the caller's
		 * own: its commands could replace the caller's workspace's
		 * state dir with a forged copy (red team rt19 S13). */
		o->past_own = true;
		if (own || !others_workspace(fd, st))
			return WALK_ON;
		fd_where(fd, "", o->where);
		snprintf(o->why, sizeof o->why,
			 "its workspace lies inside root's txbox workspace %s, whose commands could change it",
			 o->where);
		return WALK_YES;
	}
	if (own) {
		snprintf(o->why, sizeof o->why, "it is the workspace itself, which its commands change");
		return WALK_YES;
	}
	/* Above it, only directories no other user can change: one who could
	 * would rename the state dir away and in again between two uses. */
	if (!itself && ((st->st_uid != 0 && st->st_uid != geteuid()) ||
			((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)))) {
		char who[96];
		tx_owner_name(st->st_uid, who);
		fd_where(fd, "", o->where);
		snprintf(o->why, sizeof o->why, "its directory %s can be changed by another user (owner %s, mode %04o)",
			 o->where, who, st->st_mode & 07777);
		return WALK_YES;
	}
	if (!itself && fs_is_state_dir(fd, ".", TX_STATE_MARK)) {
		fd_where(fd, "", o->where);
		snprintf(o->why, sizeof o->why, "it is inside the txbox state dir %s", o->where);
		return WALK_YES;
	}
	/* A workspace: the caller's, or root's (others_workspace). Anyone may
	 * make a .txbox where they can write (/tmp): no other one counts. */
	struct stat t;
	bool mine = fstatat(fd, TX_STATE_DIR_NAME, &t, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(t.st_mode) &&
		    t.st_uid == geteuid();
	if (!mine && !others_workspace(fd, st))
		return WALK_ON;
	fd_where(fd, "", o->where);
	snprintf(o->why, sizeof o->why, "it is inside the txbox workspace %s, whose commands could change it", o->where);
	return WALK_YES;
}

/* Whether the directory that holds the state dir (path state_dir) lies in
 * a txbox workspace other than ws (it or an ancestor, below ws or up to /,
 * holding a .txbox): that workspace's commands see it writable through
 * their overlay and commit what they do to it (red team rt12). Its path
 * goes to where (for messages). */
static bool inside_other_workspace(const char *state_dir, const struct stat *ws, char where[static PATH_MAX],
				   char why[static PATH_MAX + 200])
{
	_cleanup_free_ char *copy = strdup(state_dir);
	if (!copy)
		return true; /* cannot tell: assume the worst */
	/* where it really is (symlinks, "LINK/", "." resolved), or, not made
	 * yet, where it would be */
	int fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool made = fd >= 0;
	if (!made)
		fd = open(dirname(copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false; /* nowhere: making or opening it fails with its own error */
	other_ws o = {.ws = ws, .where = where, .first = made};
	where[0] = o.why[0] = '\0';
	bool in = walk_up(fd, holds_other_ws, &o, true);
	close(fd);
	if (in && !o.why[0])
		snprintf(o.why, sizeof o.why, "txbox could not look at every directory above it");
	snprintf(why, PATH_MAX + 200, "%s", o.why);
	return in;
}

/* The path recorded in W/.txbox/state-dir (mark_workspace): 0 and *out
 * (NULL when there is none), or an error refusing the marker. */
static int read_state_marker(int ws_fd, const char *ws_path, char **out, bool *has_tx, txbox_error *err)
{
	*out = NULL;
	*has_tx = false;
	_cleanup_close_ int fd = open_trusted(ws_fd, TX_STATE_DIR_NAME, ws_path, S_IFDIR, 0, err);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	*has_tx = faccessat(fd, "tx", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	char where[PATH_MAX + 16];
	snprintf(where, sizeof where, "%s/%s", ws_path, TX_STATE_DIR_NAME);
	char buf[PATH_MAX + 2];
	ssize_t n = read_small_trusted(fd, "state-dir", where, buf, sizeof buf, err);
	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	if (n < 3 || buf[0] != '/' || buf[n - 1] != '\n' || memchr(buf, '\0', (size_t)n) ||
	    memchr(buf, '\n', (size_t)n - 1))
		return refuse(err, where, "state-dir", "it is not one absolute path and a newline");
	buf[n - 1] = '\0';
	*out = strdup(buf);
	return *out ? 0 : txbox_fail(err, -ENOMEM, "out of memory");
}

typedef struct state_above {
	char where[PATH_MAX];
	struct stat prev;
	bool first;
} state_above;

/* A state dir of anyone's (a --state-dir, or a .txbox) at or above a
 * workspace: its commits would change that state. */
static walk_step is_state_dir_here(int fd, const struct stat *st, void *arg)
{
	state_above *a = arg;
	bool first = a->first;
	struct stat prev = a->prev;
	a->first = false;
	a->prev = *st;
	if (!first && came_from_state_name(fd, &prev, a->where))
		return WALK_YES;
	if (!fs_is_state_dir(fd, ".", TX_STATE_MARK))
		return WALK_ON;
	fd_where(fd, "", a->where);
	return WALK_YES;
}

/* The state dir the marker names is this workspace's: it exists and its
 * record names this workspace (a copied or cloned workspace's marker names
 * another's, or any directory at all). */
static int check_marked(const char *ws_path, const struct stat *wst, const char *marked, txbox_error *err)
{
	_cleanup_close_ int sfd = open(marked, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ws_identity id;
	int r = sfd < 0 ? -ENOENT : read_identity(sfd, marked, &id, err);
	if (r < 0 && r != -ENOENT)
		return r;
	txbox_error_clear(err);
	if (r == 0 && id.dev == (unsigned long long)wst->st_dev && id.ino == (unsigned long long)wst->st_ino)
		return 0;
	return txbox_fail(err, -EXDEV,
			  "%s/%s/state-dir names %s, which is not this workspace's state dir (a copied or cloned "
			  "workspace?): remove that file, or give --state-dir",
			  ws_path, TX_STATE_DIR_NAME, marked);
}

int state_dir_resolve(const char *ws_path, int ws_fd, const char *given, char **effective, txbox_error *err)
{
	*effective = NULL;
	struct stat wst;
	if (fstat(ws_fd, &wst) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace");
	/* A workspace in a state dir: its commits would change that state. */
	state_above in_state = {.first = true};
	if (walk_up(ws_fd, is_state_dir_here, &in_state, false))
		return txbox_fail(err, -EPERM,
				  "refusing the workspace %s: it is inside the txbox state dir %s, which its commits "
				  "would change",
				  ws_path, in_state.where);
	_cleanup_free_ char *marked = NULL;
	bool has_tx = false;
	int r = wst.st_uid == geteuid() ? read_state_marker(ws_fd, ws_path, &marked, &has_tx, err) : 0;
	if (r < 0)
		return r;
	if (marked && given) {
		_cleanup_free_ char *real = realpath(given, NULL);
		if (!real || strcmp(real, marked) != 0)
			return txbox_fail(err, -EEXIST,
					  "the workspace %s keeps its state in %s (recorded in %s/%s/state-dir), not "
					  "in %s: give that --state-dir, or none",
					  ws_path, marked, ws_path, TX_STATE_DIR_NAME, given);
	}
	if (!marked && given && has_tx)
		return txbox_fail(err, -EEXIST,
				  "the workspace %s keeps its state in %s/%s: a --state-dir would be a second one, "
				  "with a lock of its own; run without it, or move the workspace's state first",
				  ws_path, ws_path, TX_STATE_DIR_NAME);
	if (marked && !given && (r = check_marked(ws_path, &wst, marked, err)) < 0)
		return r;
	const char *use = given ? given : marked;
	if (use && !(*effective = strdup(use)))
		return txbox_fail(err, -ENOMEM, "out of memory");
	return 0;
}

/* Whether a --state-dir's last component is .txbox (trailing slashes and
 * "." aside): only txbox names the state dir inside a workspace so, and a
 * --state-dir there would be marked as the workspace's and refused ever
 * after (red team rt18 X9). */
static bool named_like_inside(const char *state_dir)
{
	_cleanup_free_ char *copy = strdup(state_dir);
	if (!copy)
		return false;
	size_t n = strlen(copy);
	for (;;) {
		while (n > 1 && copy[n - 1] == '/')
			copy[--n] = '\0';
		if (n >= 2 && !strcmp(copy + n - 2, "/.")) {
			copy[n -= 2] = '\0';
			continue;
		}
		break;
	}
	const char *base = strrchr(copy, '/');
	return !strcmp(base ? base + 1 : copy, TX_STATE_DIR_NAME);
}

/* What a --state-dir may hold before it is bound to a workspace (no
 * record yet): what a first run, maybe one running alongside, makes. */
static bool first_use_entry(int sfd, const char *name)
{
	static const char *const made[] = {".gitignore", TX_STATE_MARK, "lock"};
	bool file = false;
	for (size_t i = 0; i < ARRAY_SIZE(made) && !file; i++)
		file = !strcmp(name, made[i]);
	size_t n = strlen(name);
	if (file || (name[0] == '.' && n > 4 && !strcmp(name + n - 4, ".tmp"))) { /* and write_file's temporaries */
		/* files only (a directory of that name could hold a workspace:
		 * red team rt23); one gone meanwhile was a temporary */
		struct stat st;
		return fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? S_ISREG(st.st_mode) : errno == ENOENT;
	}
	if (strcmp(name, "tx"))
		return false;
	/* transactions only where txbox marked it (a record lost in a crash
	 * right after the first run); no commit makes a mark */
	if (faccessat(sfd, TX_STATE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return true;
	_cleanup_close_ int tfd = openat(sfd, "tx", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return tfd >= 0 && fs_dir_is_empty(tfd) == 1;
}

/* A --state-dir not yet bound to a workspace holds nothing else: one
 * chosen around existing files (a project, another workspace, whose held
 * transactions it would strand: red team rt15 N26) would take them for
 * txbox's state. */
static int check_first_use(int sfd, const char *spath, txbox_error *err)
{
	if (fs_is_state_dir(sfd, ".", TX_STATE_MARK))
		return 0; /* made by txbox: bind_state_dir checks for which workspace */
	int r = refuse_lost_mark(sfd, spath, err);
	if (r < 0)
		return r;
	int dfd = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return txbox_fail_errno(err, -errno, "listing the state dir %s", spath);
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || first_use_entry(sfd, de->d_name))
			continue;
		if (fs_is_state_dir(sfd, ".", TX_STATE_MARK))
			return 0; /* a first run alongside finished making it */
		char esc[NAME_MAX * 4 + 1];
		escape_name(de->d_name, esc, sizeof esc);
		return txbox_fail(err, -EEXIST,
				  "refusing the state dir %s: it holds %s, and is no txbox state dir yet; a new "
				  "--state-dir must be a new or empty directory",
				  spath, esc);
	}
	return 0;
}

/* The rules a --state-dir's path must meet before anything is made or
 * read there (see "Workspace identity" in ARCHITECTURE.md). */
static int check_given_state_dir(const char *ws_path, const struct stat *wst, const char *state_dir,
				 txbox_error *err)
{
	char other[PATH_MAX], why[PATH_MAX + 200];
	int r;
	if (strchr(state_dir, '\n'))
		return txbox_fail(err, -EINVAL, "refusing a state dir whose path has a newline in it");
	if (wst->st_uid != geteuid()) { /* the owner's word first: it names the way out */
		_cleanup_close_ int given = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (given >= 0 && (r = foreign_state_where(ws_path, wst, state_dir, given, err)) < 0)
			return r;
	}
	if (named_like_inside(state_dir))
		return txbox_fail(err, -EINVAL,
				  "refusing the state dir %s: %s is the name of the state dir inside a workspace; run "
				  "without --state-dir to use that one, or choose another name",
				  state_dir, TX_STATE_DIR_NAME);
	if (inside_other_workspace(state_dir, wst, other, why))
		return txbox_fail(err, -EPERM,
				  "refusing the state dir %s: %s; choose a state dir of yours outside every workspace",
				  state_dir, why);
	return 0;
}

int state_dir_open(const char *ws_path, int ws_fd, const char *state_dir, unsigned flags, tx_state_dir *out,
		   txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->ws_fd = out->state_fd = out->txs_fd = -1;
	struct stat wst, sst;
	if (fstat(ws_fd, &wst) < 0)
		return txbox_fail_errno(err, -errno, "stat of the workspace");
	int r = state_dir ? check_given_state_dir(ws_path, &wst, state_dir, err)
			  : foreign_state_where(ws_path, &wst, NULL, -1, err);
	if (r < 0)
		return r;
	_cleanup_close_ int sfd = -1;
	r = open_state_root(ws_path, ws_fd, state_dir, flags, &sfd, err);
	if (r < 0 || (r = foreign_state_where(ws_path, &wst, state_dir, sfd, err)) < 0)
		return r;
	_cleanup_free_ char *spath = NULL;
	if (state_dir ? !(spath = strdup(state_dir)) : asprintf(&spath, "%s/%s", ws_path, TX_STATE_DIR_NAME) < 0)
		return txbox_fail(err, -ENOMEM, "out of memory");
	if (fstat(sfd, &sst) < 0)
		return txbox_fail_errno(err, -errno, "stat of the state dir");
	/* around the workspace: its .gitignore would hide the workspace from
	 * git, and the workspace's commands would see it all */
	if (state_dir && beneath(ws_fd, &sst))
		return txbox_fail(err, -EPERM, "refusing the state dir %s: it contains the workspace %s", spath,
				  ws_path);
	if (state_dir && (flags & STATE_CREATE) && (r = check_first_use(sfd, spath, err)) < 0)
		return r;
	if (sst.st_dev != wst.st_dev)
		return txbox_fail(err, -EXDEV,
				  "the state dir %s is on another filesystem than the workspace %s: commit must be "
				  "renames on one filesystem; choose a state dir on the workspace's filesystem",
				  spath, ws_path);
	/* The state dir must never become part of a commit or of git. */
	if (faccessat(sfd, ".gitignore", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		txbox_error ig = TXBOX_ERROR_INIT;
		fs_write_file_atomic(sfd, ".gitignore", "*\n", 2, 0644, &ig);
		txbox_error_clear(&ig);
	}
	if (fs_mkdir_private(sfd, "tx") < 0 && errno != EEXIST)
		return txbox_fail_errno(err, -errno, "creating the transactions dir %s/tx", spath);
	/* Outside the workspace the state dir says what it is: a workspace
	 * made around it later never commits a change to it (plan.c). In it,
	 * its name says so. */
	if (state_dir && (r = (flags & STATE_CREATE) ? mark_state_dir(sfd, spath, err)
						     : require_state_dir(sfd, spath, err)) < 0)
		return r;

	/* the lock: made (sealed, tx/lock.h) by the first txbox that takes it */
	struct stat lst;
	if ((r = stat_trusted(sfd, "lock", spath, S_IFREG, &lst, err)) < 0 && r != -ENOENT)
		return r;
	_cleanup_close_ int tfd = open_trusted(sfd, "tx", spath, S_IFDIR, 0, err);
	if (tfd < 0)
		return tfd == -ENOENT ? txbox_fail(err, -ENOENT, "%s/tx vanished", spath) : tfd;
	out->ws_fd = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
	out->ws_path = strdup(ws_path);
	if (out->ws_fd < 0 || !out->ws_path) {
		state_dir_close(out);
		return txbox_fail(err, -ENOMEM, "out of resources");
	}
	out->state_path = steal_ptr(spath);
	out->state_fd = steal_fd(sfd);
	out->txs_fd = steal_fd(tfd);
	out->state_inside = !state_dir;
	if (state_dir && ((r = bind_state_dir(out, flags, err)) < 0 ||
			  ((flags & STATE_CREATE) && (r = mark_workspace(out, &wst, err)) < 0))) {
		state_dir_close(out);
		return r;
	}

	return 0;
}

void state_dir_close(tx_state_dir *s)
{
	if (s->ws_fd >= 0)
		close(s->ws_fd);
	if (s->state_fd >= 0)
		close(s->state_fd);
	if (s->txs_fd >= 0)
		close(s->txs_fd);
	free(s->ws_path);
	free(s->state_path);
	memset(s, 0, sizeof *s);
	s->ws_fd = s->state_fd = s->txs_fd = -1;
}

static bool valid_id(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n >= TX_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') || id[i] == '-'))
			return false;
	return true;
}

static void make_id(char id[TX_ID_MAX], const unsigned char rnd[4])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	clock_utc ut;
	clock_utc_from_epoch((long long)ts.tv_sec, &ut);
	snprintf(id, TX_ID_MAX, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x%02x", ut.year, ut.month, ut.day, ut.hour,
		 ut.minute, ut.second, rnd[0], rnd[1], rnd[2], rnd[3]);
}

/* Publish a locked, prepared directory (a spare or a new one, under a dot
 * name that recovery leaves alone) under a fresh transaction id. It is
 * locked before it gets a name recovery looks at, so no other txbox can
 * take it for the leftover of a dead one. */
static int publish(tx_state_dir *s, const char *from, tx *out, txbox_error *err)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		make_id(out->id, rnd);
		if (renameat2(s->txs_fd, from, s->txs_fd, out->id, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST || attempt == 7)
			return txbox_fail_errno(err, -errno, "naming transaction %s", out->id);
	}
	return txbox_fail(err, -EEXIST, "naming a transaction");
}

typedef struct keep_names {
	const char *a, *b, *c;
	const char *whiteout; /* also keep this name when it is a 0/0 whiteout */
} keep_names;

static bool keep_listed(int dirfd, const char *name, void *arg)
{
	const keep_names *k = arg;
	if ((k->a && !strcmp(name, k->a)) || (k->b && !strcmp(name, k->b)) || (k->c && !strcmp(name, k->c)))
		return true;
	if (k->whiteout && !strcmp(name, k->whiteout)) {
		struct stat st;
		return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0;
	}
	return false;
}

/* Move every entry of a spare but its skeleton (displaced/, stale/) into
 * stale/, which the transaction deletes while its command runs: unlinking
 * a file here waits for its inode's eviction (~0.3 ms each on ext4) on
 * the way to the command. What cannot be moved is removed. */
static const keep_names spare_skeleton = {"displaced", TX_STALE_NAME, TX_LOCK_NAME, NULL};

static int set_aside(int fd, txbox_error *err)
{
	if (fs_mkdir_private(fd, TX_STALE_NAME) < 0 && errno != EEXIST)
		return fs_empty_dir(fd, keep_listed, (void *)&spare_skeleton, err);
	_cleanup_close_ int sfd = openat(fd, TX_STALE_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int dupfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dupfd < 0)
		return txbox_fail_errno(err, -errno, "reading a spare transaction");
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return txbox_fail_errno(err, -errno, "reading a spare transaction");
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || keep_listed(fd, name, (void *)&spare_skeleton))
			continue;
		int r = 0;
		if ((sfd < 0 || renameat2(fd, name, sfd, name, RENAME_NOREPLACE) < 0) &&
		    (r = fs_remove_tree_at(fd, name, err)) < 0)
			return r;
	}
	return 0;
}

/* Call fn for each spare in tx/ until it returns true; returns how many
 * were seen. */
static int each_spare(tx_state_dir *s, bool (*fn)(tx_state_dir *s, const char *name, void *arg), void *arg)
{
	int dupfd = openat(s->txs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own readdir position */
	if (dupfd < 0)
		return -errno;
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return -errno;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, ".spare-", 7) == 0) {
			n++;
			if (fn && fn(s, de->d_name, arg))
				break;
		}
	return n;
}

/* A spare: the emptied directory of an earlier transaction (tx_recycle).
 * Taking one saves creating (and later deleting) five directories. */
static bool take_one(tx_state_dir *s, const char *name, void *arg)
{
	tx *out = arg;
	txbox_error e = TXBOX_ERROR_INIT;
	int fd = open_trusted(s->txs_fd, name, s->state_path, S_IFDIR, 0, &e);
	txbox_error_clear(&e);
	if (fd < 0)
		return false;
	int lock = txlock_try(fd, TX_LOCK_NAME, true, &e);
	txbox_error_clear(&e);
	if (lock < 0) { /* another txbox is taking it */
		close(fd);
		return false;
	}
	/* Still under that name (not taken and renamed before our lock)? */
	struct stat a, b;
	if (fstat(fd, &a) < 0 || fstatat(s->txs_fd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(lock);
		close(fd);
		return false;
	}
	/* Before it gets a name recovery reads: its old journal and state and
	 * anything else but the skeleton go (layer_create makes a new layer;
	 * the old one, stale/, is deleted while the command runs). */
	if (set_aside(fd, &e) < 0 ||
	    fs_empty_dir_at(fd, "displaced", NULL, NULL, &e) < 0 || publish(s, name, out, &e) < 0) {
		txbox_error_clear(&e);
		close(lock);
		close(fd);
		out->fd = -1;
		return false; /* left as a spare or removed by recovery */
	}
	out->fd = fd;
	out->lock_fd = lock;
	out->has_stale = faccessat(fd, TX_STALE_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	return true;
}

int tx_delete_stale(tx *t, txbox_error *err)
{
	if (t->fd < 0 || !t->has_stale)
		return 0;
	t->has_stale = false;
	return fs_remove_tree_at(t->fd, TX_STALE_NAME, err);
}

static bool take_spare(tx_state_dir *s, tx *out)
{
	if (s->spares_known) {
		for (unsigned i = 0; i < s->nspares && out->fd < 0; i++)
			take_one(s, s->spares[i], out);
		s->spares_known = false;
		return out->fd >= 0;
	}
	each_spare(s, take_one, out);
	return out->fd >= 0;
}

int tx_create(tx_state_dir *s, tx *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->fd = out->lock_fd = -1;
	out->top.upper_fd = out->top.work_fd = -1;
	if (!take_spare(s, out)) {
		char tmp[TX_ID_MAX + 8];
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
			return txbox_fail_errno(err, -errno, "getrandom");
		char id[TX_ID_MAX];
		make_id(id, rnd);
		snprintf(tmp, sizeof tmp, ".new-%s", id);
		if (fs_mkdir_private(s->txs_fd, tmp) < 0)
			return txbox_fail_errno(err, -errno, "creating a transaction directory");
		out->fd = openat(s->txs_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (out->fd < 0)
			return txbox_fail_errno(err, -errno, "opening a new transaction directory");
		out->lock_fd = txlock_try(out->fd, TX_LOCK_NAME, true, err);
		if (out->lock_fd < 0 || fs_mkdir_private(out->fd, "displaced") < 0) {
			int e = out->lock_fd < 0 ? out->lock_fd : -errno;
			fs_remove_tree_at(s->txs_fd, tmp, NULL);
			if (out->lock_fd < 0)
				return txbox_error_prefix(err, "preparing a new transaction directory");
			return txbox_fail_errno(err, e, "preparing a new transaction directory");
		}
		if (publish(s, tmp, out, err) < 0) {
			fs_remove_tree_at(s->txs_fd, tmp, NULL);
			return err ? err->code : -EEXIST;
		}
	}
	int r = record_tx_identity(s, out, err);
	return r < 0 ? r : tx_set_state(out, TX_RUNNING, err);
}

/* Everything of a transaction txbox reads back, checked before use; not
 * the layer's upper and work dirs: they are the command's (the upper root
 * takes the workspace root's owner and mode, and the command may change
 * them), used as what the command made, never as txbox's own records. */
static int check_tx_entries(tx_state_dir *s, tx *t, txbox_error *err)
{
	static const struct {
		const char *name;
		mode_t type;
	} entries[] = {
		{"state", S_IFREG},  {"journal", S_IFREG},  {"displaced", S_IFDIR},
		{"layers", S_IFDIR}, {"layers/0", S_IFDIR}, {"layers/0/root", S_IFREG},
		{IDENTITY_NAME, S_IFREG},
	};
	char where[PATH_MAX];
	snprintf(where, sizeof where, "%s/tx/%s", s->state_path, t->id);
	for (size_t i = 0; i < ARRAY_SIZE(entries); i++) {
		int r = check_trusted(t->fd, entries[i].name, where, entries[i].type, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int tx_open(tx_state_dir *s, const char *id, tx *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->fd = out->lock_fd = -1;
	out->top.upper_fd = out->top.work_fd = -1;
	if (!valid_id(id)) {
		char esc[512];
		escape_name(id, esc, sizeof esc);
		return txbox_fail(err, -EINVAL, "not a transaction id: %s", esc);
	}
	snprintf(out->id, sizeof out->id, "%s", id);
	char where[PATH_MAX];
	snprintf(where, sizeof where, "%s/tx", s->state_path);
	int fd = open_trusted(s->txs_fd, id, where, S_IFDIR, 0, err);
	if (fd == -ENOENT)
		return txbox_fail(err, -ENOENT, "no open transaction %s in %s", id, s->ws_path);
	if (fd < 0)
		return fd;
	out->fd = fd;
	txbox_error e = TXBOX_ERROR_INIT;
	struct stat a, b;
	out->lock_fd = txlock_try(fd, TX_LOCK_NAME, false, &e);
	/* No lock file: a transaction being removed (renamed to .trash- first,
	 * its lock file unlinked last: making one there would stop the removal)
	 * or one an older txbox made without, still under its name. */
	if (out->lock_fd == -ENOENT && fstat(fd, &a) == 0 &&
	    fstatat(s->txs_fd, id, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		out->lock_fd = txlock_try(fd, TX_LOCK_NAME, true, &e);
	if (out->lock_fd == -ENOENT)
		return txbox_fail(err, -ENOENT, "no open transaction %s in %s (it was just finished)", id, s->ws_path);
	if (out->lock_fd == -EBUSY) {
		txbox_error_move(err, &e);
		return txbox_error_prefix(err, "transaction %s is in use", id);
	}
	if (out->lock_fd < 0) {
		txbox_error_move(err, &e);
		return txbox_error_prefix(err, "opening transaction %s", id);
	}
	/* Its owner may have renamed it (to a spare) between our open and our
	 * lock; a spare is not this transaction. */
	if (fstat(fd, &a) < 0 || fstatat(s->txs_fd, id, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return txbox_fail(err, -ENOENT, "no open transaction %s in %s (it was just finished)", id, s->ws_path);
	int r = check_tx_entries(s, out, err);
	if (r < 0 || (r = check_tx_identity(s, out, err)) < 0)
		return r;
	out->top.upper_fd = openat(out->fd, "layers/0/upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	out->top.work_fd = openat(out->fd, "layers/0/work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return 0;
}

void tx_close(tx *t)
{
	layer_close(&t->top);
	if (t->fd >= 0)
		close(t->fd);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	t->fd = t->lock_fd = -1;
}

int tx_set_state(tx *t, tx_status st, txbox_error *err)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, "%s %d\n", tx_status_name(st), (int)getpid());
	/* "running" need not be durable: after a crash a missing or stale state
	 * reads as running, and running transactions are rolled back. It is
	 * written to a new file (never through an existing one). */
	if (st == TX_RUNNING) {
		if (unlinkat(t->fd, "state", 0) < 0 && errno != ENOENT)
			return txbox_fail_errno(err, -errno, "replacing the state of %s", t->id);
		_cleanup_close_ int fd = openat(t->fd, "state", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			return txbox_fail_errno(err, -errno, "writing the state of %s", t->id);
		return 0;
	}
	/* A held layer may be committed after a crash: its data is durable
	 * before it is reported held (the overlay is mounted volatile, so its
	 * unmount syncs nothing). */
	if (st == TX_HELD && syncfs(t->fd) < 0)
		return txbox_fail_errno(err, -errno, "syncing the held layer of %s", t->id);
	return fs_write_file_atomic(t->fd, "state", buf, (size_t)n, 0600, err);
}

#define STATE_FILE_MAX 64

/* "<state> <pid>\n", the state one of the table's names. */
static bool parse_state(const char *buf, size_t len, tx_status *out)
{
	const char *sp = memchr(buf, ' ', len);
	if (!sp || len < 3 || buf[len - 1] != '\n')
		return false;
	size_t digits = (size_t)(buf + len - 1 - (sp + 1));
	if (digits == 0 || digits > 10)
		return false;
	for (const char *c = sp + 1; c < buf + len - 1; c++)
		if (*c < '0' || *c > '9')
			return false;
	for (size_t i = 0; i < ARRAY_SIZE(status_names); i++)
		if (strlen(status_names[i]) == (size_t)(sp - buf) && !memcmp(buf, status_names[i], (size_t)(sp - buf))) {
			*out = (tx_status)i;
			return true;
		}
	return false;
}

int tx_get_state(const tx_state_dir *s, tx *t, tx_status *out, txbox_error *err)
{
	*out = TX_RUNNING;
	char where[PATH_MAX];
	snprintf(where, sizeof where, "%s/tx/%s", s->state_path, t->id);
	_cleanup_close_ int fd = open_trusted(t->fd, "state", where, S_IFREG, 0, err);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	char buf[STATE_FILE_MAX + 1];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return txbox_fail_errno(err, -errno, "reading %s/state", where);
	if (n == 0)
		return 0; /* created, not yet written: running */
	if (n > STATE_FILE_MAX || !parse_state(buf, (size_t)n, out))
		return refuse(err, where, "state", "it is not \"<running|held|applying|committed> <pid>\"");
	return 0;
}

int tx_remove(tx_state_dir *s, tx *t, txbox_error *err)
{
	/* Rename out of tx/ first so a half-removed transaction is never taken
	 * for a live one, then delete. */
	char trash[TX_ID_MAX + 16];
	snprintf(trash, sizeof trash, ".trash-%s", t->id);
	int r;
	layer_close(&t->top);
	trace_mark("remove: layer closed");
	const char *name = renameat(s->txs_fd, t->id, s->txs_fd, trash) == 0 ? trash : t->id;
	static const keep_names lock_only = {TX_LOCK_NAME, NULL, NULL, NULL};
	/* the lock file goes last, so recovery never deletes it meanwhile */
	r = t->fd >= 0 ? fs_empty_dir(t->fd, keep_listed, (void *)&lock_only, err) : 0;
	/* A recovery that opened the directory before its rename may still
	 * make a lock file in it (tx_open): the tree is emptied again then. */
	for (int attempt = 0; r == 0; attempt++) {
		r = fs_remove_tree_at(s->txs_fd, name, err);
		if (r != -ENOTEMPTY || attempt == 3)
			break;
		txbox_error_clear(err);
		r = 0;
	}
	trace_mark("remove: removed");
	return r;
}

/* ---- recycling ------------------------------------------------------- */

/* Park the transaction's directory as a spare. What must not outlive the
 * transaction goes now: the originals a commit displaced, whatever the
 * command wrote that was not published, and overlay index entries (extra
 * links to committed files). The emptied layer is renamed aside (stale/)
 * and deleted by the transaction that takes the spare, while its command
 * runs; journal and state files (right after a commit's fsyncs their
 * unlinks wait for the filesystem journal) and stray files are removed by
 * the taker before the spare gets a transaction's name (take_one). A
 * spare's name is never read by recovery. */
static int recycle(tx_state_dir *s, tx *t, txbox_error *err)
{
	const keep_names upper = {NULL, NULL, NULL, s->state_inside ? TX_STATE_DIR_NAME : NULL};
	int r;
	if (t->top.upper_fd < 0 || t->top.work_fd < 0)
		return txbox_fail(err, -EBADF, "the layer is not open");
	trace_mark("recycle: start");
	struct stat st;
	if ((r = fs_empty_dir_at(t->fd, "displaced", NULL, NULL, err)) < 0 ||
	    (r = fs_empty_dir(t->top.upper_fd, keep_listed, (void *)&upper, err)) < 0 ||
	    (fstatat(t->top.work_fd, "index", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     (r = fs_empty_dir_at(t->top.work_fd, "index", NULL, NULL, err)) < 0))
		return r;
	/* xattrs the command set on the workspace root and did not publish
	 * (overlay's own are the kernel's; the layer goes with stale/) */
	char fdp[32], path[40];
	fs_fd_path(t->top.upper_fd, fdp);
	snprintf(path, sizeof path, "%s/.", fdp);
	_cleanup_free_ char *names = NULL;
	size_t len = 0;
	if ((r = fs_xattr_list(path, &names, &len)) < 0)
		return txbox_fail_errno(err, r, "listing the upper root's xattrs");
	for (size_t i = 0; i < len; i += strlen(names + i) + 1)
		if (!fs_xattr_is_overlay_private(names + i) && strncmp(names + i, "security.", 9) != 0 &&
		    fremovexattr(t->top.upper_fd, names + i) < 0 && errno != ENODATA)
			return txbox_fail_errno(err, -errno, "removing the xattr %s from the upper root", names + i);
	/* A spare belongs to no workspace until taken: the record goes with
	 * the layer (deleted while the next command runs, see set_aside). */
	_cleanup_close_ int lfd = openat(t->fd, "layers", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if ((lfd < 0 || renameat2(t->fd, IDENTITY_NAME, lfd, IDENTITY_NAME, RENAME_NOREPLACE) < 0) &&
	    unlinkat(t->fd, IDENTITY_NAME, 0) < 0 && errno != ENOENT)
		return txbox_fail_errno(err, -errno, "removing the workspace record of %s", t->id);
	trace_mark("recycle: emptied");
	int spares = each_spare(s, NULL, NULL);
	if (spares < 0 || spares >= TX_SPARES_MAX)
		return txbox_fail(err, -ENOSPC, "enough spares");
	/* The emptied layer is set aside, not reused (layer_create makes new
	 * dirs); the next transaction deletes it while its command runs. An
	 * older one still there (its deletion failed) goes first. */
	if (renameat2(t->fd, "layers", t->fd, TX_STALE_NAME, RENAME_NOREPLACE) < 0 &&
	    (errno != EEXIST || fs_remove_tree_at(t->fd, TX_STALE_NAME, err) < 0 ||
	     renameat2(t->fd, "layers", t->fd, TX_STALE_NAME, RENAME_NOREPLACE) < 0))
		return txbox_fail_errno(err, -errno, "setting the layer of %s aside", t->id);
	char name[TX_ID_MAX + 8];
	snprintf(name, sizeof name, ".spare-%s", t->id);
	if (renameat2(s->txs_fd, t->id, s->txs_fd, name, RENAME_NOREPLACE) < 0)
		return txbox_fail_errno(err, -errno, "parking transaction %s", t->id);
	return 0;
}

int tx_recycle(tx_state_dir *s, tx *t, txbox_error *err)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int r = t->fd >= 0 ? recycle(s, t, &e) : -EBADF;
	txbox_error_clear(&e);
	if (r == 0) {
		layer_close(&t->top);
		return 0;
	}
	return tx_remove(s, t, err);
}

/* What an entry of tx/ is, by its name: txbox makes no other names. */
typedef enum entry_kind { ENTRY_TX, ENTRY_SPARE, ENTRY_NEW, ENTRY_TRASH, ENTRY_BAD } entry_kind;

static entry_kind entry_kind_of(const char *name)
{
	static const struct {
		const char *prefix;
		entry_kind kind;
	} kinds[] = {{".spare-", ENTRY_SPARE}, {".new-", ENTRY_NEW}, {".trash-", ENTRY_TRASH}, {"", ENTRY_TX}};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		size_t n = strlen(kinds[i].prefix);
		if (!strncmp(name, kinds[i].prefix, n))
			return valid_id(name + n) ? kinds[i].kind : ENTRY_BAD;
	}
	return ENTRY_BAD;
}

/* A .new- (a txbox died creating it) or .trash- (a txbox died deleting
 * it) directory nobody holds is deleted once it is a minute old. Young
 * ones are left alone whatever their lock says: a creator makes its lock
 * file before it locks it, and a deleter removes the lock file last. */
static void remove_abandoned(tx_state_dir *s, const char *name)
{
	txbox_error e = TXBOX_ERROR_INIT;
	_cleanup_close_ int fd = open_trusted(s->txs_fd, name, s->state_path, S_IFDIR, 0, &e);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		txbox_error_clear(&e);
		return;
	}
	if (time(NULL) - st.st_mtime <= 60)
		return;
	_cleanup_close_ int lock = txlock_try(fd, TX_LOCK_NAME, false, &e);
	if (lock >= 0 || lock == -ENOENT)
		fs_remove_tree_at(s->txs_fd, name, &e);
	txbox_error_clear(&e);
}

/* Roll back or finish one transaction whose owner died: 1 when done, 0
 * when it is live or held. */
static int recover_tx(tx_state_dir *s, const char *name, txbox_error *err)
{
	tx t;
	txbox_error e = TXBOX_ERROR_INIT;
	int r = tx_open(s, name, &t, &e);
	if (r == -EBUSY || r == -ENOENT) { /* a live txbox owns it, or took it meanwhile */
		txbox_error_clear(&e);
		tx_close(&t);
		return 0;
	}
	tx_status st = TX_RUNNING;
	if (r == 0)
		r = tx_get_state(s, &t, &st, &e);
	if (r < 0) {
		txbox_error_move(err, &e);
		tx_close(&t);
		return r;
	}
	/* A journal without the commit point: a commit was under way, whatever
	 * the state said before it (held included), and is reversed. */
	bool journal = faccessat(t.fd, "journal", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	if (st == TX_HELD && !journal) { /* open on purpose, waiting for commit/rollback */
		tx_close(&t);
		return 0;
	}
	if (st != TX_COMMITTED && journal)
		r = tx_reverse_journal(s, &t, err);
	else
		r = tx_remove(s, &t, err);
	tx_close(&t);
	return r < 0 ? r : 1;
}

int tx_recover_stale(tx_state_dir *s, txbox_error *err)
{
	int dupfd = openat(s->txs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset: never share a readdir position */
	if (dupfd < 0)
		return txbox_fail_errno(err, -errno, "dup");
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return txbox_fail_errno(err, -errno, "reading the transactions dir");
	}
	char where[PATH_MAX];
	snprintf(where, sizeof where, "%s/tx", s->state_path);
	int count = 0;
	struct dirent *de;
	s->nspares = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		entry_kind k = entry_kind_of(de->d_name);
		if (k == ENTRY_BAD)
			return refuse(err, where, de->d_name, "txbox never makes such a name");
		int r = check_trusted(s->txs_fd, de->d_name, where, S_IFDIR, err);
		if (r < 0)
			return r;
		switch (k) {
		case ENTRY_SPARE:
			/* entry_kind_of admits only the names txbox makes, which fit */
			if (s->nspares < ARRAY_SIZE(s->spares) && strlen(de->d_name) < sizeof s->spares[0])
				memcpy(s->spares[s->nspares++], de->d_name, strlen(de->d_name) + 1);
			break;
		case ENTRY_NEW:
		case ENTRY_TRASH:
			remove_abandoned(s, de->d_name);
			break;
		default:
			if ((r = recover_tx(s, de->d_name, err)) < 0)
				return r;
			count += r;
		}
	}
	s->spares_known = true;
	return count;
}
