"""Make instruments/lexicons/leas_psyq_lexicon.real_words.yaml: the real English words near a
word of the LEAS lexicon, which the scorer never reads as a misspelling of it
(engine/kinds/scene/leas_spelling.py).

Run by hand after the lexicon's words change (the suite needs only the file it writes):

    apt-get install wamerican wbritish          # SCOWL's American and British lists (2020.12.07)
    python tests/data/leas_real_words.py

A dictionary word is listed under a lexicon word when it is within the scorer's edit distance of
it (1, or 2 for lexicon words of 8 letters or more), is at least 4 letters long and is not itself
a one-word term of the lexicon. Words with capitals (names: "Kate" is near "hate") are listed in
lower case; possessives ("'s") are left out.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEXICON = ROOT / "instruments" / "lexicons" / "leas_psyq_lexicon.yaml"
OUT = LEXICON.with_name("leas_psyq_lexicon.real_words.yaml")
LISTS = [Path("/usr/share/dict/american-english"), Path("/usr/share/dict/british-english")]

HEADER = """\
# Real English words near a word of leas_psyq_lexicon: the LEAS scorer never reads one of these as a
# misspelling of the lexicon word it is listed under ("tried" is not "tired", "shared" is not
# "scared"; engine/kinds/scene/leas_spelling.py). Made by tests/data/leas_real_words.py: every word
# of SCOWL's American and British lists (Debian packages wamerican and wbritish, 2020.12.07) of 4
# letters or more within the scorer's edit distance of a one-word lexicon term (1, or 2 for words
# of 8 letters or more) that is not itself a term; names in lower case.
#
# SCOWL (Spell Checker Oriented Word Lists), Copyright 2000-2011 by Kevin Atkinson, as well as any
# of the copyrights mentioned in its README. "Permission to use, copy, modify, distribute and sell
# these word lists, the associated scripts, the output created from the scripts, and its
# documentation for any purpose is hereby granted without fee, provided that the above copyright
# notice appears in all copies and that both that copyright notice and this permission notice
# appear in supporting documentation. Kevin Atkinson makes no representations about the
# suitability of this array for any purpose. It is provided "as is" without express or implied
# warranty." (The full notice: /usr/share/doc/wamerican/copyright.)
psyq: real_words/1
source: "SCOWL 2020.12.07 (Debian wamerican, wbritish), words within the LEAS scorer's edit distance"
"""


def lexicon_words() -> list[str]:
    """The lexicon's one-word terms the speller corrects to (its real_words line left out)."""
    from psyq.engine.kinds.scene.leas import load_lexicon

    text = re.sub(r"(?m)^real_words:.*$", "", LEXICON.read_text())
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "lexicon.yaml"
        copy.write_text(text)
        lexicon = load_lexicon(copy)
    singles = {t.words[0] for terms in lexicon.terms.values() for t in terms if len(t.words) == 1}
    return sorted(w for w in singles if w not in lexicon.cognitive and w not in lexicon.negators)


def main() -> int:
    from psyq.engine.kinds.scene.leas_spelling import MIN_LENGTH, allowed_distance, deletions, edit_distance

    targets = [w for w in lexicon_words() if len(w) >= MIN_LENGTH and w.isalpha()]
    index: dict[str, list[str]] = {}
    for word in targets:
        for variant in deletions(word, allowed_distance(word)):
            index.setdefault(variant, []).append(word)
    dictionary = sorted({w.strip().lower() for path in LISTS for w in path.read_text(encoding="utf-8").split()
                         if w.strip().isalpha() and w.strip().isascii() and len(w.strip()) >= MIN_LENGTH})
    singles = set(lexicon_words())
    near: dict[str, set[str]] = {}
    for real in dictionary:
        if real in singles:
            continue
        for variant in deletions(real, 2):
            for word in index.get(variant, ()):
                if edit_distance(real, word) <= allowed_distance(word):
                    near.setdefault(word, set()).add(real)
    lines = [HEADER, "near:"]
    for word in sorted(near):
        lines.append(f"  {word}: [{', '.join(sorted(near[word]))}]")
    lines.append("also: {}")
    lines.append(f"made_for: [{', '.join(targets)}]")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{sum(map(len, near.values()))} real words near {len(near)} of {len(targets)} lexicon words -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
