/* journal: the plan of a commit, on disk before the first rename, so a
 * crash at any instant can be reversed to the whole before-state (and a
 * finished commit undone). One op per line; paths hex-encoded so any byte
 * (newlines included) survives:
 *   txbox-journal 2 <trusted|userxattr>
 *   <kind> <existed> <new_ino> <old_ino> <old_mode> <old_uid> <old_gid>
 *       <old_atime_s> <old_atime_ns> <old_mtime_s> <old_mtime_ns> <hexpath|->
 *
 * A journal read back is hostile input (it lives in a directory others
 * may have written): every field is parsed strictly and bounded, paths
 * must be relative and normal (no empty, "." or ".." component), kinds and
 * file types known (never a device node or socket). What a reversal does
 * with it is checked against the files again: inode numbers must match
 * before an op is undone, and owner and mode are restored only from the
 * real file saved at commit time (commit.c), never from these fields. */
#include "snapshot/snapshot.h"

#include "util/cleanup.h"
#include "util/fsutil.h"
#include "util/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOURNAL_NAME "journal"
#define JOURNAL_FIELDS 12

static const char JOURNAL_MAGIC[] = "txbox-journal 2 ";

/* The writer refuses, before anything is applied, what the reader would:
 * a journal recovery cannot read leaves a half-applied commit for ever. */
static int journal_bounds(const plan *p, txbox_error *err)
{
	if (p->n > JOURNAL_OPS_MAX)
		return txbox_fail(err, -E2BIG, "the commit has %zu changes, more than the journal holds (%u)", p->n,
				  JOURNAL_OPS_MAX);
	for (size_t i = 0; i < p->n; i++) {
		size_t pl = strlen(p->ops[i].path);
		if (pl > JOURNAL_PATH_MAX)
			return txbox_fail(err, -ENAMETOOLONG,
					  "a changed path is %zu bytes long, more than a commit accepts (%d): %.64s…",
					  pl, JOURNAL_PATH_MAX, p->ops[i].path);
	}
	return 0;
}

static int journal_too_big(strbuf *sb, txbox_error *err)
{
	strbuf_free(sb);
	return txbox_fail(err, -E2BIG,
			  "the commit's journal would be more than recovery reads (%u MiB); commit fewer or shorter "
			  "paths at once",
			  JOURNAL_MAX >> 20);
}

