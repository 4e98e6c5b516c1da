"""Test helpers shared by the training tests."""

from __future__ import annotations

from executors.context import JobContext, deliver_signal


class PreemptAtStep2(JobContext):
    """A context whose scheduler sends a preempt at the second stop poll (bodies poll once per step end)."""

    polls = 0

    def should_stop(self) -> bool:
        self.polls += 1
        if self.polls == 2:
            deliver_signal(self.key, "preempt")
        return super().should_stop()
