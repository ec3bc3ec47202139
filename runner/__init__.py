"""ragcite: does your RAG system cite the right documents and the right passages?

The public Python API (SPEC 8)::

    import runner
    cases = runner.load_cases("data/demo/cases.jsonl")
    result = runner.evaluate(cases, matcher="ngram", threshold=0.5)
    result.metrics["context_f1"]; result.cases[0].metrics["source_recall"]
    frame = result.to_pandas()  # or runner.read_results(folder) for a written run
"""

from runner import matchers
from runner.data.errors import DataError
from runner.data.loading import iter_cases, load_cases, load_knowledge_base
from runner.data.models import Case, Citation, Document, Reference, Response
from runner.evaluate import evaluate
from runner.results import CaseResult, RunResult, ThresholdResults, read_results

__version__ = "0.1.0"

__all__ = ["Case", "CaseResult", "Citation", "DataError", "Document", "Reference", "Response",
           "RunResult", "ThresholdResults", "__version__", "evaluate", "iter_cases",
           "load_cases", "load_knowledge_base", "matchers", "read_results"]
