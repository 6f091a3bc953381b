"""`system`: CPU, memory, disk and OS, from /proc, os and shutil."""

from __future__ import annotations

import os
import platform
import shutil
import time
from typing import Any

from ..api import Call, row
from ..errors import from_os_error
from .file_ops import checked_path


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (lxcfs shows the sandbox's own limits there)."""
    values: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    values[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return values


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    try:
        with open("/proc/stat") as file:
            fields = [int(part) for part in file.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def cpu() -> dict[str, Any]:
    first = _cpu_times()
    time.sleep(0.1)
    second = _cpu_times()
    percent = None
    if first and second and second[1] > first[1]:
        percent = round(100.0 * (second[0] - first[0]) / (second[1] - first[1]), 1)
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"count": os.cpu_count(), "usable": usable, "percent": percent, "load_average": load}


def memory() -> dict[str, Any]:
    info = _meminfo()
    total = info.get("MemTotal")
    available = info.get("MemAvailable")
    used = total - available if total is not None and available is not None else None
    return {"total": total, "available": available, "used": used,
            "swap_total": info.get("SwapTotal"), "swap_free": info.get("SwapFree")}


def disk(path: str) -> dict[str, Any]:
    usage = shutil.disk_usage(path)
    return {"path": path, "total": usage.total, "used": usage.used, "free": usage.free}


def os_facts() -> dict[str, Any]:
    release: dict[str, str] = {}
    try:
        with open("/etc/os-release") as file:
            for line in file:
                name, _, value = line.strip().partition("=")
                if name:
                    release[name] = value.strip('"')
    except OSError:
        pass
    uname = platform.uname()
    return {"system": uname.system, "kernel": uname.release, "machine": uname.machine,
            "hostname": uname.node, "distribution": release.get("PRETTY_NAME"),
            "python": platform.python_version()}


def info(call: Call) -> dict[str, Any]:
    path = checked_path(call.args["path"])
    try:
        disk_facts = disk(path)
    except OSError as error:
        raise from_os_error(error, path) from None
    return {"os": os_facts(), "cpu": cpu(), "memory": memory(), "disk": disk_facts}


ROWS = [
    row("GET", "/system/info", "system", info,
        "OS, CPU (count, busy percent over 0.1 s, load), memory and the disk holding `path`",
        {"path": {"type": "string", "default": "/"}}),
]
