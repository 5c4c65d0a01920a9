"""A native handle that several threads may be using while one closes it
(the engine's calls in flight, a request's wait/cancel)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from .errors import EngineClosedError

__all__ = ["HandleLifetime"]


class HandleLifetime:
    """A native handle that several threads may be using while someone closes it.

    ``acquire()``/``release()`` (or ``with use() as handle``) bracket every
    use of the handle; ``close()`` marks it closed and runs ``free`` at once
    when nobody uses it, otherwise when the last user releases it. No
    use-after-free, no waiting in close.
    """

    def __init__(self, handle: Any, free: Callable[[], None], what: str):
        self._handle = handle
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        self._freed = False
        self._free = free
        self._what = what

    @property
    def closed(self) -> bool:
        return self._closed

    def acquire(self) -> None:
        with self._lock:
            if self._closed:
                raise EngineClosedError("%s is closed" % self._what)
            self._users += 1

    @contextlib.contextmanager
    def use(self) -> Iterator[Any]:
        """The handle, kept from being freed while the block runs."""
        self.acquire()
        try:
            yield self._handle
        finally:
            self.release()

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            run = self._closed and self._users == 0 and not self._freed
            if run:
                self._freed = True
        if run:
            self._free()

    def close(self) -> bool:
        """Mark closed; free now if unused. Returns False if already closed."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            run = self._users == 0 and not self._freed
            if run:
                self._freed = True
        if run:
            self._free()
        return True
