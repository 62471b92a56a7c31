"""Path rules R-LD-1 / R-LD-2: on the real file system and, as properties, on the pure rules."""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from predictorx.resources import local_directory_paths as paths
from predictorx.resources.local_directory_paths import (
    PathRuleError, check_local_directory, posix_location_violation, windows_location_violation,
)

HOME = "/home/me"
is_root = os.geteuid() == 0


def refused(path: str, home: Path | str = HOME) -> PathRuleError:
    with pytest.raises(PathRuleError) as e:
        check_local_directory(path, home=Path(home))
    return e.value


# --- the real file system ------------------------------------------------------------------------

def test_a_project_folder_is_allowed_and_returned_real(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    assert check_local_directory(str(tmp_path / "code"), home=Path(HOME)) == Path(os.path.realpath(tmp_path / "code"))


def test_a_symlink_is_resolved_first(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert check_local_directory(str(tmp_path / "link"), home=Path(HOME)) == Path(os.path.realpath(tmp_path / "real"))


@pytest.mark.parametrize("target,words", [
    ("/etc", "system directory (/etc and everything under it)"),
    ("/usr/lib", "system directory (/usr and everything under it)"),
    ("/tmp", "system or profile root (/tmp)"),
    ("/", "system or profile root (/)"),
])
def test_a_symlink_into_a_refused_place_is_refused(tmp_path: Path, target: str, words: str) -> None:
    (tmp_path / "innocent").symlink_to(target)
    e = refused(str(tmp_path / "innocent"))
    assert words in str(e) and f"really {os.path.realpath(target)}" in str(e)


@pytest.mark.parametrize("path,rule", [
    ("/", paths.ROOT), ("/home", paths.ROOT), ("/root", paths.ROOT), ("/tmp", paths.ROOT),
    ("/opt", paths.ROOT), ("/etc", paths.SYSTEM_TREE), ("/var", paths.SYSTEM_TREE),
    ("/usr", paths.SYSTEM_TREE), ("/etc/ssl", paths.SYSTEM_TREE), ("/proc/self", paths.SYSTEM_TREE),
    ("/sys/kernel", paths.SYSTEM_TREE), ("/dev/shm", paths.SYSTEM_TREE), ("/var/lib", paths.SYSTEM_TREE),
    ("/private/tmp", paths.ROOT), ("/Users", paths.ROOT), ("/Users/Shared", paths.ROOT),
])
def test_system_and_profile_roots_are_refused(path: str, rule: str) -> None:
    assert refused(path).rule == rule


def test_home_itself_is_refused_but_folders_in_it_are_not(tmp_path: Path) -> None:
    home = tmp_path / "me"
    (home / "code").mkdir(parents=True)
    assert refused(str(home), home).rule == paths.HOME
    assert check_local_directory(str(home / "code"), home=home) == Path(os.path.realpath(home / "code"))
    assert refused(str(tmp_path), home).rule == paths.ROOT  # an ancestor of the home


def test_the_temporary_directory_itself_is_refused_but_not_folders_in_it(tmp_path: Path) -> None:
    assert refused(tempfile.gettempdir()).rule == paths.ROOT
    assert check_local_directory(str(tmp_path), home=Path(HOME))


def test_relative_missing_file_and_special_paths(tmp_path: Path) -> None:
    assert refused("code/project").rule == paths.ABSOLUTE
    assert refused("").rule == paths.ABSOLUTE
    assert refused(str(tmp_path / "nope")).rule == paths.EXISTS
    (tmp_path / "f.txt").write_text("x")
    assert "is a file, not a directory" in str(refused(str(tmp_path / "f.txt")))
    (tmp_path / "to_file").symlink_to(tmp_path / "f.txt")
    assert "is a symlink to a file" in str(refused(str(tmp_path / "to_file")))
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    assert "does not exist" in str(refused(str(tmp_path / "dangling")))
    os.mkfifo(tmp_path / "pipe")
    assert refused(str(tmp_path / "pipe")).rule == paths.DIRECTORY
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert refused(str(tmp_path / "loop")).rule == paths.EXISTS


@pytest.mark.skipif(not is_root, reason="making a device node needs root")
def test_a_device_is_not_a_directory(tmp_path: Path) -> None:
    os.mknod(tmp_path / "null", 0o600 | 0o020000, os.makedev(1, 3))
    assert "is a device" in str(refused(str(tmp_path / "null")))


@pytest.mark.skipif(is_root, reason="root can read and write everything; the test below runs it as nobody")
def test_an_unwritable_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o500)
    assert refused(str(tmp_path / "ro")).rule == paths.ACCESS


UNPRIVILEGED_CHECK = """
import sys
source = sys.stdin.read()
module = {"__name__": "local_directory_paths"}
exec(compile(source, "local_directory_paths.py", "exec"), module)
try:
    module["check_local_directory"](sys.argv[1])
    print("allowed")
except module["PathRuleError"] as e:
    print(e.rule)
"""


@pytest.mark.skipif(not is_root, reason="drops root to nobody with setpriv; as a user the test above covers it")
def test_an_unwritable_folder_is_refused_for_an_unprivileged_user() -> None:
    """R-LD-1 (access): CI runs as root, who may write anywhere, so the rule is checked as `nobody`.
    The rules are pure standard library, so their source is run by the system Python on stdin
    (nobody cannot read the checkout or its venv)."""
    import shutil
    import subprocess

    setpriv, python = shutil.which("setpriv"), shutil.which("python3", path="/usr/bin:/bin")
    assert setpriv and python, "setpriv (util-linux) and /usr/bin/python3 are needed to drop root"
    base = Path(tempfile.mkdtemp(prefix="px-ld-access-"))
    try:
        base.chmod(0o755)
        (base / "ro").mkdir(mode=0o555)
        (base / "rw").mkdir(mode=0o777)
        (base / "rw").chmod(0o777)
        source = Path(paths.__file__).read_text()
        answers = []
        for folder in ("ro", "rw"):
            res = subprocess.run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-I", "-c",
                                  UNPRIVILEGED_CHECK, str(base / folder)], input=source, capture_output=True, text=True,
                                 timeout=30, env={"HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})
            assert res.returncode == 0, res.stderr
            answers.append(res.stdout.strip())
        assert answers == [paths.ACCESS, "allowed"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_refused_folder_is_left_untouched(tmp_path: Path) -> None:
    home = tmp_path / "me"
    home.mkdir()
    before = sorted(os.listdir(home)), home.stat().st_mtime_ns
    refused(str(home), home)
    assert (sorted(os.listdir(home)), home.stat().st_mtime_ns) == before


# --- the pure rules --------------------------------------------------------------------------------

def test_other_users_homes() -> None:
    assert posix_location_violation("/home/other/code", HOME)[0] == paths.OTHER_HOME
    assert posix_location_violation("/home/me/code", HOME) is None
    assert posix_location_violation("/home/me2/code", HOME)[0] == paths.OTHER_HOME  # not a prefix match
    assert posix_location_violation("/root/code", HOME)[0] == paths.OTHER_HOME
    assert posix_location_violation("/Users/bob/code", "/Users/me")[0] == paths.OTHER_HOME
    assert posix_location_violation("/Users/Shared/game", "/Users/me") is None
    # root's home is /root: its own folders are fine, every /home/<name> is someone else's
    assert posix_location_violation("/root/code", "/root") is None
    assert posix_location_violation("/home/alice/code", "/root")[0] == paths.OTHER_HOME


def test_var_keeps_user_data_places_open() -> None:
    for ok in ("/var/tmp/x", "/var/folders/ab/cd/T/x", "/var/www/site", "/private/var/folders/a/b/T/p"):
        assert posix_location_violation(ok, HOME) is None, ok
    for bad in ("/var/lib/app", "/var/log", "/var/tmp", "/var/www", "/private/var/db"):
        assert posix_location_violation(bad, HOME) is not None, bad


def test_home_under_a_system_tree_is_still_yours() -> None:
    assert posix_location_violation("/var/lib/jenkins/workspace/p", "/var/lib/jenkins") is None
    assert posix_location_violation("/var/lib/jenkins", "/var/lib/jenkins")[0] == paths.HOME
    assert posix_location_violation("/var/lib/other", "/var/lib/jenkins")[0] == paths.SYSTEM_TREE


def test_macos_is_case_insensitive() -> None:
    assert posix_location_violation("/USERS", "/Users/me", casefold=True)[0] == paths.ROOT
    assert posix_location_violation("/users/ME", "/Users/me", casefold=True)[0] == paths.HOME
    assert posix_location_violation("/users/me/Code", "/Users/me", casefold=True) is None


def test_windows_rules() -> None:
    home = r"C:\Users\Me"
    for bad, rule in [(r"C:\ ", None), ("C:\\", paths.ROOT), ("d:/", paths.ROOT), (r"C:\Users", paths.ROOT),
                      (r"C:\ProgramData", paths.ROOT), (r"C:\Program Files", paths.ROOT),
                      (r"C:\Program Files (x86)\Steam\game", paths.SYSTEM_TREE), (r"c:\windows\system32", paths.SYSTEM_TREE),
                      (r"C:\Users\me", paths.HOME), (r"C:\Users\Bob\code", paths.OTHER_HOME),
                      (r"C:\Users\Public", paths.ROOT), (r"C:\Users\Default\x", paths.SYSTEM_TREE),
                      (r"\\server\share", paths.ROOT), ("code", paths.ABSOLUTE), ("C:code", paths.ABSOLUTE),
                      (r"\\?\C:\Windows\x", paths.SYSTEM_TREE)]:
        if rule is None:
            continue
        got = windows_location_violation(bad, home)
        assert got is not None and got[0] == rule, (bad, got)
    for ok in (r"C:\Users\Me\code\game", r"D:\projects\game", r"C:\Users\Public\Documents\proj",
               r"\\server\share\proj", "C:/code/x", r"C:\Windows2\x"):
        assert windows_location_violation(ok, home) is None, ok


# --- properties ------------------------------------------------------------------------------------

segment = st.text(alphabet=string.ascii_letters + string.digits + "._- ", min_size=1, max_size=12).filter(
    lambda s: s not in (".", ".."))
segments = st.lists(segment, min_size=0, max_size=4)
system_trees = st.sampled_from([t for t in paths._POSIX_TREES if t != "/var"])


def _join(*parts: str) -> str:
    return "/" + "/".join(p.strip("/") for p in parts if p.strip("/"))


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(system_trees, segments)
def test_everything_under_a_system_tree_is_refused(tree: str, rest: list[str]) -> None:
    assert posix_location_violation(_join(tree, *rest), HOME)[0] == paths.SYSTEM_TREE


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(system_trees, st.text(alphabet="_~+=", min_size=1, max_size=3), segments)
def test_rules_are_prefix_aware(tree: str, suffix: str, rest: list[str]) -> None:
    """/etc2 is not /etc: a name that only starts like a system tree is allowed."""
    assert posix_location_violation(_join(tree + suffix, *rest), HOME) is None


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.sampled_from(["/tmp", "/home/me", "/var/tmp", "/Users/Shared", "/opt", "/srv", "/mnt"]),
       segment, segments)
def test_folders_inside_open_roots_are_allowed(root: str, first: str, rest: list[str]) -> None:
    assert posix_location_violation(_join(root, first, *rest), HOME) is None


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(segment.filter(lambda s: s != "me"), segment, segments)
def test_other_users_homes_are_refused_whatever_their_name(owner: str, first: str, rest: list[str]) -> None:
    assert posix_location_violation(_join("/home", owner, first, *rest), HOME)[0] == paths.OTHER_HOME


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.sampled_from(list(paths._POSIX_ROOTS) + list(paths._POSIX_TREES)), segments,
       st.sampled_from(["/", "//", "/./"]), st.booleans())
