"""A BERT encoder's forward pass in numpy, then mean pooling and L2 normalisation: a sentence
embedding as sentence-transformers computes it for a ``BertModel`` with a mean ``Pooling`` and a
``Normalize`` module (all-MiniLM-L6-v2's modules.json).

The steps (Devlin et al. 2019; Hugging Face transformers' ``modeling_bert.py``, whose weight names
the safetensors file uses; sentence-transformers' ``Pooling`` and ``Normalize``):

1. each token's word embedding + its position's + token type 0's, then layer norm;
2. per layer: self-attention (queries, keys, values per head; scores q·k/√d, padding masked out,
   softmax), its output projected, added to the input and layer-normed; a feed-forward block
   (dense, exact GELU x·Φ(x), dense), added and layer-normed;
3. the last layer's token vectors averaged over the real tokens (the attention mask), and the mean
   divided by its Euclidean length.

Float32 throughout, as the weights are. Padding never changes a text's vector (its keys are
masked, it is left out of the mean), so texts may be batched in any grouping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BertConfig:
    """The few numbers of a BERT ``config.json`` the forward pass needs."""

    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    layer_norm_eps: float

    @classmethod
    def from_json(cls, config: dict) -> "BertConfig":
        """Read from a ``config.json`` (anything but a plain absolute-position BERT with exact GELU is refused).

        Example:
            >>> BertConfig.from_json({"model_type": "bert", "hidden_act": "gelu", "hidden_size": 8,
            ...     "num_attention_heads": 2, "num_hidden_layers": 1, "layer_norm_eps": 1e-12}).num_hidden_layers
            1
        """
        if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
                or config.get("position_embedding_type", "absolute") != "absolute"):
            raise ValueError("not a BERT model with absolute positions and exact GELU, the only kind psyq computes")
        return cls(int(config["hidden_size"]), int(config["num_attention_heads"]), int(config["num_hidden_layers"]),
                   float(config["layer_norm_eps"]))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """(x − mean) / √(variance + eps) over the last axis, scaled and shifted (the biased variance, as torch).

    Example:
        >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2), 0.0).tolist()
        [[-1.0, 1.0]]
    """
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)) (BERT's ``"gelu"``, not the tanh approximation).

    Example:
        >>> [round(float(v), 6) for v in gelu(np.array([-1.0, 0.0, 1.0]))]
        [-0.158655, 0.0, 0.841345]
    """
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def softmax(x: np.ndarray) -> np.ndarray:
    """The softmax over the last axis (the maximum subtracted first, so nothing overflows).

    Example:
        >>> softmax(np.array([0.0, np.log(3.0)])).round(6).tolist()
        [0.25, 0.75]
    """
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class BertEncoder:
    """The encoder of `weights` (Hugging Face ``BertModel`` names: ``embeddings.*``,
    ``encoder.layer.N.*``) under `config`, giving sentence embeddings.

    Example (a random one-layer model: a text's vector has length 1 whatever is padded beside it):
        >>> rng = np.random.default_rng(0)
        >>> config = BertConfig(hidden_size=8, num_attention_heads=2, num_hidden_layers=1, layer_norm_eps=1e-12)
        >>> encoder = BertEncoder(random_weights(config, vocab=20, rng=rng), config)
        >>> alone = encoder.embed([[1, 5, 2]])
        >>> beside = encoder.embed([[1, 5, 2], [1, 7, 7, 7, 2]])
        >>> bool(np.allclose(alone[0], beside[0], atol=1e-6)), round(float(np.linalg.norm(alone[0])), 6)
        (True, 1.0)
    """

    def __init__(self, weights: dict[str, np.ndarray], config: BertConfig):
        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.config = config
        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = []
        for n in range(config.num_hidden_layers):
            p = f"encoder.layer.{n}."
            # dense layers are stored (out, in), as torch's Linear: transposed once here for x @ W
            self.layers.append({name: (get(p + f"{path}.weight").T.copy(), get(p + f"{path}.bias"))
                                for name, path in (("query", "attention.self.query"), ("key", "attention.self.key"),
                                                   ("value", "attention.self.value"),
                                                   ("attention_out", "attention.output.dense"),
                                                   ("intermediate", "intermediate.dense"), ("out", "output.dense"))}
                               | {"attention_norm": (get(p + "attention.output.LayerNorm.weight"),
                                                     get(p + "attention.output.LayerNorm.bias")),
                                  "out_norm": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias"))})

    @property
    def max_positions(self) -> int:
        """How many tokens a text may have (the position embeddings there are)."""
        return self.position.shape[0]

    def embed(self, token_ids: list[list[int]]) -> np.ndarray:
        """The unit-length sentence embedding of each token sequence (with its [CLS] and [SEP]), as
        rows of a float32 array; the sequences are padded to the longest and masked (the class's
        example shows it)."""
        longest = max(len(ids) for ids in token_ids)
        if longest > self.max_positions:
            raise ValueError(f"a text of {longest} tokens; the model reads {self.max_positions} at most")
        ids = np.zeros((len(token_ids), longest), dtype=np.int64)
        mask = np.zeros((len(token_ids), longest), dtype=np.float32)
        for row, sequence in enumerate(token_ids):
            ids[row, :len(sequence)] = sequence
            mask[row, :len(sequence)] = 1.0
        x = self.word[ids] + self.position[:longest] + self.token_type[0]
        x = layer_norm(x, *self.norm, self.config.layer_norm_eps)
        # padding's keys get the least float32 added to their scores: a softmax weight of exactly 0
        masked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, masked, layer)
        summed = (x * mask[:, :, None]).sum(axis=1)
        mean = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)

    def _layer(self, x: np.ndarray, masked: np.ndarray, layer: dict) -> np.ndarray:
        """One transformer layer: self-attention, add and norm; feed-forward, add and norm."""
        batch, length, hidden = x.shape
        heads = self.config.num_attention_heads
        size = hidden // heads

        def dense(v: np.ndarray, name: str) -> np.ndarray:
            weight, bias = layer[name]
            return v @ weight + bias

        def split(v: np.ndarray) -> np.ndarray:          # (batch, length, hidden) -> (batch, heads, length, size)
            return v.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(x, name)) for name in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(size)) + masked
        context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        eps = self.config.layer_norm_eps
        x = layer_norm(dense(context, "attention_out") + x, *layer["attention_norm"], eps)
        return layer_norm(dense(gelu(dense(x, "intermediate")), "out") + x, *layer["out_norm"], eps)


