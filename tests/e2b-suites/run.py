"""Runs E2B's own SDK test suites (pinned copies in ../shared/e2b-suites) against a private
daemon and compares each test's outcome with expected.toml, the list of the tests we do not
pass and why. Started by run.sh, with the suites' own venv (requirements.txt)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlparse

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests"))

sys.path.insert(0, str(REPO / "tests" / "net"))

import world  # tests/net's private internet
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx

EXPECTED = HERE / "expected.toml"
DEFAULT_SUITES = REPO.parent / "shared" / "e2b-suites"
TEMPLATE_BUILD_TIMEOUT = 1800
# The category every expected failure carries; the README's table counts by it.
CATEGORIES = {
    "out-of-scope": "a feature declared out of scope (memory snapshots, SDK template builds, "
                    "R and Java kernels)",
    "suite-assumption": "an assumption of the suite a self-hosted daemon cannot meet "
                        "(mocks of https://api.$E2B_DOMAIN, wildcard DNS and TLS for sandbox "
                        "hosts, E2B's cloud)",
    "gap": "a gap of ours still to fix (the issue item is named)",
}


class Expect(NamedTuple):
    """Why a test is expected to fail; a flaky one may pass too (the reason says when)."""
    category: str
    reason: str
    flaky: bool = False


@dataclass(frozen=True)
class Suite:
    name: str
    kind: str  # "pytest" or "vitest"
    args: tuple[str, ...] = ()


SUITES = (
    Suite("e2b-python-sdk", "pytest"),
    Suite("code-interpreter-python", "pytest"),
    Suite("e2b-js-sdk", "vitest", ("--config", "vitest.e2bsuite.config.mts")),
    Suite("code-interpreter-js", "vitest"),
)
# The suites' network tests: they curl 1.1.1.1, 8.8.8.8 and connectivitycheck.gstatic.com
# from inside sandboxes, so they run apart, against a daemon inside tests/net's private world
# (world.sh), which serves those addresses and names itself and has no route anywhere else.
NETWORK_TESTS = {
    "e2b-python-sdk": ("tests/sync/sandbox_sync/test_network.py",
                       "tests/async/sandbox_async/test_network.py",
                       "tests/sync/sandbox_sync/test_internet_access.py",
                       "tests/async/sandbox_async/test_internet_access.py"),
    "e2b-js-sdk": ("tests/sandbox/network.test.ts", "tests/sandbox/internetAccess.test.ts"),
}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--suites-dir", type=Path,
                   default=Path(os.environ.get("ABX_E2B_SUITES", DEFAULT_SUITES)))
    p.add_argument("--only", nargs="*", default=[s.name for s in SUITES],
                   choices=[s.name for s in SUITES], help="the suites to run (default: all)")
    p.add_argument("--workers", type=int, default=2, help="tests run at once per suite")
    p.add_argument("--timeout", type=int, default=60, help="seconds per test")
    p.add_argument("--results", type=Path, help="also write every outcome here (JSON)")
    p.add_argument("--from-results", type=Path,
                   help="compare (or tabulate) the outcomes in this JSON instead of running")
    p.add_argument("--update-expected", action="store_true",
                   help="rewrite expected.toml from this run: drop tests that pass, add new "
                        "failures under 'unsorted' for a person to give a reason")
    p.add_argument("--table", action="store_true",
                   help="print the README's table (passed / expected-fail by category)")
    p.add_argument("--keep", action="store_true",
                   help="keep the scratch dir (each suite's run.log and report) afterwards")
    p.add_argument("--network", choices=("world", "skip", "only"), default="world",
                   help="the suites' network tests: run them in tests/net's private world "
                        "after the rest (default; a failure where the world cannot be made: "
                        "it needs root and the world's tools), skip them, or run only them")
    return p.parse_args()


# --- running -------------------------------------------------------------------------------

def copy_suites(src: Path, scratch: Path, names: list[str]) -> None:
    """The tests write caches beside themselves: they run from a copy. The JS folders get
    our lock files, so that npm installs the versions the expectation was made with."""
    for name in names:
        shutil.copytree(src / name, scratch / name, ignore=shutil.ignore_patterns("node_modules"))
        lock = HERE / "locks" / name / "package-lock.json"
        if lock.exists():
            shutil.copy(lock, scratch / name / "package-lock.json")


def npm_install(folder: Path) -> None:
    has_lock = (folder / "package-lock.json").exists()
    cmd = ["npm", "ci" if has_lock else "install", "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run(cmd, cwd=folder, check=True, timeout=900)


def start_private_daemon() -> tuple[Daemon, Path]:
    state = private_state_dir("abx-e2b-suites-")
    # Two workers per suite make a few dozen sandboxes at once: let limits overcommit, as
    # tests/conftest.py does for the session daemon (limits are caps, not use).
    # No sandbox networks: no test may send a packet off this machine; the network tests
    # run in the private world (run_network_tests).
    (state / "config.json").write_text(
        '{"hostCaps": {"memoryPercent": 1000}, "network": {"enabled": false}}')
    return start_daemon(state / "state", extra_args=("--config", str(state / "config.json"))), state


def build_templates() -> None:
    """The suites ask for `base` and `code-interpreter-v1`: built once in the shared test
    templates dir (as tests/conftest.py does), so no create waits for a build. By a daemon of
    their own with sandbox networks on: a build's RUN steps fetch Debian's packages, which the
    suites' daemon (no sandbox networks) could not (`make e2b-suites` alone on a new machine)."""
    state = private_state_dir("abx-e2b-builds-")
    d = start_daemon(state / "state")
    try:
        for name in ("base", "code-interpreter-v1"):
            r = abx(d, "template", "build", name, timeout=TEMPLATE_BUILD_TIMEOUT)
            if r.returncode != 0:
                raise SystemExit(f"e2b-suites: building {name} failed:\n{r.stderr[-3000:]}")
    finally:
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)


