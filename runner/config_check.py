"""The composed config checked against its schemas before any work (runner/constraints.py).

A node's schema is its structured-config class; a plug-in's node (``matcher``, ``model``) is
checked against the schema derived from its ``_target_`` class (:func:`runner.schema.conf_for`),
which is what its option composed from and what a process of a remote launcher can rebuild.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.config_errors import unknown_key
from runner.constraints import CHECK
from runner.errors import RagciteError
from runner.plugins import locate
from runner.schema import conf_for


def check_config(cfg: DictConfig) -> None:
    """Check a composed config against its schemas, before any work.

    Raises:
        RagciteError: The first problem, located: ``scoring.batch_size: must be an integer
            >= 1, got 0``; ``gate.context_recal: no such gate; the gates: ...``.
    """
    _check_node(cfg, "")


def schema_of(node: DictConfig) -> type | None:
    """The structured-config class `node` was composed from, or None.

    A class made by :func:`conf_for` has no importable name (it does not survive pickling to
    another process), so a node with a ``_target_`` gets its schema rebuilt from that class.
    """
    schema = OmegaConf.get_type(node)
    if _importable(schema):
        return schema
    target = node.get("_target_") if "_target_" in node else None
    if isinstance(target, str):
        try:
            cls = locate(target)
        except Exception:  # not importable: building it reports the reason, with the key
            return None
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            return conf_for(cls)
    return None


def _importable(schema: Any) -> bool:
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        return False
    module = sys.modules.get(schema.__module__)
    return module is not None and getattr(module, schema.__qualname__, None) is schema


def _check_node(node: DictConfig, prefix: str) -> None:
    schema = schema_of(node)
    if schema is not None:
        fields = {f.name: f for f in dataclasses.fields(schema)}
        for key in map(str, node):
            if key not in fields:
                raise RagciteError(unknown_key(f"{prefix}{key}", schema))
        for name, f in fields.items():
            constraint = f.metadata.get(CHECK)
            if constraint is not None and name in node:
                problem = constraint.problem(node[name])
                if problem:
                    raise RagciteError(f"{prefix}{name}: {problem}")
        across = getattr(schema, "config_problem", None)
        if callable(across):
            problem = across(node)
            if problem:
                raise RagciteError(f"{prefix.rstrip('.')}: {problem}" if prefix else problem)
    for key in map(str, node):
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none():
            _check_node(child, f"{prefix}{key}.")
