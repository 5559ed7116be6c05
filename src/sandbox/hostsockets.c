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
		/* Num RefCount Protocol Flags Type St Inode Path — the path is the
		 * rest of the line (it may contain spaces); only sockets one can
		 * connect to matter: listening (flag 0x10000) or datagram (type 2). */
		char *fld[7];
		char *q = line;
		size_t k = 0;
		for (; k < 7; k++) {
			while (*q == ' ')
				q++;
			fld[k] = q;
			while (*q && *q != ' ' && *q != '\n')
				q++;
			if (*q != ' ')
				break;
			*q++ = '\0';
		}
		if (k < 7)
			continue;
		unsigned long flags = strtoul(fld[3], NULL, 16), type = strtoul(fld[4], NULL, 16);
		if (!(flags & 0x10000) && type != 2)
			continue;
		char *path = q;
		while (*path == ' ')
			path++;
		size_t pl = strcspn(path, "\n");
		path[pl] = '\0';
		if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
			continue; /* unnamed, abstract (@…, per network namespace), relative or not canonical */
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
