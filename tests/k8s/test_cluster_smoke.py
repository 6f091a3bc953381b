"""The test cluster of scripts/k8s-test-cluster.sh answers like a real one: a Pod
from an image in the cluster's local registry runs, serves on the pod network,
shows its log and exit code through the API server, and goes away when deleted.

Run by `make test-k8s` (cluster up, these tests, cluster down). The API server is
spoken to over plain HTTPS with httpx, with the admin client certificate."""
from __future__ import annotations

import ipaddress
import json
import os
import ssl
import time
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("ABX_K8S_DIR", ROOT / "build" / "k8s"))
NS = "default"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the test cluster needs root (kubelet, containerd)"),
    pytest.mark.skipif(not (STATE / "cluster.json").exists(),
                       reason=f"no test cluster at {STATE}: run `make test-k8s`"),
]


@pytest.fixture(scope="module")
def cluster() -> dict:
    return json.loads((STATE / "cluster.json").read_text())


@pytest.fixture(scope="module")
def api(cluster: dict) -> httpx.Client:
    tls = ssl.create_default_context(cafile=cluster["ca"])
    tls.load_cert_chain(cluster["cert"], cluster["key"])
    with httpx.Client(base_url=cluster["server"], verify=tls, timeout=30, trust_env=False) as client:
        yield client


def pod_manifest(name: str, image: str, script: str, restart: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "abx-k8s-smoke"}},
        "spec": {
            "restartPolicy": restart,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "command": ["/bin/sh", "-c", script]}],
        },
    }


def wait_pod(api: httpx.Client, name: str, done, timeout: float = 60) -> dict:
    """Watches the Pod (from the version the list returned) until done(pod) holds."""
    deadline = time.monotonic() + timeout
    last: dict = {}
    while time.monotonic() < deadline:
        listing = api.get(f"/api/v1/namespaces/{NS}/pods",
                          params={"fieldSelector": f"metadata.name={name}"}).json()
        for pod in listing["items"]:
            last = pod
            if done(pod):
                return pod
        params = {"watch": "1", "fieldSelector": f"metadata.name={name}",
                  "resourceVersion": listing["metadata"]["resourceVersion"],
                  "timeoutSeconds": str(max(1, int(deadline - time.monotonic())))}
        with api.stream("GET", f"/api/v1/namespaces/{NS}/pods", params=params,
                        timeout=httpx.Timeout(30, read=timeout + 5)) as resp:
            resp.raise_for_status()
            for line in resp.iter_lines():
                event = json.loads(line)
                if event["type"] == "ERROR":
                    break  # e.g. the version is too old: list again
                last = event["object"]
                if event["type"] != "DELETED" and done(last):
                    return last
    raise AssertionError(f"pod {name} not as expected after {timeout}s: {json.dumps(last.get('status'))}")


def delete_and_wait_gone(api: httpx.Client, name: str) -> None:
    r = api.delete(f"/api/v1/namespaces/{NS}/pods/{name}")
    assert r.status_code in (200, 202, 404), r.text
    deadline = time.monotonic() + 60
    while api.get(f"/api/v1/namespaces/{NS}/pods/{name}").status_code != 404:
        assert time.monotonic() < deadline, f"pod {name} still there 60s after delete"
        time.sleep(0.2)


@pytest.fixture
def pod_names(api: httpx.Client):
    names: list[str] = []
    yield names
    for name in names:  # also when the test failed half-way
        api.delete(f"/api/v1/namespaces/{NS}/pods/{name}")


def test_node_is_ready(api: httpx.Client, cluster: dict) -> None:
    node = api.get(f"/api/v1/nodes/{cluster['node']}").json()
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    assert ready == "True"


def test_pod_runs_serves_and_logs(api: httpx.Client, cluster: dict, pod_names: list[str]) -> None:
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    pod_names.append(name)
    script = "mkdir /www && echo hello-from-pod > /www/index.html && echo ready && exec httpd -f -p 8080 -h /www"
    r = api.post(f"/api/v1/namespaces/{NS}/pods",
                 json=pod_manifest(name, cluster["busybox_image"], script, "Always"))
    assert r.status_code == 201, r.text

    pod = wait_pod(api, name, lambda p: any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))
    assert pod["status"]["phase"] == "Running"
    ip = ipaddress.ip_address(pod["status"]["podIP"])
    assert ip in ipaddress.ip_network(cluster["pod_subnet"])

    # The pod network: the host reaches the pod's own address over the bridge.
    assert httpx.get(f"http://{ip}:8080/index.html", timeout=10, trust_env=False).text == "hello-from-pod\n"
    # The log comes from kubelet through the API server.
    log = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/log", params={"container": "main"})
    assert log.status_code == 200, log.text
    assert log.text == "ready\n"

    delete_and_wait_gone(api, name)


def test_pod_exit_code_and_log(api: httpx.Client, cluster: dict, pod_names: list[str]) -> None:
    name = f"smoke-exit-{uuid.uuid4().hex[:8]}"
    pod_names.append(name)
    r = api.post(f"/api/v1/namespaces/{NS}/pods",
                 json=pod_manifest(name, cluster["busybox_image"], "echo bye; exit 3", "Never"))
    assert r.status_code == 201, r.text

    pod = wait_pod(api, name, lambda p: p["status"].get("phase") in ("Succeeded", "Failed"))
    assert pod["status"]["phase"] == "Failed"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    log = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/log")
    assert log.text == "bye\n"

    delete_and_wait_gone(api, name)


def test_image_not_in_registry_fails_to_pull(api: httpx.Client, cluster: dict,
                                             pod_names: list[str]) -> None:
    """Nothing is pulled from outside: an image the local registry lacks is a pull error."""
    name = f"smoke-missing-{uuid.uuid4().hex[:8]}"
    pod_names.append(name)
    image = f"{cluster['registry']}/no-such-image:1"
    r = api.post(f"/api/v1/namespaces/{NS}/pods", json=pod_manifest(name, image, "true", "Never"))
    assert r.status_code == 201, r.text

    def waiting_reason(p: dict) -> str:
        statuses = p["status"].get("containerStatuses") or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason", "")

    pod = wait_pod(api, name, lambda p: waiting_reason(p) in ("ErrImagePull", "ImagePullBackOff"))
    assert pod["status"]["phase"] == "Pending"
    delete_and_wait_gone(api, name)
