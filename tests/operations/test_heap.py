"""The serving process's collector settings (``telephony.operations.heap``)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from telephony.operations.heap import YOUNG_THRESHOLD, settle_heap


class _Node:
    me: Any = None


def test_settling_freezes_what_exists_and_collects_the_young_less_often() -> None:
    before = gc.get_threshold()
    try:
        survivor = [object() for _ in range(100)]  # lives on, like the modules and services of a server
        settle_heap()
        assert gc.get_freeze_count() > len(survivor)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        node = _Node()
        node.me = node  # a reference cycle made after settling: still the collector's to free
        gone = weakref.ref(node)
        del node
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
