/* sandbox/limits: resource limits.
 *
 * Child side: RLIMIT_* (harden_rlimits_apply, called by harden_child_apply).
 *
 * Parent side: one cgroup per transaction, named txbox-<txid> under a
 * "txbox" directory beneath the caller's own cgroup:
 *
 *   cgroup v2  when the caller's cgroup offers the memory and pids
 *              controllers to its children (cgroup.subtree_control, or
 *              enabling them there succeeds). Limits: memory.max,
 *              memory.swap.max = 0, memory.oom.group = 1, pids.max.
 *              Hits: memory.events oom_kill, pids.events max.
 *   cgroup v1  else, per hierarchy: memory (memory.limit_in_bytes, and
 *              memory.memsw.limit_in_bytes when swap accounting exists),
 *              pids (pids.max), cpuacct (usage accounting for the CPU
 *              limit). Hits: memory.oom_control oom_kill (or failcnt on
 *              kernels without that field), pids.events max.
 *   RLIMIT     else: NULL, with the reason in *warn.
 *
 * CPU: cgroup v2 cpu.max is bandwidth, not a budget of CPU seconds. The
 * budget is enforced per process by RLIMIT_CPU (harden_opts.cpu_seconds;
 * SIGXCPU then SIGKILL); the cgroup's usage (v2 cpu.stat usage_usec, v1
 * cpuacct.usage) reports "cpu" when the whole tree used up the budget. With
 * the RLIMIT mechanism the caller detects a CPU hit from the exit signal
 * (SIGXCPU, or SIGKILL while cpu_seconds was set).
 *
 * We never move the calling process between cgroups: when v2's "no internal
 * processes" rule prevents enabling controllers in the caller's cgroup, we
 * fall back rather than reorganise the caller's hierarchy. */
#include "sandbox/cgroup.h"
#include "sandbox/harden.h"
#include "sandbox/rlimits.h"

#include "util/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- rlimits (child side) ---------------------------------------------- */

static int lower_rlimit(int resource, const char *name, rlim_t soft, rlim_t hard,
			txbox_error *err)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) < 0)
		return txbox_fail_errno(err, -errno, "rlimit: reading %s", name);
	if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
		hard = cur.rlim_max; /* never raise: that would need CAP_SYS_RESOURCE */
	if (soft > hard)
		soft = hard;
	struct rlimit nl = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(resource, &nl) < 0)
		return txbox_fail_errno(err, -errno, "rlimit: setting %s to %llu", name,
					(unsigned long long)soft);
	return 0;
}

