"""The instruction-file block: inserted between markers, removed byte-exactly (R-CTX-2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from predictorx.daemon.context.block import BEGIN, END, insert_block, remove_block

BLOCK = "## Project Context\n\nThis issue belongs to the project **Demo**.\n\n## Repositories\n\n- /srv/repo.git"

# Files made of the pieces that matter: both newline styles, lone CRs, blank lines, no newline at
# the end, non-ASCII, things that look like markers but are not at a line start.
_PIECES = st.sampled_from([b"a", b"# Title", b"\n", b"\r\n", b"\r", b" ", b"\t", "é€".encode(), b"\xff\xfe",
                           b"<!-- note -->", b"x <!-- predictorx:end -->", b"x <!-- predictorx:begin"])
user_bytes = st.one_of(st.lists(_PIECES, max_size=30).map(b"".join), st.binary(max_size=200)).filter(
    lambda b: not (b.startswith(BEGIN) or b"\n" + BEGIN in b or b.startswith(END) or b"\n" + END in b))
block_text = st.text(max_size=300)

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(original=user_bytes, block=block_text)
def test_round_trip_is_byte_exact(tmp_path: Path, original: bytes, block: str) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(original)
    handle = insert_block(path, block, task_id="t1")
    assert path.read_bytes().startswith(original)
    assert remove_block(handle)
    assert path.read_bytes() == original


@_settings
@given(original=user_bytes, block=block_text, before=user_bytes, after=user_bytes)
def test_round_trip_survives_edits_elsewhere(tmp_path: Path, original: bytes, block: str,
                                             before: bytes, after: bytes) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(original)
    handle = insert_block(path, block, task_id="t1")
    path.write_bytes(before + path.read_bytes() + after)  # the person edits above and below
    assert remove_block(handle)
    assert path.read_bytes() == before + original + after


@_settings
@given(block=block_text)
def test_missing_file_is_created_then_deleted(tmp_path: Path, block: str) -> None:
    path = tmp_path / "GEMINI.md"
    path.unlink(missing_ok=True)
    handle = insert_block(path, block, task_id="t1")
    assert path.exists() and handle.created
    assert remove_block(handle)
    assert not path.exists()


def test_existing_empty_file_stays_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"")
    handle = insert_block(path, BLOCK, task_id="t1")
    assert remove_block(handle)
    assert path.exists() and path.read_bytes() == b""


def test_block_is_delimited_and_separated_from_user_text(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"# My rules\n\nBe nice.\n")
    insert_block(path, BLOCK, task_id="task-42")
    text = path.read_text()
    assert text.startswith("# My rules\n\nBe nice.\n\n<!-- predictorx:begin task=task-42")
    assert text.endswith("- /srv/repo.git\n<!-- predictorx:end -->\n")
    assert text.count("## Project Context") == 1


def test_crlf_file_gets_a_crlf_block_and_is_restored(tmp_path: Path) -> None:
    original = b"# Rules\r\n\r\nUse tabs.\r\n"
    path = tmp_path / "AGENTS.md"
    path.write_bytes(original)
    handle = insert_block(path, BLOCK, task_id="t")
    added = path.read_bytes()[len(original):]
    assert b"\r\n" in added and b"\n" not in added.replace(b"\r\n", b"")
    assert remove_block(handle)
    assert path.read_bytes() == original


def test_no_trailing_newline_is_preserved(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"last line without newline")
    handle = insert_block(path, BLOCK)
    assert remove_block(handle)
    assert path.read_bytes() == b"last line without newline"


def test_agent_edited_inside_the_block_still_removed(tmp_path: Path) -> None:
    original = b"# Mine\n"
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(original)
    handle = insert_block(path, BLOCK, task_id="t")
    edited = path.read_bytes().replace(b"**Demo**", b"**Demo** (the agent wrote here)")
    path.write_bytes(edited + b"appended by the agent\n")
    assert remove_block(handle)
    assert path.read_bytes() == original + b"appended by the agent\n"


def test_stale_block_from_a_crashed_run_is_replaced_not_duplicated(tmp_path: Path) -> None:
    original = b"# Mine\nkeep me\n"
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(original)
    insert_block(path, "old context", task_id="crashed")  # handle lost: the daemon died
    handle = insert_block(path, BLOCK, task_id="new")
    data = path.read_bytes()
    assert data.count(BEGIN) == 1 and data.count(END) == 1
    assert b"old context" not in data and b"task=new" in data
    assert remove_block(handle)
    assert path.read_bytes() == original


def test_stale_block_in_a_file_the_crashed_run_created_is_deleted_after(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    insert_block(path, "old context", task_id="crashed")
    handle = insert_block(path, BLOCK, task_id="new")
    assert remove_block(handle)
    assert not path.exists()


def test_deleted_end_marker_leaves_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"# Mine\n")
    handle = insert_block(path, BLOCK, task_id="t")
    broken = path.read_bytes().replace(END, b"")
    path.write_bytes(broken)
    assert remove_block(handle) is False
    assert path.read_bytes() == broken


def test_block_already_removed_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"# Mine\n")
    handle = insert_block(path, BLOCK, task_id="t")
    path.write_bytes(b"# Mine\n")
    assert remove_block(handle) is False
    path.unlink()
    assert remove_block(handle) is False


def test_marker_text_inside_the_content_cannot_end_the_block(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"x\n")
    handle = insert_block(path, "desc\n<!-- predictorx:end -->\nmore", task_id="t")
    assert path.read_bytes().count(END) == 1
    assert remove_block(handle)
    assert path.read_bytes() == b"x\n"


def test_symlinked_file_is_edited_through_and_link_kept(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"shared rules\n")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    handle = insert_block(tmp_path / "CLAUDE.md", BLOCK, task_id="t")
    assert handle.path == (tmp_path / "AGENTS.md").resolve()
    assert remove_block(handle)
    assert (tmp_path / "CLAUDE.md").is_symlink()
    assert (tmp_path / "AGENTS.md").read_bytes() == b"shared rules\n"


def test_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"x\n")
    os.chmod(path, 0o640)
    handle = insert_block(path, BLOCK)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    remove_block(handle)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_begin_line_without_end_is_not_guessed_at(tmp_path: Path) -> None:
    original = b"# Mine\n<!-- predictorx:begin task=old (added by Predictor X) -->\nuser text below\n"
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(original)
    handle = insert_block(path, BLOCK, task_id="new")
    assert path.read_bytes().startswith(original)
    assert remove_block(handle)
    assert path.read_bytes() == original


def test_users_own_text_mentioning_the_marker_is_not_stripped(tmp_path: Path) -> None:
    original = b"<!-- predictorx:begin is how the daemon marks its block -->\nthen\n<!-- predictorx:end -->\n"
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(original)
    handle = insert_block(path, BLOCK, task_id="t")
    assert remove_block(handle)
    assert path.read_bytes() == original
