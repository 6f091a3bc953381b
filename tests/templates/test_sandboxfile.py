"""`abx template build DIR --name NAME`: templates from a Sandboxfile (a Dockerfile subset),
end to end through the real CLI and daemon on the Debian `base`: what the steps put in the
template, the defaults its sandboxes start with, the layer cache, the network switch, honest
failures and removal."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import socket
import subprocess
import tarfile
import uuid
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx, sandbox

BUILD_TIMEOUT = 600
MIRROR = "deb.debian.org"
LAYER_MAKING = ("WORKDIR", "COPY", "ADD", "RUN")


# --- helpers -------------------------------------------------------------------------------


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Writes `files` (relative path → content) below `root`; returns `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def build(daemon: Daemon, context: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    return abx(daemon, "template", "build", str(context), "--name", name, *extra,
               timeout=BUILD_TIMEOUT)


def build_ok(daemon: Daemon, context: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    r = build(daemon, context, name, *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"built {name} (" in r.stdout
    return r


def steps(r: subprocess.CompletedProcess) -> list[str]:
    """The build's `step N/M: ...` progress lines, as printed."""
    return [line.strip() for line in r.stderr.splitlines() if line.strip().startswith("step ")]


def is_cached(step: str) -> bool:
    return step.endswith(" (cached)")


def instruction(step: str) -> str:
    """"step 4/7: COPY a b (cached)" → "COPY"."""
    return step.split(": ", 1)[1].split()[0]


def listed_names(daemon: Daemon) -> set[str]:
    r = abx(daemon, "template", "list", "--json")
    assert r.returncode == 0, r.stderr
    return {t["name"] for t in json.loads(r.stdout)}


def remove_template(daemon: Daemon, name: str) -> None:
    if name in listed_names(daemon):
        r = abx(daemon, "template", "rm", name, "--force")
        assert r.returncode == 0, r.stderr


@contextmanager
def built(daemon: Daemon, context: Path, name: str, *extra: str) -> Iterator[str]:
    """A template built for one test (or module), removed afterwards."""
    build_ok(daemon, context, name, *extra)
    try:
        yield name
    finally:
        remove_template(daemon, name)


def sh(daemon: Daemon, sandbox_id: str, script: str) -> str:
    """Runs `script` as a plain `abx exec` would (no --cwd, no --user); returns its stdout."""
    r = abx(daemon, "exec", sandbox_id, "--", "sh", "-c", script)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    return r.stdout


def in_new_sandbox(daemon: Daemon, template: str, script: str) -> str:
    with sandbox(daemon, template) as sandbox_id:
        return sh(daemon, sandbox_id, script)


def mirror_reachable() -> bool:
    try:
        socket.create_connection((MIRROR, 80), timeout=5).close()
        return True
    except OSError:
        return False


needs_mirror = pytest.mark.skipif(not mirror_reachable(),
                                  reason=f"{MIRROR}:80 is unreachable from this machine")


