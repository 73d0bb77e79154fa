/* sem.c: placeholder until sqf_sem lands. */
typedef int sqf_sem_placeholder_;
