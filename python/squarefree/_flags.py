"""Flag (aiologic's): a one-slot marker that the first setter wins."""

_MISSING = object()


class Flag:
    """Flag(marker=<unset>)

    A flag that holds the marker of whoever set it first, until cleared;
    never blocks.  Every method is one atomic step (one dict operation on a
    single key), for any number of threads and tasks.
    """

    __module__ = "squarefree"

    __slots__ = ("_slot", "__weakref__")

    def __init__(self, marker=_MISSING):
        self._slot = {} if marker is _MISSING else {None: marker}

    def get(self, default=_MISSING, *, default_factory=_MISSING):
        """The marker if the flag is set; else default, else
        default_factory(), else raise LookupError."""
        try:
            return self._slot[None]
        except KeyError:
            pass
        if default is not _MISSING:
            return default
        if default_factory is not _MISSING:
            return default_factory()
        raise LookupError(self)

    def set(self, marker=_MISSING):
        """Set the flag to marker (a new object() if none is given) unless
        it is set already: True if the flag now holds this marker (this
        call set it, or it held this very object), else False."""
        if marker is _MISSING:
            marker = object()
        return self._slot.setdefault(None, marker) is marker

    def clear(self):
        """Unset the flag."""
        self._slot.clear()

    def __bool__(self):
        return bool(self._slot)

    def __repr__(self):
        marker = self._slot.get(None, _MISSING)
        inner = "" if marker is _MISSING else repr(marker)
        return f"{type(self).__module__}.{type(self).__qualname__}({inner})"
