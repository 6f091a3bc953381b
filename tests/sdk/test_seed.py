"""The seed script from the design, verbatim, against the test daemon."""
from __future__ import annotations

import os
import subprocess
import sys

SEED = '''import asyncio
from agent_sandbox import Sandbox
CSV = "region,amount\\nhangzhou,120\\nbeijing,80\\nhangzhou,45\\nshanghai,200\\nbeijing,30\\n"
AGENT_CODE = \'\'\'
import csv
totals = {}
with open("/home/user/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
for region, amount in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"{region:<8}{amount:>6}")
\'\'\'
async def main():
    async with await Sandbox.create(template="base") as sandbox:
        await sandbox.files.write("/home/user/sales.csv", CSV)
        result = await sandbox.run_code(AGENT_CODE)
        print(result.text)
        print("exit code:", result.exit_code)
asyncio.run(main())
'''


def test_seed_script_prints_totals(daemon, tmp_path):
    script = tmp_path / "seed.py"
    script.write_text(SEED)
    env = dict(os.environ, ABX_SANDBOX_API_URL=daemon.url, ABX_SANDBOX_API_KEY=daemon.api_key)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines == ["shanghai   200", "hangzhou   165", "beijing    110", "exit code: 0"]
