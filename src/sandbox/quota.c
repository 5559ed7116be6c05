/* quota: the disk limit of a transaction is enforced on its layer, in bytes
 * and in inodes (QUOTA_BYTES_PER_INODE). While the command runs the
 * supervisor polls quota_watch_over every 100 ms; at the end quota_over
 * measures the layer exactly before anything is committed. The per-file
 * size is also capped by RLIMIT_FSIZE, so no single write runs past the
 * limit between two checks. */
#include "sandbox/quota.h"

#include "util/cleanup.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

uint64_t quota_inode_limit(uint64_t disk_bytes)
{
	if (!disk_bytes)
		return 0;
	uint64_t n = disk_bytes / QUOTA_BYTES_PER_INODE;
	return n < 64 ? 64 : n; /* a tiny --disk still allows a handful of files */
}

static bool over(const quota_use *u, uint64_t max_bytes, uint64_t max_inodes)
{
	return (max_bytes && u->bytes > max_bytes) || (max_inodes && u->inodes > max_inodes);
}

/* A fault at name in the directory being walked; the callers above put
 * their own names in front as the walk unwinds. */
static bool fail_at(quota_fault *f, const char *name, int err)
{
	*f = (quota_fault){.err = err};
	snprintf(f->path, sizeof f->path, "%s", name);
	f->elided = strlen(name) >= sizeof f->path;
	return false;
}

/* Put dir/ in front of the fault's path; past the buffer only the tail
 * (the part nearest the fault) is kept. */
static void fault_prepend(quota_fault *f, const char *dir)
{
	size_t n = strlen(dir), have = strlen(f->path);
	if (f->elided || n + 1 + have >= sizeof f->path) {
		f->elided = true;
		return;
	}
	memmove(f->path + n + 1, f->path, have + 1);
	memcpy(f->path, dir, n);
	f->path[n] = have ? '/' : '\0';
}

static bool walk(int dfd, quota_use *u, uint64_t max_bytes, uint64_t max_inodes, unsigned depth,
		 quota_fault *f)
{
	if (depth > QUOTA_MAX_DEPTH) {
		fail_at(f, "", 0);
		f->too_deep = true;
		return false;
	}
	/* own open file description: never share a readdir position */
	int dupfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dupfd < 0)
		return fail_at(f, "", errno);
	DIR *d = fdopendir(dupfd);
	if (!d) {
		int e = errno;
		close(dupfd);
		return fail_at(f, "", e);
	}
	bool ok = true;
	struct dirent *de;
	while (ok && !over(u, max_bytes, max_inodes) && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ok = errno == ENOENT || fail_at(f, de->d_name, errno); /* ENOENT: removed meanwhile */
			continue;
		}
		u->bytes += (uint64_t)st.st_blocks * 512;
		u->inodes++;
		if (!S_ISDIR(st.st_mode) || over(u, max_bytes, max_inodes))
			continue;
		int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c < 0)
			ok = fail_at(f, de->d_name, errno);
		else if (!(ok = walk(c, u, max_bytes, max_inodes, depth + 1, f)))
			fault_prepend(f, de->d_name);
		if (c >= 0)
			close(c);
	}
	closedir(d);
	return ok;
}

bool quota_measure(int dirfd, uint64_t max_bytes, uint64_t max_inodes, quota_use *out, quota_fault *fault)
{
	quota_fault ignored;
	quota_fault *f = fault ? fault : &ignored;
	*f = (quota_fault){0};
	*out = (quota_use){0, 0};
	return walk(dirfd, out, max_bytes, max_inodes, 0, f);
}

bool quota_over(int dirfd, uint64_t disk_bytes, const char **what, quota_fault *fault)
{
	uint64_t max_inodes = quota_inode_limit(disk_bytes);
	quota_use u;
	bool ok = quota_measure(dirfd, disk_bytes, max_inodes, &u, fault);
	bool inodes = ok && max_inodes && u.inodes > max_inodes;
	if (what)
		*what = inodes ? "inodes" : "bytes";
	return !ok || over(&u, disk_bytes, max_inodes);
}