int harden_rlimits_apply(const harden_opts *o, txbox_error *err)
{
	int r;
	if (o->cpu_seconds) {
		rlim_t s = (rlim_t)o->cpu_seconds;
		if ((r = lower_rlimit(RLIMIT_CPU, "RLIMIT_CPU", s, s + 1, err)) < 0)
			return r;
	}
	if (o->address_space_bytes &&
	    (r = lower_rlimit(RLIMIT_AS, "RLIMIT_AS", o->address_space_bytes,
			      o->address_space_bytes, err)) < 0)
		return r;
	if (o->nofile && (r = lower_rlimit(RLIMIT_NOFILE, "RLIMIT_NOFILE", o->nofile, o->nofile, err)) < 0)
		return r;
	if (o->nproc && (r = lower_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", o->nproc, o->nproc, err)) < 0)
		return r;
	if (o->fsize_bytes &&
	    (r = lower_rlimit(RLIMIT_FSIZE, "RLIMIT_FSIZE", o->fsize_bytes, o->fsize_bytes, err)) < 0)
		return r;
	if (o->no_core && (r = lower_rlimit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0, err)) < 0)
		return r;
	/* Queued signals are counted per user up the user-namespace chain:
	 * rootless, the command would spend the host user's own budget. */
	return lower_rlimit(RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", LIMITS_SIGPENDING, LIMITS_SIGPENDING, err);
}

/* ---- small file helpers ------------------------------------------------ */

#define TXBOX_CG_PARENT "txbox"
#define TXBOX_CG_PREFIX "txbox-"

/* Up to size-1 bytes of a (pseudo) file, NUL-terminated; -errno on failure. */
static ssize_t read_text_at(int dirfd, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

static ssize_t read_text(const char *path, char *buf, size_t size)
{
	return read_text_at(AT_FDCWD, path, buf, size);
}

static int write_text(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int write_at(const char *dir, const char *file, const char *text)
{
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	return write_text(p, text);
}

static int write_u64_at(const char *dir, const char *file, uint64_t v)
{
	char num[32];
	snprintf(num, sizeof(num), "%" PRIu64, v);
	return write_at(dir, file, num);
}

static ssize_t read_at(const char *dir, const char *file, char *buf, size_t size)
{
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	return read_text(p, buf, size);
}

/* Value of "key N" in the text of a flat-keyed file (memory.events,
 * pids.events, cpu.stat, memory.oom_control). -1 when absent. */
static int64_t key_in(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return strtoll(line + klen + 1, NULL, 10);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return -1;
}

static int64_t keyed_value(const char *dir, const char *file, const char *key)
{
	char buf[4096];
	if (read_at(dir, file, buf, sizeof(buf)) < 0)
		return -1;
	return key_in(buf, key);
}

static int64_t single_value(const char *dir, const char *file)
{
	char buf[64];
	if (read_at(dir, file, buf, sizeof(buf)) <= 0)
		return -1;
	if (!isdigit((unsigned char)buf[0]))
		return -1;
	return strtoll(buf, NULL, 10);
}

static bool word_in_list(const char *list, const char *word, const char *seps)
{
	size_t wl = strlen(word);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);
		if (n == wl && strncmp(p, word, wl) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- locating hierarchies ---------------------------------------------- */

/* Undo mountinfo's octal escapes (\040 etc.) in place. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* /proc/self/mountinfo and /proc/self/cgroup, each read once however many
 * hierarchies are looked up (mountinfo is formatted anew, every mount of
 * the namespace, on each read). */
typedef struct cg_sources {
	char *text[2];
	size_t len[2];
} cg_sources;
enum { SRC_MOUNTINFO, SRC_CGROUP };

static void cg_sources_free(cg_sources *src)
{
	free(src->text[SRC_MOUNTINFO]);
	free(src->text[SRC_CGROUP]);
}

static int slurp(const char *path, char **out, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 8192, n = 0;
	_cleanup_free_ char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			return -ENOMEM;
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *bigger = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!bigger)
				return -ENOMEM;
			buf = bigger;
			cap *= 2;
		}
	}
	*len = n;
	*out = steal_ptr(buf);
	return 0;
}

/* A stream over one of the sources, read on first use. */
static FILE *cg_source_open(cg_sources *src, int which)
{
	static const char *const paths[2] = {"/proc/self/mountinfo", "/proc/self/cgroup"};
	if (!src->text[which]) {
		int r = slurp(paths[which], &src->text[which], &src->len[which]);
		if (r < 0) {
			errno = -r;
			return NULL;
		}
	}
	if (src->len[which] == 0) {
		errno = ENOENT;
		return NULL;
	}
	return fmemopen(src->text[which], src->len[which], "r");
}

/* Mount point and root of the cgroup hierarchy: v2 when controller is NULL,
 * else the v1 hierarchy whose super options name controller. */
static int find_cgroup_mount(cg_sources *srcs, const char *controller, char **mountpoint, char **root)
{
	_cleanup_fclose_ FILE *f = cg_source_open(srcs, SRC_MOUNTINFO);
	if (!f)
		return -errno;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char *fields[5] = {0};
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " ", &save))
			fields[i] = tok;
		if (!fields[4])
			continue;
		char *fstype = sep + 3;
		char *src = strchr(fstype, ' ');
		if (!src)
			continue;
		*src++ = '\0';
		char *superopts = strchr(src, ' ');
		if (!superopts)
			continue;
		superopts++;
		superopts[strcspn(superopts, "\n")] = '\0';
		if (controller) {
			if (strcmp(fstype, "cgroup") != 0 || !word_in_list(superopts, controller, ","))
				continue;
		} else if (strcmp(fstype, "cgroup2") != 0) {
			continue;
		}
		unescape_octal(fields[3]);
		unescape_octal(fields[4]);
		*mountpoint = strdup(fields[4]);
		*root = strdup(fields[3]);
		if (!*mountpoint || !*root) {
			free(*mountpoint);
			free(*root);
			*mountpoint = *root = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	return -ENOENT;
}

/* The caller's cgroup path in a hierarchy, from /proc/self/cgroup. */
static int own_cgroup_path(cg_sources *src, const char *controller, char **path)
{
	_cleanup_fclose_ FILE *f = cg_source_open(src, SRC_CGROUP);
	if (!f)
		return -errno;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		if (!c1)
			continue;
		char *c2 = strchr(c1 + 1, ':');
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1;
		bool match = controller ? word_in_list(ctrls, controller, ",")
					: (strncmp(line, "0:", 2) == 0 && *ctrls == '\0');
		if (!match)
			continue;
		*path = strdup(c2 + 1);
		return *path ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

/* Directory of the caller's own cgroup in a hierarchy. */
static int own_cgroup_dir(cg_sources *src, const char *controller, char **dir)
{
	_cleanup_free_ char *mnt = NULL, *root = NULL, *path = NULL;
	int r = find_cgroup_mount(src, controller, &mnt, &root);
	if (r < 0)
		return r;
	if ((r = own_cgroup_path(src, controller, &path)) < 0)
		return r;
	const char *rel = path;
	size_t rl = strlen(root);
	/* A mount of a sub-tree (containers without a cgroup namespace). */
	if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0 &&
	    (path[rl] == '/' || path[rl] == '\0'))
		rel = path + rl;
	while (*rel == '/')
		rel++;
	if (asprintf(dir, "%s%s%s", mnt, *rel ? "/" : "", rel) < 0)
		return -ENOMEM;
	if (!is_dir(*dir)) {
		free(*dir);
		*dir = NULL;
		return -ENOENT;
	}
	return 0;
}

/* ---- the cgroup object ------------------------------------------------- */

enum { V1_MEMORY, V1_PIDS, V1_CPUACCT, V1_N };
static const char *const v1_controllers[V1_N] = {"memory", "pids", "cpuacct"};

struct limits_cgroup {
	txbox_limit_mechanism mech;
	char *v2;         /* v2: the transaction's cgroup */
	char *v1[V1_N];   /* v1: the transaction's cgroup per hierarchy, or NULL */
	uint64_t cpu_seconds;
};

static bool txid_valid(const char *txid)
{
	if (!txid || !*txid || txid[0] == '.' || strlen(txid) > 128)
		return false;
	for (const char *p = txid; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return true;
}

/* mkdir base/txbox/txbox-<txid>; a leftover with the same name is removed
 * first when empty. */
static int make_tx_cgroup(const char *base, const char *txid, bool v2, char **out)
{
	_cleanup_free_ char *parent = NULL, *leaf = NULL;
	if (asprintf(&parent, "%s/" TXBOX_CG_PARENT, base) < 0)
		return -ENOMEM;
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (v2) {
		/* Offer memory and pids to our children (no processes live in
		 * the txbox parent, so this is allowed). */
		int r = write_at(parent, "cgroup.subtree_control", "+memory +pids");
		if (r < 0)
			return r;
	}
	if (asprintf(&leaf, "%s/" TXBOX_CG_PREFIX "%s", parent, txid) < 0)
		return -ENOMEM;
	if (mkdir(leaf, 0755) < 0) {
		if (errno != EEXIST)
			return -errno;
		if (rmdir(leaf) < 0 || mkdir(leaf, 0755) < 0)
			return -errno; /* same txid, still populated: refuse */
	}
	*out = steal_ptr(leaf);
	return 0;
}

static int setup_v2(limits_cgroup *cg, cg_sources *src, const char *txid, const txbox_limits *lim,
		    char *why, size_t whylen)
{
	_cleanup_free_ char *own = NULL;
	int r = own_cgroup_dir(src, NULL, &own);
	if (r < 0) {
		snprintf(why, whylen, "cgroup v2: no hierarchy or own cgroup found");
		return r;
	}
	char ctl[512];
	if (read_at(own, "cgroup.controllers", ctl, sizeof(ctl)) < 0 ||
	    !word_in_list(ctl, "memory", " \n") || !word_in_list(ctl, "pids", " \n")) {
		snprintf(why, whylen, "cgroup v2: memory/pids controllers not available in %s", own);
		return -ENOTSUP;
	}
	char sub[512];
	if (read_at(own, "cgroup.subtree_control", sub, sizeof(sub)) < 0 ||
	    !word_in_list(sub, "memory", " \n") || !word_in_list(sub, "pids", " \n")) {
		/* Works only when no process lives in own (or own is the root). */
		r = write_at(own, "cgroup.subtree_control", "+memory +pids");
		if (r < 0) {
			snprintf(why, whylen,
				 "cgroup v2: cannot enable memory/pids for children of %s: %s", own,
				 strerror(-r));
			return r;
		}
	}
	r = make_tx_cgroup(own, txid, true, &cg->v2);
	if (r < 0) {
		snprintf(why, whylen, "cgroup v2: cannot create txbox-%s under %s: %s", txid, own,
			 strerror(-r));
		return r;
	}
	if (lim->memory_bytes) {
		if ((r = write_u64_at(cg->v2, "memory.max", lim->memory_bytes)) < 0) {
			snprintf(why, whylen, "cgroup v2: setting memory.max: %s", strerror(-r));
			return r;
		}
		(void)write_at(cg->v2, "memory.swap.max", "0"); /* absent without swap accounting */
	}
	(void)write_at(cg->v2, "memory.oom.group", "1");
	if (lim->pids && (r = write_u64_at(cg->v2, "pids.max", lim->pids)) < 0) {
		snprintf(why, whylen, "cgroup v2: setting pids.max: %s", strerror(-r));
		return r;
	}
	cg->mech = TXBOX_LIMITS_CGROUP2;
	return 0;
}

static int setup_v1_one(limits_cgroup *cg, cg_sources *src, int which, const char *txid,
			const txbox_limits *lim)
{
	_cleanup_free_ char *own = NULL;
	int r = own_cgroup_dir(src, v1_controllers[which], &own);
	if (r < 0)
		return r;
	char *dir = NULL;
	if ((r = make_tx_cgroup(own, txid, false, &dir)) < 0)
		return r;
	cg->v1[which] = dir;
	switch (which) {
	case V1_MEMORY:
		if (lim->memory_bytes) {
			if ((r = write_u64_at(dir, "memory.limit_in_bytes", lim->memory_bytes)) < 0)
				return r;
			/* memory+swap; absent (or EINVAL) without swap accounting */
			(void)write_u64_at(dir, "memory.memsw.limit_in_bytes", lim->memory_bytes);
		}
		break;
	case V1_PIDS:
		if (lim->pids && (r = write_u64_at(dir, "pids.max", lim->pids)) < 0)
			return r;
		break;
	default:
		break;
	}
	return 0;
}

static void remove_dir_quiet(char **dir)
{
	if (*dir) {
		(void)rmdir(*dir);
		free(*dir);
		*dir = NULL;
	}
}

limits_cgroup *limits_cgroup_create(const char *txid, const txbox_limits *lim,
				    txbox_limit_mechanism *mech, txbox_error *warn)
{
	static const txbox_limits none = {0};
	if (mech)
		*mech = TXBOX_LIMITS_RLIMIT;
	if (!lim)
		lim = &none;
	if (!txid_valid(txid)) {
		txbox_fail(warn, -EINVAL, "cgroups: invalid transaction id for a cgroup name; limits fall back to rlimits");
		return NULL;
	}
	limits_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg) {
		txbox_fail(warn, -ENOMEM, "cgroups: out of memory; limits fall back to rlimits");
		return NULL;
	}
	cg->cpu_seconds = lim->cpu_seconds;

	char why2[512] = "";
	cg_sources src = {0};
	if (setup_v2(cg, &src, txid, lim, why2, sizeof(why2)) == 0) {
		cg_sources_free(&src);
		if (mech)
			*mech = cg->mech;
		return cg;
	}
	remove_dir_quiet(&cg->v2);

	/* cgroup v1, hierarchy by hierarchy. */
	int errs[V1_N] = {0};
	for (int i = 0; i < V1_N; i++) {
		if (i == V1_CPUACCT && !lim->cpu_seconds)
			continue;
		errs[i] = setup_v1_one(cg, &src, i, txid, lim);
		if (errs[i] < 0)
			remove_dir_quiet(&cg->v1[i]);
	}
	cg_sources_free(&src);
	if (cg->v1[V1_MEMORY] || cg->v1[V1_PIDS]) {
		cg->mech = TXBOX_LIMITS_CGROUP1;
		if (mech)
			*mech = cg->mech;
		if ((lim->memory_bytes && !cg->v1[V1_MEMORY]) || (lim->pids && !cg->v1[V1_PIDS]))
			txbox_fail(warn, -ENOTSUP,
				   "cgroups: v1 %s hierarchy unusable (%s); that limit falls back to rlimits",
				   cg->v1[V1_MEMORY] ? "pids" : "memory",
				   strerror(-(cg->v1[V1_MEMORY] ? errs[V1_PIDS] : errs[V1_MEMORY])));
		return cg;
	}
	free(cg);
	txbox_fail(warn, -ENOTSUP,
		   "cgroups unavailable (%s; cgroup v1 memory: %s, pids: %s); limits fall back to rlimits",
		   why2[0] ? why2 : "cgroup v2: not usable", strerror(-errs[V1_MEMORY]),
		   strerror(-errs[V1_PIDS]));
	return NULL;
}

int limits_cgroup_attach(limits_cgroup *cg, pid_t pid, txbox_error *err)
{
	if (!cg)
		return txbox_fail(err, -EINVAL, "cgroups: attach to no cgroup");
	char num[32];
	snprintf(num, sizeof(num), "%d", (int)pid);
	if (cg->v2) {
		int r = write_at(cg->v2, "cgroup.procs", num);
		if (r < 0)
			return txbox_fail_errno(err, r, "cgroups: moving pid %d into %s", (int)pid, cg->v2);
		return 0;
	}
	for (int i = 0; i < V1_N; i++) {
		if (!cg->v1[i])
			continue;
		int r = write_at(cg->v1[i], "cgroup.procs", num);
		if (r < 0)
			return txbox_fail_errno(err, r, "cgroups: moving pid %d into %s", (int)pid, cg->v1[i]);
	}
	return 0;
}

int limits_cgroup_attach_parent_side(limits_cgroup *cg, pid_t pid, txbox_error *err)
{
	if (!cg)
		return txbox_fail(err, -EINVAL, "cgroups: attach to no cgroup");
	if (!cg->v2)
		return 0; /* v1: the process joins by itself (limits_cgroup_self_join_files) */
	return limits_cgroup_attach(cg, pid, err);
}

ssize_t limits_cgroup_self_join_files(const limits_cgroup *cg, char **out, size_t max)
{
	size_t n = 0;
	if (!cg || cg->v2)
		return 0;
	for (int i = 0; i < V1_N; i++) {
		if (!cg->v1[i])
			continue;
		if (n == max || asprintf(&out[n], "%s/tasks", cg->v1[i]) < 0) {
			while (n > 0)
				free(out[--n]);
			return -ENOMEM;
		}
		n++;
	}
	return (ssize_t)n;
}

const char *limits_cgroup_exceeded(limits_cgroup *cg)
{
	if (!cg)
		return NULL;
	if (cg->v2) {
		char ev[4096] = ""; /* one read for both keys */
		int64_t oom = read_at(cg->v2, "memory.events", ev, sizeof ev) < 0 ? -1 : key_in(ev, "oom_kill");
		if (oom < 0)
			oom = key_in(ev, "oom");
		if (oom > 0)
			return "memory";
		if (keyed_value(cg->v2, "pids.events", "max") > 0)
			return "pids";
		return limits_cgroup_cpu_over(cg) ? "cpu" : NULL;
	}
	if (cg->v1[V1_MEMORY]) {
		const char *d = cg->v1[V1_MEMORY];
		char ctl[4096]; /* one read for both keys */
		bool got = read_at(d, "memory.oom_control", ctl, sizeof ctl) >= 0;
		int64_t oom = got ? key_in(ctl, "oom_kill") : -1;
		if (oom > 0 || (got && key_in(ctl, "under_oom") > 0))
			return "memory";
		/* Kernels before 4.13 have no oom_kill counter: hitting the
		 * limit at all is the best signal there is. */
		if (oom < 0 && single_value(d, "memory.failcnt") > 0)
			return "memory";
	}
	if (cg->v1[V1_PIDS] && keyed_value(cg->v1[V1_PIDS], "pids.events", "max") > 0)
		return "pids";
	return limits_cgroup_cpu_over(cg) ? "cpu" : NULL;
}

bool limits_cgroup_cpu_over(const limits_cgroup *cg)
{
	if (!cg || !cg->cpu_seconds)
		return false;
	if (cg->v2) {
		int64_t usec = keyed_value(cg->v2, "cpu.stat", "usage_usec");
		return usec >= 0 && (uint64_t)usec >= cg->cpu_seconds * 1000000u;
	}
	int64_t ns = cg->v1[V1_CPUACCT] ? single_value(cg->v1[V1_CPUACCT], "cpuacct.usage") : -1;
	return ns >= 0 && (uint64_t)ns >= cg->cpu_seconds * 1000000000u;
}

/* SIGKILL every pid listed in dir/cgroup.procs; returns how many were listed. */
static int kill_listed(const char *dir)
{
	char buf[16384];
	ssize_t got = read_at(dir, "cgroup.procs", buf, sizeof(buf));
	if (got < 0)
		return 0;
	/* A full buffer may end in the middle of a pid: never SIGKILL a cut
	 * number (it is some other process). The caller loops until the
	 * cgroup is empty, so the rest is read on the next pass. */
	if ((size_t)got >= sizeof(buf) - 1) {
		char *nl = strrchr(buf, '\n');
		if (!nl)
			return 0;
		nl[1] = '\0';
	}
	int n = 0;
	for (char *p = buf; *p;) {
		char *end = NULL;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0) {
			(void)kill((pid_t)pid, SIGKILL);
			n++;
		}
		p = end;
		while (*p == '\n')
			p++;
	}
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Kill what is left and rmdir, retrying for up to ~2 s (dying tasks keep a
 * cgroup busy for a moment). */
static void kill_and_remove(const char *dir, bool v2)
{
	if (v2 && write_at(dir, "cgroup.kill", "1") < 0)
		v2 = false; /* kernel < 5.14: kill by list */
	/* An empty cgroup (the usual case: init was its last member and is
	 * reaped) goes at the first rmdir; only a busy one is listed. */
	for (int attempt = 0; attempt < 400; attempt++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		if (!v2)
			(void)kill_listed(dir);
		sleep_ms(5);
	}
}

void limits_cgroup_destroy(limits_cgroup *cg)
{
	if (!cg)
		return;
	int saved = errno;
	if (cg->v2)
		kill_and_remove(cg->v2, true);
	for (int i = 0; i < V1_N; i++)
		if (cg->v1[i])
			kill_and_remove(cg->v1[i], false);
	free(cg->v2);
	for (int i = 0; i < V1_N; i++)
		free(cg->v1[i]);
	free(cg);
	errno = saved;
}

const char *limits_cgroup_path(const limits_cgroup *cg)
{
	if (!cg)
		return NULL;
	if (cg->v2)
		return cg->v2;
	return cg->v1[V1_MEMORY] ? cg->v1[V1_MEMORY] : cg->v1[V1_PIDS];
}

/* Remove empty txbox-* cgroups older than min_age under base/txbox. */
static int reap_under(const char *base, time_t min_age, txbox_error *err)
{
	_cleanup_free_ char *parent = NULL;
	if (asprintf(&parent, "%s/" TXBOX_CG_PARENT, base) < 0)
		return txbox_fail(err, -ENOMEM, "cgroups: out of memory");
	_cleanup_closedir_ DIR *d = opendir(parent);
	if (!d)
		return 0; /* nothing was ever created here */
	time_t now = time(NULL);
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, TXBOX_CG_PREFIX, strlen(TXBOX_CG_PREFIX)) != 0)
			continue;
		_cleanup_free_ char *dir = NULL;
		if (asprintf(&dir, "%s/%s", parent, de->d_name) < 0)
			return txbox_fail(err, -ENOMEM, "cgroups: out of memory");
		struct stat st;
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (min_age > 0 && now - st.st_mtime < min_age && now - st.st_ctime < min_age)
			continue;
		char procs[8];
		ssize_t n = read_at(dir, "cgroup.procs", procs, sizeof(procs));
		if (n != 0)
			continue; /* populated (or unreadable): not ours to judge */
		if (rmdir(dir) == 0)
			removed++;
	}
	return removed;
}

