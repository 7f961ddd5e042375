"""Hostile and odd documents: clear errors or bounded results, never hangs or blow-ups."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import jsonschema
import pytest

from toolregistry import ToolRegistry
from toolregistry.formats import API_FORMATS
from toolregistry_openapi import Limits, OpenAPIError, tools_from_openapi


def _spec(**paths: dict) -> dict:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths}


def _post_body(schema: dict) -> dict:
    return {"post": {"operationId": "op", "requestBody": {"content": {"application/json": {
        "schema": schema}}}, "responses": {"200": {"description": "ok"}}}}


def test_shared_hostile_documents_load_bounded(data_dir: Path) -> None:
    # their remote, python:// and dangling references sit in responses, which tools never
    # resolve: the documents load, and nothing is fetched
    for name in ("with_externals.yaml", "recursive_objs.yaml", "missing_reference.yaml"):
        tools, session, _ = tools_from_openapi(data_dir / "prance_refs" / name)
        session.close()
        assert len(tools) == 3
    tools, session, _ = tools_from_openapi(data_dir / "prance_refs" / "with_externals.yaml")
    session.close()
    by_name = {t.name: t for t in tools}
    # a parameter given as a relative $ref (with a sibling key the resolver ignores)
    assert by_name["showPetById"].parameters["required"] == ["petId"]


def test_dangling_reference_is_a_clear_error(data_dir: Path, tmp_path: Path) -> None:
    spec = _spec(**{"/x": _post_body({"$ref": "#/components/schemas/Nope"})})
    with pytest.raises(OpenAPIError, match=r"POST /x.*dangling \$ref '#/components/schemas/Nope'.*strict=False"):
        tools_from_openapi(spec)
    # a dangling reference reached from the shared document, in a parameter this time
    doc = (data_dir / "prance_refs" / "missing_reference.yaml").read_text()
    doc = doc.replace("""        - name: petId
          in: path
          required: true
          description: The id of the pet to retrieve
          type: string""", """        - $ref: 'definitions.yaml#/missing'""")
    for part in ("definitions.yaml", "error.json"):
        shutil.copy(data_dir / "prance_refs" / part, tmp_path / part)
    (tmp_path / "missing.yaml").write_text(doc)
    with pytest.raises(OpenAPIError, match=r"definitions\.yaml.*nothing at '/missing'"):
        tools_from_openapi(tmp_path / "missing.yaml")
    # strict=False skips that operation and keeps the others
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(tmp_path / "missing.yaml", strict=False)
        assert sorted(t.name for t in tools) == ["createPets", "listPets"]


def test_remote_references_are_refused_without_any_request() -> None:
    spec = _spec(**{"/x": _post_body({"$ref": "http://finkhaeuser.de/projects/prance/petstore.yaml#/definitions/Pet"})})
    started = time.monotonic()
    with pytest.raises(OpenAPIError, match="allow_remote_refs=True"):
        tools_from_openapi(spec)
    assert time.monotonic() - started < 1
    with pytest.raises(OpenAPIError, match="unsupported scheme 'python'"):
        tools_from_openapi(_spec(**{"/x": _post_body({"$ref": "python://tests/specs/petstore.yaml#/definitions/Pet"})}))
    with pytest.raises(OpenAPIError, match="given as a dict"):
        tools_from_openapi(_spec(**{"/x": _post_body({"$ref": "other.yaml#/Pet"})}))


def test_non_utf8_part_file_names_the_file(data_dir: Path, tmp_path: Path) -> None:
    src = data_dir / "prance_refs" / "issue_51_iso-8859-2"
    # the shared main document references the UTF-8 twin: it loads
    tools, session, _ = tools_from_openapi(src / "openapi-main.yaml")
    session.close()
    assert len(tools) == 1
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    main = tmp_path / "openapi-main.yaml"
    main.write_text(main.read_text().replace("openapi-part.yaml", "openapi-part-iso-8859-2.yaml"))
    with pytest.raises(OpenAPIError, match=r"openapi-part-iso-8859-2\.yaml.*is not UTF-8.*iconv"):
        tools_from_openapi(main)
    with pytest.raises(OpenAPIError, match="is not UTF-8"):
        tools_from_openapi(src / "openapi-part-iso-8859-2.yaml")


def test_yaml_billion_laughs_is_refused_fast(tmp_path: Path) -> None:
    lines = ["openapi: 3.0.0", "info: {title: t, version: '1'}", "paths: {}", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    with pytest.raises(OpenAPIError, match="alias bomb"):
        tools_from_openapi(bomb)
    assert time.monotonic() - started < 5


def test_recursive_yaml_alias_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "loop.yaml"
    doc.write_text("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\nx: &x [*x]\n")
    with pytest.raises(OpenAPIError, match="recursive YAML alias"):
        tools_from_openapi(doc)


def test_deeply_nested_documents(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"openapi": "3.0.0", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(OpenAPIError, match="nested too deeply"):
        tools_from_openapi(deep)
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("openapi: 3.0.0\nx: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(OpenAPIError, match=r"nested too deeply|maximum nesting depth"):
        tools_from_openapi(deep_yaml)
    block = tmp_path / "block.yaml"
    block.write_text("openapi: 3.0.0\n" + "".join(" " * i + f"k{i}:\n" for i in range(5000)))
    started = time.monotonic()
    with pytest.raises(OpenAPIError, match=r"nested too deeply|maximum nesting depth"):
        tools_from_openapi(block)
    assert time.monotonic() - started < 10


def test_deep_schema_is_cut_and_stays_valid() -> None:
    schema: dict = {"type": "string"}
    for i in range(300):
        schema = {"type": "object", "properties": {f"p{i}": schema}}
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(_spec(**{"/x": _post_body(schema)}))
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        depth, node = 0, tool.parameters["properties"]["body"]
        while node.get("properties"):
            node = next(iter(node["properties"].values()))
            depth += 1
        assert depth <= Limits().max_schema_depth + 1
        for fmt in API_FORMATS:
            assert registry.get_schemas(api_format=fmt)


def test_huge_document_over_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps(_spec(**{f"/p{i}": {"get": {"responses": {}}} for i in range(5000)})))
    with pytest.raises(OpenAPIError, match="larger than 1000 bytes"):
        tools_from_openapi(big, limits=Limits(max_bytes=1000))
    tools, session, _ = tools_from_openapi(big)
    session.close()
    assert len(tools) == 5000


def test_reference_cycles_are_bounded() -> None:
    spec = _spec(**{"/x": {"$ref": "#/paths/~1y"}, "/y": {"$ref": "#/paths/~1x"},
                    "/z": {"get": {"operationId": "z", "parameters": [
                        {"$ref": "#/components/parameters/A"}], "responses": {}}}})
    spec["components"] = {"parameters": {"A": {"$ref": "#/components/parameters/B"},
                                         "B": {"$ref": "#/components/parameters/A"}}}
    with pytest.raises(OpenAPIError, match=r"\$ref cycle"):
        tools_from_openapi(spec)
    with ToolRegistry() as registry:
        assert registry.register_from_openapi(spec, strict=False) == []


def test_recursive_schemas_become_shared_defs() -> None:
    node = {"type": "object", "properties": {"name": {"type": "string"},
                                             "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}
    spec = _spec(**{"/x": _post_body({"$ref": "#/components/schemas/Node"})})
    spec["components"] = {"schemas": {"Node": node}}
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(spec)
        params = tool.parameters
        assert params["properties"]["body"] == {"$ref": "#/$defs/Node"}
        assert params["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
        gemini = registry.get_tool_schema("op", api_format="gemini")
        assert len(json.dumps(gemini)) < 100_000


def test_yaml_scalars_dates_status_codes_and_booleans(tmp_path: Path) -> None:
    doc = tmp_path / "odd.yaml"
    doc.write_text("""
