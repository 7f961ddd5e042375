"""Running tool calls: parse, hooks, validate, execute (concurrently where safe), encode.

Where calls run:

* a sync tool runs on the registry's worker threads when its call has a deadline (the default:
  ``default_timeout`` is 60 s), from every thread, so the caller gets its result -- or a
  timeout error -- on time even when the tool blocks in C code or swallows its cancellation;
  ``inline-calls`` (opt-in) runs it inline on the main thread under the watchdog instead, and
  a call without any deadline runs on the caller's thread (nothing to wait for, no hand-off);
* an async tool runs on the caller's event loop for the async API, and on a private background
  loop for the sync API, so both APIs work from plain code and from inside a running loop;
* a tool marked ``is_concurrency_safe=False`` runs alone: a batch is cut into segments around
  it, and a per-tool lock keeps concurrent batches from overlapping it.

A sync tool that overruns its deadline gets a :class:`~toolregistry.errors.ToolCancelled`
raised inside its thread (it lands at the tool's next Python instruction, so a blocking C call
finishes first) and its ``ToolContext.cancel_event`` set; the caller does not wait for it. An
async tool is cancelled; one that ignores the cancellation is left to finish in the background.

Modules: ``_executor`` (the entry points and resources), ``_pipeline`` (before and after a tool
runs), ``_batch`` (a batch through it), ``_plan`` (what is kept per tool), ``_validation`` (coercion, error text), ``_sync`` and
``_async`` (scheduling for each API), ``_policies`` (retries, exclusive tools), ``_threads``
(the worker pool), ``_cpuslots`` (its CPU slots and the watch over running calls), ``_work``
(a pooled call and a worker), ``_loop`` (the private loop), ``_affinity`` (waking a worker on
its caller's CPU, opt-in), ``_processes`` (worker processes). Nothing here changes the
interpreter's or the process's state (switch interval, collector, affinity of the caller's
threads).
"""

from __future__ import annotations

from toolregistry.errors import ToolCancelled

from ._executor import Executor
from ._policies import RetryPolicy

__all__ = ["Executor", "RetryPolicy", "ToolCancelled"]
