"""Compiled templates kept between server starts (Jinja's bytecode cache).

Compiling the ~70 page templates took about a fifth of a server start's CPU (0.38 of ~2 CPU-s);
each start compiles them all before it answers (render.compile_templates). A start whose templates
are unchanged loads what an earlier start compiled: Jinja keys each file by the template's name and
checks the source's checksum, so an edited template is compiled again. The key of the folder covers
what Jinja's does not: its version, the interpreter's and the environment's options.

The cache holds code the server runs, so it lives only in a folder of the server's own user that
nobody else can write (0700, checked); where there is none, templates compile as before."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import jinja2
from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache
from jinja2.bccache import Bucket


class _Cache(FileSystemBytecodeCache):
    """A cache that cannot stop a start: a template it could not store (disk full) is compiled again
    next time."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def cache_root() -> Path:
    """The user's cache dir (XDG_CACHE_HOME, ~/.cache)/predictorx/templates."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("predictorx")) / "templates"


def options_key(env: Environment) -> str:
    """What the compiled code depends on besides a template's own source."""
    options = (jinja2.__version__, sys.implementation.cache_tag, env.block_start_string, env.block_end_string,
               env.variable_start_string, env.variable_end_string, env.comment_start_string,
               env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
               env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, repr(env.autoescape),
               env.optimized, sorted(env.extensions), env.is_async)
    return hashlib.sha256(repr(options).encode()).hexdigest()[:16]


def _private(path: Path) -> bool:
    """A folder of ours that only we may enter and write (made so when missing)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0


def bytecode_cache(env: Environment, root: Path | None = None) -> BytecodeCache | None:
    """A bytecode cache for `env` under `root` (default `cache_root()`), or None when no private
    folder can be had there (a read-only home, a folder others may write)."""
    folder = (root or cache_root()) / options_key(env)
    if not (_private(folder.parent) and _private(folder)):
        return None
    return _Cache(str(folder), "%s.cache")
