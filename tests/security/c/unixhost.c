/* unixhost.c MODE LABEL PATH...: reach a host Unix socket from the sandbox.
 *   stream LABEL PATH           connect() a stream socket
 *   dgram LABEL PATH            sendto() a datagram
 *   sendmsg LABEL PATH          sendmsg() a datagram with msg_name
 *   sendmmsg LABEL PATH         sendmmsg() two datagrams with msg_name
 *   fdpath LABEL PATH           open PATH O_PATH, connect() /proc/self/fd/N
 *   later LABEL PATH SECS       wait until PATH is a socket, then connect()
 *   race LABEL OWN HOST N       one thread flips a shared sockaddr between
 *                               OWN (bound here) and HOST while connect()
 *                               uses it N times: never may HOST answer
 *   iouring LABEL PATH          IORING_OP_CONNECT through io_uring
 *   own LABEL DIR               bind in DIR, connect (stream, dgram, sendmsg
 *                               with a descriptor): must WORK ("OWN-OK")
 *   malformed LABEL DIR         malformed sendmsg calls get the kernel's
 *                               errors (BLOCKED name: errno), then "own" DIR
 * A connection that works prints ESCAPED (or OWN-OK for own). */
#include "probe.h"
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

static socklen_t mkaddr(struct sockaddr_un *u, const char *path)
{
	memset(u, 0, sizeof *u);
	u->sun_family = AF_UNIX;
	snprintf(u->sun_path, sizeof u->sun_path, "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(u->sun_path) + 1);
}

static void report(const char *mode, const char *label, int ok, const char *what)
{
	char name[200];
	snprintf(name, sizeof name, "%s-%s", mode, label);
	if (ok)
		escaped(name, "%s", what);
	else
		blocked(name, "%s", strerror(errno));
}

static int do_stream(const char *label, const char *path)
{
	struct sockaddr_un u;
	socklen_t l = mkaddr(&u, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r = connect(fd, (struct sockaddr *)&u, l);
	if (r == 0)
		send(fd, "TXSEC-STREAM", 12, MSG_NOSIGNAL);
	report("stream", label, r == 0, "connected");
	close(fd);
	return r;
}

static void do_fdpath(const char *label, const char *path)
{
	int o = open(path, O_PATH | O_CLOEXEC);
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", o);
	if (o < 0)
		printf("INFO cannot open %s: %s\n", path, strerror(errno));
	do_stream(label, p);
}

static void do_dgram(const char *mode, const char *label, const char *path)
{
	struct sockaddr_un u;
	socklen_t l = mkaddr(&u, path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	char msg[] = "TXSEC-DGRAM";
	struct iovec iov = {msg, sizeof msg - 1};
	struct msghdr h = {.msg_name = &u, .msg_namelen = l, .msg_iov = &iov, .msg_iovlen = 1};
	struct mmsghdr mm[2] = {{.msg_hdr = h}, {.msg_hdr = h}};
	long r;
	if (!strcmp(mode, "dgram"))
		r = sendto(fd, msg, sizeof msg - 1, 0, (struct sockaddr *)&u, l);
	else if (!strcmp(mode, "sendmsg"))
		r = sendmsg(fd, &h, 0);
	else
		r = sendmmsg(fd, mm, 2, 0);
	report(mode, label, r > 0, "datagram delivered");
	close(fd);
}

static void do_later(const char *label, const char *path, int secs)
{
	struct stat st;
	for (int i = 0; i < secs * 20 && (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode)); i++)
		usleep(50000);
	if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		printf("INFO later-seen %s\n", path);
	do_stream(label, path);
}

/* ---- the TOCTOU racer ---- */
static struct sockaddr_un shared;
static struct sockaddr_un addr_own, addr_host;
static volatile int stop;

static void *flipper(void *arg)
{
	(void)arg;
	/* each value stays a while, so the kernel's copy often sees it whole */
	while (!stop) {
		memcpy(shared.sun_path, addr_host.sun_path, sizeof shared.sun_path);
		__asm__ volatile("" ::: "memory"); /* both stores happen */
		for (volatile int i = 0; i < 2000; i++)
			;
		memcpy(shared.sun_path, addr_own.sun_path, sizeof shared.sun_path);
		__asm__ volatile("" ::: "memory");
		for (volatile int i = 0; i < 2000; i++)
			;
	}
	return NULL;
}

static void *acceptor(void *arg)
{
	int l = *(int *)arg;
	for (;;) {
		int c = accept(l, NULL, NULL);
		if (c >= 0)
			close(c);
	}
	return NULL;
}

static void do_race(const char *label, const char *own, const char *host, int n)
{
	mkaddr(&addr_own, own);
	mkaddr(&addr_host, host);
	unlink(own);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (bind(l, (struct sockaddr *)&addr_own, sizeof addr_own) < 0 || listen(l, 512) < 0) {
		printf("INFO cannot bind %s: %s\n", own, strerror(errno));
		return;
	}
	shared = addr_own;
	pthread_t a, f;
	pthread_create(&a, NULL, acceptor, &l);
	pthread_create(&f, NULL, flipper, NULL);
	int owns = 0, hosts = 0;
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&shared, sizeof shared) == 0) {
			struct sockaddr_un peer;
			socklen_t pl = sizeof peer;
			memset(&peer, 0, sizeof peer);
			getpeername(fd, (struct sockaddr *)&peer, &pl);
			if (!strcmp(peer.sun_path, own))
				owns++;
			else {
				hosts++;
				send(fd, "TXSEC-RACE", 10, MSG_NOSIGNAL);
			}
		}
		close(fd);
	}
	stop = 1;
	pthread_join(f, NULL);
	printf("INFO race-own-connects %d\n", owns);
	char name[200];
	snprintf(name, sizeof name, "race-%s", label);
	if (hosts)
		escaped(name, "%d of %d connects reached the host socket", hosts, n);
	else
		blocked(name, "%d connects, none to the host socket", n);
}

