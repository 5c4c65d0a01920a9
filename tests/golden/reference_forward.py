"""Plain numpy reference implementation of the Llama forward pass.

Besides ``llama`` it runs the family members the engine runs with the same
forward: ``mistral`` (identical to llama), ``qwen2`` (q/k/v biases, NEOX
RoPE) and ``qwen3`` (per-head RMS norm of q and k before RoPE, NEOX RoPE);
see "Family members" below.

This is the "float reference" that the engine's golden tests are built
against.  It reads the very same GGUF file as the engine, dequantizes every
tensor to float with ``gguf.quants.dequantize`` and then runs the textbook
Llama computation in float32 (default) or float64 numpy arithmetic:

    x = token_embd[tokens]
    for each block:
        h  = rms_norm(x) * attn_norm
        q, k, v = h @ Wq^T, h @ Wk^T, h @ Wv^T
        q, k = rope(q), rope(k)            # llama.cpp "normal" rope
        a  = softmax(q k^T / sqrt(head_dim) + causal_mask) v   (GQA)
        x += a @ Wo^T
        h  = rms_norm(x) * ffn_norm
        x += (silu(h @ Wgate^T) * (h @ Wup^T)) @ Wdown^T
    logits = (rms_norm(x) * output_norm) @ Woutput^T   (Woutput = token_embd if tied)

Conventions that matter (they are the llama.cpp ones, which the engine follows):

* RoPE pairing.  The GGUF converter permutes the Hugging Face q/k projection
  rows back to the original Meta layout, so in a GGUF Llama the rotated pairs
  are *adjacent* elements (x[2i], x[2i+1]) of each head, rotated by the angle
  pos * freq_base ** (-2i / n_rot) (ggml rope mode 0, "normal").  Only the
  first ``llama.rope.dimension_count`` elements of a head are rotated.
* GQA.  Query head h attends with key/value head h // (n_head / n_head_kv)
  (consecutive query heads share one KV head, as in ggml's broadcast matmul).
* Output matrix.  ``output.weight`` when present, else ``token_embd.weight``.

Family members (``general.architecture``):

* ``llama``, ``mistral``: as above.
* ``qwen2``: optional ``attn_{q,k,v}.bias`` added after the projections (any
  architecture's biases are used when present); RoPE in ggml's NEOX mode
  (mode 2): the pairs are (x[i], x[i + n_rot/2]), same angles.
* ``qwen3``: NEOX RoPE, and before it every head of q and of k is
  RMS-normalised over its head_dim elements and multiplied by
  ``blk.N.attn_q_norm.weight`` / ``attn_k_norm.weight`` (same epsilon as the
  block norms).  Qwen3's ``attention.key_length`` (head_dim) need not be
  n_embd / n_head.

Optional activation quantization (``act_quant=True``, off by default): the
input rows of every matmul whose weight is Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/IQ4_NL/
IQ4_XS (blocks of 32) or Q2_K..Q6_K (blocks of 256) are first rounded the way llama.cpp and the
engine quantize them for an integer dot product: per block d = amax / 127
(float32), q = rint(x / d), x' = q * d.  With it the reference reproduces
that rounding instead of the float result, which isolates the remaining
engine differences (summation order, online softmax) from the 8-bit error.
It also rounds the inputs of BF16 matmuls to bf16 (to nearest even), as
the engine does on CPUs with AVX-512 BF16 (vdpbf16ps) and llama.cpp does
everywhere.

Usage::

    import reference_forward as rf
    m = rf.load(path)                 # also becomes the module default model
    logits = rf.logits_for([1, 2, 3]) # np.ndarray [3, vocab], float32

``ReferenceModel.new_cache`` / ``ReferenceModel.forward`` give the same
computation incrementally with a KV cache (used for greedy generation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader
from gguf.quants import dequantize

__all__ = ["ReferenceModel", "KVCache", "load", "logits_for", "ARCHITECTURES", "quantize_activations"]

#: general.architecture -> RoPE pairing ("normal": adjacent pairs, "neox": halves)
ARCHITECTURES = {"llama": "normal", "mistral": "normal", "qwen2": "neox", "qwen3": "neox"}

# Activation block length of the integer dot product for each quantized type.
_ACT_BLOCK = {
    GGMLQuantizationType.Q4_0: 32,
    GGMLQuantizationType.Q4_1: 32,
    GGMLQuantizationType.Q5_0: 32,
    GGMLQuantizationType.Q5_1: 32,
    GGMLQuantizationType.Q8_0: 32,
    GGMLQuantizationType.IQ4_NL: 32,
    GGMLQuantizationType.IQ4_XS: 32,  # the engine reads IQ4_XS as 32-element blocks
    GGMLQuantizationType.Q2_K: 256,
    GGMLQuantizationType.Q3_K: 256,
    GGMLQuantizationType.Q4_K: 256,
    GGMLQuantizationType.Q5_K: 256,
    GGMLQuantizationType.Q6_K: 256,
    GGMLQuantizationType.MXFP4: 32,
    GGMLQuantizationType.TQ1_0: 256,
    GGMLQuantizationType.TQ2_0: 256,
    GGMLQuantizationType.IQ1_S: 256,
    GGMLQuantizationType.IQ1_M: 256,
    GGMLQuantizationType.IQ2_XXS: 256,
    GGMLQuantizationType.IQ2_XS: 256,
    GGMLQuantizationType.IQ2_S: 256,
    GGMLQuantizationType.IQ3_XXS: 256,
    GGMLQuantizationType.IQ3_S: 256,
}


def quantize_activations(x: np.ndarray, block: int) -> np.ndarray:
    """Rows of ``x`` rounded to 8 bits per ``block`` elements (symmetric,
    d = amax / 127 in float32, q = round-half-even(x / d)), back as floats."""
    x32 = np.asarray(x, dtype=np.float32)
    if x32.shape[-1] % block:
        raise ValueError("row length is not a multiple of the activation block")
    b = x32.reshape(x32.shape[:-1] + (x32.shape[-1] // block, block))
    amax = np.abs(b).max(axis=-1, keepdims=True)
    d = amax / np.float32(127.0)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = np.rint(b * inv)
    return (q * d).reshape(x32.shape).astype(x.dtype, copy=False)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to bfloat16 (nearest, ties to even), back as floats."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    return rounded.view(np.float32).astype(x.dtype, copy=False)


def _field_value(reader: GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


@dataclass
class KVCache:
    """Per-layer key/value history, already RoPE-rotated (keys)."""

    k: list = field(default_factory=list)  # per layer: [n_past, n_head_kv, head_dim]
    v: list = field(default_factory=list)
    n_past: int = 0


class ReferenceModel:
    def __init__(self, path: str, dtype=np.float32, act_quant: bool = False):
        self.path = str(path)
        self.dtype = np.dtype(dtype)
        self.act_quant = bool(act_quant)
        reader = GGUFReader(self.path)
        arch = _field_value(reader, "general.architecture")
        if arch not in ARCHITECTURES:
            raise ValueError(f"reference_forward implements {sorted(ARCHITECTURES)}, got {arch!r}")
        self.arch = arch
        self.rope_neox = ARCHITECTURES[arch] == "neox"
        p = arch + "."

        def meta(key, default=None):
            return _field_value(reader, p + key, default)

        self.n_layer = int(meta("block_count"))
        self.n_embd = int(meta("embedding_length"))
        self.n_ff = int(meta("feed_forward_length"))
        self.n_head = int(meta("attention.head_count"))
        self.n_head_kv = int(meta("attention.head_count_kv", self.n_head))
        self.eps = float(meta("attention.layer_norm_rms_epsilon", 1e-5))
        self.head_dim = int(meta("attention.key_length", self.n_embd // self.n_head))
        self.head_dim_v = int(meta("attention.value_length", self.head_dim))
        self.n_rot = int(meta("rope.dimension_count", self.head_dim))
        self.freq_base = float(meta("rope.freq_base", 10000.0))
        scaling_type = meta("rope.scaling.type", "none")
        if scaling_type in (None, "none"):
            self.freq_scale = 1.0
        elif scaling_type == "linear":
            self.freq_scale = 1.0 / float(meta("rope.scaling.factor", 1.0))
        else:
            raise NotImplementedError(f"rope scaling {scaling_type!r} not implemented")
        if self.n_head % self.n_head_kv:
            raise ValueError("n_head must be a multiple of n_head_kv")
        if self.n_rot % 2 or self.n_rot > self.head_dim:
            raise ValueError("bad rope.dimension_count")

        tensors = {t.name: t for t in reader.tensors}
        # stored type of every tensor (for act_quant)
        self.tensor_types = {name: GGMLQuantizationType(int(t.tensor_type)) for name, t in tensors.items()}

        def get(name):
            t = tensors[name]
            w = dequantize(t.data, t.tensor_type)
            # gguf numpy shapes are row-major [out, in] for matrices
            return np.ascontiguousarray(w, dtype=self.dtype)

        def get_opt(name):
            return get(name) if name in tensors else None

        self.tok_embd = get("token_embd.weight")  # [vocab, n_embd]
        self.n_vocab = self.tok_embd.shape[0]
        self.output_norm = get("output_norm.weight")
        out = get_opt("output.weight")
        self.tied_output = out is None
        self.output = self.tok_embd if out is None else out  # [vocab, n_embd]
        self.output_type = self.tensor_types["token_embd.weight" if out is None else "output.weight"]
        # optional per-frequency divisors (llama 3.1 style rope_freqs)
        self.rope_freqs = get_opt("rope_freqs.weight")

        self.layers = []
        for i in range(self.n_layer):
            b = f"blk.{i}."
            self.layers.append(
                dict(
                    attn_norm=get(b + "attn_norm.weight"),
                    wq=get(b + "attn_q.weight"),
                    wk=get(b + "attn_k.weight"),
                    wv=get(b + "attn_v.weight"),
                    wo=get(b + "attn_output.weight"),
                    bq=get_opt(b + "attn_q.bias"),
                    bk=get_opt(b + "attn_k.bias"),
                    bv=get_opt(b + "attn_v.bias"),
                    bo=get_opt(b + "attn_output.bias"),
                    ffn_norm=get(b + "ffn_norm.weight"),
                    w_gate=get(b + "ffn_gate.weight"),
                    w_up=get(b + "ffn_up.weight"),
                    w_down=get(b + "ffn_down.weight"),
                    q_norm=get_opt(b + "attn_q_norm.weight"),
                    k_norm=get_opt(b + "attn_k_norm.weight"),
                    types={
                        key: self.tensor_types[b + name + ".weight"]
                        for key, name in (
                            ("wq", "attn_q"), ("wk", "attn_k"), ("wv", "attn_v"), ("wo", "attn_output"),
                            ("w_gate", "ffn_gate"), ("w_up", "ffn_up"), ("w_down", "ffn_down"),
                        )
                    },
                )
            )
        # inverse frequencies for the adjacent-pair rotation, computed in float64
        i = np.arange(self.n_rot // 2, dtype=np.float64)
        inv = self.freq_scale * self.freq_base ** (-2.0 * i / self.n_rot)
        if self.rope_freqs is not None:
            inv = inv / self.rope_freqs.astype(np.float64)[: self.n_rot // 2]
        self._inv_freq = inv

    # ------------------------------------------------------------------ pieces
    def _rms_norm(self, x, w):
        x64 = x.astype(np.float64)
        ms = np.mean(x64 * x64, axis=-1, keepdims=True)
        return (x64 / np.sqrt(ms + self.eps)).astype(self.dtype) * w

    def _matmul(self, x, w, wtype):
        """x @ w^T, with x rounded to 8 bits (bf16 for BF16 w) first when act_quant and w is quantized."""
        if self.act_quant and wtype in _ACT_BLOCK:
            x = quantize_activations(x, _ACT_BLOCK[wtype])
        elif self.act_quant and wtype == GGMLQuantizationType.BF16:
            x = round_to_bf16(x)
        return x @ w.T

    def _rope(self, x, positions):
        """x: [n_tok, n_heads, head_dim]; rotates adjacent pairs (NEOX: halves) in a copy."""
        ang = np.asarray(positions, dtype=np.float64)[:, None] * self._inv_freq[None, :]
        cos = np.cos(ang).astype(self.dtype)[:, None, :]  # [n_tok, 1, n_rot/2]
        sin = np.sin(ang).astype(self.dtype)[:, None, :]
        out = x.copy()
        if self.rope_neox:
            half = self.n_rot // 2
            x0 = x[..., 0:half]
            x1 = x[..., half : self.n_rot]
            out[..., 0:half] = x0 * cos - x1 * sin
            out[..., half : self.n_rot] = x0 * sin + x1 * cos
            return out
        x0 = x[..., 0 : self.n_rot : 2]
        x1 = x[..., 1 : self.n_rot : 2]
        out[..., 0 : self.n_rot : 2] = x0 * cos - x1 * sin
        out[..., 1 : self.n_rot : 2] = x0 * sin + x1 * cos
        return out

    @staticmethod
    def _silu(x):
        return x / (1.0 + np.exp(-x))

    # ----------------------------------------------------------------- forward
    def new_cache(self) -> KVCache:
        c = KVCache()
        c.k = [np.zeros((0, self.n_head_kv, self.head_dim), self.dtype) for _ in range(self.n_layer)]
        c.v = [np.zeros((0, self.n_head_kv, self.head_dim_v), self.dtype) for _ in range(self.n_layer)]
        return c

    def forward(self, tokens, cache: KVCache | None = None, all_logits: bool = True):
        """Run ``tokens`` after what ``cache`` already holds (positions continue).

        Returns logits [len(tokens), vocab] (or [1, vocab] for the last token
        when ``all_logits`` is False).  ``cache`` is updated in place.
        """
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
        if tokens.size == 0:
            raise ValueError("empty token list")
        if tokens.min() < 0 or tokens.max() >= self.n_vocab:
            raise ValueError("token id out of range")
        if cache is None:
            cache = self.new_cache()
        n = tokens.size
        n_past = cache.n_past
        pos = np.arange(n_past, n_past + n)
        n_tot = n_past + n
        group = self.n_head // self.n_head_kv
        scale = 1.0 / math.sqrt(self.head_dim)
        # causal mask over [n new rows, n_tot key columns]
        mask = np.where(
            np.arange(n_tot)[None, :] <= pos[:, None], 0.0, -np.inf
        ).astype(self.dtype)

        x = self.tok_embd[tokens].copy()  # [n, n_embd]
        for li, L in enumerate(self.layers):
            h = self._rms_norm(x, L["attn_norm"])
            T = L["types"]
            if self.act_quant:
                q = self._matmul(h, L["wq"], T["wq"])
                k = self._matmul(h, L["wk"], T["wk"])
                v = self._matmul(h, L["wv"], T["wv"])
            else:
                q = h @ L["wq"].T
                k = h @ L["wk"].T
                v = h @ L["wv"].T
            if L["bq"] is not None:
                q = q + L["bq"]
            if L["bk"] is not None:
                k = k + L["bk"]
            if L["bv"] is not None:
                v = v + L["bv"]
            q = q.reshape(n, self.n_head, self.head_dim)
            k = k.reshape(n, self.n_head_kv, self.head_dim)
            if L["q_norm"] is not None:  # qwen3: per-head RMS norm before RoPE
                q = self._rms_norm(q, L["q_norm"])
            if L["k_norm"] is not None:
                k = self._rms_norm(k, L["k_norm"])
            q = self._rope(q, pos)
            k = self._rope(k, pos)
            v = v.reshape(n, self.n_head_kv, self.head_dim_v)
            K = np.concatenate([cache.k[li], k], axis=0)  # [n_tot, n_head_kv, hd]
            V = np.concatenate([cache.v[li], v], axis=0)
            cache.k[li], cache.v[li] = K, V

            # group query heads by their kv head: [n_head_kv, group, n, hd]
            qg = q.reshape(n, self.n_head_kv, group, self.head_dim).transpose(1, 2, 0, 3)
            Kt = K.transpose(1, 2, 0)  # [n_head_kv, hd, n_tot]
            s = (qg @ Kt[:, None, :, :]) * self.dtype.type(scale) + mask  # [kv, g, n, n_tot]
            s = s - s.max(axis=-1, keepdims=True)
            p = np.exp(s)
            p = p / p.sum(axis=-1, keepdims=True)
            Vt = V.transpose(1, 0, 2)  # [n_head_kv, n_tot, hd_v]
            a = p @ Vt[:, None, :, :]  # [kv, g, n, hd_v]
            a = a.transpose(2, 0, 1, 3).reshape(n, self.n_head * self.head_dim_v)
            o = self._matmul(a, L["wo"], T["wo"]) if self.act_quant else a @ L["wo"].T
            if L["bo"] is not None:
                o = o + L["bo"]
            x = x + o

            h = self._rms_norm(x, L["ffn_norm"])
            if self.act_quant:
                g = self._matmul(h, L["w_gate"], T["w_gate"])
                u = self._matmul(h, L["w_up"], T["w_up"])
                x = x + self._matmul(self._silu(g) * u, L["w_down"], T["w_down"])
            else:
                g = h @ L["w_gate"].T
                u = h @ L["w_up"].T
                x = x + (self._silu(g) * u) @ L["w_down"].T
        cache.n_past = n_tot

        if not all_logits:
            x = x[-1:]
        h = self._rms_norm(x, self.output_norm)
        if self.act_quant:
            return self._matmul(h, self.output, self.output_type)
        return h @ self.output.T

    def logits_for(self, tokens) -> np.ndarray:
        """Full causal forward of ``tokens`` from position 0: [len(tokens), vocab]."""
        return self.forward(tokens, None, all_logits=True)

    def greedy(self, prompt, n_new: int):
        """Greedy decoding (ignores EOS).  Returns (ids, top2_gaps, second_ids)."""
        cache = self.new_cache()
        logits = self.forward(prompt, cache, all_logits=False)[-1]
        ids, gaps, seconds = [], [], []
        for step in range(n_new):
            l64 = logits.astype(np.float64)
            top = int(np.argmax(l64))
            masked = l64.copy()
            masked[top] = -np.inf
            second = int(np.argmax(masked))
            ids.append(top)
            gaps.append(float(l64[top] - l64[second]))
            seconds.append(second)
            if step + 1 < n_new:
                logits = self.forward([top], cache, all_logits=False)[-1]
        return ids, gaps, seconds


_default: ReferenceModel | None = None


def load(path: str, dtype=np.float32, act_quant: bool = False) -> ReferenceModel:
    """Load a GGUF Llama-family model; it also becomes the default for ``logits_for``."""
    global _default
    _default = ReferenceModel(path, dtype=dtype, act_quant=act_quant)
    return _default


def logits_for(tokens, model: ReferenceModel | None = None) -> np.ndarray:
    """Logits [len(tokens), vocab] of a full causal forward (default model)."""
    m = model if model is not None else _default
    if m is None:
        raise RuntimeError("call load(path) first")
    return m.logits_for(tokens)
