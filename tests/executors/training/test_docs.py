"""docs/training.md keeps the generated parameter reference, and the example job files validate."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.train_cli import load_train_spec
from executors.training.config import params_markdown

ROOT = Path(__file__).resolve().parents[3]


def test_training_doc_lists_every_parameter_as_the_config_classes_say():
    text = (ROOT / "docs" / "training.md").read_text()
    generated = text.split("<!-- params:start -->\n", 1)[1].split("<!-- params:end -->", 1)[0]
    assert generated == params_markdown(), (
        "regenerate the section with executors.training.config.params_markdown()"
    )


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_example_job_files_validate(path, tmp_path):
    spec = load_train_spec(path, output_dir=str(tmp_path))
    assert spec.kind in ("grpo", "ppo", "sft", "selfplay") and spec.env and spec.model
