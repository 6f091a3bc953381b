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
TRANSFER_OFF = "upload and download are off (no --allow-dir)"


def entry_for(target: str, *allow_dirs: Path) -> dict:
    """Our server entry as the editor reads it: project scope allows the project directory,
    user scope only what --allow-dir named."""
    args = ["mcp", "serve"]
    for allowed in allow_dirs:
        args += ["--allow-dir", str(allowed)]
    entry = {"command": ABX, "args": args}
    if target != "cursor":
        entry["type"] = "stdio"
    return entry


# target, scope, config file relative to (home|project), key
CASES = [
    ("cursor", "user", "home", ".cursor/mcp.json", "mcpServers"),
    ("cursor", "project", "project", ".cursor/mcp.json", "mcpServers"),
    ("claude", "user", "home", ".claude.json", "mcpServers"),
    ("claude", "project", "project", ".mcp.json", "mcpServers"),
    ("vscode", "project", "project", ".vscode/mcp.json", "servers"),
    ("vscode", "user", "home", ".config/Code/User/mcp.json", "servers"),
]
IDS = [f"{c[0]}-{c[1]}" for c in CASES]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    tmp_path = tmp_path.resolve()  # the config holds the directory with its symlinks resolved
    out = {"home": tmp_path / "home", "project": tmp_path / "project"}
    for path in out.values():
        path.mkdir()
    return out


def default_entry(dirs, target: str, scope: str) -> dict:
    return entry_for(target, dirs["project"]) if scope == "project" else entry_for(target)


