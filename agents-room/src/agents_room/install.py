"""``agents-room install claude|codex``: register the MCP server and hooks (R-ROOM-14).

Merges into what is there, never clobbers: our MCP entry is (re)written under
its own name, our hook handlers are replaced (found by the command they run),
everything else is kept byte-for-byte in meaning. A file that does not parse is
refused, not overwritten. A ``.bak`` copy of every changed file is kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from pathlib import Path

from .harness_config import MCP_NAME, hooks_spec, mcp_entry, merge_hooks, toml_inline


def _load_json(path: Path) -> dict:
    if not path.exists() or not path.read_text().strip():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it first, agents-room will not overwrite it") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; refusing to overwrite it")
    return data


def _write(path: Path, text: str, dry_run: bool, written: list[str]) -> None:
    if dry_run:
        written.append(f"{path} (dry run)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if path.read_text() == text:
            return
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    tmp = path.with_name(path.name + ".agents-room.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    written.append(str(path))


def install(harness: str, *, scope: str = "user", project_dir: str | None = None, autonomy: str = "wake",
            rooms: list[str] | None = None, dry_run: bool = False, home: Path | None = None) -> dict:
    home = home or Path.home()
    proj = Path(project_dir or os.getcwd())
    written: list[str] = []
    if harness == "claude":
        if scope == "user":
            cfg_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
            mcp_file = (cfg_dir / ".claude.json") if os.environ.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
            settings_file = cfg_dir / "settings.json"
        else:
            mcp_file = proj / ".mcp.json"
            settings_file = proj / ".claude" / "settings.json"
        mcp = _load_json(mcp_file)
        settings = _load_json(settings_file)
        servers = mcp.get("mcpServers") if isinstance(mcp.get("mcpServers"), dict) else {}
        mcp["mcpServers"] = {**servers, MCP_NAME: mcp_entry("claude")}
        settings["hooks"] = merge_hooks(settings.get("hooks") or {}, hooks_spec("claude", autonomy=autonomy, rooms=rooms))
        _write(mcp_file, json.dumps(mcp, indent=2) + "\n", dry_run, written)
        _write(settings_file, json.dumps(settings, indent=2) + "\n", dry_run, written)
        return {"harness": "claude", "scope": scope, "written": written, "mcp_config": str(mcp_file),
                "hooks_config": str(settings_file), "autonomy": autonomy}
    if harness == "codex":
        if scope == "user":
            cdir = Path(os.environ.get("CODEX_HOME") or home / ".codex")
        else:
            cdir = proj / ".codex"
        config_file = cdir / "config.toml"
        hooks_file = cdir / "hooks.json"
        text = config_file.read_text() if config_file.exists() else ""
        new_text = merge_codex_config(text, mcp_entry("codex"), where=str(config_file))
        hooks = _load_json(hooks_file)
        hooks["hooks"] = merge_hooks(hooks.get("hooks") or {}, hooks_spec("codex", autonomy=autonomy, rooms=rooms))
        _write(config_file, new_text, dry_run, written)
        _write(hooks_file, json.dumps(hooks, indent=2) + "\n", dry_run, written)
        notes = []
        if str(autonomy).lower() in ("2", "wake"):
            notes.append("Codex has no way for a hook to start a turn in an idle chat: wake acts as hold there")
        return {"harness": "codex", "scope": scope, "written": written, "mcp_config": str(config_file),
                "hooks_config": str(hooks_file), "autonomy": autonomy, "notes": notes}
    raise ValueError(f"unknown harness {harness!r}: use claude or codex")


_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _table_name(line: str) -> str | None:
    m = _TABLE.match(line)
    return m.group(1).replace('"', "").replace("'", "").replace(" ", "") if m else None


def merge_codex_config(text: str, entry: dict, where: str = "config.toml") -> str:
    """Replace our ``[mcp_servers.agents-room]`` table (and its sub-tables), enable hooks, keep the rest.

    Raises ValueError (nothing is written) when ``text`` does not parse, or when the merge would not
    parse or would change anything that was there.
    """
    try:
        before = tomllib.loads(text) if text.strip() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{where} does not parse ({exc}); fix it first, agents-room will not overwrite it") from None
    ours = f"mcp_servers.{MCP_NAME}"
    out_lines: list[str] = []
    skipping = False
    for line in text.splitlines():
        name = _table_name(line)
        if name is not None:
            skipping = name == ours or name.startswith(ours + ".")
        if not skipping:
            out_lines.append(line)
    body = "\n".join(out_lines).rstrip()
    feats = before.get("features") if isinstance(before.get("features"), dict) else {}
    # Codex 0.169 reads [features].hooks; the older codex_hooks name is deprecated and runs no hook
    if "hooks" not in feats:
        if "features" in before:
            lines = body.splitlines()
            idx = next((i for i, l in enumerate(lines) if _table_name(l) == "features"), None)
            if idx is None:  # features given as dotted keys at the top level
                lines.insert(0, "features.hooks = true")
            else:
                lines.insert(idx + 1, "hooks = true")
            body = "\n".join(lines)
        else:
            body += "\n\n[features]\nhooks = true"
    block = [f"[mcp_servers.{MCP_NAME}]", f"command = {toml_inline(entry['command'])}", f"args = {toml_inline(entry['args'])}"]
    block.append(f"env = {toml_inline(entry['env'])}")
    new = (body + "\n\n" if body.strip() else "") + "\n".join(block) + "\n"
    by_hand = f"nothing was written: add the [{ours}] table and features.hooks = true to it by hand"
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"merging agents-room into {where} would not give valid TOML ({exc}); {by_hand}") from None
    # everything that was there is still there (checked always: not an assert, which -O drops)
    changed = _changed_keys(before, after)
    if changed:
        raise ValueError(f"merging agents-room into {where} would change {', '.join(changed)}; {by_hand}")
    return new


def _changed_keys(before: dict, after: dict) -> list[str]:
    """Dotted names of the settings in ``before`` that ``after`` does not keep (ours excepted)."""
    changed: list[str] = []
    for k, v in before.items():
        if k in ("mcp_servers", "features") and isinstance(v, dict):
            now = after.get(k) if isinstance(after.get(k), dict) else {}
            changed += [f"{k}.{a}" for a, b in v.items() if not (k == "mcp_servers" and a == MCP_NAME) and now.get(a) != b]
        elif after.get(k) != v:
            changed.append(k)
    return changed
