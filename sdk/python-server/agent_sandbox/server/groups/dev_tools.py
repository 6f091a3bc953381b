"""`dev_tools`: what a coding agent asks about a checkout: git status/diff/log, a code search,
and which developer tools (compilers, test runners, language servers) are installed.
Running tests or builds is `process/run`; this group answers in structured JSON instead."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

from ..api import Call, row
from ..errors import HttpError, bad_input
from .file_ops import checked_path

TOOLS = ["git", "rg", "grep", "python3", "pip", "pytest", "node", "npm", "tsc", "go", "cargo",
         "rustc", "gcc", "g++", "clang", "make", "cmake", "java", "ruff", "mypy",
         # language servers
         "pylsp", "pyright-langserver", "typescript-language-server", "clangd", "gopls",
         "rust-analyzer"]
MAX_OUTPUT = 4 * 1024 * 1024
GIT_TIMEOUT = 60


def _git(path: str, *args: str) -> str:
    if shutil.which("git") is None:
        raise HttpError(503, "git is not installed in this sandbox")
    try:
        done = subprocess.run(["git", "-C", path, *args], capture_output=True, timeout=GIT_TIMEOUT,
                              check=False)
    except subprocess.TimeoutExpired:
        raise HttpError(504, f"git {args[0]} took over {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise HttpError(400, f"git {args[0]} in {path}: {message[-1] if message else 'failed'}",
                        field="path")
    return done.stdout[:MAX_OUTPUT].decode(errors="replace")


def git_status(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    out = _git(path, "status", "--porcelain=v1", "--branch")
    lines = out.splitlines()
    branch = lines[0][3:] if lines and lines[0].startswith("## ") else None
    files = [{"status": line[:2], "path": line[3:]} for line in lines if not line.startswith("##")]
    return {"path": path, "branch": branch, "files": files, "clean": not files}


def git_diff(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    args = ["diff", "--no-color"]
    if call.args["staged"]:
        args.append("--cached")
    return {"path": path, "diff": _git(path, *args)}


def git_log(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    limit: int = call.args["limit"]
    if limit < 1 or limit > 1000:
        raise bad_input("limit", f"must be 1 to 1000, got {limit}")
    out = _git(path, "log", f"-{limit}", "--format=%H%x1f%an%x1f%aI%x1f%s")
    commits = []
    for line in out.splitlines():
        sha, author, date, subject = (line.split("\x1f") + ["", "", ""])[:4]
        commits.append({"commit": sha, "author": author, "date": date, "subject": subject})
    return {"path": path, "commits": commits}


def search(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    pattern: str = call.args["pattern"]
    limit: int = call.args["max_results"]
    if not pattern:
        raise bad_input("pattern", "empty pattern")
    if limit < 1 or limit > 10000:
        raise bad_input("max_results", f"must be 1 to 10000, got {limit}")
    try:
        regex = re.compile(pattern if call.args["regex"] else re.escape(pattern),
                           0 if call.args["case_sensitive"] else re.IGNORECASE)
    except re.error as error:
        raise bad_input("pattern", f"not a regular expression ({error})") from None
    if not os.path.exists(path):
        raise HttpError(404, f"{path}: no such file or directory", field="path")
    matches: list[dict[str, Any]] = []
    for file in _files(path):
        if _search_file(file, regex, limit, matches):
            return {"matches": matches, "truncated": True}
    return {"matches": matches, "truncated": False}


def _files(path: str) -> Any:
    if os.path.isfile(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "node_modules", "__pycache__",
                                                     ".venv", "venv"))
        for name in sorted(files):
            yield os.path.join(root, name)


def _search_file(file: str, regex: re.Pattern[str], limit: int,
                 matches: list[dict[str, Any]]) -> bool:
    """Adds `file`'s matching lines; True once `limit` is reached."""
    try:
        with open(file, "rb") as handle:
            head = handle.read(8192)
            if b"\0" in head:  # binary
                return False
            data = head + handle.read(MAX_OUTPUT)
    except OSError:
        return False
    for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
        if regex.search(line):
            matches.append({"path": file, "line": number, "text": line[:500]})
            if len(matches) >= limit:
                return True
    return False


def tools(call: Call) -> dict[str, Any]:
    return {"tools": {name: shutil.which(name) for name in TOOLS}}


_PATH = {"path": {"type": "string", "default": "."}}
ROWS = [
    row("GET", "/dev/tools", "dev_tools", tools,
        "Which developer tools and language servers are on PATH (name: path or null)"),
    row("GET", "/dev/git/status", "dev_tools", git_status,
        "Branch and changed files of the repository at `path`", _PATH),
    row("GET", "/dev/git/diff", "dev_tools", git_diff, "The working tree's (or staged) diff",
        {**_PATH, "staged": {"type": "boolean", "default": False}}),
    row("GET", "/dev/git/log", "dev_tools", git_log, "The last `limit` commits",
        {**_PATH, "limit": {"type": "integer", "default": 20}}),
    row("POST", "/dev/search", "dev_tools", search,
        "Lines matching `pattern` in the text files under `path` (skips .git, node_modules)",
        {"pattern": {"type": "string"}, **_PATH,
         "regex": {"type": "boolean", "default": False},
         "case_sensitive": {"type": "boolean", "default": True},
         "max_results": {"type": "integer", "default": 200}}, ("pattern",)),
]
