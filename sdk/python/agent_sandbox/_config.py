"""Where the SDK sends requests: provider resolution and sandbox addressing (no network)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AuthenticationException, InvalidArgumentException

ENVD_PORT = 49983
JUPYTER_PORT = 49999
DEFAULT_REQUEST_TIMEOUT = 60.0
PROVIDERS = ("local", "e2b", "alicloud-express")


@dataclass
class ConnectionConfig:
    """Resolved endpoints: one API base URL, and how sandbox traffic is routed.

    Shared by a Sandbox and its parts: `api_url` changes in place when a discovered local
    daemon comes back at another address.
    """

    provider: str
    api_url: str
    api_key: str
    domain: str | None  # None: header routing through api_url
    request_timeout: float
    # True when the local daemon's address was discovered rather than given,
    # so starting the daemon may change it.
    discovered: bool = False
    # The address file as last seen (mtime, inode, size): a change means a restart.
    address_stamp: tuple[int, int, int] | None = field(default=None, repr=False)

    def control_headers(self) -> dict[str, str]:
        """Headers for control-plane requests."""
        return {"X-API-KEY": self.api_key}

    def sandbox_url(self, sandbox_id: str, port: int, domain: str | None = None) -> str:
        """Base URL of `port` inside the sandbox (host routing) or the shared proxy.

        `domain` (from the create response) overrides the configured one for host routing.
        """
        if self.domain is None:
            return self.api_url
        domain = domain or self.domain
        scheme = "https"
        for prefix in ("http://", "https://"):
            if domain.startswith(prefix):
                scheme, domain = prefix[:-3], domain[len(prefix):]
        return f"{scheme}://{port}-{sandbox_id}.{domain}"


def sandbox_headers(sandbox_id: str, port: int, access_token: str | None) -> dict[str, str]:
    """Routing (and auth) headers for sandbox-plane requests."""
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port)}
    if access_token:
        headers["X-Access-Token"] = access_token
    return headers


def resolve(provider: str | None, api_key: str | None, api_url: str | None,
            domain: str | None, request_timeout: float | None) -> ConnectionConfig:
    """Builds the connection config from arguments, environment and config files."""
    provider = provider or os.environ.get("ABX_PROVIDER") or "local"
    timeout = DEFAULT_REQUEST_TIMEOUT if request_timeout is None else request_timeout
    if provider == "local":
        return _resolve_local(api_key, api_url, timeout)
    if provider == "e2b":
        key = api_key or os.environ.get("ABX_SANDBOX_API_KEY") or os.environ.get("E2B_API_KEY")
        url = api_url or os.environ.get("E2B_API_URL") or "https://api.e2b.app"
        return ConnectionConfig("e2b", url, _require_key(key, provider), domain or "e2b.app",
                                timeout)
    if provider == "alicloud-express":
        remote_url = api_url or os.environ.get("ABX_SANDBOX_API_URL")
        dom = domain or os.environ.get("ABX_SANDBOX_DOMAIN")
        if not remote_url or not dom:
            raise InvalidArgumentException(
                "provider 'alicloud-express' needs api_url= and domain= (or ABX_SANDBOX_API_URL "
                "and ABX_SANDBOX_DOMAIN), e.g. https://api.cn-hangzhou.e2b.fc.aliyuncs.com")
        key = api_key or os.environ.get("ABX_SANDBOX_API_KEY")
        return ConnectionConfig(provider, remote_url.rstrip("/"), _require_key(key, provider), dom,
                                timeout)
    raise InvalidArgumentException(
        f"unknown provider {provider!r}: use one of {', '.join(PROVIDERS)}")


def _require_key(key: str | None, provider: str) -> str:
    if not key:
        raise AuthenticationException(
            f"provider {provider!r} needs an API key: pass api_key= or set ABX_SANDBOX_API_KEY")
    return key


def _resolve_local(api_key: str | None, api_url: str | None, timeout: float) -> ConnectionConfig:
    config = read_config_file()
    explicit_url = api_url or os.environ.get("ABX_SANDBOX_API_URL") or config.get("sandbox_api_url")
    url = explicit_url or read_daemon_address() or ""
    key = (api_key or os.environ.get("ABX_SANDBOX_API_KEY") or config.get("sandbox_api_key")
           or _read_text(state_dir() / "api_key") or "")
    return ConnectionConfig("local", url.rstrip("/"), key, None, timeout,
                            discovered=not explicit_url)


def config_dir() -> Path:
    """$ABX_CONFIG_DIR, else $XDG_CONFIG_HOME/abx (~/.config/abx): same as the abx CLI."""
    explicit = os.environ.get("ABX_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "abx"


def state_dir() -> Path:
    """$ABX_STATE_DIR, else $XDG_STATE_HOME/abx (~/.local/state/abx): same as the abx CLI."""
    explicit = os.environ.get("ABX_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "abx"


def read_daemon_address() -> str | None:
    """The URL the local daemon wrote when it started listening, if any."""
    return _read_text(state_dir() / "daemon.addr")


def follow_moved_daemon(config: ConnectionConfig) -> bool:
    """After a failed connect: True (and `config.api_url` updated) if the local daemon whose
    address was discovered now listens elsewhere (it was restarted on another port)."""
    if config.provider != "local" or not config.discovered:
        return False
    current = (read_daemon_address() or "").rstrip("/")
    if not current or current == config.api_url:
        return False
    config.api_url = current
    return True


def notice_moved_daemon(config: ConnectionConfig) -> bool:
    """Before a call: True (and `config.api_url` updated) if the discovered local daemon's
    address file was rewritten since last seen and names another URL. One stat per call, so a
    daemon restarted on another port is followed even when something else now holds the old
    one (a connect there would not fail: it would hang)."""
    if config.provider != "local" or not config.discovered:
        return False
    try:
        seen = os.stat(state_dir() / "daemon.addr")
    except OSError:
        return False  # restarting: the call fails to connect, then follow_moved_daemon
    stamp = (seen.st_mtime_ns, seen.st_ino, seen.st_size)
    if stamp == config.address_stamp:
        return False
    config.address_stamp = stamp
    return follow_moved_daemon(config)


def read_config_file() -> dict[str, str]:
    """Top-level string settings of config.toml (empty if there is none)."""
    text = _read_text(config_dir() / "config.toml")
    if not text:
        return {}
    if sys.version_info >= (3, 11):
        import tomllib

        return {k: v for k, v in tomllib.loads(text).items() if isinstance(v, str)}
    return _parse_flat_toml(text)


_TOML_LINE = re.compile(r'^\s*([A-Za-z0-9_-]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(#.*)?$')


def _parse_flat_toml(text: str) -> dict[str, str]:
    """Reads `key = "value"` lines: all abx writes, for Pythons without tomllib."""
    found = {}
    for line in text.splitlines():
        match = _TOML_LINE.match(line)
        if match:
            found[match.group(1)] = match.group(2).encode().decode("unicode_escape")
    return found


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
