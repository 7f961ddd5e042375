"""What toolregistry 0.19 had that 1.0 does not: unported code fails with a pointer to the
migration guide and the replacement, not with a bare ``ImportError`` / ``AttributeError``.

``toolregistry.__getattr__`` asks :func:`moved_export` about a missing name; the registry's
0.19 methods that are gone are class attributes that raise (:class:`_Gone`), so that a
lookup of a method that exists costs what it did.
"""

from __future__ import annotations

from typing import Any, NoReturn

GUIDE = "see 'Migrating from 0.19' (docs/migrating-from-0.19.md)"

_DISCOVERY = "toolregistry.tool_discovery.ToolDiscoveryTool (toolregistry-discovery)"
_RESULT = "one result type, toolregistry.ToolResult (is_error, error_kind, content, call_id)"
_POLICY = "toolregistry-policy (toolregistry_policy.configure, Rule, Policy)"
_INSPECTOR = "toolregistry-inspector (ExecutionLog, toolregistry inspect / log)"
_INVALID = "an 'invalid_arguments' error result; exceptions are in toolregistry.errors"

# 0.19's `toolregistry.__all__` names that 1.0's `toolregistry` does not have.
EXPORTS: dict[str, str] = {
    "ErrorResult": _RESULT,
    "ToolCallResult": _RESULT,
    "ResultList": "a plain list[ToolResult] in call order ({r.call_id: r for r in results})",
    "ErrorDetail": _INVALID,
    "ValidationError": _INVALID,
    "VALIDATION_ERRORS": _INVALID,
    "SchemaErrorDetail": _INVALID,
    "SchemaValidationError": _INVALID,
    "AdminInfo": "toolregistry-inspector (toolregistry_inspector.serve, InspectorServer)",
    "AdminServer": "toolregistry-inspector (toolregistry_inspector.serve, InspectorServer)",
    "TokenAuth": "the inspector's token (toolregistry_inspector.serve(registry, token=...))",
    "RequestMetrics": "not provided",
    "ExecutionLog": _INSPECTOR,
    "ExecutionLogEntry": _INSPECTOR,
    "ExecutionStatus": _INSPECTOR,
    "PermissionHandler": _POLICY,
    "AsyncPermissionHandler": _POLICY,
    "PermissionPolicy": _POLICY,
    "PermissionRequest": _POLICY,
    "PermissionResult": _POLICY,
    "PermissionRule": _POLICY,
    "ChangeCallback": "a callable taking a toolregistry.ChangeEvent (registry.on_change)",
    "ChangeEventType": "ChangeEvent.kind, a string: register, unregister, enable, disable, "
                       "metadata, namespace, rename, setting",
    "RefreshResult": "the dict toolregistry_mcp.refresh returns (added, removed, changed, "
                     "accepted, skipped)",
    "PostRegisterHook": "a plugin's register hook, or registry.on_change for 'register' events",
    "ExecutionContext": "a toolregistry.ToolContext parameter of the tool",
    "ProgressReport": "ctx.report_progress(...) of a toolregistry.ToolContext parameter",
    "ProcessPoolBackend": "ToolMetadata(isolation='process') or process_namespaces",
    "ThreadBackend": "the registry's worker threads (ToolRegistry(max_workers=...))",
    "ToolDiscoveryTool": _DISCOVERY,
    "TOOL_DISCOVERY_NAME": "toolregistry_discovery.DISCOVER_TOOLS_NAME ('discover_tools')",
    "TOOL_CALL_DEFERRED_NAME": "not provided: the model calls a deferred tool by its name",
    "SchemaChangeKind": "not provided (Tool.schema_hash tells versions apart)",
}

