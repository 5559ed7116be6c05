/* journal: the plan of a commit, on disk before the first rename, so a
 * crash at any instant can be reversed to the whole before-state (and a
 * finished commit undone). One op per line; paths hex-encoded so any byte
 * (newlines included) survives:
 *   txbox-journal 1
 *   <kind> <existed> <new_ino> <old_ino> <old_mode> <old_uid> <old_gid>
 *       <old_atime_s> <old_atime_ns> <old_mtime_s> <old_mtime_ns> <hexpath|->
 */
#include "snapshot/snapshot.h"

#include "util/cleanup.h"
#include "util/fsutil.h"
#include "util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOURNAL_NAME "journal"
#define JOURNAL_MAX (512u * 1024 * 1024)

int journal_write(int txfd, const plan *p, txbox_error *err)
{
	strbuf sb = STRBUF_INIT;
	strbuf_append_str(&sb, "txbox-journal 1\n");
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

int journal_read(int txfd, plan *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = fs_read_file_at(txfd, JOURNAL_NAME, JOURNAL_MAX, &buf, &len, err);
	if (r < 0)
		return r;
	char *save = NULL;
	char *line = strtok_r(buf, "\n", &save);
	if (!line || strcmp(line, "txbox-journal 1") != 0)
		return txbox_fail(err, -EINVAL, "journal: unknown format");
	size_t lineno = 1;
	while ((line = strtok_r(NULL, "\n", &save))) {
		lineno++;
		int kind, existed;
		unsigned long long ni, oi;
		unsigned mode, uid, gid;
		long long as, ms;
		long ans, mns;
		char hp[2 * 4096 + 2];
		if (strlen(line) > sizeof hp + 200 ||
		    sscanf(line, "%d %d %llu %llu %o %u %u %lld %ld %lld %ld %8193s", &kind, &existed, &ni, &oi, &mode,
			   &uid, &gid, &as, &ans, &ms, &mns, hp) != 12 ||
		    kind < PLAN_PUT || kind > PLAN_LINK) {
			plan_free(out);
			return txbox_fail(err, -EINVAL, "journal: malformed line %zu", lineno);
		}
		size_t hl = strlen(hp);
		char *path = calloc(hl / 2 + 1, 1);
		if (!path) {
			plan_free(out);
			return txbox_fail(err, -ENOMEM, "out of memory");
		}
		if (strcmp(hp, "-") != 0) {
			for (size_t i = 0; i + 1 < hl + 1; i += 2) {
				int a = unhex(hp[i]), b = unhex(hp[i + 1]);
				if (a < 0 || b < 0 || (a == 0 && b == 0)) {
					free(path);
					plan_free(out);
					return txbox_fail(err, -EINVAL, "journal: bad path on line %zu", lineno);
				}
				path[i / 2] = (char)(a << 4 | b);
			}
		}
		if (out->n == out->cap) {
			size_t nc = out->cap ? out->cap * 2 : 64;
			plan_op *n = realloc(out->ops, nc * sizeof *n);
			if (!n) {
				free(path);
				plan_free(out);
				return txbox_fail(err, -ENOMEM, "out of memory");
			}
			out->ops = n;
			out->cap = nc;
		}
		plan_op *o = &out->ops[out->n++];
		memset(o, 0, sizeof *o);
		o->kind = (plan_kind)kind;
		o->link_fd = -1;
		o->existed = existed;
		o->new_ino = (ino_t)ni;
		o->old_ino = (ino_t)oi;
		o->old_st.st_mode = mode;
		o->old_st.st_uid = uid;
		o->old_st.st_gid = gid;
		o->old_st.st_atim.tv_sec = as;
		o->old_st.st_atim.tv_nsec = ans;
		o->old_st.st_mtim.tv_sec = ms;
		o->old_st.st_mtim.tv_nsec = mns;
		o->path = path;
	}
	return 0;
}
