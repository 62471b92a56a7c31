"""Requests and responses held to a forge's own published API description.

One `ApiDescription` per document (GitHub's OpenAPI 3.0 from `@octokit/openapi`, Gitea's Swagger 2.0,
the GitLab subset derived from its API docs — see specs/README.md), loaded once per session. It
finds the operation a request names, checks its path, query and JSON body, and checks what the
stand-in answers; every mismatch is a sentence the stand-in appends to its `violations`.

Two readings of the documents, both said in specs/README.md:
- OpenAPI 3.0 `nullable: true` becomes JSON Schema's `type: [..., "null"]` (jsonschema speaks
  JSON Schema, not OpenAPI's dialect).
- Swagger 2.0 has no `nullable`; Gitea's Go structs serialise unset pointers as null, so in
  Gitea's RESPONSES a null is accepted wherever a value is described (requests stay strict).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry
from referencing.jsonschema import DRAFT4

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
SPECS = HERE / "specs"

#: Path parameters whose value may hold slashes (a ref or a branch "agent/issue-5").
GREEDY_PARAMS = {"ref", "branch", "head", "sha"}


@dataclass
class Operation:
    method: str
    template: str
    operation_id: str
    spec: dict
    pointer: str  # JSON pointer of the operation object in the document
    regex: re.Pattern
    params: list[dict] = field(default_factory=list)
    owner: "ApiDescription | None" = None
    key: str = ""  # the template without the document's own prefix: the same operation in another document


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _nullable_to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema, recursively, in place."""
    if isinstance(node, dict):
        for value in node.values():
            _nullable_to_json_schema(value)
        if node.get("nullable") is True:
            node.pop("nullable")
            if "type" in node:
                node["type"] = [node["type"], "null"] if isinstance(node["type"], str) else [*node["type"], "null"]
                if "enum" in node and None not in node["enum"]:
                    node["enum"] = [*node["enum"], None]
            else:
                inner = dict(node)
                node.clear()
                node["anyOf"] = [inner, {"type": "null"}]
    elif isinstance(node, list):
        for value in node:
            _nullable_to_json_schema(value)
    return node


def _null_allowed(validator_cls):
    """A validator class that also accepts null wherever a value is described (Swagger 2.0 answers):
    only `type` and `enum` change; the other keywords already skip a value that is not their type."""
    keywords = validator_cls.VALIDATORS

    def type_(validator, types, instance, schema):
        if instance is not None:
            yield from keywords["type"](validator, types, instance, schema)

    def enum(validator, enums, instance, schema):
        if instance is not None:
            yield from keywords["enum"](validator, enums, instance, schema)

    return jsonschema.validators.extend(validator_cls, validators={"type": type_, "enum": enum})