def tiny_wheel(directory: Path, value: str) -> Path:
    """A pure-Python wheel of module `abx_tiny` whose VALUE is `value`, written by hand
    (METADATA, WHEEL and a RECORD with every file's hash, as pip checks them)."""
    files = {
        "abx_tiny.py": f"VALUE = {value!r}\n".encode(),
        "abx_tiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: abx-tiny\nVersion: 1.0\n",
        "abx_tiny-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: abx-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(data: bytes) -> str:
        raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        return "sha256=" + raw.decode()

    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    record += "abx_tiny-1.0.dist-info/RECORD,,\n"
    wheel = directory / "abx_tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("abx_tiny-1.0.dist-info/RECORD", record)
    return wheel


def targz(entries: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in entries.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


# --- what the steps put in the template -----------------------------------------------------


def test_a_copied_wheel_installed_by_pip_is_importable(built_base, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    tiny_wheel(ctx, "tiny wheel says hi")
    (ctx / "Sandboxfile").write_text(
        "FROM base\n"
        "COPY abx_tiny-1.0-py3-none-any.whl /tmp/\n"
        "RUN pip install --no-index /tmp/abx_tiny-1.0-py3-none-any.whl\n")
    with built(built_base, ctx, "sbf-wheel") as name:
        out = in_new_sandbox(built_base, name, "python -c 'import abx_tiny; print(abx_tiny.VALUE)'")
    assert out == "tiny wheel says hi\n"


@needs_mirror
def test_apt_get_install_in_a_run_step(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": (
        "FROM base\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends jq\n")})
    with built(built_base, ctx, "sbf-jq") as name:
        out = in_new_sandbox(built_base, name, "jq --version; echo '{\"a\": 41}' | jq '.a + 1'")
    assert out.splitlines()[0].startswith("jq-"), out
    assert out.splitlines()[1] == "42"


@pytest.fixture(scope="module")
def files_template(built_base, tmp_path_factory) -> Iterator[str]:
    ctx = write_tree(tmp_path_factory.mktemp("files"), {
        "tree/a.txt": "a\n",
        "tree/sub/b.txt": "b\n",
        "tree/bin/hello.sh": "#!/bin/sh\necho hello from a copied script\n",
        "hello.txt": "hello\n",
        "bundle.tar.gz": targz({"inner/t.txt": "from the tarball\n", "top.txt": "top\n"}),
        "Sandboxfile": (
            "FROM base\n"
            "COPY tree /opt/tree\n"
            "COPY hello.txt /opt/into/\n"
            "COPY hello.txt /opt/renamed.txt\n"
            "ADD bundle.tar.gz /opt/unpacked/\n"
            "COPY bundle.tar.gz /opt/kept/\n"
            "COPY --chown=user hello.txt /home/user/owned.txt\n"),
    })
    (ctx / "tree" / "bin" / "hello.sh").chmod(0o755)
    with built(built_base, ctx, "sbf-files") as name:
        yield name


def test_copy_of_a_dir_copies_its_contents_with_their_modes(built_base, files_template):
    out = in_new_sandbox(built_base, files_template,
                         "cd /opt/tree && find . -mindepth 1 | sort; cat sub/b.txt; bin/hello.sh")
    assert out.splitlines() == ["./a.txt", "./bin", "./bin/hello.sh", "./sub", "./sub/b.txt",
                                "b", "hello from a copied script"]


def test_copy_to_a_trailing_slash_goes_into_that_dir_and_without_it_renames(
        built_base, files_template):
    out = in_new_sandbox(built_base, files_template,
                         "ls /opt/into; cat /opt/into/hello.txt; "
                         "test -f /opt/renamed.txt && cat /opt/renamed.txt")
    assert out.splitlines() == ["hello.txt", "hello", "hello"]


def test_add_unpacks_a_local_tarball_and_copy_does_not(built_base, files_template):
    out = in_new_sandbox(built_base, files_template,
                         "cat /opt/unpacked/inner/t.txt /opt/unpacked/top.txt; ls /opt/kept")
    assert out.splitlines() == ["from the tarball", "top", "bundle.tar.gz"]


def test_copy_chown_gives_the_file_to_that_user(built_base, files_template):
    out = in_new_sandbox(built_base, files_template,
                         "stat -c '%U %n' /home/user/owned.txt /opt/into/hello.txt")
    assert out.splitlines() == ["user /home/user/owned.txt", "root /opt/into/hello.txt"]


@pytest.fixture(scope="module")
def defaults_template(built_base, tmp_path_factory) -> Iterator[str]:
    ctx = write_tree(tmp_path_factory.mktemp("defaults"), {"Sandboxfile": (
        "FROM base\n"
        "ARG GREETING=hello\n"
        "ENV APP_MODE=production GREETING_SEEN=${GREETING}\n"
        "WORKDIR /srv/app\n"
        "RUN echo \"$GREETING as $(id -un) in $(pwd)\" > root-step.txt && chown user /srv/app\n"
        "USER user\n"
        "RUN echo \"as $(id -un) in $(pwd)\" > user-step.txt\n"
        "CMD [\"python\"]\n")})
    with built(built_base, ctx, "sbf-defaults", "--build-arg", "GREETING=bonjour") as name:
        yield name


def test_env_workdir_user_and_build_args_are_what_a_sandbox_starts_with(
        built_base, defaults_template):
    out = in_new_sandbox(built_base, defaults_template,
                         'pwd; id -un; echo "$APP_MODE"; echo "$GREETING_SEEN"; '
                         'echo "arg in sandbox: ${GREETING-unset}"')
    # An ARG is for the build only (as in Docker); an ENV made from it stays.
    assert out.splitlines() == ["/srv/app", "user", "production", "bonjour",
                                "arg in sandbox: unset"]


def test_run_steps_run_as_root_until_user_and_in_workdir(built_base, defaults_template):
    out = in_new_sandbox(built_base, defaults_template, "cat root-step.txt user-step.txt")
    assert out.splitlines() == ["bonjour as root in /srv/app", "as user in /srv/app"]


def test_a_template_from_base_keeps_sudo_in_its_run_steps_and_sandboxes(built_base, tmp_path):
    """base's allow_setid (its spec.toml) is inherited FROM it: `USER user` then
    `RUN sudo ...` works as in Docker, and so does sudo in the new template's sandboxes."""
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": (
        "FROM base\n"
        "USER user\n"
        "RUN sudo -n sh -c 'id -un > /etc/made-by-sudo'\n")})
    with built(built_base, ctx, "sbf-sudo") as name:
        out = in_new_sandbox(built_base, name,
                             "cat /etc/made-by-sudo; sudo -n whoami; grep NoNewPrivs /proc/self/status")
    assert out.splitlines() == ["root", "root", "NoNewPrivs:\t0"]


