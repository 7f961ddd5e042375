"""What of the caller's context goes into a Ray task (the driver's side; the worker's is in
``_remote``).

A Ray task runs in another process, so the caller's ``contextvars`` cannot simply be entered
there. Two things cross, read inside the call's own context when it is submitted:

* what outgoing requests carry (:func:`toolregistry.plugin.outgoing_context`): with the otel
  plugin, the W3C ``traceparent`` / ``tracestate`` / ``baggage`` of the call's span, which the
  worker continues with OpenTelemetry's propagator;
* the values of the context variables the application registers for carrying (:func:`carry`,
  or ``carry = ["module:attr"]`` in ``[tool.toolregistry.plugins.ray]``), pickled, and set in
  the worker on that variable (:func:`toolregistry_ray._remote.variable`).

A registered variable is known by a key: its import path when it is a module-level name of
an imported module, else its name and identity. A tool shipped by value that refers to it
gets the worker's variable of the same key: with this module loaded, a registered variable
pickles as its key (any other still refuses to pickle, as Python's do, naming itself).
"""

from __future__ import annotations

import contextvars
import copyreg
import sys
import threading
from collections.abc import Iterable
from typing import Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import import_target, outgoing_context

from ._remote import Carried, variable

__all__ = ["carried_variables", "carry", "resolve", "snapshot"]

Variable = tuple[str, "contextvars.ContextVar[Any]"]

_lock = threading.Lock()
_registered: tuple[Variable, ...] = ()
_keys: dict[int, Variable] = {}  # id(variable) -> (key, variable): how it pickles
_MISSING = object()


def resolve(variable: str | contextvars.ContextVar[Any], where: str = "carry") -> Variable:
    """``(key, variable)`` for an object or an import path ``"module:attr"``, and make it
    pickle as its key from now on."""
    if isinstance(variable, str):
        found = import_target(variable, where)
        if not isinstance(found, contextvars.ContextVar):
            raise ConfigError(f"{where}: {variable!r} is a {type(found).__name__}, not a "
                              "contextvars.ContextVar")
        pair = (variable, found)
    elif isinstance(variable, contextvars.ContextVar):
        known = _keys.get(id(variable))
        pair = known if known is not None and known[1] is variable else (
            _import_path(variable) or f"{variable.name}@{id(variable):x}", variable)
    else:
        raise ConfigError(f"{where}: expected a contextvars.ContextVar or its import path "
                          f"'module:attr', got {type(variable).__name__}")
    with _lock:
        _keys.setdefault(id(pair[1]), pair)
    return _keys[id(pair[1])]


def _import_path(variable: contextvars.ContextVar[Any]) -> str | None:
    """``module:attr`` of a module-level variable (not ``__main__``'s: workers cannot import
    the driver's script)."""
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or name in ("__main__", "__mp_main__"):
            continue
        for attr, value in list(namespace.items()):
            if value is variable:
                return f"{name}:{attr}"
    return None


def _reduce(var: contextvars.ContextVar[Any]) -> tuple[Any, tuple[str]]:
    known = _keys.get(id(var))
    if known is None or known[1] is not var:
        raise TypeError(f"cannot pickle the context variable {var.name!r}: to send it (and "
                        "its value) into Ray tasks, register it with toolregistry_ray.carry()")
    return variable, (known[0],)


# Python cannot pickle a context variable; from now on a registered one pickles as its key,
# and any other says which it is and how to carry it.
copyreg.pickle(contextvars.ContextVar, _reduce)


def carry(*variables: str | contextvars.ContextVar[Any]) -> None:
    """From now on, calls that run on Ray (of every registry in this process) carry the
    values these context variables have in the caller's context into their tasks.

    Give the variable itself or its import path ``"my_app.context:request_id"``. In the
    worker the value is set on the variable of the same import path when its module imports
    there, else on a stand-in that tools shipped by value refer to in its place; either way
    the tool reads it as it would here. The value must pickle. A variable without a value
    in the caller's context keeps its default in the worker. Adding one twice is a no-op.
    """
    global _registered
    found = [resolve(v) for v in variables]
    with _lock:
        keys = {key for key, _ in _registered}
        _registered = (*_registered, *[p for p in found if p[0] not in keys])


def carried_variables(configured: Iterable[str]) -> tuple[Variable, ...]:
    """A registry's configured variables (``carry`` in its table), resolved now."""
    return tuple(resolve(v, "[tool.toolregistry.plugins.ray] carry") for v in configured)


def snapshot(configured: tuple[Variable, ...]) -> Carried | None:
    """What the current context (the call's) sends along; ``None`` when nothing."""
    carrier = outgoing_context()
    values = {}
    for key, var in (*_registered, *configured) if configured else _registered:
        value = var.get(_MISSING)
        if value is not _MISSING:
            values[key] = value
    if not carrier and not values:
        return None
    return Carried(carrier, tuple(values.items()))
