"""The spool directory of one registry: private files, random handles, retention.

Safety rules, and why:

* One directory per registry, made by :func:`tempfile.mkdtemp` (mode 0700, a random name that
  cannot be predicted or pre-created by another user).
* A file's name is its handle, ``sp_`` + 16 random hex digits: never derived from a tool name,
  so tool names with ``/``, ``..`` or any Unicode cannot steer where a file goes.
* Files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600: an existing file or
  a planted symlink makes the open fail instead of being followed or overwritten.
* A handle must match a strict pattern and is looked up only as ``<folder>/<handle>.txt`` in
  this store's folder or in a sibling spool folder of the same base directory (another
  process or worker configured with the same ``directory``, or an earlier run with ``keep``):
  the folder must be one of the plugin's own by name, a real directory owned by this user,
  the resolved path must stay inside it, and the file opened must be the very file that was
  written (same device and inode for this store's own outputs; for a sibling's, a regular
  file of this user with one link, not older than ``max_age``): no traversal, no other file.
"""

from __future__ import annotations

import mmap
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import frozen

from toolregistry.errors import ToolRegistryError
from toolregistry.plugin import log

if TYPE_CHECKING:
    from ._shared import Row, SharedIndex

HANDLE_PATTERN = r"^sp_[0-9a-f]{16}$"
_HANDLE_RE = re.compile(r"sp_[0-9a-f]{16}")
_DIR_PREFIX = "spool-"
# mkdtemp's random part is made of these; a sweep only ever touches names of that shape.
_DIR_RE = re.compile(r"spool-[a-z0-9_]{6,}")
_KEEP_MARKER = ".keep"
_SUFFIX = ".txt"
_OPEN_WRITE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_OPEN_READ = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
              | getattr(os, "O_BINARY", 0))


class SpoolError(ToolRegistryError):
    """A handle cannot be read (malformed, unknown, expired, or the store is closed)."""


@frozen
class Entry:
    """One spooled output: ``owned`` when this process wrote it (not a copy of another
    host's), ``indexed`` when its path comes from the store's index."""

    handle: str
    path: Path
    size: int
    created: float
    device: int
    inode: int
    owned: bool = True
    indexed: bool = False


def default_base() -> Path:
    """``$XDG_CACHE_HOME/toolregistry/spool`` (``~/.cache`` when unset; the platform's cache
    folder on macOS and Windows)."""
    if sys.platform == "win32":
        root = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        root = str(Path.home() / "Library" / "Caches")
    else:
        root = os.environ.get("XDG_CACHE_HOME") or ""
        if not os.path.isabs(root):  # the XDG spec says relative values are to be ignored
            root = str(Path.home() / ".cache")
    return Path(root) / "toolregistry" / "spool"


def is_handle(value: object) -> bool:
    """True when ``value`` looks like a spool handle (``sp_`` + 16 hex digits)."""
    return isinstance(value, str) and _HANDLE_RE.fullmatch(value) is not None


