"""The private event loop: :class:`LoopThread`, an asyncio loop on a daemon thread, where the
sync API runs async tools. It runs coroutines and knows nothing of tools."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from typing import Any

__all__ = ["LoopThread"]


class LoopThread:
    """A private event loop on a daemon thread, for async tools called from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ident = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,),
                                        name="toolregistry-loop", daemon=True)
        self._thread.start()
        ready.wait(5)

    def _main(self, ready: threading.Event) -> None:
        self.ident = threading.get_ident()
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def submit(self, coro: Any) -> cf.Future[Any]:
        """Run ``coro`` on the loop; its outcome lands in the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Cancel what still runs on the loop (waiting at most 2 s), stop it and close it."""
        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=2) if tasks else None

        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()