/* ---- io_uring ---- */
static void do_iouring(const char *label, const char *path)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	char name[200];
	snprintf(name, sizeof name, "iouring-%s", label);
	int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0) {
		blocked(name, "io_uring_setup: %s", strerror(errno));
		return;
	}
	size_t sql = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cql = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sql, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cql, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED, ring,
					 IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		blocked(name, "mmap: %s", strerror(errno));
		return;
	}
	struct sockaddr_un u;
	socklen_t l = mkaddr(&u, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sqes[0], 0, sizeof sqes[0]);
	sqes[0].opcode = IORING_OP_CONNECT;
	sqes[0].fd = fd;
	sqes[0].addr = (unsigned long)&u;
	sqes[0].off = l;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *arr = (unsigned *)(sq + p.sq_off.array);
	arr[*tail & *(unsigned *)(sq + p.sq_off.ring_mask)] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
		blocked(name, "io_uring_enter: %s", strerror(errno));
		return;
	}
	unsigned head = *(unsigned *)(cq + p.cq_off.head);
	struct io_uring_cqe *cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) +
				   (head & *(unsigned *)(cq + p.cq_off.ring_mask));
	errno = cqe->res < 0 ? -cqe->res : 0;
	if (cqe->res == 0)
		send(fd, "TXSEC-URING", 11, MSG_NOSIGNAL);
	report("iouring", label, cqe->res == 0, "connected through io_uring");
}

/* ---- the command's own sockets must keep working ---- */
static int own_fail(const char *what)
{
	printf("OWN-FAIL %s: %s\n", what, strerror(errno));
	return -1;
}

static int do_own(const char *dir)
{
	char sp[200], dp[200];
	snprintf(sp, sizeof sp, "%s/own-stream.sock", dir);
	snprintf(dp, sizeof dp, "%s/own-dgram.sock", dir);
	unlink(sp);
	unlink(dp);
	struct sockaddr_un us, ud;
	socklen_t ls = mkaddr(&us, sp), ld = mkaddr(&ud, dp);
	int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(l, (struct sockaddr *)&us, ls) < 0 || listen(l, 4) < 0)
		return own_fail("bind stream");
	if (connect(c, (struct sockaddr *)&us, ls) < 0)
		return own_fail("connect stream");
	int o = open(sp, O_PATH | O_CLOEXEC), c2 = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un uo;
	char op[64];
	snprintf(op, sizeof op, "/dev/fd/%d", o);
	socklen_t lo = mkaddr(&uo, op);
	if (connect(c2, (struct sockaddr *)&uo, lo) < 0)
		return own_fail("connect /dev/fd/N");
	int d = socket(AF_UNIX, SOCK_DGRAM, 0), e = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (bind(d, (struct sockaddr *)&ud, ld) < 0)
		return own_fail("bind dgram");
	if (sendto(e, "one", 3, 0, (struct sockaddr *)&ud, ld) != 3)
		return own_fail("sendto dgram");
	/* a descriptor passed with sendmsg to the address */
	int pfd[2];
	if (pipe(pfd) < 0)
		return own_fail("pipe");
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} cm;
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {"two", 3};
	struct msghdr h = {.msg_name = &ud, .msg_namelen = ld, .msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	struct cmsghdr *ch = CMSG_FIRSTHDR(&h);
	ch->cmsg_level = SOL_SOCKET;
	ch->cmsg_type = SCM_RIGHTS;
	ch->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(ch), &pfd[1], sizeof(int));
	if (sendmsg(e, &h, 0) != 3)
		return own_fail("sendmsg dgram + fd");
	char buf[8];
	struct msghdr rh = {.msg_iov = &(struct iovec){buf, sizeof buf}, .msg_iovlen = 1,
			    .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	if (recv(d, buf, sizeof buf, 0) != 3 || recvmsg(d, &rh, 0) != 3)
		return own_fail("receive");
	int got;
	memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&rh)), sizeof got);
	if (write(got, "x", 1) != 1 || read(pfd[0], buf, 1) != 1)
		return own_fail("passed descriptor");
	printf("OWN-OK %s\n", dir);
	return 0;
}

