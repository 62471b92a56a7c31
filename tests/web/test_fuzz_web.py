"""Schemathesis over the web routes (R-SEC-3, issue 8): every page and form, signed in, fuzzed with
schema-valid and invalid input whose text includes lone surrogates and NUL, answers below 500.

The pages are not in the API's OpenAPI document, so one is made here from the app's own routes;
form bodies carry every field name any page reads (found in the source, see fuzz_support).
"""

from __future__ import annotations

import copy
import time

import pytest
import schemathesis
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from starlette.testclient import TestClient

from fuzz_support import EXAMPLES, NASTY_FORMAT, form_fields
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.server.web.render import SERVER_DIR
from predictorx.store.db import Database

ORIGIN = "http://testserver"


def web_schema(app, *, nasty: bool = True) -> dict:
    routes = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and not context.include_in_schema and not route.path.startswith("/api"):
            shown = copy.copy(route)
            shown.include_in_schema = True
            routes.append(shown)
    schema = get_openapi(title="Predictor X pages", version="1", routes=routes)
    schema["servers"] = [{"url": ORIGIN}]
    form = {"type": "object", "additionalProperties": False,
            "properties": {f: {"type": "string", **({"format": NASTY_FORMAT} if nasty else {})}
                           for f in form_fields(SERVER_DIR / "web")}}
    for item in schema["paths"].values():
        if "post" in item:
            item["post"]["requestBody"] = {"content": {"application/x-www-form-urlencoded": {"schema": form}}}
    return schema


@pytest.fixture(scope="module")
def web_target(tmp_path_factory):
    db = Database(f"sqlite:///{tmp_path_factory.mktemp('fuzzweb') / 'px.db'}")
    db.migrate()
    token = bootstrap(db, ORIGIN)
    app = create_app(db, migrate=False)
    with TestClient(app) as client:
        h = {"Authorization": f"Bearer {token}"}
        client.post("/api/projects", headers=h, json={"title": "seed", "resources": [
            {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/o/r"}}]})
        client.post("/api/agents", headers=h, json={"name": "seed-agent", "provider": "claude"})
        client.post("/api/issues", headers=h, json={"title": "seed issue", "assignee": "seed-agent"})
        yield app, token
    db.dispose()


@pytest.mark.timeout(1800)  # many operations × examples; measured in the report
def test_no_page_or_form_answers_5xx(web_target):
    app, token = web_target
    # Schema-valid cases carry the nasty strings; invalid ones are checked by a validator that
    # cannot hold a lone surrogate, so they draw ordinary text.
    schemas = {schemathesis.GenerationMode.POSITIVE: schemathesis.openapi.from_dict(web_schema(app)),
               schemathesis.GenerationMode.NEGATIVE: schemathesis.openapi.from_dict(web_schema(app, nasty=False))}
    headers = {"Origin": ORIGIN, "Cookie": f"px_token={token}"}
    failures, calls, started, spent = [], {}, time.monotonic(), [0.0]
    operations = {mode: [r.ok() for r in schema.get_all_operations()] for mode, schema in schemas.items()}
    assert len(operations[schemathesis.GenerationMode.POSITIVE]) >= 20
    for mode, ops in operations.items():
        for op in ops:
            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=max(1, EXAMPLES // 2), deadline=None, suppress_health_check=list(HealthCheck),
                      database=None)
            def probe(case):
                t0 = time.monotonic()
                response = case.call(app=app, base_url=ORIGIN, headers=headers)
                spent[0] += time.monotonic() - t0
                calls[case.operation.label] = calls.get(case.operation.label, 0) + 1
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                    f"{response.text[:200]}")
            try:
                probe()
            except Unsatisfiable:
                pass  # nothing to make invalid (an operation without parameters or body)
    assert not failures, "\n".join(failures[:20])
    thin = {label: n for label, n in calls.items() if 1 < n < EXAMPLES // 2}  # 1: nothing to vary
    assert not thin, f"operations fuzzed fewer than {EXAMPLES // 2} times: {thin}"
    print(f"web fuzz: {len(calls)} operations, {sum(calls.values())} requests, "
          f"{time.monotonic() - started:.1f} s ({spent[0]:.1f} s in requests)")
