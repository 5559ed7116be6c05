/* census: count the names an inode has inside the workspace.
 *
 * A commit may change an inode in place (metadata) or publish it under
 * more names only when it has proven where the inode's names are: the
 * names found by one walk of the workspace, compared with st_nlink. A
 * name elsewhere (a `git clone` of a local repository, `cp -al`, a
 * package store) makes the count fall short, and so does any directory
 * the walk could not read — unknown counts as outside. The walk runs only
 * when the plan has such an inode, stays on the workspace's mount, and is
 * bounded by the transaction's deadline. */
#include "snapshot/census.h"

#include "util/cleanup.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	memset(c, 0, sizeof *c);
}

typedef struct census_walk {
	census *c;
	const char *skip;
	uint64_t deadline;
	uint64_t mnt_id;
	txbox_error *err;
} census_walk;

static int record(census_walk *w, const struct stat *st, const char *rel, const char *name)
{
	census_inode *ci = (census_inode *)census_find(w->c, st->st_ino);
	if (!ci)
		return 0;
	char **n = realloc(ci->names, (ci->nnames + 1) * sizeof *n);
	if (!n)
		return txbox_fail(w->err, -ENOMEM, "out of memory");
	ci->names = n;
	char *path = NULL;
	if (rel[0] ? asprintf(&path, "%s/%s", rel, name) < 0 : !(path = strdup(name)))
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
		if (!depth && w->skip && !strcmp(de->d_name, w->skip))
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
			r = record(w, &st, rel, de->d_name);
		else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			_cleanup_free_ char *child = NULL;
			if (c < 0 || !same_mount(w, c) ||
			    (rel[0] ? asprintf(&child, "%s/%s", rel, de->d_name) < 0 : !(child = strdup(de->d_name)))) {
				w->c->complete = false; /* a mount inside: its names are not the workspace's */
				continue;
			}
			r = walk(w, c, child, depth + 1);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int census_run(census *c, int ws_fd, const char *skip_root_name, uint64_t deadline_ns, txbox_error *err)
{
	c->complete = true;
	if (!c->n)
		return 0;
	qsort(c->inodes, c->n, sizeof *c->inodes, cmp_ino);
	struct statx sx;
	if (statx(ws_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID)) {
		c->complete = false; /* no way to stay on the workspace's mount: prove nothing */
		return 0;
	}
	census_walk w = {.c = c, .skip = skip_root_name, .deadline = deadline_ns, .mnt_id = sx.stx_mnt_id, .err = err};
	return walk(&w, ws_fd, "", 0);
}
