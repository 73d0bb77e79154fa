"""ResourceGuard and BusyResourceError (aiologic's): detect a resource used
by two at once."""


class BusyResourceError(RuntimeError):
    """Another thread or task is already using the resource that a
    ResourceGuard guards."""

    __module__ = "squarefree"


class ResourceGuard:
    """ResourceGuard(*, action="using")

    ``with guard:`` around a resource's use raises BusyResourceError
    instead of waiting when another thread or task is inside already;
    never blocks.  Entering is one atomic step (deleting a slot), leaving
    another (setting it), for any number of threads and tasks.
    """

    __module__ = "squarefree"

    __slots__ = ("_action", "_free", "__weakref__")

    def __init__(self, *, action="using"):
        self._action = action
        self._free = True

    @property
    def action(self):
        """The action named in BusyResourceError's message."""
        return self._action

    def __enter__(self):
        try:
            del self._free
        except AttributeError:
            raise BusyResourceError(
                f"another task is already {self._action} this resource") from None
        return self

    def __exit__(self, exc_type, exc, tb):
        self._free = True

    def __bool__(self):
        """True while the resource is in use."""
        return not hasattr(self, "_free")

    def __repr__(self):
        state = "locked" if self else "unlocked"
        return (f"<{type(self).__module__}.{type(self).__qualname__}({self._action!r}) "
                f"at {id(self):#x} [{state}]>")
