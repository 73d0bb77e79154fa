/* absl.h: Abseil's synchronization primitives for sqbench's C code
 * (absl.cpp).  Built only when CMake finds Abseil (Debian libabsl-dev);
 * SQB_HAVE_ABSL is then defined, and otherwise the variants using them are
 * reported as "not built".
 *
 * Each object is opaque, made with new (std::nothrow): NULL on allocation
 * failure or a count Abseil would reject.  Every call is one C call into
 * absl.cpp, which makes the one Abseil call; absl::Mutex's own Lock and
 * Unlock are out of line in libabsl_synchronization anyway, so the adapter
 * adds a call and a return to what a C++ caller pays. */
#ifndef SQBENCH_ABSL_H
#define SQBENCH_ABSL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sqb_absl_mutex sqb_absl_mutex;
typedef struct sqb_absl_cond sqb_absl_cond;
typedef struct sqb_absl_note sqb_absl_note;
typedef struct sqb_absl_barrier sqb_absl_barrier;
typedef struct sqb_absl_counter sqb_absl_counter;

/* absl::Mutex: Lock, Unlock, TryLock (1 = taken). */
sqb_absl_mutex *sqb_absl_mutex_new(void);
void sqb_absl_mutex_lock(sqb_absl_mutex *m);
void sqb_absl_mutex_unlock(sqb_absl_mutex *m);
int sqb_absl_mutex_trylock(sqb_absl_mutex *m);
void sqb_absl_mutex_del(sqb_absl_mutex *m);

/* absl::CondVar, waited on with an sqb_absl_mutex held. */
sqb_absl_cond *sqb_absl_cond_new(void);
void sqb_absl_cond_wait(sqb_absl_cond *c, sqb_absl_mutex *m);
void sqb_absl_cond_signal(sqb_absl_cond *c);
void sqb_absl_cond_broadcast(sqb_absl_cond *c);
void sqb_absl_cond_del(sqb_absl_cond *c);

/* absl::Notification: one Notify, any number of waiters. */
sqb_absl_note *sqb_absl_note_new(void);
void sqb_absl_note_notify(sqb_absl_note *n);
void sqb_absl_note_wait(sqb_absl_note *n);
int sqb_absl_note_has_been_notified(sqb_absl_note *n);
void sqb_absl_note_del(sqb_absl_note *n);

/* absl::Barrier: single use (Block() returns 1 for one caller, which may
 * then delete it); a barrier passed r times needs r of them. */
sqb_absl_barrier *sqb_absl_barrier_new(int parties);
int sqb_absl_barrier_block(sqb_absl_barrier *b);
void sqb_absl_barrier_del(sqb_absl_barrier *b);

/* absl::BlockingCounter: Wait() returns once DecrementCount() has been
 * called `count` times; Wait() may be called once, by one thread.
 * decrement returns 1 for the call that brought the count to zero. */
sqb_absl_counter *sqb_absl_counter_new(int count);
int sqb_absl_counter_decrement(sqb_absl_counter *c);
void sqb_absl_counter_wait(sqb_absl_counter *c);
void sqb_absl_counter_del(sqb_absl_counter *c);

/* "Abseil 20220623" for the report. */
const char *sqb_absl_info(void);

#ifdef __cplusplus
}
#endif
#endif
