"""The composed config checked against its schemas before any work (runner/config/constraints.py).

A node's schema is its structured-config class; a plug-in's node (``matcher``, ``model``, any
node with a ``_target_`` class) is checked against the schema derived from that class
(:func:`runner.config.schema.conf_for`), shipped or not: the keys it takes, their types,
their ranges.
"""

from __future__ import annotations

import dataclasses

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.config.constraints import CHECK, EACH, CrossCheck
from runner.config.hydra_errors import describe, unknown_key
from runner.config.schema import target_conf
from runner.errors import RagciteError


def schema_of(node: DictConfig, key: str = "") -> type | None:
    """The schema of `node` (at `key`): derived from its ``_target_`` class, else the
    structured-config class it was composed from (None: neither)."""
    target = node.get("_target_") if "_target_" in node else None
    if isinstance(target, str):
        return target_conf(target, key)
    schema = OmegaConf.get_type(node)
    return schema if dataclasses.is_dataclass(schema) else None


def check_config(node: DictConfig, prefix: str = "", schema: type | None = None) -> None:
    """Check a composed config (or one of its nodes, at `prefix`; against `schema` when given)
    against its schemas, before any work.

    Raises:
        RagciteError: The first problem, located: ``scoring.batch_size: must be an integer
            >= 1, got 0``; ``gate.context_recal: no such gate; the gates: ...``.
    """
    schema = schema or schema_of(node, prefix.rstrip("."))
    fields = {f.name: f.metadata for f in dataclasses.fields(schema)} if schema else {}
    if schema is not None:
        for key in (k for k in map(str, node) if k not in fields):
            raise RagciteError(unknown_key(f"{prefix}{key}", schema))
        if OmegaConf.get_type(node) is not schema:  # typed by another class, or not at all
            try:  # the keys' types, as Hydra checks a typed option
                OmegaConf.merge(OmegaConf.structured(schema),
                                OmegaConf.to_container(node, resolve=True))
            except OmegaConfBaseException as exc:
                exc.full_key = f"{prefix}{getattr(exc, 'full_key', '') or exc.key}"
                raise RagciteError(describe(exc)) from None
        for name, metadata in fields.items():
            constraint = metadata.get(CHECK)
            if constraint and name in node and (problem := constraint.problem(node[name])):
                raise RagciteError(f"{prefix}{name}: {problem}")
        if isinstance(schema, CrossCheck) and (problem := schema.config_problem(node)):
            raise RagciteError(f"{prefix.rstrip('.')}: {problem}" if prefix else problem)
    for key in map(str, node):
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none():
            for name in map(str, child) if EACH in fields.get(key, {}) else ():
                check_config(child[name], f"{prefix}{key}.{name}.", fields[key][EACH])
            check_config(child, f"{prefix}{key}.")
