"""A run's usage in one shape, whatever CLI reported it (issue 27 §1).

Every adapter keeps what its CLI says in `StreamState.usage`, keys as the CLI names them; this
module turns that into the one form the server stores:

``{"model": str | None, "input_tokens": int, "output_tokens": int, "cache_read_tokens": int,
"cache_write_tokens": int, "reasoning_tokens": int, "cost_usd": float | None}``

`input_tokens` counts only the input read fresh (neither from nor into the cache), so the total
is the sum of the four counts (reasoning is part of the output). `cost_usd` is the CLI's own
figure where it gives one in US dollars (Claude Code's `total_cost_usd`, OpenCode's `cost`, an ACP
agent's `cost` in USD), else None: the server then prices the tokens (service/pricing.py) or says
"unknown" — a run is never given a made-up cost.

The forms read here:

- Claude Code (the result event, and each assistant message's `usage` while it runs):
  ``input_tokens`` (fresh), ``cache_creation_input_tokens``, ``cache_read_input_tokens``,
  ``output_tokens``, ``total_cost_usd``, ``modelUsage: {model: {…, costUSD}}``.
- Codex (`turn.completed`, summed): ``input_tokens`` (cached included), ``cached_input_tokens``,
  ``output_tokens`` (reasoning included), ``reasoning_output_tokens``.
- Gemini CLI (the result's `stats`): ``input_tokens`` (cached included), ``cached``,
  ``output_tokens``, ``models: {model: {…}}``.
- OpenCode and ACP agents (summed by their adapters): ``input_tokens``, ``cache_read_tokens``,
  ``cache_write_tokens``, ``output_tokens``, ``reasoning_tokens``, ``cost`` (+ ``currency``).
"""

from __future__ import annotations

from typing import Any

COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return 0
    return int(min(value, 10**13))


def _cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(min(value, 10**6))


def _main_model(models: Any) -> str | None:
    """The model that did most of the work, from a per-model breakdown."""
    if not isinstance(models, dict) or not models:
        return None

    def weight(item: tuple[str, Any]) -> float:
        figures = item[1] if isinstance(item[1], dict) else {}
        return float(figures.get("costUSD") or 0) * 1e9 + sum(
            _int(figures.get(k)) for k in ("inputTokens", "outputTokens", "input_tokens", "output_tokens"))

    return str(max(models.items(), key=weight)[0])[:200]


def normalize(raw: dict[str, Any] | None, model: str | None = None) -> dict[str, Any] | None:
    """`raw` (a CLI's usage, as its adapter kept it) in the stored form; None when it says nothing."""
    if not raw:
        return None
    out: dict[str, Any]
    if "cached_input_tokens" in raw or "reasoning_output_tokens" in raw:  # Codex
        cached = _int(raw.get("cached_input_tokens"))
        out = {"input_tokens": max(_int(raw.get("input_tokens")) - cached, 0), "cache_read_tokens": cached,
               "cache_write_tokens": _int(raw.get("cache_write_input_tokens")),
               "output_tokens": _int(raw.get("output_tokens")),
               "reasoning_tokens": _int(raw.get("reasoning_output_tokens")), "cost_usd": None}
    elif "cached" in raw or "models" in raw:  # Gemini CLI's stats
        cached = _int(raw.get("cached"))
        fresh = raw.get("input") if "input" in raw else _int(raw.get("input_tokens")) - cached
        out = {"input_tokens": max(_int(fresh), 0), "cache_read_tokens": cached, "cache_write_tokens": 0,
               "output_tokens": _int(raw.get("output_tokens")), "reasoning_tokens": _int(raw.get("thoughts")),
               "cost_usd": None}
        model = _main_model(raw.get("models")) or model
    elif any(k in raw for k in ("cache_creation_input_tokens", "cache_read_input_tokens", "total_cost_usd",
                                "modelUsage")):  # Claude Code
        details: dict[str, Any] = raw["output_tokens_details"] if isinstance(raw.get("output_tokens_details"), dict) else {}
        out = {"input_tokens": _int(raw.get("input_tokens")),
               "cache_read_tokens": _int(raw.get("cache_read_input_tokens")),
               "cache_write_tokens": _int(raw.get("cache_creation_input_tokens")),
               "output_tokens": _int(raw.get("output_tokens")),
               "reasoning_tokens": _int(details.get("thinking_tokens")),
               "cost_usd": _cost(raw.get("total_cost_usd"))}
        model = _main_model(raw.get("modelUsage")) or model
    else:  # OpenCode, ACP: already in this shape
        out = {k: _int(raw.get(k)) for k in COUNTS}
        cost = _cost(raw.get("cost"))
        if raw.get("currency") not in (None, "USD", "usd"):
            cost = None  # another currency: priced from the tokens instead
        # OpenCode says 0 for a model it has no price for: no figure, not a free run.
        out["cost_usd"] = cost if cost else None
    if not any(out[k] for k in COUNTS) and out["cost_usd"] is None:
        return None
    out["model"] = str(model)[:200] if model else None
    return out


def add_claude_message(event: dict[str, Any], state: Any) -> None:
    """Claude Code's assistant event: its message's `usage`, counted once per message id (every
    content block of one message repeats it) — the run's usage while it goes on. The result event
    replaces the sum with the run's own totals."""
    message: dict[str, Any] = event["message"] if isinstance(event.get("message"), dict) else {}
    usage, message_id = message.get("usage"), message.get("id")
    if isinstance(message.get("model"), str):
        state.model = message["model"]
    if not isinstance(usage, dict) or not message_id:
        return
    seen = state.scratch.setdefault("usage_messages", set())
    if message_id in seen:
        return
    seen.add(message_id)
    state.add_usage({k: usage.get(k, 0) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                    "cache_read_input_tokens")})


def set_claude_result(event: dict[str, Any], state: Any) -> None:
    """Claude Code's result event: the run's totals and its own cost."""
    usage = dict(event.get("usage") or {})
    usage.update({k: event[k] for k in ("total_cost_usd", "duration_ms", "duration_api_ms", "num_turns",
                                         "modelUsage") if k in event})
    state.usage = usage or None


#: The system message an adapter's run says its usage with (the runner takes it off the transcript
#: and sends it beside the messages: daemon/uploader.py).
USAGE_EVENT = "usage"


def usage_news(state: Any, configured_model: str | None) -> dict[str, Any] | None:
    """The run's usage in the stored form if it changed since it was last said, else None."""
    now = normalize(state.usage, state.model or configured_model)
    if now is None or now == state.scratch.get("usage_said"):
        return None
    state.scratch["usage_said"] = now
    return now
