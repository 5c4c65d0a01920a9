"""The process's native thread count (/proc/self/task) sampled while many
coroutines run on one asyncio loop: the tests that show async requests cost
no thread each."""

import asyncio
import os
import pathlib
from typing import Any, Awaitable, List, Tuple

TASKS = pathlib.Path("/proc/self/task")


def thread_count() -> int:
    return len(os.listdir(TASKS))


def gather_with_thread_peak(coroutines: List[Awaitable[Any]]) -> Tuple[List[Any], int]:
    """Runs the coroutines concurrently on a new event loop; their results
    and the most threads the process had while they ran (sampled every 5 ms)."""
    peak = [thread_count()]

    async def sample(stop: asyncio.Event) -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], thread_count())
            await asyncio.sleep(0.005)

    async def main() -> List[Any]:
        stop = asyncio.Event()
        sampler = asyncio.ensure_future(sample(stop))
        try:
            return await asyncio.gather(*coroutines)
        finally:
            stop.set()
            await sampler

    results = asyncio.run(main())
    return results, peak[0]
