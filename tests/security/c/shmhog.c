/* shmhog.c MODE MIB [PATH]: hold MIB MiB of memory that is in no process's
 * private memory, then keep it for a second. Prints SURVIVED when it got
 * all of it.
 *   memfd      a memfd filled with write(), kept open
 *   memfd-map  a memfd filled with write(), its first MiB mapped, fd closed
 *   memfd-fly  a memfd filled with write(), in flight in a socket, fd closed
 *   sysv       a SysV segment filled and detached (not removed)
 *   file       a file at PATH (e.g. /dev/shm/x, /tmp/x) */
#include "probe.h"

#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>

static char chunk[1 << 20];

static long fill_fd(int fd, long mib)
{
	long got = 0;
	for (; got < mib; got++) {
		if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
			break;
		if (got % 64 == 0) {
			printf("INFO %ld MiB\n", got);
			fflush(stdout);
		}
	}
	return got;
}

static void send_fd(int sock, int fd)
{
	char c = 'x';
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) != 1)
		printf("INFO sendmsg: %s\n", strerror(errno));
}

/* 16 MiB segments (a whole 512 MiB one would not even map under an
 * address-space limit), each filled, detached and left in the namespace. */
static long sysv(long mib)
{
	long got = 0;
	while (got < mib) {
		int id = shmget(IPC_PRIVATE, 16 << 20, IPC_CREAT | 0600);
		if (id < 0) {
			printf("INFO shmget: %s\n", strerror(errno));
			break;
		}
		char *p = shmat(id, NULL, 0);
		if (p == (void *)-1) {
			printf("INFO shmat: %s\n", strerror(errno));
			break;
		}
		memset(p, 0x5a, 16 << 20);
		shmdt(p);
		got += 16;
		if (got % 64 == 0) {
			printf("INFO %ld MiB\n", got);
			fflush(stdout);
		}
	}
	return got;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "memfd";
	long mib = argc > 2 ? atol(argv[2]) : 512;
	memset(chunk, 0x5a, sizeof chunk);
	long got = 0;
	int sv[2] = {-1, -1};
	void *map = NULL;
	if (!strcmp(mode, "sysv")) {
		got = sysv(mib);
	} else if (!strcmp(mode, "file")) {
		int fd = open(argc > 3 ? argv[3] : "/tmp/shmhog", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		got = fd < 0 ? 0 : fill_fd(fd, mib);
		if (fd >= 0)
			close(fd);
	} else {
		int fd = (int)syscall(SYS_memfd_create, "shmhog", 0);
		if (fd < 0) {
			printf("INFO memfd_create: %s\n", strerror(errno));
			return probe_done();
		}
		got = fill_fd(fd, mib);
		if (!strcmp(mode, "memfd-map")) {
			map = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);
			if (map == MAP_FAILED)
				printf("INFO mmap: %s\n", strerror(errno));
			close(fd);
		} else if (!strcmp(mode, "memfd-fly")) {
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0)
				send_fd(sv[0], fd);
			close(fd);
		}
	}
	printf("%s %ld MiB (%s)\n", got >= mib ? "SURVIVED" : "STOPPED", got, mode);
	fflush(stdout);
	sleep(1);
	(void)map;
	return probe_done();
}
