"""Data model, readers, JMESPath mapping and knowledge-base loading."""

from runner.data.errors import DataError
from runner.data.loading import (
    iter_cases,
    iter_documents,
    load_cases,
    load_knowledge_base,
    resolve_path,
)
from runner.data.mapping import FieldMapping
from runner.data.models import Case, Citation, Document, Reference, Response

__all__ = [
    "Case", "Citation", "DataError", "Document", "FieldMapping", "Reference", "Response",
    "iter_cases", "iter_documents", "load_cases", "load_knowledge_base", "resolve_path",
]
