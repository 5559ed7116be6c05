/* sandbox/landlock: filesystem write confinement.
 *
 * Raw syscalls; the structs and constants newer than the installed
 * <linux/landlock.h> (Debian 12 ships ABI 2) are defined here.
 *
 * Two layers. The read layer (secrets.c builds it, harden_landlock_read_apply
 * applies it) handles read_file, execute and refer: see secrets.c. The
 * write layer, below:
 *
 * Handled (i.e. denied unless a rule allows them): every write-type right the
 * running ABI knows — write_file, remove_dir/file, make_* , refer (ABI 2),
 * truncate (ABI 3), ioctl_dev (ABI 5). read_file, read_dir and execute are
 * NOT handled, so the (read-only mounted) host stays readable and
 * executable. Rules grant the handled rights beneath the workspace and each
 * writable path; for a non-directory (e.g. /dev/null) only the rights that
 * apply to files (write_file, truncate, ioctl_dev).
 *
 * refer is handled and granted inside the allowed trees: with ABI >= 2 the
 * kernel refuses reparenting (rename/link across directories) unless a rule
 * grants refer, even when refer is not handled.
 *
 * Network (ABI >= 4): not restricted. With network == true the policy granted
 * host networking; with network == false the sandbox runs in its own network
 * namespace with only loopback, which already isolates it, and restricting
 * bind/connect there would break local test servers (a test suite that
 * starts a server on 127.0.0.1 and connects to it).
 *
 * Scoping (ABI >= 6): abstract unix sockets and signals are scoped to the
 * sandbox's domain: the command cannot connect to abstract sockets created
 * outside (relevant when the network namespace is shared with --net) nor
 * signal processes outside the sandbox. */
#include "sandbox/landlock.h"

#include "sandbox/harden.h"
#include "util/cleanup.h"
#include "util/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* Our own copies: the installed header may lack the newer fields. */
struct tx_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI >= 4 */
	uint64_t scoped;             /* ABI >= 6 */
};

struct tx_landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define TX_LANDLOCK_RULE_PATH_BENEATH 1

#define TX_LL_FS_EXECUTE (1ULL << 0)
#define TX_LL_FS_WRITE_FILE (1ULL << 1)
#define TX_LL_FS_READ_FILE (1ULL << 2)
#define TX_LL_FS_READ_DIR (1ULL << 3)
#define TX_LL_FS_REMOVE_DIR (1ULL << 4)
#define TX_LL_FS_REMOVE_FILE (1ULL << 5)
#define TX_LL_FS_MAKE_CHAR (1ULL << 6)
#define TX_LL_FS_MAKE_DIR (1ULL << 7)
#define TX_LL_FS_MAKE_REG (1ULL << 8)
#define TX_LL_FS_MAKE_SOCK (1ULL << 9)
#define TX_LL_FS_MAKE_FIFO (1ULL << 10)
#define TX_LL_FS_MAKE_BLOCK (1ULL << 11)
#define TX_LL_FS_MAKE_SYM (1ULL << 12)
#define TX_LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define TX_LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define TX_LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */

#define TX_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define TX_LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

/* Rights that make sense on a non-directory. */
#define TX_LL_FS_FILE_RIGHTS \
	(TX_LL_FS_EXECUTE | TX_LL_FS_WRITE_FILE | TX_LL_FS_READ_FILE | TX_LL_FS_TRUNCATE | \
	 TX_LL_FS_IOCTL_DEV)

static inline int ll_create_ruleset(const struct tx_landlock_ruleset_attr *attr, size_t size,
				    uint32_t flags)
{
	return (int)syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static inline int ll_add_rule(int ruleset_fd, int type, const void *attr, uint32_t flags)
{
	return (int)syscall(__NR_landlock_add_rule, ruleset_fd, type, attr, flags);
}

static inline int ll_restrict_self(int ruleset_fd, uint32_t flags)
{
	return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, flags);
}

int landlock_probe_abi(void)
{
	int abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	/* ENOSYS: not built in; EOPNOTSUPP: built in but disabled at boot. */
	return abi < 0 ? 0 : abi;
}

static uint64_t handled_fs_for_abi(int abi)
{
	uint64_t h = TX_LL_FS_WRITE_FILE | TX_LL_FS_REMOVE_DIR | TX_LL_FS_REMOVE_FILE |
		     TX_LL_FS_MAKE_CHAR | TX_LL_FS_MAKE_DIR | TX_LL_FS_MAKE_REG |
		     TX_LL_FS_MAKE_SOCK | TX_LL_FS_MAKE_FIFO | TX_LL_FS_MAKE_BLOCK |
		     TX_LL_FS_MAKE_SYM;
	if (abi >= 2)
		h |= TX_LL_FS_REFER;
	if (abi >= 3)
		h |= TX_LL_FS_TRUNCATE;
	if (abi >= 5)
		h |= TX_LL_FS_IOCTL_DEV;
	return h;
}

