/* fdleak.c NAME: use every inherited descriptor above stderr: write to it,
 * and when it is a directory, create NAME beneath it (a directory fd leaked
 * into a sandbox is a classic way out). */
#include "probe.h"
#include <dirent.h>

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "txsec-pwn";
	int seen = 0;
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			continue;
		seen++;
		char n[64];
		char link[256] = "";
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t l = readlink(p, link, sizeof link - 1);
		if (l > 0)
			link[l] = 0;
		printf("INFO inherited fd %d -> %s\n", fd, link);
		if (S_ISDIR(st.st_mode)) {
			snprintf(n, sizeof n, "openat-create-fd%d", fd);
			EXPECT_FAIL_FD(n, openat(fd, name, O_CREAT | O_WRONLY | O_EXCL, 0644));
			snprintf(n, sizeof n, "openat-dotdot-fd%d", fd);
			EXPECT_FAIL_FD(n, openat(fd, "../../../../../../etc/passwd", O_WRONLY | O_APPEND));
			snprintf(n, sizeof n, "fchdir-escape-fd%d", fd);
			EXPECT_FAIL(n, fchdir(fd) == 0 ? open(name, O_CREAT | O_WRONLY | O_EXCL, 0644) : -1);
		} else {
			snprintf(n, sizeof n, "write-fd%d", fd);
			EXPECT_FAIL(n, write(fd, "TXSEC-PWN\n", 10));
			snprintf(n, sizeof n, "reopen-rw-fd%d", fd);
			EXPECT_FAIL_FD(n, open(p, O_WRONLY | O_APPEND));
		}
	}
	printf("INFO %d inherited descriptors above stderr\n", seen);
	return probe_done();
}
