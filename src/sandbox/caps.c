/* sandbox/caps: capability drop. No libcap: prctl(2) and raw capset(2). */
#include "sandbox/caps.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#define TX_SECUREBITS                                                                  \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |                 \
	 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |                       \
	 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

/* Highest capability number of the running kernel (it may know more than
 * our headers). Read without stdio: this runs in a forked child. */
static int cap_last_cap(void)
{
	int last = CAP_LAST_CAP;
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[16];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			char *end = NULL;
			long v = strtol(buf, &end, 10);
			if (end != buf && v >= 0 && v < 64)
				last = (int)v;
		}
	}
	return last;
}

static int caps_get(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	return (int)syscall(SYS_capget, &hdr, data);
}

static bool have_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

int harden_caps_drop(bool in_userns, txbox_error *err)
{
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (caps_get(data) < 0)
		return txbox_fail_errno(err, -errno, "caps: capget");
	bool setpcap = have_cap(data, CAP_SETPCAP);

	/* Bounding set: needs CAP_SETPCAP. Without it the process holds no
	 * privilege to lose and cannot gain any through exec once
	 * NO_NEW_PRIVS is set (harden_child_apply sets it right after). */
	int last = cap_last_cap();
	for (int cap = 0; cap <= last; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) <= 0)
			continue; /* not in the set, or unknown to this kernel */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			if (errno == EPERM && !setpcap)
				break;
			return txbox_fail_errno(err, -errno, "caps: dropping capability %d from the bounding set", cap);
		}
	}

	/* Ambient set (kernel >= 4.3). */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return txbox_fail_errno(err, -errno, "caps: clearing the ambient set");

	if (in_userns)
		return 0; /* with an empty bounding set, exec leaves no capability */

	/* Securebits before capset: setting them needs CAP_SETPCAP. */
	if (setpcap) {
		int cur = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
		if (cur < 0)
			return txbox_fail_errno(err, -errno, "caps: reading securebits");
		unsigned long want = ((unsigned long)cur | TX_SECUREBITS) & ~(unsigned long)SECBIT_KEEP_CAPS;
		if (want != (unsigned long)cur && prctl(PR_SET_SECUREBITS, want, 0, 0, 0) < 0)
			return txbox_fail_errno(err, -errno, "caps: setting securebits");
	}

	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return txbox_fail_errno(err, -errno, "caps: clearing the effective, permitted and inheritable sets");
	return 0;
}

/* Root of its own user namespace keeps what root needs to act on a
 * workspace like a native root (owners, modes, other users' files, signals)
 * and loses what only widens its reach: chroot, file capabilities, device
 * nodes, raw sockets, capability management, and every administrative
 * capability (none of which would reach the host anyway). */
static const int namespaced_keep[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID,
	CAP_KILL, CAP_SETGID, CAP_SETUID, CAP_NET_BIND_SERVICE, CAP_AUDIT_WRITE,
};

int harden_caps_limit_namespaced(txbox_error *err)
{
	int last = cap_last_cap();
	for (int cap = 0; cap <= last; cap++) {
		bool keep = false;
		for (size_t i = 0; i < sizeof namespaced_keep / sizeof *namespaced_keep && !keep; i++)
			keep = namespaced_keep[i] == cap;
		if (keep || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) <= 0)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			return txbox_fail_errno(err, -errno, "caps: dropping capability %d from the bounding set", cap);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return txbox_fail_errno(err, -errno, "caps: clearing the ambient set");
	return 0;
}
