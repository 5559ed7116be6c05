/* plan: compute what committing a layer means, without touching the
 * workspace. Walks the upper layer against the workspace:
 *
 *   whiteout (0/0 char device, or overlay.whiteout xattr)  → DELETE
 *   directory, not opaque, over a workspace directory      → recurse, then
 *                                                            META if its mode,
 *                                                            owner, times or
 *                                                            xattrs differ
 *   directory opaque, or over nothing / a non-directory    → PUT (whole tree)
 *   anything else                                          → PUT, or META
 *        when only metadata changed (same size, mtime and bytes), or nothing
 *        when it is identical (a copy-up without change)
 *
 * Ops come out in walk order with a directory's META after its children,
 * so its times are set after the renames beneath it.
 *
 * Overlay metadata (whiteout, opaque, origin) is read only in the
 * namespace the overlay was mounted with (plan_opts.userxattr); the other
 * namespace is the command's data. A changed file of an existing hard-link
 * group is published as a new inode under each of its names in the
 * workspace (PUT + LINKs); its inode is changed in place (META) only when
 * the census (census.c) proved every name of it is inside the workspace —
 * otherwise the change is a new inode and the result says so. Holes are
 * never read, and the deadline is checked on every entry and every chunk
 * read. */
#include "snapshot/snapshot.h"

#include "snapshot/census.h"
#include "snapshot/prepare.h"
#include "util/clock.h"
#include "util/cleanup.h"
#include "util/fsutil.h"
#include "util/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int plan_push(plan *p, plan_op *op, txbox_error *err)
{
	if (p->n == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 64;
		plan_op *n = realloc(p->ops, nc * sizeof *n);
		if (!n) {
			free(op->path);
			return txbox_fail(err, -ENOMEM, "out of memory");
		}
		p->ops = n;
		p->cap = nc;
	}
	p->ops[p->n++] = *op;
	return 0;
}

void plan_free(plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->ops[i].path);
		free(p->ops[i].link_target);
		if (p->ops[i].link_fd > 0)
			close(p->ops[i].link_fd);
	}
	free(p->ops);
	p->ops = NULL;
	p->n = p->cap = 0;
	for (size_t i = 0; i < p->n_also; i++)
		free(p->also_changed[i]);
	free(p->also_changed);
	free(p->also_kind);
	p->also_changed = NULL;
	p->also_kind = NULL;
	p->n_also = 0;
}

/* Where xattrs are read from: a path (never following a final symlink),
 * or, path NULL, an open file (a /proc/self/fd path would name the magic
 * link itself). */
typedef struct xsrc {
	const char *path;
	int fd;
} xsrc;

static int xsrc_list(xsrc s, char **names, size_t *n)
{
	return s.path ? fs_xattr_list(s.path, names, n) : fs_xattr_list_fd(s.fd, names, n);
}

static ssize_t xsrc_get(xsrc s, const char *k, char **v)
{
	return s.path ? fs_xattr_get(s.path, k, v) : fs_xattr_get_fd(s.fd, k, v);
}

/* Every non-overlay xattr of a is on b with the same value (any sizes;
 * the values are the sandboxed command's). An unreadable list counts as
 * different, so the change is published rather than lost. A side whose
 * security.capability preparing will strip (drop_a, drop_b) is compared
 * as it will be published, without it. */
static bool xsrc_subset_of(xsrc a, xsrc b, bool userxattr, bool drop_a, bool drop_b, bool skip_acl)
{
	_cleanup_free_ char *names = NULL;
	size_t n;
	if (xsrc_list(a, &names, &n) < 0)
		return false;
	for (size_t off = 0; off < n; off += strlen(names + off) + 1) {
		const char *k = names + off;
		bool cap = !strcmp(k, "security.capability");
		if (snapshot_xattr_private(k, userxattr) || (cap && drop_a) || (skip_acl && snapshot_xattr_is_acl(k)))
			continue;
		if (cap && drop_b)
			return false;
		_cleanup_free_ char *va = NULL, *vb = NULL;
		ssize_t la = xsrc_get(a, k, &va);
		ssize_t lb = xsrc_get(b, k, &vb);
		if (la < 0 || la != lb || memcmp(va, vb, (size_t)la) != 0)
			return false;
	}
	return true;
}

static bool xattrs_subset_of(const char *a, const char *b, bool userxattr, bool drop_a, bool drop_b, bool skip_acl)
{
	return xsrc_subset_of((xsrc){.path = a}, (xsrc){.path = b}, userxattr, drop_a, drop_b, skip_acl);
}

static bool xattrs_subset(const char *a, const char *b, bool userxattr, bool drop_a, bool drop_b)
{
	return xattrs_subset_of(a, b, userxattr, drop_a, drop_b, false);
}

/* Do the ACLs of a and b differ (one has one the other lacks, or another
 * value)? */
static bool acls_differ(const char *a, const char *b)
{
	static const char *const names[] = {"system.posix_acl_access", "system.posix_acl_default"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		_cleanup_free_ char *va = NULL, *vb = NULL;
		ssize_t la = fs_xattr_get(a, names[i], &va);
		ssize_t lb = fs_xattr_get(b, names[i], &vb);
		if (la != lb || (la > 0 && memcmp(va, vb, (size_t)la) != 0))
			return true;
	}
	return false;
}

/* The layer's entry ufd/un (as it will be published) against the
 * workspace's wfd/wn. */
static bool xattrs_equal(const plan_opts *o, int ufd, const char *un, int wfd, const char *wn)
{
	char a[PATH_MAX], b[PATH_MAX];
	prepare_xattr_path(ufd, un, a, sizeof a);
	prepare_xattr_path(wfd, wn, b, sizeof b);
	return xattrs_subset(a, b, o->userxattr, o->strip_setuid, false) &&
	       xattrs_subset(b, a, o->userxattr, false, o->strip_setuid);
}

