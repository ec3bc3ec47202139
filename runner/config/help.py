"""The parts of ``ragcite --help`` written from the code (conf/config.yaml ``hydra.help``).

``${ragcite.help_groups:}`` lists the groups a user chooses from, each with its options, read
from the packaged conf/ folders (Hydra's ``$APP_CONFIG_GROUPS`` also lists the typed schemas
under ``schema/``, which are not options); ``${ragcite.help_exits:}`` lists the exit statuses
of runner/errors.py.
"""

from __future__ import annotations

from importlib.resources import files

from runner import errors

HIDDEN_GROUPS = ("hydra", "schema")
"""Config folders that are not choosable groups."""


def help_groups() -> str:
    """One line per choosable group: ``matcher: embeddings, llm, ..., substring``."""
    groups = sorted((p for p in files("runner.conf").iterdir() if p.is_dir()
                     and p.name not in HIDDEN_GROUPS and not p.name.startswith(("_", "."))),
                    key=lambda p: p.name)
    options = {group.name: sorted(p.name[:-len(".yaml")] for p in group.iterdir()
                                  if p.name.endswith(".yaml")) for group in groups}
    return "\n".join(f"{name}: {', '.join(names)}" for name, names in options.items() if names)


def help_exits() -> str:
    """The exit statuses, one line each."""
    return "\n".join(f"  {code:<4}{text}" for code, text in (
        (0, "every job finished and every gate passed"),
        (errors.EXIT_GATE_FAILED, "a quality gate failed, or a job of a sweep did not finish"),
        (errors.EXIT_INPUT, "bad input or config: one located line `ragcite: error: ...`"),
        (errors.EXIT_NOTHING_SCORED, "no case could be scored (every case failed)"),
        (errors.EXIT_INTERRUPTED, "stopped by Ctrl-C or SIGTERM"),
        (errors.EXIT_BROKEN_PIPE, "the reader of the output went away (ragcite --help | head)")))
