/* census: count the names an inode has inside the workspace.
 *
 * A commit may change an inode in place (metadata) or publish it under
 * more names only when it has proven where the inode's names are: the
 * names found by one walk of the workspace, compared with st_nlink. A
 * name elsewhere (a `git clone` of a local repository, `cp -al`, a
 * package store) makes the count fall short, and so does any directory
 * the walk could not read — unknown counts as outside. The walk runs only
 * when the plan has such an inode, stays on the workspace's mount, and is
 * bounded by the transaction's deadline.
 *
 * It also finds files by handle: the overlay's origin of a renamed or
 * linked member of a hard-link group names the workspace file it came
 * from; the walk compares the handles of hard-linked files with it, so
 * the commit links only to a file it found inside the workspace, and
 * never opens anything by handle. */
#include "snapshot/census.h"

#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int cmp_ino(const void *a, const void *b)
{
	ino_t x = ((const census_inode *)a)->ino, y = ((const census_inode *)b)->ino;
	return x < y ? -1 : x > y;
}

int census_want(census *c, ino_t ino, txbox_error *err)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->inodes[i].ino == ino)
			return 0;
	census_inode *n = realloc(c->inodes, (c->n + 1) * sizeof *n);
	if (!n)
		return txbox_fail(err, -ENOMEM, "out of memory");
	c->inodes = n;
	c->inodes[c->n++] = (census_inode){.ino = ino};
	return 0;
}

int census_want_handle(census *c, int type, const unsigned char *data, unsigned bytes, size_t *idx,
		       txbox_error *err)
{
	if (bytes > sizeof c->handles->data)
		return txbox_fail(err, -EINVAL, "file handle too long");
	census_handle *n = realloc(c->handles, (c->nh + 1) * sizeof *n);
	if (!n)
		return txbox_fail(err, -ENOMEM, "out of memory");
	c->handles = n;
	census_handle *h = &c->handles[c->nh];
	memset(h, 0, sizeof *h);
	h->type = type;
	h->bytes = bytes;
	memcpy(h->data, data, bytes);
	*idx = c->nh++;
	return 0;
}

const census_inode *census_find(const census *c, ino_t ino)
{
	census_inode key = {.ino = ino};
	return c->n ? bsearch(&key, c->inodes, c->n, sizeof key, cmp_ino) : NULL;
}

bool census_all_inside(const census *c, ino_t ino, nlink_t nlink)
{
	const census_inode *ci = census_find(c, ino);
	return c->complete && ci && ci->nnames == nlink;
}

void census_free(census *c)
{
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < c->inodes[i].nnames; j++)
			free(c->inodes[i].names[j]);
		free(c->inodes[i].names);
	}
	free(c->inodes);
	for (size_t i = 0; i < c->nh; i++)
		free(c->handles[i].name);
	free(c->handles);
	memset(c, 0, sizeof *c);
}

typedef struct census_walk {
	census *c;
	const char *skip;
	const char *state_mark;
	uint64_t deadline;
	uint64_t mnt_id;
	dev_t dev; /* the workspace's: a btrfs subvolume shares the mount, not the device */
	txbox_error *err;
} census_walk;

static char *join_rel(const char *rel, const char *name)
{
	char *path = NULL;
	if (!rel[0])
		return strdup(name);
	return asprintf(&path, "%s/%s", rel, name) < 0 ? NULL : path;
}

/* Is dfd/name the file of a handle looked for? */
static int match_handles(census_walk *w, int dfd, const struct stat *st, const char *rel, const char *name)
{
	union {
		struct file_handle fh;
		unsigned char buf[sizeof(struct file_handle) + 128];
	} h;
	h.fh.handle_bytes = 128;
	int mnt;
	if (!w->c->nh || name_to_handle_at(dfd, name, &h.fh, &mnt, 0) < 0)
		return 0;
	for (size_t i = 0; i < w->c->nh; i++) {
		census_handle *ch = &w->c->handles[i];
		if (ch->name || ch->type != h.fh.handle_type || ch->bytes != h.fh.handle_bytes ||
		    memcmp(ch->data, h.fh.f_handle, ch->bytes) != 0)
			continue;
		ch->name = join_rel(rel, name);
		if (!ch->name)
			return txbox_fail(w->err, -ENOMEM, "out of memory");
		ch->st = *st;
	}
	return 0;
}

static int record(census_walk *w, int dfd, const struct stat *st, const char *rel, const char *name)
{
	int r = match_handles(w, dfd, st, rel, name);
	census_inode *ci = (census_inode *)census_find(w->c, st->st_ino);
	if (r < 0 || !ci)
		return r;
	char **n = realloc(ci->names, (ci->nnames + 1) * sizeof *n);
	if (!n)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	ci->names = n;
	char *path = join_rel(rel, name);
	if (!path)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	ci->names[ci->nnames++] = path;
	return 0;
}

static bool same_mount(census_walk *w, int fd)
{
	struct statx sx;
	return statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID) &&
	       sx.stx_mnt_id == w->mnt_id;
}

static int walk(census_walk *w, int dfd, const char *rel, unsigned depth)
{
	if (depth > 4096) {
		w->c->complete = false;
		return 0;
	}
	int dupfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
	if (!d) {
		if (dupfd >= 0)
			close(dupfd);
		w->c->complete = false;
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* txbox's own directories, at any depth: their names are never
		 * the workspace's (a nested workspace's .txbox, the marker's) */
		if (w->skip && !strcmp(de->d_name, w->skip))
			continue;
		if (w->deadline && clock_now_ns() >= w->deadline)
			return txbox_fail(w->err, -ETIMEDOUT, "the time limit passed while counting the hard links of "
							      "changed files in the workspace");
		if (de->d_type != DT_DIR && de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			w->c->complete = false;
			continue;
		}
		int r = 0;
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			r = record(w, dfd, &st, rel, de->d_name);
		else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			_cleanup_free_ char *child = NULL;
			if (c < 0 || st.st_dev != w->dev || !same_mount(w, c) || !(child = join_rel(rel, de->d_name))) {
				w->c->complete = false; /* a mount inside: its names are not the workspace's */
				continue;
			}
			/* nor are a state dir's: a change to a file with a name there
			 * is published as a new inode, never written through it */
			if (fs_is_state_dir(c, ".", w->state_mark))
				continue;
			r = walk(w, c, child, depth + 1);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int census_run(census *c, int ws_fd, const char *skip_name, const char *state_mark, uint64_t deadline_ns,
	       txbox_error *err)
{
	c->complete = true;
	if (!c->n && !c->nh)
		return 0;
	if (c->n)
		qsort(c->inodes, c->n, sizeof *c->inodes, cmp_ino);
	struct statx sx;
	if (statx(ws_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID)) {
		c->complete = false; /* no way to stay on the workspace's mount: prove nothing */
		return 0;
	}
	census_walk w = {.c = c,
			 .skip = skip_name,
			 .state_mark = state_mark,
			 .deadline = deadline_ns,
			 .mnt_id = sx.stx_mnt_id,
			 .dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
			 .err = err};
	return walk(&w, ws_fd, "", 0);
}
