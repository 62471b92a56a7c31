"""What sealing secrets costs (service/secretbox.py, issue 22 §1, envelope encryption issue 28 §2):
seal and unseal of a 40-character token (a fresh data key each seal, wrapped by the server key)
with the keyring read from the state dir's key file on each call, as the server does it (a key
rotated by another process is seen at once); and `rotate` over N forge connections (2N sealed
values) on SQLite, in one transaction — it re-wraps each value's data key, the ciphertexts stay.

    .venv/bin/python bench/secretbox.py [--calls 2000] [--connections 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import emit, log, machine, summary_ms, tempdir


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=1000)
    args = ap.parse_args()
    with tempdir("secretbox") as root:
        os.environ["PREDICTORX_HOME"] = str(root / "state")
        os.environ.pop("PREDICTORX_SECRET_KEY", None)
        from predictorx.service import secretbox
        from predictorx.store.db import Database
        from predictorx.store.schema import ForgeConnection, Workspace, new_id

        token = "ghp_" + "x" * 36
        purpose = "forge_connection:00000000-0000-0000-0000-000000000000:credential"
        sealed = secretbox.seal(token, purpose=purpose)  # makes the key file
        seal_s, unseal_s = [], []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            sealed = secretbox.seal(token, purpose=purpose)
            t1 = time.perf_counter()
            assert secretbox.unseal(sealed, purpose=purpose) == token
            seal_s.append(t1 - t0)
            unseal_s.append(time.perf_counter() - t1)
        log(f"sealed and opened {args.calls} times")

        db = Database(f"sqlite:///{root / 'px.db'}")
        db.migrate()
        ring = secretbox.load_keyring()
        with db.write() as s:
            ws = Workspace(name="W", slug="w")
            s.add(ws)
            s.flush()
            for i in range(args.connections):
                row = ForgeConnection(id=new_id(), workspace_id=ws.id, name=f"c{i}", kind="github",
                                      base_url="https://github.com", api_url="https://api.github.com",
                                      host="github.com", credential_last4="xxxx")
                secretbox.seal_into(row, "credential_sealed", token, ring)
                secretbox.seal_into(row, "webhook_secret_sealed", "w" * 43, ring)
                s.add(row)
        t0 = time.perf_counter()
        done = secretbox.rotate(db.write)
        rotate_s = time.perf_counter() - t0
        db.dispose()
        log(f"rotated {done.resealed} values")
    emit({"bench": "secretbox", "machine": machine(), "seal": summary_ms(seal_s), "unseal": summary_ms(unseal_s),
          "rotate": {"connections": args.connections, "values_resealed": done.resealed,
                     "pxs1_upgraded": done.upgraded,
                     "seconds": round(rotate_s, 3)}})


if __name__ == "__main__":
    main()
