/* absl.cpp: Abseil's Mutex, CondVar, Notification, Barrier and
 * BlockingCounter behind the C interface of absl.h. */
#include <new>

#include <absl/base/config.h>
#include <absl/synchronization/barrier.h>
#include <absl/synchronization/blocking_counter.h>
#include <absl/synchronization/mutex.h>
#include <absl/synchronization/notification.h>

#include "absl.h"

struct sqb_absl_mutex {
    absl::Mutex mu;
};
struct sqb_absl_cond {
    absl::CondVar cv;
};
struct sqb_absl_note {
    absl::Notification note;
};
struct sqb_absl_barrier {
    explicit sqb_absl_barrier(int n) : barrier(n) {}
    absl::Barrier barrier;
};
struct sqb_absl_counter {
    explicit sqb_absl_counter(int n) : counter(n) {}
    absl::BlockingCounter counter;
};

extern "C" {

/* Debian builds Abseil without NDEBUG, where every Lock and Unlock also
 * maintains the deadlock detector's graph (about 370 instructions a pair
 * instead of about 70).  Production builds of Abseil have it off; so does
 * every absl::Mutex of sqbench, for a fair comparison. */
static void production_mode()
{
    static const bool once = [] {
        absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
        return true;
    }();
    (void)once;
}

sqb_absl_mutex *sqb_absl_mutex_new(void)
{
    production_mode();
    return new (std::nothrow) sqb_absl_mutex;
}

void sqb_absl_mutex_lock(sqb_absl_mutex *m)
{
    m->mu.Lock();
}

void sqb_absl_mutex_unlock(sqb_absl_mutex *m)
{
    m->mu.Unlock();
}

int sqb_absl_mutex_trylock(sqb_absl_mutex *m)
{
    return m->mu.TryLock() ? 1 : 0;
}

void sqb_absl_mutex_del(sqb_absl_mutex *m)
{
    delete m;
}

sqb_absl_cond *sqb_absl_cond_new(void)
{
    production_mode();
    return new (std::nothrow) sqb_absl_cond;
}

void sqb_absl_cond_wait(sqb_absl_cond *c, sqb_absl_mutex *m)
{
    c->cv.Wait(&m->mu);
}

void sqb_absl_cond_signal(sqb_absl_cond *c)
{
    c->cv.Signal();
}

void sqb_absl_cond_broadcast(sqb_absl_cond *c)
{
    c->cv.SignalAll();
}

void sqb_absl_cond_del(sqb_absl_cond *c)
{
    delete c;
}

sqb_absl_note *sqb_absl_note_new(void)
{
    production_mode();
    return new (std::nothrow) sqb_absl_note;
}

void sqb_absl_note_notify(sqb_absl_note *n)
{
    n->note.Notify();
}

void sqb_absl_note_wait(sqb_absl_note *n)
{
    n->note.WaitForNotification();
}

int sqb_absl_note_has_been_notified(sqb_absl_note *n)
{
    return n->note.HasBeenNotified() ? 1 : 0;
}

void sqb_absl_note_del(sqb_absl_note *n)
{
    delete n;
}

sqb_absl_barrier *sqb_absl_barrier_new(int parties)
{
    production_mode();
    if (parties < 1) return nullptr;
    return new (std::nothrow) sqb_absl_barrier(parties);
}

int sqb_absl_barrier_block(sqb_absl_barrier *b)
{
    return b->barrier.Block() ? 1 : 0;
}

void sqb_absl_barrier_del(sqb_absl_barrier *b)
{
    delete b;
}

sqb_absl_counter *sqb_absl_counter_new(int count)
{
    production_mode();
    if (count < 0) return nullptr;
    return new (std::nothrow) sqb_absl_counter(count);
}

int sqb_absl_counter_decrement(sqb_absl_counter *c)
{
    return c->counter.DecrementCount() ? 1 : 0;
}

void sqb_absl_counter_wait(sqb_absl_counter *c)
{
    c->counter.Wait();
}

void sqb_absl_counter_del(sqb_absl_counter *c)
{
    delete c;
}

const char *sqb_absl_info(void)
{
#define SQB_STR2(x) #x
#define SQB_STR(x)  SQB_STR2(x)
#ifdef ABSL_LTS_RELEASE_VERSION
    return "Abseil LTS " SQB_STR(ABSL_LTS_RELEASE_VERSION) "." SQB_STR(
        ABSL_LTS_RELEASE_PATCH_LEVEL);
#else
    return "Abseil (no LTS version)";
#endif
}

} /* extern "C" */
