/* net.c KIND ARGS...: connections out of the sandbox.
 *   tcp HOST PORT   udp HOST PORT   unix PATH   unix-dgram PATH   abstract NAME
 *   raw   (AF_PACKET, raw IP and other families) */
#include "probe.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <stddef.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif

static void conn(const char *name, int fam, int type, const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(fam, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		blocked(name, "socket: %s", strerror(errno));
		return;
	}
	/* bounded: non-blocking connect + poll */
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	int r = connect(fd, sa, len);
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = {fd, POLLOUT, 0};
		if (poll(&p, 1, 3000) == 1) {
			int e = 0;
			socklen_t el = sizeof e;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
			if (e == 0)
				r = 0;
			else
				errno = e;
		} else
			errno = ETIMEDOUT;
	}
	if (r == 0) {
		fcntl(fd, F_SETFL, fl);
		const char msg[] = "TXSEC-HELLO-FROM-SANDBOX\n";
		ssize_t n = send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL);
		escaped(name, "connected (sent %zd bytes)", n);
	} else
		blocked(name, "%s", strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	const char *k = argc > 1 ? argv[1] : "";
	if ((!strcmp(k, "tcp") || !strcmp(k, "udp")) && argc > 3) {
		int port = atoi(argv[3]);
		struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
		char name[128];
		snprintf(name, sizeof name, "%s-%s:%s", k, argv[2], argv[3]);
		int type = !strcmp(k, "tcp") ? SOCK_STREAM : SOCK_DGRAM;
		if (inet_pton(AF_INET, argv[2], &a4.sin_addr) == 1) {
			if (type == SOCK_STREAM)
				conn(name, AF_INET, type, (struct sockaddr *)&a4, sizeof a4);
			else {
				int fd = socket(AF_INET, SOCK_DGRAM, 0);
				if (fd < 0 || sendto(fd, "TXSEC", 5, 0, (struct sockaddr *)&a4, sizeof a4) < 0)
					blocked(name, "%s", strerror(errno));
				else
					printf("INFO %s: datagram accepted by the local stack (delivery checked by the host)\n", name);
				if (fd >= 0)
					close(fd);
			}
		} else if (inet_pton(AF_INET6, argv[2], &a6.sin6_addr) == 1)
			conn(name, AF_INET6, type, (struct sockaddr *)&a6, sizeof a6);
		else
			fprintf(stderr, "bad address %s\n", argv[2]);
	} else if ((!strcmp(k, "unix") || !strcmp(k, "unix-dgram")) && argc > 2) {
		struct sockaddr_un u = {.sun_family = AF_UNIX};
		snprintf(u.sun_path, sizeof u.sun_path, "%s", argv[2]);
		char name[256];
		snprintf(name, sizeof name, "%s-%s", k, argv[2]);
		if (!strcmp(k, "unix"))
			conn(name, AF_UNIX, SOCK_STREAM, (struct sockaddr *)&u, sizeof u);
		else {
			int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
			if (sendto(fd, "TXSEC-DGRAM", 11, 0, (struct sockaddr *)&u, sizeof u) == 11)
				escaped(name, "datagram delivered");
			else
				blocked(name, "%s", strerror(errno));
			close(fd);
		}
	} else if (!strcmp(k, "abstract") && argc > 2) {
		struct sockaddr_un u = {.sun_family = AF_UNIX};
		size_t n = strlen(argv[2]);
		if (n > sizeof u.sun_path - 1)
			n = sizeof u.sun_path - 1;
		memcpy(u.sun_path + 1, argv[2], n);
		char name[256];
		snprintf(name, sizeof name, "abstract-@%s", argv[2]);
		conn(name, AF_UNIX, SOCK_STREAM, (struct sockaddr *)&u,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	} else if (!strcmp(k, "raw")) {
		static const struct {
			int fam, type, proto;
			const char *name;
		} s[] = {
			{AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */, "af_packet-raw"},
			{AF_PACKET, SOCK_DGRAM, 0x0300, "af_packet-dgram"},
			{AF_INET, SOCK_PACKET, 0x0300, "sock_packet"},
			{AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw-icmp"},
			{AF_INET, SOCK_RAW, IPPROTO_RAW, "raw-ip"},
			{AF_INET6, SOCK_RAW, IPPROTO_ICMPV6, "raw-icmp6"},
			{AF_VSOCK, SOCK_STREAM, 0, "af_vsock"},
			{AF_ALG, SOCK_SEQPACKET, 0, "af_alg"},
			{AF_KEY, SOCK_RAW, 2, "af_key"},
			{AF_XDP, SOCK_RAW, 0, "af_xdp"},
			{AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */, "netlink-audit-bind"},
		};
		for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
			int fd = socket(s[i].fam, s[i].type, s[i].proto);
			if (fd < 0) {
				blocked(s[i].name, "%s", strerror(errno));
				continue;
			}
			if (s[i].fam == AF_NETLINK) {
				/* the family is allowed by design; what matters is that the
				 * audit socket cannot be used (needs CAP_AUDIT_*) */
				char buf[64] = {0};
				struct {
					unsigned len;
					unsigned short type, flags;
					unsigned seq, pid;
				} *h = (void *)buf;
				h->len = 16 + 4;
				h->type = 1000; /* AUDIT_GET */
				h->flags = 1 | 4;
				struct sockaddr_storage to;
				memset(&to, 0, sizeof to);
				to.ss_family = AF_NETLINK;
				if (sendto(fd, buf, h->len, 0, (struct sockaddr *)&to, 12) < 0)
					blocked(s[i].name, "%s", strerror(errno));
				else {
					char rb[256];
					struct pollfd p = {fd, POLLIN, 0};
					ssize_t n = poll(&p, 1, 1000) == 1 ? recv(fd, rb, sizeof rb, 0) : -1;
					/* an nlmsgerr with a negative error is a refusal */
					int err = n >= 36 ? *(int *)(rb + 16) : 0;
					if (n >= 36 && err < 0)
						blocked(s[i].name, "audit refused: %s", strerror(-err));
					else if (n < 0)
						blocked(s[i].name, "no answer");
					else
						escaped(s[i].name, "audit answered (%zd bytes)", n);
				}
			} else
				escaped(s[i].name, "socket created (fd %d)", fd);
			close(fd);
		}
	} else {
		fprintf(stderr, "usage: net tcp|udp HOST PORT | unix PATH | unix-dgram PATH | abstract NAME | raw\n");
		return 2;
	}
	return probe_done();
}
