/* quota: how much a transaction's layer holds, for the --disk limit. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The inode budget that comes with a disk limit: one inode per 16 KiB,
 * mkfs.ext4's default bytes-per-inode ratio — a transaction may use the
 * inodes its share of the disk would have come with. */
#define QUOTA_BYTES_PER_INODE 16384u

typedef struct quota_use {
	uint64_t bytes;  /* st_blocks * 512 of every entry (hard links: each name) */
	uint64_t inodes; /* entries: files, directories, links, whiteouts */
} quota_use;

/* Deepest directory the walk enters (recursion, one fd per level). */
#define QUOTA_MAX_DEPTH 4096

/* Why a tree could not be measured, and where: so that a rollback names
 * the directory the command made unreadable (or too deep) instead of
 * reading as "over the disk limit". */
typedef struct quota_fault {
	int err;        /* errno of the failed call; 0: no fault */
	bool too_deep;  /* deeper than QUOTA_MAX_DEPTH (err is 0 then) */
	bool elided;    /* path is only the tail of a longer one */
	char path[200]; /* relative to the tree's root; "" is the root */
} quota_fault;

/* Inode limit for a disk limit (0: none). */
uint64_t quota_inode_limit(uint64_t disk_bytes);

/* Measure the tree under dirfd, never following symlinks; stops early once
 * either sum is over its limit (0: no limit). Returns false when the tree
 * cannot be measured (too deep, out of fds, unreadable), with the reason in
 * *fault (NULL-safe): callers treat that as over any limit (fail closed —
 * else one unreadable directory would hide what is below it) but report
 * the reason. */
bool quota_measure(int dirfd, uint64_t max_bytes, uint64_t max_inodes, quota_use *out, quota_fault *fault);

/* The exact check: is the tree over disk_bytes or its inode limit, or
 * unmeasurable (*fault set, NULL-safe)? Names the limit hit in *what
 * ("bytes" or "inodes"; NULL-safe). */
bool quota_over(int dirfd, uint64_t disk_bytes, const char **what, quota_fault *fault);

/* "<what> at '<path>': <cause>" for a fault (an empty string for none). */
void quota_fault_describe(const quota_fault *f, char *buf, size_t len);

/* The periodic check while the command runs, kept O(1) in the common case:
 * the layer lives on the host file system, so it cannot have grown by more
 * than that file system's used blocks and inodes (statfs) since the last
 * walk. The tree is walked only when that bound no longer proves the layer
 * is under the limit, and then at most once per 20x the last walk's
 * duration (a walk of a big layer costs at most ~5% of a CPU). Space freed
 * elsewhere on the file system meanwhile would hide as much growth, so the
 * tree is also walked every 2 s (same rate cap) whatever statfs says.
 * How often to check follows the headroom left (quota_watch_interval_ns):
 * data is written at most at memory speed (fallocate, which is not, is
 * refused by seccomp), so a check comes before the headroom could be used
 * up at that speed, at most every 100 ms and at least every 10 ms. */
typedef struct quota_watch {
	int fd;
	uint64_t disk_bytes, inodes;
	uint64_t fs_bytes, fs_inodes; /* the file system's used space at the last walk */
	bool fs_counts_inodes;        /* f_files is meaningful (not btrfs) */
	quota_use at_walk;            /* the layer at the last walk */
	uint64_t next_walk_ns, last_walk_ns, walk_cost_ns;
	int init_pid;                 /* the sandbox's init (host pid), 0 = unknown */
	uint64_t interval_ns;         /* until the next check */
	quota_fault fault;            /* why the last walk failed (err/too_deep 0: it did not) */
} quota_watch;

void quota_watch_init(quota_watch *w, int upper_fd, uint64_t disk_bytes, uint64_t now_ns);
/* True when the layer is (or cannot be shown not to be) over the limit;
 * w->fault says when it could not be measured.
 * With init_pid set, each walk adds what the sandbox's processes hold in
 * files they unlinked (quota_unlinked_open_bytes). */
bool quota_watch_over(quota_watch *w, uint64_t now_ns);
/* Time to wait before the next quota_watch_over. */
uint64_t quota_watch_interval_ns(const quota_watch *w);

/* Bytes of the regular files that init (a host pid) and its descendants
 * hold open but have unlinked: in no walk of the layer, yet on the disk
 * until closed. Each file counts once; files of memory file systems are
 * the memory limit's. */
uint64_t quota_unlinked_open_bytes(int init_pid);
