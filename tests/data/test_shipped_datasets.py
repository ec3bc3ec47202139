"""The shipped real datasets (HotpotQA, MuSiQue, ExpertQA) load through their configs.

Every count below was computed independently of ragcite, with plain ``json`` over the raw
files (e.g. ExpertQA: split each evidence string at its first blank line, keep claims whose
``support`` is ``"Complete"``, count distinct (URL, passage) pairs).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from runner import evaluate
from runner.config.schema import DatasetConf
from runner.data.dataset import Dataset
from runner.data.errors import DataError
from runner.data.loading import resolve_path
from runner.data.shapes import expertqa, hotpotqa

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf" / "dataset"
EQA_TEST = "pkg://runner.datasets/expertqa/rand_test.jsonl"
EQA_VAL = "pkg://runner.datasets/expertqa/rand_val.jsonl"


def dataset_conf(name: str, model: dict[str, Any] | None = None, **overrides: Any) -> Any:
    """`conf/dataset/<name>.yaml` on its schema, as the `dataset` node of a root config.

    `model` becomes the root's ``model`` node, so interpolations such as
    ``${oc.select:model.system,null}`` resolve as in a composed run.
    """
    values = OmegaConf.load(CONF / f"{name}.yaml")
    values.pop("defaults")
    node = OmegaConf.merge(OmegaConf.structured(DatasetConf), values,
                           OmegaConf.create(overrides))
    root = OmegaConf.create({"model": model or {}})
    root.dataset = node
    return root.dataset


def sha256(pkg_path: str) -> str:
    return hashlib.sha256(resolve_path(pkg_path).read_bytes()).hexdigest()


# --- files and configs ----------------------------------------------------------------------


@pytest.mark.parametrize("path,digest", [
    # The sha256 sums of the upstream files, as listed in each SOURCE.md.
    ("hotpotqa/hotpotqa_train.json",
     "6c0e2689d03c94b3bb4d5f94ed806ea4f4eb4f46c12132f8e91df774ad5c5a22"),
    ("hotpotqa/hotpotqa_train_corpus.json",
     "2671af600095eabc5b3f3bc3728861682f14fcced84ef1386509a8ae92647f88"),
    ("musique/musique_train.json",
     "bca674746844637f5c68408a96b67bc0542d98e7c53715f3acafe144bd5e4ff4"),
    ("musique/musique_train_corpus.json",
     "79845dd085f9df49c8ce440208763e2611aeb86c81ee0bdad2094504381bb651"),
    ("expertqa/rand_test.jsonl",
     "022d6c19bdd91fb33c3185ef59f9c18510655c15598061e631c434487aa07b28"),
    ("expertqa/rand_val.jsonl",
     "4da2b2e637104fb816716eaa4c60898c6892395d596c03b7d1f9a72c6327069c"),
    ("expertqa/derived_evidence_passages.jsonl",
     "2ddf11624d06691fd07724178e424db9b61317cca2bbe9c31f4b45ce3f5a0f2c"),
])
def test_data_files_are_byte_identical_to_upstream(path: str, digest: str) -> None:
    assert sha256(f"pkg://runner.datasets/{path}") == digest


@pytest.mark.parametrize("folder", ["demo", "hotpotqa", "musique", "expertqa"])
def test_every_dataset_folder_has_license_and_source(folder: str) -> None:
    for name in ("LICENSE", "SOURCE.md"):
        assert resolve_path(f"pkg://runner.datasets/{folder}/{name}").is_file()


@pytest.mark.parametrize("name", ["demo", "file", "hotpotqa", "musique", "expertqa"])
def test_dataset_configs_extend_the_schema_and_are_named_after_their_file(name: str) -> None:
    text = (CONF / f"{name}.yaml").read_text(encoding="utf-8")
    assert "defaults:\n  - /schema/dataset@_here_\n  - _self_\n" in text
    assert OmegaConf.load(CONF / f"{name}.yaml").name == name


def test_composed_expertqa_follows_the_model_system(compose_cfg) -> None:
    cfg = compose_cfg("dataset=expertqa", "model=precomputed", "model.system=bing_chat")
    dataset = Dataset(cfg.dataset)
    assert sum(1 for _ in dataset.iter_cases()) == 49
    cfg = compose_cfg("dataset=expertqa", "model=precomputed",
                      "dataset.path=pkg://runner.datasets/expertqa/rand_val.jsonl")
    dataset = Dataset(cfg.dataset)  # no model.system: the dataset's default, rr_gs_gpt4
    cases = list(dataset.iter_cases())
    responses = dataset.responses(cfg.model.system)
    assert len(cases) == 41
    assert responses is not None and set(responses) == {c.id for c in cases}


def test_file_dataset_takes_a_knowledge_base_on_the_command_line(compose_cfg) -> None:
    cfg = compose_cfg("dataset=file", "dataset.path=cases.jsonl",
                      "dataset.knowledge_base.path=kb.jsonl", "dataset.mapping.query=question")
    assert cfg.dataset.knowledge_base.path == "kb.jsonl"
    assert cfg.dataset.mapping.query == "question"
    cfg = compose_cfg("dataset=file", "dataset.path=cases.jsonl")
    with pytest.raises(DataError, match="no knowledge base"):
        Dataset(cfg.dataset).knowledge_base()


# --- HotpotQA -------------------------------------------------------------------------------


def test_hotpotqa_cases() -> None:
    cases = list(Dataset(dataset_conf("hotpotqa")).iter_cases())
    assert len(cases) == 100
    assert sum(len(c.references) for c in cases) == 229
    assert all(len(c.expected_sources) == 2 for c in cases)
    first = cases[0]
    assert first.id == "5a77ec115542992a6e59dff7"
    assert first.query == "If Gallu is a demon Lilu is what?"
    assert [r.model_dump() for r in first.references] == [
        {"source": "Alû", "content": "In Akkadian and Sumerian mythology, it is associated with "
                                     "other demons like Gallu and Lilu."},
        {"source": "Lilu (mythology)", "content": "A lilu or lilû is a masculine Akkadian word "
                                                  "for a spirit, related to Alû, demon."},
    ]
    assert first.expected_sources == ["Alû", "Lilu (mythology)"]
    assert first.metadata == {"answer": "a spirit", "type": "bridge", "level": "easy"}


def test_hotpotqa_knowledge_base() -> None:
    kb = Dataset(dataset_conf("hotpotqa")).knowledge_base()
    assert len(kb) == 994
    assert kb[0].source == "Demon Dice"
    assert kb[0].text.startswith("Demon Dice, originally published as Chaos Progenitus, is a "
                                 "collectible dice game")
    assert " In it, each player controls a demon" in kb[0].text
    assert kb[-1].source == "Ann B. Davis"


def test_hotpotqa_shape_errors() -> None:
    record = {"supporting_facts": [["A", 2]], "context": [["A", ["One.", " Two."]]]}
    with pytest.raises(ValueError, match=r"supporting_facts\[0\].*2 sentences"):
        hotpotqa.supporting_facts(record)
    lenient = hotpotqa.supporting_facts(record, strict=False)
    assert lenient["references"] == [{"source": "A", "content": ""}]
    with pytest.raises(ValueError, match="no context paragraph"):
        hotpotqa.supporting_facts({"supporting_facts": [["B", 0]], "context": []})
    assert list(hotpotqa.corpus_documents({"T": ["a.", " b."]})) == [
        {"source": "T", "text": "a. b."}]
    with pytest.raises(ValueError, match="list of sentences"):
        list(hotpotqa.corpus_documents({"T": [1, 2]}))


# --- MuSiQue --------------------------------------------------------------------------------


def test_musique_cases() -> None:
    cases = list(Dataset(dataset_conf("musique")).iter_cases())
    assert len(cases) == 100
    assert sum(len(c.references) for c in cases) == 237
    first = cases[0]
    assert first.id == "2hop__150763_14904"
    assert first.query == ("Who was the first president of the association which published "
                           "Journal of Psychotherapy Integration?")
    assert len(first.references) == 2
    assert first.references[0].model_dump() == {
        "source": "Journal of Psychotherapy Integration",
        "content": "The Journal of Psychotherapy Integration is a peer-reviewed academic "
                   "journal published by the American Psychological Association on behalf of "
                   "the Society for the Exploration of Psychotherapy Integration. It was "
                   "established in 1991 and covers research in psychotherapy. The "
                   "editor-in-chief is Jennifer Callahan (University of North Texas).",
    }
    assert set(first.metadata) == {"answer", "answer_aliases"}


def test_musique_knowledge_base() -> None:
    kb = Dataset(dataset_conf("musique")).knowledge_base()
    assert len(kb) == 1890
    assert len({d.source for d in kb}) == 1764
    assert kb[0].source == "Journal of Mathematical Physics"
    assert kb[-1].source == "Lewistown, Illinois"


# --- ExpertQA -------------------------------------------------------------------------------

# system -> (answers, references, citations, (first line, its references, its first
# reference's URL)) per split.
EXPERTQA = {
    EQA_TEST: {
        "gpt4": (17, 42, 83, ("19", 0, None)),
        "bing_chat": (49, 168, 192, (
            "2", 5, "http://southlandretrofit.com/california-prevent-massive-earthquake-damage/")),
        "rr_gs_gpt4": (42, 95, 108, ("8", 1, "https://www.investopedia.com/terms/d/default2.asp")),
        "rr_sphere_gpt4": (28, 83, 101, (
            "1", 3, "https://americanaddictioncenters.org/dissociative-disorders")),
        "post_hoc_gs_gpt4": (38, 146, 250, (
            "6", 1, "https://www.britannica.com/art/dance/Set-and-design")),
        "post_hoc_sphere_gpt4": (45, 160, 268, (
            "9", 4, "https://kuscholarworks.ku.edu/handle/1808/21972")),
    },
    EQA_VAL: {
        "gpt4": (17, 54, 105, ("26", 0, None)),
        "bing_chat": (49, 175, 203, (
            "4", 4, "https://www.mylawquestions.com/what-is-internet-jurisdiction.htm")),
        "rr_gs_gpt4": (41, 91, 99, (
            "3", 5, "https://environmentalmicrobiome.biomedcentral.com/articles/"
                    "10.1186/s40793-020-00371-w")),
        "rr_sphere_gpt4": (25, 64, 78, (
            "1", 3, "https://youaremom.com/children/impact-of-domestic-violence/")),
        "post_hoc_gs_gpt4": (45, 186, 249, ("2", 1, "https://www.irs.gov/publications/p15b")),
        "post_hoc_sphere_gpt4": (40, 125, 256, (
            "8", 1, "https://www.total-piano-care.com/what-is-a440hz.html")),
    },
}


def test_expertqa_splits_hold_436_answers() -> None:
    assert sum(v[0] for split in EXPERTQA.values() for v in split.values()) == 436


@pytest.mark.parametrize("path,system", [(p, s) for p in EXPERTQA for s in expertqa.SYSTEMS])
def test_expertqa_system(path: str, system: str) -> None:
    n_cases, n_refs, n_cits, (first_id, first_refs, first_url) = EXPERTQA[path][system]
    dataset = Dataset(dataset_conf("expertqa", model={"system": system}, path=path))
    cases = list(dataset.iter_cases())
    responses = dataset.responses(system)
    assert responses is not None
    assert len(cases) == n_cases
    assert sum(len(c.references) for c in cases) == n_refs
    assert sum(len(r.citations) for r in responses.values()) == n_cits
    # Every case has this system's response, and only those: nothing is scored as missing.
    assert list(responses) == [c.id for c in cases]
    assert all(c.metadata["system"] == system for c in cases)
    first = cases[0]
    assert (first.id, len(first.references)) == (first_id, first_refs)
    if first_url is not None:
        assert first.references[0].source == first_url
    # References are a subset of the citations: both recalls are 1.0 by construction.
    result = evaluate(cases, matcher="ngram", responses=responses, bootstrap_resamples=10)
    assert result.n_errors == 0
    assert result.metrics["context_recall"] == 1.0
    assert result.metrics["source_recall"] == 1.0


def test_expertqa_url_only_systems_have_empty_passages() -> None:
    for system in ("gpt4", "bing_chat"):
        dataset = Dataset(dataset_conf("expertqa", model={"system": system}))
        assert all(not r.content for c in dataset.iter_cases() for r in c.references)
        responses = dataset.responses(system) or {}
        assert all(not c.content for r in responses.values() for c in r.citations)


# Macro means under the default ngram matcher, rand_test.jsonl (quoted in the release notes).
EXPERTQA_TEST_FIGURES = {
    "gpt4": (0.5235, 0.5689, 0.5235, 0.5689),
    "bing_chat": (0.8900, 0.9224, 0.8900, 0.9224),
    "rr_gs_gpt4": (0.8532, 0.8714, 0.8770, 0.8873),
    "rr_sphere_gpt4": (0.8315, 0.8697, 0.8298, 0.8686),
    "post_hoc_gs_gpt4": (0.6276, 0.6934, 0.6155, 0.6849),
    "post_hoc_sphere_gpt4": (0.5697, 0.6499, 0.5715, 0.6511),
}


@pytest.mark.parametrize("system", expertqa.SYSTEMS)
def test_expertqa_test_split_figures(system: str) -> None:
    dataset = Dataset(dataset_conf("expertqa", model={"system": system}))
    result = evaluate(dataset.iter_cases(), matcher="ngram",
                      responses=dataset.responses(system), bootstrap_resamples=10)
    got = tuple(result.metrics[k] for k in ("context_precision", "context_f1",
                                            "source_precision", "source_f1"))
    assert got == pytest.approx(EXPERTQA_TEST_FIGURES[system], abs=5e-5)


def test_expertqa_default_system_and_all_lines() -> None:
    # No model system: the dataset's default_system picks the lines.
    dataset = Dataset(dataset_conf("expertqa"))
    assert sum(1 for _ in dataset.iter_cases()) == 42
    # default_system=null (and no model system) keeps every line, e.g. for a retrieving model.
    dataset = Dataset(dataset_conf("expertqa", default_system=None))
    cases = list(dataset.iter_cases())
    assert len(cases) == 219
    assert [c.id for c in cases[:3]] == ["1", "2", "3"]


def test_expertqa_unknown_system_is_a_located_error() -> None:
    dataset = Dataset(dataset_conf("expertqa", model={"system": "wrong_passages"}))
    with pytest.raises(DataError, match="unknown ExpertQA system 'wrong_passages'"):
        next(iter(dataset.iter_cases()))
    with pytest.raises(DataError, match="unknown system 'nope'"):
        dataset.responses("nope")


def test_expertqa_knowledge_base() -> None:
    kb = Dataset(dataset_conf("expertqa")).knowledge_base()
    assert len(kb) == 1380
    assert len({d.source for d in kb}) == 1286
    assert kb[0].source == "https://www.treatmentalternatives.com/treatment/therapies/"


def test_expertqa_evidence_parsing() -> None:
    assert expertqa.parse_evidence("[3] https://a.org/x \n") == ("3", "https://a.org/x", "")
    assert expertqa.parse_evidence("[1] https://a.org\n\nLine one.\n\nLine two.") == (
        "1", "https://a.org", "Line one.\n\nLine two.")
    with pytest.raises(ValueError, match="neither"):
        expertqa.parse_evidence("no marker here")
    answer = {"claims": [
        {"support": "Complete", "evidence": ["[1] u1\n\np1", "[2] u1\n\np1"]},
        {"support": "Partial", "evidence": ["[3] u3\n\np3", "[1] u1\n\np1"]},
    ]}
    assert expertqa.citations(answer) == [{"source": "u1", "content": "p1"}] * 2 + [
        {"source": "u3", "content": "p3"}]
    assert expertqa.references(answer) == [{"source": "u1", "content": "p1"}]
    record = {"question": "q", "answers": {"gpt4": answer}}
    assert expertqa.case_record(record, system="bing_chat") is None
    assert expertqa.case_record(record, None, "gpt4") is not None
    assert expertqa.response_record(record, "bing_chat") is None
    with pytest.raises(ValueError, match="exactly one"):
        expertqa.case_record({"answers": {}})
