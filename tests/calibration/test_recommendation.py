"""``ragcite-calibrate`` recommends a threshold only when the labels can support one: at least
10 true and 10 false pairs, an AUC above 0.5, and an AUC interval above 0.5. Otherwise the
console and calibration.html say why, and nothing is recommended.

Each labels file is made by hand of four-word passages: under ``matcher=ngram matcher.n=1`` a
pair that shares k of its four words has similarity k/4 (every word appears once)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.reports.conftest import parse

pytestmark = pytest.mark.slow
_words = (f"w{i}" for i in itertools.count())


def pairs(n: int, shared: int, label: bool) -> list[dict[str, Any]]:
    """`n` pairs of four-word passages sharing `shared` words: similarity shared/4."""
    out = []
    for _ in range(n):
        ref = [next(_words) for _ in range(4)]
        cit = ref[:shared] + [next(_words) for _ in range(4 - shared)]
        out.append({"reference": " ".join(ref), "citation": " ".join(cit), "label": label})
    return out


def calibrate(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[dict[str, Any], str,
                                                                       Any]:
    """Calibrate ngram (n=1) on `records`: its entry of calibration.json, stderr, the page."""
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    proc = run_cli([f"calibrate.labels={labels}", "matcher=ngram", "matcher.n=1", "tracking=none",
                    f"output_root={tmp_path / 'out'}"], cwd=tmp_path,
                   module="runner.calibration.app")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = (tmp_path / "out" / "calibrations").iterdir()
    data = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))
    return data["matchers"]["ngram"], proc.stderr, parse(folder / "calibration.html")


def says_withheld(m: dict[str, Any], err: str, page: Any, reason: str) -> None:
    """`reason` is in calibration.json, on the console and on the page; nothing recommended."""
    assert (m["withheld"], m["ready"]) == (reason, None)
    assert f"no threshold recommended: {reason}" in err.splitlines()
    assert "use it" not in err
    assert page.text(**{"class": "verdict"}) == f"No threshold recommended: {reason}."
    assert page.texts(data_ready="command") == []


def test_fewer_than_ten_of_a_label_recommend_nothing_even_at_auc_1(tmp_path: Path) -> None:
    # 9 true pairs at 1.0 above 12 false ones at 0.0: AUC 1, but 9 < 10 true pairs.
    m, err, page = calibrate(tmp_path, pairs(9, 4, True) + pairs(12, 0, False))
    assert m["auc"] == 1.0
    says_withheld(m, err, page, "too few labels: 9 true and 12 false pairs; a recommendation "
                                "needs at least 10 of each")


def test_an_auc_of_one_half_recommends_nothing(tmp_path: Path) -> None:
    # True and false pairs alike: 5 of each at 0.75 and 5 of each at 0.25. AUC = P(true above
    # false) + ½ P(tie) = 25/100 + ½ · 50/100 = 0.5.
    records = (pairs(5, 3, True) + pairs(5, 1, True) + pairs(5, 3, False)
               + pairs(5, 1, False))
    m, err, page = calibrate(tmp_path, records)
    assert m["auc"] == 0.5
    says_withheld(m, err, page, "the matcher ranks true pairs no higher than false ones: AUC "
                                "0.500 is not above 0.5 (chance)")


def test_an_auc_interval_that_includes_one_half_recommends_nothing(tmp_path: Path) -> None:
    # True: 6 at 0.75, 4 at 0.25; false: 4 at 0.75, 6 at 0.25. AUC = 36/100 (true 0.75 above
    # false 0.25) + ½ · (24 + 24)/100 (ties) = 0.6, but ten of each leave it uncertain.
    records = (pairs(6, 3, True) + pairs(4, 1, True) + pairs(4, 3, False)
               + pairs(6, 1, False))
    m, err, page = calibrate(tmp_path, records)
    assert m["auc"] == pytest.approx(0.6)
    lo, hi = m["intervals"]["auc"]  # the seeded bootstrap's
    assert lo <= 0.5 < 0.6 <= hi
    says_withheld(m, err, page, f"the AUC's 95% interval [{lo:.3f}, {hi:.3f}] includes 0.5: "
                                f"these labels cannot tell the matcher from chance")


def test_ten_of_each_label_well_apart_get_a_recommendation(tmp_path: Path) -> None:
    # 10 true pairs at 1.0, 10 false at 0.0: AUC 1 in every resample; the best threshold is
    # the middle of (0, 1].
    m, err, page = calibrate(tmp_path, pairs(10, 4, True) + pairs(10, 0, False))
    assert (m["auc"], m["intervals"]["auc"], m["withheld"]) == (1.0, [1.0, 1.0], None)
    command = "ragcite matcher=ngram matcher.n=1 threshold=0.5"
    assert m["ready"] == {"paste": "threshold=0.5", "command": command}
    assert f"use it: {command}" in err.splitlines()
    assert "no threshold recommended" not in err
    assert page.text(data_ready="command") == command