def test_spelling_does_not_change_the_verdict(top: str, rest: list[str], sep: str, trailing: bool) -> None:
    clean = _join(top, *rest)
    comps = [c for c in clean.split("/") if c]
    noisy = "/" + sep.join(comps) + ("/" if trailing else "")
    assert posix_location_violation(noisy, HOME) == posix_location_violation(clean, HOME)
    if clean.startswith(("/etc", "/var", "/tmp")) and clean[4:5] in ("", "/"):
        assert posix_location_violation("/private" + clean, HOME) == posix_location_violation(clean, HOME)


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.sampled_from(paths._POSIX_TREES), segments, st.randoms())
def test_case_folding_cannot_sneak_past_on_macos(tree: str, rest: list[str], rnd) -> None:
    path = _join(tree, *rest)
    if tree == "/var":
        return
    scrambled = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in path)
    assert posix_location_violation(scrambled, "/Users/me", casefold=True)[0] == paths.SYSTEM_TREE


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.sampled_from(string.ascii_uppercase), st.sampled_from(["\\", "/"]), st.booleans())
def test_every_windows_drive_root_is_refused(letter: str, sep: str, lower: bool) -> None:
    drive = letter.lower() if lower else letter
    assert windows_location_violation(f"{drive}:{sep}", r"C:\Users\Me")[0] == paths.ROOT


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.sampled_from(["Windows", "Program Files", "Program Files (x86)", "ProgramData"]), segments,
       st.randoms(), st.sampled_from(["\\", "/"]))
