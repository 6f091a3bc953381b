"""`abx mcp install|uninstall` per target against fixture config files in a temp HOME and cwd."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness import ABX_BIN

pytestmark = pytest.mark.offline  # config files only: no daemon, no sandbox

ABX = str(Path(ABX_BIN).resolve())
CURSOR_ENTRY = {"command": ABX, "args": ["mcp", "serve"]}
STDIO_ENTRY = {"type": "stdio", "command": ABX, "args": ["mcp", "serve"]}

# target, scope, config file relative to (home|project), key, our entry
CASES = [
    ("cursor", "user", "home", ".cursor/mcp.json", "mcpServers", CURSOR_ENTRY),
    ("cursor", "project", "project", ".cursor/mcp.json", "mcpServers", CURSOR_ENTRY),
    ("claude", "user", "home", ".claude.json", "mcpServers", STDIO_ENTRY),
    ("claude", "project", "project", ".mcp.json", "mcpServers", STDIO_ENTRY),
    ("vscode", "project", "project", ".vscode/mcp.json", "servers", STDIO_ENTRY),
    ("vscode", "user", "home", ".config/Code/User/mcp.json", "servers", STDIO_ENTRY),
]
IDS = [f"{c[0]}-{c[1]}" for c in CASES]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {"home": tmp_path / "home", "project": tmp_path / "project"}
    for path in out.values():
        path.mkdir()
    return out


def run(dirs, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(dirs["home"]))
    return subprocess.run([ABX, "mcp", *args], cwd=dirs["project"], env=env, capture_output=True,
                          text=True, timeout=30)


def scope_args(target: str, scope: str) -> list[str]:
    return ["--target", target, "--scope", scope]


@pytest.mark.parametrize("target,scope,base,rel,key,entry", CASES, ids=IDS)
def test_fresh_install_then_uninstall(dirs, target, scope, base, rel, key, entry):
    config = dirs[base] / rel
    r = run(dirs, "install", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert str(config) in r.stdout
    assert json.loads(config.read_text()) == {key: {"agent-sandbox": entry}}
    assert not Path(str(config) + ".bak").exists()

    again = run(dirs, "install", *scope_args(target, scope))
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert not Path(str(config) + ".bak").exists()

    r = run(dirs, "uninstall", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text()) == {key: {}}
    assert "nothing changed" in run(dirs, "uninstall", *scope_args(target, scope)).stdout


@pytest.mark.parametrize("target,scope,base,rel,key,entry", CASES, ids=IDS)
def test_merge_keeps_other_servers_and_makes_a_backup(dirs, target, scope, base, rel, key,
                                                      entry):
    config = dirs[base] / rel
    config.parent.mkdir(parents=True, exist_ok=True)
    other = {"command": "npx", "args": ["-y", "other-server"]}
    original = {"theme": "dark", key: {"other": other}}
    config.write_text(json.dumps(original, indent=4))

    r = run(dirs, "install", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text()) == {"theme": "dark",
                                              key: {"other": other, "agent-sandbox": entry}}
    backup = Path(str(config) + ".bak")
    assert json.loads(backup.read_text()) == original
    assert "nothing changed" in run(dirs, "install", *scope_args(target, scope)).stdout

    r = run(dirs, "uninstall", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text()) == original


@pytest.mark.parametrize("target,scope,base,rel,key,entry", CASES, ids=IDS)
def test_malformed_file_is_refused_and_untouched(dirs, target, scope, base, rel, key, entry):
    config = dirs[base] / rel
    config.parent.mkdir(parents=True, exist_ok=True)
    broken = '{\n  "mcpServers": {\n    "x": {"command": "a",}\n  }\n'
    config.write_text(broken)
    for command in ("install", "uninstall"):
        r = run(dirs, command, *scope_args(target, scope))
        assert r.returncode == 1
        assert f"{config}:3" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert config.read_text() == broken
        assert not Path(str(config) + ".bak").exists()


def test_print_shows_the_json_without_writing(dirs):
    r = run(dirs, "install", "--target", "cursor", "--print")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"mcpServers": {"agent-sandbox": CURSOR_ENTRY}}
    assert not (dirs["home"] / ".cursor").exists()


def test_default_scopes(dirs):
    assert run(dirs, "install", "--target", "cursor").returncode == 0
    assert (dirs["home"] / ".cursor/mcp.json").exists()
    assert run(dirs, "install", "--target", "vscode").returncode == 0
    assert (dirs["project"] / ".vscode/mcp.json").exists()


def test_vscode_config_with_comments_is_read(dirs):
    config = dirs["project"] / ".vscode/mcp.json"
    config.parent.mkdir()
    config.write_text('// my servers\n{"servers": {}, "inputs": []}\n')
    r = run(dirs, "install", "--target", "vscode")
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text())["servers"]["agent-sandbox"] == STDIO_ENTRY


def test_bad_target_is_a_usage_error(dirs):
    r = run(dirs, "install", "--target", "emacs")
    assert r.returncode == 2 and "emacs" in r.stderr
