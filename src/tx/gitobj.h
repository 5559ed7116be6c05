/* gitobj: a bounded reader of a git object store written by the sandboxed
 * command (hostile): loose objects, pack indexes (v2) and packs with their
 * deltas, and a walk through commit parents and tag objects from a set of
 * roots. Used by the effect check (tx/effects.c) to tell whether a deleted
 * ref's commits stay reachable.
 *
 * Everything it reads is attacker controlled: every size, offset, count and
 * depth taken from a file is checked against a bound before use, what
 * cannot be read is an error (never a guess), and memory is bounded per
 * object and per store. Files are reached through a caller's gitobj_io, so
 * the store can be the workspace as it will be after the commit (layer over
 * workspace) or a plain directory. No global state. */
#pragma once

#include "util/cleanup.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An object's inflated bytes kept (commits, tags, what their deltas build
 * on): a commit's header (tree, parents) fits in far less; see gitobj.c. */
#define GITOBJ_MAX 65536

typedef struct gitobj_oid {
	unsigned char b[32]; /* SHA-1 uses the first 20 */
} gitobj_oid;

typedef enum gitobj_type {
	GITOBJ_NONE = 0,
	GITOBJ_COMMIT = 1,
	GITOBJ_TREE = 2,
	GITOBJ_BLOB = 3,
	GITOBJ_TAG = 4,
	_GITOBJ_TYPE_MAX,
} gitobj_type;

const char *gitobj_type_to_string(gitobj_type t);

/* How the store reaches its files. Paths are the git dir given to
 * gitobj_open followed by e.g. "objects/pack/pack-X.idx". */
typedef struct gitobj_io {
	/* open a regular file read-only, never through a symlink: fd or -errno
	 * (-ENOENT: none) */
	int (*open)(void *ctx, const char *path);
	/* call add(arg, name) for the entries of directory path (absent: none) */
	void (*list)(void *ctx, const char *path, void (*add)(void *arg, const char *name), void *arg);
	void *ctx;
} gitobj_io;

/* The files of a plain directory (*dirfd, which must outlive the io):
 * beneath it, never through a symlink. */
gitobj_io gitobj_io_plain(const int *dirfd);

/* hexlen (40 or 64) lowercase hex digits at s: 0, else -1. */
int gitobj_oid_parse(const char *s, size_t hexlen, gitobj_oid *o);
bool gitobj_oid_null(const gitobj_oid *o);

/* The whole of fd, a regular file of at most max bytes, NUL-terminated:
 * 0, or -errno (-EINVAL: not a regular file, -EFBIG: too large). Shared
 * with the effect check's reading of refs and reflogs. */
int gitobj_read_regular(int fd, size_t max, char **out, size_t *len);

typedef struct gitobj_store gitobj_store;

/* The object store of git dir `dir` (a path prefix ending in '/', or ""),
 * object ids of hexlen (40: SHA-1, 64: SHA-256) hex digits. io must
 * outlive the store. 0 or -ENOMEM/-EINVAL. */
int gitobj_open(const gitobj_io *io, const char *dir, size_t hexlen, gitobj_store **out);
gitobj_store *gitobj_free(gitobj_store *d);
static inline void gitobj_freep(gitobj_store **d) { gitobj_free(*d); }
#define _cleanup_gitobj_ _cleanup_(gitobj_freep)

const char *gitobj_dir(const gitobj_store *d);
size_t gitobj_hexlen(const gitobj_store *d);

/* Object o as git reads it (packs first, then loose), into out
 * (GITOBJ_MAX + 1 bytes): its type, *len its bytes (a commit or tag longer
 * than GITOBJ_MAX is cut there, *cut set), or -errno with err saying why
 * (-ENOENT: in no pack nor loose; -EBADMSG: corrupt; -E2BIG: over a bound;
 * -ELOOP: a delta chain too deep or circular). */
int gitobj_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len, bool *cut,
		txbox_error *err);

/* Does a pack of the store list o? */
bool gitobj_in_packs(gitobj_store *d, const gitobj_oid *o);

/* Does the store hold o (a pack lists it, or its loose file opens)? 1, 0,
 * or -errno (a loose file that cannot be opened). */
int gitobj_exists(gitobj_store *d, const gitobj_oid *o);

/* Does a pack of the store list every object of the v2 index in fd (an
 * index the caller opened)? 1, 0, or -errno (not an index, too large). */
int gitobj_idx_all_listed(gitobj_store *d, int fd);

/* Call fn for each object a commit links to (its parents) or a tag names
 * (its object), in the object's bytes buf[0..len) (NUL at buf[len]).
 * A header cut before its end (cut), or malformed: -EBADMSG/-E2BIG; what
 * fn returns < 0 stops it. */
int gitobj_links(const unsigned char *buf, size_t len, bool cut, gitobj_type type, size_t hexlen,
		 int (*fn)(void *arg, const gitobj_oid *o), void *arg);

/* The bounded walk: roots added, then questions answered by walking on
 * as far as needed (resumed by the next question, never restarted). */
int gitobj_walk_add(gitobj_store *d, const gitobj_oid *o); /* 0 or -ENOMEM */
void gitobj_walk_fail(gitobj_store *d);                    /* nothing known: every question is no */
bool gitobj_walk_started(const gitobj_store *d);
/* Are all n targets reachable from the roots (through commit parents and
 * tag objects; an object that cannot be read is skipped)? 1 yes, 0 no
 * (every object reachable read), or -errno: unknown, the walk stopped at
 * a bound (-E2BIG: 20,000 objects followed, -ENOSPC: 200,000 ids known,
 * -ENOMEM). Only 1 keeps a ref's commits. */
int gitobj_walk_reaches(gitobj_store *d, const gitobj_oid *targets, size_t n);

/* The id git gives content (SHA-1 of "blob SIZE\0" + the bytes): of
 * memory, or of the regular file fd (at most max bytes, read by pread:
 * -EINVAL not a regular file, -EFBIG larger, -EIO it shrank). */
void gitobj_blob_id_mem(const void *data, size_t len, gitobj_oid *o);
int gitobj_blob_id(int fd, uint64_t max, gitobj_oid *o);

/* One entry of a git index: path (valid during the callback only), stage
 * (0: merged; 1-3: a conflict's sides), mode, and the stat data git keeps
 * to tell a file unchanged without reading it (size: the work-tree file's,
 * truncated to 32 bits as git does). */
typedef struct gitobj_index_entry {
	const char *path;
	gitobj_oid oid;
	unsigned stage;
	uint32_t mode, mtime_s, mtime_ns, size;
} gitobj_index_entry;

/* Call fn for each entry of index bytes buf[0..len) (versions 2-4, object
 * ids of hashlen bytes), in the index's (path) order, until fn returns
 * non-zero (< 0: that error; > 0: stop, 0 returned). -EBADMSG: not an
 * index, or an entry runs past the end or has a path over 4095 bytes. */
int gitobj_index_each(const unsigned char *buf, size_t len, size_t hashlen,
		      int (*fn)(void *arg, const gitobj_index_entry *e), void *arg);
