"""`BoundedCache`: a dict that forgets its oldest entry once it holds more than `size`.

The library and the app keep derived objects (recipes, bin masses, built models) per configuration; on a
shared server the configurations are the users' to choose, so every such cache is bounded, and the server's
threads share them, so each change happens under a lock.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_MISSING = object()


class BoundedCache:
    """Oldest-in, first-out: what a class opens again (one link) stays, a burst of one-off keys passes through."""

    def __init__(self, size: int):
        self.size = int(size)
        self._items: dict = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._items.get(key, default)

    def put(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                del self._items[next(iter(self._items))]
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value under `key`, made and kept first when there is none (two threads may both make it)."""
        value = self._items.get(key, _MISSING)
        return self.put(key, make()) if value is _MISSING else value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
