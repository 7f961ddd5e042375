"""The schema converter on arbitrary input: whatever comes in, valid JSON Schema comes out."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import jsonschema_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolregistry import ToolRegistry
from toolregistry.formats import API_FORMATS, BUILTIN
from toolregistry_openapi import tools_from_openapi

_KEYS = ["type", "nullable", "x-nullable", "properties", "items", "additionalProperties",
         "allOf", "anyOf", "oneOf", "not", "required", "enum", "format", "pattern",
         "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
         "maxItems", "multipleOf", "default", "example", "examples", "description", "title",
         "discriminator", "xml", "x-extra", "readOnly", "const", "uniqueItems", "$defs",
         "patternProperties", "prefixItems", "dependentRequired"]
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2),
                     st.sampled_from(["string", "integer", "object", "array", "null", "file",
                                      "bogus", "date-time", "a"]))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from([*_KEYS, "p", "q"]), inner, max_size=4)),
    max_leaves=25,
)
_schemas = st.dictionaries(st.sampled_from(_KEYS), _values, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_schemas, version=st.sampled_from(["2.0", "3.0.3", "3.1.0"]))
def test_any_schema_converts_to_valid_json_schema(schema, version):
    if version == "2.0":
        spec = {"swagger": "2.0", "info": {"title": "f", "version": "1"}, "paths": {"/x": {"post": {
            "operationId": "op", "parameters": [{"name": "b", "in": "body", "schema": schema}],
            "responses": {}}}}}
    else:
        spec = {"openapi": version, "info": {"title": "f", "version": "1"}, "paths": {"/x": {"post": {
            "operationId": "op", "requestBody": {"content": {"application/json": {"schema": schema}}},
            "responses": {}}}}}
    tools, session, _ = tools_from_openapi(spec)
    session.close()
    jsonschema.Draft202012Validator.check_schema(tools[0].parameters)
    with ToolRegistry() as registry:
        registry.register_tools(tools)
        for fmt in API_FORMATS:
            for entry in registry.get_schemas(api_format=fmt):
                params = BUILTIN.get(fmt).read_definition(entry).parameters
                if params is not None:
                    jsonschema_rs.meta.validate(params)


def test_importing_the_plugin_imports_no_http_or_yaml():
    code = ("import sys, toolregistry, toolregistry_openapi, toolregistry_openapi._plugin; "
            "print(sorted(m for m in ('httpx', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
