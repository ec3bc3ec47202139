"""Bad data files refused at load as one located error (issue 17, item 4 and 6a): encodings,
bounds (runner/data/limits.py), JMESPath, pkg:// paths, transforms, empty knowledge bases."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from runner.config.folders import check_folder, folder_problem
from runner.data.dataset import Dataset, build_callable
from runner.data.errors import DataError
from runner.data.limits import MAX_DEPTH, MAX_EXPANSION, check_value
from runner.data.loading import iter_cases, load_cases, load_knowledge_base, resolve_path
from runner.data.mapping import FieldMapping
from runner.errors import RagciteError

CASE = {"id": "1", "query": "q", "references": [{"source": "a", "content": "the cat sat"}]}
BOM = b"\xef\xbb\xbf"


def raises(fn: Any, *args: Any, **kwargs: Any) -> str:
    """The message of the DataError `fn` raises."""
    with pytest.raises(DataError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# --- encodings -----------------------------------------------------------------------------

CSV = ('id,query,references\n1,q,"[{""source"": ""a"", ""content"": ""the cat sat""}]"\n')
YAML = "- id: '1'\n  query: q\n  references: [{source: a, content: the cat sat}]\n"


@pytest.mark.parametrize(("name", "text"), [("c.jsonl", json.dumps(CASE) + "\n"),
                                            ("c.json", json.dumps([CASE])),
                                            ("c.yaml", YAML), ("c.csv", CSV)])
def test_a_byte_order_mark_is_skipped_in_every_format(tmp_path: Path, name: str,
                                                      text: str) -> None:
    plain = load_cases(write_bytes(tmp_path / name, text.encode()))
    assert load_cases(write_bytes(tmp_path / name, BOM + text.encode())) == plain
    assert [c.id for c in plain] == ["1"]  # the CSV column is `id`, not "\ufeffid"


def test_invalid_utf8_in_a_jsonl_file_names_line_and_byte(tmp_path: Path) -> None:
    good = json.dumps(CASE).encode()
    path = write_bytes(tmp_path / "c.jsonl", good + b"\n" + good + b"\n"
                       + b'{"id": "3", "query": "caf\xe9"}\n')
    assert raises(load_cases, path) == (f"{path}, line 3: invalid UTF-8 (byte 0xe9 at column "
                                        "26); save the file as UTF-8")


def test_invalid_utf8_far_down_a_streamed_file_is_refused_before_its_first_case(
        tmp_path: Path) -> None:
    lines = [json.dumps({**CASE, "id": str(i)}).encode() for i in range(1, 5001)]
    path = write_bytes(tmp_path / "c.jsonl", b"\n".join(lines) + b"\n\xff\n")
    with pytest.raises(DataError) as info:
        next(iter_cases(path))  # the first case: the whole file was checked at open
    assert str(info.value).startswith(f"{path}, line 5001: invalid UTF-8 (byte 0xff at column 1)")


@pytest.mark.parametrize(("name", "bad", "problem"), [
    ("c.jsonl", '{"id": "x", "query": "\\ud800"}', "line 3001, field 'query': a lone surrogate"),
    ("c.jsonl", '{"id": "x", "query": "q", "metadata": {"s": NaN}}',
     "line 3001, field 'metadata.s': NaN is not allowed"),
    ("c.csv", 'x,q,"{""s"": Infinity}"', "line 3002, field 'metadata.s': Infinity is not allowed"),
])
def test_a_bad_value_far_down_a_streamed_file_is_refused_before_its_first_case(
        tmp_path: Path, name: str, bad: str, problem: str) -> None:
    if name.endswith(".csv"):
        text = "id,query,metadata\n" + "".join(f"{i},q,\n" for i in range(3000)) + bad + "\n"
    else:
        text = "".join(json.dumps({**CASE, "id": str(i)}) + "\n" for i in range(3000)) + bad
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    cases = iter_cases(path)
    with pytest.raises(DataError) as info:
        next(cases)
    assert str(info.value).startswith(f"{path}, {problem}")


def test_nan_inside_a_string_is_text(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CASE) + "\n" + json.dumps({**CASE, "id": "2", "query": "NaN? "
                                                          "Infinity!"}) + "\n", encoding="utf-8")
    assert [c.query for c in load_cases(path)] == ["q", "NaN? Infinity!"]


@pytest.mark.parametrize(("name", "data", "line"), [
    ("c.csv", b"id,query\n1,q\n2,caf\xe9\n", 3),
    ("c.json", b'[\n{"id": "1",\n "query": "\xff"}]', 3),
    ("c.yaml", b"- id: '1'\n  query: \xc3\n", 2),
])
def test_invalid_utf8_in_other_formats_names_the_line(tmp_path: Path, name: str, data: bytes,
                                                      line: int) -> None:
    path = write_bytes(tmp_path / name, data)
    assert raises(load_cases, path).startswith(f"{path}, line {line}: invalid UTF-8")


def test_invalid_utf8_in_a_knowledge_base_text_file(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.txt").write_text("fine\n", encoding="utf-8")
    bad = write_bytes(tmp_path / "kb" / "b.md", b"# title\ncaf\xe9\n")
    assert raises(load_knowledge_base, tmp_path / "kb") == (
        f"{bad}, line 2: invalid UTF-8 (byte 0xe9 at column 4); save the file as UTF-8")


def test_a_byte_order_mark_in_a_knowledge_base_text_file_is_not_text(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    write_bytes(tmp_path / "kb" / "a.txt", BOM + b"alpha")
    assert load_knowledge_base(tmp_path / "kb")[0].text == "alpha"


# --- bounds: surrogates, NaN, depth, aliases -------------------------------------------------


def test_a_lone_surrogate_escape_is_refused_with_its_field(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CASE) + "\n" + json.dumps({**CASE, "id": "2"}).replace(
        '"the cat sat"', '"the \\udc00 cat"') + "\n", encoding="utf-8")
    assert raises(load_cases, path) == (
        f"{path}, line 2, field 'references[0].content': a lone surrogate escape (\\udc00) is "
        "not text; escape a whole character (a pair \\ud83d\\ude00 is fine)")


def test_a_surrogate_pair_and_an_escaped_backslash_are_text(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "1", "query": "\\ud83d\\ude00 \\\\ud800"}\n', encoding="utf-8")
    assert load_cases(path)[0].query == "\U0001F600 \\ud800"


def test_a_lone_surrogate_in_a_yaml_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text('- id: "1"\n  query: q\n  metadata: {"\\ud800": 1}\n', encoding="utf-8")
    assert raises(load_cases, path) == (
        f"{path}, record 1, field 'metadata': a lone surrogate escape (\\ud800) is not text; "
        "escape a whole character (a pair \\ud83d\\ude00 is fine)")


@pytest.mark.parametrize(("name", "text", "where", "literal"), [
    ("c.jsonl", '{"id": "1", "query": "q", "metadata": {"x": NaN}}\n', "line 1", "NaN"),
    ("c.jsonl", '{"id": "1", "query": "q", "metadata": {"x": [1, -Infinity]}}\n', "line 1",
     "-Infinity"),
    ("c.json", '[{"id": "1", "query": "q", "metadata": {"x": Infinity}}]', "record 1",
     "Infinity"),
    ("c.yaml", "- id: '1'\n  query: q\n  metadata: {x: .nan}\n", "record 1", "nan"),
    ("c.yaml", "- id: '1'\n  query: q\n  metadata: {x: -.inf}\n", "record 1", "-inf"),
])
def test_non_finite_numbers_are_refused(tmp_path: Path, name: str, text: str, where: str,
                                        literal: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    field = "metadata.x[1]" if "[1," in text else "metadata.x"
    assert raises(load_cases, path) == (f"{path}, {where}, field '{field}': {literal} is not "
                                        "allowed (not a finite number); write null or a number")


def test_an_integer_too_long_for_python_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "1", "query": "q", "metadata": {"x": 1' + "0" * 5000 + "}}\n",
                    encoding="utf-8")
    assert raises(load_cases, path) == (f"{path}, line 1: an integer of more than 4300 digits; "
                                        "write it as a string")


def test_nan_in_a_csv_json_cell(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text('id,query,metadata\n1,q,"{""x"": NaN}"\n', encoding="utf-8")
    assert raises(load_cases, path) == (f"{path}, line 2, field 'metadata.x': NaN is not "
                                        "allowed (not a finite number); write null or a number")


def nested(levels: int) -> str:
    """A record nested `levels` deep: the record, its metadata, then lists."""
    inner = "[" * (levels - 2) + "]" * (levels - 2)
    return '{"id": "1", "query": "q", "metadata": {"x": ' + inner + "}}"


@pytest.mark.parametrize("name", ["c.jsonl", "c.json"])
def test_nesting_up_to_the_limit_loads_and_one_more_is_refused(tmp_path: Path,
                                                              name: str) -> None:
    path = tmp_path / name
    wrap = "{}\n" if name == "c.jsonl" else "[{}]"
    path.write_text(wrap.format(nested(MAX_DEPTH)), encoding="utf-8")
    depth, value = 0, load_cases(path)[0].metadata["x"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == MAX_DEPTH - 2
    path.write_text(wrap.format(nested(MAX_DEPTH + 1)), encoding="utf-8")
    message = raises(load_cases, path)
    assert message.endswith("nested deeper than 100 levels of lists and objects (the limit)")
    assert "field 'metadata.x[0][0]" in message


@pytest.mark.parametrize(("name", "text", "where"), [
    ("c.jsonl", json.dumps(CASE) + "\n" + nested(50_000) + "\n", "line 2"),
    ("c.json", "[\n" + nested(50_000) + "]", "line 2"),
    ("c.yaml", "- id: '1'\n  query: q\n  metadata: " + "[" * 5000 + "]" * 5000 + "\n",
     "line 3"),
])
def test_very_deep_nesting_is_a_located_error_not_a_recursion_error(
        tmp_path: Path, name: str, text: str, where: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert raises(load_cases, path).startswith(f"{path}, {where}")


def test_yaml_aliases_within_bounds_load(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- id: '1'\n  query: q\n  references: &r [{source: a, content: x}]\n"
                    "- id: '2'\n  query: q\n  references: *r\n", encoding="utf-8")
    cases = load_cases(path)
    assert cases[0].references == cases[1].references


def bomb(levels: int, indent: str = "    ") -> str:
    """A 'billion laughs' block: each level a list of nine aliases of the one before."""
    lines = [f'{indent}a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in pairwise("abcdefghijklmnop"[:levels]):
        lines.append(f"{indent}{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_inside_a_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- id: '1'\n  query: q\n  metadata:\n" + bomb(9), encoding="utf-8")
    # 9^7 = 4,782,969 values at level g: the first past the limit of 1,000,000.
    assert raises(load_cases, path) == (
        f"{path}, record 1, field 'metadata.g': YAML aliases expand it to more than "
        f"{MAX_EXPANSION:,} values beyond those written (the limit; a 'billion laughs' "
        "document?)")


def test_a_yaml_record_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- id: '1'\n  query: q\n  metadata: &m {self: *m}\n", encoding="utf-8")
    assert raises(load_cases, path) == (f"{path}, record 1, field 'metadata.self': a YAML alias "
                                        "inside its own anchor: the record contains itself")


def test_a_shared_list_reused_deeper_counts_its_own_height() -> None:
    shared: list[Any] = []
    for _ in range(60):
        shared = [shared]  # 61 levels
    check_value({"a": shared}, "f", "record 1")  # 62 levels: fine
    deep: Any = shared
    for _ in range(45):
        deep = [deep]
    with pytest.raises(DataError, match="nested deeper than 100 levels"):
        check_value({"a": shared, "b": deep}, "f", "record 1")  # `shared` again, 46 deeper


# --- mapping, paths, transforms, knowledge bases --------------------------------------------


def test_an_unknown_jmespath_function_is_refused_when_the_mapping_is_compiled() -> None:
    with pytest.raises(DataError) as info:
        FieldMapping({"query": "items[?lenght(name) > `1`].name | [0]"}, origin="m")
    assert str(info.value).startswith("m, field 'query': unknown JMESPath function lenght() in "
                                      "'items[?lenght(name) > `1`].name | [0]'; the functions "
                                      "are abs, avg, ceil, contains, ")


def test_a_jmespath_type_error_is_located(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    assert raises(load_cases, path, mapping={"query": "abs(query)"}) == (
        f"{path}, line 1, field 'mapping.query': expression 'abs(query)' failed: In function "
        "abs(), invalid type for value: q, expected one of: ['number'], received: \"string\"")


def test_pkg_paths_must_name_an_installed_package_and_stay_inside_it() -> None:
    assert raises(resolve_path, "pkg://no_such_pkg/x.jsonl") == (
        "pkg://no_such_pkg/x.jsonl: no installed package 'no_such_pkg'; a pkg:// path reads "
        "pkg://<package>/<file>, e.g. pkg://runner.datasets/demo/cases.jsonl")
    for escape in ("pkg://runner.datasets/../../etc/passwd", "pkg://runner.datasets/..",
                   "pkg://runner.datasets//etc/passwd"):
        assert raises(resolve_path, escape) == (
            f"{escape}: a pkg:// path must stay inside its package (no '..'); give a plain path "
            "for other files")
    inside = resolve_path("pkg://runner.datasets/demo/../demo/cases.jsonl")
    assert inside == resolve_path("pkg://runner.datasets/demo/cases.jsonl") and inside.is_file()


def test_a_directory_where_a_file_is_expected(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").mkdir()
    assert raises(load_cases, tmp_path / "cases.jsonl") == (
        f"{tmp_path / 'cases.jsonl'}: is a directory; expected a file")
    missing = tmp_path / "none.jsonl"
    assert raises(load_cases, missing) == f"{missing}: file not found"


def as_list(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [record]


def test_a_transform_returning_a_non_dict_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    assert raises(load_cases, path, transform=as_list) == (
        f"{path}, line 1: transform tests.data.test_bad_data.as_list returned list ([{{'id': "
        "'1', 'query': 'q', 'reference...); expected a dict (or None to skip the record)")
    transform = build_callable({"_target_": "builtins.str"})
    assert transform is not None
    assert raises(load_cases, path, transform=transform).endswith(
        "line 1: transform builtins.str returned str (\"{'id': '1', 'query': 'q', 'reference...); "
        "expected a dict (or None to skip the record)")


def texts(record: dict[str, Any]) -> list[str]:
    return [record["text"]]


def divide(record: dict[str, Any]) -> float:
    return 1 / 0


def test_a_knowledge_base_transform_must_give_dicts(tmp_path: Path) -> None:
    path = tmp_path / "kb.jsonl"
    path.write_text('{"source": "a", "text": "alpha"}\n', encoding="utf-8")
    assert raises(load_knowledge_base, path, transform=texts) == (
        f"{path}, line 1: transform tests.data.test_bad_data.texts gave str ('alpha'); "
        "expected dicts (one per document)")
    assert load_knowledge_base(path, transform=lambda r: r)[0].text == "alpha"  # one dict
    assert raises(load_knowledge_base, path, transform=divide) == (
        f"{path}, line 1: transform tests.data.test_bad_data.divide failed: "
        "ZeroDivisionError: division by zero")


def test_a_transform_that_cannot_be_found_names_its_key() -> None:
    with pytest.raises(RagciteError) as info:
        build_callable("no_such_module.fix", "dataset.transform")
    assert str(info.value) == ("dataset.transform: cannot import no_such_module.fix: "
                               "No module named 'no_such_module'")


@pytest.mark.parametrize(("content", "what"), [
    ("", "no documents"), ('{"source": "a", "text": "  "}\n', "only blank documents (1)")])
def test_an_empty_knowledge_base_names_its_file(tmp_path: Path, content: str,
                                                what: str) -> None:
    kb = tmp_path / "kb.jsonl"
    kb.write_text(content, encoding="utf-8")
    dataset = Dataset({"name": "x", "path": "c.jsonl", "knowledge_base": {"path": str(kb)}})
    assert raises(dataset.knowledge_base) == (f"{kb}: the knowledge base has {what}; a "
                                              "retrieving model needs at least one document "
                                              "with text")


def test_a_folder_setting_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert folder_problem(tmp_path / "new" / "deeper") is None
    assert folder_problem(tmp_path) is None
    assert folder_problem(tmp_path / "f") == f"{tmp_path / 'f'} is a file"
    with pytest.raises(RagciteError) as info:
        check_folder("cache.dir", tmp_path / "f" / "cache")
    assert str(info.value) == (f"cache.dir: {tmp_path / 'f' / 'cache'} is under "
                               f"{tmp_path / 'f'}, which is a file; give a folder (created when "
                               "missing)")
