"""A configured dataset: its cases, knowledge base and stored responses (the `dataset` group)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any

from runner.data.errors import DataError
from runner.data.loading import file_digest, iter_cases, iter_documents
from runner.data.models import Case, Document, Response


def _plain(cfg: Any) -> Any:
    """An OmegaConf node (or plain value) as plain Python data."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else cfg


def build_callable(spec: Any, key: str = "transform") -> Callable[..., Any] | None:
    """Turn a ``{_target_: pkg.func, **kwargs}`` node into ``partial(func, **kwargs)``.

    Raises:
        RagciteError: The function cannot be found or built (one line naming `key`).
    """
    if (spec := _plain(spec)) is None:
        return None
    from runner.config.plugins import build

    written = isinstance(spec, str)  # `dataset.transform=pkg.fn`
    return build({"_target_": spec} if written else spec, key, target_key=key if written else None,
                 _partial_=True)


def file_options(spec: Any, key: str) -> dict[str, Any]:
    """The loader arguments of a file's section of the config (`key` names it in errors)."""
    return {"mapping": spec.get("mapping"), "format": spec.get("format"),
            "transform": build_callable(spec.get("transform"), f"{key}.transform")}


class Dataset:
    """Cases, knowledge base and stored responses described by one `dataset` config.

    Args:
        cfg: A node of the ``DatasetConf`` schema (or an equivalent dict).
    """

    def __init__(self, cfg: Any) -> None:
        self.cfg = _plain(cfg)
        self.name: str = self.cfg.get("name") or "dataset"
        self.path: str = self.cfg["path"]
        self.limit: int | None = self.cfg.get("limit")

    def iter_cases(self) -> Iterator[Case]:
        """Stream the validated cases (the first `limit` when set)."""
        it = iter_cases(self.path, **file_options(self.cfg, "dataset"))
        return islice(it, self.limit) if self.limit is not None else it

    @cached_property
    def digest(self) -> str:
        """Content digest of the case file(s), the knowledge base and the loading config."""
        kb = self.cfg.get("knowledge_base") or {}
        loading = {k: self.cfg.get(k) for k in ("mapping", "transform", "limit", "format",
                                                 "knowledge_base")}
        parts = (file_digest(self.path), file_digest(kb["path"]) if kb.get("path") else "",
                 json.dumps(loading, sort_keys=True, default=str))
        return hashlib.sha256("".join(parts).encode()).hexdigest()[:16]

    def knowledge_base(self) -> list[Document]:
        """The knowledge base documents.

        Raises:
            DataError: The dataset declares no knowledge base.
        """
        kb = self.cfg.get("knowledge_base")
        if not kb or not kb.get("path"):
            raise DataError(self.path, None, "dataset.knowledge_base",
                            f"dataset {self.name!r} has no knowledge base; a retrieving model "
                            "adapter needs one (set dataset.knowledge_base.path)")
        docs = list(iter_documents(kb["path"], **file_options(kb, "dataset.knowledge_base")))
        if not any(doc.text.strip() for doc in docs):
            what = f"only blank documents ({len(docs)})" if docs else "no documents"
            raise DataError(str(kb["path"]), None, None,
                            f"the knowledge base has {what}; a retrieving model needs at "
                            "least one document with text")
        return docs

    @cached_property
    def texts(self) -> dict[str, str]:
        """The knowledge base's text by source, {} without one: what offsets cite."""
        kb = self.cfg.get("knowledge_base") or {}
        return {doc.source: doc.text for doc in self.knowledge_base()} if kb.get("path") else {}

    def responses(self, system: str | None) -> dict[str, Response] | None:
        """Stored responses of `system` keyed by case id, or None to use those in the cases.

        Raises:
            DataError: The system is unknown or its file is malformed.
        """
        systems = self.cfg.get("systems") or {}
        name = system or self.cfg.get("default_system")
        if name is None:
            return None
        if name not in systems:
            raise DataError(self.path, None, "model.system",
                            f"unknown system {name!r} for dataset {self.name!r}; expected one "
                            f"of {', '.join(systems) or '(none stored)'}")
        options = file_options(systems[name], f"dataset.systems.{name}")
        cases = iter_cases(systems[name]["path"], **{**options, "transform": _WithQuery(
            options["transform"])})
        return {case.id: case.response or Response() for case in cases}


@dataclass(frozen=True)
class _WithQuery:
    """Responses files have no query: fill a blank one so records validate as cases.

    Attributes:
        func: The system's own transform, applied first (named in its errors).
    """

    func: Callable[..., Any] | None

    def __call__(self, record: Any) -> Any:
        record = record if self.func is None else self.func(record)
        return {"query": "", **record} if isinstance(record, dict) else record