class SpoolStore:
    """The files of one registry (thread-safe)."""

    def __init__(self, base: str | os.PathLike[str] | None, *, keep: bool, max_age: float,
                 max_total: int) -> None:
        self._base = Path(base).expanduser() if base is not None else default_base()
        self.keep = keep
        self.max_age = max_age
        self.max_total = max_total
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._total = 0
        self._closed = False
        self._open_shared: Callable[[], SharedIndex] | None = None
        self._shared: SharedIndex | None = None

    def share(self, opener: Callable[[], SharedIndex]) -> None:
        """Keep the handle index on a store, opened by ``opener`` on first use."""
        self._open_shared = opener

    def _index(self) -> SharedIndex | None:
        if self._open_shared is None:
            return None
        if self._shared is None:
            with self._lock:
                if self._shared is None:
                    self._shared = self._open_shared()
        return self._shared

    # -- directory ------------------------------------------------------------------------
    @property
    def directory(self) -> Path | None:
        """The directory, once the first output was spooled (``None`` before)."""
        return self._dir

    def _ensure_dir(self) -> Path:
        if self._dir is not None:
            return self._dir
        with self._lock:
            if self._dir is None:
                if self._closed:
                    raise SpoolError("the registry was closed; its spool is gone")
                try:
                    self._base.mkdir(parents=True, exist_ok=True, mode=0o700)
                except OSError as exc:
                    raise OSError(
                        f"the spool base directory {self._base} cannot be created "
                        f"({exc.strerror}); set [tool.toolregistry.plugins.spool] directory "
                        "to a writable folder"
                    ) from exc
                self._sweep_stale()
                made = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX, dir=self._base))
                if self.keep:
                    (made / _KEEP_MARKER).touch(mode=0o600)
                self._dir = made
                log.debug("spool.created", directory=str(made))
            return self._dir

    def _remake_dir(self, lost: Path) -> Path:
        with self._lock:
            if self._dir == lost:
                dropped = len(self._entries)
                self._entries.clear()
                self._total = 0
                self._dir = None
                log.warning("spool.folder_lost", directory=str(lost), dropped=dropped)
        return self._ensure_dir()

    def _sweep_stale(self) -> None:
        """Remove spool folders left by processes that died without closing their registry:
        ours by name and owner, older than ``max_age``, not kept on purpose."""
        cutoff = time.time() - self.max_age
        for path, st in self._folders():
            try:
                if st.st_mtime >= cutoff or (path / _KEEP_MARKER).exists():
                    continue
                shutil.rmtree(path)
                log.info("spool.swept", directory=str(path))
            except OSError:
                continue  # another process may be sweeping it right now

    def _folders(self) -> Iterator[tuple[Path, os.stat_result]]:
        """The spool folders in the base directory: the plugin's own name pattern, real
        directories (not symlinks), owned by this user."""
        uid = os.getuid() if hasattr(os, "getuid") else None
        try:
            names = os.listdir(self._base)
        except OSError:
            return
        for name in names:
            if _DIR_RE.fullmatch(name) is None:
                continue
            path = self._base / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and (uid is None or st.st_uid == uid):
                yield path, st

    def set_keep(self, keep: bool) -> None:
        """Change ``keep`` (also for a folder made already: its marker protects it from
        being swept as stale by a later process)."""
        with self._lock:
            self.keep = keep
            directory = self._dir
        if directory is not None:
            marker = directory / _KEEP_MARKER
            if keep:
                marker.touch(mode=0o600)
            else:
                _unlink(marker)

    # -- writing --------------------------------------------------------------------------
    def write(self, chunks: Iterable[bytes]) -> Entry:
        """Store the concatenated ``chunks`` under a new handle; evicts old outputs past the
        retention limits. Chunks (rather than one ``bytes``) let the caller encode a long
        text piece by piece: each piece is written while it is still in the CPU cache, which
        is faster than encoding a long text at once."""
        directory = self._ensure_dir()
        remade = False
        while True:
            handle = f"sp_{secrets.token_hex(8)}"
            path = directory / f"{handle}{_SUFFIX}"
            try:
                fd = os.open(path, _OPEN_WRITE, 0o600)
            except FileExistsError:
                continue  # 64 random bits: practically never
            except FileNotFoundError:
                if remade:
                    raise
                # The folder went away (removed by hand, or swept as stale by another process
                # after a long idle time): its outputs are gone anyway; start a new one.
                directory = self._remake_dir(directory)
                remade = True
                continue
            break
        st = _fill(fd, path, chunks)
        entry = Entry(handle, path, st.st_size, time.time(), st.st_dev, st.st_ino)
        evicted = self._add(entry)
        for old in evicted:
            _unlink(old.path)
            log.info("spool.evicted", handle=old.handle, size=old.size)
        if self._open_shared is not None:
            self._publish(entry, [old.handle for old in evicted if old.owned])
        return entry

    def _add(self, entry: Entry) -> list[Entry]:
        with self._lock:
            if self._closed:
                _unlink(entry.path)
                raise SpoolError("the registry was closed while the output was being spooled")
            self._entries[entry.handle] = entry
            self._total += entry.size
            return self._evict_locked()

    def _publish(self, entry: Entry, dropped: list[str]) -> None:
        """Index ``entry`` on the store and apply retention there; a store that cannot be
        reached leaves the output readable by this process only (logged)."""
        try:
            shared = self._index()
            assert shared is not None
            removed = shared.put(entry.handle, entry.created, entry.size, entry.path,
                                 entry.device, entry.inode, max_age=self.max_age,
                                 max_total=self.max_total, dropped=dropped)
        except Exception as exc:
            log.warning("spool.index_failed", handle=entry.handle,
                        error=f"{type(exc).__name__}: {exc}")
            return
        for row in removed:
            self._remove_indexed(row)

    def _remove_indexed(self, row: Row) -> None:
        """Remove the file of an output retention took off the index (ours, or another
        process's on this host: only a spool file of this user, the very one indexed)."""
        with self._lock:
            mine = self._entries.pop(row.handle, None)
            if mine is not None:
                self._total -= mine.size
        if mine is not None:
            _unlink(mine.path)
            return
        if row.path is None:
            return
        path = Path(row.path)
        try:
            st = os.lstat(path)
        except OSError:
            return
        uid = os.getuid() if hasattr(os, "getuid") else None
        if (_DIR_RE.fullmatch(path.parent.name) is not None and stat.S_ISREG(st.st_mode)
                and st.st_nlink == 1 and (uid is None or st.st_uid == uid)
                and (st.st_dev, st.st_ino) == (row.device, row.inode)):
            _unlink(path)

    def _evict_locked(self) -> list[Entry]:
        cutoff = time.time() - self.max_age
        evicted: list[Entry] = []
        while self._entries:
            handle, oldest = next(iter(self._entries.items()))
            expired = oldest.created < cutoff
            # The newest output always stays, even alone over the size limit: the model was
            # just told its handle.
            too_big = self._total > self.max_total and len(self._entries) > 1
            if not (expired or too_big):
                break
            del self._entries[handle]
            self._total -= oldest.size
            evicted.append(oldest)
        return evicted

    # -- reading --------------------------------------------------------------------------
    def entry(self, handle: object) -> Entry:
        """The entry of a handle this store wrote, or a :class:`SpoolError` saying why not."""
        if not is_handle(handle):
            shown = repr(handle) if len(repr(handle)) <= 80 else repr(handle)[:77] + "..."
            raise SpoolError(
                f"{shown} is not a spool handle; handles look like 'sp_' followed by 16 hex "
                "digits and come from a truncated tool result"
            )
        assert isinstance(handle, str)
        with self._lock:
            if self._closed:
                raise SpoolError("the registry was closed; its spooled outputs are gone")
            evicted = self._evict_locked()
            entry = self._entries.get(handle)
        for old in evicted:
            _unlink(old.path)
        if evicted and self._open_shared is not None:
            self._forget([old.handle for old in evicted if old.owned])
        if entry is None and self._open_shared is not None:
            entry = self._indexed(handle)
        if entry is None:
            entry = self._sibling(handle)
        if entry is None:
            raise SpoolError(
                f"no spooled output {handle!r} in {self._base} (unknown, or removed by "
                f"retention: older than {self.max_age:g} s or over {self.max_total} bytes in "
                "total); run the tool again to get a new handle"
            )
        return entry

    def _forget(self, handles: list[str]) -> None:
        try:
            shared = self._index()
            assert shared is not None
            shared.forget(handles)
        except Exception as exc:
            log.warning("spool.index_failed", handles=handles,
                        error=f"{type(exc).__name__}: {exc}")

    def _indexed(self, handle: str) -> Entry | None:
        """``handle`` from the store's index (another worker's or host's output), or
        ``None`` when the index does not hold it."""
        try:
            shared = self._index()
            assert shared is not None
            row = shared.get(handle)
        except Exception as exc:
            raise SpoolError(f"the spool index cannot be read ({type(exc).__name__}: {exc}); "
                             "try again later") from None
        if row is None:
            return None
        age = time.time() - row.created
        if age > self.max_age:
            raise SpoolError(
                f"spooled output {handle!r} has expired: written {age:.0f} s ago, and "
                f"retention keeps outputs {self.max_age:g} s; run the tool again to get a new "
                "handle")
        if row.path is not None and row.device is not None and row.inode is not None:
            return Entry(handle, Path(row.path), row.size, row.created, row.device, row.inode,
                         owned=False, indexed=True)
        return self._copy(shared, row)

    def _copy(self, shared: SharedIndex, row: Row) -> Entry | None:
        """Copy an output kept in the store into this process's spool folder (once: it is
        then read like one of ours, and removed with the folder)."""
        try:
            content = shared.content(row.handle)
        except Exception as exc:
            raise SpoolError(f"spooled output {row.handle!r} cannot be fetched from the store "
                             f"({type(exc).__name__}: {exc}); try again later") from None
        if content is None:
            return None
        path = self._ensure_dir() / f"{row.handle}{_SUFFIX}"
        try:
            fd = os.open(path, _OPEN_WRITE, 0o600)
        except FileExistsError:
            with self._lock:
                found = self._entries.get(row.handle)
            if found is None:
                raise SpoolError(f"spooled output {row.handle!r} is being fetched; "
                                 "try again") from None
            return found
        st = _fill(fd, path, [content])
        entry = Entry(row.handle, path, st.st_size, row.created, st.st_dev, st.st_ino,
                      owned=False)
        for old in self._add(entry):
            _unlink(old.path)
        return entry

    def _sibling(self, handle: str) -> Entry | None:
        """The output ``handle`` in another spool folder of the same base directory (written
        by another process or worker, or by an earlier run with ``keep``), or ``None``. Only
        ``<base>/spool-*/<handle>.txt`` is looked at; ``open`` checks the file itself."""
        for folder, st_dir in self._folders():
            path = folder / f"{handle}{_SUFFIX}"
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1
                    or st.st_uid != st_dir.st_uid):
                continue
            if st.st_mtime < time.time() - self.max_age:
                return None  # retention: too old to be served
            return Entry(handle, path, st.st_size, st.st_mtime, st.st_dev, st.st_ino)
        return None

    def open(self, handle: object) -> tuple[Entry, mmap.mmap | bytes]:
        """The entry and its bytes (memory-mapped when not empty)."""
        entry = self.entry(handle)
        folder = Path(os.path.realpath(entry.path)).parent
        # An indexed output may be in another base directory (a worker configured apart);
        # the store vouches for its path, the checks below for the file.
        if ((not entry.indexed and folder.parent != Path(os.path.realpath(self._base)))
                or _DIR_RE.fullmatch(folder.name) is None):
            raise SpoolError(f"spooled output {entry.handle!r} is not inside the spool folder")
        try:
            fd = os.open(entry.path, _OPEN_READ)
        except OSError as exc:
            raise SpoolError(f"spooled output {entry.handle!r} cannot be opened "
                             f"({exc.strerror}); run the tool again") from exc
        try:
            st = os.fstat(fd)
            if (not stat.S_ISREG(st.st_mode) or st.st_ino != entry.inode
                    or st.st_dev != entry.device or st.st_nlink != 1):
                raise SpoolError(f"spooled output {entry.handle!r} was replaced on disk; "
                                 "it will not be read")
            if st.st_size == 0:
                return entry, b""
            return entry, mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def total_bytes(self) -> int:
        """Bytes held by the outputs still kept."""
        return self._total

    # -- closing --------------------------------------------------------------------------
    def close(self) -> None:
        """Forget every output and remove the directory (unless ``keep``). Idempotent.
        Outputs indexed on a SQLite store leave the index with their files; on a server the
        store keeps their text, so other workers read them until retention removes them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            directory = self._dir
            owned = [h for h, e in self._entries.items() if e.owned]
            self._entries.clear()
            self._total = 0
            shared, self._shared, self._open_shared = self._shared, None, None
        if directory is not None and not self.keep:
            shutil.rmtree(directory, ignore_errors=True)
            log.debug("spool.removed", directory=str(directory))
        if shared is not None:
            try:
                if not self.keep and not shared.holds_content and owned:
                    shared.forget(owned)
            except Exception as exc:
                log.warning("spool.index_failed", handles=owned,
                            error=f"{type(exc).__name__}: {exc}")
            finally:
                shared.store.close()


def _fill(fd: int, path: Path, chunks: Iterable[bytes]) -> os.stat_result:
    """Write ``chunks`` to the new file ``fd`` (closed here; removed on an error)."""
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # exactly 0600 whatever the umask
        for chunk in chunks:
            written = os.write(fd, chunk)
            if written < len(chunk):
                view = memoryview(chunk)
                while written < len(view):
                    written += os.write(fd, view[written:])
                view.release()
            # Free this chunk before the next one is encoded: the allocator then hands the
            # same memory back instead of fresh pages (page faults cost more than the
            # encoding).
            del chunk
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        _unlink(path)
        raise
    os.close(fd)
    return st


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
