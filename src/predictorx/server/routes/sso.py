"""`/api/sso/…`: `predictorx login --sso` (issue 28 §1; service/oidc_device.py, oidc_signin.py).

No token exists yet, so these are public; what protects them: the device grant's handle (random,
known only to the CLI that started it, spent once), and the loopback flow's single-use code (the
browser's sign-in at /auth/oidc/{name}/cli sends it to the CLI's own loopback address; redeemed
here once for a personal token). Nothing here answers a provider's secret.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import Field

from ...service import auth, oidc_device, oidc_providers
from ..deps import get_state
from ..models import Strict
from ..state import AppState

router = APIRouter(prefix="/api/sso", tags=["sign-in"])


class DeviceStart(Strict):
    provider: str = Field(min_length=1, max_length=60)


class DevicePoll(Strict):
    handle: str = Field(min_length=20, max_length=200)


class Redeem(Strict):
    code: str = Field(min_length=5, max_length=200)


@router.get("/providers")
def providers(state: AppState = Depends(get_state)) -> list[dict]:
    """The server's OpenID providers (name, display name, whether the device grant is offered)."""
    with state.read() as s:
        rows = [(p, p.name, p.display_name) for p in oidc_providers.all_providers(s)]
    return [{"name": name, "display_name": display, "device": oidc_device.offers_device(p)} for p, name, display in rows]


@router.post("/device", status_code=201)
async def device_start(body: DeviceStart, state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(oidc_device.start, state, body.provider)


@router.post("/device/poll")
async def device_poll(body: DevicePoll, state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(oidc_device.poll, state, body.handle)


@router.post("/redeem")
def redeem(body: Redeem, state: AppState = Depends(get_state)) -> dict:
    """The loopback flow's single-use code → a personal token for the CLI (30 days)."""
    with state.write() as s:
        return {"token": auth.redeem_login_code(s, body.code.strip(), name="CLI sign-in")}