def test_inspect_shows_source_defaults_and_layers(built_base, defaults_template):
    r = abx(built_base, "template", "inspect", defaults_template)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    base = json.loads(abx(built_base, "template", "inspect", "base").stdout)
    assert info["name"] == defaults_template
    assert info["source"] == "Sandboxfile (FROM base, 7 steps)"  # CMD is skipped
    assert info["env"] == {"APP_MODE": "production", "GREETING_SEEN": "bonjour"}
    assert info["workdir"] == "/srv/app"
    assert info["user"] == "user"
    assert info["owner"] == "default", "the building key's team owns the template"
    assert info["sizeBytes"] >= base["sizeBytes"]
    assert info["createdMs"] >= base["createdMs"]
    # base's layer, then one each for WORKDIR and the two RUNs.
    assert info.get("layers") == 4, info
    assert defaults_template in abx(built_base, "template", "list").stdout


def test_unused_instructions_and_build_args_warn(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": "FROM base\nEXPOSE 8080\nRUN true\n"})
    try:
        r = build_ok(built_base, ctx, "sbf-warn", "--build-arg", "NOBODY_USES=1")
    finally:
        remove_template(built_base, "sbf-warn")
    warnings = [line.strip() for line in r.stderr.splitlines() if "warning:" in line]
    assert any("line 2" in w and "EXPOSE" in w for w in warnings), r.stderr
    assert any("NOBODY_USES" in w for w in warnings), r.stderr


def test_dash_f_names_a_sandboxfile_outside_the_context(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"data.txt": "from the context\n"})
    recipe = write_tree(tmp_path / "recipes", {"app.sandboxfile": (
        "FROM base\nCOPY data.txt /data.txt\n")}) / "app.sandboxfile"
    r = abx(built_base, "template", "build", str(ctx), "-f", str(recipe), "--name", "sbf-dash-f",
            timeout=BUILD_TIMEOUT)
    try:
        assert r.returncode == 0, r.stderr
        assert in_new_sandbox(built_base, "sbf-dash-f", "cat /data.txt") == "from the context\n"
    finally:
        remove_template(built_base, "sbf-dash-f")


# --- the layer cache --------------------------------------------------------------------------


def test_layer_cache_reuses_unchanged_steps_and_redoes_changed_ones(built_base, tmp_path):
    marker = uuid.uuid4().hex  # a context no earlier build has seen
    ctx = write_tree(tmp_path / "ctx", {
        "first.txt": f"first {marker}\n",
        "second.txt": "second v1\n",
        "Sandboxfile": (
            "FROM base\n"
            "ENV STAGE=cache-test\n"
            "WORKDIR /work\n"
            "COPY first.txt ./\n"
            "RUN cat first.txt > from-run.txt\n"
            "COPY second.txt ./\n"
            "RUN cat first.txt second.txt > combined.txt\n"),
    })
    name = "sbf-cache"
    try:
        first = steps(build_ok(built_base, ctx, name))
        assert len(first) == 7 and not any(map(is_cached, first)), first

        again = steps(build_ok(built_base, ctx, name))
        assert [s.removesuffix(" (cached)") for s in again] == first
        for step in again:
            assert is_cached(step) == (instruction(step) in LAYER_MAKING), again

        (ctx / "second.txt").write_text("second v2\n")
        changed = steps(build_ok(built_base, ctx, name))
        assert [is_cached(s) for s in changed[2:]] == [True, True, True, False, False], changed
        out = in_new_sandbox(built_base, name, "cat combined.txt")
        assert out == f"first {marker}\nsecond v2\n"

        fresh = steps(build_ok(built_base, ctx, name, "--no-cache"))
        assert not any(map(is_cached, fresh)), fresh
    finally:
        remove_template(built_base, name)