/* A call that must fail with exactly errno want. */
static void expect_errno(const char *name, long r, int want)
{
	if (r >= 0)
		escaped(name, "returned %ld", r);
	else if (errno != want)
		escaped(name, "%s, not %s", strerror(errno), strerror(want));
	else
		blocked(name, "%s", strerror(errno));
}

static void do_malformed(const char *dir)
{
	char dp[200];
	snprintf(dp, sizeof dp, "%s/malformed.sock", dir);
	unlink(dp);
	struct sockaddr_un u;
	socklen_t l = mkaddr(&u, dp);
	int d = socket(AF_UNIX, SOCK_DGRAM, 0), e = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (bind(d, (struct sockaddr *)&u, l) < 0)
		printf("INFO cannot bind %s\n", dp);
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} cm;
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {"x", 1};
	struct msghdr h = {.msg_name = &u, .msg_namelen = l, .msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	cm.a.cmsg_level = SOL_SOCKET;
	cm.a.cmsg_type = SCM_RIGHTS;
	cm.a.cmsg_len = 4096; /* past the buffer */
	expect_errno("cmsg-past-buffer", sendmsg(e, &h, 0), EINVAL);
	h.msg_control = NULL;
	h.msg_controllen = 0;
	h.msg_iovlen = 5000;
	expect_errno("iovlen-too-big", sendmsg(e, &h, 0), EMSGSIZE);
	h.msg_iovlen = 1;
	h.msg_name = (void *)16;
	expect_errno("name-bad-pointer", sendmsg(e, &h, 0), EFAULT);
	expect_errno("connect-bad-pointer", connect(e, (void *)16, l), EFAULT);
	expect_errno("connect-long-len", connect(e, (struct sockaddr *)&u, 4096), EINVAL);
	expect_errno("connect-not-socket", connect(0, (struct sockaddr *)&u, l), ENOTSOCK);
	expect_errno("connect-bad-fd", connect(999, (struct sockaddr *)&u, l), EBADF);
	close(d);
	close(e);
	unlink(dp);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (argc > 3 && !strcmp(m, "fdpath"))
		do_fdpath(argv[2], argv[3]);
	else if (argc > 3 && !strcmp(m, "stream"))
		do_stream(argv[2], argv[3]);
	else if (argc > 3 && (!strcmp(m, "dgram") || !strcmp(m, "sendmsg") || !strcmp(m, "sendmmsg")))
		do_dgram(m, argv[2], argv[3]);
	else if (argc > 4 && !strcmp(m, "later"))
		do_later(argv[2], argv[3], atoi(argv[4]));
	else if (argc > 5 && !strcmp(m, "race"))
		do_race(argv[2], argv[3], argv[4], atoi(argv[5]));
	else if (argc > 3 && !strcmp(m, "iouring"))
		do_iouring(argv[2], argv[3]);
	else if (argc > 3 && !strcmp(m, "own"))
		do_own(argv[3]);
	else if (argc > 3 && !strcmp(m, "malformed")) {
		do_malformed(argv[3]);
		do_own(argv[3]);
	}
	else {
		fprintf(stderr, "usage: see unixhost.c\n");
		return 2;
	}
	return probe_done();
}