int limits_cgroup_reap_stale_older_than(time_t min_age_sec, txbox_error *err)
{
	int total = 0;
	cg_sources src = {0};
	for (int i = -1; i < V1_N; i++) { /* -1: v2 */
		_cleanup_free_ char *own = NULL;
		if (own_cgroup_dir(&src, i < 0 ? NULL : v1_controllers[i], &own) < 0)
			continue;
		int r = reap_under(own, min_age_sec, err);
		if (r < 0) {
			cg_sources_free(&src);
			return r;
		}
		total += r;
	}
	cg_sources_free(&src);
	return total;
}

int limits_cgroup_reap_stale(txbox_error *err)
{
	return limits_cgroup_reap_stale_older_than(60, err);
}

/* ---- sampling the sandbox from init (memory, CPU): fail closed ---------- */

/* A sample that cannot be taken is never read as 0: every function below
 * returns 0 or a negative errno with err naming what could not be read,
 * and init ends the run on it. Only a process that is gone (exited and
 * reaped between listing and reading) is skipped. /proc is init's own
 * descriptor, opened before the command exists. */

/* /proc/<pid>/<file>: 1 when read, 0 when the process is gone, or -errno. */
static int read_pid_file(int procfd, const char *pid, const char *file, char *buf, size_t size,
			 txbox_error *err)
{
	char rel[64];
	snprintf(rel, sizeof rel, "%s/%s", pid, file);
	ssize_t n = read_text_at(procfd, rel, buf, size);
	if (n == -ENOENT || n == -ESRCH || n == 0)
		return 0;
	if (n < 0)
		return txbox_fail_errno(err, (int)n, "reading /proc/%s", rel);
	return 1;
}

