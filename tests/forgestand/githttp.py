"""Git smart HTTP for a stand-in: Debian's `git http-backend` run by `fcgiwrap`, behind Debian's nginx.

nginx is the stand-in's single front door (its `base_url`), like a self-hosted forge: git's
smart-HTTP paths go to git http-backend through fcgiwrap; everything else is proxied to the
stand-in's API app. Authentication of git requests is nginx `auth_request` to the API app
(`/_standin/git-auth`) rather than an htpasswd file, because the forges accept ANY user name with a
valid token (x-access-token, oauth2, the account name): the app checks the password against the
stand-in's token (which a test may rotate) and counts what git asked for.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from predictorx.testing import free_port  # also imported from here by standin.py

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"


def binaries() -> tuple[str, str]:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    fcgiwrap = shutil.which("fcgiwrap") or ("/usr/sbin/fcgiwrap" if os.path.exists("/usr/sbin/fcgiwrap") else None)
    missing = [n for n, p in (("nginx", nginx), ("fcgiwrap", fcgiwrap), ("git http-backend",
               HTTP_BACKEND if os.path.exists(HTTP_BACKEND) else None)) if p is None]
    if missing:
        raise RuntimeError(f"the forge stand-ins need Debian's {', '.join(missing)} (.ci/run installs them)")
    return nginx, fcgiwrap  # type: ignore[return-value]


def render_conf(prefix: Path, port: int, app_port: int, repos_root: Path, socket_path: Path) -> str:
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return f"""# nginx for a forge stand-in (tests/forgestand/githttp.py)
{user}worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    client_max_body_size 0;
    upstream standin_api {{ server 127.0.0.1:{app_port}; keepalive 8; }}
    server {{
        listen 127.0.0.1:{port};
        location = /_standin/git-auth-subrequest {{
            internal;
            proxy_pass http://127.0.0.1:{app_port}/_standin/git-auth;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header Authorization $http_authorization;
        }}
        location ~ ^/.+\\.git/(info/refs|git-upload-pack|git-receive-pack)$ {{
            auth_request /_standin/git-auth-subrequest;
            fastcgi_pass unix:{socket_path};
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME {HTTP_BACKEND};
            fastcgi_param GIT_PROJECT_ROOT {repos_root};
            fastcgi_param GIT_HTTP_EXPORT_ALL "";
            fastcgi_param PATH_INFO $uri;
            fastcgi_param REMOTE_USER $remote_user;
            fastcgi_buffering off;
            fastcgi_request_buffering off;
        }}
        location / {{
            proxy_pass http://standin_api;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
        }}
    }}
}}
"""


class GitFront:
    """nginx + fcgiwrap processes for one stand-in; `stop()` ends exactly those two."""

    def __init__(self, root: Path, app_port: int, repos_root: Path):
        nginx, fcgiwrap = binaries()
        self.prefix = root / "nginx"
        for sub in ("tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi", "logs"):
            (self.prefix / sub).mkdir(parents=True, exist_ok=True)
        self.socket_path = root / "fcgiwrap.sock"
        self.port = free_port()
        conf = self.prefix / "nginx.conf"
        conf.write_text(render_conf(self.prefix, self.port, app_port, repos_root, self.socket_path))
        self.fcgiwrap = subprocess.Popen([fcgiwrap, "-c", "2", "-s", f"unix:{self.socket_path}"],
                                         stdout=subprocess.DEVNULL, stderr=open(root / "fcgiwrap.log", "wb"),
                                         start_new_session=True)
        self.nginx = subprocess.Popen([nginx, "-p", str(self.prefix), "-c", str(conf)],
                                      stdout=subprocess.DEVNULL, stderr=open(root / "nginx.stderr", "wb"),
                                      start_new_session=True)
        self._wait_listening()

    def _wait_listening(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.nginx.poll() is not None:
                raise RuntimeError(f"nginx exited: {(self.prefix / 'error.log').read_text(errors='replace')[-800:]}")
            if self.socket_path.exists():
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        return
                except OSError:
                    pass
            time.sleep(0.02)  # polling for a port to open; the condition is the exit
        raise RuntimeError("nginx or fcgiwrap did not start within 15 s")

    def stop(self) -> None:
        for proc in (self.nginx, self.fcgiwrap):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (self.nginx, self.fcgiwrap):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
