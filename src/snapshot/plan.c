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
 * so its times are set after the renames beneath it. */
#include "snapshot/snapshot.h"

#include "snapshot/prepare.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

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

/* Every non-overlay xattr of a is on b with the same value (any sizes;
 * the values are the sandboxed command's). An unreadable list counts as
 * different, so the change is published rather than lost. */
static bool xattrs_subset(const char *a, const char *b)
{
	_cleanup_free_ char *names = NULL;
	size_t n;
	if (fs_xattr_list(a, &names, &n) < 0)
		return false;
	for (size_t off = 0; off < n; off += strlen(names + off) + 1) {
		const char *k = names + off;
		if (fs_xattr_is_overlay_private(k))
			continue;
		_cleanup_free_ char *va = NULL, *vb = NULL;
		ssize_t la = fs_xattr_get(a, k, &va);
		ssize_t lb = fs_xattr_get(b, k, &vb);
		if (la < 0 || la != lb || memcmp(va, vb, (size_t)la) != 0)
			return false;
	}
	return true;
}

static bool xattrs_equal(int d1, const char *n1, int d2, const char *n2)
{
	char a[PATH_MAX], b[PATH_MAX];
	prepare_xattr_path(d1, n1, a, sizeof a);
	prepare_xattr_path(d2, n2, b, sizeof b);
	return xattrs_subset(a, b) && xattrs_subset(b, a);
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool meta_equal(const struct stat *u, const struct stat *w)
{
	return (u->st_mode & 07777) == (w->st_mode & 07777) && u->st_uid == w->st_uid && u->st_gid == w->st_gid;
}

/* Same bytes? Reads both from their current offsets (callers pass fresh fds). */
static int fds_equal(int a, int b)
{
	static char ba[65536], bb[65536];
	for (;;) {
		ssize_t x = read(a, ba, sizeof ba);
		if (x < 0)
			return 0;
		size_t got = 0;
		while (got < (size_t)x) {
			ssize_t y = read(b, bb + got, (size_t)x - got);
			if (y <= 0)
				return 0;
			got += (size_t)y;
		}
		if (x == 0) {
			char c;
			return read(b, &c, 1) == 0;
		}
		if (memcmp(ba, bb, (size_t)x) != 0)
			return 0;
	}
}

static int contents_equal(int d1, const char *n1, int d2, const char *n2)
{
	_cleanup_close_ int a = openat(d1, n1, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int b = openat(d2, n2, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (a < 0 || b < 0)
		return 0; /* unreadable: treat as different (the rename path is always correct) */
	return fds_equal(a, b);
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
 * uuid[16], then the handle bytes. */
typedef union origin_handle {
	struct file_handle fh;
	unsigned char buf[sizeof(struct file_handle) + 128];
} origin_handle;

static bool origin_read(int ufd, const char *uname, origin_handle *h)
{
	char p[PATH_MAX];
	prepare_xattr_path(ufd, uname, p, sizeof p);
	unsigned char fb[256];
	ssize_t n = lgetxattr(p, "trusted.overlay.origin", fb, sizeof fb);
	if (n < 0)
		n = lgetxattr(p, "user.overlay.origin", fb, sizeof fb);
	if (n < 21 || fb[1] != 0xfb || n - 21 > 128)
		return false;
	h->fh.handle_bytes = (unsigned)(n - 21);
	h->fh.handle_type = fb[4];
	memcpy(h->fh.f_handle, fb + 21, (size_t)(n - 21));
	return true;
}

/* Is the upper file a copy-up of the workspace file itself? */
static bool origin_is(int ufd, const char *uname, int wfd, const char *wname)
{
	origin_handle o, w;
	if (!origin_read(ufd, uname, &o))
		return false;
	w.fh.handle_bytes = 128;
	int mnt;
	if (name_to_handle_at(wfd, wname, &w.fh, &mnt, 0) < 0)
		return false;
	return o.fh.handle_type == w.fh.handle_type && o.fh.handle_bytes == w.fh.handle_bytes &&
	       memcmp(o.fh.f_handle, w.fh.f_handle, w.fh.handle_bytes) == 0;
}

/* The workspace file an upper file was copied up from, when that file is
 * a member of a hard-link group (nlink > 1): a read-only fd, or -1. Needs
 * open_by_handle_at (CAP_DAC_READ_SEARCH): as a normal user, -1. */
static int origin_group_fd(int ufd, const char *uname, int ws_fd)
{
	origin_handle h;
	if (!origin_read(ufd, uname, &h))
		return -1;
	int fd = open_by_handle_at(ws_fd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st, ws;
	if (fstat(fd, &st) < 0 || fstat(ws_fd, &ws) < 0 || !S_ISREG(st.st_mode) || st.st_nlink < 2 ||
	    st.st_dev != ws.st_dev) {
		close(fd);
		return -1;
	}
	return fd;
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
	int ws_root;
	prepare_opts po;
} walk;

static int walk_dir(walk *w, int ufd, int wfd, const char *rel, unsigned depth);

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
	return plan_push(w->p, &op, w->err);
}

static int walk_entry(walk *w, int ufd, int wfd, const char *name, const char *rel, unsigned depth)
{
	struct stat ust, wst;
	if (fstatat(ufd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
		return txbox_fail_errno(w->err, -errno, "stat of layer entry %s", rel);
	bool have_w = wfd >= 0 && fstatat(wfd, name, &wst, AT_SYMLINK_NOFOLLOW) == 0;
	if (wfd >= 0 && !have_w && errno != ENOENT)
		return txbox_fail_errno(w->err, -errno, "stat of workspace entry %s", rel);
	_cleanup_free_ char *path = strdup(rel);
	if (!path)
		return txbox_fail(w->err, -ENOMEM, "out of memory");

	if (prepare_is_whiteout(ufd, name, &ust)) {
		if (!have_w)
			return 0;
		return add_op(w, PLAN_DELETE, steal_ptr(path), true, true, TXBOX_CHANGE_DELETED, &ust, &wst);
	}

	if (S_ISDIR(ust.st_mode) && have_w && S_ISDIR(wst.st_mode) && !prepare_is_opaque(ufd, name)) {
		_cleanup_close_ int cu = openat(ufd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int cw = openat(wfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cu < 0 || cw < 0)
			return txbox_fail_errno(w->err, -errno, "opening directory %s", rel);
		int r = walk_dir(w, cu, cw, rel, depth + 1);
		if (r < 0)
			return r;
		r = prepare_entry(ufd, name, &ust, rel, &w->po, w->err);
		if (r < 0)
			return r;
		if (fstatat(ufd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0) /* mode may have been stripped */
			return txbox_fail_errno(w->err, -errno, "stat of layer entry %s", rel);
		bool differs = !meta_equal(&ust, &wst) || !xattrs_equal(ufd, name, wfd, name);
		/* Times of a merged directory are always carried over (they moved
		 * with the changes beneath it); only real metadata is reported. */
		return add_op(w, PLAN_META, steal_ptr(path), true, differs, TXBOX_CHANGE_METADATA, &ust, &wst);
	}

	/* Before prepare strips overlay xattrs: is this a copy-up of the
	 * workspace file itself (which is part of a hard-link group)? */
	bool group_member = S_ISREG(ust.st_mode) && have_w && S_ISREG(wst.st_mode) && wst.st_nlink > 1 &&
			    origin_is(ufd, name, wfd, name);
	/* A member of a group renamed (or linked) to another name: natively
	 * the same inode; publish a link to it when the content is unchanged. */
	int moved_fd = -1;
	if (S_ISREG(ust.st_mode) && !group_member) {
		moved_fd = origin_group_fd(ufd, name, w->ws_root);
		if (moved_fd >= 0) {
			struct stat gst;
			_cleanup_close_ int uf = openat(ufd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			bool same = uf >= 0 && fstat(moved_fd, &gst) == 0 && gst.st_size == ust.st_size &&
				    lseek(moved_fd, 0, SEEK_SET) == 0 && fds_equal(uf, moved_fd);
			if (!same) {
				close(moved_fd);
				moved_fd = -1;
			}
		}
	}
	int r = prepare_tree(ufd, name, &ust, rel, &w->po, w->err);
	if (r < 0)
		return r;
	if (fstatat(ufd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0) /* mode may have been stripped */
		return txbox_fail_errno(w->err, -errno, "stat of layer entry %s", rel);
	if (moved_fd >= 0) {
		struct stat gst;
		fstat(moved_fd, &gst);
		r = add_op(w, PLAN_LINK, steal_ptr(path), have_w, true,
			   have_w ? TXBOX_CHANGE_TYPE_CHANGED : TXBOX_CHANGE_ADDED, &ust, have_w ? &wst : NULL);
		if (r < 0) {
			close(moved_fd);
			return r;
		}
		plan_op *lo = &w->p->ops[w->p->n - 1];
		if (have_w && S_ISREG(wst.st_mode))
			lo->change = TXBOX_CHANGE_MODIFIED;
		lo->link_fd = moved_fd;
		lo->link_upper_ino = ust.st_ino;
		lo->new_ino = gst.st_ino; /* the published name is the group's inode */
		return 0;
	}
	if (!have_w)
		return add_op(w, PLAN_PUT, steal_ptr(path), false, true, TXBOX_CHANGE_ADDED, &ust, NULL);
	if ((ust.st_mode & S_IFMT) != (wst.st_mode & S_IFMT))
		return add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_TYPE_CHANGED, &ust, &wst);

	bool same_content = false;
	if (group_member) {
		/* The file of an existing hard-link group, changed through this
		 * name: natively every name sees the change, so change the inode. */
		same_content = ust.st_size == wst.st_size && contents_equal(ufd, name, wfd, name);
		if (same_content && meta_equal(&ust, &wst) && xattrs_equal(ufd, name, wfd, name) &&
		    same_time(ust.st_mtim, wst.st_mtim))
			/* unchanged, but names linked to it in the transaction find it here */
			return ust.st_nlink > 1 ? add_op(w, PLAN_META, steal_ptr(path), true, false,
							 TXBOX_CHANGE_METADATA, &ust, &wst)
						: 0;
		return add_op(w, same_content ? PLAN_META : PLAN_INPLACE, steal_ptr(path), true, true,
			      same_content ? TXBOX_CHANGE_METADATA : TXBOX_CHANGE_MODIFIED, &ust, &wst);
	}
	if (S_ISREG(ust.st_mode) && ust.st_nlink > 1) {
		/* hard-linked inside the transaction: publish the inode itself */
		return add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_MODIFIED, &ust, &wst);
	}
	if (S_ISREG(ust.st_mode))
		same_content = ust.st_size == wst.st_size && same_time(ust.st_mtim, wst.st_mtim) &&
			       contents_equal(ufd, name, wfd, name);
	else if (S_ISLNK(ust.st_mode))
		same_content = links_equal(ufd, name, wfd, name);
	else if (S_ISFIFO(ust.st_mode))
		same_content = same_time(ust.st_mtim, wst.st_mtim);
	if (same_content) {
		bool meta_same = meta_equal(&ust, &wst) && xattrs_equal(ufd, name, wfd, name) &&
				 same_time(ust.st_mtim, wst.st_mtim);
		if (meta_same)
			return 0; /* copied up, never changed */
		return add_op(w, PLAN_META, steal_ptr(path), true, true, TXBOX_CHANGE_METADATA, &ust, &wst);
	}
	return add_op(w, PLAN_PUT, steal_ptr(path), true, true, TXBOX_CHANGE_MODIFIED, &ust, &wst);
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
 * place (META/INPLACE of an existing group) must become a link to that
 * file, not a publication of the layer's copy. */
static int convert_links(plan *p, txbox_error *err)
{
	for (size_t i = 0; i < p->n; i++) {
		plan_op *o = &p->ops[i];
		if (o->kind != PLAN_PUT || !S_ISREG(o->new_st.st_mode) || o->new_st.st_nlink < 2)
			continue;
		for (size_t j = 0; j < p->n; j++) {
			plan_op *t = &p->ops[j];
			if ((t->kind == PLAN_INPLACE || t->kind == PLAN_META) && S_ISREG(t->new_st.st_mode) &&
			    t->new_ino == o->new_ino && t->new_st.st_dev == o->new_st.st_dev) {
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

/* The other names of hard-link groups changed in place: natively every
 * name shows the change, so every name is reported. Found by one walk of
 * the workspace, only when such a change exists, stopping once all the
 * names are found. */
typedef struct group_target {
	ino_t ino;
	const char *path; /* the op's own name */
	txbox_change_kind kind;
	nlink_t missing;
} group_target;

static int find_names(plan *p, int dfd, const char *rel, const plan_opts *o, group_target *t, size_t nt,
		      size_t *left, unsigned depth, txbox_error *err)
{
	if (depth > 4096 || !*left)
		return 0;
	int dupfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dupfd < 0)
		return 0;
	_cleanup_closedir_ DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return 0;
	}
	struct dirent *de;
	while (*left && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && o->skip_root_name && !strcmp(de->d_name, o->skip_root_name))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		_cleanup_free_ char *child = join(rel, de->d_name);
		if (!child)
			return txbox_fail(err, -ENOMEM, "out of memory");
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c >= 0) {
				int r = find_names(p, c, child, o, t, nt, left, depth + 1, err);
				if (r < 0)
					return r;
			}
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_nlink < 2)
			continue;
		for (size_t i = 0; i < nt; i++) {
			if (t[i].ino != st.st_ino || !t[i].missing || !strcmp(t[i].path, child))
				continue;
			char **np = realloc(p->also_changed, (p->n_also + 1) * sizeof *np);
			txbox_change_kind *nk = realloc(p->also_kind, (p->n_also + 1) * sizeof *nk);
			if (np)
				p->also_changed = np;
			if (nk)
				p->also_kind = nk;
			if (!np || !nk)
				return txbox_fail(err, -ENOMEM, "out of memory");
			p->also_changed[p->n_also] = steal_ptr(child);
			p->also_kind[p->n_also] = t[i].kind;
			p->n_also++;
			t[i].missing--;
			(*left)--;
			break;
		}
	}
	return 0;
}

static int report_group_names(plan *p, int ws_fd, const plan_opts *o, txbox_error *err)
{
	size_t nt = 0;
	for (size_t i = 0; i < p->n; i++) {
		const plan_op *op = &p->ops[i];
		nt += (op->kind == PLAN_INPLACE || op->kind == PLAN_META) && op->report && S_ISREG(op->old_st.st_mode) &&
		      op->old_st.st_nlink > 1;
	}
	if (!nt)
		return 0;
	_cleanup_free_ group_target *t = calloc(nt, sizeof *t);
	if (!t)
		return txbox_fail(err, -ENOMEM, "out of memory");
	size_t k = 0, left = 0;
	for (size_t i = 0; i < p->n; i++) {
		const plan_op *op = &p->ops[i];
		if (!((op->kind == PLAN_INPLACE || op->kind == PLAN_META) && op->report && S_ISREG(op->old_st.st_mode) &&
		      op->old_st.st_nlink > 1))
			continue;
		bool dup = false;
		for (size_t j = 0; j < k && !dup; j++)
			dup = t[j].ino == op->old_ino;
		if (dup)
			continue;
		t[k] = (group_target){.ino = op->old_ino, .path = op->path, .kind = op->change,
				      .missing = op->old_st.st_nlink - 1};
		left += t[k].missing;
		k++;
	}
	return find_names(p, ws_fd, "", o, t, k, &left, 0, err);
}

int plan_build(int ws_fd, int upper_fd, const plan_opts *o, plan *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	walk w = {.p = out, .o = o, .err = err, .ws_root = ws_fd,
		  .po = {.strip_setuid = o->strip_setuid, .defer_links = true}};
	int r = walk_dir(&w, upper_fd, ws_fd, "", 0);
	if (r < 0)
		goto fail;
	r = convert_links(out, err);
	if (r < 0)
		goto fail;
	r = report_group_names(out, ws_fd, o, err);
	if (r < 0)
		goto fail;
	if (w.po.deferred) { /* every origin has been read: strip what was left */
		prepare_opts fin = {.strip_setuid = o->strip_setuid};
		r = prepare_children(upper_fd, "", &fin, err);
		if (r < 0)
			goto fail;
	}
	/* The workspace root itself: mode, owner, xattrs and times. */
	struct stat ust, wst;
	if (fstat(upper_fd, &ust) < 0 || fstat(ws_fd, &wst) < 0) {
		r = txbox_fail_errno(err, -errno, "stat of the workspace root");
		goto fail;
	}
	if (o->root_initial) { /* what the command did not change is no change */
		if (ust.st_uid == o->root_initial->st_uid)
			ust.st_uid = wst.st_uid;
		if (ust.st_gid == o->root_initial->st_gid)
			ust.st_gid = wst.st_gid;
		if ((ust.st_mode & 07777) == (o->root_initial->st_mode & 07777))
			ust.st_mode = (ust.st_mode & S_IFMT) | (wst.st_mode & 07777);
	}
	bool differs = !meta_equal(&ust, &wst);
	if (!differs) {
		char a[40], b[40];
		snprintf(a, sizeof a, "/proc/self/fd/%d/.", upper_fd); /* "/." : the directory, not the magic link */
		snprintf(b, sizeof b, "/proc/self/fd/%d/.", ws_fd); /* "/." : the directory, not the magic link */
		differs = !(xattrs_subset(a, b) && xattrs_subset(b, a));
	}
	if (differs || out->n > 0) {
		char *root = strdup("");
		if (!root) {
			r = txbox_fail(err, -ENOMEM, "out of memory");
			goto fail;
		}
		r = add_op(&w, PLAN_META, root, true, differs, TXBOX_CHANGE_METADATA, &ust, &wst);
		if (r < 0)
			goto fail;
	}
	return 0;
fail:
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
