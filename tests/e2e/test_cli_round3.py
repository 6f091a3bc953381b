"""Issue 36, CLI items: errors without errno text, the `-it` hint of `abx exec ID -- bash`,
`abx stats -w` to the sandbox's end, exit statuses (the command's own, 125 for abx's
failures, 2 for usage errors) and shell completion of live ids and template names. Each
test drives the real `abx` against a real daemon."""
from __future__ import annotations

import pytest
from harness import Daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build


def make(daemon: Daemon, *extra: str) -> str:
    r = abx(daemon, "create", "--template", "host", *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


# --- item 1: an unknown template reads as a mistyped name, not as a missing file -------


def test_an_unknown_template_says_what_was_meant_without_errno_text(daemon):
    r = abx(daemon, "create", "bsae")
    assert r.returncode != 0
    assert r.stderr.strip().splitlines() == [
        "abx: could not create the sandbox: unknown template 'bsae'; did you mean base? "
        "known: base, code-interpreter-v1, host"]
