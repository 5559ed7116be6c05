/* Unit tests for sandbox/limits: cgroup creation, attach, limit-hit
 * detection and cleanup, on whatever this machine offers (cgroup v2 with
 * delegated controllers, else v1). Skipped only when no cgroup mechanism is
 * usable. */
#include "policy/policy.h"
#include "sandbox/cgroup.h"
#include "sandbox/harden.h"
#include "sandbox/quota.h"
#include "sandbox/rlimits.h"
#include "util/clock.h"

#include "child.h"

#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

static unsigned g_seq;

static void txid(char *buf, size_t size)
{
	snprintf(buf, size, "test%d-%u", (int)getpid(), g_seq++);
}

static limits_cgroup *create_or_skip(const txbox_limits *lim, txbox_limit_mechanism *mech)
{
	char id[64];
	txid(id, sizeof(id));
	txbox_error warn = TXBOX_ERROR_INIT;
	limits_cgroup *cg = limits_cgroup_create(id, lim, mech, &warn);
	if (!cg) {
		assert_int_equal(*mech, TXBOX_LIMITS_RLIMIT);
		assert_non_null(warn.message);
		print_message("cgroups unavailable, skipping: %s\n", warn.message);
		txbox_error_clear(&warn);
		skip();
	}
	if (warn.message)
		print_message("warning: %s\n", warn.message);
	txbox_error_clear(&warn);
	assert_true(*mech == TXBOX_LIMITS_CGROUP1 || *mech == TXBOX_LIMITS_CGROUP2);
	return cg;
}

/* Fork a child that waits until it is in the cgroup, then runs fn. */
static pid_t spawn_in(limits_cgroup *cg, void (*fn)(void))
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(90);
		fn();
		_exit(0);
	}
	close(p[0]);
	txbox_error err = TXBOX_ERROR_INIT;
	int r = limits_cgroup_attach(cg, pid, &err);
	if (r < 0)
		print_message("attach: %s\n", err.message);
	assert_int_equal(r, 0);
	txbox_error_clear(&err);
	assert_int_equal(write(p[1], "g", 1), 1);
	close(p[1]);
	return pid;
}