def suite_env(d: Daemon) -> dict[str, str]:
    """What `abx env e2b` prints, plus the domain the SDKs build sandbox hosts from."""
    env = dict(os.environ)
    env.update(E2B_API_URL=d.url, E2B_SANDBOX_URL=d.url, E2B_API_KEY=d.api_key,
               E2B_DOMAIN=f"localhost:{urlparse(d.url).port}")
    env.pop("E2B_DEBUG", None)
    # The JS suite reads CI as "E2B's CI built dist/ first" and fails its bundle check without
    # it; that check is of E2B's bundler, not of the daemon, so the suites never see CI.
    env.pop("CI", None)
    return env


class Selection(NamedTuple):
    """Which of a suite's test files run: `files` only (when given), less `excluded`."""
    files: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    tag: str = "main"  # names the run's log and report


ALL_TESTS = Selection()


def run_pytest(suite: Suite, folder: Path, env: dict[str, str], args: argparse.Namespace,
               selection: Selection = ALL_TESTS) -> dict:
    report = folder / f"junit-{selection.tag}.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", str(args.workers),
           f"--timeout={args.timeout}", "--junitxml", str(report), "-o", "junit_family=xunit1",
           *suite.args, *(f"--ignore={f}" for f in selection.excluded),
           *(selection.files or ("tests",))]
    log = run_logged(suite, cmd, folder, env, selection.tag)
    return parse_junit(suite.name, report) or no_report(suite, log)


def run_vitest(suite: Suite, folder: Path, env: dict[str, str], args: argparse.Namespace,
               selection: Selection = ALL_TESTS) -> dict:
    report = folder / f"vitest-{selection.tag}.json"
    suite_args = list(suite.args)
    if selection.excluded:
        suite_args = excluding_config(suite, folder, selection.excluded)
        env = {**env, "ABX_VITEST_EXCLUDE": json.dumps(selection.excluded)}
    cmd = ["npx", "vitest", "run", *suite_args, f"--testTimeout={args.timeout * 1000}",
           f"--hookTimeout={args.timeout * 1000}", f"--maxWorkers={args.workers}",
           "--reporter=json", f"--outputFile={report}", *selection.files]
    log = run_logged(suite, cmd, folder, env, selection.tag)
    return parse_vitest(suite.name, folder, report) or no_report(suite, log)


