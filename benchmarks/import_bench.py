"""Import benchmark (issue 2): ``python -c "import toolregistry"`` and building the plugin host.

    python benchmarks/import_bench.py            # 20 interleaved rounds
    python benchmarks/import_bench.py --quick    # 3 rounds: a smoke run

Every sample is the wall time of one fresh ``python -c ...`` process, measured by this parent
process (like ``time python -c ...``), after one discarded warm-up run of each command (bytecode
caches written). Commands run round-robin, so the noise of a small machine falls on all of them.

Environments:

* ours: ``--ours-python`` (default: this interpreter), normally the kernel alone;
* 0.19: PyPI toolregistry 0.19.0 in ``.bench-venvs/toolregistry-0.19.0`` (created when missing);
* plugins: ``.bench-venvs/ours-plugins``, the kernel and every first-party plugin that has a
  ``pyproject.toml`` under ``plugins/``, installed editable (rebuilt when one changes). Loading the
  plugins is measured as building the plugin host,
  ``from toolregistry._plugins import get_host; get_host()``, minus ``import toolregistry`` in
  that same environment (median of the per-round differences); and, to separate the kernel's
  own host machinery (pluggy, importlib.metadata, structlog) from the plugins, minus the same
  ``get_host()`` in the ours environment where no plugin is installed.

Cold start (issue 37 item 4): the CPU time (user + system, as the parent sees it) of
``python -c "import toolregistry; toolregistry.ToolRegistry()"`` in the plugins environment
(every plugin installed) against 0.19's, and with ``load_plugins=[]``.

``toolregistry schemas`` (issue 37): the CLI on ``examples/pyproject.toml`` (Python functions,
an MCP server over stdio, an OpenAPI spec, discovery and spool on) in the plugins environment,
run in-process by a small driver; the CPU time of that process alone (``RUSAGE_SELF`` at its
end: not the MCP server it starts). Twice: with a cold tools/list cache (a fresh cache folder
per run: the server is started and listed, the ``mcp`` SDK imported) and with a warm one (one
cache folder, filled by the warm-up run: the example's MCP source is registered from it).
``--schemas-only`` runs just these two rows (no 0.19 environment needed).

Targets: ours <= 1/3 of 0.19's wall time; the plugins add <= 30 ms; ``ToolRegistry()`` with
every plugin installed <= 0.5x 0.19's CPU; ``toolregistry schemas`` on the example
configuration <= 0.5 s of CPU.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

IMPORT = "import toolregistry"
REGISTRY = "import toolregistry; toolregistry.ToolRegistry()"
KERNEL_REGISTRY = "import toolregistry; toolregistry.ToolRegistry(load_plugins=[])"
HOST = "from toolregistry._plugins import get_host; get_host()"
# Where the time of building the host goes: the kernel's part, then each plugin's module (and
# its ``loaders()`` hook, which the host calls once), in the host's order.
BREAKDOWN = """
import importlib.metadata as md, json, time
t0 = time.perf_counter()
import toolregistry
t1 = time.perf_counter()
import toolregistry._plugins as P
t2 = time.perf_counter()
out = {"import toolregistry": t1 - t0, "kernel: import toolregistry._plugins": t2 - t1}
for ep in sorted(md.entry_points(group=P.ENTRY_POINT_GROUP), key=lambda e: e.name):
    t = time.perf_counter()
    try:
        mod = ep.load()
        if hasattr(mod, "loaders"):
            mod.loaders()
    except Exception:
        pass
    out["plugin " + ep.name + ": import + loaders()"] = time.perf_counter() - t
t = time.perf_counter()
P.get_host()
out["kernel: get_host() once plugins are imported"] = time.perf_counter() - t
print(json.dumps(out))
"""
# ``toolregistry --config examples/pyproject.toml schemas``, in-process: the CPU time of this
# process only (the MCP server it starts is a child, not counted).
SCHEMAS = """
import os, resource, sys
from toolregistry.cli import main
sys.argv = ["toolregistry", "--config", sys.argv[1], "schemas"]
real, sys.stdout = sys.stdout, open(os.devnull, "w")
try:
    code = main()
except SystemExit as exc:
    code = exc.code
sys.stdout = real
if code:
    raise SystemExit(f"toolregistry schemas exited with {code}")
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""
EXAMPLE_CONFIG = c.REPO / "examples" / "pyproject.toml"
REPORT = (
    "import json; from toolregistry._plugins import get_host; h = get_host(); "
    "print(json.dumps([r.to_dict() for r in h.records.values()]))"
)


def plugin_dirs() -> list[Path]:
    return sorted(p for p in (c.REPO / "plugins").iterdir() if (p / "pyproject.toml").exists())


