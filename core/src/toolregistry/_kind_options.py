"""A source kind's own options (``SourceKind(options=Model)``), validated by the kernel before
the loader runs, with the messages of plugin tables and the option names as the user wrote
them."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._config import report_unknown
from ._source_options import COMMON
from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._extensions import SourceKind

__all__ = ["check", "spelled"]

# How the options of the source being loaded were written (``base-url`` in a file), and where:
# set by the configuration path around its load, read by ``check``.
_WRITTEN: contextvars.ContextVar[tuple[Mapping[str, str], str] | None] = \
    contextvars.ContextVar("toolregistry_source_spelling", default=None)


@contextlib.contextmanager
def spelled(written: Mapping[str, str], where: str) -> Iterator[None]:
    """While the block runs, ``check`` names options as ``written`` ({name: as written}) and
    prefixes unknown-option warnings with ``where``."""
    token = _WRITTEN.set((written, where))
    try:
        yield
    finally:
        _WRITTEN.reset(token)


def check(kind: SourceKind, options: dict[str, Any], where: str, *, strict: bool
          ) -> dict[str, Any]:
    """``options`` with the kind's own ones validated by ``kind.options`` (unchanged when the
    kind declares no model): unknown ones warn with a close match and are left out (strict: a
    ConfigError), bad values are a ConfigError naming each option; the common options pass
    through for the kernel."""
    model = kind.options
    if model is None:
        return options
    from pydantic import ValidationError

    written, prefix = _WRITTEN.get() or ({}, "")

    def spell(name: str) -> str:
        return written.get(name, name)

    known = set()
    for name, info in model.model_fields.items():
        known.add(name)
        if info.alias:
            known.add(info.alias)
    own = {k: v for k, v in options.items() if k not in COMMON}
    unknown = sorted(set(own) - known)
    if unknown:
        report_unknown(f"{prefix}: {where}" if prefix else where, [spell(k) for k in unknown],
                       sorted(known), strict=strict)
    given = {k: v for k, v in own.items() if k in known}
    try:
        validated = model.model_validate(given)
    except ValidationError as exc:
        raise ConfigError.from_validation(where, exc, spelling=spell) from None
    values = {k: getattr(validated, _field(model, k)) for k in given}
    return {**{k: v for k, v in options.items() if k in COMMON}, **values}


def _field(model: type[BaseModel], key: str) -> str:
    """The field a key (a field name or an alias) sets."""
    if key in model.model_fields:
        return key
    return next(n for n, info in model.model_fields.items() if info.alias == key)