def test_windows_system_trees_any_case_any_slash(top: str, rest: list[str], rnd, sep: str) -> None:
    rest = [r.strip() or "x" for r in rest]
    path = sep.join(["C:", top, *rest])
    path = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in path)
    assert windows_location_violation(path, r"C:\Users\Me") is not None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(alphabet=string.ascii_letters + string.digits + "_- é", min_size=1, max_size=10)
                .filter(lambda s: s.strip() == s and s not in (".", "..")), min_size=1, max_size=3))
def test_any_folder_in_a_scratch_dir_is_allowed_through_any_symlink(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        real = Path(scratch, *names)
        real.mkdir(parents=True)
        link = Path(scratch, "link")
        link.symlink_to(real)
        want = Path(os.path.realpath(real))
        assert check_local_directory(str(real), home=Path(HOME)) == want
        assert check_local_directory(str(link), home=Path(HOME)) == want


def test_macos_temporary_directory_is_judged_by_its_real_name() -> None:
    tmp = "/private/var/folders/ab/xyz/T"
    assert posix_location_violation(tmp, "/Users/me", casefold=True, temp_dir=tmp)[0] == paths.ROOT
    assert posix_location_violation("/var/folders/ab/xyz/T", "/Users/me", temp_dir=tmp)[0] == paths.ROOT
    assert posix_location_violation(tmp + "/pytest-1/proj", "/Users/me", casefold=True, temp_dir=tmp) is None
