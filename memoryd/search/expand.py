"""Query expansion for the keyword leg (spec §3.16) and the FTS5 query strings built from it.

Conversational queries ("that thing we discussed yesterday", "之前讨论的那个方案") make poor FTS
queries: every word must match under AND. When the strict query finds nothing, the keyword leg
retries with the content words this module extracts, in seven languages, with CJK split into
n-grams because unicode61 sees a run of ideographs as one token.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Literal

FtsTokenizer = Literal["unicode61", "trigram", "porter"]

# Python's \w on str patterns is exactly [\p{L}\p{N}_] (checked code point by code point in the tests).
_WORD_RE = re.compile(r"\w+")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")
_IDEOGRAPH_RE = re.compile(r"[\u4e00-\u9fff]")
_HANGUL_RE = re.compile(r"[\uac00-\ud7af\u3131-\u3163]")
_HANGUL_SYLLABLE_RE = re.compile(r"[\uac00-\ud7af]")
_ASCII_WORD_RE = re.compile(r"[a-z0-9_]+", re.IGNORECASE)
_ASCII_LETTERS_RE = re.compile(r"[a-zA-Z]+")
# Japanese mixes scripts without spaces: ASCII words, katakana runs, kanji runs, hiragana runs of 2+.
_JAPANESE_PART_RE = re.compile(r"[a-z0-9_]+|[\u30a0-\u30ffー]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}")
_KANJI_RUN_RE = re.compile(r"[\u4e00-\u9fff]+")


def _word_set(words: str) -> frozenset[str]:
    """A word list written as whitespace-separated text (hundreds of words read better that way)."""
    return frozenset(words.split())


_STOP_WORDS_EN = _word_set(
    """
    a an the this that these those such
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom whose when where why how whatever whenever wherever
    is am are was were be been being have has had having do does did doing done
    will would shall should can could may might must ought
    isn aren wasn weren hasn haven hadn don doesn didn won wouldn shouldn couldn cannot
    in on at to for of with by from about into onto through during before after above below
    between among under over up down out off upon within without across along around behind
    beyond near toward towards against via per
    and or but nor so yet if then else than because as while until unless although though whether
    also too very just only really quite rather almost even
    some any all each every both either neither few more most other another own same
    no not there here again once ever never always often sometimes already still
    yesterday today tomorrow earlier later recently ago now soon lately
    thing things stuff something anything everything nothing someone anyone everyone
    please help find show get tell give let
    """
)

_STOP_WORDS_ES = _word_set(
    """
    el la lo los las un una unos unas
    este esta esto estos estas ese esa eso esos esas aquel aquella aquello aquellos aquellas
    yo me mi mis mío mía míos mías tú tu tus te ti él ella ello ellos ellas
    nosotros nosotras nos nuestro nuestra nuestros nuestras vosotros vosotras os vuestro vuestra
    usted ustedes le les se su sus suyo suya suyos suyas
    de del a al en con por para sobre entre hacia hasta desde sin contra según durante mediante
    tras ante bajo
    y e o u ni pero sino si porque pues aunque mientras como
    que qué quien quién quienes quiénes cual cuál cuales cuáles cuando cuándo donde dónde adonde
    adónde cómo cuanto cuánto cuanta cuánta cuantos cuántos porqué
    es soy eres somos sois fue fueron fui ser estar está están estaba estaban estoy estamos
    haber hay ha han he hemos había habían tener tiene tienen tengo tenía hacer hace hizo hecho
    puede pueden poder
    ayer hoy mañana antes después despues ahora luego recientemente ya aún todavía siempre nunca
    también tampoco muy más menos mucho mucha muchos muchas poco poca algo nada toda todos todas
    otro otra otros otras mismo misma cosa cosas
    favor ayuda ayúdame buscar busca encuentra muéstrame
    """
)

_STOP_WORDS_PT = _word_set(
    """
    o a os as um uma uns umas
    este esta isto estes estas esse essa isso esses essas aquele aquela aquilo aqueles aquelas
    eu me mim meu minha meus minhas tu te ti teu tua teus tuas você vocês ele ela eles elas
    nos nós nosso nossa nossos nossas lhe lhes se seu sua seus suas
    de do da dos das em no na nas num numa com por pelo pela pelos pelas para pra sobre entre
    até desde sem contra durante após ao aos à às
    e ou nem mas porém porque pois como
    que quê quem qual quais quando onde aonde porquê quanto quanta quantos quantas
    é são sou somos foi foram fui ser estar está estão estava estavam estou estamos
    ter tem têm tinha tenho fazer faz fez feito há haver pode podem poder
    ontem hoje amanhã antes depois agora recentemente já ainda sempre nunca também
    muito muita muitos muitas mais menos pouco pouca algo nada tudo toda todos todas
    outro outra outros outras mesmo mesma coisa coisas
    favor ajuda ajude procurar encontre mostre
    """
)

_STOP_WORDS_AR = _word_set(
    """
    ال و أو او لكن ثم بل أن إن ان
    أنا انا نحن أنت انت أنتم هو هي هم هن
    هذا هذه ذلك تلك هؤلاء هنا هناك الذي التي الذين
    من إلى الى في على عن مع بين ل ب ك لي لك له لها لنا لهم عند حول خلال حتى منذ
    كان كانت كانوا يكون تكون صار أصبح يمكن ممكن قد لقد لم لن لا
    كل بعض غير أيضا جدا فقط شيء أشياء
    بالأمس أمس امس اليوم غدا الآن الان قبل بعد مؤخرا عندما إذا اذا
    لماذا كيف ماذا ما متى أين اين هل كم أي
    فضلا ساعد ساعدني
    """
)

_STOP_WORDS_ZH = _word_set(
    """
    我 我们 你 你们 您 他 她 它 他们 她们 它们 这 那 这个 那个 这些 那些 这里 那里
    的 了 着 过 得 地 吗 呢 吧 啊 呀 嘛 啦 哦
    是 有 在 被 把 给 让 用 到 去 来 做 说 看 找 想 要 能 会 可以
    和 与 或 或者 但 但是 因为 所以 如果 虽然 而 也 都 就 还 又 再 才 只 关于
    之前 以前 之后 以后 刚才 现在 昨天 今天 明天 最近
    东西 事情 事 什么 哪个 哪些 哪里 怎么 怎样 为什么 多少 一个 一下
    请 帮 帮忙 告诉
    """
)

_STOP_WORDS_KO = _word_set(
    """
    은 는 이 가 을 를 의 에 에서 로 으로 와 과 도 만 까지 부터 한테 에게 께 처럼 같이 보다 마다
    밖에 대로
    나 나는 내가 나를 내 너 너는 네가 우리 우리는 저 저는 제가 저희 그 그녀 그들
    이것 저것 그것 이거 그거 저거 여기 저기 거기
    있다 없다 하다 되다 이다 아니다 주다 오다 가다
    것 거 등 수 때 곳 중 분
    잘 더 또 매우 정말 아주 많이 너무 좀 다시
    그리고 하지만 그래서 그런데 그러나 또는 그러면
    왜 어떻게 뭐 무엇 언제 어디 누구 어떤 무슨
    어제 오늘 내일 최근 지금 아까 나중 전에
    제발 부탁
    """
)

_STOP_WORDS_JA = _word_set(
    """
    これ それ あれ どれ この その あの どの ここ そこ あそこ どこ
    する した して します しました です でした ます ました いる ある なる できる
    の こと もの ため など そして しかし また でも から まで より だけ について ください
    なぜ どう どうして 何 なに いつ 誰 だれ
    昨日 今日 明日 最近 今 さっき 前 後
    """
)

_STOP_WORDS = (
    _STOP_WORDS_EN | _STOP_WORDS_ES | _STOP_WORDS_PT | _STOP_WORDS_AR | _STOP_WORDS_ZH | _STOP_WORDS_KO | _STOP_WORDS_JA
)

# Longest first, so "으로" is stripped before "로" would leave "기능으".
_KO_PARTICLES = "에서 으로 에게 한테 처럼 같이 보다 까지 부터 마다 밖에 대로 은 는 이 가 을 를 의 에 로 와 과 도 만"
_KO_TRAILING_PARTICLES = tuple(sorted(_word_set(_KO_PARTICLES), key=lambda particle: (-len(particle), particle)))


def query_tokens(text: str) -> list[str]:
    """Every run of Unicode letters, digits and underscores, in order (OpenClaw's `[\\p{L}\\p{N}_]+`)."""
    return _WORD_RE.findall(text)


def build_fts_query(raw: str) -> str | None:
    """The strict FTS5 query: every token quoted and required (AND); None when there is no token."""
    return _join_quoted(query_tokens(raw), " AND ")


def build_fts_or_query(keywords: Sequence[str]) -> str | None:
    """The relaxed FTS5 query: any of the extracted keywords (OR); None when there is none."""
    return _join_quoted(keywords, " OR ")


def is_stop_word(word: str) -> bool:
    """Whether the word is a function word in any of the seven languages (EN ES PT AR ZH KO JA)."""
    return word.lower() in _STOP_WORDS


def extract_keywords(query: str, tokenizer: FtsTokenizer = "unicode61") -> list[str]:
    """Content words of a conversational query, lowercased, de-duplicated, in first-seen order.

    With the trigram tokenizer CJK runs stay whole, because FTS5 trigram cannot match terms
    shorter than three characters.
    """
    keywords: list[str] = []
    seen: set[str] = set()
    for token in _candidate_tokens(query, whole_cjk_runs=tokenizer == "trigram"):
        if token in seen or token in _STOP_WORDS or not _is_valid_keyword(token):
            continue
        seen.add(token)
        keywords.append(token)
    return keywords


def _join_quoted(terms: Sequence[str], operator: str) -> str | None:
    quoted = [f'"{cleaned}"' for term in terms if (cleaned := term.replace('"', "").strip())]
    return operator.join(quoted) if quoted else None


def _candidate_tokens(query: str, *, whole_cjk_runs: bool) -> Iterator[str]:
    for segment in _segments(query.strip().lower()):
        if _KANA_RE.search(segment):
            yield from _japanese_tokens(segment, whole_cjk_runs=whole_cjk_runs)
        elif _IDEOGRAPH_RE.search(segment):
            yield from _chinese_tokens(segment, whole_cjk_runs=whole_cjk_runs)
        elif _HANGUL_RE.search(segment):
            yield from _korean_tokens(segment)
        else:
            yield segment


def _segments(text: str) -> Iterator[str]:
    """Split on runs of whitespace or Unicode punctuation (P*); symbols (S*) stay inside words."""
    start = 0
    for index, char in enumerate(text):
        if _is_separator(char):
            if index > start:
                yield text[start:index]
            start = index + 1
    if start < len(text):
        yield text[start:]


def _is_separator(char: str) -> bool:
    # U+FEFF counts as whitespace in JavaScript's \s, which the spec's split uses.
    return char.isspace() or char == "\ufeff" or unicodedata.category(char).startswith("P")


def _japanese_tokens(segment: str, *, whole_cjk_runs: bool) -> Iterator[str]:
    for part in _JAPANESE_PART_RE.findall(segment):
        yield part
        if not whole_cjk_runs and _KANJI_RUN_RE.fullmatch(part):
            yield from _bigrams(part)


def _chinese_tokens(segment: str, *, whole_cjk_runs: bool) -> Iterator[str]:
    ideographs = "".join(_IDEOGRAPH_RE.findall(segment))
    if whole_cjk_runs:
        yield ideographs
        return
    yield from ideographs
    yield from _bigrams(ideographs)


def _bigrams(run: str) -> Iterator[str]:
    for index in range(len(run) - 1):
        yield run[index : index + 2]


def _korean_tokens(word: str) -> Iterator[str]:
    stem = _strip_korean_particle(word)
    if word not in _STOP_WORDS_KO and (stem is None or stem not in _STOP_WORDS_KO):
        yield word
    if stem is not None and stem not in _STOP_WORDS_KO and _is_useful_korean_stem(stem):
        yield stem


def _strip_korean_particle(word: str) -> str | None:
    for particle in _KO_TRAILING_PARTICLES:
        if len(word) > len(particle) and word.endswith(particle):
            return word[: -len(particle)]
    return None


def _is_useful_korean_stem(stem: str) -> bool:
    # One-syllable stems are mostly noise ("논의" would give "논"); ASCII stems ("API를") are kept.
    if _HANGUL_SYLLABLE_RE.search(stem):
        return len(stem) >= 2
    return _ASCII_WORD_RE.fullmatch(stem) is not None


def _is_valid_keyword(token: str) -> bool:
    if not token:
        return False
    if _ASCII_LETTERS_RE.fullmatch(token) and len(token) < 3:
        return False
    if token.isdecimal():
        return False
    return not all(unicodedata.category(char)[0] in "PS" for char in token)