typedef int (*pid_fn)(int procfd, const char *pid, uint64_t *sum, txbox_error *err);

/* fn for every process of the PID namespace (the numeric names of /proc). */
static int for_each_pid(int procfd, pid_fn fn, uint64_t *sum, txbox_error *err)
{
	if (lseek(procfd, 0, SEEK_SET) < 0)
		return txbox_fail_errno(err, -errno, "rewinding /proc");
	_Alignas(struct dirent64) char buf[8192];
	for (;;) {
		ssize_t n = getdents64(procfd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return txbox_fail_errno(err, -errno, "listing /proc");
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *d = (const void *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			int r = fn(procfd, d->d_name, sum, err);
			if (r < 0)
				return r;
		}
	}
}

/* Shmem of /proc/meminfo, in bytes: every tmpfs, memfd, SysV and shared
 * anonymous page of the machine. */
static int host_shmem_bytes(int procfd, uint64_t *out, txbox_error *err)
{
	char buf[8192];
	ssize_t n = read_text_at(procfd, "meminfo", buf, sizeof buf);
	if (n < 0)
		return txbox_fail_errno(err, (int)n, "reading /proc/meminfo");
	const char *p = strstr(buf, "\nShmem:");
	if (!p)
		return txbox_fail(err, -EIO, "/proc/meminfo has no Shmem line");
	*out = strtoull(p + 7, NULL, 10) * 1024;
	return 0;
}

/* Private memory (RssAnon: resident minus file-backed and shared pages) of
 * one process; shared pages are counted once, below, with the objects that
 * hold them. */
static int add_private_pages(int procfd, const char *pid, uint64_t *pages, txbox_error *err)
{
	char buf[128];
	int r = read_pid_file(procfd, pid, "statm", buf, sizeof buf, err);
	if (r <= 0)
		return r;
	unsigned long long size, res, shared;
	if (sscanf(buf, "%llu %llu %llu", &size, &res, &shared) != 3)
		return txbox_fail(err, -EIO, "/proc/%s/statm: unexpected format", pid);
	if (res > shared)
		*pages += res - shared;
	return 0;
}

/* What the sandbox's own shared-memory objects hold: its private tmpfs
 * (one instance behind /tmp, /var/tmp, /dev/shm and /run: statfs is O(1);
 * each inode charged ~1 KiB of kernel memory) and the SysV segments of its
 * IPC namespace. */
static int own_shmem_bytes(uint64_t *out, txbox_error *err)
{
	uint64_t sum = 0;
	struct statfs sf;
	if (statfs("/tmp", &sf) < 0)
		return txbox_fail_errno(err, -errno, "statfs /tmp");
	if (sf.f_type == TMPFS_MAGIC)
		sum += ((uint64_t)sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize +
		       ((uint64_t)sf.f_files - sf.f_ffree) * LIMITS_TMPFS_INODE_BYTES;
	struct shm_info si;
	if (shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si) < 0)
		return txbox_fail_errno(err, -errno, "shmctl SHM_INFO");
	sum += ((uint64_t)si.shm_rss + si.shm_swp) * (uint64_t)sysconf(_SC_PAGESIZE);
	/* SysV message queues: kernel memory of the IPC namespace, resident
	 * in no process. MSG_INFO's msgtql is the bytes queued in all. */
	struct msginfo mi;
	if (msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&mi) < 0)
		return txbox_fail_errno(err, -errno, "msgctl MSG_INFO");
	if (mi.msgtql > 0)
		sum += (uint64_t)mi.msgtql + (uint64_t)mi.msgmap * LIMITS_MSG_HEADER_BYTES;
	*out = sum;
	return 0;
}

