/* mcq.cpp: moodycamel::BlockingConcurrentQueue behind the C interface of
 * mcq.h, for the two item sizes sqbench's queue experiments use. */
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

template <class T> struct typed final : base {
    explicit typed(size_t capacity) : q(capacity) {}
    int try_push(const void *item) override
    {
        T t;
        std::memcpy(&t, item, sizeof t);
        return q.try_enqueue(t) ? 1 : 0;
    }
    int pop(void *item, long timeout_us) override
    {
        T t;
        if (!q.wait_dequeue_timed(t, timeout_us)) return 0;
        std::memcpy(item, &t, sizeof t);
        return 1;
    }
    moodycamel::BlockingConcurrentQueue<T> q;
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
