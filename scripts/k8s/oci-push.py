#!/usr/bin/env python3
"""Packs files into a one-layer OCI image and pushes it to a registry over the
OCI distribution API (plain HTTP: the test cluster's registry is on loopback).

  oci-push.py REGISTRY NAME:TAG --file SRC=DEST [--link DEST=TARGET] \
      [--entrypoint JSON] [--cmd JSON]

Only the standard library: it runs before any venv exists."""
import argparse
import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def layer(files, links):
    """A deterministic gzipped tar: the same inputs give the same digest."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = set()
        for dest in [d for _, d in files] + [d for d, _ in links]:
            parts = dest.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        for d in sorted(dirs):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for src, dest in files:
            data = Path(src).read_bytes()
            info = tarfile.TarInfo(dest.strip("/"))
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for dest, target in links:
            info = tarfile.TarInfo(dest.strip("/"))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(info)
    tar_bytes = raw.getvalue()
    return tar_bytes, gzip.compress(tar_bytes, mtime=0)


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def request(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers
    except urllib.error.HTTPError as e:
        if method == "HEAD" and e.code == 404:
            return 404, e.headers
        raise SystemExit(f"{method} {url}: {e.code} {e.read()[:300]!r}")


def push_blob(base, name, data):
    digest = sha(data)
    if request("HEAD", f"{base}/v2/{name}/blobs/{digest}")[0] == 200:
        return digest
    _, headers = request("POST", f"{base}/v2/{name}/blobs/uploads/")
    location = headers["Location"]
    if location.startswith("/"):
        location = base + location
    sep = "&" if "?" in location else "?"
    request("PUT", f"{location}{sep}digest={digest}", data,
            {"Content-Type": "application/octet-stream"})
    return digest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("registry")
    p.add_argument("ref", help="NAME:TAG")
    p.add_argument("--file", action="append", default=[], help="SRC=DEST")
    p.add_argument("--link", action="append", default=[], help="DEST=TARGET")
    p.add_argument("--entrypoint", default="null")
    p.add_argument("--cmd", default="null")
    a = p.parse_args()
    name, tag = a.ref.rsplit(":", 1)
    base = f"http://{a.registry}"
    files = [tuple(f.split("=", 1)) for f in a.file]
    links = [tuple(f.split("=", 1)) for f in a.link]
    tar_bytes, gz = layer(files, links)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": json.loads(a.entrypoint), "Cmd": json.loads(a.cmd),
                   "Env": ["PATH=/bin:/usr/bin:/sbin:/usr/sbin"]},
        "rootfs": {"type": "layers", "diff_ids": [sha(tar_bytes)]},
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": push_blob(base, name, config_bytes), "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": push_blob(base, name, gz), "size": len(gz)}],
    }
    body = json.dumps(manifest).encode()
    request("PUT", f"{base}/v2/{name}/manifests/{tag}", body, {"Content-Type": OCI_MANIFEST})
    print(f"{a.registry}/{name}:{tag}@{sha(body)}")


if __name__ == "__main__":
    sys.exit(main())