static uint64_t unix_diag_meminfo(const struct nlmsghdr *h)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof *m);
	for (const struct rtattr *a = (const void *)(m + 1); left > 0 && RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		if (a->rta_type != UNIX_DIAG_MEMINFO || RTA_PAYLOAD(a) < SK_MEMINFO_WMEM_ALLOC * 4 + 4)
			continue;
		const uint32_t *v = RTA_DATA(a);
		return (uint64_t)v[SK_MEMINFO_RMEM_ALLOC] + v[SK_MEMINFO_WMEM_ALLOC];
	}
	return 0;
}

/* Sum the sockets of one sock_diag reply; 1 when the dump is done. */
static int unix_diag_batch(const char *buf, ssize_t n, uint64_t *sum, txbox_error *err)
{
	int left = (int)n;
	for (const struct nlmsghdr *h = (const void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return txbox_fail_errno(err, e->error < 0 ? e->error : -EIO, "sock_diag dump of Unix sockets");
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY)
			*sum += unix_diag_meminfo(h);
	}
	return 0;
}

/* Bytes queued in the Unix sockets of this network namespace (sock_diag:
 * each socket's allocated receive and send buffer memory). Kernel memory,
 * resident in no process: a few thousand socket pairs hold gigabytes. */
static int ns_unix_socket_bytes(uint64_t *out, txbox_error *err)
{
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "sock_diag socket");
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_show = UDIAG_SHOW_MEMINFO},
	};
	if (send(fd, &req, sizeof req, 0) != (ssize_t)sizeof req)
		return txbox_fail_errno(err, -errno, "sock_diag request");
	uint64_t sum = 0;
	_Alignas(struct nlmsghdr) char buf[32768];
	for (int r = 0; r == 0;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return txbox_fail_errno(err, n < 0 ? -errno : -EIO, "sock_diag reply");
		if ((r = unix_diag_batch(buf, n, &sum, err)) < 0)
			return r;
	}
	*out = sum;
	return 0;
}

