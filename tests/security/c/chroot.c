/* chroot.c: chroot, and the classic chroot-breakout (chroot into a subdir,
 * walk up with chdir(".."), chroot(".")). */
#include "probe.h"

int main(void)
{
	EXPECT_FAIL("chroot-tmp", chroot("/tmp"));
	EXPECT_FAIL("chroot-root", chroot("/"));
	mkdir("chroot-jail", 0755);
	if (chroot("chroot-jail") == 0) {
		escaped("chroot-jail", "chroot into a subdirectory worked");
		for (int i = 0; i < 64; i++)
			if (chdir("..") < 0)
				break;
		if (chroot(".") == 0)
			escaped("chroot-breakout", "chroot(\".\") after walking up worked");
	} else
		blocked("chroot-jail", "%s", strerror(errno));
	rmdir("chroot-jail");
	return probe_done();
}
