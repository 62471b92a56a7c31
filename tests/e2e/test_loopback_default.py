"""The local default listens on loopback only (R-SEC-1): `predictorx server start` without --host
binds 127.0.0.1, and nothing answers on the machine's other addresses. `predictorx up` is checked
the same way in test_checkout_and_demo.py."""

from __future__ import annotations

import ipaddress
import socket

import httpx2 as httpx
import pytest

from .harness import listening_addresses, non_loopback_addresses


def test_server_start_listens_on_loopback_only(server):
    listening = listening_addresses(server.proc.pid)
    assert any(port == server.port for _, port in listening), listening
    assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening
    assert httpx.get(f"http://127.0.0.1:{server.port}/api/health", timeout=5).status_code == 200
    for ip in non_loopback_addresses():
        with pytest.raises(OSError):
            socket.create_connection((ip, server.port), timeout=2).close()
