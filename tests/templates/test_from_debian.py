"""FROM debian:<suite>: a plain Debian minbase made by mmdebstrap (cached by its spec like
`base`), then the Sandboxfile's steps on top."""
from __future__ import annotations

from helpers import abx

BUILD_TIMEOUT = 900


def test_from_a_debian_suite(template_daemon, tmp_path):
    (tmp_path / "Sandboxfile").write_text(
        "FROM debian:bookworm\nRUN cat /etc/debian_version > /debian-version\n")
    r = abx(template_daemon, "template", "build", str(tmp_path), "--name", "plain-bookworm",
            timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    try:
        created = abx(template_daemon, "create", "--template", "plain-bookworm")
        assert created.returncode == 0, created.stderr
        sandbox_id = created.stdout.strip()
        try:
            r = abx(template_daemon, "exec", sandbox_id, "--", "cat", "/debian-version")
            assert r.returncode == 0, r.stderr
            assert r.stdout.startswith("12."), r.stdout
            r = abx(template_daemon, "exec", sandbox_id, "--", "sh", "-c",
                    "command -v python3 || echo none")
            assert r.stdout.strip() == "none", "minbase has no python: it is not `base`"
        finally:
            abx(template_daemon, "kill", sandbox_id, "--yes")
    finally:
        abx(template_daemon, "template", "rm", "plain-bookworm")
