"""The sandbox's agent (PID 1) is a batch task, so a command writing fast is not preempted by
its reader after every few KiB (issue 32's output throughput); what it starts runs as a normal
task again."""
from __future__ import annotations

from helpers import abx, sandbox


def test_the_agent_waits_its_turn_and_commands_run_as_normal_tasks(daemon):
    with sandbox(daemon) as sandbox_id:
        r = abx(daemon, "exec", sandbox_id, "--", "sh", "-c",
                "grep ^policy /proc/1/sched /proc/self/sched")
        assert r.returncode == 0, r.stderr
        # 3 is SCHED_BATCH, 0 SCHED_OTHER (what `chrt -p $$` calls SCHED_OTHER).
        policies = {line.split(":")[0]: int(line.split()[-1]) for line in r.stdout.splitlines()}
        assert policies == {"/proc/1/sched": 3, "/proc/self/sched": 0}, r.stdout
