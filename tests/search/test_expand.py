from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.expand import (
    FtsTokenizer,
    build_fts_or_query,
    build_fts_query,
    extract_keywords,
    is_stop_word,
    query_tokens,
)

TOKENIZERS: list[FtsTokenizer] = ["unicode61", "trigram", "porter"]
SPEC_STOP_WORD_EXAMPLES = [
    word
    for line in (
        "the that thing about yesterday please find",
        "ayer sobre cómo cuando donde",
        "ontem sobre quando onde porquê",
        "بالأمس كيف متى أين ماذا",
        "之前 的 那个 什么",
        "어제 그리고 그래서 나는",
        "これ それ そして どう 昨日 した",
    )
    for word in line.split()
]


def _is_word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LN" or char == "_"


def _reference_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    current = ""
    for char in text:
        if _is_word_char(char):
            current += char
        elif current:
            tokens.append(current)
            current = ""
    if current:
        tokens.append(current)
    return tokens


def test_the_word_class_is_exactly_unicode_letters_numbers_and_underscore() -> None:
    mismatches = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if (query_tokens(chr(code)) == [chr(code)]) != _is_word_char(chr(code))
    ]
    assert mismatches == []


def test_query_tokens_split_every_script_on_non_word_characters() -> None:
    text = "Hello, мир! مرحبا 你好 안녕하세요 カタカナ ひらがな 42 snake_case ١٢٣ e-mail"
    assert query_tokens(text) == [
        "Hello",
        "мир",
        "مرحبا",
        "你好",
        "안녕하세요",
        "カタカナ",
        "ひらがな",
        "42",
        "snake_case",
        "١٢٣",
        "e",
        "mail",
    ]


@given(st.text())
def test_query_tokens_agree_with_the_unicode_categories(text: str) -> None:
    assert query_tokens(text) == _reference_tokens(text)


def test_the_strict_fts_query_requires_every_token_and_keeps_case() -> None:
    assert build_fts_query('Deploy "blue-green" API') == '"Deploy" AND "blue" AND "green" AND "API"'


def test_a_query_without_word_characters_has_no_fts_query() -> None:
    assert build_fts_query(" ... !? ") is None
    assert build_fts_query("") is None


def test_the_relaxed_fts_query_accepts_any_keyword_and_drops_inner_quotes() -> None:
    assert build_fts_or_query(["api", '设"计', "c++"]) == '"api" OR "设计" OR "c++"'


def test_no_keywords_make_no_relaxed_query() -> None:
    assert build_fts_or_query([]) is None
    assert build_fts_or_query(['"', " "]) is None


@pytest.mark.parametrize("word", SPEC_STOP_WORD_EXAMPLES)
def test_every_stop_word_the_spec_names_is_a_stop_word(word: str) -> None:
    assert is_stop_word(word)


def test_stop_words_are_recognised_regardless_of_case() -> None:
    assert is_stop_word("The")
    assert not is_stop_word("kubernetes")


def test_english_conversational_filler_is_dropped_and_content_words_lowercased() -> None:
    query = "that thing we discussed about the API yesterday, please find it"
    assert extract_keywords(query) == ["discussed", "api"]


def test_english_technical_terms_survive() -> None:
    assert extract_keywords("what was the solution for the CFR bug") == ["solution", "cfr", "bug"]


def test_spanish_stop_words_are_dropped() -> None:
    query = "ayer hablamos sobre la estrategia de despliegue"
    assert extract_keywords(query) == ["hablamos", "estrategia", "despliegue"]


def test_portuguese_stop_words_are_dropped_and_accents_kept() -> None:
    query = "ontem falamos sobre a estratégia de implantação"
    assert extract_keywords(query) == ["falamos", "estratégia", "implantação"]


def test_arabic_stop_words_are_dropped() -> None:
    assert extract_keywords("بالأمس ناقشنا استراتيجية النشر") == ["ناقشنا", "استراتيجية", "النشر"]


def test_question_words_of_every_language_yield_nothing() -> None:
    query = "cómo cuando donde porquê quando onde كيف متى أين ماذا how where"
    assert extract_keywords(query) == []