EXCLUDING_CONFIG = """// Written by tests/e2b-suites/run.py: {config} less the files ABX_VITEST_EXCLUDE (a JSON
// list) names, which run apart (vitest's --exclude does not reach inline projects).
import {{ configDefaults }} from 'vitest/config'
import base from './{config}'

const excluded: string[] = JSON.parse(process.env.ABX_VITEST_EXCLUDE ?? '[]')
for (const project of base.test?.projects ?? []) {{
  const test = (project as {{ test: {{ exclude?: string[] }} }}).test
  test.exclude = [...(test.exclude ?? configDefaults.exclude), ...excluded]
}}
export default base
"""


def excluding_config(suite: Suite, folder: Path, excluded: tuple[str, ...]) -> list[str]:
    """The suite's arguments with its --config replaced by one that also excludes
    `excluded` from each of its projects."""
    args = list(suite.args)
    if "--config" not in args:
        raise SystemExit(f"e2b-suites: {suite.name} has no --config to exclude files from")
    at = args.index("--config") + 1
    wrapper = folder / "vitest.abx-excluding.config.mts"
    wrapper.write_text(EXCLUDING_CONFIG.format(config=args[at]))
    args[at] = wrapper.name
    return args


def no_report(suite: Suite, log: Path) -> dict[str, dict]:
    """A suite that reported no test at all (it crashed, or its tools failed to install)
    fails the check: silence must not read as success."""
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    print(f"e2b-suites: {suite.name} reported no tests; the end of its log:\n{tail}")
    where = "" if log.name == "run.log" else f" ({log.stem})"
    return {f"{suite.name}::(suite)::reported no tests{where}": {
        "outcome": "failed", "message": f"no test report; see {log}"}}


def run_logged(suite: Suite, cmd: list[str], folder: Path, env: dict[str, str], tag: str) -> Path:
    """The suite's own output goes to a log beside it; a nonzero exit is the normal case
    (some tests are expected to fail): the outcomes come from the report."""
    started = time.monotonic()
    path = folder / ("run.log" if tag == "main" else f"run-{tag}.log")
    with open(path, "wb") as log:
        try:
            subprocess.run(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, check=False,
                           timeout=3600, start_new_session=True)
        except subprocess.TimeoutExpired:
            print(f"e2b-suites: {suite.name} did not finish within an hour", file=sys.stderr)
    print(f"e2b-suites: {suite.name} ({tag}) ran in {time.monotonic() - started:.0f} s (log: {path})")
    return path


# --- outcomes -----------------------------------------------------------------------------

def parse_junit(suite: str, report: Path) -> dict[str, dict]:
    outcomes: dict[str, dict] = {}
    if not report.exists():
        return outcomes
    for case in ET.parse(report).iter("testcase"):
        test_id = f"{suite}::{case.get('file') or case.get('classname')}::{case.get('name')}"
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is not None:
            outcomes[test_id] = {"outcome": "failed", "message": (failure.get("message") or "")[:600]}
        elif case.find("skipped") is not None:
            outcomes[test_id] = {"outcome": "skipped", "message": case.find("skipped").get("message", "")}
        elif test_id not in outcomes:  # a teardown error is reported as a second case
            outcomes[test_id] = {"outcome": "passed", "message": ""}
    return outcomes


def parse_vitest(suite: str, folder: Path, report: Path) -> dict[str, dict]:
    outcomes: dict[str, dict] = {}
    if not report.exists():
        return outcomes
    data = json.loads(report.read_text())
    for file_result in data.get("testResults", []):
        path = os.path.relpath(file_result["name"], folder)
        cases = file_result.get("assertionResults", [])
        if not cases and file_result.get("status") == "failed":  # the file failed to load
            outcomes[f"{suite}::{path}::(file)"] = {
                "outcome": "failed", "message": file_result.get("message", "")[:600]}
        for case in cases:
            status = case["status"]
            outcome = {"passed": "passed", "failed": "failed"}.get(status, "skipped")
            message = " ".join(case.get("failureMessages") or [])[:600]
            outcomes[f"{suite}::{path}::{case['fullName']}"] = {"outcome": outcome, "message": message}
    return outcomes


