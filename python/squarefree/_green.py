"""Greenlets: the blocking methods under a gevent or eventlet hub.

A blocking method (``lock.acquire()``, ``event.wait()``, a queue's
``get()``...) called in a greenlet that runs under a hub must not sleep in
the kernel: that would stop the whole hub, and with it the greenlet that
would release what it waits for.  Its C code (green.c) calls wait() here
once its try has failed; under a hub the wait is an op of the hub's own
_LoopDriver (the asyncio driver's sqf_loop, its descriptor watched by the
hub), and the greenlet switches to the hub until the op's callback
schedules it again.  Threads, asyncio tasks and greenlets so wait on one
object, in the same kernel queues, and a wake-all is one system call.

"Under a hub": a gevent or eventlet hub exists in this OS thread and the
caller is not the hub's own greenlet (the thread's main greenlet counts).
A real thread (gevent's threadpool workers, unpatched threads) has no hub
and blocks as a thread; code that runs in the hub itself does too.

Interruption (gevent.Timeout, Greenlet.kill, eventlet's Timeout and kill)
reaches the greenlet where it is switched out; the op is then abandoned
(aio.c's "Cancellation": cancelled, and dispatched until its callback has
run) before the exception goes on, so what reached the greenlet (a lock, a
permit, a queue item's slot) is given back and a barrier arrival is over.
A Condition's wait instead ends as asyncio's does: it takes its lock back,
letting the hub run meanwhile (the lock may be held by another greenlet of
the hub), and passes on a notify that reached it.
"""
import sys as _sys
import weakref as _weakref

from greenlet import getcurrent as _getcurrent

from . import _squarefree as _c

_LoopOp = _c._LoopOp
_AGAIN = _c._AGAIN
_COND = _c._KINDS["cond"]

# Per hub, its _Green (made on first use), where the hub lets us store it.
_hubs = _weakref.WeakKeyDictionary()

# After a fork the child has the forking thread alone, with that thread's
# hubs as they were, but their loops share the parent's epoll set and the
# drivers the parent's io_uring rings: neither may be used there.  So the
# child forgets every driver (keeping the objects, whose clean-up would
# unregister the parent's descriptors from the shared epoll set), and a
# hub it inherited counts as no hub (its greenlets block as threads) unless
# gevent re-initialises it: gevent's own fork does, where os is
# monkey-patched (gevent.reinit).  eventlet never does.
_stale = _weakref.WeakSet()
_inherited = []


def _after_fork_in_child():
    """The package's at-fork hook calls this in the child (see above)."""
    for hub in (_gevent_hub(), _eventlet_hub()):
        if hub is None:
            continue
        green = getattr(hub, "_squarefree_green", None) or _hubs.pop(hub, None)
        if green is not None:
            _inherited.append(green)
            try:
                del hub._squarefree_green
            except AttributeError:
                pass
        if not (hub is _gevent_hub() and _gevent_forks_reinit()):
            _stale.add(hub)
    for green in list(_hubs.values()):  # other threads' hubs: gone with them
        _inherited.append(green)
    _hubs.clear()


def _gevent_forks_reinit():
    monkey = _sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("os")



class _Future:
    """What the driver resolves: the C code calls set_result,
    set_exception and cancelled (aio.c); the parked greenlet reads it."""

    __slots__ = ("_green", "_glet", "_done", "_value", "_exc", "_parked")

    def __init__(self, green):
        self._green = green
        self._glet = None
        self._done = False
        self._value = None
        self._exc = None
        self._parked = False

    def set_result(self, value):
        self._value = value
        self._done = True
        self._wake()

    def set_exception(self, exc):
        self._exc = exc
        self._done = True
        self._wake()

    def cancelled(self):
        # A greenlet that gives up abandons its op before anything else
        # runs in its thread: the callback never sees a waiter gone.
        return False

    def _wake(self):
        # Called in a dispatch: the greenlet is resumed later, by the hub,
        # not inside the dispatch (it may abandon a wait, which dispatches).
        if self._parked:
            self._green.schedule(self._resume)

    def _resume(self):
        if self._parked:  # else interrupted meanwhile: it has left already
            self._parked = False
            self._glet.switch()

    def park(self):
        """Switch to the hub until the op's callback has run: its value
        (or its exception).  An exception thrown in meanwhile goes on."""
        if not self._done:
            self._glet = _getcurrent()
            self._parked = True
            self._green.enter()
            try:
                while not self._done:  # (a stray switch back: wait on)
                    self._green.hub_switch()
            finally:
                self._parked = False
                self._green.leave()
        if self._exc is not None:
            exc, self._exc = self._exc, None
            raise exc
        return self._value


class _Green:
    """One hub's driver, watched by the hub.  Its create_future makes the
    futures (Driver.start's 4th argument: duck-typed)."""

    def __init__(self, hub):
        self.driver = _c._LoopDriver()
        self.waiting = 0

    def create_future(self):
        return _Future(self)

    def enter(self):
        self.waiting += 1

    def leave(self):
        self.waiting -= 1


