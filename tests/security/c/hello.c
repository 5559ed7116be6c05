/* hello.c: a harmless program the setuid attack copies and marks u+s/g+s.
 * It reports the ids it runs with. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("uid=%d euid=%d gid=%d egid=%d\n", (int)getuid(), (int)geteuid(), (int)getgid(), (int)getegid());
	return 0;
}
