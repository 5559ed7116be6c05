/* sockleft.c PATH: bind a Unix socket at PATH and exit, leaving the socket
 * file behind in the workspace. */
#include "probe.h"
#include <sys/socket.h>
#include <sys/un.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	snprintf(u.sun_path, sizeof u.sun_path, "%s", argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&u, sizeof u) < 0 || listen(fd, 1) < 0) {
		printf("INFO cannot bind %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("INFO socket left at %s\n", argv[1]);
	return probe_done();
}
