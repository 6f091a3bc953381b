"""`make install`'s layout, from the existing build: `cmake --install --strip` into a
temp prefix, then the installed abx runs, finds abx-init (libexec/abx) and the template
specs (share/abx/templates) on its own, serves a `host` sandbox, and uninstalls cleanly.
Also `abx version`, the completion scripts and the Debian package's metadata (cpack on
the same build: no Release build needed)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from harness import ABX_BIN, REPO, private_state_dir, start_daemon, stop_daemon

pytestmark = pytest.mark.offline

BUILD = ABX_BIN.parent
needs_cmake_build = pytest.mark.skipif(
    not (BUILD / "cmake_install.cmake").exists() or shutil.which("cmake") is None,
    reason=f"{BUILD} is not a cmake build dir (ABX_BIN={ABX_BIN}) or cmake is missing")
VERSION_LINE = re.compile(r"^abx (\d+\.\d+\.\d+) \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)$")


def cmake_install(prefix: Path) -> None:
    done = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix), "--strip"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def run(binary: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=120)


def clean_env(**extra: str) -> dict[str, str]:
    """No ABX_* from the test run: the installed abx must find its files by itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (BUILD / "cmake_install.cmake").exists():
        pytest.skip(f"{BUILD} is not a cmake build dir")
    prefix = tmp_path_factory.mktemp("prefix")
    cmake_install(prefix)
    return prefix


@needs_cmake_build
def test_install_puts_every_file_where_abx_looks(prefix: Path):
    for path in ["bin/abx", "bin/abx-daemon", "libexec/abx/abx-init",
                 "share/abx/templates/base/spec.toml",
                 "share/abx/templates/code-interpreter-v1/Sandboxfile",
                 "share/bash-completion/completions/abx", "share/zsh/site-functions/_abx",
                 "share/fish/vendor_completions.d/abx.fish",
                 "lib/systemd/system/abx.service", "lib/systemd/user/abx.service"]:
        assert (prefix / path).is_file(), path
    assert os.access(prefix / "share/abx/templates/base/customize.sh", os.X_OK)
    assert not (prefix / "bin/abx-init").exists()
    if shutil.which("readelf"):  # stripped: no symbol table, no debug info
        for binary in ("bin/abx", "bin/abx-daemon"):
            sections = subprocess.run(["readelf", "-S", "-W", str(prefix / binary)],
                                      capture_output=True, text=True).stdout
            assert ".text" in sections and ".symtab" not in sections and ".debug" not in sections
    page = (prefix / "share/man/man1/abx.1").read_text()
    assert ".TH ABX" in page and "completion" in page and "ABX_STATE_DIR" in page
    assert ".SH EXIT STATUS" in page and ".SH EXAMPLES" in page


@needs_cmake_build
@pytest.mark.skipif(shutil.which("man") is None, reason="man (man-db) is not installed")
def test_man_abx_finds_the_installed_page(prefix: Path):
    shown = subprocess.run(["man", "-M", str(prefix / "share/man"), "abx"], capture_output=True,
                           text=True, timeout=60, env={**os.environ, "MANWIDTH": "80",
                                                       "MANPAGER": "cat", "PAGER": "cat"})
    assert shown.returncode == 0, shown.stderr
    text = re.sub(r".\x08", "", shown.stdout)
    assert "EXIT STATUS" in text and "abx template build" in text and "--step-timeout" in text


@needs_cmake_build
def test_installed_abx_says_its_version_and_commit(prefix: Path):
    done = run(prefix / "bin/abx", "--version", env=clean_env())
    assert done.returncode == 0, done.stderr
    match = VERSION_LINE.match(done.stdout.strip())
    assert match, done.stdout
    assert done.stdout == run(ABX_BIN, "--version").stdout  # the build's, stripped
    commit = match.group(2).removesuffix("-dirty")
    if commit != "unknown":  # a commit of this repo (the build's, not necessarily HEAD)
        known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"])
        assert known.returncode == 0, commit


@needs_cmake_build
def test_installed_daemon_runs_a_host_sandbox(prefix: Path):
    data = private_state_dir()
    abx = prefix / "bin/abx"
    d = start_daemon(data, binary=abx, shared_templates=False, env={"ABX_TEMPLATE_SPECS": ""})
    try:
        env = clean_env(ABX_SANDBOX_API_URL=d.url, ABX_SANDBOX_API_KEY=d.api_key,
                        ABX_STATE_DIR=str(data), ABX_CONFIG_DIR=str(data / "config"))
        created = run(abx, "create", "--template", "host", env=env)
        assert created.returncode == 0, created.stderr
        sandbox = created.stdout.strip()
        said = run(abx, "exec", sandbox, "--", "echo", "hello from the installed abx", env=env)
        assert said.returncode == 0, said.stderr
        assert said.stdout == "hello from the installed abx\n"
        # The specs are found under share/abx/templates: base is known, if not built.
        with d.api() as api:
            base = api.get("/abx/v1/templates/base")
            assert base.status_code == 200, base.text
            assert base.json()["built"] is False
        assert run(abx, "kill", "--yes", sandbox, env=env).returncode == 0
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)
        shutil.rmtree(data, ignore_errors=True)


