"""The HTTP clients the SDK shares: one per process (sync) or per event loop (async).

A client per Sandbox cost a TLS context per `Sandbox.create()` (httpx loads the CA bundle
when a client is made, ~30-100 ms) and a new connection per sandbox. Sandboxes now share
connections; a TLS context is built once per process, and only for https endpoints.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import threading
import weakref

import httpx

from ._config import ConnectionConfig

# Unbounded: every background command holds a connection for its output stream, and
# one process may run more of them than httpx's default of 100 across its sandboxes.
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=32)

_lock = threading.Lock()
_sync_clients: dict[tuple[int, bool], httpx.Client] = {}
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, httpx.AsyncClient]]
_async_clients = weakref.WeakKeyDictionary()


def uses_tls(config: ConnectionConfig) -> bool:
    """False when every URL of `config` is plain http (the local daemon's case)."""
    return not (config.api_url.startswith("http://") and config.domain is None)


@functools.cache
def _verifying_context() -> ssl.SSLContext:
    """httpx's default verification (certifi or SSL_CERT_FILE), built once per process."""
    make = getattr(httpx, "create_ssl_context", None)
    return make() if make else ssl.create_default_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    """For http-only clients: verifies but trusts no CA, so it loads nothing (and any https
    URL that reached it would fail instead of going unverified)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _verify(tls: bool) -> ssl.SSLContext:
    return _verifying_context() if tls else _plain_context()


def sync_client(tls: bool) -> httpx.Client:
    """This process's shared blocking client (httpx.Client is safe to share across threads)."""
    key = (os.getpid(), tls)  # a forked child must not reuse its parent's connections
    client = _sync_clients.get(key)
    if client is None:
        with _lock:
            client = _sync_clients.get(key)
            if client is None:
                client = httpx.Client(verify=_verify(tls), limits=_LIMITS)
                _sync_clients[key] = client
    return client


def async_client(tls: bool) -> httpx.AsyncClient:
    """The running event loop's shared client (an AsyncClient's connections belong to one
    loop; it goes away with its loop)."""
    loop = asyncio.get_running_loop()
    clients = _async_clients.get(loop)
    client = clients.get(tls) if clients else None
    if client is None:
        with _lock:  # loops in other threads may add theirs at the same time
            clients = _async_clients.setdefault(loop, {})
            client = clients.get(tls)
            if client is None:
                client = clients[tls] = httpx.AsyncClient(verify=_verify(tls), limits=_LIMITS)
    return client


async def close_loop_clients() -> None:
    """Closes the running loop's shared clients (before a short-lived loop ends)."""
    with _lock:
        clients = _async_clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose()
