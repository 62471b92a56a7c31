"""Masking an agent's secrets in everything the daemon keeps or sends (issue 28 §2).

A run's secrets (service/agentenv.py delivers them in its claim) go into the agent's environment
only. Whatever the agent prints may hold them; before any of it leaves the agent's process for a
message, a result, an error, the raw logs on disk or the daemon's own log, every value is replaced
by MASK. `Masker` is one run's; `LogMasking` is the daemon's logging filter over every run's
secrets still held (`hold` / `drop`); `MaskingWriter` masks a byte stream written in chunks, a
secret cut across two chunks included.

Pure: no I/O of its own, no imports from the rest of Predictor X (the daemon and agents/ use it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from .protocol import EnvVar

MASK = "••••••"


class Masker:
    def __init__(self, secrets: list[str] | tuple[str, ...] = ()):
        # Longest first: a secret that contains another is masked whole.
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._bytes = tuple(s.encode() for s in self.secrets)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            if secret in value:
                value = value.replace(secret, MASK.encode())
        return value

    def any(self, value: Any) -> Any:
        """Strings inside dicts and lists (keys too), masked; anything else as it is."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.any(k): self.any(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.any(v) for v in value]
        return value

    def held_back(self, data: bytes) -> int:
        """How many bytes at the end of `data` could be the start of a secret (kept for the next chunk)."""
        longest = 0
        for secret in self._bytes:
            for n in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:n]):
                    longest = n
                    break
        return longest


class MaskingWriter:
    """A binary log file's writer that never writes a secret, even one split across writes."""

    def __init__(self, raw: BinaryIO, masker: Masker):
        self.raw = raw
        self.masker = masker
        self._pending = b""

    def write(self, chunk: bytes) -> int:
        data = self._pending + chunk
        keep = self.masker.held_back(data)
        out, self._pending = (data[:-keep], data[-keep:]) if keep else (data, b"")
        self.raw.write(self.masker.data(out))
        return len(chunk)

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        if self._pending:
            self.raw.write(self.masker.data(self._pending))
            self._pending = b""
        self.raw.flush()


_held: dict[str, Masker] = {}
_lock = threading.Lock()


def hold(run_id: str, masker: Masker) -> None:
    """A run's secrets are in this process from now on: the log filter masks them."""
    if masker:
        with _lock:
            _held[run_id] = masker


def drop(run_id: str) -> Masker:
    """The run is over: the log filter lets go of its secrets. An empty masker, for its place."""
    with _lock:
        _held.pop(run_id, None)
    return Masker()


def from_claim(delivered: Iterable[EnvVar], run_id: str) -> tuple[dict[str, str], Masker]:
    """A claim's variables (service/agentenv.py `for_claim`): (name → value, the masker of its
    secrets), held for the log filter until `drop(run_id)`."""
    delivered = list(delivered)
    masker = Masker([v.value for v in delivered if v.secret])
    hold(run_id, masker)
    return {v.name: v.value for v in delivered}, masker


def mask_held(text: str) -> str:
    with _lock:
        maskers = list(_held.values())
    for masker in maskers:
        text = masker.text(text)
    return text


class LogMasking(logging.Filter):
    """On the daemon's log handlers: a record that would show a held secret shows MASK instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _held:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 — a broken record is logging's to report
            return True
        masked = mask_held(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            if mask_held(text) != text:
                record.exc_text, record.exc_info = mask_held(text), None
        return True


def install_log_masking(logger: logging.Logger | None = None) -> None:
    """Put LogMasking on every handler of `logger` (the root logger): records of child loggers pass there."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, LogMasking) for f in handler.filters):
            handler.addFilter(LogMasking())
