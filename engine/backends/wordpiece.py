"""BERT's WordPiece tokenizer, read from a Hugging Face ``tokenizer.json``, in plain Python.

The local embedding model (engine/backends/local_embeddings.py) ships its tokenizer as a
``tokenizer.json`` of the `tokenizers` library (a ``BertNormalizer``, the ``BertPreTokenizer``, a
``WordPiece`` model, ``[CLS] $A [SEP]``). That library would bring the Hugging Face hub client with
it (`huggingface-hub` and its own dependencies, some 11 MB, for a file psyq reads once), so this
module does the same steps itself, as the library's Rust source defines them
(tokenizers/src/normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece/mod.rs):

1. the special tokens (``[CLS]``, ``[MASK]`` …: the file's ``added_tokens``, matched as written,
   before anything else) are kept whole, the text between them is
2. normalised: NUL, U+FFFD and control characters (Unicode's C* categories but tab, newline and
   return) removed; white space (tab, newline, return and Unicode's White_Space) made a space;
   spaces put around CJK ideographs; accents stripped (NFD, then non-spacing marks dropped: the
   file's ``strip_accents: null`` follows ``lowercase``); lowercased character by character;
3. split into words on white space, with every punctuation character (ASCII punctuation, Unicode's
   P* categories) a word of its own;
4. each word cut into the longest pieces in the vocabulary from the left (``##`` before a piece
   that continues a word); a word with a part no piece fits, or of more than
   ``max_input_chars_per_word`` characters, is ``[UNK]``;
5. cut to ``max_length`` tokens with ``[CLS]`` and ``[SEP]`` around them.

tests/test_local_embeddings.py checks it token for token against the `tokenizers` library itself
(ids it gave for 148 texts, stored in tests/data/local_embeddings/).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

# Unicode's White_Space property (Rust's char::is_whitespace), as code points.
WHITE_SPACE = frozenset([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])
# The CJK ideograph blocks the BertNormalizer puts spaces around (tokenizers' bert.rs, as written there).
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _is_whitespace(c: str) -> bool:
    return ord(c) in WHITE_SPACE


def _is_cjk(c: str) -> bool:
    code = ord(c)
    return any(low <= code <= high for low, high in CJK)


def _is_punctuation(c: str) -> bool:
    return c in ASCII_PUNCTUATION or unicodedata.category(c).startswith("P")


def normalize(text: str) -> str:
    """Step 2 of the module docstring: BERT's cleaning, CJK spacing, accents and case.

    Example:
        >>> normalize("Café\\tnaïve\\x00 中文")
        'cafe naive  中  文 '
    """
    out = []
    for c in text:
        if c in "\x00\ufffd" or (c not in "\t\n\r" and unicodedata.category(c).startswith("C")):
            continue
        c = " " if _is_whitespace(c) else c
        out.append(f" {c} " if _is_cjk(c) else c)
    stripped = (c for c in unicodedata.normalize("NFD", "".join(out)) if unicodedata.category(c) != "Mn")
    return "".join(c.lower() for c in stripped)


def pre_tokenize(text: str) -> list[str]:
    """Step 3: words split on white space, each punctuation character a word of its own.

    Example:
        >>> pre_tokenize("it's  me, (really)!")
        ['it', "'", 's', 'me', ',', '(', 'really', ')', '!']
    """
    words: list[str] = []
    current = ""
    for c in text:
        if _is_whitespace(c) or _is_punctuation(c):
            if current:
                words.append(current)
            current = ""
            if not _is_whitespace(c):
                words.append(c)
        else:
            current += c
    if current:
        words.append(current)
    return words


@dataclass(frozen=True)
class WordPiece:
    """A BERT tokenizer: its vocabulary, special tokens and word-piece settings.

    Example:
        >>> vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##kind", "kind", "."])}
        >>> tok = WordPiece(vocab, specials=("[PAD]", "[UNK]", "[CLS]", "[SEP]"))
        >>> [tok.tokens[i] for i in tok.encode("Unkind.")]
        ['[CLS]', 'un', '##kind', '.', '[SEP]']
        >>> tok.encode("kinder")
        [2, 1, 3]
    """

    vocab: dict[str, int]
    specials: tuple[str, ...]            # matched in the raw text, kept whole
    unk: str = "[UNK]"
    cls: str = "[CLS]"
    sep: str = "[SEP]"
    prefix: str = "##"
    max_word_chars: int = 100

    @property
    def tokens(self) -> dict[int, str]:
        """The vocabulary by id."""
        return {i: t for t, i in self.vocab.items()}

    def word_ids(self, word: str) -> list[int]:
        """Step 4: one word's pieces, longest first from the left ([UNK] if a part fits none)."""
        if len(word) > self.max_word_chars:
            return [self.vocab[self.unk]]
        ids, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                return [self.vocab[self.unk]]
        return ids

    def encode(self, text: str, max_length: int = 512) -> list[int]:
        """The token ids of `text` (steps 1–5), at most `max_length` with [CLS] and [SEP]."""
        ids: list[int] = []
        pattern = "|".join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True))
        for k, part in enumerate(re.split(f"({pattern})", text) if pattern else [text]):
            if k % 2:                       # a special token, as written
                ids.append(self.vocab[part])
                continue
            for word in pre_tokenize(normalize(part)):
                ids.extend(self.word_ids(word))
        return [self.vocab[self.cls], *ids[:max_length - 2], self.vocab[self.sep]]


def load_wordpiece(path: Path) -> WordPiece:
    """The tokenizer of a ``tokenizer.json`` (a BertNormalizer, BertPreTokenizer and WordPiece
    model with a [CLS] $A [SEP] template: anything else is refused, as this module does no other).

    Example:
        >>> load_wordpiece(Path("tokenizer.json")).encode("I cry easily.")  # a model's file  # doctest: +SKIP
        [101, 1045, 5390, 4089, 1012, 102]
    """
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    model, normalizer = spec.get("model") or {}, spec.get("normalizer") or {}
    expected = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "lowercase": True}
    if (model.get("type") != "WordPiece" or (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
            or any(normalizer.get(k) != v for k, v in expected.items())
            or normalizer.get("strip_accents") not in (None, True)):
        raise ValueError(f"{path}: not a lowercasing BERT WordPiece tokenizer, the only kind psyq reads")
    single = [next(iter(step.values()))["id"] for step in spec["post_processor"]["single"]]
    if single != ["[CLS]", "A", "[SEP]"]:
        raise ValueError(f"{path}: its template is {single}, not [CLS] $A [SEP]")
    specials = tuple(t["content"] for t in spec.get("added_tokens", []) if t.get("special"))
    return WordPiece(vocab=model["vocab"], specials=specials, unk=model["unk_token"],
                     prefix=model["continuing_subword_prefix"], max_word_chars=model["max_input_chars_per_word"])
