"""``hydra/sweeper=ragcite``: Hydra's basic sweeper, composing each job's config once.

Before launching a batch, Hydra's basic sweeper composes every job's config to catch a bad
override before any job runs; the launcher then composes each config again to run it. Composing
ragcite's config takes about 0.3 s, which in a sweep is most of the sweep's own work between two
jobs. This sweeper keeps the config composed for the check and hands it to the launcher, so each
job's config is composed once. Everything else (``params``, ``max_batch_size``, the check
itself, every launcher) is Hydra's basic sweeper. The plugin lives in Hydra's ``hydra_plugins``
namespace, where Hydra looks for plugin classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_loader import ConfigLoader
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class ComposedOnce(ConfigLoader):
    """A config loader that hands a sweep config composed for the batch check to the next
    request for the same config (the launcher's), instead of composing it again.

    Only a config composed here and not handed out yet is reused, once; any other request is
    the wrapped loader's. Configs are kept only while `keep` is true (a launcher that composes
    in this process), and :meth:`forget` drops those not handed out.
    """

    def __init__(self, inner: ConfigLoader) -> None:
        self.inner = inner
        self.keep = True
        self._kept: dict[tuple[int, tuple[str, ...]], tuple[DictConfig, DictConfig]] = {}
        self.reused = 0

    def forget(self) -> None:
        """Drop the kept configs."""
        self._kept.clear()

    def load_sweep_config(self, master_config: DictConfig,
                          sweep_overrides: list[str]) -> DictConfig:
        key = (id(master_config), tuple(sweep_overrides))
        kept = self._kept.pop(key, None)
        if kept is not None and kept[0] is master_config:
            self.reused += 1
            return kept[1]
        config = self.inner.load_sweep_config(master_config, sweep_overrides)
        if self.keep:
            self._kept[key] = (master_config, config)
        return config

    def __getstate__(self) -> dict[str, Any]:
        # Launchers that ship themselves to their workers (Submitit) carry no kept configs.
        return {**self.__dict__, "_kept": {}}

    def load_configuration(self, *args: Any, **kwargs: Any) -> DictConfig:
        return self.inner.load_configuration(*args, **kwargs)

    def get_search_path(self) -> Any:
        return self.inner.get_search_path()

    def get_sources(self) -> Any:
        return self.inner.get_sources()

    def list_groups(self, parent_name: str) -> Any:
        return self.inner.list_groups(parent_name)

    def get_group_options(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_group_options(*args, **kwargs)

    def compute_defaults_list(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.compute_defaults_list(*args, **kwargs)


class RagciteSweeper(BasicSweeper):
    """Hydra's :class:`BasicSweeper` whose launcher runs the configs its batch check composed."""

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        self.loader = ComposedOnce(hydra_context.config_loader)
        context = HydraContext(config_loader=self.loader, callbacks=hydra_context.callbacks)
        super().setup(hydra_context=context, task_function=task_function, config=config)
        # Only Hydra's basic launcher composes the jobs' configs here; the others (joblib, Ray,
        # Submitit) compose them in their workers, and would leave the kept ones unused.
        self.loader.keep = isinstance(self.launcher, BasicLauncher)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Hydra's check of a batch; only this batch's configs are kept for the launcher."""
        self.loader.forget()
        super().validate_batch_is_legal(batch)