def run(dirs, *args: str, **settings: str) -> subprocess.CompletedProcess:
    """`abx mcp ARGS` with HOME in the temp dir and, of the ABX_* settings, only `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_")}
    env.update(HOME=str(dirs["home"]), **settings)
    return subprocess.run([ABX, "mcp", *args], cwd=dirs["project"], env=env, capture_output=True,
                          text=True, timeout=30)


def scope_args(target: str, scope: str) -> list[str]:
    return ["--target", target, "--scope", scope]


@pytest.mark.parametrize("target,scope,base,rel,key", CASES, ids=IDS)
def test_fresh_install_then_uninstall(dirs, target, scope, base, rel, key):
    config = dirs[base] / rel
    entry = default_entry(dirs, target, scope)
    r = run(dirs, "install", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert str(config) in r.stdout
    assert (TRANSFER_OFF in r.stdout) == (scope == "user")
    assert json.loads(config.read_text()) == {key: {"agent-sandbox": entry}}
    assert not Path(str(config) + ".bak").exists()

    again = run(dirs, "install", *scope_args(target, scope))
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert not Path(str(config) + ".bak").exists()

    r = run(dirs, "uninstall", *scope_args(target, scope))
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text()) == {key: {}}
    assert "nothing changed" in run(dirs, "uninstall", *scope_args(target, scope)).stdout


@pytest.mark.parametrize("target,scope,base,rel,key", CASES, ids=IDS)
def test_merge_keeps_other_servers_and_makes_a_backup(dirs, target, scope, base, rel, key):
    config = dirs[base] / rel
    entry = default_entry(dirs, target, scope)
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


@pytest.mark.parametrize("target,scope,base,rel,key", CASES, ids=IDS)
def test_malformed_file_is_refused_and_untouched(dirs, target, scope, base, rel, key):
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
    assert json.loads(r.stdout) == {"mcpServers": {"agent-sandbox": entry_for("cursor")}}
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
    assert json.loads(config.read_text())["servers"]["agent-sandbox"] == \
        entry_for("vscode", dirs["project"])


def test_bad_target_is_a_usage_error(dirs):
    r = run(dirs, "install", "--target", "emacs")
    assert r.returncode == 2 and "emacs" in r.stderr


def test_user_scope_without_allow_dir_says_transfers_are_off(dirs):
    r = run(dirs, "install", "--target", "claude")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2, r.stdout
    assert lines[1].startswith(TRANSFER_OFF)
    assert "abx mcp install --target claude --allow-dir DIR" in lines[1]
    config = dirs["home"] / ".claude.json"
    assert load(config)["mcpServers"]["agent-sandbox"]["args"] == ["mcp", "serve"]
    again = run(dirs, "install", "--target", "claude")
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert TRANSFER_OFF in again.stdout


def test_user_scope_allow_dir_is_written_resolved(dirs):
    project = dirs["home"] / "code" / "app"
    project.mkdir(parents=True)
    (dirs["home"] / "app-link").symlink_to(project)
    r = run(dirs, "install", "--target", "cursor", "--allow-dir", str(dirs["home"] / "app-link"),
            "--allow-dir", str(dirs["home"] / "code") + "/")
    assert r.returncode == 0, r.stderr
    assert TRANSFER_OFF not in r.stdout
    assert len(r.stdout.strip().splitlines()) == 1
    assert load(dirs["home"] / ".cursor/mcp.json")["mcpServers"]["agent-sandbox"] == \
        entry_for("cursor", project, dirs["home"] / "code")


def test_project_scope_allow_dir_replaces_the_project(dirs):
    data = dirs["project"] / "data"
    data.mkdir()
    r = run(dirs, "install", "--target", "vscode", "--allow-dir", "data")
    assert r.returncode == 0, r.stderr
    assert load(dirs["project"] / ".vscode/mcp.json")["servers"]["agent-sandbox"] == \
        entry_for("vscode", data)


@pytest.mark.parametrize("allowed,words", [
    ("/", "every file of the host"),
    ("{home}", "is your home directory"),
    ("{home}/", "is your home directory"),
    ("{home}/..", "holds your home directory"),
    ("{project}/nope", "not an existing directory"),
], ids=["root", "home", "home-slash", "above-home", "missing"])
def test_refused_allow_dir_writes_nothing(dirs, allowed, words):
    allowed = allowed.format(**dirs)
    r = run(dirs, "install", "--target", "cursor", "--allow-dir", allowed)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    assert r.stdout == ""
    assert not (dirs["home"] / ".cursor").exists()


def test_project_scope_in_home_is_refused(dirs):
    env = dict(os.environ, HOME=str(dirs["home"]))
    r = subprocess.run([ABX, "mcp", "install", "--target", "claude", "--scope", "project"],
                       cwd=dirs["home"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "project scope allows the directory it is run in" in r.stderr
    assert "is your home directory" in r.stderr
    assert not (dirs["home"] / ".mcp.json").exists()


def load(path: Path):
    return json.loads(path.read_text())


def test_install_carries_the_daemon_settings_into_the_entry(dirs):
    """The editor starts `abx mcp serve` with its own environment: the ABX_* settings that
    chose the daemon at install time go into the entry's env, so the server reaches the same
    daemon. The API key is written to a user-scope file only (a project's may be committed)."""
    settings = {"ABX_SANDBOX_API_URL": "http://127.0.0.1:41234", "ABX_SANDBOX_API_KEY": "e2b_k",
                "ABX_STATE_DIR": "/srv/abx-state"}
    r = run(dirs, "install", "--target", "claude", "--scope", "user", **settings)
    assert r.returncode == 0, r.stderr
    entry = json.loads((dirs["home"] / ".claude.json").read_text())["mcpServers"]["agent-sandbox"]
    assert entry["env"] == settings
    r = run(dirs, "install", "--target", "claude", "--scope", "project", **settings)
    assert r.returncode == 0, r.stderr
    entry = json.loads((dirs["project"] / ".mcp.json").read_text())["mcpServers"]["agent-sandbox"]
    assert entry["env"] == {k: v for k, v in settings.items() if k != "ABX_SANDBOX_API_KEY"}
    # Without settings the entry has no env, as before.
    r = run(dirs, "install", "--target", "cursor", "--scope", "user")
    assert r.returncode == 0, r.stderr
    assert "env" not in json.loads((dirs["home"] / ".cursor/mcp.json").read_text())[
        "mcpServers"]["agent-sandbox"]
