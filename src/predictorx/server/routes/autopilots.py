"""`/api/autopilots` (issue 27 §5; service/autopilot_actions.py, the use cases the CLI and the
/autopilots page call too). Members see autopilots and their history; owners and admins make,
pause, resume, remove, fire, replay them and rotate their webhook URL. The inbound webhook itself is
routes/autopilot_hooks.py."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Request

from ...service import autopilot_actions as actions
from ..deps import Caller, get_state, user_caller
from ..models import AutopilotIn, AutopilotScheduleIn
from ..publicurl import public_base
from ..state import AppState

router = APIRouter(prefix="/api", tags=["autopilots"])


def clock_now(request: Request) -> datetime:
    """The scheduler's clock: first due times and manual firings count from it."""
    return request.app.state.autopilot_scheduler.clock.now()


@router.get("/autopilots")
def list_autopilots(request: Request, caller: Caller = Depends(user_caller),
                    state: AppState = Depends(get_state)) -> list[dict]:
    return actions.list_autopilots(state, caller.workspace_id, public_base(request))


@router.post("/autopilots", status_code=201)
def create(body: AutopilotIn, request: Request, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    """The answer holds the webhook's signing secret (`signing_secret`) this once."""
    return actions.create(state, caller.workspace_id, caller.user_id, body.model_dump(), public_base(request),
                          address=caller.address, now=clock_now(request))


@router.get("/autopilots/{ref}")
def show(ref: str, request: Request, caller: Caller = Depends(user_caller),
         state: AppState = Depends(get_state)) -> dict:
    """The autopilot with its latest firings (newest first)."""
    return actions.show(state, caller.workspace_id, ref, public_base(request))


@router.patch("/autopilots/{ref}/schedule")
def reschedule(ref: str, body: AutopilotScheduleIn, request: Request, caller: Caller = Depends(user_caller),
               state: AppState = Depends(get_state)) -> dict:
    """A new cron expression and/or time zone; the next due time counts from now."""
    return actions.reschedule(state, caller.workspace_id, ref, caller.user_id, body.cron, body.timezone,
                              public_base(request), address=caller.address, now=clock_now(request))


@router.post("/autopilots/{ref}/pause")
def pause(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.pause(state, caller.workspace_id, ref, caller.user_id, address=caller.address)


@router.post("/autopilots/{ref}/resume")
def resume(ref: str, request: Request, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return actions.resume(state, caller.workspace_id, ref, caller.user_id, address=caller.address,
                          now=clock_now(request))


@router.delete("/autopilots/{ref}")
def remove(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.remove(state, caller.workspace_id, ref, caller.user_id, address=caller.address)


@router.post("/autopilots/{ref}/fire", status_code=201)
def fire(ref: str, request: Request, caller: Caller = Depends(user_caller),
         state: AppState = Depends(get_state)) -> dict:
    return actions.fire_now(state, caller.workspace_id, ref, caller.user_id, address=caller.address,
                            now=clock_now(request))


@router.post("/autopilots/{ref}/rotate-url")
def rotate_url(ref: str, request: Request, caller: Caller = Depends(user_caller),
               state: AppState = Depends(get_state)) -> dict:
    """A new webhook URL and signing secret (in this answer only); the old URL answers 404."""
    return actions.rotate_url(state, caller.workspace_id, ref, caller.user_id, public_base(request),
                              address=caller.address)


@router.post("/autopilot-firings/{firing_id}/replay", status_code=201)
def replay(firing_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.replay(state, caller.workspace_id, firing_id, caller.user_id, address=caller.address)


@router.get("/autopilot-scheduler")
def scheduler(request: Request, caller: Caller = Depends(user_caller)) -> dict:
    """This server process's scheduler: when it last looked at its clock (which clock), how many
    slots it fired. Behind a proxy, the answer is one replica's."""
    return request.app.state.autopilot_scheduler.describe()
