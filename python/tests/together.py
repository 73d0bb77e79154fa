"""Test helpers: threads and one event loop's tasks running together, and
a count of who holds something at once."""
import asyncio
import threading


def run_together(thread_main, thread_args, loop_main, loop_args, timeout=60):
    """thread_main(*a) in a thread for each a of thread_args, and
    asyncio.run(loop_main(*a)) in a thread of its own for each a of
    loop_args, all at once; wait for all of them (an exception in a loop
    is raised here)."""
    failed = []

    def run_loop(*a):
        try:
            asyncio.run(loop_main(*a))
        except BaseException as e:  # raised below, in the test's thread
            failed.append(e)

    ts = [threading.Thread(target=thread_main, args=a) for a in thread_args]
    ts += [threading.Thread(target=run_loop, args=a) for a in loop_args]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
        assert not t.is_alive(), "a thread or a loop is still waiting (a lost wake-up?)"
    if failed:
        raise failed[0]


class Holders:
    """How many hold a token or a permit now (held), the most at once
    (most), and how many uses ended (served); for threads and tasks."""

    def __init__(self):
        self.held = self.most = self.served = 0
        self._guard = threading.Lock()

    def take(self):
        with self._guard:
            self.held += 1
            self.most = max(self.most, self.held)

    def give(self):
        with self._guard:
            self.held -= 1
            self.served += 1

    async def hold_a_while(self, rnd):
        """As a task: count itself in for a random moment (none, mostly),
        in which a cancellation may land."""
        self.take()
        try:
            await asyncio.sleep(rnd.choice([0, 0, 0.0002]))
        finally:
            self.give()