/* The mode a layer entry will be published with: plan_prepare strips the
 * setuid and setgid bits (prepare_entry) after the plan is judged, and the
 * plan already says what will be published. */
static void as_published(const plan_opts *o, struct stat *ust)
{
	if (o->strip_setuid && (S_ISREG(ust->st_mode) || S_ISDIR(ust->st_mode)))
		ust->st_mode &= ~(mode_t)(S_ISUID | S_ISGID);
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool meta_equal(const struct stat *u, const struct stat *w)
{
	return (u->st_mode & 07777) == (w->st_mode & 07777) && u->st_uid == w->st_uid && u->st_gid == w->st_gid;
}

static int past_deadline(uint64_t deadline, txbox_error *err, const char *rel)
{
	if (deadline && clock_now_ns() >= deadline)
		return txbox_fail(err, -ETIMEDOUT,
				  "the time limit passed while planning the commit (at %s); nothing was published", rel);
	return 0;
}

/* Where the data after off starts (the file size when none), and where it
 * ends. A filesystem without SEEK_DATA has data everywhere. */
static off_t data_from(int fd, off_t off, off_t size, off_t *end)
{
	off_t d = lseek(fd, off, SEEK_DATA);
	if (d < 0)
		d = errno == ENXIO ? size : off;
	off_t h = d < size ? lseek(fd, d, SEEK_HOLE) : size;
	*end = h < 0 ? size : h;
	return d;
}

/* Same bytes in [from, to)? pread, so the fds' offsets do not matter. */
static int range_equal(int a, int b, off_t from, off_t to, uint64_t deadline, const char *rel, txbox_error *err)
{
	static char ba[1 << 16], bb[1 << 16];
	while (from < to) {
		int r = past_deadline(deadline, err, rel);
		if (r < 0)
			return r;
		size_t want = (size_t)(to - from) < sizeof ba ? (size_t)(to - from) : sizeof ba;
		ssize_t x = pread(a, ba, want, from);
		ssize_t y = x > 0 ? pread(b, bb, (size_t)x, from) : -1;
		if (x <= 0 || y != x || memcmp(ba, bb, (size_t)x) != 0)
			return 0;
		from += x;
	}
	return 1;
}

/* Same content? Both files have size bytes. Only ranges where either file
 * has data are read — a hole reads as zeros — so the cost is what was
 * written, not the apparent size (a 4 TiB sparse file costs nothing).
 * 1 same, 0 different, <0 error (the deadline). */
static int fds_equal(int a, int b, off_t size, uint64_t deadline, const char *rel, txbox_error *err)
{
	off_t pos = 0;
	while (pos < size) {
		off_t ea, eb;
		off_t da = data_from(a, pos, size, &ea), db = data_from(b, pos, size, &eb);
		off_t start = da < db ? da : db;
		if (start >= size)
			return 1;
		/* [start, end): data in one or both; the other is a hole up to its next data */
		off_t end_a = da > start ? da : ea, end_b = db > start ? db : eb;
		off_t end = end_a < end_b ? end_a : end_b;
		if (end <= start)
			end = size;
		int r = range_equal(a, b, start, end, deadline, rel, err);
		if (r <= 0)
			return r;
		pos = end;
	}
	return 1;
}

static int contents_equal(int d1, const char *n1, int d2, const char *n2, const char *rel, uint64_t deadline,
			  txbox_error *err)
{
	/* Never waits: a FIFO swapped in opens at once (and is no regular
	 * file), a file under a lease fails with EWOULDBLOCK; a mount point is
	 * refused. Unreadable now: treat as different (the rename path is
	 * always correct and needs no open). */
	_cleanup_close_ int a = fs_open_entry(d1, n1, O_RDONLY, 0);
	_cleanup_close_ int b = fs_open_entry(d2, n2, O_RDONLY, 0);
	struct stat sa, sb;
	if (a < 0 || b < 0 || fstat(a, &sa) < 0 || fstat(b, &sb) < 0 || !S_ISREG(sa.st_mode) ||
	    !S_ISREG(sb.st_mode) || sa.st_size != sb.st_size)
		return 0;
	return fds_equal(a, b, sa.st_size, deadline, rel, err);
}

static bool links_equal(int d1, const char *n1, int d2, const char *n2)
{
	char a[PATH_MAX + 1], b[PATH_MAX + 1];
	ssize_t la = readlinkat(d1, n1, a, sizeof a);
	ssize_t lb = readlinkat(d2, n2, b, sizeof b);
	return la >= 0 && la == lb && memcmp(a, b, (size_t)la) == 0;
}

/* overlay.origin of an upper entry, as a file handle of the lower inode.
 * Overlay (with index=on) records: version, magic 0xfb, len, flags, type,
 * uuid[16], then the handle bytes. Read only in the overlay's namespace:
 * in the other one it is whatever the command wrote. */
typedef union origin_handle {
	struct file_handle fh;
	unsigned char buf[sizeof(struct file_handle) + 128];
} origin_handle;

static bool origin_read(int ufd, const char *uname, bool userxattr, origin_handle *h)
{
	unsigned char fb[256];
	ssize_t n = prepare_ovl_getxattr(ufd, uname, "origin", userxattr, fb, sizeof fb);
	if (n < 21 || fb[1] != 0xfb || n - 21 > 128)
		return false;
	h->fh.handle_bytes = (unsigned)(n - 21);
	h->fh.handle_type = fb[4];
	memcpy(h->fh.f_handle, fb + 21, (size_t)(n - 21));
	return true;
}

/* Is the upper file a copy-up of the workspace file itself? */
static bool origin_is(int ufd, const char *uname, bool userxattr, int wfd, const char *wname)
{
	origin_handle o, w;
	if (!origin_read(ufd, uname, userxattr, &o))
		return false;
	w.fh.handle_bytes = 128;
	int mnt;
	if (name_to_handle_at(wfd, wname, &w.fh, &mnt, 0) < 0)
		return false;
	return o.fh.handle_type == w.fh.handle_type && o.fh.handle_bytes == w.fh.handle_bytes &&
	       memcmp(o.fh.f_handle, w.fh.f_handle, w.fh.handle_bytes) == 0;
}

static char *join(const char *rel, const char *name)
{
	char *s = NULL;
	if (!rel[0])
		return strdup(name);
	if (asprintf(&s, "%s/%s", rel, name) < 0)
		return NULL;
	return s;
}

typedef struct walk {
	plan *p;
	const plan_opts *o;
	txbox_error *err;
	int ws_root, upper_root;
	bool *group; /* per op: a changed member of an existing hard-link group */
	size_t group_cap;
	/* PUT ops of files whose origin (in the overlay's namespace) is another
	 * workspace file: a renamed or linked member of a hard-link group */
	struct moved {
		size_t op;
		origin_handle h;
		/* the member was changed too (content: not only metadata); the
		 * group's inode as the census found it */
		bool changed, content;
		struct stat old_st;
	} *moved;
	size_t nmoved;
} walk;

static int walk_dir(walk *w, int ufd, int wfd, const char *rel, unsigned depth);
static int walk_file(walk *w, int ufd, int wfd, const char *name, char *owned, const struct stat *ust_in,
		     const struct stat *wst_in, bool group_member);

static const char NOTE_SPLIT[] = "the file has hard links outside the workspace (or not all of its links could be "
				 "found): published as a new inode, the other links keep the old file";
static const char NOTE_NEW_INODE[] = "published as a new inode: the file's other hard links keep the old file";
static const char NOTE_ROOT[] =
	"owner, mode and ACLs of the workspace root are never changed by a commit: not published";

static int add_op(walk *w, plan_kind k, char *path, bool existed, bool report, txbox_change_kind ch,
		  const struct stat *ust, const struct stat *wst)
{
	plan_op op;
	memset(&op, 0, sizeof op);
	op.kind = k;
	op.path = path;
	op.link_fd = -1;
	op.existed = existed;
	op.report = report;
	op.change = ch;
	if (ust) {
		op.new_st = *ust;
		op.new_ino = ust->st_ino;
	}
	if (wst) {
		op.old_st = *wst;
		op.old_ino = wst->st_ino;
	}
	if (k == PLAN_META && ust && wst)
		op.owner_mode = !meta_equal(ust, wst);
	return plan_push(w->p, &op, w->err);
}

/* An op on a regular file whose workspace inode has other names: the
 * census decides how it is published (group_ops). */
static int add_group_op(walk *w, plan_kind k, char *path, bool report, txbox_change_kind ch, const struct stat *ust,
			const struct stat *wst)
{
	int r = add_op(w, k, path, true, report, ch, ust, wst);
	if (r < 0)
		return r;
	if (w->group_cap < w->p->cap) {
		bool *g = realloc(w->group, w->p->cap * sizeof *g);
		if (!g)
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		memset(g + w->group_cap, 0, (w->p->cap - w->group_cap) * sizeof *g);
		w->group = g;
		w->group_cap = w->p->cap;
	}
	w->group[w->p->n - 1] = true;
	return 0;
}

static bool is_group(const walk *w, size_t i)
{
	return i < w->group_cap && w->group[i];
}

static int walk_merged_dir(walk *w, int ufd, int wfd, const char *name, char *path, struct stat *ust,
			   const struct stat *wst, unsigned depth)
{
	_cleanup_free_ char *owned = path;
	_cleanup_close_ int cu = fs_open_entry(ufd, name, O_RDONLY | O_DIRECTORY, 0);
	_cleanup_close_ int cw = fs_open_entry(wfd, name, O_RDONLY | O_DIRECTORY, 0);
	if (cu == -EXDEV || cw == -EXDEV)
		return txbox_fail(w->err, -EXDEV, "%s is a mount point: a commit never changes another filesystem",
				  path);
	if (cu < 0 || cw < 0)
		return txbox_fail_errno(w->err, cu < 0 ? cu : cw, "opening directory %s", path);
	int r = walk_dir(w, cu, cw, path, depth + 1);
	if (r < 0)
		return r;
	as_published(w->o, ust);
	bool differs = !meta_equal(ust, wst) || !xattrs_equal(w->o, ufd, name, wfd, name);
	/* Times of a merged directory are always carried over (they moved
	 * with the changes beneath it); only real metadata is reported. */
	return add_op(w, PLAN_META, steal_ptr(owned), true, differs, TXBOX_CHANGE_METADATA, ust, wst);
}

/* Same content and metadata as the workspace entry? 1 yes, 0 no, <0 error. */
static int same_content(walk *w, int ufd, int wfd, const char *name, const struct stat *ust, const struct stat *wst,
			const char *rel, bool need_mtime)
{
	if (S_ISREG(ust->st_mode)) {
		if (ust->st_size != wst->st_size || (need_mtime && !same_time(ust->st_mtim, wst->st_mtim)))
			return 0;
		return contents_equal(ufd, name, wfd, name, rel, w->o->deadline_ns, w->err);
	}
	if (S_ISLNK(ust->st_mode))
		return links_equal(ufd, name, wfd, name);
	if (S_ISFIFO(ust->st_mode))
		return same_time(ust->st_mtim, wst->st_mtim);
	return 0;
}

/* The file of an existing hard-link group, changed through this name:
 * natively every name sees the change (group_ops publishes it). */
static int walk_group_member(walk *w, int ufd, int wfd, const char *name, char *path, const struct stat *ust,
			     const struct stat *wst)
{
	_cleanup_free_ char *owned = path;
	int same = same_content(w, ufd, wfd, name, ust, wst, path, false);
	if (same < 0)
		return same;
	if (same && meta_equal(ust, wst) && xattrs_equal(w->o, ufd, name, wfd, name) &&
	    same_time(ust->st_mtim, wst->st_mtim))
		/* unchanged, but names linked to it in the transaction find it here */
		return ust->st_nlink > 1
			       ? add_op(w, PLAN_META, steal_ptr(owned), true, false, TXBOX_CHANGE_METADATA, ust, wst)
			       : 0;
	return add_group_op(w, same ? PLAN_META : PLAN_PUT, steal_ptr(owned), true,
			    same ? TXBOX_CHANGE_METADATA : TXBOX_CHANGE_MODIFIED, ust, wst);
}

static int walk_entry(walk *w, int ufd, int wfd, const char *name, const char *rel, unsigned depth)
{
	int r = past_deadline(w->o->deadline_ns, w->err, rel);
	if (r < 0)
		return r;
	struct stat ust, wst;
	if (fstatat(ufd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
		return txbox_fail_errno(w->err, -errno, "stat of layer entry %s", rel);
	bool have_w = wfd >= 0 && fstatat(wfd, name, &wst, AT_SYMLINK_NOFOLLOW) == 0;
	if (wfd >= 0 && !have_w && errno != ENOENT)
		return txbox_fail_errno(w->err, -errno, "stat of workspace entry %s", rel);
	const char *own = prepare_reserved(name, w->o->reserved_name, w->o->state_mark);
	if (own)
		return txbox_fail(w->err, -EPERM,
				  "%s: the command created, changed or removed an entry named %s, %s; such entries "
				  "are never committed",
				  rel, name, own);
	if (have_w && S_ISDIR(wst.st_mode) && fs_is_state_dir(wfd, name, w->o->state_mark))
		return txbox_fail(w->err, -EPERM,
				  "%s: the command changed the state directory of another txbox workspace "
				  "(it holds %s); such changes are never committed",
				  rel, w->o->state_mark);
	_cleanup_free_ char *path = strdup(rel);
	if (!path)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	bool ux = w->o->userxattr;

	if (prepare_is_whiteout(ufd, name, &ust, ux)) {
		if (!have_w)
			return 0;
		return add_op(w, PLAN_DELETE, steal_ptr(path), true, true, TXBOX_CHANGE_DELETED, &ust, &wst);
	}
	if (S_ISDIR(ust.st_mode) && have_w && S_ISDIR(wst.st_mode) && !prepare_is_opaque(ufd, name, ux))
		return walk_merged_dir(w, ufd, wfd, name, steal_ptr(path), &ust, &wst, depth);

	/* Before prepare strips overlay xattrs: is this a copy-up of the
	 * workspace file itself (which is part of a hard-link group)? */
	bool group_member = S_ISREG(ust.st_mode) && have_w && S_ISREG(wst.st_mode) && wst.st_nlink > 1 &&
			    origin_is(ufd, name, ux, wfd, name);
	struct moved mv = {.op = w->p->n};
	bool moved = S_ISREG(ust.st_mode) && !group_member && origin_read(ufd, name, ux, &mv.h);
	as_published(w->o, &ust);
	r = walk_file(w, ufd, wfd, name, steal_ptr(path), &ust, have_w ? &wst : NULL, group_member);
	if (r == 0 && moved && w->p->n == mv.op + 1 && w->p->ops[mv.op].kind == PLAN_PUT) {
		struct moved *n = realloc(w->moved, (w->nmoved + 1) * sizeof *n);
		if (!n)
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		w->moved = n;
		w->moved[w->nmoved++] = mv;
	}
	return r;
}

/* A file of the layer (not a whiteout, not a merged directory). */
static int walk_file(walk *w, int ufd, int wfd, const char *name, char *owned, const struct stat *ust_in,
		     const struct stat *wst_in, bool group_member)
{
	_cleanup_free_ char *path = owned;
	const char *rel = path;
	struct stat ust = *ust_in, wst;
	bool have_w = wst_in != NULL;
	if (have_w)
		wst = *wst_in;
	int r;
	if (!have_w)
		return add_op(w, PLAN_PUT, steal_ptr(path), false, true, TXBOX_CHANGE_ADDED, &ust, NULL);
	if ((ust.st_mode & S_IFMT) != (wst.st_mode & S_IFMT))
		return add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_TYPE_CHANGED, &ust, &wst);
	if (group_member)
		return walk_group_member(w, ufd, wfd, name, steal_ptr(path), &ust, &wst);
	if (S_ISREG(ust.st_mode) && ust.st_nlink > 1) /* hard-linked inside the transaction: publish the inode itself */
		return add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_MODIFIED, &ust, &wst);
	int same = same_content(w, ufd, wfd, name, &ust, &wst, rel, true);
	if (same < 0)
		return same;
	if (!same) {
		r = add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_MODIFIED, &ust, &wst);
		if (r == 0 && S_ISREG(wst.st_mode) && wst.st_nlink > 1) /* not known as a copy-up of it */
			w->p->ops[w->p->n - 1].note = NOTE_NEW_INODE;
		return r;
	}
	if (meta_equal(&ust, &wst) && xattrs_equal(w->o, ufd, name, wfd, name) && same_time(ust.st_mtim, wst.st_mtim))
		return 0; /* copied up, never changed */
	/* The inode has other names: the census decides (it counts regular
	 * files only, so another type with other names becomes a new inode:
	 * `cp -al` links symlinks too, and `chown -h` must not reach the
	 * tree it was copied from). */
	if (wst.st_nlink > 1)
		return add_group_op(w, PLAN_META, steal_ptr(path), true, TXBOX_CHANGE_METADATA, &ust, &wst);
	return add_op(w, PLAN_META, steal_ptr(path), true, true, TXBOX_CHANGE_METADATA, &ust, &wst);
}

