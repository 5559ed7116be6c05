/* tiocsti.c: push characters into a terminal's input queue (TIOCSTI) and
 * reach for TIOCLINUX, on every terminal fd we can get. */
#include "probe.h"
#include <dirent.h>
#include <sys/ioctl.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static void inject(int fd, const char *where)
{
	char name[256];
	const char *payload = "echo TXSEC-INJECTED\n";
	snprintf(name, sizeof name, "tiocsti-%s", where);
	int ok = 0, err = 0;
	for (const char *c = payload; *c; c++) {
		if (ioctl(fd, TIOCSTI, c) == 0)
			ok++;
		else
			err = errno;
	}
	if (ok)
		escaped(name, "%d characters injected", ok);
	else
		blocked(name, "%s", strerror(err));
	snprintf(name, sizeof name, "tioclinux-%s", where);
	char sub = 6; /* TIOCL_GETSHIFTSTATE */
	EXPECT_FAIL(name, ioctl(fd, TIOCLINUX, &sub));
}

int main(void)
{
	inject(0, "stdin");
	inject(1, "stdout");
	inject(2, "stderr");
	/* high bits set in the request word: the kernel takes an unsigned int */
	errno = 0;
	char c = 'x';
	if (syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c) == 0)
		escaped("tiocsti-highbits", "injected");
	else
		blocked("tiocsti-highbits", "%s", strerror(errno));
	const char *devs[] = {"/dev/tty", "/dev/console", "/dev/tty0", "/dev/tty1", "/dev/ptmx"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		int fd = open(devs[i], O_RDWR | O_NOCTTY);
		char name[64];
		snprintf(name, sizeof name, "open%s", devs[i]);
		if (fd < 0) {
			blocked(name, "%s", strerror(errno));
			continue;
		}
		if (!strcmp(devs[i], "/dev/ptmx"))
			printf("INFO opened /dev/ptmx (a new pty of the sandbox's own devpts)\n");
		else
			inject(fd, devs[i] + 5);
		close(fd);
	}
	DIR *d = opendir("/dev/pts");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			char p[300];
			snprintf(p, sizeof p, "/dev/pts/%s", e->d_name);
			int fd = open(p, O_RDWR | O_NOCTTY);
			if (fd < 0)
				continue;
			printf("INFO opened %s\n", p);
			inject(fd, p + 5);
			close(fd);
		}
		closedir(d);
	}
	return probe_done();
}
