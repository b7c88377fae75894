import asyncio
from typing import Any

from telephony.bridge.tasks import OwnedTasks


async def test_a_crash_is_reported_and_a_cancellation_is_not() -> None:
    crashes: list[tuple[str, BaseException]] = []
    tasks = OwnedTasks(lambda task, error: crashes.append((task.get_name(), error)))

    async def crash() -> None:
        raise ValueError("boom")

    async def wait_forever() -> None:
        await asyncio.Event().wait()

    tasks.spawn(crash(), "crasher")
    tasks.spawn(wait_forever(), "waiter")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [(name, str(error)) for name, error in crashes] == [("crasher", "boom")]
    assert len(tasks) == 1  # finished tasks are forgotten
    await tasks.cancel_all()
    assert len(tasks) == 0 and len(crashes) == 1


async def test_spawn_returns_the_task_with_its_result() -> None:
    tasks = OwnedTasks(lambda task, error: None)

    async def answer() -> Any:
        return 42

    assert await tasks.spawn(answer(), "answer") == 42
