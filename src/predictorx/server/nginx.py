"""An nginx configuration for N server replicas on one PostgreSQL (issue 14, R-SC-2; docs/scale.md).

`predictorx server nginx-config --upstream HOST:PORT … --listen PORT` prints it; the replica tests
and the load bench run nginx with exactly this text, so what the docs show is what is tested.

What matters in it:
- the event streams (`/api/events`, `/api/daemon/events`) pass unbuffered and may stay open for
  hours (`proxy_buffering off`, long read timeout; the server pings every 15 s);
- a replica that refuses connections is skipped for a while (`max_fails`/`fail_timeout`) and a
  request that could not reach it goes to the next (`proxy_next_upstream`). A POST already sent to
  a replica that then died is NOT re-sent by nginx (it might have been applied); the daemon
  retries it itself, and every daemon write is safe to repeat (messages by sequence number,
  finishes and statuses by task state).
- keep-alive connections to the replicas (HTTP/1.1, empty Connection header);
- `Host` is passed as the browser sent it, port included (`$http_host`, not `$host`): the server
  refuses a state change whose `Origin` is not the address the browser used (server/originguard.py).
- slow and hoarding clients stop at the proxy (issue 29 §7): a request's headers must arrive within
  `client_header_timeout`, an idle keep-alive connection closes after `keepalive_timeout`, and one
  client address holds at most PER_CLIENT connections (`limit_conn`, 429 beyond). Every replica
  sees all its connections come from the proxy, so its own per-address cap must be off
  (`PREDICTORX_MAX_CONNECTIONS_PER_CLIENT=0`, server/connguard.py) — the proxy's is the one that
  sees the clients.
- the forge relay (`/api/daemon/tasks/<id>/git/…`, service/forgerelay.py) carries a task's git
  pack both ways: streamed unbuffered, up to 1 GiB (the replica's own limit,
  `PREDICTORX_MAX_PUSH_BYTES`, says the sentence), with time for a forge to check a large pack.
"""

from __future__ import annotations

import os
import textwrap

_STREAM_HEADERS = """            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;"""


#: A task's push and fetch through the forge relay (service/forgerelay.py): packs stream both
#: ways, unbuffered, with time for a forge to check a large one.
_RELAY_LOCATION = f"""        location ~ ^/api/daemon/tasks/[^/]+/git/ {{
            proxy_pass http://predictorx;
{_STREAM_HEADERS}
            client_max_body_size 1g;
            client_body_timeout 120s;
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout;
        }}
"""

#: Connections one client address may hold through the proxy: a browser opens about six plus one
#: event stream per tab, a daemon two; an office behind one NAT address shares it.
PER_CLIENT = 256


def render(upstreams: list[str], *, listen: str = "8080", prefix: str | None = None,
           server_name: str = "_") -> str:
    """The nginx.conf text. `prefix`: a directory for pid, logs and temp files (a standalone nginx,
    as the tests run it); None: a snippet-free file for /etc/nginx/conf.d (http context only)."""
    if not upstreams:
        raise ValueError("give at least one --upstream HOST:PORT (a server replica)")
    servers = "\n".join(f"        server {u} max_fails=1 fail_timeout=5s;" for u in upstreams)
    http = f"""    upstream predictorx {{
{servers}
        keepalive 64;
    }}

    # Slow and hoarding clients end here (issue 29 §7); the replicas run with
    # PREDICTORX_MAX_CONNECTIONS_PER_CLIENT=0, since every connection they see comes from here.
    limit_conn_zone $binary_remote_addr zone=predictorx_clients:10m;

    server {{
        listen {listen};
        server_name {server_name};
        client_max_body_size 25m;
        client_header_timeout 10s;
        client_body_timeout 30s;
        keepalive_timeout 15s;
        send_timeout 60s;
        limit_conn predictorx_clients {PER_CLIENT};
        limit_conn_status 429;

        # Live updates and the daemons' push connections: unbuffered, long-lived.
        location ~ ^/api/(daemon/)?events$ {{
            proxy_pass http://predictorx;
{_STREAM_HEADERS}
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 1h;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502 http_503;
        }}

{_RELAY_LOCATION}
        location / {{
            proxy_pass http://predictorx;
{_STREAM_HEADERS}
            proxy_read_timeout 120s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502 http_503;
            proxy_next_upstream_tries 3;
        }}
    }}
"""
    if prefix is None:
        return ("# /etc/nginx/conf.d/predictorx.conf — generated by `predictorx server nginx-config`\n"
                + textwrap.dedent(http))
    user = "user root root;\n" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    return f"""# standalone nginx for Predictor X replicas — `nginx -p {prefix} -c {prefix}/nginx.conf`
{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
daemon off;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
{http}}}
"""


def nginx_binary() -> str | None:
    import shutil

    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx")
                                          if os.access(p, os.X_OK)), None)


def start_standalone(prefix: str, upstreams: list[str], port: int):  # subprocess.Popen
    """Run nginx in the foreground as a child (its own process group) with its files under
    `prefix`; for the replica tests and the load bench. The caller stops it (SIGTERM the group)."""
    import subprocess
    from pathlib import Path

    exe = nginx_binary()
    if exe is None:
        raise FileNotFoundError("nginx is not installed (Debian: apt-get install nginx-light or nginx)")
    root = Path(prefix)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)  # nginx opens its compiled-in log path before reading ours
    conf = root / "nginx.conf"
    conf.write_text(render(upstreams, listen=f"127.0.0.1:{port}", prefix=str(root)))
    check = subprocess.run([exe, "-t", "-q", "-p", str(root), "-c", str(conf)], capture_output=True, text=True,
                           timeout=30)
    if check.returncode != 0:
        raise RuntimeError(f"nginx refused the configuration: {check.stderr.strip()[-500:]}")
    return subprocess.Popen([exe, "-p", str(root), "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=open(root / "stderr.log", "wb"), start_new_session=True)
