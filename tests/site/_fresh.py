"""The fresh clone of ``test_fresh_clone.py`` and what runs in it, started in the background
when the ``tests/site`` session begins (``conftest.py``): the README's first command (a full
pip install, most of a minute), then docs/getting-started.md's install and page in the
environment it made. They wait for nothing else, so the session's other tests run meanwhile.
The commands, the clone and what the tests check of them are the same as when the tests ran
them themselves, in the same order and with the same time limits; each test waits for its
commands to end."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from tests.docs._blocks import REPO, parse, readme_commands

README_TIMEOUT = 1500  # seconds: the README's first command (a full pip install)
INSTALL_TIMEOUT = 1500  # the getting-started page's install
PAGE_TIMEOUT = 900  # the page's blocks
HARNESS = "pytest>=8 pytest-timeout>=2.3"  # the harness itself, not something a reader needs


def getting_started_install() -> str:
    """What docs/getting-started.md tells a reader with a clone to pip install besides the
    clone's requirements file (the last line of its install block that names the file)."""
    page = parse(REPO / "docs" / "getting-started.md")
    adds = [b for b in page if b.lang == "sh" and "pip install -r" in b.code]
    assert adds, "getting-started.md no longer says how to install from a clone"
    extra = re.findall(r"^pip install (.+)$", adds[0].code, re.M)
    assert extra, adds[0].code
    return str(extra[-1])


def make_clone(root: Path) -> Path:
    """A copy of the files git knows (tracked, or new and not ignored) as they are in this
    checkout: no `.nox`, `.venv` or build output of ours leaks in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a file deleted in this checkout is not in a clone of it either
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


Outcome = subprocess.CompletedProcess[str]


class FreshClone:
    """The clone under ``root`` and its commands, run one after the other on a thread."""

    def __init__(self, root: Path) -> None:
        self.root = make_clone(root)
        self.python = self.root / ".venv" / "bin" / "python"
        self._logs = root.parent
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self._steps = 0
        self._readme: Outcome | BaseException | None = None
        self._page: tuple[Outcome, Outcome | None] | BaseException | None = None
        self._readme_done = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._main, name="fresh-clone", daemon=True)
        self._thread.start()

    # -- what the tests read ----------------------------------------------------------------
    def readme(self) -> Outcome:
        """The README's first command, run in the clone (``TimeoutExpired`` past its limit,
        as ``subprocess.run`` raises)."""
        self._readme_done.wait()
        if isinstance(self._readme, BaseException):
            raise self._readme
        assert self._readme is not None
        return self._readme

    def getting_started(self) -> tuple[Outcome, Outcome | None]:
        """The page's install (``pip install -q <what the page adds> <harness>``) and, when
        it succeeded, the page's blocks run by the harness in the clone's environment."""
        self._done.wait()
        if isinstance(self._page, BaseException):
            raise self._page
        assert self._page is not None
        return self._page

    def stop(self) -> None:
        """End whatever still runs (the session ended early) and start nothing more."""
        with self._lock:
            self._stopped = True
            proc = self._proc
        if proc is not None:
            _kill(proc)
        self._thread.join(30)

    # -- the thread -------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            try:
                self._readme = self._run(["bash", "-c", readme_commands()[0]], README_TIMEOUT)
            except BaseException as exc:
                self._readme = exc
            finally:
                self._readme_done.set()
            if not self.python.exists():
                self._page = AssertionError("the README's first command did not make .venv")
                return
            try:
                extra = getting_started_install()
                install = self._run(["bash", "-c", f"{self.python} -m pip install -q {extra} "
                                     f"{HARNESS}"], INSTALL_TIMEOUT)
                blocks = None
                if install.returncode == 0:
                    blocks = self._run([str(self.python), "-m", "pytest", "-q", "-p",
                                        "no:cacheprovider", "tests/docs/test_blocks.py", "-k",
                                        "getting"], PAGE_TIMEOUT)
                self._page = (install, blocks)
            except BaseException as exc:
                self._page = exc
        finally:
            self._readme_done.set()
            self._done.set()

    def _run(self, args: list[str], timeout: float) -> Outcome:
        """``subprocess.run(args, cwd=clone, capture_output=True, text=True, timeout=...)``,
        killable by :meth:`stop` (its own process group; output through files)."""
        with self._lock:
            self._steps += 1
            out_path = self._logs / f"step{self._steps}.stdout"
            err_path = self._logs / f"step{self._steps}.stderr"
            if self._stopped:
                raise RuntimeError("stopped: the session ended before this command ran")
            with out_path.open("wb") as out, err_path.open("wb") as err:
                proc = self._proc = subprocess.Popen(args, cwd=self.root, stdout=out, stderr=err,
                                                     start_new_session=True)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise
        finally:
            with self._lock:
                self._proc = None
        return subprocess.CompletedProcess(
            args, proc.returncode, out_path.read_text(encoding="utf-8", errors="replace"),
            err_path.read_text(encoding="utf-8", errors="replace"))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """``proc`` and everything it started (its process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
