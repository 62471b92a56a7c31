"""How the daemon starts `predictorx mcp`'s front (mcp_stdio.py) in a run: `python -S <this file>
--env-file F`. It runs mcp_stdio.py as that file's own `__main__` — as `python -S mcp_stdio.py`
ran it — but from its compiled bytecode (daemon/bytecode.py), checked against the source as an
import checks it: a file started as a script is compiled again at every start, ~2 ms of CPU for
mcp_stdio.py, paid by every run before its first answer (issue 30). The loader is the interpreter's
own, already loaded at start: no package and no other module is imported here."""

if __name__ == "__main__":
    import _frozen_importlib_external as _bootstrap

    __file__ = __file__[: -len("_start.py")] + ".py"
    _code = _bootstrap.SourceFileLoader("__main__", __file__).get_code("__main__")
    if _code is None:  # (a source loader always has code; for the type checker)
        raise SystemExit(f"{__file__} has no code")
    exec(_code, globals())