def test_version_shows_client_and_daemon(daemon, state_dir: Path):
    done = run(ABX_BIN, "version", env=daemon.env())
    assert done.returncode == 0, done.stderr
    client, server = done.stdout.splitlines()
    assert VERSION_LINE.match(client.replace("client:", "abx", 1)), client
    number, commit = VERSION_LINE.match(client.replace("client:", "abx", 1)).group(1, 2)
    assert server == f"daemon: {number} (commit {commit}) at {daemon.url}"
    with daemon.api() as api:
        assert api.get("/abx/v1/version").json() == {"version": number, "commit": commit}
        assert api.get("/abx/v1/version", headers={"X-API-KEY": "wrong"}).status_code == 401


def test_version_without_a_daemon_does_not_start_one(state_dir: Path):
    env = clean_env(ABX_STATE_DIR=str(state_dir / "state"),
                    ABX_CONFIG_DIR=str(state_dir / "config"))
    done = run(ABX_BIN, "version", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("daemon: not running")
    assert not (state_dir / "state" / "daemon.addr").exists()


def complete_in_bash(script: str, words: list[str]) -> list[str]:
    """What `_abx` offers with the cursor on the last of `words`."""
    program = (f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n_abx\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completion_offers_commands_and_flags():
    script = run(ABX_BIN, "completion", "bash").stdout
    assert "version" in complete_in_bash(script, ["abx", "ver"])
    assert sorted(complete_in_bash(script, ["abx", "daemon", "st"])) == ["start", "status", "stop"]
    assert "--templates-dir" in complete_in_bash(script, ["abx", "serve", "--templ"])
    assert complete_in_bash(script, ["abx", "exec", "id", "--", "ls", "da"]) == []


@pytest.mark.parametrize("shell, check", [("zsh", ["zsh", "-n"]), ("fish", ["fish", "-n"])])
def test_zsh_and_fish_completions_parse(shell: str, check: list[str], tmp_path: Path):
    if shutil.which(check[0]) is None:
        pytest.skip(f"{check[0]} is not installed")
    script = tmp_path / shell
    script.write_text(run(ABX_BIN, "completion", shell).stdout)
    done = subprocess.run([*check, str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    if shell == "fish":  # the subcommands of `abx daemon`, as fish offers them
        program = f"source {script}; complete -C 'abx daemon s'"
        offered = subprocess.run(["fish", "-c", program], capture_output=True, text=True,
                                 timeout=30).stdout
        assert sorted(line.split("\t")[0] for line in offered.splitlines()) == [
            "start", "status", "stop"]


@needs_cmake_build
def test_systemd_units_run_the_installed_abx(prefix: Path):
    system = (prefix / "lib/systemd/system/abx.service").read_text()
    user = (prefix / "lib/systemd/user/abx.service").read_text()
    assert f"ExecStart={prefix}/bin/abx-daemon serve --data-dir /var/lib/abx\n" in system
    assert f"ExecStart={prefix}/bin/abx-daemon serve\n" in user
    if shutil.which("systemd-analyze"):
        for unit in ("system", "user"):
            path = prefix / "lib/systemd" / unit / "abx.service"
            done = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--{unit}",
                                   str(path)], capture_output=True, text=True, timeout=60)
            if "Failed to initialize manager" in done.stderr:
                continue  # no user manager here (no XDG_RUNTIME_DIR): nothing to check with
            assert done.returncode == 0, done.stderr


@needs_cmake_build
def test_uninstall_removes_what_install_wrote(tmp_path: Path):
    prefix = tmp_path / "prefix"
    cmake_install(prefix)
    manifest = BUILD / "install_manifest.txt"
    listed = manifest.read_text().split()
    assert str(prefix / "bin/abx") in listed and str(prefix / "share/abx/templates/base/spec.toml") in listed
    done = subprocess.run(["cmake", f"-DMANIFEST={manifest}", "-P",
                           str(REPO / "cmake/uninstall.cmake")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    left = [p for p in prefix.rglob("*") if not p.is_dir()]
    assert left == []
    assert not (prefix / "share/abx").exists() and not (prefix / "libexec/abx").exists()


@pytest.mark.slow
@needs_cmake_build
@pytest.mark.skipif(shutil.which("dpkg-shlibdeps") is None, reason="dpkg-dev is not installed")
def test_debian_package_depends_on_debian_packages(tmp_path: Path):
    done = subprocess.run(["cpack", "-G", "DEB", "--config", str(BUILD / "CPackConfig.cmake"),
                           "-B", str(tmp_path), "-D", f"CPACK_OUTPUT_FILE_PREFIX={tmp_path}"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [deb] = tmp_path.glob("*.deb")

    def field(name: str) -> str:
        return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True,
                              text=True).stdout.strip()

    assert field("Package") == "abx"
    depends = field("Depends")
    for library in ("libc6", "libseccomp2", "libnftables1", "libarchive13", "libsqlite3-0"):
        assert library in depends, depends
    assert "mmdebstrap" in field("Recommends")
    files = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True).stdout
    for path in ("./usr/bin/abx", "./usr/bin/abx-daemon", "./usr/libexec/abx/abx-init",
                 "./usr/share/abx/templates/base/spec.toml",
                 "./usr/share/zsh/vendor-completions/_abx",
                 "./usr/lib/systemd/system/abx.service"):
        assert path in files, files
    unit = subprocess.run(f"dpkg-deb --fsys-tarfile {deb} | tar -xO ./usr/lib/systemd/system/abx.service",
                          shell=True, capture_output=True, text=True).stdout
    assert "ExecStart=/usr/bin/abx-daemon serve --data-dir /var/lib/abx\n" in unit