int limits_memwatch_init(limits_memwatch *w, int procfd, txbox_error *err)
{
	w->procfd = procfd;
	return host_shmem_bytes(procfd, &w->shmem_base, err);
}

int limits_memwatch_bytes(const limits_memwatch *w, uint64_t *bytes, txbox_error *err)
{
	/* memfds (open, mapped, or in flight in a socket) are in no process's
	 * private memory and in no file system of ours: the machine's shmem
	 * growth since the command started is their bound. It counts what
	 * other processes of the host create meanwhile too (conservative);
	 * what the host frees meanwhile is why the sandbox's own objects are
	 * measured as well. */
	uint64_t host = 0, own = 0, sockets = 0, pages = 0;
	int r = host_shmem_bytes(w->procfd, &host, err);
	if (r == 0)
		r = own_shmem_bytes(&own, err);
	if (r == 0 && w->own_netns)
		r = ns_unix_socket_bytes(&sockets, err);
	if (r == 0)
		r = for_each_pid(w->procfd, add_private_pages, &pages, err);
	if (r < 0)
		return r;
	uint64_t grown = host > w->shmem_base ? host - w->shmem_base : 0;
	*bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE) + (grown > own ? grown : own) + sockets;
	return 0;
}

int limits_ipc_cap(uint64_t bytes)
{
	/* SysV shm of the sandbox's IPC namespace: at most `bytes` in all
	 * (these sysctls are per IPC namespace; its owner may set them). */
	uint64_t pages = bytes / (uint64_t)sysconf(_SC_PAGESIZE);
	char num[32];
	snprintf(num, sizeof num, "%" PRIu64, pages ? pages : 1);
	int r = write_text("/proc/sys/kernel/shmall", num);
	if (r < 0)
		return r;
	snprintf(num, sizeof num, "%" PRIu64, bytes);
	if ((r = write_text("/proc/sys/kernel/shmmax", num)) < 0)
		return r;
	/* SysV message queues: msgmni queues of at most msgmnb bytes each. */
	uint64_t per_queue = bytes < LIMITS_MSGMNB ? bytes : LIMITS_MSGMNB;
	snprintf(num, sizeof num, "%" PRIu64, per_queue ? per_queue : 1);
	if ((r = write_text("/proc/sys/kernel/msgmnb", num)) < 0)
		return r;
	uint64_t queues = per_queue ? bytes / per_queue : 1;
	snprintf(num, sizeof num, "%" PRIu64, queues > 32000 ? 32000 : queues ? queues : 1);
	return write_text("/proc/sys/kernel/msgmni", num);
}

