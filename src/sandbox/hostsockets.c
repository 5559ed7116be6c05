/* hostsockets: a read-only bind mount does not stop connect() on a Unix
 * socket, and Landlock (up to ABI 7) does not govern pathname sockets. So
 * the supervisor lists the sockets bound in its network namespace
 * (/proc/net/unix) and the sandbox covers each with /dev/null. /run,
 * /var/run, /tmp, /var/tmp and /dev/shm are replaced wholesale anyway.
 * Sockets bound after the list is read are not covered (documented). */
#include "sandbox/hostsockets.h"

#include "util/cleanup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool under(const char *p, const char *tree)
{
	size_t n = strlen(tree);
	return strncmp(p, tree, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

char **hostsockets_list(size_t max)
{
	char **out = calloc(max + 1, sizeof *out);
	if (!out)
		return NULL;
	_cleanup_fclose_ FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		return out;
	char *line = NULL;
	size_t cap = 0, n = 0;
	static const char *const hidden[] = {"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"};
	bool first = true;
	while (n < max && getline(&line, &cap, f) > 0) {
		if (first) { /* header */
			first = false;
			continue;
		}
		/* Num RefCount Protocol Flags Type St Inode Path */
		char *save = NULL, *tok = strtok_r(line, " \n", &save);
		int field = 0;
		char *path = NULL;
		while (tok) {
			if (++field == 8) {
				path = tok;
				break;
			}
			tok = strtok_r(NULL, " \n", &save);
		}
		if (!path || path[0] != '/')
			continue; /* unnamed, abstract (@…, per network namespace) or relative */
		bool skip = false;
		for (size_t i = 0; i < sizeof hidden / sizeof *hidden && !skip; i++)
			skip = under(path, hidden[i]);
		for (size_t i = 0; i < n && !skip; i++)
			skip = !strcmp(out[i], path);
		if (skip)
			continue;
		out[n] = strdup(path);
		if (out[n])
			n++;
	}
	free(line);
	return out;
}

void hostsockets_free(char **list)
{
	for (char **p = list; p && *p; p++)
		free(*p);
	free(list);
}
