"""The protocol files load, and tool arguments are checked the way the schemas say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import ConfigError
from memoryd.server.schemas import (
    TOOL_NAMES,
    InvalidArgumentsError,
    ToolSchema,
    load_tool_schemas,
    protocol_dir,
    validate_arguments,
)

TOOLS = {tool.name: tool for tool in load_tool_schemas()}
SEARCH = TOOLS["memory_search"]

valid_search_arguments = st.fixed_dictionaries(
    {"query": st.text(min_size=1).filter(lambda text: text.strip() != "")},
    optional={
        "maxResults": st.integers(min_value=1, max_value=100),
        "minScore": st.floats(min_value=0, max_value=1),
        "corpus": st.sampled_from(["memory", "sessions", "all"]),
        "waitFresh": st.integers(min_value=0, max_value=60000),
    },
)

JSON_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(),
    "integer": st.integers(),
    "number": st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer()),
    "boolean": st.booleans(),
    "array": st.lists(st.integers(), max_size=2),
    "object": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    "null": st.none(),
}


def test_every_tool_has_an_object_schema_for_input_and_output_and_a_description() -> None:
    assert tuple(TOOLS) == TOOL_NAMES
    for tool in TOOLS.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.description


@given(valid_search_arguments)
def test_valid_search_arguments_pass_with_the_corpus_default_filled_in(arguments: dict[str, Any]) -> None:
    checked = validate_arguments(SEARCH, arguments)
    assert checked == {"corpus": "all", **arguments}


@given(
    st.sampled_from(list(TOOLS))
    .flatmap(lambda name: st.tuples(st.just(name), st.sampled_from(sorted(TOOLS[name].input_schema["properties"]))))
    .flatmap(lambda pair: st.tuples(st.just(pair[0]), st.just(pair[1]), _wrong_value(TOOLS[pair[0]], pair[1]))),
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_field(case: tuple[str, str, Any]) -> None:
    name, field, value = case
    arguments: dict[str, Any] = {"query": "x", "path": "MEMORY.md", "text": "x"} if name != "status" else {}
    arguments = {key: item for key, item in arguments.items() if key in TOOLS[name].input_schema["properties"]}
    arguments[field] = value
    with pytest.raises(InvalidArgumentsError) as caught:
        validate_arguments(TOOLS[name], arguments)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"invalid arguments: {field} must be ")


def _wrong_value(tool: ToolSchema, field: str) -> st.SearchStrategy[Any]:
    declared = tool.input_schema["properties"][field]["type"]
    allowed = {declared, "integer"} if declared == "number" else {declared}
    return st.one_of([strategy for kind, strategy in JSON_VALUES.items() if kind not in allowed])


def test_integral_numbers_count_as_integers_and_booleans_do_not() -> None:
    assert validate_arguments(SEARCH, {"query": "q", "maxResults": 5.0})["maxResults"] == 5
    assert isinstance(validate_arguments(SEARCH, {"query": "q", "maxResults": 5.0})["maxResults"], int)
    with pytest.raises(InvalidArgumentsError, match="maxResults must be an integer"):
        validate_arguments(SEARCH, {"query": "q", "maxResults": True})


def test_a_missing_required_argument_and_an_unknown_one_are_named() -> None:
    with pytest.raises(InvalidArgumentsError, match=r"^invalid arguments: query is required$"):
        validate_arguments(SEARCH, {})
    with pytest.raises(InvalidArgumentsError, match="limit is not an accepted argument"):
        validate_arguments(SEARCH, {"query": "q", "limit": 3})


def test_no_arguments_at_all_are_an_empty_object() -> None:
    assert validate_arguments(TOOLS["status"], None) == {"deep": False}


def _copy_protocol(tmp_path: Path) -> Path:
    target = tmp_path / "protocol"
    shutil.copytree(protocol_dir(), target)
    return target


def test_an_input_schema_using_a_keyword_the_validator_lacks_is_refused(tmp_path: Path) -> None:
    directory = _copy_protocol(tmp_path)
    path = directory / "memory_get.input.json"
    schema = json.loads(path.read_text())
    schema["properties"]["path"]["oneOf"] = [{"type": "string"}]
    path.write_text(json.dumps(schema))
    with pytest.raises(ConfigError, match="oneOf"):
        load_tool_schemas(directory)


def test_a_missing_or_malformed_schema_file_is_a_config_error(tmp_path: Path) -> None:
    directory = _copy_protocol(tmp_path)
    (directory / "status.output.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_tool_schemas(directory)
    (directory / "status.output.json").unlink()
    with pytest.raises(ConfigError, match="cannot read the tool schema"):
        load_tool_schemas(directory)


@pytest.mark.parametrize("query", [" ", "\t\n", "\u3000 "])
def test_a_blank_query_is_refused_in_words_not_a_regex(query: str) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        validate_arguments(SEARCH, {"query": query})
    assert str(caught.value) == "invalid arguments: query must not be blank (it holds only whitespace)"


@given(st.one_of(st.integers(min_value=2**53), st.integers(max_value=-(2**53)), st.sampled_from([1e300, -1e300])))
def test_an_integer_past_the_safe_range_is_refused_in_words_with_its_bound(value: float) -> None:
    """The bound and the words around it are spaced (it read `at most9007199254740991`)."""
    with pytest.raises(InvalidArgumentsError) as refused:
        validate_arguments(TOOLS["memory_get"], {"path": "MEMORY.md", "from": value})
    bound = "at most 9007199254740991" if value > 0 else "at least -9007199254740991"
    assert str(refused.value).startswith(f"invalid arguments: from must be {bound} (got ")
