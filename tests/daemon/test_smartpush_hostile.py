"""daemon/smartpush.py against a forge that misbehaves (a loopback server of the test's own): what it
sends is bounded — a chunk, a chunk-size line, a ref advertisement, a report — and anything out of
bounds ends in `Unsupported` (the caller pushes with `git push`), never an exception the push
report would lose or a daemon holding what the forge chooses to send. Also: a branch name git
would refuse never reaches the wire, an oversized pack is left to git, and a discovery that failed
at the agent's end is not asked again."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from predictorx.daemon import forgepush, smartpush
from predictorx.forges.base import PushTarget


def _serve(answer: bytes):
    """A loopback server that answers every request with `answer` (then closes); its URL's root."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(answer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    return asyncio.start_server(handle, "127.0.0.1", 0)


def _target(port: int, branch: str = "agent/bot/t1") -> PushTarget:
    return PushTarget(remote_url=f"http://127.0.0.1:{port}/acme/lib.git", branch=branch, username="x",
                      token="tok-hostile-forge-1234")


def _discover_against(answer: bytes) -> BaseException | None:
    async def go() -> BaseException | None:
        server = await _serve(answer)
        port = server.sockets[0].getsockname()[1]
        try:
            await smartpush.discover(_target(port))
        except BaseException as e:  # noqa: BLE001 — the test looks at what it was
            return e
        finally:
            server.close()
        return None

    return asyncio.run(asyncio.wait_for(go(), 60))


HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-advertisement\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


@pytest.mark.parametrize("body", [
    b"%x\r\n" % (smartpush.MAX_CHUNK + 1),  # a chunk larger than it reads
    b"1" * (smartpush.MAX_HEAD + 10) + b"\r\n",  # a chunk-size line longer than its buffer
])
def test_an_out_of_bounds_chunk_is_unsupported_not_a_crash(body: bytes) -> None:
    error = _discover_against(HEAD + body)
    assert isinstance(error, smartpush.Unsupported), repr(error)
    assert "tok-hostile" not in str(error)


def _advertisement() -> bytes:
    pkt = smartpush._pkt
    zero = "0" * 40
    return (pkt(b"# service=git-receive-pack\n") + b"0000"
            + pkt(f"{zero} capabilities^{{}}\0report-status side-band-64k\n".encode()) + b"0000")


@pytest.mark.parametrize("head, after", [
    (b"Content-Length: %d\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),  # bytes past the answer
    (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", b""),  # a length beside chunks
], ids=["bytes-past-it", "length-and-chunks"])
def test_a_discovery_whose_answer_was_not_certain_leaves_its_connection(head: bytes, after: bytes) -> None:
    """The push is not sent on the discovery's connection when that answer's end was uncertain:
    what came past it would be read as the push's report."""
    body = _advertisement()
    chunked = b"Transfer-Encoding" in head
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-advertisement\r\n"
              + (head % len(body)) + b"\r\n" + (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if chunked else body)
              + after)

    async def go() -> smartpush.Session:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(answer)
            await writer.drain()
            await asyncio.sleep(3600)  # (kept open: only the client ends it)

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        try:
            session = await smartpush.discover(_target(server.sockets[0].getsockname()[1]))
            await asyncio.sleep(0)  # (what came past the answer is buffered by now, or soon)
            return session
        finally:
            server.close()

    session = asyncio.run(asyncio.wait_for(go(), 60))
    assert session.advertised.caps >= {"report-status"}
    assert session._conn is None, "the push would have read the discovery's leftovers as its report"


def test_an_endless_advertisement_is_cut_off(monkeypatch) -> None:
    monkeypatch.setattr(smartpush, "MAX_ADVERTISEMENT", 64 * 1024)  # (the bound, small enough to send here)
    chunk = b"x" * 8192
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(20)) + b"0\r\n\r\n"
    error = _discover_against(HEAD + body)
    assert isinstance(error, smartpush.Unsupported) and "ValueError" in str(error), repr(error)


@pytest.mark.parametrize("branch", ["agent/a b", "agent/a\x00report-status", "agent/x~1", "agent/a:b", "agent/a@{1}",
                                    "agent/x.lock", "agent//x", "/agent", "agent/.hidden", "agent/x\x7f", "-f"])
