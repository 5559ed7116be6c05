/* mount.c HOME: the mount API in every form. */
#include "probe.h"
#include <linux/mount.h>
#include <sys/mount.h>

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x1
#endif
struct mattr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

int main(int argc, char **argv)
{
	const char *home = argc > 1 ? argv[1] : "/root";
	char ssh[4096];
	snprintf(ssh, sizeof ssh, "%s/.ssh", home);
	mkdir("mnt-point", 0755);
	EXPECT_FAIL("mount-tmpfs-etc", mount("tmpfs", "/etc", "tmpfs", 0, NULL));
	EXPECT_FAIL("mount-tmpfs-ws", mount("tmpfs", "mnt-point", "tmpfs", 0, NULL));
	EXPECT_FAIL("mount-bind-root", mount("/", "mnt-point", NULL, MS_BIND | MS_REC, NULL));
	EXPECT_FAIL("remount-root-rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
	EXPECT_FAIL("remount-etc-rw", mount(NULL, "/etc", NULL, MS_REMOUNT, NULL));
	EXPECT_FAIL("mount-proc", mount("proc", "mnt-point", "proc", 0, NULL));
	EXPECT_FAIL("make-shared", mount(NULL, "/", NULL, MS_SHARED | MS_REC, NULL));
	EXPECT_FAIL("umount-proc", umount2("/proc", MNT_DETACH));
	EXPECT_FAIL("umount-secret-mask", umount2(ssh, MNT_DETACH));
	EXPECT_FAIL("umount-root", umount2("/", MNT_DETACH));
	EXPECT_FAIL("umount-tmp", umount2("/tmp", MNT_DETACH));
	EXPECT_FAIL_FD("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
	EXPECT_FAIL_FD("fspick", syscall(SYS_fspick, AT_FDCWD, "/", 0));
	EXPECT_FAIL_FD("open_tree-clone", syscall(SYS_open_tree, AT_FDCWD, "/", 1 /*OPEN_TREE_CLONE*/ | 0x8000));
	EXPECT_FAIL("move_mount", syscall(SYS_move_mount, AT_FDCWD, "/proc", AT_FDCWD, "mnt-point", 0));
	EXPECT_FAIL("pivot_root", syscall(SYS_pivot_root, ".", "."));
	struct mattr a = {.attr_clr = MOUNT_ATTR_RDONLY};
	EXPECT_FAIL("mount_setattr-clear-ro", syscall(SYS_mount_setattr, AT_FDCWD, "/", 0x8000, &a, sizeof a));
	rmdir("mnt-point");
	return probe_done();
}
