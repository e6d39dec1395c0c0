/* Probes before and after fork(): the child writes a trace of its own. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tracelens/probe.h>

int main(void)
{
	for (int i = 0; i < 10; i++)
		TL_PROBE_U64(parent_before, i);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 20; i++)
			TL_PROBE_U64(child_event, i);
		return 0;
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 30; i++)
		TL_PROBE_U64(parent_after, i);
	return 0;
}
