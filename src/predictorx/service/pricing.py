"""What a run cost, in millionths of a US dollar (issue 27 §1), and where that figure came from:

1. the workspace's own price of the model (`model_price`: negotiated, or a local model's) —
   "override";
2. else the CLI's own figure (Claude Code's `total_cost_usd`, OpenCode's `cost`, …) — "cli";
3. else the maintained price table of `genai-prices` (its data ships inside the package and is
   read offline: nothing is fetched at run time) — "table";
4. else unknown (None): never a made-up number.
"""

from __future__ import annotations

import logging
import threading
import warnings
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.usage_schema import ModelPrice
from . import price_cache
from .price_cache import Price

log = logging.getLogger("predictorx.usage")

MICROS = 1_000_000
_lock = threading.Lock()


def micros(dollars: float | Decimal) -> int:
    return int(round(Decimal(str(dollars)) * MICROS))


def dollars(value: int | None) -> float | None:
    return None if value is None else value / MICROS


def override_of(session: Session, workspace_id: str, model: str | None) -> ModelPrice | None:
    if not model:
        return None
    return session.scalar(select(ModelPrice).where(ModelPrice.workspace_id == workspace_id, ModelPrice.model == model))


def _by_override(usage: dict[str, Any], price: Price) -> int:
    """Prices per million tokens (in micros), cache reads and writes at the input price unless set."""
    cache_read = price.cache_read_micros if price.cache_read_micros is not None else price.input_micros
    cache_write = price.cache_write_micros if price.cache_write_micros is not None else price.input_micros
    total = (usage["input_tokens"] * price.input_micros + usage["output_tokens"] * price.output_micros
             + usage["cache_read_tokens"] * cache_read + usage["cache_write_tokens"] * cache_write)
    return int(round(total / 1_000_000))


def table_price(usage: dict[str, Any]) -> int | None:
    """The price table's figure for these counts of `usage["model"]`, or None (no model, not in it)."""
    model = usage.get("model")
    if not model:
        return None
    with _lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import genai_prices  # its snapshot loads at first use (`warm`: in the background at server start)

        counts = genai_prices.Usage(
            # its input_tokens counts the cache's tokens too
            input_tokens=usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"],
            cache_read_tokens=usage["cache_read_tokens"], cache_write_tokens=usage["cache_write_tokens"],
            output_tokens=usage["output_tokens"])
        provider, _, name = model.partition("/") if "/" in model else (None, "", model)
        for ref, provider_id in ((model, None), (name, provider)):
            try:
                return micros(genai_prices.calc_price(counts, ref, provider_id=provider_id).total_price)
            except (LookupError, ValueError):
                continue
            except Exception:  # a price-table problem leaves the cost unknown, never the run lost
                log.exception("genai-prices could not price %s", model)
                return None
    return None


def warm() -> None:
    """Load the price table now, in a thread of its own as the server starts: its import and
    snapshot (tens of ms of CPU) fell inside the first priced message batch, a task's request."""
    try:
        table_price({"model": "claude-sonnet-4-5", "input_tokens": 1, "output_tokens": 1,
                     "cache_read_tokens": 0, "cache_write_tokens": 0})
    except Exception:  # the first batch priced loads it then, as it did before
        log.exception("the price table could not be loaded ahead")


def cost_of(session: Session, workspace_id: str, usage: dict[str, Any]) -> tuple[int | None, str | None]:
    """(millionths of a dollar, source) for a run's usage; (None, None) when nothing says. The
    workspace's prices come from the process's cache (service/price_cache.py): every message
    batch of a run is priced."""
    model = usage.get("model")
    override = price_cache.prices_of(session, workspace_id).get(model) if model else None
    if override is not None:
        return _by_override(usage, override), "override"
    if usage.get("cost_usd") is not None:
        return micros(usage["cost_usd"]), "cli"
    priced = table_price(usage)
    if priced is not None:
        return priced, "table"
    return None, None


# -- a workspace's own prices (`predictorx usage price …`, /api/usage/prices) -------------------

def describe_price(price: ModelPrice) -> dict[str, Any]:
    return {"model": price.model, "input": dollars(price.input_micros), "output": dollars(price.output_micros),
            "cache_read": dollars(price.cache_read_micros), "cache_write": dollars(price.cache_write_micros),
            "unit": "USD per million tokens"}


def list_prices(session: Session, workspace_id: str) -> list[dict[str, Any]]:
    rows = session.scalars(select(ModelPrice).where(ModelPrice.workspace_id == workspace_id)
                           .order_by(ModelPrice.model))
    return [describe_price(p) for p in rows]


def set_price(session: Session, workspace_id: str, model: str, input: float, output: float,
              cache_read: float | None = None, cache_write: float | None = None) -> dict[str, Any]:
    """Runs priced from now on use it; runs already priced keep their figure."""
    price = override_of(session, workspace_id, model) or ModelPrice(workspace_id=workspace_id, model=model)
    price.input_micros, price.output_micros = micros(input), micros(output)
    price.cache_read_micros = None if cache_read is None else micros(cache_read)
    price.cache_write_micros = None if cache_write is None else micros(cache_write)
    session.add(price)
    session.flush()
    return describe_price(price)


def remove_price(session: Session, workspace_id: str, model: str) -> None:
    from .errors import NotFound

    price = override_of(session, workspace_id, model)
    if price is None:
        raise NotFound(f"this workspace has no price of its own for {model!r}")
    session.delete(price)
