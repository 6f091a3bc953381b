"""agent_sandbox.Template against the daemon's /abx/v1/templates: list, get, remove, builds
from a Sandboxfile and image imports."""
from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from agent_sandbox import InvalidArgumentError, NotFoundError, Sandbox, Template, TemplateBuildError


@pytest.mark.offline
def test_list_get_and_missing(template_daemon):
    kw = {"api_url": template_daemon.url, "api_key": template_daemon.api_key}

    async def scenario():
        names = {t.name for t in await Template.list(**kw)}
        assert {"base", "host", "code-interpreter-v1"} <= names
        host = await Template.get("host", **kw)
        assert host.resolved == "host"
        with pytest.raises(NotFoundError):
            await Template.get("no-such-template", **kw)
        with pytest.raises(NotFoundError):
            await Template.remove("no-such-template", **kw)

    asyncio.run(scenario())


def test_build_from_a_sandboxfile_streams_steps_and_makes_a_usable_template(built_base, tmp_path):
    kw = {"api_url": built_base.url, "api_key": built_base.api_key}
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "hello.txt").write_text("hello from the context\n")
    (ctx / "Sandboxfile").write_text(
        "FROM base\n"
        "ARG WHO=nobody\n"
        "COPY hello.txt /srv/\n"
        "RUN echo \"hi $WHO\" > /srv/greeting && cat /srv/greeting\n"
        "ENV MODE=sdk\n"
        "WORKDIR /srv\n")
    progress: list[str] = []

    async def scenario():
        try:
            info = await Template.build("sdk-sandboxfile", path=ctx, build_args={"WHO": "sdk"},
                                        on_progress=progress.append, **kw)
            assert info.name == "sdk-sandboxfile"
            assert info.source == "Sandboxfile (FROM base, 6 steps)"
            assert info.env == {"MODE": "sdk"} and info.workdir == "/srv"
            assert info.size_bytes > 0
            assert info.layers == 4, info  # base, COPY, RUN, WORKDIR
            assert info.start_cmd == "" and info.ready_cmd == ""  # no CMD, no READY
            assert (await Template.get("sdk-sandboxfile", **kw)).workdir == "/srv"
            sandbox = await Sandbox.create(template="sdk-sandboxfile", **kw)
            try:
                result = await sandbox.commands.run('cat greeting hello.txt; echo "$MODE"')
                assert result.stdout.splitlines() == ["hi sdk", "hello from the context", "sdk"]
            finally:
                await sandbox.kill()
        finally:
            await Template.remove("sdk-sandboxfile", force=True, **kw)

    asyncio.run(scenario())
    assert "step 3/6: COPY hello.txt /srv/" in progress, progress
    assert "  | hi sdk" in progress, progress
    assert progress[-1].startswith("done: sdk-sandboxfile")


def test_dockerfile_elsewhere_and_the_cache(built_base, tmp_path):
    kw = {"api_url": built_base.url, "api_key": built_base.api_key}
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("data\n")
    recipe = tmp_path / "recipe.sandboxfile"
    recipe.write_text("FROM base\nCOPY data.txt /data.txt\n")
    first: list[str] = []
    again: list[str] = []

    async def scenario():
        try:
            await Template.build("sdk-dockerfile", path=ctx, dockerfile=recipe,
                                 on_progress=first.append, **kw)
            await Template.build("sdk-dockerfile", path=ctx, dockerfile=recipe,
                                 on_progress=again.append, **kw)
        finally:
            await Template.remove("sdk-dockerfile", force=True, **kw)

    asyncio.run(scenario())
    assert "step 2/2: COPY data.txt /data.txt" in first, first
    assert "step 2/2: COPY data.txt /data.txt (cached)" in again, again


def test_failing_sandboxfile_build_raises_with_the_exit_code(built_base, tmp_path):
    kw = {"api_url": built_base.url, "api_key": built_base.api_key}
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Sandboxfile").write_text("FROM base\nRUN echo about to fail; exit 9\n")

    async def scenario():
        with pytest.raises(TemplateBuildError) as failure:
            await Template.build("sdk-broken", path=ctx, **kw)
        message = str(failure.value)
        assert "Sandboxfile line 2" in message and "exit code 9" in message, message
        assert "about to fail" in message
        assert "sdk-broken" not in {t.name for t in await Template.list(**kw)}
        with pytest.raises(InvalidArgumentError):
            await Template.build("sdk-broken", path=tmp_path / "no-such-dir", **kw)

    asyncio.run(scenario())


def docker_save_tar(out: Path) -> Path:
    """A one-layer image as `docker save` writes it, with an env and a working dir."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        add_bytes(tar, "data/hello.txt", b"from the image\n")
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Env": ["FOO=bar"], "WorkingDir": "/data"},
                         "rootfs": {"type": "layers", "diff_ids": [
                             "sha256:" + hashlib.sha256(layer.getvalue()).hexdigest()]}}).encode()
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, "config.json", config)
        add_bytes(tar, "layer/layer.tar", layer.getvalue())
        add_bytes(tar, "manifest.json", json.dumps([{"Config": "config.json", "RepoTags": [],
                                                     "Layers": ["layer/layer.tar"]}]).encode())
    return out


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def test_import_image_from_a_tar_and_from_a_dir(template_daemon, tmp_path):
    kw = {"api_url": template_daemon.url, "api_key": template_daemon.api_key}
    image = docker_save_tar(tmp_path / "image.tar")
    unpacked = tmp_path / "unpacked"
    with tarfile.open(image) as tar:
        tar.extractall(unpacked)
    progress: list[str] = []

    async def scenario():
        try:
            for name, source in (("sdk-import-tar", image), ("sdk-import-dir", unpacked)):
                info = await Template.import_image(name, source, on_progress=progress.append,
                                                   **kw)
                assert info.name == name
                assert str(source) in info.source
                assert info.env.get("FOO") == "bar" and info.workdir == "/data"
            with pytest.raises(InvalidArgumentError):
                await Template.import_image("sdk-import-bad", tmp_path / "absent.tar", **kw)
        finally:
            for name in ("sdk-import-tar", "sdk-import-dir"):
                if name in {t.name for t in await Template.list(**kw)}:
                    await Template.remove(name, **kw)

    asyncio.run(scenario())
    assert any(line.startswith("done: sdk-import-tar") for line in progress), progress
