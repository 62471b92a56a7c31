"""Compiled templates kept between server starts (server/web/templatecache.py): a start with
unchanged templates compiles none, an edited one is compiled again, the cache is private."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from jinja2 import Environment, FileSystemLoader

from predictorx.server.web import templatecache
from predictorx.server.web.render import TEMPLATES_DIR


class CountingEnvironment(Environment):
    """An environment that counts the templates it compiles from source."""

    compiled = 0

    def compile(self, *args, **kwargs):  # type: ignore[override]
        type(self).compiled += 1
        return super().compile(*args, **kwargs)


def _env(templates: Path, cache_root: Path, **options) -> Environment:
    CountingEnvironment.compiled = 0
    env = CountingEnvironment(loader=FileSystemLoader(str(templates)), autoescape=True, **options)
    env.bytecode_cache = templatecache.bytecode_cache(env, cache_root)
    return env


def test_a_second_start_loads_what_the_first_compiled_and_an_edited_template_is_compiled_again(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "a.html").write_text("<p>{{ name }}</p>")
    (templates / "b.html").write_text("<b>{{ name }}</b>")
    cache = tmp_path / "cache"

    first = _env(templates, cache)
    assert [first.get_template(n).render(name="<x>") for n in ("a.html", "b.html")] == ["<p>&lt;x&gt;</p>",
                                                                                      "<b>&lt;x&gt;</b>"]
    assert CountingEnvironment.compiled == 2

    second = _env(templates, cache)  # a new process would start so: nothing compiled, same answers
    assert [second.get_template(n).render(name="<x>") for n in ("a.html", "b.html")] == ["<p>&lt;x&gt;</p>",
                                                                                       "<b>&lt;x&gt;</b>"]
    assert CountingEnvironment.compiled == 0

    (templates / "a.html").write_text("<p>edited {{ name }}</p>")
    third = _env(templates, cache)
    assert third.get_template("a.html").render(name="y") == "<p>edited y</p>"
    assert third.get_template("b.html").render(name="y") == "<b>y</b>"
    assert CountingEnvironment.compiled == 1  # the edited one alone


def test_other_options_use_another_folder(tmp_path):
    plain = Environment(autoescape=True)
    trimmed = Environment(autoescape=True, trim_blocks=True)
    assert templatecache.options_key(plain) != templatecache.options_key(trimmed)
    assert templatecache.options_key(plain) == templatecache.options_key(Environment(autoescape=True))


def test_the_cache_is_private_and_one_others_may_write_is_not_used(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "a.html").write_text("{{ 1 + 1 }}")
    cache = tmp_path / "cache"
    env = _env(templates, cache)
    assert env.get_template("a.html").render() == "2"
    folder = cache / templatecache.options_key(env)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(cache.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600

    os.chmod(folder, 0o777)  # someone else could plant code here
    assert templatecache.bytecode_cache(env, cache) is None
    os.chmod(folder, 0o700)
    (cache / "blocked").write_text("not a folder")
    assert templatecache.bytecode_cache(env, cache / "blocked") is None  # no folder to be had: compile as before


def test_a_server_start_fills_the_cache_in_the_users_cache_dir(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    code = "from predictorx.server.web.render import compile_templates; print(compile_templates())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    folders = list((tmp_path / "xdg-cache" / "predictorx" / "templates").iterdir())
    assert len(folders) == 1
    assert len(list(folders[0].glob("*.cache"))) == int(out.stdout) == len(list(TEMPLATES_DIR.glob("*.html")))
