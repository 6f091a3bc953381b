import csv

totals = {}
with open("/home/user/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
with open("/home/user/out.txt", "w") as out:
    for region, amount in sorted(totals.items(), key=lambda kv: -kv[1]):
        line = f"{region:<8}{amount:>6}"
        print(line)
        out.write(line + "\n")
