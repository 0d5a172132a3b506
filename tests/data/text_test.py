"""Tiny Shakespeare: real corpus, speech parser, character vocabularies."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import text
from tests.data.conftest import require


@pytest.fixture(scope="module")
def corpus():
    require("shakespeare/input.txt")
    return text.load_tiny_shakespeare()


def test_real_corpus_counts(corpus):
    assert len(corpus) == 1115394
    assert len(set(corpus)) == 65
    vocab = text.CharVocab.from_text(corpus)
    assert vocab.size == 65
    ids = vocab.encode(corpus)
    assert ids.dtype == np.int32 and ids.shape == (1115394,)
    assert vocab.decode(ids) == corpus


def test_real_speeches_account_for_every_line(corpus):
    speeches = text.parse_speeches(corpus, keep_empty=True)
    lines = corpus.split("\n")
    blank = sum(1 for line in lines if not line.strip())
    spoken = sum(len(s.split("\n")) for _, s in speeches if s)
    # Every non-blank line is either a role line or a line of a speech.
    assert len(speeches) + spoken + blank == len(lines)
    assert speeches[0] == ("First Citizen", "Before we proceed any further, hear me speak.")
    nonempty = text.parse_speeches(corpus)
    assert len(nonempty) == sum(1 for _, s in speeches if s) < len(speeches)
    roles = text.speeches_by_role(nonempty)
    assert {"ROMEO", "JULIET", "First Citizen", "KING RICHARD III"} <= set(roles)
    assert all(":" not in r and r == r.strip() for r in roles)


def test_parser_rules():
    play = ("preamble without speaker\n\nFIRST CITIZEN:\nSpeak, speak.\nThus it is:\n\n\n"
            "ROMEO:\n\nJULIET:\nAy me!\n\nnot a role line\nstill Juliet\n")
    assert text.parse_speeches(play) == [
        ("FIRST CITIZEN", "Speak, speak.\nThus it is:"),  # a ':' mid-speech is not a role
        ("JULIET", "Ay me!\nnot a role line\nstill Juliet"),
    ]
    assert ("ROMEO", "") in text.parse_speeches(play, keep_empty=True)


def test_vocab_unknown_and_leaf():
    vocab = text.CharVocab("ab")
    with pytest.raises(validate.JaxflValueError, match="not in the vocabulary"):
        vocab.encode("abc")
    assert text.CharVocab("ab", unknown=0).encode("abc").tolist() == [0, 1, 0]
    leaf = text.CharVocab.leaf()
    assert leaf.size == 80 and leaf.encode("\n").tolist() == [0]
    assert leaf.decode(leaf.encode("Hello, World")) == "Hello, World"
    assert leaf.encode("$").tolist() == [leaf.chars.index(" ")]
    with pytest.raises(validate.JaxflValueError):
        text.CharVocab("aa")
    with pytest.raises(validate.JaxflValueError):
        vocab.decode([2])
    assert text.CharVocab("é✓x").decode(text.CharVocab("é✓x").encode("x✓é")) == "x✓é"


def test_next_char_examples():
    ids = np.arange(10)
    x, y = text.next_char_examples(ids, seq_len=4, stride=2)
    assert x.tolist() == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]]
    assert y.tolist() == [4, 6, 8]
    x, y = text.next_char_examples(ids, seq_len=9)
    assert x.tolist() == [list(range(9))] and y.tolist() == [9]
    assert text.next_char_examples(ids, seq_len=10)[0].shape == (0, 10)
    with pytest.raises(validate.JaxflValueError):
        text.next_char_examples(ids, seq_len=0)
