/*
 * spawn: creates processes and threads the way C programs do, through
 * glibc (which uses clone3 for both on glibc 2.34 and later), and writes
 * from each.
 *
 *   spawn THREADFILE CHILDFILE
 * A pthread writes THREADFILE; posix_spawn runs `sh -c 'echo > CHILDFILE'`;
 * vfork + exec writes CHILDFILE.vfork the same way.
 */
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *thread_write(void *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pid_t pid;
	int status;
	char cmd[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: spawn THREADFILE CHILDFILE\n");
		return 2;
	}
	if (pthread_create(&t, NULL, thread_write, argv[1]) != 0 || pthread_join(t, NULL) != 0)
		return 1;

	snprintf(cmd, sizeof(cmd), "echo > '%s'", argv[2]);
	char *args[] = {"sh", "-c", cmd, NULL};
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, args, environ) != 0)
		return 1;
	waitpid(pid, &status, 0);

	snprintf(cmd, sizeof(cmd), "echo > '%s.vfork'", argv[2]);
	pid = vfork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return 0;
}
