"""envd's details the E2B SDK tests rely on (issue 14 item 7): RemoveAll, symlink
entries, a relative cwd, X-Metadata-* file metadata and watch events."""
from __future__ import annotations

import httpx
import pytest
from e2b import FilesystemEventType, FileType, SandboxException
from e2b.sandbox.filesystem.filesystem import WriteEntry


def test_remove_missing_path_succeeds(sandbox):
    """As E2B's test_remove_non_existing_file: envd removes with os.RemoveAll."""
    sandbox.files.remove("no_such_file.txt")
    sandbox.files.remove("/home/user/no/such/dir")


def test_symlink_entry_and_relative_cwd(sandbox):
    """As E2B's test_file_symlink: a relative cwd is taken from the user's home; a
    symlink's entry has its target's type and the absolute, resolved target."""
    sandbox.files.make_dir("link-dir")
    sandbox.files.write("link-dir/target.txt", "hello")
    assert sandbox.commands.run("pwd", cwd="link-dir").stdout.strip() == "/home/user/link-dir"
    sandbox.commands.run("ln -s target.txt link.txt && ln -s nowhere dangling", cwd="link-dir")
    info = sandbox.files.get_info("link-dir/link.txt")
    assert info.type == FileType.FILE
    assert info.symlink_target == "/home/user/link-dir/target.txt"
    assert info.permissions == "Lrwxrwxrwx"
    listed = {e.name: e for e in sandbox.files.list("link-dir")}
    assert listed["link.txt"].symlink_target == "/home/user/link-dir/target.txt"
    # Dangling: envd names the link itself and cannot tell a type (so the SDK's
    # list leaves it out).
    assert "dangling" not in listed
    dangling = sandbox.files.get_info("link-dir/dangling")
    assert dangling.symlink_target == "/home/user/link-dir/dangling" and dangling.type is None


def test_metadata_written_read_listed_renamed_and_cleared(sandbox):
    """As E2B's test_metadata.py: X-Metadata-* headers become user.e2b.* xattrs,
    surfaced by get_info, list and rename; an overwrite without clears them."""
    meta = {"author": "mish", "purpose": "upload"}
    info = sandbox.files.write("meta/a.txt", "x", metadata=meta)
    assert info.metadata == meta
    assert sandbox.files.get_info("meta/a.txt").metadata == meta
    assert {e.name: e.metadata for e in sandbox.files.list("meta")}["a.txt"] == meta
    assert sandbox.files.rename("meta/a.txt", "meta/b.txt").metadata == meta
    infos = sandbox.files.write_files(
        [WriteEntry(path="meta/1.txt", data="1"), WriteEntry(path="meta/2.txt", data="2")],
        metadata={"source": "suite"})
    assert [i.metadata for i in infos] == [{"source": "suite"}] * 2
    assert sandbox.files.write("meta/b.txt", "y").metadata is None
    assert sandbox.files.get_info("meta/b.txt").metadata is None


def test_metadata_set_inside_the_sandbox_is_surfaced(sandbox):
    """As E2B's test_metadata_set_via_xattrs_surfaced_in_get_info."""
    sandbox.files.write("x.txt", "x")
    sandbox.commands.run("python3 -c \"import os; os.setxattr('/home/user/x.txt', "
                         "'user.e2b.author', b'mish')\"")
    assert sandbox.files.get_info("x.txt").metadata == {"author": "mish"}


def test_invalid_metadata_header_is_refused(sandbox, daemon):
    """envd's ValidateMetadata: a value outside printable ASCII is a 400 (the SDK
    checks first; a plain HTTP client does not)."""
    headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "X-Metadata-Key": "caf\u00e9".encode(),
               "X-Access-Token": sandbox._envd_access_token or ""}
    reply = httpx.post(f"{daemon.url}/files", params={"path": "bad.txt", "username": "user"},
                       headers=headers, content=b"x",
                       )
    assert reply.status_code == 400, reply.text
    assert not sandbox.files.exists("bad.txt")


def test_watch_new_file_events_and_entries(sandbox):
    """As E2B's test_watch_iterated and test_watch_directory_changes_with_entry_info:
    a new file written through the API is CREATE, CHMOD, WRITE (envd chowns it), and
    include_entry attaches the entry to each."""
    sandbox.files.make_dir("watched")
    handle = sandbox.files.watch_dir("watched", include_entry=True, allow_network_mounts=True)
    try:
        sandbox.files.write("watched/new.txt", "hello")
        events = handle.get_new_events()
        assert [e.type for e in events] == [FilesystemEventType.CREATE, FilesystemEventType.CHMOD,
                                            FilesystemEventType.WRITE], events
        for event in events:
            assert event.name == "new.txt"
            assert event.entry is not None and event.entry.path == "/home/user/watched/new.txt"
            assert event.entry.type == FileType.FILE
    finally:
        handle.stop()


def test_user_writes_into_a_new_dir_under_a_root_owned_one(sandbox):
    """As E2B's 'write multiple files' (e2b-js-sdk write.test.ts), which writes /0/... as
    `user`: envd (root) makes the missing /0 and chowns it to the user. So do we, for
    the missing directories only; the file is still written as the user."""
    infos = sandbox.files.write_files(
        [WriteEntry(path="/0/multi.txt", data="zero"), WriteEntry(path="one.txt", data="one")]
    )
    assert [i.path for i in infos] == ["/0/multi.txt", "/home/user/one.txt"]
    assert sandbox.files.read("/0/multi.txt") == "zero"
    made = sandbox.files.get_info("/0")
    assert (made.owner, made.group) == ("user", "user")
    assert sandbox.files.get_info("/0/multi.txt").owner == "user"
    assert sandbox.files.make_dir("/srv/a/b")
    assert sandbox.files.get_info("/srv/a").owner == "user"
    assert sandbox.files.get_info("/srv").owner == "root"  # was there: unchanged


def test_user_still_cannot_overwrite_a_root_owned_file(sandbox):
    """envd would overwrite /etc/hostname and chown it; a missing directory is all we
    make as root: an existing file keeps its owner and its permissions hold."""
    before = sandbox.files.read("/etc/hostname")
    with pytest.raises(SandboxException) as refused:
        sandbox.files.write("/etc/hostname", "mine")
    assert "cannot write '/etc/hostname'" in str(refused.value)
    assert sandbox.files.read("/etc/hostname") == before
    assert sandbox.files.get_info("/etc/hostname").owner == "root"
    # A link the user planted into a root-owned dir gives away only what is new.
    sandbox.commands.run("ln -s /etc /home/user/etc-link")
    sandbox.files.write("/home/user/etc-link/abx-new/f.txt", "f")
    assert sandbox.files.get_info("/etc/abx-new").owner == "user"
    assert sandbox.files.get_info("/etc").owner == "root"