static int wait_status(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static void hog_memory(void)
{
	/* 256 MiB, touched page by page */
	size_t size = 256u << 20;
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(91);
	for (size_t i = 0; i < size; i += 4096)
		m[i] = 1;
	_exit(0);
}

static void test_memory_limit_hit(void **state)
{
	(void)state;
	txbox_limits lim = {.memory_bytes = 32u << 20};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	assert_null(limits_cgroup_exceeded(cg));
	pid_t pid = spawn_in(cg, hog_memory);
	int st = wait_status(pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	const char *hit = limits_cgroup_exceeded(cg);
	assert_non_null(hit);
	assert_string_equal(hit, "memory");
	limits_cgroup_destroy(cg);
}

static void small_memory(void)
{
	char *m = malloc(1 << 20);
	if (!m)
		_exit(92);
	memset(m, 1, 1 << 20);
	free(m);
	_exit(0);
}

static void test_within_limits_not_reported(void **state)
{
	(void)state;
	txbox_limits lim = {.memory_bytes = 256u << 20, .pids = 64, .cpu_seconds = 100};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	pid_t pid = spawn_in(cg, small_memory);
	int st = wait_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_null(limits_cgroup_exceeded(cg));
	limits_cgroup_destroy(cg);
}

static void fork_bomb(void)
{
	pid_t kids[64];
	int n = 0, failed = 0;
	for (int i = 0; i < 64; i++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0)
			failed++;
		else
			kids[n++] = p;
	}
	for (int i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	_exit(failed > 0 ? 0 : 93);
}

static void test_pids_limit_hit(void **state)
{
	(void)state;
	txbox_limits lim = {.pids = 16};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	pid_t pid = spawn_in(cg, fork_bomb);
	int st = wait_status(pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* some forks failed */
	const char *hit = limits_cgroup_exceeded(cg);
	assert_non_null(hit);
	assert_string_equal(hit, "pids");
	limits_cgroup_destroy(cg);
}

static void burn_cpu(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (volatile int i = 0; i < 100000; i++)
			;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1300000000L);
	_exit(0);
}

static void test_cpu_usage_reported(void **state)
{
	(void)state;
	txbox_limits lim = {.cpu_seconds = 1};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	pid_t pid = spawn_in(cg, burn_cpu);
	int st = wait_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	const char *hit = limits_cgroup_exceeded(cg);
	if (!hit) {
		limits_cgroup_destroy(cg);
		print_message("no cgroup CPU accounting here (cpuacct/cpu.stat)\n");
		skip();
	}
	assert_string_equal(hit, "cpu");
	limits_cgroup_destroy(cg);
}

static int g_report_fd = -1;

static void leave_sleepers(void)
{
	/* two sleepers that outlive their parent */
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (p > 0 && write(g_report_fd, &p, sizeof(p)) != sizeof(p))
			_exit(94);
	}
	_exit(0);
}

static void test_destroy_kills_leftovers(void **state)
{
	(void)state;
	txbox_limits lim = {.memory_bytes = 64u << 20, .pids = 32};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	char path[512];
	snprintf(path, sizeof(path), "%s", limits_cgroup_path(cg));
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	g_report_fd = p[1];
	pid_t pid = spawn_in(cg, leave_sleepers);
	close(p[1]);
	int st = wait_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid_t kids[2];
	assert_int_equal(read(p[0], kids, sizeof(kids)), (ssize_t)sizeof(kids));
	close(p[0]);
	assert_int_equal(kill(kids[0], 0), 0);

	limits_cgroup_destroy(cg);
	for (int i = 0; i < 2; i++) {
		st = wait_status(kids[i]);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	assert_int_equal(access(path, F_OK), -1); /* removed */
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	limits_cgroup_destroy(NULL);
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

static void test_reap_stale(void **state)
{
	(void)state;
	txbox_limits lim = {.pids = 8};
	txbox_limit_mechanism mech;
	limits_cgroup *live = create_or_skip(&lim, &mech);
	pid_t pid = spawn_in(live, sleep_forever);

	/* A leftover of a killed txbox: an empty txbox-* next to ours. */
	char parent[512], stale[600];
	snprintf(parent, sizeof(parent), "%s", limits_cgroup_path(live));
	snprintf(stale, sizeof(stale), "%s/txbox-stale%d", dirname(parent), (int)getpid());
	assert_int_equal(mkdir(stale, 0755), 0);

	/* creating another one is not disturbed by the leftover */
	limits_cgroup *other = create_or_skip(&lim, &mech);
	limits_cgroup_destroy(other);

	/* too young for the default reaper */
	txbox_error err = TXBOX_ERROR_INIT;
	assert_true(limits_cgroup_reap_stale(&err) >= 0);
	assert_int_equal(access(stale, F_OK), 0);
	int n = limits_cgroup_reap_stale_older_than(0, &err);
	assert_true(n >= 1);
	assert_int_equal(access(stale, F_OK), -1);
	/* the populated one survives */
	assert_int_equal(access(limits_cgroup_path(live), F_OK), 0);
	assert_int_equal(err.code, 0);

	limits_cgroup_destroy(live);
	int st = wait_status(pid);
	assert_true(WIFSIGNALED(st));
}

static void test_same_txid_leftover(void **state)
{
	(void)state;
	txbox_limits lim = {.pids = 8};
	txbox_limit_mechanism mech;
	char id[64];
	txid(id, sizeof(id));
	txbox_error warn = TXBOX_ERROR_INIT;
	limits_cgroup *a = limits_cgroup_create(id, &lim, &mech, &warn);
	if (!a) {
		txbox_error_clear(&warn);
		skip();
	}
	/* an empty leftover with the very same name is replaced */
	limits_cgroup *b = limits_cgroup_create(id, &lim, &mech, &warn);
	assert_non_null(b);
	limits_cgroup_destroy(b);
	limits_cgroup_destroy(a); /* already gone: harmless */
	txbox_error_clear(&warn);
}

static void test_invalid_txid(void **state)
{
	(void)state;
	static const char *const bad[] = {"", "../x", "a/b", ".hidden", "sp ace", NULL};
	txbox_limits lim = {.pids = 8};
	for (int i = 0; bad[i]; i++) {
		txbox_limit_mechanism mech = TXBOX_LIMITS_CGROUP2;
		txbox_error warn = TXBOX_ERROR_INIT;
		assert_null(limits_cgroup_create(bad[i], &lim, &mech, &warn));
		assert_int_equal(mech, TXBOX_LIMITS_RLIMIT);
		assert_non_null(warn.message);
		txbox_error_clear(&warn);
	}
	txbox_limit_mechanism mech;
	assert_null(limits_cgroup_create(NULL, &lim, &mech, NULL));
	assert_null(limits_cgroup_exceeded(NULL));
}

static void child_unprivileged(void *arg)
{
	(void)arg;
	if (geteuid() == 0 && drop_to_nobody() < 0)
		_exit(CHILD_SKIP);
	txbox_limits lim = {.memory_bytes = 32u << 20, .pids = 16};
	txbox_limit_mechanism mech = TXBOX_LIMITS_CGROUP1;
	txbox_error warn = TXBOX_ERROR_INIT;
	limits_cgroup *cg = limits_cgroup_create("unpriv", &lim, &mech, &warn);
	if (cg) {
		/* a delegated cgroup v2 subtree: fine too */
		CHILD_CHECK(mech == TXBOX_LIMITS_CGROUP2);
		limits_cgroup_destroy(cg);
		return;
	}
	CHILD_CHECK(mech == TXBOX_LIMITS_RLIMIT);
	CHILD_CHECK(warn.message != NULL && strstr(warn.message, "rlimit"));
	txbox_error_clear(&warn);
	txbox_error err = TXBOX_ERROR_INIT;
	CHILD_CHECK(limits_cgroup_reap_stale(&err) >= 0);
}

static void test_unprivileged_falls_back(void **state)
{
	(void)state;
	run_child(child_unprivileged, NULL);
}

/* The sandbox's init joins v1 hierarchies itself by writing "0" to their
 * tasks files: after that its /proc/self/cgroup names the transaction's
 * cgroup in every hierarchy that has a limit, and the parent side attach is
 * a no-op for v1. */
static void test_self_join(void **state)
{
	(void)state;
	txbox_limits lim = {.memory_bytes = 256ull << 20, .pids = 64};
	txbox_limit_mechanism mech;
	limits_cgroup *cg = create_or_skip(&lim, &mech);
	char *files[4] = {NULL};
	ssize_t nj = limits_cgroup_self_join_files(cg, files, 4);
	assert_true(nj >= 0);
	size_t n = (size_t)nj;
	if (mech == TXBOX_LIMITS_CGROUP2) {
		assert_int_equal(n, 0);
		limits_cgroup_destroy(cg);
		skip();
	}
	assert_true(n >= 1);
	const char *dir = limits_cgroup_path(cg);
	const char *leaf = strrchr(dir, '/');
	assert_non_null(leaf);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (size_t i = 0; i < n; i++) {
			int fd = open(files[i], O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, "0", 1) != 1)
				_exit(10 + (int)i);
			close(fd);
		}
		char buf[4096];
		int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
		ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (r <= 0)
			_exit(20);
		buf[r] = '\0';
		size_t hits = 0;
		for (char *l = strstr(buf, leaf); l; l = strstr(l + 1, leaf))
			hits++;
		_exit(hits == n ? 0 : 30 + (int)hits);
	}
	int st = wait_status(pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(limits_cgroup_attach_parent_side(cg, pid, &err), 0); /* v1: nothing to do */
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	limits_cgroup_destroy(cg);
}

/* ---- the disk quota ----------------------------------------------------- */

static int temp_dir(char *path, size_t size)
{
	snprintf(path, size, "/var/tmp/txbox-quota-XXXXXX");
	assert_non_null(mkdtemp(path));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void remove_tree(const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static void make_files(int dfd, const char *prefix, int n, size_t bytes)
{
	static char buf[65536];
	for (int i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, "%s%d", prefix, i);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		for (size_t left = bytes; left > 0;) {
			size_t k = left < sizeof buf ? left : sizeof buf;
			assert_int_equal(write(fd, buf, k), (ssize_t)k);
			left -= k;
		}
		close(fd);
	}
}

/* Empty files take no blocks: the inode budget stops them (it used to be
 * bytes only, and 100,000 empty files fitted any limit). */
static void test_quota_counts_inodes(void **state)
{
	(void)state;
	char path[64];
	int dfd = temp_dir(path, sizeof path);
	uint64_t disk = 64 * QUOTA_BYTES_PER_INODE; /* 64 inodes */
	assert_int_equal(quota_inode_limit(disk), 64);
	make_files(dfd, "e", 64, 0);
	const char *what = NULL;
	assert_false(quota_over(dfd, disk, &what, NULL));
	make_files(dfd, "x", 1, 0);
	assert_true(quota_over(dfd, disk, &what, NULL));
	assert_string_equal(what, "inodes");
	/* hard links are names: counted like files */
	assert_int_equal(unlinkat(dfd, "x0", 0), 0);
	assert_false(quota_over(dfd, disk, NULL, NULL));
	assert_int_equal(linkat(dfd, "e0", dfd, "link", 0), 0);
	assert_true(quota_over(dfd, disk, NULL, NULL));
	close(dfd);
	remove_tree(path);
}

static void test_quota_counts_bytes(void **state)
{
	(void)state;
	char path[64];
	int dfd = temp_dir(path, sizeof path);
	assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
	int sub = openat(dfd, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	make_files(sub, "f", 3, 1 << 20);
	const char *what = NULL;
	assert_true(quota_over(dfd, 2 << 20, &what, NULL));
	assert_string_equal(what, "bytes");
	assert_false(quota_over(dfd, 16 << 20, NULL, NULL));
	close(sub);
	close(dfd);
	remove_tree(path);
}

/* A chain of n directories named "deep" under dfd. */
static void make_chain(int dfd, int n)
{
	int fd = dup(dfd);
	for (int i = 0; i < n; i++) {
		assert_int_equal(mkdirat(fd, "deep", 0755), 0);
		int c = openat(fd, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(c >= 0);
		close(fd);
		fd = c;
	}
	close(fd);
}

/* rt8 ODD: a tree the walk cannot measure still fails closed, but the
 * fault says why and where (it read as "over the disk limit"). Deeper than
 * the walk's bound: too_deep, and the path is the tail nearest the fault. */
static void test_quota_fault_too_deep(void **state)
{
	(void)state;
	char path[64];
	int dfd = temp_dir(path, sizeof path);
	make_chain(dfd, QUOTA_MAX_DEPTH);
	quota_fault f;
	assert_false(quota_over(dfd, 1ull << 40, NULL, &f)); /* at the bound: measured */
	assert_false(f.too_deep || f.err);
	int last = openat(dfd, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 1; i < QUOTA_MAX_DEPTH; i++) {
		int c = openat(last, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(last);
		last = c;
	}
	assert_true(last >= 0);
	make_chain(last, 1);
	close(last);
	assert_true(quota_over(dfd, 1ull << 40, NULL, &f));
	assert_true(f.too_deep && f.elided);
	assert_int_equal(f.err, 0);
	size_t n = strlen(f.path);
	assert_true(n > 150 && n < sizeof f.path);
	assert_string_equal(f.path + n - 10, "/deep/deep");
	assert_int_equal(strncmp(f.path, "deep/", 5), 0); /* the tail starts at a name */
	char msg[256];
	quota_fault_describe(&f, msg, sizeof msg);
	assert_non_null(strstr(msg, "more than 4096 directories deep at '\xe2\x80\xa6/deep/deep/"));
	close(dfd);
	remove_tree(path);
}

static void child_quota_fault_unreadable(void *arg)
{
	(void)arg;
	if (geteuid() == 0) /* root reads a 000 directory: be nobody */
		CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0);
	char path[64] = "/var/tmp/txbox-quota-XXXXXX";
	CHILD_CHECK(mkdtemp(path) != NULL);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(dfd >= 0 && mkdirat(dfd, "a", 0755) == 0 && mkdirat(dfd, "a/b", 0755) == 0 &&
		    mkdirat(dfd, "a/b/locked", 0755) == 0);
	CHILD_CHECK(fchmodat(dfd, "a/b/locked", 0, 0) == 0);
	quota_fault f;
	bool over = quota_over(dfd, 1ull << 40, NULL, &f);
	CHILD_CHECK(fchmodat(dfd, "a/b/locked", 0755, 0) == 0);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	CHILD_CHECK(system(cmd) == 0);
	CHILD_CHECK(over); /* fails closed */
	CHILD_CHECK(f.err == EACCES && !f.too_deep && !f.elided);
	CHILD_CHECK(strcmp(f.path, "a/b/locked") == 0);
	char msg[256];
	quota_fault_describe(&f, msg, sizeof msg);
	CHILD_CHECK(strstr(msg, "walking the layer at 'a/b/locked': Permission denied") != NULL);
}

/* A directory its owner cannot read (rootless: the command's chmod 000):
 * the fault names it and the errno. */
static void test_quota_fault_unreadable(void **state)
{
	(void)state;
	run_child(child_quota_fault_unreadable, NULL);
}

/* While the command runs: no walk while the file system's growth proves
 * the layer under the limit (what keeps a big layer cheap), a walk and a
 * hit once it cannot. */
static void test_quota_watch_walks_only_when_needed(void **state)
{
	(void)state;
	char path[64];
	int dfd = temp_dir(path, sizeof path);
	quota_watch w;
	/* a limit far above what the rest of the machine writes meanwhile */
	quota_watch_init(&w, dfd, 1ull << 40, clock_now_ns());
	if (!w.fs_counts_inodes) {
		print_message("the file system of /var/tmp does not count inodes; skipping\n");
		close(dfd);
		remove_tree(path);
		skip();
	}
	make_files(dfd, "f", 200, 4096);
	assert_false(quota_watch_over(&w, clock_now_ns()));
	assert_int_equal(w.at_walk.inodes, 0); /* not walked: statfs sufficed */
	assert_int_equal(w.walk_cost_ns, 0);

	quota_watch small;
	quota_watch_init(&small, dfd, 64 * QUOTA_BYTES_PER_INODE, clock_now_ns());
	make_files(dfd, "g", 70, 0);
	/* statfs says so, unless the machine freed inodes meanwhile: then the
	 * walk every 2 s does */
	assert_true(quota_watch_over(&small, clock_now_ns()) ||
		    quota_watch_over(&small, clock_now_ns() + 3000000000ull));
	close(dfd);
	remove_tree(path);
}

/* The built-in policy has a disk limit whose budget fits a big dependency
 * install (a node_modules of 300,000 files and 3 GiB). */
static void test_default_policy_disk_limit(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_default(&p, &err), 0);
	const policy_sandbox *s = policy_get_sandbox(p);
	assert_true(s->disk_bytes >= 3ull << 30);
	assert_true(quota_inode_limit(s->disk_bytes) >= 300000);
	assert_true(s->memory_bytes > 0);
	policy_free(p);
}

/* ---- memory without a cgroup ------------------------------------------- */

#define MIB (1ull << 20)

static uint64_t memwatch_now(const limits_memwatch *w)
{
	uint64_t v = 0;
	txbox_error e = TXBOX_ERROR_INIT;
	CHILD_CHECK(limits_memwatch_bytes(w, &v, &e) == 0);
	return v;
}

static uint64_t grew(const limits_memwatch *w, uint64_t base)
{
	uint64_t now = memwatch_now(w);
	return now > base ? now - base : 0;
}

static void fill(int fd, uint64_t bytes)
{
	static char buf[1 << 20];
	memset(buf, 0x5a, sizeof buf);
	for (uint64_t i = 0; i < bytes / sizeof buf; i++)
		CHILD_CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
}

/* pid 1 of new PID, mount and IPC namespaces with a fresh /proc and a
 * tmpfs on /tmp, as the sandbox's init has them. */
static void memwatch_in_ns(void)
{
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHILD_CHECK(mount("proc", "/proc", "proc", 0, NULL) == 0);
	CHILD_CHECK(mount("tmpfs", "/tmp", "tmpfs", 0, "size=256m") == 0);
	limits_memwatch w = {0};
	txbox_error e = TXBOX_ERROR_INIT;
	CHILD_CHECK(limits_memwatch_init(&w, open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &e) == 0);
	uint64_t base = memwatch_now(&w);

	/* a memfd, then the same passed on by a mapping only */
	int fd = (int)syscall(SYS_memfd_create, "t", 0);
	CHILD_CHECK(fd >= 0);
	fill(fd, 64 * MIB);
	CHILD_CHECK(grew(&w, base) >= 48 * MIB);
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHILD_CHECK(m != MAP_FAILED);
	close(fd);
	CHILD_CHECK(grew(&w, base) >= 48 * MIB);
	munmap(m, 4096);

	/* a detached SysV segment and a file of the tmpfs: held by objects */
	uint64_t b2 = memwatch_now(&w);
	int id = shmget(IPC_PRIVATE, 32 * MIB, IPC_CREAT | 0600);
	CHILD_CHECK(id >= 0);
	char *p = shmat(id, NULL, 0);
	CHILD_CHECK(p != (void *)-1);
	memset(p, 1, 32 * MIB);
	shmdt(p);
	int tf = open("/tmp/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHILD_CHECK(tf >= 0);
	fill(tf, 32 * MIB);
	close(tf);
	uint64_t b3 = memwatch_now(&w);
	CHILD_CHECK(b3 > b2 && b3 - b2 >= 56 * MIB);
	_exit(0);
}

static void memwatch_child(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC) < 0)
		_exit(CHILD_SKIP);
	pid_t pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0)
		memwatch_in_ns();
	int st = wait_status(pid);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
}

static void test_memwatch_counts_shared_memory(void **state)
{
	(void)state;
	run_child(memwatch_child, NULL);
}

/* ---- the samplers fail closed ----------------------------------------- */

/* A /proc whose process entries cannot be read (here: a directory where
 * the stat file should be) and one that cannot be opened any more (out of
 * descriptors): an error naming the file, never a sample of 0. */
static void samplers_fail_closed_child(void *arg)
{
	(void)arg;
	char dir[] = "/var/tmp/txbox-procXXXXXX";
	CHILD_CHECK(mkdtemp(dir) != NULL);
	char p[64];
	snprintf(p, sizeof p, "%s/42", dir);
	CHILD_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof p, "%s/42/stat", dir);
	CHILD_CHECK(mkdir(p, 0700) == 0);
	int fake = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(fake >= 0);
	uint64_t t = 1;
	txbox_error e = TXBOX_ERROR_INIT;
	CHILD_CHECK(limits_ns_cpu_ticks(fake, &t, &e) < 0 && e.message && strstr(e.message, "/proc/42/stat"));
	txbox_error_clear(&e);
	snprintf(p, sizeof p, "%s/42/stat", dir);
	rmdir(p);
	snprintf(p, sizeof p, "%s/42", dir);
	rmdir(p);
	rmdir(dir);

	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(procfd >= 0);
	CHILD_CHECK(limits_ns_cpu_ticks(procfd, &t, &e) == 0 && t > 0);
	limits_memwatch w = {0};
	CHILD_CHECK(limits_memwatch_init(&w, procfd, &e) == 0);
	uint64_t b = 0;
	CHILD_CHECK(limits_memwatch_bytes(&w, &b, &e) == 0 && b > 0);
	/* every descriptor in use: nothing more can be opened */
	struct rlimit rl = {.rlim_cur = (rlim_t)procfd + 1, .rlim_max = (rlim_t)procfd + 1};
	for (int fd = 0; fd < procfd; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			CHILD_CHECK(dup2(procfd, fd) == fd);
	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHILD_CHECK(limits_ns_cpu_ticks(procfd, &t, &e) < 0 && e.code == -EMFILE);
	txbox_error_clear(&e);
	CHILD_CHECK(limits_memwatch_bytes(&w, &b, &e) < 0 && e.code == -EMFILE);
	txbox_error_clear(&e);
	_exit(0);
}

static void test_samplers_fail_closed(void **state)
{
	(void)state;
	run_child(samplers_fail_closed_child, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_txid),
		cmocka_unit_test(test_unprivileged_falls_back),
		cmocka_unit_test(test_within_limits_not_reported),
		cmocka_unit_test(test_memory_limit_hit),
		cmocka_unit_test(test_pids_limit_hit),
		cmocka_unit_test(test_cpu_usage_reported),
		cmocka_unit_test(test_destroy_kills_leftovers),
		cmocka_unit_test(test_reap_stale),
		cmocka_unit_test(test_same_txid_leftover),
		cmocka_unit_test(test_self_join),
		cmocka_unit_test(test_quota_counts_inodes),
		cmocka_unit_test(test_quota_counts_bytes),
		cmocka_unit_test(test_quota_fault_too_deep),
		cmocka_unit_test(test_quota_fault_unreadable),
		cmocka_unit_test(test_quota_watch_walks_only_when_needed),
		cmocka_unit_test(test_default_policy_disk_limit),
		cmocka_unit_test(test_memwatch_counts_shared_memory),
		cmocka_unit_test(test_samplers_fail_closed),
	};
	return cmocka_run_group_tests_name("sandbox-limits", tests, NULL, NULL);
}
