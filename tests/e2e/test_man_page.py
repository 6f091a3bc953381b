"""Issue 36 minor: `man abx` has every command with its options, EXIT STATUS and EXAMPLES.
The page (`abx __man`, what `make install` writes to share/man/man1/abx.1) is checked
against what the real `abx` says in `abx ... --help`: every command path the help lists has
a section, and every flag its help lists is in that section; man renders it without a warning."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from harness import ABX_BIN

pytestmark = pytest.mark.offline

HELP_ENV = {**os.environ, "HOME": "~"}  # as `make install` makes it: the page names ~


def abx_out(*args: str) -> str:
    done = subprocess.run([str(ABX_BIN), *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, env=HELP_ENV)
    assert done.returncode == 0, done.stderr
    return done.stdout


def help_section(text: str, title: str) -> list[str]:
    """The entry lines (two-space indent) of `title:` in a --help text."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            inside = line == f"{title}:"
        elif inside and re.match(r"^  \S", line):
            lines.append(line)
    return lines


def commands_and_flags() -> dict[str, set[str]]:
    """Every command path that `--help` lists, walked down, with the long flags it shows."""
    found: dict[str, set[str]] = {}
    todo = [[]]
    while todo:
        words = todo.pop()
        text = abx_out(*words, "--help")
        if words:
            found["abx " + " ".join(words)] = {  # "--no-sig-proxy{false}": a flag's false value
                re.sub(r"\{.*\}$", "", flag) for line in help_section(text, "Options")
                for flag in line.split()[0].split(",") if flag.startswith("--")} - {"--help"}
        for line in help_section(text, "Subcommands"):
            todo.append([*words, line.split()[0].rstrip(",")])
    return found


@pytest.fixture(scope="module")
def page() -> str:
    return abx_out("__man")


def sections(page: str) -> dict[str, str]:
    """`.SS "abx template build"` -> that section's text, roff hyphens as plain ones."""
    plain = page.replace("\\-", "-")
    parts = re.split(r'^\.S[SH] "?([^"\n]*)"?\n', plain, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_command_and_its_flags_have_their_place_in_the_page(page: str):
    tree = commands_and_flags()
    assert {"abx create", "abx exec", "abx run", "abx template build", "abx daemon start",
            "abx mcp install"} <= tree.keys()
    by_title = sections(page)
    missing_commands = sorted(tree.keys() - by_title.keys())
    assert not missing_commands, missing_commands
    missing_flags = {path: sorted(f for f in flags if f not in by_title[path])
                     for path, flags in tree.items()}
    assert not {path: f for path, f in missing_flags.items() if f}
    assert "--timeout" in by_title["abx exec"] and "--step-timeout" in by_title["abx template build"]


def test_exit_status_and_examples_say_what_the_readme_says(page: str):
    by_title = sections(page)
    assert {"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "EXAMPLES",
            "ENVIRONMENT"} <= by_title.keys()
    exit_codes = re.findall(r"^\.B (\d+)$", by_title["EXIT STATUS"], flags=re.M)
    assert exit_codes == ["0", "1", "2", "124", "125", "130", "137"]
    assert "out of memory" in by_title["EXIT STATUS"]
    assert "abx run base -- python3" in by_title["EXAMPLES"]
    assert page.startswith(".\\\"") and "\n.TH ABX 1 " in page


def rendered(path: str) -> subprocess.CompletedProcess:
    if shutil.which("man"):
        return subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True,
                              env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""},
                              timeout=60)
    if shutil.which("groff"):
        return subprocess.run(["groff", "-man", "-Tutf8", "-ww", path], capture_output=True,
                              text=True, timeout=60)
    pytest.skip("neither man (man-db) nor groff is installed: cannot render the page")


def test_man_renders_the_page_without_a_warning(page: str, tmp_path):
    path = tmp_path / "abx.1"
    path.write_text(page)
    done = rendered(str(path))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = re.sub(r".\x08", "", done.stdout)  # no overstrike bold/underline
    assert "EXIT STATUS" in text and "EXAMPLES" in text
    assert "abx template build" in text and "--no-network" in text
