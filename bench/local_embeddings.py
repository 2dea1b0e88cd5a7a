"""Speed of psyq's local embedding model (issue 54: `answer: ssr` with `embeddings: {kind: local}`):
texts a second on this machine, computed as the run's phase computes them.

The texts are what an ssr run embeds: the shipped anchor statements (short) and free-text answers
of one to three sentences, made here by joining anchor statements and item texts of the shipped
instruments at random (seeded), ``--answers`` of them (default 600). Each repetition embeds all of
them through ``SentenceEmbedder.embed`` in batches of 64 (the default ``batch_size``), the model
loaded once before (loading and the once-only fetch are timed apart). CPU time is reported beside
wall time, and the load average, since the machine may be shared: with one BLAS thread (as psyq
computes) texts per CPU second is the rate on one idle core.

Prints the figures and writes bench/results/local_embeddings.json.

    python bench/local_embeddings.py [--answers 600] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import yaml

from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE, EMBEDDING_DEFAULT
from psyq.engine.backends.local_embeddings import SentenceEmbedder
from psyq.engine.backends.local_models import ensure_embedding_model

ROOT = Path(__file__).resolve().parents[1]


def texts(answers: int, seed: int = 54) -> tuple[list[str], list[str]]:
    """The anchor statements, and `answers` made-up free-text answers of one to three sentences."""
    statements = [t for f in sorted((ROOT / "instruments" / "anchors").glob("*.yaml"))
                  for s in yaml.safe_load(f.read_text())["sets"] for t in s["statements"].values()]
    items = [i["text"] for f in sorted((ROOT / "instruments").glob("*.yaml"))
             for i in yaml.safe_load(f.read_text()).get("items", []) if isinstance(i.get("text"), str)]
    rng = random.Random(seed)
    made = [" ".join(rng.sample(statements + items, rng.randint(1, 3))) for _ in range(answers)]
    return statements, made


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=600)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    entry = EMBEDDING_CATALOGUE[EMBEDDING_DEFAULT]
    started = time.perf_counter()
    folder = ensure_embedding_model(entry, print)
    checked = time.perf_counter() - started
    started = time.perf_counter()
    model = SentenceEmbedder.load(folder)
    loaded = time.perf_counter() - started
    statements, answers = texts(args.answers)
    batch = statements + answers
    tokens = [len(model.tokenizer.encode(t, model.max_tokens)) for t in batch]
    model.embed(batch[:64])   # warm: pages of the weights read, BLAS threads up
    walls, cpus = [], []
    for _ in range(args.reps):
        wall0, cpu0 = time.perf_counter(), cpu()
        for start in range(0, len(batch), 64):
            model.embed(batch[start:start + 64])
        walls.append(time.perf_counter() - wall0)
        cpus.append(cpu() - cpu0)
    wall = statistics.median(walls)
    result = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        "numpy": np.__version__, "load_average_1_5_15": os.getloadavg(),
        "model": entry.name, "texts": len(batch), "anchor_statements": len(statements), "answers": len(answers),
        "tokens_mean": statistics.mean(tokens), "tokens_max": max(tokens),
        "cache_check_s": round(checked, 3), "load_s": round(loaded, 3),
        "wall_s": [round(w, 3) for w in walls], "cpu_s": [round(c, 3) for c in cpus],
        "texts_per_s": round(len(batch) / wall, 1), "tokens_per_s": round(sum(tokens) / wall),
        "texts_per_cpu_s": round(len(batch) / statistics.median(cpus), 1),
    }
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "local_embeddings.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
