"""Several client processes submitting at once: every job recorded and run exactly once."""

from __future__ import annotations

import json
import subprocess
import sys

CLIENT = """
import json, sys
from executors import connect
address, who, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with connect(address) as client:
    ids = [client.submit({"kind": "noop", "user": f"u{who}", "params": {"value": [who, i]}}).id for i in range(n)]
print(json.dumps(ids))
"""


def run_clients(client, processes: int, per_process: int) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, client.address, str(k), str(per_process)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(processes)
    ]
    acknowledged = []
    for proc in procs:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0
        acknowledged.extend(json.loads(out))
    total = processes * per_process
    assert len(acknowledged) == len(set(acknowledged)) == total
    states = client.wait(acknowledged, timeout=240)
    assert set(states.values()) == {"succeeded"}
    jobs = client.jobs()
    assert sorted(j["id"] for j in jobs) == sorted(acknowledged)
    # Every submitted (client, index) pair ran once: no job lost, none run twice.
    values = sorted(tuple(j["result"]["value"]) for j in jobs)
    assert values == [(who, i) for who in range(processes) for i in range(per_process)]
    assert all(j["attempts"] == 1 for j in jobs)
    for k in range(processes):
        assert len(client.jobs(user=f"u{k}")) == per_process


def test_four_clients_submit_250_jobs_each(make_client):
    # About 15 s on 2 cores, so it runs with the regular suite.
    run_clients(make_client(n_workers=2, threads_per_worker=2), 4, 250)