# 0.19's ToolRegistry methods and attributes that 1.0's does not have.
METHODS: dict[str, str] = {
    "get_callable": "registry.get_tool(name).callable, or call it through registry.invoke",
    "get_tools_json": "get_schemas(api_format, ...)",
    "get_available_tools": "list_tools()",
    "list_all_tools": "list_tools(include_disabled=True)",
    "get_tools_status": "is_enabled(name) and disabled_reason(name) per tool",
    "get_disable_reason": "disabled_reason(name)",
    "disable_by_tags": "disable(name, reason) per tool, or get_schemas(exclude_tags=...)",
    "update_namespace_metadata": "update_tool_metadata(name, ...) per tool of the namespace",
    "apply_metadata_config": "ToolMetadata in code, or metadata= of a source's loader",
    "add_post_register_hook": "a plugin's register hook, or on_change for 'register' events",
    "remove_on_change": "the function on_change(callback) returned",
    "spinoff": "register_tools(...) on a new ToolRegistry, then unregister(...) here",
    "reduce_namespace": "set_namespace(name, None) per tool",
    "override": "update_tool(tool), or register(..., replace=True)",
    "restore_override": "register the earlier tool again with replace=True",
    "list_overrides": "not provided",
    "refresh_from_mcp": "toolregistry_mcp.refresh(registry)",
    "refresh_from_mcp_async": "await toolregistry_mcp.arefresh(registry)",
    "refresh_from_openapi": "register_from_openapi(spec, ..., replace=True)",
    "refresh_from_openapi_async": "await aregister_from_openapi(spec, ..., replace=True)",
    "refresh_all": "toolregistry_mcp.refresh(registry) for MCP sources",
    "refresh_all_async": "await toolregistry_mcp.arefresh(registry) for MCP sources",
    "close_async": "await aclose()",
    "register_async": "register(...) (no I/O), or aregister_from_mcp / _openapi / _langchain",
    "register_from_class_async": "register_from_class(...) (no I/O)",
    "register_from_mcp_async": "await aregister_from_mcp(...)",
    "register_from_openapi_async": "await aregister_from_openapi(...)",
    "register_from_langchain_async": "await aload('langchain', tools)",
    "recover_tool_call_assistant_message": "build_tool_call_messages(calls, results, "
                                           "api_format=...)",
    "set_default_execution_mode": "ToolMetadata(isolation='process') per tool, or "
                                  "ToolRegistry(process_namespaces=[...])",
    "set_execution_mode": "ToolMetadata(isolation='process') per tool",
    "set_permission_policy": "toolregistry_policy.configure(registry, rules=[...])",
    "get_permission_policy": "toolregistry_policy.get_policy(registry)",
    "remove_permission_policy": "toolregistry_policy.configure(registry, rules=[])",
    "set_permission_handler": "toolregistry_policy.configure(registry, handler=...)",
    "get_permission_handler": "toolregistry_policy.get_policy(registry)",
    "remove_permission_handler": "toolregistry_policy.configure(registry, handler=None)",
    "permission_fallback": "toolregistry_policy.configure(registry, handler=...)",
    "enable_logging": "toolregistry_inspector.execution_log(registry) (toolregistry-inspector)",
    "disable_logging": "log = false in [tool.toolregistry.plugins.inspector]",
    "get_execution_log": "toolregistry_inspector.execution_log(registry)",
    "enable_admin": "toolregistry inspect, or toolregistry_inspector.serve(registry, "
                    "block=False)",
    "disable_admin": "close() the InspectorServer toolregistry_inspector.serve returned",
    "get_admin_info": "the InspectorServer toolregistry_inspector.serve returned (url)",
    "ptc": "toolregistry_codemode.enable_code_mode(registry) (toolregistry-codemode)",
    "name_sep": "not provided: namespaced names are always 'namespace-name'",
}


def moved_export(name: str) -> ImportError | None:
    """The error for ``toolregistry.<name>`` when ``name`` is one 0.19 exported. An
    ImportError: ``from toolregistry import X`` shows its message (an AttributeError would be
    replaced by Python's own "cannot import name")."""
    instead = EXPORTS.get(name)
    if instead is None:
        return None
    return ImportError(f"toolregistry.{name} was toolregistry 0.19's; in 1.0: {instead}; "
                       f"{GUIDE}", name="toolregistry")


class _Gone:
    """A 0.19 method of the registry that 1.0 does not have: looking it up raises an
    AttributeError naming what to use instead (``hasattr`` stays False)."""

    __slots__ = ("_instead", "_name")

    def __init__(self, name: str, instead: str) -> None:
        self._name, self._instead = name, instead

    def __get__(self, registry: Any, owner: type | None = None) -> NoReturn:
        raise AttributeError(f"ToolRegistry has no attribute {self._name!r}: it was toolregistry "
                             f"0.19's; in 1.0: {self._instead}; {GUIDE}", name=self._name,
                             obj=registry)


def mark_gone_methods(cls: type) -> None:
    """Give ``cls`` a raising attribute for each 0.19 method it does not have."""
    for name, instead in METHODS.items():
        if not hasattr(cls, name):
            setattr(cls, name, _Gone(name, instead))