def test_a_sandbox_after_a_no_cache_rebuild_sees_the_rebuilt_files(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": (
        "FROM base\n"
        "RUN head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /stamp\n")})
    with built(built_base, ctx, "sbf-stamp") as name:
        before = in_new_sandbox(built_base, name, "cat /stamp")
        build_ok(built_base, ctx, name, "--no-cache")
        with sandbox(built_base, name) as sandbox_id:
            r = abx(built_base, "exec", sandbox_id, "--", "cat", "/stamp")
    assert r.returncode == 0, f"/stamp is gone after the rebuild: {r.stderr}"
    assert len(r.stdout) == 32 and r.stdout != before, (before, r.stdout)


# --- the network ------------------------------------------------------------------------------

NETWORK_STEP = f"RUN curl -sS --max-time 30 -o /dev/null http://{MIRROR}/debian/ && echo reached it\n"


def test_no_network_makes_a_run_that_needs_it_fail(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": "FROM base\n" + NETWORK_STEP})
    r = build(built_base, ctx, "sbf-offline", "--no-network")
    assert r.returncode == 1
    assert "Sandboxfile line 2: RUN curl" in r.stderr
    assert "failed with exit code 6" in r.stderr
    assert f"Could not resolve host: {MIRROR}" in r.stderr
    assert "sbf-offline" not in listed_names(built_base)


@needs_mirror
def test_without_no_network_the_same_run_passes(built_base, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {"Sandboxfile": "FROM base\n" + NETWORK_STEP})
    with built(built_base, ctx, "sbf-online") as name:
        r = build_ok(built_base, ctx, name, "--no-cache")
        assert "| reached it" in r.stderr
        assert name in listed_names(built_base)


# --- failures ---------------------------------------------------------------------------------


@pytest.fixture
def fresh_daemon() -> Iterator[Daemon]:
    """A daemon that has created no sandbox yet, so that any sandbox a build leaves shows."""
    state = private_state_dir("abx-sbf-")
    d = start_daemon(state / "state", shared_templates=False)
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


def leftovers(templates: Path) -> list[str]:
    return sorted(str(p.relative_to(templates))
                  for d in (templates, templates / ".layers") if d.is_dir()
                  for p in d.iterdir() if p.name.startswith((".building-", ".staging-")))


def test_failing_run_reports_its_exit_code_and_last_lines_and_leaves_nothing(
        fresh_daemon, tmp_path):
    ctx = write_tree(tmp_path / "ctx", {
        "hello.txt": "hello\n",
        "Sandboxfile": (
            "FROM base\n"
            "COPY hello.txt /hello.txt\n"
            "RUN echo first words; for i in $(seq 1 30); do echo noise $i; done; "
            "echo last words >&2; exit 7\n"),
    })
    r = build(fresh_daemon, ctx, "sbf-broken")
    assert r.returncode == 1
    head, _, tail = r.stderr.partition("last lines:")
    assert "Sandboxfile line 3: RUN echo first words" in head, r.stderr
    assert "failed with exit code 7" in head, r.stderr
    tail_lines = [line.strip() for line in tail.splitlines()]
    assert "| last words" in tail_lines and "| noise 30" in tail_lines, r.stderr
    assert "| first words" not in tail_lines, "only the last lines belong in the error"

    assert "sbf-broken" not in listed_names(fresh_daemon)
    templates = fresh_daemon.data_dir / "templates"
    assert leftovers(templates) == []
    assert not (templates / "sbf-broken").exists()
    r = abx(fresh_daemon, "list", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout
    # network-pool, uid-region and abx-init-* are the daemon's address pool, uid ranges and
    # init executable, not a sandbox's.
    assert sorted(p.name for p in (fresh_daemon.data_dir / "sandboxes").iterdir()
                  if p.name not in ("network-pool", "uid-region")
                  and not p.name.startswith("abx-init-")) == []


def sandboxfile_ctx(text: str):
    def make(tmp_path: Path) -> Path:
        return write_tree(tmp_path / "ctx", {"Sandboxfile": text, "inside.txt": "in\n"})
    return make


def empty_ctx(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "just-a-file.txt").parent.mkdir(parents=True)
    (ctx / "just-a-file.txt").write_text("no recipe here\n")
    return ctx


@pytest.mark.parametrize("make_ctx, name, expected", [
    pytest.param(sandboxfile_ctx("FROM base\n"), None, ["--name"], id="missing-name"),
    pytest.param(empty_ctx, "sbf-err", ["no Sandboxfile", "ctx"], id="no-sandboxfile"),
    pytest.param(sandboxfile_ctx("FROM base\nFROBNICATE now\n"), "sbf-err",
                 ["line 2", "FROBNICATE"], id="unknown-instruction"),
    pytest.param(sandboxfile_ctx("FROM base\nCOPY ../outside.txt /x\n"), "sbf-err",
                 ["line 2", "../outside.txt", "outside the build context"], id="copy-outside"),
    pytest.param(sandboxfile_ctx("FROM no-such-template\nRUN true\n"), "sbf-err",
                 ["no-such-template"], id="unknown-from"),
])
def test_mistakes_fail_with_one_clear_line(built_base, tmp_path, make_ctx, name, expected):
    (tmp_path / "outside.txt").write_text("not in the context\n")
    ctx = make_ctx(tmp_path)
    r = abx(built_base, "template", "build", str(ctx), *(["--name", name] if name else []),
            timeout=BUILD_TIMEOUT)
    assert r.returncode == 1
    # The CLI may first say what it builds; the rest is the one error line.
    lines = [line for line in r.stderr.splitlines() if not line.startswith("building ")]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("abx: ")
    for word in expected:
        assert word in lines[0], r.stderr
    assert "sbf-err" not in listed_names(built_base)


# --- removal ----------------------------------------------------------------------------------


def layers_of(daemon: Daemon, name: str) -> list[str]:
    meta = daemon.data_dir / "templates" / name / "meta.json"
    return json.loads(meta.read_text())["layers"]


def test_rm_deletes_only_the_layers_no_other_template_uses(built_base, tmp_path):
    shared = write_tree(tmp_path / "shared", {"common.txt": f"common {uuid.uuid4().hex}\n"})
    for variant in ("one", "two"):
        (shared / f"Sandboxfile.{variant}").write_text(
            f"FROM base\nCOPY common.txt /common.txt\nRUN echo {variant} > /variant\n")
    layer_dir = built_base.data_dir / "templates" / ".layers"
    names = {"one": "sbf-rm-one", "two": "sbf-rm-two"}
    try:
        for variant, name in names.items():
            r = abx(built_base, "template", "build", str(shared), "-f",
                    str(shared / f"Sandboxfile.{variant}"), "--name", name, timeout=BUILD_TIMEOUT)
            assert r.returncode == 0, r.stderr
        one, two = layers_of(built_base, names["one"]), layers_of(built_base, names["two"])
        base = layers_of(built_base, "base")
        assert one[1:] == two[1:] and one[-1:] == base, "the COPY and base layers are shared"
        assert all((layer_dir / layer).is_dir() for layer in one + two)

        r = abx(built_base, "template", "rm", names["one"])
        assert r.returncode == 0, r.stderr
        assert names["one"] not in listed_names(built_base)
        assert not (layer_dir / one[0]).exists(), "its own RUN layer must go"
        assert all((layer_dir / layer).is_dir() for layer in two), "the other's layers stay"

        out = in_new_sandbox(built_base, names["two"], "cat /common.txt /variant")
        assert out.splitlines()[1] == "two"
        r = abx(built_base, "template", "rm", names["two"])
        assert r.returncode == 0, r.stderr
        assert not any((layer_dir / layer).exists() for layer in two[:-1])
        assert (layer_dir / base[0]).is_dir(), "base's layer stays"
        assert in_new_sandbox(built_base, "base", "cat /etc/debian_version").startswith("12")
    finally:
        for name in names.values():
            remove_template(built_base, name)
