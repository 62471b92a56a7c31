"""secretmask (issue 28 §2): a run's secrets never written as they are, whichever way they come —
a secret cut across two writes of a raw log, one inside another, strings deep in a message, a
record of the daemon's log (its arguments and its traceback)."""

from __future__ import annotations

import io
import logging

from predictorx.secretmask import MASK, LogMasking, Masker, MaskingWriter, drop, hold

SECRET = "sk-abcdef0123456789"


def test_a_secret_split_across_writes_is_masked_whole():
    for cut in range(1, len(SECRET)):
        raw = io.BytesIO()
        writer = MaskingWriter(raw, Masker([SECRET]))
        writer.write(b"key=" + SECRET[:cut].encode())
        writer.write(SECRET[cut:].encode() + b" end; and a near miss sk-abc")
        writer.close()
        assert raw.getvalue() == f"key={MASK} end; and a near miss sk-abc".encode(), cut


def test_nested_strings_keys_and_longest_first():
    masker = Masker([SECRET, SECRET[:8]])
    assert masker.any({"a": [f"x{SECRET}y", {SECRET: 1}], "n": 3}) == {"a": [f"x{MASK}y", {MASK: 1}], "n": 3}
    assert masker.text(SECRET[:8] + "!") == MASK + "!"
    assert not Masker([]) and Masker([]).any({"k": SECRET}) == {"k": SECRET}


def test_the_daemon_log_masks_held_secrets_until_dropped():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(LogMasking())
    log = logging.getLogger("test.secretmask")
    log.addHandler(handler)
    log.propagate = False
    try:
        hold("t1", Masker([SECRET]))
        log.warning("could not read line: %s", f"token {SECRET}")
        try:
            raise ValueError(SECRET)
        except ValueError:
            log.exception("failed")
        drop("t1")
        log.warning("after: %s", "sk-other")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert SECRET not in text and f"token {MASK}" in text and f"ValueError: {MASK}" in text and "sk-other" in text
