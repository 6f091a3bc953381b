import asyncio
from agent_sandbox import Sandbox
CSV = "region,amount\nhangzhou,120\nbeijing,80\nhangzhou,45\nshanghai,200\nbeijing,30\n"
AGENT_CODE = '''
import csv
totals = {}
with open("/home/user/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
for region, amount in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"{region:<8}{amount:>6}")
'''
async def main():
    async with await Sandbox.create(template="base") as sandbox:
        await sandbox.files.write("/home/user/sales.csv", CSV)
        result = await sandbox.run_code(AGENT_CODE)
        print(result.text)
        print("exit code:", result.exit_code)
asyncio.run(main())