# --- expectations -------------------------------------------------------------------------

def load_expected() -> dict[str, Expect]:
    if not EXPECTED.exists():
        return {}
    data = tomllib.loads(EXPECTED.read_text())
    expected = {}
    for group in data.get("fail", []):
        for test_id in group["tests"]:
            expected[test_id] = Expect(group["category"], group["reason"], group.get("flaky", False))
    return expected


def is_network_test(test_id: str) -> bool:
    suite, path = test_id.split("::", 2)[:2]
    return path in NETWORK_TESTS.get(suite, ())


def selected(test_id: str, args: argparse.Namespace) -> bool:
    """Whether this run meant to run the test (its suite, and --network)."""
    if test_id.split("::", 1)[0] not in args.only:
        return False
    if args.network == "world":
        return True
    return is_network_test(test_id) == (args.network == "only")


def compare(outcomes: dict[str, dict], expected: dict[str, Expect], args: argparse.Namespace) -> int:
    ran = {t: o for t, o in outcomes.items() if o["outcome"] != "skipped"}
    newly_failing = sorted(t for t, o in ran.items() if o["outcome"] == "failed" and t not in expected)
    newly_passing = sorted(t for t, o in ran.items()
                           if o["outcome"] == "passed" and t in expected and not expected[t].flaky)
    missing = sorted(t for t in expected if selected(t, args) and t not in outcomes)
    unsorted = sorted(t for t, e in expected.items() if e.category not in CATEGORIES)
    for title, tests in (
            ("tests expected to pass that FAILED", newly_failing),
            ("tests expected to fail that PASSED (remove them from expected.toml)", newly_passing),
            ("expected failures with no known category (give each a reason)", unsorted)):
        if tests:
            print(f"\ne2b-suites: {len(tests)} {title}:")
            for t in tests:
                message = outcomes.get(t, {}).get("message", "").replace("\n", " ")[:200]
                print(f"  {t}" + (f"\n      {message}" if message else ""))
    if missing:
        print(f"\ne2b-suites: note: {len(missing)} expected failures did not run (renamed, or the "
              "suite crashed): " + ", ".join(missing[:10]))
    print("\n" + table(outcomes, expected))
    return 1 if newly_failing or newly_passing or unsorted else 0


def table(outcomes: dict[str, dict], expected: dict[str, Expect]) -> str:
    """passed / expected-fail by category / skipped by the suite, per suite."""
    rows = ["| suite | passed | out of scope | suite assumption | gap | other failures | skipped |",
            "|---|---|---|---|---|---|---|"]
    per_suite: dict[str, Counter] = {}
    for test_id, o in outcomes.items():
        counts = per_suite.setdefault(test_id.split("::", 1)[0], Counter())
        if o["outcome"] == "failed":
            counts[expected[test_id].category if test_id in expected else "other"] += 1
        else:
            counts[o["outcome"]] += 1
    total: Counter = Counter()
    for suite in [s.name for s in SUITES if s.name in per_suite]:
        c = per_suite[suite]
        total.update(c)
        rows.append(row(suite, c))
    rows.append(row("**all**", total))
    return "\n".join(rows)


def reasons_table(outcomes: dict[str, dict], expected: dict[str, Expect]) -> str:
    """The expected failures of this run by reason, most first."""
    counts = Counter(expected[t] for t, o in outcomes.items()
                     if o["outcome"] == "failed" and t in expected)
    rows = ["| expected failures | category | reason |", "|---|---|---|"]
    for expect, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rows.append(f"| {n} | {expect.category} | {expect.reason} |")
    return "\n".join(rows)


def row(name: str, c: Counter) -> str:
    ran = c["passed"] + c["out-of-scope"] + c["suite-assumption"] + c["gap"] + c["other"]
    return (f"| {name} | {c['passed']} of {ran} | {c['out-of-scope']} | {c['suite-assumption']} "
            f"| {c['gap']} | {c['other']} | {c['skipped']} |")