void quota_fault_describe(const quota_fault *f, char *buf, size_t len)
{
	const char *where = f->path[0] ? f->path : ".";
	const char *tail = f->elided ? "\xe2\x80\xa6/" : ""; /* "…/": only the end of the path */
	if (f->too_deep)
		snprintf(buf, len, "the layer is more than %d directories deep at '%s%s'", QUOTA_MAX_DEPTH, tail,
			 where);
	else if (f->err)
		snprintf(buf, len, "walking the layer at '%s%s': %s%s", tail, where, strerror(f->err),
			 f->err == EACCES ? " (a directory its owner cannot read)" : "");
	else if (len)
		buf[0] = '\0';
}

/* Used bytes and inodes of the file system holding fd; *counts_inodes:
 * whether it counts inodes at all (btrfs does not). */
static bool fs_used(int fd, uint64_t *bytes, uint64_t *inodes, bool *counts_inodes)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return false;
	uint64_t unit = sf.f_frsize ? (uint64_t)sf.f_frsize : (uint64_t)sf.f_bsize;
	*bytes = ((uint64_t)sf.f_blocks - (uint64_t)sf.f_bfree) * unit;
	*inodes = (uint64_t)sf.f_files - (uint64_t)sf.f_ffree;
	if (counts_inodes)
		*counts_inodes = sf.f_files > 0;
	return true;
}

/* The fastest the command can fill the disk without fallocate: writing
 * zeros to the page cache (about 5 GiB/s here) with a margin. */
#define QUOTA_FILL_BYTES_PER_S (8ull << 30)
#define QUOTA_CHECK_MIN_NS 10000000ull
#define QUOTA_CHECK_MAX_NS 100000000ull

/* Check again before the headroom left could be written at full speed. */
static void plan_next_check(quota_watch *w, uint64_t used_bound)
{
	uint64_t headroom = used_bound < w->disk_bytes ? w->disk_bytes - used_bound : 0;
	uint64_t ns = headroom / (QUOTA_FILL_BYTES_PER_S / 1000000000ull);
	w->interval_ns = ns < QUOTA_CHECK_MIN_NS ? QUOTA_CHECK_MIN_NS : ns > QUOTA_CHECK_MAX_NS ? QUOTA_CHECK_MAX_NS : ns;
}

uint64_t quota_watch_interval_ns(const quota_watch *w) { return w->interval_ns; }

void quota_watch_init(quota_watch *w, int upper_fd, uint64_t disk_bytes, uint64_t now_ns)
{
	*w = (quota_watch){.fd = upper_fd, .disk_bytes = disk_bytes, .inodes = quota_inode_limit(disk_bytes),
			   .next_walk_ns = now_ns, .last_walk_ns = now_ns};
	plan_next_check(w, 0);
	if (!disk_bytes)
		return;
	/* A new layer is empty: the baseline is the file system as it is. */
	if (!fs_used(upper_fd, &w->fs_bytes, &w->fs_inodes, &w->fs_counts_inodes))
		w->fs_counts_inodes = false;
}