static int allow_beneath(int ruleset_fd, const char *path, uint64_t handled, bool must_exist,
			 txbox_error *err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		/* optional entries that do not exist (or that we could not reach
		 * and so could not write anyway) need no rule */
		if (!must_exist && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
			return 0;
		return txbox_fail_errno(err, -errno, "landlock: opening %s", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "landlock: stat %s", path);
	struct tx_landlock_path_beneath_attr pb = {
		.allowed_access = S_ISDIR(st.st_mode) ? handled : (handled & TX_LL_FS_FILE_RIGHTS),
		.parent_fd = fd,
	};
	if (pb.allowed_access == 0)
		return 0;
	if (ll_add_rule(ruleset_fd, TX_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		/* EBADFD: a pipe or socket (e.g. /dev/stdout), which Landlock
		 * does not restrict in the first place */
		if (!must_exist && errno == EBADFD)
			return 0;
		return txbox_fail_errno(err, -errno, "landlock: adding a rule for %s", path);
	}
	return 0;
}

/* ---- fail-closed reads (secrets.c) ------------------------------------ */

int landlock_read_ruleset(int abi)
{
	/* refer is denied by every ruleset of ABI >= 2 unless a rule grants it:
	 * handle it to grant it wherever reading is (the write layer decides
	 * where renames may really happen). */
	struct tx_landlock_ruleset_attr attr = {
		.handled_access_fs = TX_LL_FS_READ_FILE | TX_LL_FS_EXECUTE | (abi >= 2 ? TX_LL_FS_REFER : 0)};
	int fd = ll_create_ruleset(&attr, sizeof(uint64_t), 0);
	return fd < 0 ? -errno : fd;
}

int landlock_grant_read(int ruleset_fd, int fd, bool dir, int abi)
{
	struct tx_landlock_path_beneath_attr pb = {
		.allowed_access = TX_LL_FS_READ_FILE | TX_LL_FS_EXECUTE |
				  (dir && abi >= 2 ? TX_LL_FS_REFER : 0),
		.parent_fd = fd,
	};
	return ll_add_rule(ruleset_fd, TX_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0 ? -errno : 0;
}

int harden_keep_read_layer_fds(harden_opts *o, int lowfd)
{
	if (!o->read_layer)
		return 0;
	if (dup3(o->read_ruleset, lowfd, O_CLOEXEC) < 0 || dup3(o->read_ready, lowfd + 1, O_CLOEXEC) < 0) {
		o->read_ruleset = o->read_ready = -1; /* harden_landlock_read_apply fails closed */
		return 0;
	}
	o->read_ruleset = lowfd, o->read_ready = lowfd + 1;
	return 2;
}

int harden_landlock_read_apply(const harden_opts *o, txbox_error *err)
{
	if (!o->read_layer)
		return 0;
	char why[512];
	ssize_t n;
	/* Peeked, not read: each command of the sandbox asks. */
	do
		n = recv(o->read_ready, why, sizeof why - 1, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	/* One NUL byte: every rule is in. Text: why the helper failed.
	 * Nothing (EOF): it died. */
	if (n != 1 || why[0] != '\0') {
		why[n > 0 ? n : 0] = '\0';
		return txbox_fail(err, n > 0 ? -EPERM : -errno, "masking secrets: %s",
				  n > 0 ? why : "the read layer is gone");
	}
	trace_mark("cmd: read layer ready");
	if (ll_restrict_self(o->read_ruleset, 0) < 0)
		return txbox_fail_errno(err, -errno, "masking secrets: enforcing the read layer");
	return 0;
}

int harden_landlock_apply(int abi, const char *workspace, const char *const *writable,
			  bool network, txbox_error *err)
{
	(void)network; /* see the header comment: TCP is never restricted */
	if (abi <= 0)
		return txbox_fail(err, -EOPNOTSUPP, "landlock: not supported by this kernel");

	struct tx_landlock_ruleset_attr attr = {.handled_access_fs = handled_fs_for_abi(abi)};
	size_t size = sizeof(uint64_t); /* ABI 1-3 know only handled_access_fs */
	if (abi >= 4)
		size = 2 * sizeof(uint64_t);
	if (abi >= 6) {
		attr.scoped = TX_LL_SCOPE_ABSTRACT_UNIX_SOCKET | TX_LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}

	_cleanup_close_ int rfd = ll_create_ruleset(&attr, size, 0);
	if (rfd < 0)
		return txbox_fail_errno(err, -errno, "landlock: creating the ruleset (ABI %d)", abi);

	int r;
	if (workspace && (r = allow_beneath(rfd, workspace, attr.handled_access_fs, true, err)) < 0)
		return r;
	for (const char *const *w = writable; w && *w; w++)
		if ((r = allow_beneath(rfd, *w, attr.handled_access_fs, false, err)) < 0)
			return r;

	if (ll_restrict_self(rfd, 0) < 0)
		return txbox_fail_errno(err, -errno, "landlock: restricting self");
	return 0;
}
