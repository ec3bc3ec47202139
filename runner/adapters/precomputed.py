"""The `precomputed` adapter: responses stored with the cases or in a side file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from runner.adapters.base import AdapterContext, BaseAdapter
from runner.data.loading import iter_cases
from runner.data.models import Case, Response


@dataclass
class PrecomputedModel(BaseAdapter):
    """Replay stored responses.

    Args:
        system: A system whose responses the dataset stores (``dataset.systems``); when null,
            the dataset's ``default_system``, else the responses stored inside the cases.
        responses: A side file of ``{"id", "answer", "citations"}`` records keyed by case id;
            takes precedence over `system`.
    """

    system: Optional[str] = None
    responses: Optional[str] = None

    # Stored responses are cheap to read: caching them would only duplicate the file.
    cacheable = False

    def bind(self, context: AdapterContext) -> None:
        """Load the stored responses of the chosen system or side file."""
        super().bind(context)
        self._answered: set[str] = set()
        self._stored: dict[str, Response] | None = {
            case.id: case.response or Response()
            for case in iter_cases(self.responses, transform=lambda r: {"query": "", **r})
        } if self.responses else context.dataset.responses(self.system)

    def respond_sync(self, cases: Sequence[Case]) -> list[Response]:
        """The stored response of each case, or an error response when there is none."""
        found = [self._stored.get(c.id) if self._stored is not None else c.response for c in cases]
        self._answered.update(c.id for c, resp in zip(cases, found) if resp is not None)
        return [resp if resp is not None else Response(
            error=f"no stored response for case {c.id!r} in {self._where()}")
            for c, resp in zip(cases, found)]

    def notes(self) -> list[str]:
        """Stored responses whose ids match no case (when some match: none matching fails the
        run on its own), unless ``dataset.limit`` left cases out on purpose."""
        stored = self._stored or {}
        unused = [i for i in stored if i not in self._answered]
        if not unused or not self._answered or self.context.dataset.limit is not None:
            return []
        shown = ", ".join(repr(i) for i in unused[:5]) + (", ..." if len(unused) > 5 else "")
        return [f"{self._where()}: {len(unused)} of {len(stored)} responses match no "
                f"case: {shown}"]

    def _where(self) -> str:
        if self.responses:
            return f"model.responses {self.responses}"
        return f"system {self.system!r}" if self.system else "the stored responses"
