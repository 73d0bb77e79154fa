/* cpu.h: what the spinning heuristics need to know about the machine. */
#ifndef SQF_SRC_CPU_H
#define SQF_SRC_CPU_H

/* The number of CPUs this process may run on (>= 1), read once and cached. */
int sqf_ncpu(void);

#endif