def update_expected(outcomes: dict[str, dict], expected: dict[str, Expect],
                    args: argparse.Namespace) -> None:
    """Keeps the reasons of tests that still fail (and of flaky ones), drops those that
    pass, and puts new failures under 'unsorted' (which fails the check until each has a
    reason)."""
    groups: dict[Expect, list[str]] = {}
    for test_id, expect in expected.items():
        ran_here = selected(test_id, args)
        if expect.flaky or not ran_here or outcomes.get(test_id, {}).get("outcome") != "passed":
            groups.setdefault(expect, []).append(test_id)
    for test_id, o in outcomes.items():
        if o["outcome"] == "failed" and test_id not in expected:
            groups.setdefault(Expect("unsorted", "new failure: give it a category and a reason"),
                              []).append(test_id)
    lines = [
        "# E2B's own SDK suites: every test we do not pass, and why (tests/e2b-suites/run.sh",
        "# fails when a test not listed here fails, or a listed one passes).",
        "# category: " + "; ".join(f"{k} = {v}" for k, v in CATEGORIES.items()),
        "# Test ids: <suite>::<file or module>::<test name>.",
    ]
    for expect, tests in sorted(groups.items()):
        lines += ["", "[[fail]]", f"category = {json.dumps(expect.category)}",
                  f"reason = {json.dumps(expect.reason)}"]
        if expect.flaky:
            lines.append("flaky = true  # passes sometimes: either outcome is accepted")
        lines.append("tests = [")
        lines += [f"  {json.dumps(t)}," for t in sorted(tests)]
        lines.append("]")
    EXPECTED.write_text("\n".join(lines) + "\n")
    print(f"e2b-suites: wrote {EXPECTED}")


# --- main ---------------------------------------------------------------------------------

def run_main_tests(args: argparse.Namespace, scratch: Path) -> dict[str, dict]:
    """Every test but the network ones (when those run apart), with a daemon on this machine
    whose sandboxes have no network; it builds the templates the suites ask for."""
    by_name = {s.name: s for s in SUITES}
    build_templates()
    d, state = start_private_daemon()
    outcomes: dict[str, dict] = {}
    try:
        env = suite_env(d)
        for name in args.only if args.network != "only" else ():
            suite = by_name[name]
            runner = run_pytest if suite.kind == "pytest" else run_vitest
            excluded = NETWORK_TESTS.get(name, ()) if args.network == "world" else ()
            outcomes.update(runner(suite, scratch / name, env, args, Selection(excluded=excluded)))
        check_alive(d, state, "daemon::alive", outcomes)
    finally:
        stop_daemon(d)
        if "daemon::alive" not in outcomes:
            shutil.rmtree(state, ignore_errors=True)
    return outcomes


def check_alive(d: Daemon, state: Path, test_id: str, outcomes: dict[str, dict]) -> None:
    if d.proc.poll() is not None:
        print(f"e2b-suites: the daemon died (exit {d.proc.returncode}); see {state}/state/daemon.log")
        outcomes[test_id] = {"outcome": "failed", "message": "the daemon died"}


