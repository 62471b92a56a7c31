"""Where forges (and any other caller outside) reach this server: PREDICTORX_PUBLIC_URL (behind a
proxy, or a name the forge can resolve), else the address the request came to."""

from __future__ import annotations

import os

from fastapi import Request

PUBLIC_URL_ENV = "PREDICTORX_PUBLIC_URL"


def public_base(request: Request) -> str:
    return os.environ.get(PUBLIC_URL_ENV, "").strip().rstrip("/") or str(request.base_url).rstrip("/")
