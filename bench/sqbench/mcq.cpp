/* mcq.cpp: moodycamel::BlockingConcurrentQueue behind the C interface of
 * mcq.h, for the two item sizes sqbench's queue experiments use. */
#include <atomic>
#include <blockingconcurrentqueue.h>
#include <cstdint>
#include <cstring>
#include <new>

#include "mcq.h"

namespace
{
struct item8 {
    std::uint64_t w[1];
};
struct item256 {
    std::uint64_t w[32];
};

struct base {
    virtual ~base() = default;
    virtual int try_push(const void *item) = 0;
    virtual int pop(void *item, long timeout_us) = 0;
};

/* The bound: a count of items in the queue, taken before an enqueue and
 * given back after a dequeue (try_enqueue cannot serve: it never allocates,
 * and each new producer thread needs a sub-queue, so with many producers it
 * fails for good even on an empty queue). */
template <class T> struct typed final : base {
    explicit typed(size_t capacity) : q(capacity), cap(capacity) {}
    int try_push(const void *item) override
    {
        size_t n = count.load(std::memory_order_relaxed);
        do {
            if (n >= cap) return 0;
        } while (!count.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
        T t;
        std::memcpy(&t, item, sizeof t);
        q.enqueue(t);
        return 1;
    }
    int pop(void *item, long timeout_us) override
    {
        T t;
        if (!q.wait_dequeue_timed(t, timeout_us)) return 0;
        count.fetch_sub(1, std::memory_order_relaxed);
        std::memcpy(item, &t, sizeof t);
        return 1;
    }
    moodycamel::BlockingConcurrentQueue<T> q;
    std::atomic<size_t> count{0};
    size_t cap;
};
} // namespace

struct sqb_mcq {
    base *impl;
};

extern "C" {

sqb_mcq *sqb_mcq_new(size_t item_size, size_t capacity)
{
    base *b = nullptr;
    if (item_size == sizeof(item8))
        b = new (std::nothrow) typed<item8>(capacity);
    else if (item_size == sizeof(item256))
        b = new (std::nothrow) typed<item256>(capacity);
    if (!b) return nullptr;
    sqb_mcq *q = new (std::nothrow) sqb_mcq{b};
    if (!q) delete b;
    return q;
}

int sqb_mcq_try_push(sqb_mcq *q, const void *item)
{
    return q->impl->try_push(item);
}

int sqb_mcq_pop(sqb_mcq *q, void *item, long timeout_us)
{
    return q->impl->pop(item, timeout_us);
}

void sqb_mcq_del(sqb_mcq *q)
{
    if (!q) return;
    delete q->impl;
    delete q;
}

} /* extern "C" */
