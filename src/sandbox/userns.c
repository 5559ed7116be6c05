/* userns: user namespace maps for rootless runs. The command keeps the
 * caller's uid and gid inside (identity map of one id each), so files it
 * creates are owned by the caller. */
#include "sandbox/sandbox.h"

#include "util/cleanup.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_proc_file(pid_t pid, const char *name, const char *data, txbox_error *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening %s", path);
	size_t len = strlen(data);
	if (write(fd, data, len) != (ssize_t)len)
		return txbox_fail_errno(err, -errno, "writing %s", path);
	return 0;
}

int userns_write_maps(pid_t pid, uid_t uid, gid_t gid, txbox_error *err)
{
	char map[64];
	int r = write_proc_file(pid, "setgroups", "deny", err);
	if (r < 0 && r != -ENOENT)
		return r;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	r = write_proc_file(pid, "uid_map", map, err);
	if (r < 0)
		return r;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_proc_file(pid, "gid_map", map, err);
}
