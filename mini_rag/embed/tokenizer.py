"""BERT's WordPiece tokenizer (uncased), in the standard library alone.

Two steps, as BERT's reference ``tokenization.py`` (and Hugging Face's ``BertTokenizer``,
whose fast twin ``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece`` gives the same
ids on ordinary text):

1. *Basic tokenization*: drop NUL, U+FFFD and control characters (Unicode category C*,
   except tab, newline and carriage return, which are white space); put spaces around
   every CJK ideograph (so each is a word); lower-case; strip accents (NFD, then drop
   combining marks, category Mn); split on white space (space, tab, newline, CR,
   category Zs) and make every punctuation character its own word (ASCII 33-47, 58-64,
   91-96, 123-126, and every Unicode category P*).
2. *WordPiece*: each word is cut greedily into the longest vocabulary pieces from the
   left, later pieces prefixed with ``##``; a word with no such cut, or longer than
   ``max_chars_per_word`` (100) characters, becomes ``[UNK]``.

``encode`` adds ``[CLS]`` ... ``[SEP]`` and truncates the pieces to ``max_length - 2``.

>>> t = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "cafe", "!"])
>>> t.tokenize("Unaffable café!")
['un', '##aff', '##able', 'cafe', '!']
>>> t.encode("Unaffable café!", max_length=4)
[2, 4, 5, 3]
"""
from __future__ import annotations

import unicodedata
from typing import Dict, List, Sequence

from ..errors import MiniRagError

UNK, CLS, SEP, PAD = "[UNK]", "[CLS]", "[SEP]", "[PAD]"
MAX_CHARS_PER_WORD = 100


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    """CJK Unified Ideographs blocks (BERT's definition: not Hangul, Hiragana or Katakana)."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text: str, lowercase: bool = True) -> List[str]:
    """Step 1 of the module docstring: the words of ``text``.

    >>> basic_tokenize("Héllo, 世界! don't")
    ['hello', ',', '世', '界', '!', 'don', "'", 't']
    """
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            cleaned.append(" ")
        elif _is_cjk(cp):
            cleaned.append(" " + ch + " ")
        else:
            cleaned.append(ch)
    words: List[str] = []
    for word in "".join(cleaned).split():
        if lowercase:
            word = word.lower()
            word = "".join(c for c in unicodedata.normalize("NFD", word)
                           if unicodedata.category(c) != "Mn")
        start = 0
        for i, ch in enumerate(word):
            if _is_punctuation(ch):
                if i > start:
                    words.append(word[start:i])
                words.append(ch)
                start = i + 1
        if start < len(word):
            words.append(word[start:])
    return words


class WordPiece:
    """A WordPiece tokenizer over a vocabulary (a list of pieces; a piece's id is its index)."""

    def __init__(self, vocab: Sequence[str], lowercase: bool = True,
                 max_chars_per_word: int = MAX_CHARS_PER_WORD) -> None:
        self.vocab: Dict[str, int] = {}
        for i, piece in enumerate(vocab):
            self.vocab.setdefault(piece, i)
        for special in (UNK, CLS, SEP, PAD):
            if special not in self.vocab:
                raise MiniRagError("vocabulary has no %s token" % special)
        self.lowercase = lowercase
        self.max_chars_per_word = max_chars_per_word
        self.unk_id = self.vocab[UNK]
        self.cls_id = self.vocab[CLS]
        self.sep_id = self.vocab[SEP]
        self.pad_id = self.vocab[PAD]
        self._cache: Dict[str, List[str]] = {}

    @classmethod
    def from_text(cls, text: str, origin: str = "vocab.txt") -> "WordPiece":
        """A tokenizer from the lines of a BERT ``vocab.txt`` (one piece a line)."""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise MiniRagError("%s: empty vocabulary" % origin)
        return cls([line.rstrip("\r") for line in lines])

    def word_pieces(self, word: str) -> List[str]:
        """Step 2 of the module docstring for one word."""
        got = self._cache.get(word)
        if got is not None:
            return got
        if len(word) > self.max_chars_per_word:
            out = [UNK]
        else:
            out = []
            start, n = 0, len(word)
            while start < n:
                end = n
                piece = None
                while start < end:
                    sub = word[start:end] if start == 0 else "##" + word[start:end]
                    if sub in self.vocab:
                        piece = sub
                        break
                    end -= 1
                if piece is None:
                    out = [UNK]
                    break
                out.append(piece)
                start = end
        if len(self._cache) < 200000:
            self._cache[word] = out
        return out

    def tokenize(self, text: str) -> List[str]:
        """The word pieces of ``text`` (no special tokens)."""
        out: List[str] = []
        for word in basic_tokenize(text, self.lowercase):
            out.extend(self.word_pieces(word))
        return out

    def encode(self, text: str, max_length: int = 256) -> List[int]:
        """``[CLS] pieces [SEP]`` as ids, the pieces cut to ``max_length - 2``."""
        if max_length < 2:
            raise MiniRagError("max_seq_length must be >= 2, got %d" % max_length)
        ids = [self.vocab[p] for p in self.tokenize(text)[:max_length - 2]]
        return [self.cls_id] + ids + [self.sep_id]


__all__ = ["WordPiece", "basic_tokenize", "UNK", "CLS", "SEP", "PAD"]