def run_network_tests(args: argparse.Namespace, scratch: Path) -> dict[str, dict]:
    """The network tests, against a daemon inside tests/net's world with sandbox networks on.
    The sandboxes trust the world's CA (ABX_SANDBOX_EXTRA_CA_FILE), as a corporate CA would
    be trusted, so that their curl to https://1.1.1.1 verifies as it does on the internet."""
    suites = [s for s in SUITES if s.name in args.only and s.name in NETWORK_TESTS]
    if not suites:
        return {}
    if reason := world.missing():
        # A failure, not a skip: silence must not read as "networking works".
        print(f"e2b-suites: cannot run the network tests: {reason} (or pass --network skip)")
        return {"network::(world)::made": {"outcome": "failed", "message": reason}}
    the_world = world.world_up(f"abxe{os.getpid() % 100000}")
    outcomes: dict[str, dict] = {}
    try:
        check_sealed(the_world)
        state = private_state_dir("abx-e2b-network-")
        (state / "config.json").write_text('{"hostCaps": {"memoryPercent": 1000}}')
        d = world.start_daemon_in_world(
            the_world, state / "state", extra_args=("--config", str(state / "config.json")),
            env={"ABX_SANDBOX_EXTRA_CA_FILE": str(the_world.ca_file)}, shared_templates=True)
        try:
            env = suite_env(d)
            for suite in suites:
                runner = run_pytest if suite.kind == "pytest" else run_vitest
                selection = Selection(files=NETWORK_TESTS[suite.name], tag="network")
                outcomes.update(runner(suite, scratch / suite.name, env, args, selection))
            check_alive(d, state, "daemon::alive (network)", outcomes)
        finally:
            world.stop_daemon_in_world(d)
            if left := world.leftovers(d):
                print("e2b-suites: the world's daemon left:\n" + "\n".join(left))
                outcomes["network::(world)::nothing left"] = {"outcome": "failed",
                                                              "message": "; ".join(left)[:600]}
            elif "daemon::alive (network)" not in outcomes:
                shutil.rmtree(state, ignore_errors=True)
    finally:
        world.world_down(the_world)
    return outcomes


def check_sealed(the_world: world.World) -> None:
    """The world's two namespaces have no way out but into each other (test_world.py checks
    the same): each has only loopback and its end of the veth between them, and routes only
    over those, so no sandbox packet can leave them."""
    for ns, link in ((the_world.daemon_ns, "wan0"), (the_world.internet_ns, "isp0")):
        links = the_world.run_in(ns, "ip", "-o", "link", "show").stdout.splitlines()
        names = {line.split(":")[1].strip().split("@")[0] for line in links}
        if names != {"lo", link}:
            raise SystemExit(f"e2b-suites: the test world's {ns} has links {sorted(names)}")
        routes = the_world.run_in(ns, "ip", "-4", "route", "show", "table", "all").stdout
        for route in routes.splitlines():
            if f" dev {link} " not in f"{route} " and " dev lo " not in f"{route} ":
                raise SystemExit(f"e2b-suites: the test world's {ns} has a route out: {route}")


def run_suites(args: argparse.Namespace) -> dict[str, dict]:
    if not (shutil.which("node") and shutil.which("npm")):
        js = [s.name for s in SUITES if s.kind == "vitest" and s.name in args.only]
        print(f"e2b-suites: node and npm are not installed: skipping {', '.join(js)}")
        args.only = [n for n in args.only if n not in js]
    scratch = Path(tempfile.mkdtemp(prefix="abx-e2b-suites-", dir=os.environ.get("TMPDIR", "/tmp")))
    print(f"e2b-suites: running from {scratch}")
    copy_suites(args.suites_dir, scratch, args.only)
    by_name = {s.name: s for s in SUITES}
    for name in args.only:
        if by_name[name].kind == "vitest":
            npm_install(scratch / name)
    outcomes = run_main_tests(args, scratch)
    if args.network != "skip":
        outcomes.update(run_network_tests(args, scratch))
    if args.keep:
        print(f"e2b-suites: kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return outcomes


def main() -> int:
    args = parse_args()
    if args.from_results:
        outcomes = json.loads(args.from_results.read_text())
    else:
        if not args.suites_dir.is_dir():
            print(f"e2b-suites: {args.suites_dir} is absent: skipping E2B's own suites "
                  "(set ABX_E2B_SUITES to their folder to run them)")
            return 0
        outcomes = run_suites(args)
    if args.results:
        args.results.write_text(json.dumps(outcomes, indent=1, sort_keys=True))
    expected = load_expected()
    if args.table:
        print(table(outcomes, expected) + "\n\n" + reasons_table(outcomes, expected))
        return 0
    if args.update_expected:
        update_expected(outcomes, expected, args)
        return 0
    return compare(outcomes, expected, args)


if __name__ == "__main__":
    sys.exit(main())