def test_chinese_is_split_into_unigrams_then_bigrams_without_stop_words() -> None:
    assert extract_keywords("之前讨论的那个方案") == [
        "之",
        "讨",
        "论",
        "个",
        "方",
        "案",
        "前讨",
        "讨论",
        "论的",
        "的那",
        "个方",
        "方案",
    ]


def test_chinese_keeps_only_ideographs_of_a_mixed_segment() -> None:
    assert extract_keywords("方案v2") == ["方", "案", "方案"]


def test_trigram_keeps_a_chinese_block_whole() -> None:
    assert extract_keywords("之前讨论的那个方案", "trigram") == ["之前讨论的那个方案"]


def test_porter_splits_cjk_like_unicode61() -> None:
    assert extract_keywords("讨论方案", "porter") == extract_keywords("讨论方案")


def test_japanese_is_split_by_script_with_kanji_bigrams() -> None:
    assert extract_keywords("昨日話したデプロイ戦略") == ["昨日話", "日話", "デプロイ", "戦略"]


def test_japanese_keeps_ascii_terms_and_drops_single_hiragana() -> None:
    assert extract_keywords("昨日話したAPIのバグ") == ["昨日話", "日話", "api", "バグ"]


def test_trigram_keeps_kanji_runs_whole_and_drops_japanese_stop_words() -> None:
    assert extract_keywords("経済政策について") == ["経済政策", "経済", "済政", "政策"]
    assert extract_keywords("経済政策について", "trigram") == ["経済政策"]
    assert extract_keywords("これ それ そして どう", "trigram") == []


def test_korean_particles_are_stripped_into_extra_stems() -> None:
    assert extract_keywords("서버에서 발생한 에러를 확인") == [
        "서버에서",
        "서버",
        "발생한",
        "에러를",
        "에러",
        "확인",
    ]


def test_korean_strips_the_longest_particle() -> None:
    assert extract_keywords("기능으로 설명") == ["기능으로", "기능", "설명"]


def test_korean_one_syllable_stems_are_not_emitted() -> None:
    assert extract_keywords("논의") == ["논의"]


def test_korean_keeps_ascii_stems_of_mixed_words() -> None:
    assert extract_keywords("API를 배포했다") == ["api를", "api", "배포했다"]


def test_korean_stop_words_and_their_inflections_are_dropped() -> None:
    assert extract_keywords("나는 그리고 그래서 그녀는 우리는") == []
    assert extract_keywords("어제 논의한 배포 전략") == ["논의한", "배포", "전략"]


def test_short_ascii_words_numbers_and_lone_symbols_are_not_keywords() -> None:
    assert extract_keywords("go to db 2024 ١٢٣ ++ € v2 c++") == ["v2", "c++"]


def test_symbols_do_not_split_words_but_punctuation_does() -> None:
    assert extract_keywords("price$tag 5€ node.js/deno") == ["price$tag", "5€", "node", "deno"]


def test_keywords_are_de_duplicated_in_first_seen_order() -> None:
    assert extract_keywords("Test test testing TEST") == ["test", "testing"]


def test_a_blank_query_has_no_keywords() -> None:
    assert extract_keywords("") == []
    assert extract_keywords("  \t\n") == []


_WORDS = st.sampled_from(
    [
        *SPEC_STOP_WORD_EXAMPLES,
        "deploy",
        "API",
        "go",
        "2024",
        "++",
        "서버에서",
        "논의",
        "経済政策について",
        "昨日話したAPIのバグ",
        "讨论方案",
        "estratégia",
        "النشر",
        "!!",
        "a.b",
    ]
)
_QUERIES = st.one_of(st.text(), st.lists(_WORDS, max_size=12).map(" ".join))


def _is_invalid(token: str) -> bool:
    return (
        not token
        or (token.isascii() and token.isalpha() and len(token) < 3)
        or token.isdecimal()
        or all(unicodedata.category(char)[0] in "PS" for char in token)
    )


@given(_QUERIES, st.sampled_from(TOKENIZERS))
def test_keywords_are_never_stop_words_invalid_or_repeated(query: str, tokenizer: FtsTokenizer) -> None:
    keywords = extract_keywords(query, tokenizer)
    assert len(keywords) == len(set(keywords))
    for keyword in keywords:
        assert not is_stop_word(keyword)
        assert not _is_invalid(keyword)
