"""`KeyedLocks`, the one per-key lock of the stores and the service: one holder per key at a
time, keys independent, and a key's lock gone once nobody holds or awaits it."""

from __future__ import annotations

import asyncio

from archivist.rag.store.keyed_lock import KeyedLocks


async def test_one_holder_per_key_and_keys_are_independent() -> None:
    locks = KeyedLocks()
    inside: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}
    b_ran_while_a_held = asyncio.Event()

    async def work(key: str, pause: float) -> None:
        async with locks.hold(key):
            inside[key] += 1
            most[key] = max(most[key], inside[key])
            if key == "b" and inside["a"]:
                b_ran_while_a_held.set()
            await asyncio.sleep(pause)
            inside[key] -= 1

    await asyncio.gather(*(work("a", 0.02) for _ in range(5)), work("b", 0))
    assert most == {"a": 1, "b": 1}
    assert b_ran_while_a_held.is_set()


async def test_a_key_lock_lives_only_while_held_or_awaited() -> None:
    locks = KeyedLocks()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def holder() -> None:
        async with locks.hold(("docs", "d1")):
            entered.set()
            await release.wait()

    async def waiter() -> None:
        async with locks.hold(("docs", "d1")):
            pass

    first = asyncio.create_task(holder())
    await entered.wait()
    second = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    assert len(locks) == 1  # held by one, awaited by the other: one lock
    release.set()
    await asyncio.gather(first, second)
    assert len(locks) == 0
    for n in range(1000):  # many keys used once leave nothing behind
        async with locks.hold(n):
            pass
    assert len(locks) == 0