/* ---- per-user kernel counters (init side, rootless) -------------------- */

int limits_ucounts_cap(void)
{
	/* The sandbox's own user namespace has its own ceiling for each
	 * per-user counter (user.max_*, INT_MAX when created); the counts are
	 * charged at every level up to the host user. A quarter of the host's
	 * per-user allowance leaves the rest to the user's own programs. */
	static const char *const pairs[][2] = {
		{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
		{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"},
		{"/proc/sys/fs/fanotify/max_user_groups", "/proc/sys/user/max_fanotify_groups"},
		{"/proc/sys/fs/fanotify/max_user_marks", "/proc/sys/user/max_fanotify_marks"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		char buf[32];
		if (read_text(pairs[i][0], buf, sizeof buf) <= 0)
			continue; /* a kernel without it */
		unsigned long long host = strtoull(buf, NULL, 10);
		snprintf(buf, sizeof buf, "%llu", host / 4 ? host / 4 : 1);
		int r = write_text(pairs[i][1], buf);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

/* ---- CPU of the whole sandbox without a cgroup (init side) ------------- */

/* utime+stime and cutime+cstime of /proc/<pid>/stat (init's own sampling
 * is not the command's; what init reaped is). */
static int add_stat_ticks(int procfd, const char *pid, uint64_t *sum, txbox_error *err)
{
	char buf[1024];
	int r = read_pid_file(procfd, pid, "stat", buf, sizeof buf, err);
	if (r <= 0)
		return r;
	const char *q = strrchr(buf, ')'); /* the command name may hold anything */
	unsigned long long ut, st, cut, cst;
	if (!q || sscanf(q + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ut, &st,
			 &cut, &cst) != 4)
		return txbox_fail(err, -EIO, "/proc/%s/stat: unexpected format", pid);
	*sum += (strcmp(pid, "1") != 0 ? ut + st : 0) + cut + cst;
	return 0;
}

int limits_ns_cpu_ticks(int procfd, uint64_t *ticks, txbox_error *err)
{
	*ticks = 0;
	return for_each_pid(procfd, add_stat_ticks, ticks, err);
}
