#!/usr/bin/env python3
"""What one sandbox's nftables work costs as the table grows, outside the daemon: the
commands src/runtime/nft_rules.cc sends (a base table like the daemon's; per sandbox 3 chains,
2 map elements and its policy as rules, no named set), on one libnftables context kept for
the run as NftRules keeps one, timed with N sandboxes in the table. Runs in a network namespace of its
own (unshare --net), which goes away with it.

    bench/nft_cost.py 2 100 1000      (root; libnftables1)
"""
import ctypes
import os
import statistics
import sys
import time

if os.environ.get("ABX_NFT_COST_INSIDE") != "1":
    os.environ["ABX_NFT_COST_INSIDE"] = "1"
    os.execvp("unshare", ["unshare", "--net", sys.executable, *sys.argv])

lib = ctypes.CDLL("libnftables.so.1")
lib.nft_ctx_new.restype = ctypes.c_void_p
lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]

T = "inet abx_cost"
LINKS = '"abcost-*"'
BASE = f"""table {T} {{
  set denied {{ type ipv4_addr; flags interval; auto-merge;
    elements = {{ 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 169.254.0.0/16 }} }}
  map sandboxes {{ type ifname : verdict; }}
  map redirects {{ type ifname : verdict; }}
  chain refuse {{
    meta l4proto tcp reject with tcp reset
    reject with icmpx type admin-prohibited
  }}
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname vmap @redirects
  }}
  chain postrouting {{
    type nat hook postrouting priority srcnat; policy accept;
    ip saddr 10.200.0.0/16 oifname != {LINKS} masquerade
  }}
  chain egress {{
    ip daddr @denied goto refuse
    iifname vmap @sandboxes
    goto refuse
  }}
  chain forward {{
    type filter hook forward priority filter; policy accept;
    iifname {LINKS} goto egress
  }}
}}
"""


CTX = None


def run(commands: str) -> None:
    """One transaction on the one context, as NftRules::run."""
    global CTX
    if CTX is None:
        CTX = lib.nft_ctx_new(0)
        lib.nft_ctx_buffer_output(CTX)
        lib.nft_ctx_buffer_error(CTX)
    if lib.nft_run_cmd_from_buffer(CTX, commands.encode()) != 0:
        raise SystemExit(lib.nft_ctx_get_error_buffer(CTX).decode()[:500])


def ip(slot: int, host: int) -> str:
    n = slot * 4 + host
    return f"10.200.{n >> 8}.{n & 255}"


def policy(n: int) -> str:
    """The default (allow-all) policy, as NftRules::policy_commands writes it."""
    pol, nat = f"add rule {T} pol_{n} ", f"add rule {T} nat_{n} "
    c = f"flush chain {T} pol_{n}\nflush chain {T} nat_{n}\n" + pol + "accept\n"
    c += nat + f"ip saddr != {ip(n, 2)} return\n"
    for proto in ("udp", "tcp"):
        c += nat + f"ip daddr {ip(n, 1)} {proto} dport 53 redirect to :5353\n"
    return c


def add(n: int) -> str:
    c = "".join(f"add chain {T} {chain}_{n}\n" for chain in ("sb", "pol", "nat"))
    sb = f"add rule {T} sb_{n} "
    c += sb + f"ip saddr != {ip(n, 2)} goto refuse\n"
    c += sb + "ct state new ct count over 4096 goto refuse\n" + sb + f"goto pol_{n}\n"
    c += f'add element {T} sandboxes {{ "abcost-{n}" : goto sb_{n} }}\n'
    c += f'add element {T} redirects {{ "abcost-{n}" : goto nat_{n} }}\n'
    return c + policy(n)


def remove(n: int) -> str:
    c = f'delete element {T} sandboxes {{ "abcost-{n}" }}\n'
    c += f'delete element {T} redirects {{ "abcost-{n}" }}\n'
    c += "".join(f"flush chain {T} {chain}_{n}\n" for chain in ("sb", "pol", "nat"))
    return c + "".join(f"delete chain {T} {chain}_{n}\n" for chain in ("sb", "pol", "nat"))


def timed(fn, times: int = 20) -> str:
    ms = []
    for _ in range(times):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1000)
    return f"p50 {statistics.median(ms):.2f} ms, min {min(ms):.2f} ms"


def main() -> None:
    run(BASE)
    alive = 0
    spare = 16000  # a slot no sandbox of the table holds
    for target in [int(x) for x in sys.argv[1:]] or [2, 100]:
        while alive < target:
            alive += 1
            run(add(alive))
        print(f"{alive} sandboxes in the table: set_policy {timed(lambda: run(policy(1)))}; "
              f"add + remove {timed(lambda: (run(add(spare)), run(remove(spare))))}", flush=True)


if __name__ == "__main__":
    main()
