#pragma once
/* Scheduling help for the few forks on the way to the command. */

/* Move the caller to another CPU it may run on, keeping its affinity mask
 * as it was. A new process starts on its parent's CPU and waits there
 * while the parent keeps running, however idle the other CPUs are; the
 * parent stepping aside lets the child run at once. Best effort: nothing
 * happens with a single allowed CPU or when a call fails. */
void cpu_step_aside(void);
