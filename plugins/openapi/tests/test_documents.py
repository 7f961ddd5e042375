"""Every real document in shared/data/openapi loads: one tool per operation, valid schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
import yaml

from toolregistry import ToolRegistry
from toolregistry.formats import API_FORMATS, BUILTIN

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MANIFEST = Path(__file__).resolve().parents[3] / "shared" / "data" / "openapi" / "MANIFEST.json"
if not _MANIFEST.is_file():
    _MANIFEST = Path(__file__).resolve().parents[4] / "shared" / "data" / "openapi" / "MANIFEST.json"
FILES = [e["file"] for e in json.loads(_MANIFEST.read_text())] if _MANIFEST.is_file() else []
PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


def _plain_load(path: Path) -> Any:
    return yaml.load(path.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _independent_count(path: Path) -> int:
    """paths x methods, following path-item $refs with a resolver of our own (plain PyYAML)."""
    doc = _plain_load(path)
    count = 0
    for item in (doc.get("paths") or {}).values():
        base = path
        while isinstance(item, dict) and "$ref" in item:
            file_part, _, pointer = item["$ref"].partition("#")
            if file_part:
                base = (base.parent / file_part).resolve()
                target = _plain_load(base)
            else:
                target = doc
            for part in filter(None, pointer.split("/")):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            item = target
        count += sum(1 for m in METHODS if isinstance(item.get(m), dict))
    return count


def _params_of(entry: dict[str, Any], fmt: str) -> dict[str, Any] | None:
    return BUILTIN.get(fmt).read_definition(entry).parameters


def _refs_resolve(schema: dict[str, Any]) -> None:
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith("#/$defs/"), ref
                assert ref[len("#/$defs/"):] in schema.get("$defs", {}), f"dangling {ref}"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@pytest.mark.parametrize("name", FILES)
def test_document_loads_one_tool_per_operation(name: str, data_dir: Path) -> None:
    path = data_dir / name
    expected = _independent_count(path)
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(path)
        assert len(tools) == expected
        assert len(registry) == expected
        names = [t.name for t in tools]
        assert len(set(names)) == len(names)
        validator = jsonschema.Draft202012Validator
        checked: set[int] = set()
        # pure-Python jsonschema is slow on the 300-1000-operation documents: there it checks
        # every 7th tool, and jsonschema-rs below checks every emitted schema
        step = 1 if len(tools) <= 200 else 7
        for index, tool in enumerate(tools):
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool.name), tool.name
            assert tool.description
            assert tool.provenance.kind == "openapi" and tool.provenance.original_name
            assert all(PROPERTY_KEY.match(k) for k in tool.parameters["properties"])
            # the 2020-12 meta-schema checks each $defs entry on its own, so a shared
            # definition (one object in many tools) needs checking once
            _refs_resolve(tool.parameters)
            if index % step:
                continue
            validator.check_schema({k: v for k, v in tool.parameters.items() if k != "$defs"})
            for definition in tool.parameters.get("$defs", {}).values():
                if id(definition) not in checked:
                    checked.add(id(definition))
                    validator.check_schema(definition)
        for fmt in API_FORMATS:
            schemas = registry.get_schemas(api_format=fmt)
            assert len(schemas) == expected
            for entry in schemas:
                params = _params_of(entry, fmt)
                if params is not None:  # a second, independent meta-schema validator
                    jsonschema_rs.meta.validate(params)
                    _refs_resolve(params)
        for entry in registry.get_schemas(api_format="openai-chat", strict=True):
            jsonschema_rs.meta.validate(entry["function"]["parameters"])


def test_operation_ids_are_kept_and_names_normalised(data_dir: Path) -> None:
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(data_dir / "oai_v3.0_uspto.yaml")
        by_original = {t.provenance.original_name: t.name for t in tools}
        assert by_original["list-data-sets"] == "list-data-sets"
        assert by_original["list-searchable-fields"] == "list-searchable-fields"
        tools = registry.register_from_openapi(data_dir / "oai_v2_uber.json", namespace="uber")
        # no operationIds there: method + path names, the original kept as "METHOD /path"
        assert {t.provenance.original_name for t in tools} >= {"GET /products", "GET /me"}
        assert "uber-get_products" in registry


def test_path_level_parameters_are_included(data_dir: Path) -> None:
    with ToolRegistry() as registry:
        registry.register_from_openapi(data_dir / "bump_train-travel-api_v3.1.yaml")
        params = registry["get-booking"].parameters
        assert "bookingId" in params["properties"] and "bookingId" in params["required"]


def test_relative_files_and_recursive_schemas(data_dir: Path) -> None:
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(data_dir / "schemathesis_relative_files" / "main.yaml")
        assert len(tools) == 4
        registry.register_from_openapi(data_dir / "osv_v3.0_parent-reference" / "openapi.yaml",
                                       namespace="p")
        params = registry["p-listPets"].parameters
        assert params["properties"]["sampleParameter"]["type"] == "boolean"
        # the Kubernetes document: recursive JSONSchemaProps through $defs, bounded in Gemini
        registry.register_from_openapi(
            data_dir / "osv_bench_kubernetes_swagger2_json-in-yaml.yaml", namespace="k8s",
            include=["createApiextensionsV1CustomResourceDefinition"])
        crd = registry["k8s-createApiextensionsV1CustomResourceDefinition"].parameters
        defs = crd["$defs"]
        props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
        assert props in defs
        assert defs[props]["properties"]["not"] == {"$ref": f"#/$defs/{props}"}
        gemini = registry.get_tool_schema("k8s-createApiextensionsV1CustomResourceDefinition",
                                          api_format="gemini")
        assert len(json.dumps(gemini)) < 5_000_000
