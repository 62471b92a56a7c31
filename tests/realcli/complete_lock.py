"""Name in package-lock.json the platform builds this registry lacks, so that `npm ci` accepts it.

The registry the project is tested against has no macOS, Windows, musl or arm builds of some CLIs
(Kilo, Cline, a clipboard helper of Qwen Code): `npm install` leaves them out of the lock, and
`npm ci` then refuses the lock ("Missing: … from lock file"). Each is added as an optional package
of its own platform (os/cpu/libc read off its name), which `npm ci` skips on any other platform.
Run after `npm install --package-lock-only`:  python tests/realcli/complete_lock.py
"""

from __future__ import annotations

import json
from pathlib import Path

LOCK = Path(__file__).with_name("package-lock.json")


def platform_of(name: str) -> dict[str, list[str]]:
    tail = name.rsplit("/", 1)[-1]
    os_name = next((os for os, word in (("darwin", "darwin"), ("win32", "win32"), ("win32", "windows"),
                                        ("linux", "linux")) if word in tail), None)
    if os_name is None:
        raise SystemExit(f"{name}: cannot tell its platform from its name; add it by hand")
    found: dict[str, list[str]] = {"os": [os_name], "cpu": ["arm64" if "arm64" in tail else "x64"]}
    if "musl" in tail:
        found["libc"] = ["musl"]
    elif os_name == "linux" and "gnu" in tail:
        found["libc"] = ["glibc"]
    return found


def main() -> None:
    lock = json.loads(LOCK.read_text())
    packages = lock["packages"]
    added = []
    for key, entry in list(packages.items()):
        for dep, version in (entry.get("optionalDependencies") or {}).items():
            nested = f"{key}/node_modules/{dep}" if key else f"node_modules/{dep}"
            if nested not in packages and f"node_modules/{dep}" not in packages:
                packages[f"node_modules/{dep}"] = {"version": version, "optional": True, **platform_of(dep)}
                added.append(dep)
    lock["packages"] = dict(sorted(packages.items(), key=lambda kv: (kv[0] != "", kv[0])))
    LOCK.write_text(json.dumps(lock, indent=2) + "\n")
    print("added:", ", ".join(added) or "nothing")


if __name__ == "__main__":
    main()