class _GeventGreen(_Green):
    def __init__(self, hub):
        super().__init__(hub)
        d = self.driver
        self.hub_switch = hub.switch
        self.schedule = hub.loop.run_callback
        self._watcher = hub.loop.io(d.fileno(), 1)  # 1: READ
        self._watcher.start(d.dispatch)
        # Watched only while greenlets wait: an idle driver must not keep
        # the hub's loop running (gevent.wait(), the hub's join()).
        self._watcher.ref = False

    def enter(self):
        if self.waiting == 0:
            self._watcher.ref = True
        self.waiting += 1

    def leave(self):
        self.waiting -= 1
        if self.waiting == 0:
            self._watcher.ref = False


class _EventletGreen(_Green):
    def __init__(self, hub):
        super().__init__(hub)
        d = self.driver
        self.hub_switch = hub.switch

        def schedule(fn):
            hub.schedule_call_global(0, fn)

        def dispatch(_fd):
            d.dispatch()

        def closed(*_args):
            pass

        self.schedule = schedule
        self._listener = hub.add(hub.READ, d.fileno(), dispatch, closed, closed)


_get_hub_if_exists = None  # gevent's, once gevent is imported
_eventlet_local = None  # eventlet's per-thread hub holder, once eventlet is imported


def _gevent_hub():
    """This thread's gevent hub, if it has one (never making one)."""
    global _get_hub_if_exists
    if _get_hub_if_exists is None:
        if "gevent" not in _sys.modules:
            return None
        from gevent._hub_local import get_hub_if_exists as _get_hub_if_exists
    return _get_hub_if_exists()


def _eventlet_hub():
    """This thread's eventlet hub, if it has one (never making one)."""
    global _eventlet_local
    if _eventlet_local is None:
        if "eventlet" not in _sys.modules:
            return None
        from eventlet.hubs import _threadlocal as _eventlet_local
    return getattr(_eventlet_local, "hub", None)


def _hub():
    """The _Green of the hub the current greenlet runs under, or None (a
    real thread, the hub itself).  With both libraries' hubs in one thread,
    the one the greenlet descends from; the main greenlet then takes
    gevent's."""
    cur = _getcurrent()
    found = []
    gh = _gevent_hub()
    if gh is not None and gh in _stale:
        gh = None
    if gh is not None:
        if cur is gh:
            return None
        found.append((gh, gh, _GeventGreen))
    eh = _eventlet_hub()
    if eh is not None and eh in _stale:
        eh = None
    if eh is not None:
        if cur is eh.greenlet:
            return None
        found.append((eh, eh.greenlet, _EventletGreen))
    if not found:
        return None
    hub, _, kind = found[0]
    if len(found) > 1:
        g = cur.parent
        while g is not None:
            match = [f for f in found if f[1] is g]
            if match:
                hub, _, kind = match[0]
                break
            g = g.parent
    return _green_of(hub, kind)


def _green_of(hub, kind):
    green = getattr(hub, "_squarefree_green", None)
    if green is None:
        green = _hubs.get(hub)
        if green is None:
            green = kind(hub)
            try:
                hub._squarefree_green = green
            except AttributeError:
                _hubs[hub] = green
    return green


def current():
    """The current greenlet if it runs under a hub and is not its thread's
    main greenlet, else None: an RLock's owner, a limiter's borrower."""
    cur = _getcurrent()
    if cur.parent is None:
        return None
    return cur if _hub() is not None else None


def driver():
    """The _LoopDriver of the hub the current greenlet runs under, or None
    (Barrier.reset dispatches it while its waiters leave)."""
    green = _hub()
    return None if green is None else green.driver


def wait(kind, target, timeout):
    """A blocking method's wait in a greenlet (green.c's green_wait): its
    value, or NotImplemented if the caller runs under no hub."""
    green = _hub()
    if green is None:
        return NotImplemented
    d = green.driver
    if kind == _COND:
        return _cond_wait(green, d, target, timeout)
    while True:
        r = d.start(kind, target, timeout, green)
        if r.__class__ is _LoopOp:
            op = r
            try:
                r = op.future.park()
            except BaseException:  # Timeout, GreenletExit: give back what came
                op.abandon()
                op = r = None  # the traceback keeps this frame: not the op, too
                raise
        if r is not _AGAIN:  # (a barrier's reset ended: arrive again)
            return r


def _cond_wait(green, d, cond, timeout):
    """A Condition's wait: the op releases the lock, waits, and takes the
    lock back, whatever ends it.  Interrupted, the greenlet still waits for
    the lock (the hub runs meanwhile: another of its greenlets may hold
    it), passes on a notify that reached it, and then raises."""
    op = d.start(_COND, cond, timeout, green)
    if op.__class__ is not _LoopOp:
        return op
    try:
        return op.future.park()
    except BaseException:
        while op.pending:
            future = op.rearm(green)
            try:
                future.park()
            except BaseException:  # interrupted again: the lock is still to come
                pass
        if op.result == 0:
            cond._pass_on()
        op = None  # the traceback keeps this frame: not the op, too
        raise
