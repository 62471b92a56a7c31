"""Web pages (server-rendered). Extended by the web module owner; kept minimal until then."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def index() -> str:
    return "<!doctype html><title>Predictor X</title><h1>Predictor X</h1>"


def mount_static(app: FastAPI) -> None:
    return None