class ApiDescription:
    """A loaded document: operations by method, validators by JSON pointer."""

    def __init__(self, name: str, document: dict, *, dialect: str, base_path: str, error_body: dict | None = None,
                 strip_prefix: str = "", lists_described_by_item: bool = False,
                 string_path_params: tuple[str, ...] = ()):
        self.name = name
        #: Path parameters taken as strings whatever the document says (GitLab's project `id`).
        self.string_path_params = string_path_params
        self.error_body = error_body
        #: grape-swagger (GitLab) describes a list answer by its item's schema: read it as a list of those.
        self.lists_described_by_item = lists_described_by_item
        self.dialect = dialect  # "openapi3" | "swagger2"
        self.base_path = base_path.rstrip("/")
        self.document = document
        self._registry = Registry().with_resource("urn:api", DRAFT4.create_resource(document))
        self._strict = jsonschema.Draft4Validator
        self._lenient = _null_allowed(jsonschema.Draft4Validator) if dialect == "swagger2" else self._strict
        self._validators: dict[tuple[str, bool], Any] = {}
        self.operations: dict[str, list[Operation]] = {}
        self.by_id: dict[str, Operation] = {}
        for template, item in document.get("paths", {}).items():
            shared = item.get("parameters", [])
            for method, op in item.items():
                if method not in ("get", "post", "put", "patch", "delete"):
                    continue
                regex = self._template_regex(template.removeprefix(strip_prefix))
                operation = Operation(method.upper(), template, op.get("operationId", f"{method} {template}"), op,
                                      f"/paths/{_escape(template)}/{method}", regex,
                                      [self.resolve(p) for p in [*shared, *op.get("parameters", [])]], self,
                                      template.removeprefix(strip_prefix))
                self.operations.setdefault(method.upper(), []).append(operation)
                self.by_id[operation.operation_id] = operation
        for ops in self.operations.values():  # literal paths before templated ones
            ops.sort(key=lambda o: (-o.template.count("/"), o.template.count("{")))

    @staticmethod
    def _template_regex(template: str) -> re.Pattern:
        out, pos = "", 0
        for m in re.finditer(r"\{([^}]+)\}", template):
            out += re.escape(template[pos:m.start()])
            name = m.group(1)
            out += f"(?P<{re.sub(r'[^A-Za-z0-9_]', '_', name)}>{'.+' if name in GREEDY_PARAMS else '[^/]+'})"
            pos = m.end()
        return re.compile("^" + out + re.escape(template[pos:]) + "$")

    def resolve(self, node: dict) -> dict:
        """Follow an OpenAPI-level `$ref` (#/components/…, #/responses/…, #/parameters/…)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 20:
            target: Any = self.document
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node, seen = target, seen + 1
        return node

    def match(self, method: str, raw_path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation a request path (without the API prefix, still percent-encoded) names."""
        for op in self.operations.get(method.upper(), []):
            m = op.regex.match(raw_path)
            if m:
                values = {}
                for name in re.findall(r"\{([^}]+)\}", op.template):
                    values[name] = m.group(re.sub(r"[^A-Za-z0-9_]", "_", name))
                return op, values
        return None

    # -- schema checks ---------------------------------------------------------------------------
    def _check(self, schema: dict, instance: Any, *, lenient: bool, where: str) -> list[str]:
        key = (json.dumps(schema, sort_keys=True), lenient)
        validator = self._validators.get(key)
        if validator is None:
            cls = self._lenient if lenient else self._strict
            validator = cls(schema, registry=self._registry)
            self._validators[key] = validator
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        return [f"{where}: {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors[:5]]

    def _schema_ref(self, schema: dict, pointer: str) -> dict:
        """A schema in the document, referenced by pointer so its inner `$ref`s resolve."""
        return {"$ref": "urn:api#" + pointer} if pointer else schema

    def check_request(self, op: Operation, path_values: dict[str, str], query: list[tuple[str, str]],
                      body: Any, has_body: bool) -> list[str]:
        where = f"{op.method} {op.template} ({op.operation_id})"
        problems: list[str] = []
        declared = {(p.get("in"), p.get("name")): p for p in op.params}
        for name, value in path_values.items():
            param = declared.get(("path", name), {})
            if name in self.string_path_params:
                param = {**param, "type": "string", "schema": {"type": "string"}}
            problems += self._check_param(param, value, f"{where} path {name}")
        given: dict[str, list[str]] = {}
        for name, value in query:
            given.setdefault(name, []).append(value)
        for name, values in given.items():
            query_param = declared.get(("query", name)) or declared.get(("query", name.removesuffix("[]")))
            if query_param is None:
                problems.append(f"{where}: query parameter {name!r} is not in {self.name}")
                continue
            for raw in values:
                problems += self._check_param(query_param, raw, f"{where} query {name}")
        for (loc, declared_name), param in declared.items():
            if loc == "query" and param.get("required") and declared_name not in given:
                problems.append(f"{where}: required query parameter {declared_name!r} missing")
        body_schema, pointer, required = self._request_body(op)
        if has_body and body_schema is None:
            problems.append(f"{where}: a request body is not described by {self.name}")
        elif body_schema is not None:
            if not has_body:
                if required:
                    problems.append(f"{where}: the request body is required")
            else:
                problems += self._check(self._schema_ref(body_schema, pointer), body, lenient=False,
                                        where=f"{where} body")
                problems += self._unknown_fields(body_schema, body, where)
        return problems

    def _unknown_fields(self, schema: dict, body: Any, where: str) -> list[str]:
        """Top-level body fields the description does not list: the forges ignore them silently, so a
        misspelt field would go unnoticed (the same rule as for query parameters)."""
        resolved = self.resolve(schema)
        known = resolved.get("properties")
        if not isinstance(body, dict) or not isinstance(known, dict) or resolved.get("additionalProperties") is True:
            return []
        return [f"{where} body: field {name!r} is not in {self.name}" for name in body if name not in known]

    def _check_param(self, param: dict, raw: str, where: str) -> list[str]:
        schema = dict(param.get("schema") or {k: v for k, v in param.items()
                                              if k in ("type", "enum", "format", "minimum", "maximum", "items")})
        schema = self.resolve(schema) if "$ref" in schema else schema
        kind = schema.get("type")
        value: Any = raw
        try:
            if kind == "integer":
                value = int(raw)
            elif kind == "number":
                value = float(raw)
            elif kind == "boolean":
                if raw not in ("true", "false"):
                    return [f"{where}: {raw!r} is not true or false"]
                value = raw == "true"
            elif kind == "array":
                schema = schema.get("items", {})
                value = raw
        except ValueError:
            return [f"{where}: {raw!r} is not an {kind}"]
        return self._check({k: v for k, v in schema.items() if k != "format"}, value, lenient=False, where=where)

    def _request_body(self, op: Operation) -> tuple[dict | None, str, bool]:
        if self.dialect == "openapi3":
            body = op.spec.get("requestBody")
            if not body:
                return None, "", False
            pointer = op.pointer + "/requestBody"
            if "$ref" in body:
                pointer = body["$ref"].lstrip("#")
                body = self.resolve(body)
            media = body.get("content", {}).get("application/json")
            if media is None:
                return None, "", False
            return media["schema"], pointer + "/content/application~1json/schema", bool(body.get("required"))
        for i, param in enumerate(op.spec.get("parameters", [])):
            if param.get("in") == "body":
                # grape-swagger marks every body "required", even one whose fields are all optional
                # (GitLab's PUT …/merge takes none); only a body with required fields is required.
                required = bool(param.get("required")) and bool(self.resolve(param["schema"]).get("required"))
                return param["schema"], f"{op.pointer}/parameters/{i}/schema", required
        return None, "", False

    def check_response(self, op: Operation, status: int, body: Any, has_body: bool) -> list[str]:
        where = f"{op.method} {op.template} ({op.operation_id}) answer {status}"
        responses = op.spec.get("responses", {})
        key = str(status) if str(status) in responses else ("default" if "default" in responses else None)
        if key is None:
            return [f"{where}: status {status} is not described by {self.name} (described: {sorted(responses)})"]
        pointer = f"{op.pointer}/responses/{_escape(key)}"
        response = responses[key]
        if "$ref" in response:
            pointer = response["$ref"].lstrip("#")
            response = self.resolve(response)
        if self.dialect == "openapi3":
            content = response.get("content", {})
            kind = "application/json" if "application/json" in content else "text/plain"
            media = content.get(kind)
            schema, pointer = (media.get("schema"), f"{pointer}/content/{_escape(kind)}/schema") if media else (None, "")
        else:
            schema, pointer = response.get("schema"), pointer + "/schema"
        if schema is None and status >= 400 and self.error_body is not None:
            # An error status described without a body: the forge still sends its error JSON (GitHub's
            # basic-error, e.g. delete-ref's 422 "Reference does not exist"; go-swagger describes
            # Gitea's APIError {message, url} as response "headers" or as "empty"). Held to that shape.
            schema, pointer = self.error_body, ""
        if schema is None:
            return [f"{where}: a body is not described for this status"] if has_body and body not in ("", None) else []
        if not has_body:
            return [f"{where}: the description has a body for this status; the stand-in sent none"]
        described = self._schema_ref(schema, pointer)
        if self.lists_described_by_item and isinstance(body, list) and self.resolve(schema).get("type") != "array":
            described = {"type": "array", "items": described}
        return self._check(described, body, lenient=True, where=where)

    def check_schema_at(self, pointer: str, instance: Any, where: str, *, lenient: bool = False) -> list[str]:
        """`lenient`: a Go server's nulls accepted (Swagger 2.0 documents, as for their responses)."""
        return self._check({"$ref": "urn:api#" + pointer}, instance, lenient=lenient, where=where)


@lru_cache(maxsize=None)
def github_rest() -> ApiDescription:
    """api.github.com from the pinned `@octokit/openapi` (OpenAPI 3.0.3)."""
    path = NODE_MODULES / "@octokit/openapi/generated/api.github.com.json"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make test` (npm ci of tests/forgestand) first")
    document = _nullable_to_json_schema(json.loads(path.read_text()))
    return ApiDescription("GitHub's REST description (@octokit/openapi)", document, dialect="openapi3", base_path="",
                          error_body={"$ref": "urn:api#/components/schemas/basic-error"})


@lru_cache(maxsize=None)
def github_webhooks() -> ApiDescription:
    """api.github.com webhook payload schemas from the pinned `@octokit/openapi-webhooks`."""
    path = NODE_MODULES / "@octokit/openapi-webhooks/generated/api.github.com.json"
    document = _nullable_to_json_schema(json.loads(path.read_text()))
    return ApiDescription("GitHub's webhook descriptions (@octokit/openapi-webhooks)", document,
                          dialect="openapi3", base_path="")


@lru_cache(maxsize=None)
def gitea() -> ApiDescription:
    """Gitea 1.22's published swagger.v1.json (Forgejo's v1 API is the same for what we call)."""
    document = json.loads((SPECS / "gitea-1.22-swagger.v1.json").read_text())
    api_error = {"type": "object", "required": ["message"], "properties": {
        "message": {"type": "string"}, "url": {"type": "string"}, "errors": {"type": "array"}}}
    return ApiDescription("Gitea's swagger.v1.json (1.22)", document, dialect="swagger2", base_path="/api/v1",
                          error_body=api_error)


class Descriptions:
    """Several descriptions of one API: a request is checked by the first that has its operation; an
    answer by `answers` when it has the operation (GitLab: the derived one), else by the same."""

    def __init__(self, *parts: ApiDescription, answers: ApiDescription | None = None):
        self.parts = parts
        self.answers = answers
        self.name = " + ".join(p.name for p in parts)

    def match(self, method: str, raw_path: str) -> tuple[Operation, dict[str, str]] | None:
        for part in self.parts:
            found = part.match(method, raw_path)
            if found:
                return found
        return None

    def check_request(self, op: Operation, *args: Any) -> list[str]:
        assert op.owner is not None
        return op.owner.check_request(op, *args)

    def check_response(self, op: Operation, *args: Any) -> list[str]:
        assert op.owner is not None
        if self.answers is not None:
            twin = next((o for o in self.answers.operations.get(op.method, []) if o.key == op.key), None)
            if twin is not None:
                return self.answers.check_response(twin, *args)
        return op.owner.check_response(op, *args)


@lru_cache(maxsize=None)
def gitlab_published() -> ApiDescription:
    """GitLab's published openapi_v2 (Swagger 2.0), the part covering what the stand-in serves."""
    document = json.loads((SPECS / "gitlab-openapi_v2-subset.json").read_text())
    gitlab_error = {"type": "object", "properties": {"message": {}, "error": {"type": "string"}}, "minProperties": 1}
    return ApiDescription("GitLab's openapi_v2 (published, specs/gitlab-openapi_v2-subset.json)", document,
                          dialect="swagger2", base_path="/api/v4", strip_prefix="/api/v4", error_body=gitlab_error,
                          lists_described_by_item=True, string_path_params=("id",))


@lru_cache(maxsize=None)
def gitlab_derived() -> ApiDescription:
    """GitLab v4 operations its published description lacks, derived from its API docs (specs/README.md)."""
    document = json.loads((SPECS / "gitlab-v4-derived.json").read_text())
    return ApiDescription("GitLab's v4 API as derived from its docs (specs/gitlab-v4-derived.json)",
                          _nullable_to_json_schema(copy.deepcopy(document)), dialect="openapi3", base_path="/api/v4")


def gitlab() -> Descriptions:
    """GitLab v4: requests held to the published description (its parameters come from the same Grape
    declarations GitLab validates with), the derived one for the four operations it lacks; answers
    held to the derived one (the published types many answer fields wrongly: see specs/README.md)."""
    return Descriptions(gitlab_published(), gitlab_derived(), answers=gitlab_derived())