def random_weights(config: BertConfig, vocab: int, rng: np.random.Generator, positions: int = 16) -> dict:
    """Weights of the right names and shapes, drawn at random (for examples and tests of the
    arithmetic; they embed nothing meaningful).

    Example:
        >>> config = BertConfig(hidden_size=4, num_attention_heads=2, num_hidden_layers=1, layer_norm_eps=1e-12)
        >>> random_weights(config, vocab=10, rng=np.random.default_rng(1))["embeddings.word_embeddings.weight"].shape
        (10, 4)
    """
    h, inner = config.hidden_size, 4 * config.hidden_size
    shapes = {"embeddings.word_embeddings.weight": (vocab, h), "embeddings.position_embeddings.weight": (positions, h),
              "embeddings.token_type_embeddings.weight": (2, h), "embeddings.LayerNorm.weight": (h,),
              "embeddings.LayerNorm.bias": (h,)}
    for n in range(config.num_hidden_layers):
        p = f"encoder.layer.{n}."
        for path, (out, into) in {"attention.self.query": (h, h), "attention.self.key": (h, h),
                                  "attention.self.value": (h, h), "attention.output.dense": (h, h),
                                  "intermediate.dense": (inner, h), "output.dense": (h, inner)}.items():
            shapes[p + path + ".weight"], shapes[p + path + ".bias"] = (out, into), (out,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + norm + ".weight"], shapes[p + norm + ".bias"] = (h,), (h,)
    return {name: (1.0 + 0.1 * rng.standard_normal(shape) if name.endswith("LayerNorm.weight")
                   else 0.5 * rng.standard_normal(shape)).astype(np.float32) for name, shape in shapes.items()}
