/* daemon.c MARK: leave a process behind the way daemons do (double fork,
 * setsid, ignore the polite signals, close stdio) and come back at once.
 * The grandchild keeps MARK in its argv so the host can look for it. */
#include "probe.h"
#include <signal.h>
#include <sys/prctl.h>

int main(int argc, char **argv)
{
	(void)argc;
	pid_t c = fork();
	if (c < 0) {
		perror("fork");
		return 1;
	}
	if (c == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, 0);
		int n = open("/dev/null", O_RDWR);
		dup2(n, 0);
		dup2(n, 1);
		dup2(n, 2);
		/* argv[1] is the marker: re-exec sleep-like loop keeping it */
		execl("/bin/sh", "sh", "-c", "while :; do sleep 1; done", argv[1], (char *)NULL);
		for (;;)
			pause();
	}
	printf("INFO daemon started\n");
	return probe_done();
}