def test_a_branch_name_git_refuses_never_reaches_the_wire(branch: str) -> None:
    with pytest.raises(forgepush.PushError):
        forgepush.check_target(_target(1, branch))


def test_a_branch_name_git_takes_passes() -> None:
    forgepush.check_target(_target(1, "agent/coder/fix-login_2.1"))


def _repo_with_commit(root: Path, size: int) -> tuple[Path, str]:
    repo = root / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    (repo / "blob.bin").write_bytes(__import__("os").urandom(size))
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, timeout=60)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "big"],
                   check=True, timeout=60)
    tip = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                         timeout=60).stdout.strip()
    return repo, tip


def test_a_pack_over_the_bound_is_left_to_git_and_never_held_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(smartpush, "MAX_PACK", 256 * 1024)
    repo, tip = _repo_with_commit(tmp_path, 2 * 1024 * 1024)  # random bytes: the pack is as large

    async def go() -> BaseException | None:
        packer = await smartpush._Packer.start(repo / ".git")
        try:
            await packer.pack(tip, set())
        except BaseException as e:  # noqa: BLE001
            return e
        finally:
            await packer.stop()
        return None

    error = asyncio.run(asyncio.wait_for(go(), 120))
    assert isinstance(error, smartpush.Unsupported) and "larger" in str(error), repr(error)


def test_a_discovery_that_failed_at_the_agents_end_is_not_asked_again(tmp_path: Path) -> None:
    """The early discovery's failure (earlypush hands it over) goes straight to `git push`: no
    second request to a forge that just failed (a refused credential would be tried three times)."""
    repo, tip = _repo_with_commit(tmp_path, 10)
    asked: list[bytes] = []

    async def go() -> BaseException | None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            asked.append(await reader.readuntil(b"\r\n\r\n"))
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        failed: asyncio.Future = asyncio.get_running_loop().create_future()
        failed.set_result(smartpush.Unsupported("the ref discovery was answered 401"))
        try:
            await smartpush.push(repo, tip, _target(port), lease=None, is_git_dir=False, session=failed)
        except BaseException as e:  # noqa: BLE001
            return e
        finally:
            server.close()
        return None

    error = asyncio.run(asyncio.wait_for(go(), 60))
    assert isinstance(error, smartpush.Unsupported) and "401" in str(error), repr(error)
    assert asked == []


def test_a_pack_objects_past_its_time_is_left_to_git_not_an_exception_that_loses_the_report(
        tmp_path: Path, monkeypatch) -> None:
    """A TimeoutError out of the pack's making had escaped every handler (the push's report was
    lost); it is Unsupported now, and `git push` does the push."""
    monkeypatch.setattr(smartpush, "STEP_TIMEOUT", 0.0001)  # (no pack-objects answers that fast)
    repo, tip = _repo_with_commit(tmp_path, 1024 * 1024)

    async def go() -> BaseException | None:
        packer = await smartpush._Packer.start(repo / ".git")
        try:
            await packer.pack(tip, set())
        except BaseException as e:  # noqa: BLE001
            return e
        finally:
            await packer.stop()
        return None

    error = asyncio.run(asyncio.wait_for(go(), 120))
    assert isinstance(error, smartpush.Unsupported) and "longer than" in str(error), repr(error)


@pytest.mark.parametrize("interim", [b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
                                     b"HTTP/1.1 100 Continue\r\n\r\n" * 2])
def test_interim_answers_before_the_answer_are_skipped(interim: bytes) -> None:
    """A forge (or a proxy before it) may send 1xx answers first: the answer is the one after them."""
    body = _advertisement()
    answer = interim + HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)

    async def go() -> smartpush.Session:
        server = await _serve(answer)
        try:
            return await smartpush.discover(_target(server.sockets[0].getsockname()[1]))
        finally:
            server.close()

    session = asyncio.run(asyncio.wait_for(go(), 60))
    assert session.advertised.caps >= {"report-status"}


def test_endless_interim_answers_are_unsupported() -> None:
    error = _discover_against(b"HTTP/1.1 103 Early Hints\r\n\r\n" * (smartpush.MAX_INTERIM + 2) + HEAD + b"0\r\n\r\n")
    assert isinstance(error, smartpush.Unsupported), repr(error)