static int walk_dir(walk *w, int ufd, int wfd, const char *rel, unsigned depth)
{
	if (depth > 4096)
		return txbox_fail(w->err, -ELOOP, "%s: directory tree deeper than 4096 levels", rel);
	int dupfd = openat(ufd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset: never share a readdir position */
	if (dupfd < 0)
		return txbox_fail_errno(w->err, -errno, "dup");
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return txbox_fail_errno(w->err, -errno, "reading layer directory %s", rel);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && w->o->skip_root_name && !strcmp(de->d_name, w->o->skip_root_name))
			continue;
		_cleanup_free_ char *child = join(rel, de->d_name);
		if (!child)
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		int r = walk_entry(w, ufd, wfd, de->d_name, child, depth);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A name hard-linked, inside the transaction, to a file that stays in
 * place (META of an existing group) must become a link to that file, not
 * a publication of the layer's copy. */
static int convert_links(plan *p, txbox_error *err)
{
	for (size_t i = 0; i < p->n; i++) {
		plan_op *o = &p->ops[i];
		if (o->kind != PLAN_PUT || !S_ISREG(o->new_st.st_mode) || o->new_st.st_nlink < 2)
			continue;
		for (size_t j = 0; j < p->n; j++) {
			plan_op *t = &p->ops[j];
			if (t->kind == PLAN_META && S_ISREG(t->new_st.st_mode) && t->new_ino == o->new_ino &&
			    t->new_st.st_dev == o->new_st.st_dev) {
				o->link_target = strdup(t->path);
				if (!o->link_target)
					return txbox_fail(err, -ENOMEM, "out of memory");
				o->kind = PLAN_LINK;
				o->new_ino = t->old_ino; /* the published name is the group's inode */
				break;
			}
			if (t->kind == PLAN_LINK && t->link_fd >= 0 && t->link_upper_ino == o->new_ino) {
				o->link_fd = fcntl(t->link_fd, F_DUPFD_CLOEXEC, 3);
				if (o->link_fd < 0)
					return txbox_fail_errno(err, -errno, "dup");
				o->kind = PLAN_LINK;
				o->new_ino = t->new_ino;
				break;
			}
		}
	}
	return 0;
}


static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Workspace paths the plan decides: every op's own path; for PUT, DELETE
 * and LINK everything beneath too. A group's other names found there are
 * left to those ops. */
typedef struct covered {
	char **paths; /* sorted */
	size_t n;
	const plan *p;
} covered;

static bool is_covered(const covered *c, const char *name)
{
	char buf[PATH_MAX];
	size_t len = strlen(name);
	if (len >= sizeof buf)
		return true;
	memcpy(buf, name, len + 1);
	for (bool self = true;; self = false) {
		char *key = buf;
		char **hit = c->n ? bsearch(&key, c->paths, c->n, sizeof *c->paths, cmp_str) : NULL;
		if (hit) {
			if (self)
				return true;
			for (size_t i = 0; i < c->p->n; i++)
				if (c->p->ops[i].path == *hit || !strcmp(c->p->ops[i].path, buf))
					return c->p->ops[i].kind != PLAN_META;
		}
		char *slash = strrchr(buf, '/');
		if (!slash)
			return false;
		*slash = '\0';
	}
}

static int add_also(plan *p, const char *name, txbox_change_kind kind, txbox_error *err)
{
	char **np = realloc(p->also_changed, (p->n_also + 1) * sizeof *np);
	if (np)
		p->also_changed = np;
	txbox_change_kind *nk = realloc(p->also_kind, (p->n_also + 1) * sizeof *nk);
	if (nk)
		p->also_kind = nk;
	char *dup = np && nk ? strdup(name) : NULL;
	if (!dup)
		return txbox_fail(err, -ENOMEM, "out of memory");
	p->also_changed[p->n_also] = dup;
	p->also_kind[p->n_also++] = kind;
	return 0;
}

/* A changed group file published as its layer inode: every other name of
 * ci in the workspace no op covers becomes a LINK to base's path, a copy
 * of base (a copy: pushing moves the ops); the old inode is moved aside,
 * so reversal is a rename. */
static int link_other_names(walk *w, const plan_op *o, const census_inode *ci, const covered *cv)
{
	for (size_t j = 0; ci && j < ci->nnames; j++) {
		if (is_covered(cv, ci->names[j]))
			continue;
		char *path = strdup(ci->names[j]);
		plan_op op = *o;
		op.path = path;
		op.link_target = strdup(o->path);
		op.link_fd = -1;
		op.kind = PLAN_LINK;
		op.owner_mode = false;
		if (!path || !op.link_target) {
			free(path);
			free(op.link_target);
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		}
		int r = plan_push(w->p, &op, w->err);
		if (r < 0) {
			free(op.link_target);
			return r;
		}
	}
	return 0;
}

/* The census: where are the names of the inodes the plan would link to or
 * change in place? Only when there are such inodes. */
static int take_census(walk *w, census *c)
{
	for (size_t i = 0; i < w->p->n; i++) {
		const plan_op *o = &w->p->ops[i];
		int r = 0;
		if (is_group(w, i))
			r = census_want(c, o->old_ino, w->err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < w->nmoved; i++) {
		size_t idx;
		struct moved *m = &w->moved[i];
		int r = census_want_handle(c, m->h.fh.handle_type, m->h.fh.f_handle, m->h.fh.handle_bytes, &idx,
					   w->err);
		if (r < 0)
			return r;
	}
	return census_run(c, w->ws_root, w->o->reserved_name, w->o->state_mark, w->o->deadline_ns, w->err);
}

/* The layer's file uf (as it will be published, st) and the workspace's
 * wf have the same metadata: mode, owner, mtime, xattrs. */
static bool fds_meta_equal(const walk *w, int uf, const struct stat *st, int wf, const struct stat *cur)
{
	xsrc a = {.fd = uf}, b = {.fd = wf};
	return meta_equal(st, cur) && same_time(st->st_mtim, cur->st_mtim) &&
	       xsrc_subset_of(a, b, w->o->userxattr, w->o->strip_setuid, false, false) &&
	       xsrc_subset_of(b, a, w->o->userxattr, false, w->o->strip_setuid, false);
}

/* A renamed or linked member of a hard-link group, unchanged: natively
 * the same inode, so a link to the workspace file the census found with
 * the origin's handle (never one opened by handle). Changed as well
 * (`mv a c; chmod 600 c`: the whole group changed in the command's view),
 * it is marked for relink_changed_moved. */
static int link_moved(walk *w, const census_handle *ch, struct moved *m)
{
	plan_op *o = &w->p->ops[m->op];
	if (!ch->name || !S_ISREG(ch->st.st_mode) || ch->st.st_nlink < 2 || !strcmp(ch->name, o->path))
		return 0;
	_cleanup_close_ int uf = fs_open_entry(w->upper_root, o->path, O_RDONLY, 0);
	_cleanup_close_ int wf = fs_open_entry(w->ws_root, ch->name, O_RDONLY, 0);
	struct stat cur;
	if (uf < 0 || wf < 0 || fstat(wf, &cur) < 0 || !S_ISREG(cur.st_mode) || cur.st_ino != ch->st.st_ino ||
	    cur.st_dev != ch->st.st_dev)
		return 0;
	int r = cur.st_size != o->new_st.st_size ? 0 : fds_equal(uf, wf, cur.st_size, w->o->deadline_ns, o->path, w->err);
	if (r < 0)
		return r;
	if (!r || !fds_meta_equal(w, uf, &o->new_st, wf, &cur)) {
		*m = (struct moved){.op = m->op, .h = m->h, .changed = true, .content = !r, .old_st = cur};
		return 0;
	}
	o->kind = PLAN_LINK;
	o->link_fd = steal_fd(wf);
	o->link_upper_ino = o->new_st.st_ino;
	o->new_ino = cur.st_ino; /* the published name is the group's inode */
	o->change = !o->existed ? TXBOX_CHANGE_ADDED
		    : S_ISREG(o->old_st.st_mode) ? TXBOX_CHANGE_MODIFIED : TXBOX_CHANGE_TYPE_CHANGED;
	return 0;
}

static int link_all_moved(walk *w, const census *c)
{
	for (size_t i = 0; i < w->nmoved; i++) {
		int r = link_moved(w, &c->handles[i], &w->moved[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The paths of the plan's ops as they are now, sorted. */
static int covered_init(walk *w, covered *cv)
{
	size_t n = w->p->n;
	*cv = (covered){.n = n, .p = w->p};
	cv->paths = calloc(n ? n : 1, sizeof *cv->paths);
	if (!cv->paths)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		cv->paths[i] = w->p->ops[i].path;
	qsort(cv->paths, n, sizeof *cv->paths, cmp_str);
	return 0;
}

/* Renamed members of hard-link groups that the command changed too
 * (link_moved): in its view the whole group changed. Like a changed
 * member in place, the layer's inode is published at the new name and
 * linked at every other name, when a census of those groups proves every
 * name is inside the workspace; otherwise the new name alone gets it, and
 * says so (red team rt17: the change was dropped, or the group split
 * silently). */
static int relink_changed_moved(walk *w)
{
	_cleanup_(census_free) census c = {0};
	size_t changed = 0;
	int r = 0;
	for (size_t i = 0; i < w->nmoved && r == 0; i++)
		if (w->moved[i].changed && ++changed)
			r = census_want(&c, w->moved[i].old_st.st_ino, w->err);
	if (r < 0 || !changed)
		return r;
	if ((r = census_run(&c, w->ws_root, w->o->reserved_name, w->o->state_mark, w->o->deadline_ns, w->err)) < 0)
		return r;
	covered cv;
	if ((r = covered_init(w, &cv)) < 0)
		return r;
	for (size_t i = 0; i < w->nmoved && r == 0; i++) {
		const struct moved *m = &w->moved[i];
		bool first = m->changed; /* one member per group links the other names */
		for (size_t j = 0; j < i && first; j++)
			first = !(w->moved[j].changed && w->moved[j].old_st.st_ino == m->old_st.st_ino);
		if (!first)
			continue;
		ino_t ino = m->old_st.st_ino;
		if (!census_all_inside(&c, ino, m->old_st.st_nlink)) {
			w->p->ops[m->op].note = NOTE_SPLIT;
			continue;
		}
		/* the other names are the group's, changed like the new one */
		plan_op base = w->p->ops[m->op];
		base.existed = true;
		base.old_ino = ino;
		base.old_st = m->old_st;
		base.change = m->content ? TXBOX_CHANGE_MODIFIED : TXBOX_CHANGE_METADATA;
		r = link_other_names(w, &base, census_find(&c, ino), &cv);
	}
	free(cv.paths);
	return r;
}

static int group_ops(walk *w, const census *c)
{
	size_t n = w->p->n;
	covered cv;
	int r = covered_init(w, &cv);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		plan_op *o = &w->p->ops[i];
		if (!is_group(w, i))
			continue;
		const census_inode *ci = census_find(c, o->old_ino);
		bool inside = census_all_inside(c, o->old_ino, o->old_st.st_nlink);
		if (o->kind == PLAN_META && inside) { /* the inode changes: every name shows it */
			for (size_t j = 0; ci && j < ci->nnames && r >= 0; j++)
				if (strcmp(ci->names[j], o->path) != 0 && !is_covered(&cv, ci->names[j]))
					r = add_also(w->p, ci->names[j], o->change, w->err);
			continue;
		}
		o->kind = PLAN_PUT; /* a new inode; the original is kept, untouched */
		o->owner_mode = false;
		if (!inside)
			o->note = NOTE_SPLIT;
		bool first = true; /* one op per group links the other names */
		for (size_t j = 0; j < i && first; j++)
			first = !(is_group(w, j) && w->p->ops[j].old_ino == o->old_ino);
		const plan_op base = *o;
		if (first)
			r = link_other_names(w, &base, ci, &cv);
	}
	free(cv.paths);
	return r;
}

/* The workspace root's owner, mode and ACLs are never published (a
 * command run as root could hand the workspace to another user; an ACL
 * grants what mode bits would, and a default ACL reaches every file made
 * there later): only its other xattrs and times. A change of them is
 * reported with NOTE_ROOT. */
static int root_op(walk *w, int ws_fd, int upper_fd)
{
	struct stat ust, wst;
	if (fstat(upper_fd, &ust) < 0 || fstat(ws_fd, &wst) < 0)
		return txbox_fail_errno(w->err, -errno, "stat of the workspace root");
	const struct stat *init = w->o->root_initial;
	bool owner_mode = init && (ust.st_uid != init->st_uid || ust.st_gid != init->st_gid ||
				   (ust.st_mode & 07777) != (init->st_mode & 07777));
	ust.st_uid = wst.st_uid;
	ust.st_gid = wst.st_gid;
	ust.st_mode = wst.st_mode;
	char a[40], b[40];
	snprintf(a, sizeof a, "/proc/self/fd/%d/.", upper_fd); /* "/." : the directory, not the magic link */
	snprintf(b, sizeof b, "/proc/self/fd/%d/.", ws_fd);
	owner_mode = owner_mode || acls_differ(a, b);
	/* Only what the upper root has is published (see sync_xattrs). */
	bool differs = !xattrs_subset_of(a, b, w->o->userxattr, false, false, true);
	if (!differs && !owner_mode && w->p->n == 0)
		return 0;
	char *root = strdup("");
	if (!root)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	int r = add_op(w, PLAN_META, root, true, differs || owner_mode, TXBOX_CHANGE_METADATA, &ust, &wst);
	if (r == 0 && owner_mode)
		w->p->ops[w->p->n - 1].note = NOTE_ROOT;
	return r;
}

/* Which mount a statx result lies on: its mount id, or before Linux 5.8
 * its device (fs_same_mount's rule). */
static uint64_t mount_key(const struct statx *x)
{
	return x->stx_mask & STATX_MNT_ID ? x->stx_mnt_id
					  : (uint64_t)1 << 63 | (uint64_t)x->stx_dev_major << 32 | x->stx_dev_minor;
}

/* Does the workspace directory dfd (path rel, expected on the mount mnt)
 * hold, at any depth, an entry named like txbox's state (prepare_reserved):
 * 1, or a mount point (inside the sandbox an empty directory; removing its
 * parent would carry the mounted tree away to be emptied: red team rt21):
 * 2? Its path goes to found. An unlistable or vanished directory holds
 * nothing any txbox could use (a 000 directory of the caller's: rt22 D1,
 * J3). */
static int holds_state(walk *w, int dfd, const char *rel, uint64_t mnt, unsigned depth, char *found, size_t len)
{
	int r = past_deadline(w->o->deadline_ns, w->err, rel);
	if (r < 0 || depth > 4096)
		return r < 0 ? r : txbox_fail(w->err, -ELOOP, "%s: directory tree deeper than 4096 levels", rel);
	struct statx sx;
	if (statx(dfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0)
		return txbox_fail_errno(w->err, -errno, "stat of %s", rel);
	if (mount_key(&sx) != mnt) { /* mounted there since its parent was looked at */
		snprintf(found, len, "%s", rel);
		return 2;
	}
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES)
		return 0;
	_cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return txbox_fail_errno(w->err, -errno, "listing %s", rel);
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bool own = prepare_reserved(de->d_name, w->o->reserved_name, w->o->state_mark);
		if (!own && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		_cleanup_free_ char *child = join(rel, de->d_name);
		if (!child)
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		if (own) {
			snprintf(found, len, "%s", child);
			return 1;
		}
		if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MNT_ID, &sx) < 0) {
			if (errno == ENOENT)
				continue;
			return txbox_fail_errno(w->err, -errno, "stat of %s", child);
		}
		if (!S_ISDIR(sx.stx_mode))
			continue;
		if (mount_key(&sx) != mnt) {
			snprintf(found, len, "%s", child);
			return 2;
		}
		_cleanup_close_ int c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c < 0 && (errno == EACCES || errno == ENOENT))
			continue;
		if (c < 0)
			return txbox_fail_errno(w->err, -errno, "listing %s", child);
		if ((r = holds_state(w, c, child, mnt, depth + 1, found, len)) != 0)
			return r;
	}
	return 0;
}

/* A commit that deletes or replaces a workspace directory never takes a
 * state dir with it: the state of another workspace (or user) inside it,
 * replaced by a copy the command made, would be trusted by its owner's
 * txbox (red team rt20). Such a directory is refused, checked in the
 * workspace as it is. */
static int refuse_state_removal(walk *w)
{
	struct statx ws = {0}; /* the workspace's mount, looked up at the first removal */
	for (size_t i = 0; i < w->p->n; i++) {
		const plan_op *o = &w->p->ops[i];
		if (!o->existed || !S_ISDIR(o->old_st.st_mode) || (o->kind != PLAN_PUT && o->kind != PLAN_DELETE))
			continue;
		_cleanup_close_ int fd = fs_open_entry(w->ws_root, o->path, O_PATH | O_DIRECTORY, 0);
		if (fd == -EXDEV)
			return txbox_fail(w->err, -EXDEV, "%s is a mount point: a commit never changes another filesystem",
					  o->path);
		if (fd < 0)
			return txbox_fail_errno(w->err, fd, "opening %s", o->path);
		if (!ws.stx_mask && statx(w->ws_root, "", AT_EMPTY_PATH, STATX_MNT_ID, &ws) < 0)
			return txbox_fail_errno(w->err, -errno, "stat of the workspace");
		char found[PATH_MAX];
		int r = holds_state(w, fd, o->path, mount_key(&ws), 0, found, sizeof found);
		if (r < 0)
			return r;
		if (r == 1)
			return txbox_fail(w->err, -EPERM,
					  "%s: the command deleted or replaced a directory holding %s, the state of a "
					  "txbox workspace; such changes are never committed",
					  o->path, found);
		if (r == 2)
			return txbox_fail(w->err, -EXDEV,
					  "%s: the command deleted or replaced a directory holding the mount point %s: a "
					  "commit never changes another filesystem",
					  o->path, found);
	}
	return 0;
}

static int plan_finish(walk *w, int ws_fd, int upper_fd)
{
	census c = {0};
	int r = take_census(w, &c);
	if (r == 0)
		r = link_all_moved(w, &c);
	if (r == 0)
		r = group_ops(w, &c);
	census_free(&c);
	if (r == 0)
		r = relink_changed_moved(w);
	if (r == 0)
		r = convert_links(w->p, w->err);
	if (r == 0)
		r = refuse_state_removal(w);
	if (r == 0)
		r = root_op(w, ws_fd, upper_fd);
	return r;
}

/* One op's layer entry made publishable; its permission bits must be what
 * the plan said (as_published): the plan judged is the plan applied. */
static int prepare_op(int upper_fd, const plan_opts *o, const plan_op *op, txbox_error *err)
{
	const char *name;
	_cleanup_close_ int par = snapshot_open_parent(upper_fd, op->path, &name, err);
	if (par < 0)
		return par;
	struct stat st;
	if (fstatat(par, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return txbox_fail_errno(err, -errno, "stat of layer entry %s", op->path);
	prepare_opts po = {.strip_setuid = o->strip_setuid, .userxattr = o->userxattr,
			   .reserved_name = o->reserved_name, .state_mark = o->state_mark,
			   .deadline_ns = o->deadline_ns};
	int r = op->kind == PLAN_PUT ? prepare_tree(par, name, &st, op->path, &po, err)
				     : prepare_entry(par, name, &st, op->path, &po, err);
	if (r < 0)
		return r;
	if (fstatat(par, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return txbox_fail_errno(err, -errno, "stat of layer entry %s", op->path);
	if (st.st_ino != op->new_st.st_ino || (st.st_mode & 07777) != (op->new_st.st_mode & 07777))
		return txbox_fail(err, -ESTALE, "the layer entry %s changed after it was planned", op->path);
	return 0;
}

int plan_prepare(int upper_fd, const plan_opts *o, const plan *p, txbox_error *err)
{
	for (size_t i = 0; i < p->n; i++) {
		const plan_op *op = &p->ops[i];
		/* a LINK publishes a workspace inode, a DELETE nothing, and the
		 * root's owner and mode never */
		if (op->kind == PLAN_LINK || op->kind == PLAN_DELETE || !op->path[0])
			continue;
		int r = prepare_op(upper_fd, o, op, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int plan_build(int ws_fd, int upper_fd, const plan_opts *o, plan *out, txbox_error *err)
{
	trace_mark("plan: walking the layer");
	memset(out, 0, sizeof *out);
	out->userxattr = o->userxattr;
	walk w = {.p = out, .o = o, .err = err, .ws_root = ws_fd, .upper_root = upper_fd};
	int r = walk_dir(&w, upper_fd, ws_fd, "", 0);
	if (r == 0)
		r = plan_finish(&w, ws_fd, upper_fd);
	if (r == 0 && !o->inspect)
		r = plan_prepare(upper_fd, o, out, err);
	free(w.group);
	free(w.moved);
	if (r < 0)
		plan_free(out);
	return r;
}

int plan_changes(const plan *p, txbox_change **out, size_t *n, txbox_error *err)
{
	size_t cnt = p->n_also;
	for (size_t i = 0; i < p->n; i++)
		cnt += p->ops[i].report;
	*out = NULL;
	*n = 0;
	if (!cnt)
		return 0;
	txbox_change *c = calloc(cnt, sizeof *c);
	if (!c)
		return txbox_fail(err, -ENOMEM, "out of memory");
	size_t j = 0;
	for (size_t i = 0; i < p->n + p->n_also; i++) {
		const char *path;
		txbox_change_kind kind;
		if (i < p->n) {
			if (!p->ops[i].report)
				continue;
			path = p->ops[i].path[0] ? p->ops[i].path : ".";
			kind = p->ops[i].change;
		} else {
			path = p->also_changed[i - p->n];
			kind = p->also_kind[i - p->n];
		}
		c[j].path = strdup(path);
		c[j].kind = kind;
		c[j].note = i < p->n ? p->ops[i].note : NULL;
		if (!c[j].path) {
			for (size_t k = 0; k < j; k++)
				free(c[k].path);
			free(c);
			return txbox_fail(err, -ENOMEM, "out of memory");
		}
		j++;
	}
	*out = c;
	*n = cnt;
	return 0;
}