openapi: 3.0.0
info: {title: odd, version: 2020-01-01}
paths:
  /x:
    get:
      operationId: odd
      parameters:
        - name: since
          in: query
          schema: {type: string, format: date, default: 2021-02-03, example: 2021-02-03}
        - name: mode
          in: query
          schema: {type: string, enum: [on, off, yes, no]}
        - name: n
          in: query
          schema: {type: integer, nullable: true, minimum: 1, exclusiveMinimum: true}
      responses:
        200: {description: ok}
        404: {description: missing}
""")
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(doc)
        props = tool.parameters["properties"]
        assert props["since"]["default"] == "2021-02-03"
        assert props["since"]["examples"] == ["2021-02-03"]
        assert props["mode"]["enum"] == ["on", "off", "yes", "no"]
        assert props["n"]["type"] == ["integer", "null"] and props["n"]["exclusiveMinimum"] == 1
        assert "minimum" not in props["n"]
        json.dumps(registry.get_schemas(api_format="gemini"))


def test_not_an_openapi_document(tmp_path: Path) -> None:
    other = tmp_path / "x.yaml"
    other.write_text("name: compose\nservices: {}\n")
    with pytest.raises(OpenAPIError, match=r"not an OpenAPI document.*services"):
        tools_from_openapi(other)
    with pytest.raises(OpenAPIError, match="cannot read the OpenAPI document"):
        tools_from_openapi(tmp_path / "missing.yaml")
    with pytest.raises(OpenAPIError, match="unsupported OpenAPI version"):
        tools_from_openapi({"openapi": "4.0.0", "paths": {}})
    two = tmp_path / "two.yaml"
    two.write_text("openapi: 3.0.0\n---\nopenapi: 3.0.0\n")
    with pytest.raises(OpenAPIError, match="neither valid JSON nor valid YAML"):
        tools_from_openapi(two)


def test_name_clashes_between_parameters_and_the_body() -> None:
    spec = _spec(**{"/items/{id}": {"post": {
        "operationId": "op",
        "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
            {"name": "id", "in": "query", "schema": {"type": "string"}},
            {"name": "body", "in": "query", "schema": {"type": "string"}},
            {"name": "filter[name]", "in": "query", "schema": {"type": "string"}},
            {"name": "Accept", "in": "header", "schema": {"type": "string"}},
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "properties": {"id": {"type": "string"}}}}}},
        "responses": {}}}})
    (tool,) = tools_from_openapi(spec)[0]
    assert list(tool.parameters["properties"]) == ["id", "query_id", "query_body", "filter_name_", "body"]
    assert tool.parameters["required"] == ["id", "body"]


def test_operations_without_ids_get_unique_names() -> None:
    spec = _spec(**{"/a-b": {"get": {"responses": {}}}, "/a_b": {"get": {"responses": {}}},
                    "/x": {"get": {"operationId": "dup", "responses": {}},
                           "put": {"operationId": "dup", "responses": {}}}})
    tools = tools_from_openapi(spec)[0]
    assert [t.name for t in tools] == ["get_a_b", "get_a_b_2", "dup", "dup_2"]
    assert [t.provenance.original_name for t in tools] == ["GET /a-b", "GET /a_b", "dup", "dup"]


def _alias_bomb(uses: str, levels: int = 7) -> str:
    # about 540 bytes: seven levels of nine aliases, used twice in one enum
    lines = ["openapi: 3.0.0", "info: {title: t, version: '1'}", "x-0: &a0 [l,l,l,l,l,l,l,l,l]"]
    lines += [f"x-{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    lines += ["paths:", "  /x:", "    post:", "      operationId: op", "      requestBody:",
              "        content:", "          application/json:",
              f"            schema: {{type: array, enum: {uses}}}", "      responses: {}"]
    return "\n".join(lines) + "\n"


def test_alias_amplification_under_max_nodes_is_refused(tmp_path: Path) -> None:
    # 16.8 million values, under max_nodes (20 million): it used to load into a 50-100 MB
    # schema per format, taking seconds and gigabytes
    bomb = tmp_path / "amplified.yaml"
    bomb.write_text(_alias_bomb("[*a6, *a6]"))
    assert bomb.stat().st_size < 600
    started = time.monotonic()
    with pytest.raises(OpenAPIError, match=r"amplified\.yaml expands to 16815139 values.*more "
                       r"than 100 times the \d+ values it is written with.*"
                       r"Limits\.max_alias_expansion.*limits=Limits\(max_alias_expansion=\.\.\.\)"):
        tools_from_openapi(bomb)
    assert time.monotonic() - started < 10
    # trusted anyway: the tool's schema is still bounded, with an error naming that limit
    with pytest.raises(OpenAPIError, match=r"POST /x \(op\): its parameters schema is more than "
                       r"1048576 bytes of JSON \(Limits\.max_tool_schema_bytes.*strict=False"):
        tools_from_openapi(bomb, limits=Limits(max_alias_expansion=10**6))
    # a document that uses a few aliases the ordinary way loads
    small = tmp_path / "small.yaml"
    small.write_text(_alias_bomb("*a1", levels=2))
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(small)
        assert tool.parameters["properties"]["body"]["enum"] == [["l"] * 9] * 9


def _fan_out(levels: int, width: int) -> dict:
    # definitions that each use the next `width` times, and one operation per level
    schemas: dict = {f"D{i}": {"type": "object", "properties": {
        f"p{j}": {"$ref": f"#/components/schemas/D{i + 1}"} for j in range(width)}}
        for i in range(levels)}
    schemas[f"D{levels}"] = {"type": "string", "description": "x" * 200}
    spec = _spec(**{f"/d{i}": _post_body({"$ref": f"#/components/schemas/D{i}"})
                    for i in range(levels)})
    for i, item in enumerate(spec["paths"].values()):
        item["post"]["operationId"] = f"d{i}"
    spec["components"] = {"schemas": schemas}
    return spec


def test_tool_schema_size_is_bounded_exactly() -> None:
    spec = _fan_out(3, 4)
    with ToolRegistry() as registry:
        registry.register_from_openapi(spec)
        sizes = {t.name: len(json.dumps(t.parameters, separators=(",", ":")))
                 for t in registry.get_tools()}
    largest = sizes["d0"]
    assert largest == max(sizes.values())
    # the limit is the compact JSON text of the parameters, $defs included, to the byte
    tools, session, _ = tools_from_openapi(spec, limits=Limits(max_tool_schema_bytes=largest))
    session.close()
    assert len(tools) == 3
    with pytest.raises(OpenAPIError, match=rf"operation POST /d0 \(d0\): its parameters schema "
                       rf"is more than {largest - 1} bytes"):
        tools_from_openapi(spec, limits=Limits(max_tool_schema_bytes=largest - 1))
    # strict=False skips just that operation
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(
            spec, strict=False, limits={"max-tool-schema-bytes": largest - 1})
        assert sorted(t.name for t in tools) == ["d1", "d2"]


def test_shared_objects_in_a_dict_spec_cannot_blow_up_the_conversion() -> None:
    # a dict built in Python (or by yaml.safe_load) may share objects: six levels of nine
    # shared subschemas are 600,000 schema objects once converted
    node: dict = {"type": "string"}
    for _ in range(6):
        node = {"type": "object", "properties": {f"p{j}": node for j in range(9)}}
    spec = _spec(**{"/x": _post_body(node), "/y": {"get": {"operationId": "y", "responses": {}}}})
    started = time.monotonic()
    with pytest.raises(OpenAPIError, match=r"POST /x.*its schema has more than 524288 nodes.*"
                       r"Limits\.max_tool_schema_bytes"):
        tools_from_openapi(spec)
    with ToolRegistry() as registry:
        assert [t.name for t in registry.register_from_openapi(spec, strict=False)] == ["y"]
    assert time.monotonic() - started < 30


def _schemas_spec(schemas: dict, *roots: str) -> dict:
    spec = _spec(**{f"/{r.lower()}": _post_body({"$ref": f"#/components/schemas/{r}"})
                    for r in roots})
    for root, item in zip(roots, spec["paths"].values(), strict=True):
        item["post"]["operationId"] = f"send{root}"
    spec["components"] = {"schemas": schemas}
    return spec


def test_a_schema_made_only_of_a_ref_cycle_is_refused() -> None:
    ref = "#/components/schemas/"
    two = {"A": {"$ref": f"{ref}B"}, "B": {"$ref": f"{ref}A"}, "Ok": {"type": "string"}}
    with pytest.raises(OpenAPIError, match=(
            r"POST /a \(sendA\): \$ref cycle with no schema in it: #/components/schemas/A -> "
            r"#/components/schemas/B -> #/components/schemas/A .*fix the references.*strict=False")):
        tools_from_openapi(_schemas_spec(two, "A"))
    # every member of the cycle, and what leads into it, is refused; the rest registers
    two["Alias"] = {"$ref": f"{ref}A", "description": "leads into the cycle"}
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(
            _schemas_spec(two, "A", "B", "Alias", "Ok"), strict=False)
        assert [t.name for t in tools] == ["sendOk"]
        sent = json.dumps(registry.get_schemas(api_format="anthropic"))
        assert '"#/$defs/Ok"' in sent and '"#/$defs/A"' not in sent and '"#/$defs/B"' not in sent
    for schemas in ({"A": {"$ref": f"{ref}A"}},
                    {"A": {"$ref": f"{ref}B"}, "B": {"$ref": f"{ref}C"}, "C": {"$ref": f"{ref}A"}}):
        with pytest.raises(OpenAPIError, match=r"\$ref cycle with no schema in it: "
                           r"#/components/schemas/A -> .*#/components/schemas/A "):
            tools_from_openapi(_schemas_spec(schemas, "A"))
    # 3.1: a $ref with siblings that only annotate is still only a reference
    spec = _schemas_spec({"A": {"$ref": f"{ref}B", "title": "a"}, "B": {"$ref": f"{ref}A"}}, "A")
    spec["openapi"] = "3.1.0"
    with pytest.raises(OpenAPIError, match=r"\$ref cycle with no schema in it"):
        tools_from_openapi(spec)


def test_cycles_that_describe_values_are_kept() -> None:
    ref = "#/components/schemas/"
    # a discriminated union whose members extend the base, and a tree
    schemas = {
        "Animal": {"type": "object", "properties": {"kind": {"type": "string"}},
                   "oneOf": [{"$ref": f"{ref}Cat"}], "discriminator": {"propertyName": "kind"}},
        "Cat": {"allOf": [{"$ref": f"{ref}Animal"}, {"properties": {"lives": {"type": "integer"}}}]},
        "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {
            "$ref": f"{ref}Forest"}}}},
        "Forest": {"$ref": f"{ref}Tree"},
    }
    with ToolRegistry() as registry:
        tools = registry.register_from_openapi(_schemas_spec(schemas, "Animal", "Forest"))
        assert [t.name for t in tools] == ["sendAnimal", "sendForest"]
        assert tools[1].parameters["$defs"]["Forest"] == {"$ref": "#/$defs/Tree"}
        jsonschema.Draft202012Validator(tools[1].parameters).validate(
            {"body": {"children": [{"children": []}]}})
