"""Two users share a one-GPU cluster: a high-priority job preempts a long low-priority one, which then resumes.

The embedded cluster has one worker with one ``GPU`` slot (``resources={"GPU": 1}``; on a real
cluster, ``dask worker --resources GPU=1``). Alice submits a long, preemptible, priority-0 job;
once it runs, Bob submits a priority-10 job that needs the same GPU. The scheduler asks Alice's
job to yield: it checkpoints at its next step boundary and goes back to the queue, Bob's job
runs, and then Alice's job resumes from its checkpoint, repeating and losing no step. The jobs
are the built-in ``steps`` kind (each step sleeps, then adds to a checkpointed sum), so this
runs in seconds; a ``grpo`` job yields and resumes the same way.

Run::

    python examples/shared_cluster.py             # Alice 60 steps, Bob 10
    python examples/shared_cluster.py --quick     # Alice 20 steps, Bob 3 (what the test runs)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import executors


def print_transitions(job: Any, start: float) -> None:
    info = job.info()
    print(f"job {job.id} ({info['spec']['user']}, priority {info['spec']['priority']}):")
    for t in info["transitions"]:
        reason = f"  ({t['reason']})" if t.get("reason") else ""
        print(f"  {t['ts'] - start:6.2f} s  -> {t['to_state']}{reason}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter jobs (for the test)")
    args = parser.parse_args(argv)
    alice_steps, bob_steps = (20, 3) if args.quick else (60, 10)

    with executors.connect(n_workers=1, threads_per_worker=1, resources={"GPU": 1}) as client:
        start = time.time()
        alice = client.submit(
            {
                "kind": "steps",
                "name": "alice: long sweep",
                "user": "alice",
                "priority": 0,
                "preemptible": True,
                "resources": {"GPU": 1},
                "params": {"steps": alice_steps, "step_seconds": 0.1},
            }
        )
        deadline = time.monotonic() + 120
        while len(alice.metrics()) < 3 and time.monotonic() < deadline:  # let Alice's job get going
            time.sleep(0.1)
        bob = client.submit(
            {
                "kind": "steps",
                "name": "bob: urgent eval",
                "user": "bob",
                "priority": 10,
                "resources": {"GPU": 1},
                "params": {"steps": bob_steps, "step_seconds": 0.1},
            }
        )
        states = client.wait([alice, bob], timeout=300)
        print(f"final states: {states}\n")
        print_transitions(alice, start)
        print_transitions(bob, start)
        result = alice.result()
        info = alice.info()
        print(f"\nalice's log: {alice.logs()}")
        print(
            f"alice: {info['preemptions']} preemption(s), {info['attempts']} attempts, "
            f"sum {result['accumulator']} (expected {alice_steps * (alice_steps + 1) // 2}: no step lost or repeated)"
        )
    return {"alice": info, "bob_state": states[bob.id]}


if __name__ == "__main__":
    main()
