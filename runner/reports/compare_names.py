"""What a comparison calls its two sides, and where it writes.

A and B are named by what differs between them, read from the two runs' configs (a result
folder's ``config.yaml``, an MLflow run's params): ``system=loose_quotes`` vs
``system=wrong_passages``, ``matcher=ngram`` vs ``matcher=substring``. Each comparison writes to
a folder of its own, so no comparison overwrites another.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.naming import safe_name

# Keys that say where and how a run was written, not what was measured.
_QUIET = ("output_root", "progress", "report", "tracking", "cache", "run_name", "experiment",
          "prices", "hydra", "gate", "scoring.workers", "scoring.batch_size")
_SECTIONS = ("dataset", "model", "matcher")
MAX_PARTS = 4
COMPARE_HTML = "compare.html"
COMPARE_JSON = "compare.json"


def flat_config(node: Any, prefix: str = "") -> dict[str, str]:
    """A config as ``dotted.key → text`` (the form of an MLflow run's params)."""
    if isinstance(node, Mapping) and node:
        out: dict[str, str] = {}
        for k, v in node.items():
            out.update(flat_config(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if node is None:
        return {prefix: "null"}
    if isinstance(node, bool):
        return {prefix: "true" if node else "false"}
    return {prefix: str(node)}


def _quiet(key: str) -> bool:
    return any(key == q or key.startswith(q + ".") for q in _QUIET)


def _section(metrics: Mapping[str, Any], name: str, field: str = "name") -> Any:
    return (metrics.get(name) or {}).get(field)


def _threshold(metrics: Mapping[str, Any]) -> str | None:
    threshold = metrics.get("threshold") or {}
    level, value = threshold.get("level"), threshold.get("value")
    return str(level) if level else (None if value is None else f"{value:g}")


def side_names(a: tuple[Mapping[str, Any], Mapping[str, str]],
               b: tuple[Mapping[str, Any], Mapping[str, str]]) -> tuple[str, str] | None:
    """What differs between two runs, as each side's ``key=value`` words.

    Args:
        a: Run A's ``metrics.json`` and flat config.
        b: Run B's.

    Returns:
        (A's words, B's words), at most four ``key=value`` each, or None when nothing
        differs (the same config run twice).
    """
    (ma, ca), (mb, cb) = a, b
    parts: list[tuple[str, str, str]] = []
    covered: list[str] = ["scoring.threshold"]
    for section in _SECTIONS:
        if _section(ma, section) != _section(mb, section):
            parts.append((section, str(_section(ma, section)), str(_section(mb, section))))
            covered.append(section)
        elif section == "model" and _section(ma, section, "system") != _section(mb, section,
                                                                                 "system"):
            parts.append(("system", str(_section(ma, section, "system")),
                          str(_section(mb, section, "system"))))
            covered.append(section)
    if _threshold(ma) != _threshold(mb):
        parts.append(("threshold", str(_threshold(ma)), str(_threshold(mb))))
    for key in sorted(set(ca) | set(cb)):
        if _quiet(key) or any(key == c or key.startswith(c + ".") for c in covered):
            continue
        if ca.get(key) != cb.get(key):
            parts.append((key, str(ca.get(key, "—")), str(cb.get(key, "—"))))
    if not parts:
        return None
    shown = parts[:MAX_PARTS]
    more = f" (+{len(parts) - MAX_PARTS} more)" if len(parts) > MAX_PARTS else ""
    return (" ".join(f"{k}={va}" for k, va, _ in shown) + more,
            " ".join(f"{k}={vb}" for k, _, vb in shown) + more)


def output_folder(root: Path, name_a: str, name_b: str) -> Path:
    """A new folder for one comparison: ``<root>/<start stamp>_<A>_vs_<B>``, created here;
    two comparisons, even of the same runs at the same moment, never share one."""
    from runner.schema import folder_stamp

    while True:
        folder = root / f"{folder_stamp()}_{safe_name(name_a)}_vs_{safe_name(name_b)}"
        try:
            folder.mkdir(parents=True, exist_ok=False)
        except FileExistsError:  # pragma: no cover - 1 in 65,536 within one microsecond
            continue
        return folder
