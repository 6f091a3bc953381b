"""`file_ops`: files inside the sandbox. No jail: the sandbox is the boundary; paths are
checked only for nonsense (empty, NUL, absurd length). Relative paths are from the server's
working directory."""

from __future__ import annotations

import base64
import os
import shutil
import stat
from typing import Any

from ..api import Call, row
from ..errors import HttpError, bad_input, from_os_error

MAX_READ = 64 * 1024 * 1024
PATH = {"type": "string", "description": "absolute, or relative to the server's directory"}
ENCODING = {"enum": ["utf-8", "base64"], "default": "utf-8"}


def checked_path(value: str, field: str = "path") -> str:
    """`value` as a normalized path, or a 400 naming `field`."""
    if not value:
        raise bad_input(field, "empty path")
    if "\0" in value:
        raise bad_input(field, "path contains a NUL byte")
    if len(value) > 4096:
        raise bad_input(field, f"path of {len(value)} characters; the limit is 4096")
    return os.path.normpath(os.path.abspath(value))


def entry(path: str, name: str | None = None) -> dict[str, Any]:
    """One file's facts (lstat: a symlink is reported as itself)."""
    info = os.lstat(path)
    kind = ("directory" if stat.S_ISDIR(info.st_mode) else "symlink"
            if stat.S_ISLNK(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other")
    facts: dict[str, Any] = {"name": name or os.path.basename(path) or path, "path": path,
                             "type": kind, "size": info.st_size,
                             "mode": oct(stat.S_IMODE(info.st_mode)),
                             "modified": info.st_mtime}
    if kind == "symlink":
        facts["target"] = os.readlink(path)
    return facts


def read(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    try:
        size = os.path.getsize(path)
        if size > MAX_READ:
            raise HttpError(413, f"{path}: {size} bytes; the read limit is {MAX_READ}",
                            field="path")
        with open(path, "rb") as file:
            data = file.read(MAX_READ + 1)
    except OSError as error:
        raise from_os_error(error, path) from None
    if call.args["encoding"] == "base64":
        return {"path": path, "encoding": "base64", "content": base64.b64encode(data).decode()}
    try:
        return {"path": path, "encoding": "utf-8", "content": data.decode()}
    except UnicodeDecodeError:
        raise bad_input("encoding", f"{path} is not UTF-8 text; read it with "
                        "encoding=base64") from None


def write(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    content: str = call.args["content"]
    if call.args["encoding"] == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except ValueError:
            raise bad_input("content", "not valid base64") from None
    else:
        data = content.encode()
    try:
        if call.args["make_parents"]:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab" if call.args["append"] else "wb") as file:
            file.write(data)
    except OSError as error:
        raise from_os_error(error, path) from None
    return {"path": path, "bytes_written": len(data)}


def list_dir(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    depth: int = call.args["depth"]
    if depth < 1 or depth > 16:
        raise bad_input("depth", f"must be 1 to 16, got {depth}")
    entries: list[dict[str, Any]] = []
    try:
        _walk(path, depth, entries)
    except OSError as error:
        raise from_os_error(error, path) from None
    return {"path": path, "entries": entries}


def _walk(path: str, depth: int, into: list[dict[str, Any]]) -> None:
    with os.scandir(path) as scan:
        names = sorted(item.name for item in scan)
    for name in names:
        child = os.path.join(path, name)
        try:
            facts = entry(child)
        except FileNotFoundError:  # removed meanwhile
            continue
        into.append(facts)
        if depth > 1 and facts["type"] == "directory":
            try:
                _walk(child, depth - 1, into)
            except PermissionError:
                continue


def stat_path(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    try:
        return entry(path)
    except OSError as error:
        raise from_os_error(error, path) from None


def mkdir(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    try:
        if call.args["parents"]:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except OSError as error:
        raise from_os_error(error, path) from None
    return {"path": path}


def delete(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    if path == "/":
        raise bad_input("path", "refusing to delete /")
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            if not call.args["recursive"]:
                if os.listdir(path):
                    raise bad_input("recursive", f"{path} is a non-empty directory; pass "
                                    "recursive=true to delete it with its contents")
                os.rmdir(path)
            else:
                shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError as error:
        raise from_os_error(error, path) from None
    return {"path": path, "deleted": True}


def move(call: Call) -> dict[str, Any]:
    source = checked_path(call.args["source"], "source")
    destination = checked_path(call.args["destination"], "destination")
    if not os.path.lexists(source):
        raise HttpError(404, f"{source}: no such file or directory", field="source")
    if os.path.lexists(destination) and not call.args["overwrite"]:
        raise HttpError(409, f"{destination}: already exists; pass overwrite=true",
                        field="destination")
    try:
        shutil.move(source, destination)
    except OSError as error:
        raise from_os_error(error, source) from None
    return {"source": source, "destination": destination}


_PATH_ONLY = {"path": PATH}
ROWS = [
    row("GET", "/files/read", "file_ops", read, "A file's content (UTF-8 text or base64)",
        {"path": PATH, "encoding": ENCODING}, ("path",)),
    row("POST", "/files/write", "file_ops", write, "Writes (or appends to) a file",
        {"path": PATH, "content": {"type": "string"}, "encoding": ENCODING,
         "append": {"type": "boolean", "default": False},
         "make_parents": {"type": "boolean", "default": True}}, ("path", "content")),
    row("GET", "/files/list", "file_ops", list_dir, "A directory's entries, `depth` levels deep",
        {"path": PATH, "depth": {"type": "integer", "default": 1}}, ("path",)),
    row("GET", "/files/stat", "file_ops", stat_path, "Type, size, mode and mtime of a path",
        _PATH_ONLY, ("path",)),
    row("POST", "/files/mkdir", "file_ops", mkdir, "Makes a directory (and its parents)",
        {"path": PATH, "parents": {"type": "boolean", "default": True}}, ("path",)),
    row("POST", "/files/delete", "file_ops", delete,
        "Deletes a file, or a directory (non-empty only with recursive=true)",
        {"path": PATH, "recursive": {"type": "boolean", "default": False}}, ("path",)),
    row("POST", "/files/move", "file_ops", move, "Moves or renames a file or directory",
        {"source": PATH, "destination": PATH,
         "overwrite": {"type": "boolean", "default": False}}, ("source", "destination")),
]