static uint64_t grown(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

/* Can the layer be over the limit, given how much the file system grew
 * since the last walk? Data the command unlinked but keeps open is in the
 * file system's count, not in the tree: it makes this say "maybe" (and a
 * walk run), never "no". */
static bool maybe_over(quota_watch *w, uint64_t *fsb, uint64_t *fsi)
{
	if (!fs_used(w->fd, fsb, fsi, NULL))
		return true;
	if (w->at_walk.bytes + grown(*fsb, w->fs_bytes) > w->disk_bytes)
		return true;
	if (!w->fs_counts_inodes)
		return true;
	return w->at_walk.inodes + grown(*fsi, w->fs_inodes) > w->inodes;
}

/* Without a sign of growth the layer is still walked now and then: space
 * freed elsewhere on the file system meanwhile hides as much growth. */
#define QUOTA_WALK_ANYWAY_NS 2000000000ull

bool quota_watch_over(quota_watch *w, uint64_t now_ns)
{
	uint64_t fsb = 0, fsi = 0;
	bool maybe = maybe_over(w, &fsb, &fsi);
	plan_next_check(w, w->at_walk.bytes + grown(fsb, w->fs_bytes));
	if (now_ns < w->next_walk_ns || (!maybe && now_ns < w->last_walk_ns + QUOTA_WALK_ANYWAY_NS))
		return false;
	uint64_t t0 = clock_now_ns();
	quota_use u;
	if (!quota_measure(w->fd, w->disk_bytes, w->inodes, &u, &w->fault))
		return true;
	uint64_t hidden = w->init_pid > 0 ? quota_unlinked_open_bytes(w->init_pid) : 0;
	if (over(&(quota_use){.bytes = u.bytes + hidden, .inodes = u.inodes}, w->disk_bytes, w->inodes))
		return true;
	uint64_t t1 = clock_now_ns();
	w->at_walk = u;
	plan_next_check(w, u.bytes + hidden);
	w->fs_bytes = fsb;
	w->fs_inodes = fsi;
	w->walk_cost_ns = t1 - t0;
	w->last_walk_ns = t1;
	w->next_walk_ns = t1 + 20 * w->walk_cost_ns;
	return false;
}

/* ---- unlinked files held open ------------------------------------------- */

#define TREE_MAX 65536u /* processes followed below init */

typedef struct held_file {
	dev_t dev;
	ino_t ino;
	uint64_t bytes;
} held_file;

typedef struct held_set {
	held_file *v;
	size_t n, cap;
} held_set;

static void held_set_free(held_set *h) { free(h->v); }

static int held_cmp(const void *a, const void *b)
{
	const held_file *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The children of every thread of pid, appended to tree (bounded). */
static void add_children(int pid, int *tree, size_t *n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char cpath[300];
		snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", pid, de->d_name);
		_cleanup_fclose_ FILE *f = fopen(cpath, "re");
		int c;
		while (f && *n < TREE_MAX && fscanf(f, "%d", &c) == 1)
			tree[(*n)++] = c;
	}
}

/* The unlinked regular files among pid's descriptors, into h. */
static void add_held(int pid, held_set *h)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", pid);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		/* O_PATH through the magic link: the open file itself, no I/O */
		_cleanup_close_ int f = openat(dirfd(d), de->d_name, O_PATH | O_CLOEXEC);
		struct stat st;
		struct statfs sf;
		if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || fstatfs(f, &sf) < 0 ||
		    sf.f_type == TMPFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC)
			continue;
		if (h->n == h->cap) {
			size_t ncap = h->cap ? 2 * h->cap : 64;
			held_file *nv = realloc(h->v, ncap * sizeof *nv);
			if (!nv)
				return;
			h->v = nv;
			h->cap = ncap;
		}
		h->v[h->n++] = (held_file){.dev = st.st_dev, .ino = st.st_ino, .bytes = (uint64_t)st.st_blocks * 512};
	}
}

uint64_t quota_unlinked_open_bytes(int init_pid)
{
	_cleanup_free_ int *tree = malloc(TREE_MAX * sizeof *tree);
	if (!tree)
		return 0;
	size_t n = 0;
	tree[n++] = init_pid;
	_cleanup_(held_set_free) held_set h = {0};
	for (size_t i = 0; i < n; i++) {
		add_children(tree[i], tree, &n);
		add_held(tree[i], &h);
	}
	if (h.n == 0)
		return 0;
	qsort(h.v, h.n, sizeof *h.v, held_cmp);
	uint64_t sum = 0;
	for (size_t i = 0; i < h.n; i++)
		if (i == 0 || held_cmp(&h.v[i - 1], &h.v[i]) != 0)
			sum += h.v[i].bytes;
	return sum;
}