int journal_write(int txfd, const plan *p, txbox_error *err)
{
	int r = journal_bounds(p, err);
	if (r < 0)
		return r;
	strbuf sb = STRBUF_INIT;
	strbuf_append_str(&sb, JOURNAL_MAGIC);
	strbuf_append_str(&sb, p->userxattr ? "userxattr\n" : "trusted\n");
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < p->n; i++) {
		const plan_op *o = &p->ops[i];
		strbuf_appendf(&sb, "%d %d %llu %llu %o %u %u %lld %ld %lld %ld ", (int)o->kind, o->existed,
			       (unsigned long long)o->new_ino, (unsigned long long)o->old_ino,
			       (unsigned)(o->old_st.st_mode), (unsigned)o->old_st.st_uid, (unsigned)o->old_st.st_gid,
			       (long long)o->old_st.st_atim.tv_sec, o->old_st.st_atim.tv_nsec,
			       (long long)o->old_st.st_mtim.tv_sec, o->old_st.st_mtim.tv_nsec);
		if (!o->path[0])
			strbuf_append(&sb, "-", 1);
		for (const unsigned char *c = (const unsigned char *)o->path; *c; c++) {
			char h[2] = {hex[*c >> 4], hex[*c & 15]};
			strbuf_append(&sb, h, 2);
		}
		strbuf_append(&sb, "\n", 1);
		if (sb.len > JOURNAL_MAX)
			return journal_too_big(&sb, err);
	}
	size_t len;
	_cleanup_free_ char *buf = strbuf_steal(&sb, &len);
	if (!buf)
		return txbox_fail(err, -ENOMEM, "out of memory writing the journal");
	return fs_write_file_atomic(txfd, JOURNAL_NAME, buf, len, 0600, err);
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* An unsigned number in base 10 (or 8), digits only, at most max. */
static bool parse_u64(const char *s, size_t len, unsigned base, unsigned long long max, unsigned long long *out)
{
	if (!len || len > 22)
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (d >= base || d > max || v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static bool parse_s64(const char *s, size_t len, long long *out)
{
	bool neg = len > 0 && s[0] == '-';
	unsigned long long v;
	if (!parse_u64(s + neg, len - neg, 10, (unsigned long long)LLONG_MAX, &v))
		return false;
	*out = neg ? -(long long)v : (long long)v;
	return true;
}

/* A path the journal may name: relative, normal, bounded. */
static bool path_ok(const char *p, size_t len)
{
	if (!len || len > JOURNAL_PATH_MAX || memchr(p, '\0', len))
		return false;
	for (size_t start = 0; start <= len;) {
		const char *slash = memchr(p + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - p) : len;
		size_t cl = end - start;
		if (cl == 0 || (cl == 1 && p[start] == '.') || (cl == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = end + 1;
	}
	return true;
}

static int decode_path(const char *hp, size_t hl, plan_kind kind, char **out)
{
	if (hl == 1 && hp[0] == '-') { /* the workspace root: only its metadata */
		if (kind != PLAN_META)
			return -EINVAL;
		*out = strdup("");
		return *out ? 0 : -ENOMEM;
	}
	if (hl % 2 || hl > 2 * JOURNAL_PATH_MAX)
		return -EINVAL;
	_cleanup_free_ char *path = malloc(hl / 2 + 1);
	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < hl; i += 2) {
		int a = unhex(hp[i]), b = unhex(hp[i + 1]);
		if (a < 0 || b < 0)
			return -EINVAL;
		path[i / 2] = (char)(a << 4 | b);
	}
	path[hl / 2] = '\0';
	if (!path_ok(path, hl / 2))
		return -EINVAL;
	*out = steal_ptr(path);
	return 0;
}

static bool type_ok(unsigned long long mode, bool existed)
{
	if (mode > 0177777)
		return false;
	mode_t t = (mode_t)mode & S_IFMT;
	if (!existed)
		return mode == 0;
	return t == S_IFREG || t == S_IFDIR || t == S_IFLNK || t == S_IFIFO;
}

/* One op line, split at single spaces into exactly JOURNAL_FIELDS fields. */
static int parse_op(const char *line, size_t len, plan_op *o)
{
	const char *f[JOURNAL_FIELDS];
	size_t fl[JOURNAL_FIELDS], nf = 0;
	for (size_t start = 0; start <= len && nf < JOURNAL_FIELDS;) {
		const char *sp = memchr(line + start, ' ', len - start);
		size_t end = sp ? (size_t)(sp - line) : len;
		f[nf] = line + start;
		fl[nf++] = end - start;
		start = end + 1;
		if (!sp)
			break;
	}
	if (nf != JOURNAL_FIELDS || f[JOURNAL_FIELDS - 1] + fl[JOURNAL_FIELDS - 1] != line + len)
		return -EINVAL;
	unsigned long long kind, existed, ni, oi, mode, uid, gid, ans, mns;
	long long as, ms;
	if (!parse_u64(f[0], fl[0], 10, PLAN_KIND_MAX, &kind) || !parse_u64(f[1], fl[1], 10, 1, &existed) ||
	    !parse_u64(f[2], fl[2], 10, ULLONG_MAX, &ni) || !parse_u64(f[3], fl[3], 10, ULLONG_MAX, &oi) ||
	    !parse_u64(f[4], fl[4], 8, 0177777, &mode) || !parse_u64(f[5], fl[5], 10, UINT_MAX - 1, &uid) ||
	    !parse_u64(f[6], fl[6], 10, UINT_MAX - 1, &gid) || !parse_s64(f[7], fl[7], &as) ||
	    !parse_u64(f[8], fl[8], 10, 999999999, &ans) || !parse_s64(f[9], fl[9], &ms) ||
	    !parse_u64(f[10], fl[10], 10, 999999999, &mns))
		return -EINVAL;
	/* inode numbers say what is whose: an op that publishes needs its new
	 * one, an op on an existing entry the old one */
	if (kind == 3 || !type_ok(mode, existed) || (existed && !oi) || (kind != PLAN_DELETE && !ni) ||
	    ((kind == PLAN_META || kind == PLAN_DELETE) && !existed))
		return -EINVAL;
	memset(o, 0, sizeof *o);
	int r = decode_path(f[11], fl[11], (plan_kind)kind, &o->path);
	if (r < 0)
		return r;
	o->kind = (plan_kind)kind;
	o->link_fd = -1;
	o->existed = existed;
	o->new_ino = (ino_t)ni;
	o->old_ino = (ino_t)oi;
	o->old_st.st_mode = (mode_t)mode;
	o->old_st.st_uid = (uid_t)uid;
	o->old_st.st_gid = (gid_t)gid;
	o->old_st.st_atim = (struct timespec){.tv_sec = as, .tv_nsec = (long)ans};
	o->old_st.st_mtim = (struct timespec){.tv_sec = ms, .tv_nsec = (long)mns};
	return 0;
}

static int parse_header(const char *line, size_t len, plan *out)
{
	size_t ml = sizeof JOURNAL_MAGIC - 1;
	if (len < ml || memcmp(line, JOURNAL_MAGIC, ml) != 0)
		return -EINVAL;
	if (len - ml == 9 && !memcmp(line + ml, "userxattr", 9))
		out->userxattr = true;
	else if (!(len - ml == 7 && !memcmp(line + ml, "trusted", 7)))
		return -EINVAL;
	return 0;
}

int journal_parse(const char *buf, size_t len, plan *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	size_t lineno = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl) {
			plan_free(out);
			return txbox_fail(err, -EINVAL, "journal: line %zu is cut short", lineno + 1);
		}
		size_t ll = (size_t)(nl - (buf + pos));
		int r = 0;
		if (lineno++ == 0)
			r = parse_header(buf + pos, ll, out);
		else if (out->n >= JOURNAL_OPS_MAX)
			r = -E2BIG;
		else if (out->n == out->cap) {
			size_t nc = out->cap ? out->cap * 2 : 64;
			plan_op *n = realloc(out->ops, nc * sizeof *n);
			if (n) {
				out->ops = n;
				out->cap = nc;
			}
			r = n ? 0 : -ENOMEM;
		}
		if (r == 0 && lineno > 1) {
			r = parse_op(buf + pos, ll, &out->ops[out->n]);
			out->n += r == 0;
		}
		if (r < 0) {
			plan_free(out);
			if (r == -ENOMEM)
				return txbox_fail(err, r, "out of memory reading the journal");
			return txbox_fail(err, -EINVAL, "journal: %s line %zu", lineno == 1 ? "unknown format," : "bad",
					  lineno);
		}
		pos += ll + 1;
	}
	if (!lineno)
		return txbox_fail(err, -EINVAL, "journal: empty");
	return 0;
}

int journal_read(int txfd, plan *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = fs_read_file_at(txfd, JOURNAL_NAME, JOURNAL_MAX, &buf, &len, err);
	if (r < 0)
		return r;
	return journal_parse(buf, len, out, err);
}