def plugins_python(args: Any) -> tuple[str, list[str]]:
    """The plugins environment; installs what builds and reports what did not."""
    dirs = plugin_dirs()
    skipped: list[str] = []
    try:
        python = c.ensure_venv("ours-plugins", [], [c.REPO / "core", *dirs],
                               base_python=args.ours_python)
    except Exception as exc:  # one broken plugin must not hide the others
        c.log(f"installing all plugins together failed ({exc}); trying one at a time")
        good: list[Path] = []
        for d in dirs:
            try:
                c.ensure_venv("ours-plugins-probe", [], [c.REPO / "core", d],
                              base_python=args.ours_python)
                good.append(d)
            except Exception:
                skipped.append(d.name)
        python = c.ensure_venv("ours-plugins", [], [c.REPO / "core", *good],
                               base_python=args.ours_python)
    return str(python), skipped


def _clean_env() -> dict[str, str]:
    """No TOOLREGISTRY_* variables (no configuration of the caller's decides which plugins
    load), and bytecode written by the warm-up (as an installer compiles it): without it every
    run compiles the sources again, and the side with more modules looks slower than it is."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("TOOLREGISTRY_") and k != "PYTHONDONTWRITEBYTECODE"}


def schemas_rows(plugins_py: str, env: dict[str, str], cwd: str, repeats: int) -> list[c.Row]:
    """``toolregistry schemas`` on the example, CPU of its process: with a cold tools/list
    cache (a fresh cache folder per run) and with a warm one (one folder, filled by the
    warm-up run)."""
    # the example's variables: its folder, and an API URL that schemas never calls
    demo_env = {**env, "DEMO_DIR": str(EXAMPLE_CONFIG.parent),
                "DEMO_API_URL": "http://127.0.0.1:9"}
    cmd = [plugins_py, "-c", SCHEMAS, str(EXAMPLE_CONFIG)]
    warm_home = tempfile.mkdtemp(prefix="tr-list-cache-")

    def run(home: str) -> float:
        _, out = c.wall(cmd, env={**demo_env, "XDG_CACHE_HOME": home}, cwd=cwd)
        return float(out.strip().splitlines()[-1])

    run(warm_home)  # warm-up: bytecode, page cache, and the warm rows' cache entry
    samples: dict[str, list[float]] = {"cold": [], "warm": []}
    for _ in range(max(1, repeats // 2)):
        samples["cold"].append(run(tempfile.mkdtemp(prefix="tr-list-cache-")))
        samples["warm"].append(run(warm_home))
    return [
        c.Row("toolregistry schemas, example config, cold list cache (CPU, own process)",
              {"ours": samples["cold"]}),
        c.Row("toolregistry schemas, example config, warm list cache (CPU, own process)",
              {"ours": samples["warm"]}, target="<= 0.5 s",
              check=lambda m: m["ours"] <= 0.5),
    ]


def main(argv: list[str]) -> int:
    parser = c.base_parser(__doc__.split("\n")[0])
    parser.add_argument("--no-plugins", action="store_true",
                        help="skip the plugins environment")
    parser.add_argument("--schemas-only", action="store_true",
                        help="only the `toolregistry schemas` rows (cold and warm list cache)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 20)
    if args.schemas_only:
        only_py, _ = plugins_python(args)
        rows = schemas_rows(only_py, _clean_env(), tempfile.mkdtemp(prefix="tr-import-bench-"),
                            repeats)
        print(f"\n{c.machine_line()}; medians of {max(1, repeats // 2)} fresh processes")
        print(f"  ours source: {c.source_state()}")
        c.print_table("import_bench: toolregistry schemas", rows, ["ours"])
        c.dump_json(args.json, {"bench": "import-schemas"}, rows)
        return 0

    ours_version = c.check_ours(args.ours_python)
    old = c.old_python(args)
    commands: dict[str, list[str]] = {
        "python -c pass": [args.ours_python, "-c", "pass"],
        "ours: import": [args.ours_python, "-c", IMPORT],
        "0.19: import": [old, "-c", IMPORT],
        "ours: get_host()": [args.ours_python, "-c", HOST],
    }
    skipped: list[str] = []
    plugins_py: str | None = None
    if not args.no_plugins:
        plugins_py, skipped = plugins_python(args)
        commands["plugins env: import"] = [plugins_py, "-c", IMPORT]
        commands["plugins env: get_host()"] = [plugins_py, "-c", HOST]
        commands["plugins env: ToolRegistry()"] = [plugins_py, "-c", REGISTRY]
        commands["plugins env: ToolRegistry(load_plugins=[])"] = [plugins_py, "-c",
                                                                  KERNEL_REGISTRY]
    commands["0.19: ToolRegistry()"] = [old, "-c", REGISTRY]
    cpu_keys = [k for k in commands if "ToolRegistry(" in k]

    # A neutral working directory and no TOOLREGISTRY_* variables: no pyproject.toml of this
    # repository (or the caller's) decides which plugins load.
    # Bytecode written by the warm-up (as an installer compiles it): without it every run
    # compiles the sources again, and the side with more modules looks slower than it is.
    env = _clean_env()
    cwd = tempfile.mkdtemp(prefix="tr-import-bench-")
    samples: dict[str, list[float]] = {k: [] for k in commands}

    def timed(key: str) -> float:
        if key in cpu_keys:  # the cold-start rows compare CPU time
            return float(c.cpu(commands[key], env=env, cwd=cwd))
        seconds, _ = c.wall(commands[key], env=env, cwd=cwd)
        return float(seconds)

    for key in commands:  # warm-up: bytecode caches, page cache
        timed(key)
    c.log(f"{repeats} rounds of {len(commands)} commands")
    c.interleave(list(commands), repeats, lambda key, r: samples[key].append(timed(key)))

    schemas = schemas_rows(plugins_py, env, cwd, repeats) if plugins_py is not None else []

    records: list[dict[str, Any]] = []
    if plugins_py is not None:
        _, out = c.wall([plugins_py, "-c", REPORT], env=env, cwd=cwd)
        records = json.loads(out.strip().splitlines()[-1])
    breakdown: dict[str, list[float]] = {}
    if plugins_py is not None:
        for _ in range(max(1, repeats // 4)):
            _, out = c.wall([plugins_py, "-c", BREAKDOWN], env=env, cwd=cwd)
            for k, v in json.loads(out.strip().splitlines()[-1]).items():
                breakdown.setdefault(k, []).append(float(v))
    core_records = json.loads(
        c.wall([args.ours_python, "-c", REPORT], env=env, cwd=cwd)[1].strip().splitlines()[-1])

    old_version = c.distribution_versions(old, ["toolregistry"])["toolregistry"]
    rows = [
        c.Row("python -c pass (interpreter start)",
              {"ours": samples["python -c pass"]}),
        c.Row('python -c "import toolregistry"',
              {"ours": samples["ours: import"], "0.19": samples["0.19: import"]},
              target="<= 1/3 (<= 0.33)", check=lambda m: m["ours"] <= m["0.19"] / 3),
        c.Row("import + get_host(), no plugin installed", {"ours": samples["ours: get_host()"]}),
    ]
    if plugins_py is not None:
        diffs = [h - i for h, i in zip(samples["plugins env: get_host()"],
                                       samples["plugins env: import"])]
        plugin_share = [h - k for h, k in zip(samples["plugins env: get_host()"],
                                              samples["ours: get_host()"])]
        rows += [
            c.Row("plugins env: import toolregistry", {"ours": samples["plugins env: import"]}),
            c.Row("plugins env: import + get_host()",
                  {"ours": samples["plugins env: get_host()"]}),
            c.Row("get_host() adds to import (kernel host + plugins)", {"ours": diffs},
                  target="<= 30 ms", check=lambda m: m["ours"] <= 0.030),
            c.Row("the plugins add (vs get_host() with none)", {"ours": plugin_share},
                  target="<= 30 ms", check=lambda m: m["ours"] <= 0.030),
            c.Row("ToolRegistry(), every plugin installed (CPU)",
                  {"ours": samples["plugins env: ToolRegistry()"],
                   "0.19": samples["0.19: ToolRegistry()"]},
                  target="<= 0.5x", check=lambda m: m["ours"] <= 0.5 * m["0.19"]),
            c.Row("ToolRegistry(load_plugins=[]) there (CPU)",
                  {"ours": samples["plugins env: ToolRegistry(load_plugins=[])"]}),
            *schemas,
        ]
    print(f"\n{c.machine_line()}; medians of {repeats} interleaved fresh processes per command "
          f"(wall time, cwd {cwd})")
    print(f"  ours: toolregistry {ours_version}  [{args.ours_python}]; plugins found there: "
          f"{[r['name'] for r in core_records] or 'none'}")
    print(f"  ours source: {c.source_state()}")
    print(f"  0.19: toolregistry {old_version}  [{old}]")
    if plugins_py is not None:
        print(f"  plugins env: [{plugins_py}]")
        for r in records:
            err = f" error: {r['error']}" if r.get("error") else ""
            print(f"    {r['name']:<10} {r['distribution']} {r['version']}: {r['status']}, "
                  f"hooks {r['hooks']}{err}")
        missing = sorted({"think", "discovery", "mcp", "openapi", "langchain", "spool"}
                         - {r["name"] for r in records})
        if missing or skipped:
            print(f"    not installed (no pyproject.toml yet or failed to build): "
                  f"{', '.join(sorted(set(missing) | set(skipped)))}")
    c.print_table("import_bench: start-up cost", rows, ["ours", "0.19"])
    if breakdown:
        parts = [c.Row(k, {"ours": v}) for k, v in breakdown.items()]
        c.print_table(f"where get_host() time goes in the plugins env (in-process, median of "
                      f"{len(next(iter(breakdown.values())))} fresh processes)", parts, ["ours"])
    c.dump_json(args.json, {"bench": "import", "raw": samples, "plugins": records,
                            "breakdown": breakdown}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
