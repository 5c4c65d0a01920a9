"""Tiny random GGUF models of the Llama family, for architecture and
tensor-type tests (tests/models/test_architectures.py).

``write_tiny_model(path, arch, weight_type, tied=True, seed=0)`` writes a
2-layer decoder with random weights: dim 256 (a multiple of 256, the
K-quants' super-block), ffn 512, 4 query heads over 2 KV heads (GQA),
head_dim 64 (128 for qwen3, like the real Qwen3, so that
n_head * head_dim != dim there), context 256, and a vocabulary of 300 from
a minimal byte-level GPT-2 tokenizer (the 256 byte symbols, 43 merges and
``<|endoftext|>``).  Every matrix is stored in ``weight_type``; norm
weights and biases stay F32.

The metadata is what llama.cpp's converter writes for these architectures:
``<arch>.block_count``, ``embedding_length``, ``feed_forward_length``,
``attention.head_count``, ``attention.head_count_kv``, ``context_length``,
``rope.freq_base``, ``attention.layer_norm_rms_epsilon``,
``rope.dimension_count`` (and ``attention.key_length``/``value_length``
when head_dim is not dim / n_head), plus ``tokenizer.ggml.*``.

Tensors per architecture (llama.cpp names):

* all: ``token_embd``, ``output_norm``, optional ``output`` (``tied=False``),
  ``blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
  ffn_gate, ffn_up, ffn_down}``;
* qwen2: ``blk.N.attn_{q,k,v}.bias``;
* qwen3: ``blk.N.attn_{q,k}_norm`` (head_dim elements each).

Any other ``arch`` string writes the llama tensor set under that name (for
the unsupported-architecture tests).

Quantization: F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 through
``gguf.quants.quantize``; Q2_K..Q6_K, IQ4_NL and IQ4_XS (which gguf-py can
only dequantize) through the simple encoders below, which round-trip through
``gguf.quants.dequantize`` (checked by ``check_k_quant_round_trip``).  Other
types (e.g. IQ2_XXS) get random blocks: good only to test that a loader
rejects them.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, replace

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT

__all__ = [
    "TinyConfig",
    "WEIGHT_TYPES",
    "byte_tokens",
    "decode_ids",
    "tiny_config",
    "tiny_tokenizer",
    "quantize_matrix",
    "write_tiny_model",
    "check_k_quant_round_trip",
]

#: Tensor types the engine supports, in the order the tests list them.
WEIGHT_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS", "Q2_K", "Q3_K",
                "Q4_K", "Q5_K", "Q6_K", "TQ1_0", "TQ2_0", "MXFP4")

QK_K = 256


@dataclass(frozen=True)
class TinyConfig:
    n_layer: int = 2
    dim: int = 256
    ffn: int = 512
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 64
    context: int = 256
    rope_base: float = 10000.0
    rms_eps: float = 1e-5


def tiny_config(arch: str, **overrides) -> TinyConfig:
    """The default shape for ``arch``; keyword arguments override fields."""
    c = TinyConfig()
    if arch == "qwen3":
        c = replace(c, head_dim=128, rope_base=1000000.0, rms_eps=1e-6)
    elif arch == "qwen2":
        c = replace(c, rope_base=1000000.0, rms_eps=1e-6)
    return replace(c, **overrides)


# ------------------------------------------------------------------ tokenizer
def byte_tokens() -> list[str]:
    """The 256 GPT-2 byte symbols, token id = byte value.

    Printable bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand for
    themselves; the other 68 map to U+0100 onwards in byte order."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAC + 1)) | set(range(0xAE, 0xFF + 1))
    out, extra = [], 0
    for b in range(256):
        if b in keep:
            out.append(chr(b))
        else:
            out.append(chr(0x100 + extra))
            extra += 1
    return out


# Merges in priority order; every one joins two existing tokens. "Ġ" is the
# byte symbol of the space.
_MERGES = [
    "Ġ t", "h e", "i n", "Ġ a", "e r", "o n", "Ġt he", "r e", "a t", "Ġ s",
    "e n", "o r", "Ġ w", "Ġ o", "i s", "e s", "a n", "Ġ c", "i t", "Ġ b",
    "Ġ f", "a r", "Ġ p", "a l", "Ġ m", "l e", "Ġ d", "in g", "Ġ h", "o u",
    "Ġ i", "e d", "Ġo f", "Ġa n", "Ġan d", "Ġ to", "Ġ in", "Ġ is", "l l", "Ġ l",
    "c h", "s t",
]


def tiny_tokenizer() -> dict:
    """tokens, token types, merges and special ids of the tiny vocabulary."""
    tokens = byte_tokens()
    merges = []
    for m in _MERGES:
        a, b = m.split(" ")
        if a not in tokens:  # "Ġ to": "to" must exist first; add its merge
            raise AssertionError(f"merge {m!r}: {a!r} is not a token yet")
        if b not in tokens:
            if len(b) == 2 and b[0] in tokens and b[1] in tokens:
                merges.append(f"{b[0]} {b[1]}")
                tokens.append(b)
            else:
                raise AssertionError(f"merge {m!r}: {b!r} is not a token yet")
        merges.append(m)
        if a + b not in tokens:
            tokens.append(a + b)
    eot = len(tokens)
    tokens.append("<|endoftext|>")
    types = [1] * eot + [3]
    return dict(tokens=tokens, types=types, merges=merges, bos_id=eot, eos_id=eot)


def decode_ids(ids) -> bytes:
    """The bytes that token ids of the tiny vocabulary stand for (special
    tokens give nothing)."""
    tok = tiny_tokenizer()
    byte_of = {sym: b for b, sym in enumerate(byte_tokens())}
    out = bytearray()
    for i in ids:
        if tok["types"][i] == 3:
            continue
        out.extend(byte_of[ch] for ch in tok["tokens"][i])
    return bytes(out)


# --------------------------------------------------------------- K-quants
def _f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def _pack_k_scales(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """12-byte Q4_K/Q5_K scale field from 6-bit sc, m [n_blocks, 8]."""
    sc = sc.astype(np.uint8)
    mn = mn.astype(np.uint8)
    out = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    out[:, 0:4] = (sc[:, 0:4] & 0x3F) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = (mn[:, 0:4] & 0x3F) | ((mn[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((mn[:, 4:8] & 0x0F) << 4)
    return out


def _k_affine(blocks: np.ndarray, levels: int, groups: int = 8, scale_max: int = 63):
    """Per sub-block (``groups`` of them per 256) x ~ d*sc*q - dmin*m with q
    in [0, levels] and sc, m in [0, scale_max]; returns (d f16 [n], dmin f16
    [n], sc, m uint [n, groups], q [n, groups, 256 / groups])."""
    n = blocks.shape[0]
    sub = blocks.reshape(n, groups, QK_K // groups).astype(np.float32)
    lo = np.minimum(sub.min(axis=-1), 0.0)  # offset is -dmin*m <= 0
    hi = sub.max(axis=-1)
    scale = (hi - lo) / levels  # [n, groups]
    minv = -lo
    d = _f16(scale.max(axis=-1) / scale_max)
    dmin = _f16(minv.max(axis=-1) / scale_max)
    d32, dmin32 = d.astype(np.float32), dmin.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0)
        m = np.where(dmin32[:, None] > 0, np.rint(minv / dmin32[:, None]), 0)
    sc = np.clip(sc, 0, scale_max).astype(np.uint8)
    m = np.clip(m, 0, scale_max).astype(np.uint8)
    step = (d32[:, None] * sc)[..., None]  # [n, 8, 1]
    off = (dmin32[:, None] * m)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(step > 0, np.rint((sub + off) / step), 0)
    q = np.clip(q, 0, levels).astype(np.uint8)
    return d, dmin, sc, m, q


def _quantize_q4_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d, dmin, sc, m, q = _k_affine(blocks, 15)
    # 4 runs of 32 bytes: low nibble sub-block 2c, high nibble 2c+1
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(n, 128)
    return np.concatenate(
        [d.reshape(n, 1).view(np.uint8), dmin.reshape(n, 1).view(np.uint8), _pack_k_scales(sc, m), qs], axis=1
    )


def _quantize_q5_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d, dmin, sc, m, q = _k_affine(blocks, 31)
    low = q & 0x0F
    qs = (low[:, 0::2, :] | (low[:, 1::2, :] << 4)).reshape(n, 128)
    # qh[l] bit j = bit 4 of element l of sub-block j
    high = (q >> 4) & 1  # [n, 8, 32]
    qh = np.zeros((n, 32), dtype=np.uint8)
    for j in range(8):
        qh |= (high[:, j, :] << j).astype(np.uint8)
    return np.concatenate(
        [d.reshape(n, 1).view(np.uint8), dmin.reshape(n, 1).view(np.uint8), _pack_k_scales(sc, m), qh, qs], axis=1
    )


def _quantize_q6_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    sub = blocks.reshape(n, 16, 16).astype(np.float32)
    scale = np.abs(sub).max(axis=-1) / 31.0  # [n, 16], q - 32 in [-32, 31]
    d = _f16(scale.max(axis=-1) / 127.0)
    d32 = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0)
    sc = np.clip(sc, -128, 127).astype(np.int8)
    step = (d32[:, None] * sc)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(step != 0, np.rint(sub / step), 0)
    q = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(n, QK_K)
    # element e: half h = e // 128, chunk c = (e % 128) // 32, lane l = e % 32
    qq = q.reshape(n, 2, 4, 32)
    low, high = qq & 0x0F, qq >> 4
    ql = np.concatenate([low[:, :, 0, :] | (low[:, :, 2, :] << 4), low[:, :, 1, :] | (low[:, :, 3, :] << 4)], axis=2)
    qh = high[:, :, 0, :] | (high[:, :, 1, :] << 2) | (high[:, :, 2, :] << 4) | (high[:, :, 3, :] << 6)
    return np.concatenate(
        [ql.reshape(n, 128), qh.reshape(n, 64), sc.view(np.uint8), d.reshape(n, 1).view(np.uint8)], axis=1
    )


def _quantize_q2_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d, dmin, sc, m, q = _k_affine(blocks, 3, groups=16, scale_max=15)
    # element 128h + 32k + l: bits 2k of qs[32h + l]
    qq = q.reshape(n, 2, 4, 32)
    qs = qq[:, :, 0] | (qq[:, :, 1] << 2) | (qq[:, :, 2] << 4) | (qq[:, :, 3] << 6)
    return np.concatenate(
        [sc | (m << 4), qs.reshape(n, 64), d.reshape(n, 1).view(np.uint8), dmin.reshape(n, 1).view(np.uint8)], axis=1
    )


def _signed_scales(sub: np.ndarray, qmin: int, levels: int):
    """Per sub-block x ~ d*sc*q, sc a signed 6-bit integer (-32..31) and q an
    integer in [qmin, qmin + levels - 1], the sub-block's largest-magnitude
    element landing on qmin; returns (d f16 [n], sc int [n, groups])."""
    big = np.take_along_axis(sub, np.abs(sub).argmax(axis=-1)[..., None], axis=-1)[..., 0]
    scale = big / qmin  # [n, groups], signed
    d = _f16(np.abs(scale).max(axis=-1) / 31.0)
    d32 = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0)
    return d, np.clip(sc, -32, 31).astype(np.int32)


def _quantize_q3_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    sub = blocks.reshape(n, 16, 16).astype(np.float32)
    d, sc = _signed_scales(sub, -4, 8)
    step = (d.astype(np.float32)[:, None] * sc)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(step != 0, np.rint(sub / step), 0)
    v = (np.clip(q, -4, 3) + 4).astype(np.uint8).reshape(n, 2, 4, 32)  # element 128h + 32k + l
    low, high = v & 3, v >> 2
    qs = low[:, :, 0] | (low[:, :, 1] << 2) | (low[:, :, 2] << 4) | (low[:, :, 3] << 6)
    hmask = np.zeros((n, 32), dtype=np.uint8)
    for h in range(2):
        for k in range(4):
            hmask |= (high[:, h, k] << (4 * h + k)).astype(np.uint8)
    # 6-bit scales + 32: low nibbles in bytes 0..7 (scales 0..7 low, 8..15
    # high nibble), the top two bits of scale j + 4t at bit 2t of byte 8 + j.
    s6 = (sc + 32).astype(np.uint8)
    packed = np.zeros((n, 12), dtype=np.uint8)
    packed[:, :8] = (s6[:, :8] & 0x0F) | ((s6[:, 8:] & 0x0F) << 4)
    for t in range(4):
        packed[:, 8:12] |= ((s6[:, 4 * t:4 * t + 4] >> 4) << (2 * t)).astype(np.uint8)
    return np.concatenate([hmask, qs.reshape(n, 64), packed, d.reshape(n, 1).view(np.uint8)], axis=1)


_IQ4_VALUES = np.array(gguf.quants.IQ4_NL.kvalues, dtype=np.float32)


def _iq4_indexes(sub: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The nearest grid value's index for every element, given each
    sub-block's step [..., 1]; as the 16 bytes of nibbles per 32 elements
    (element l < 16 in the low nibble of byte l, l >= 16 in the high one)."""
    idx = np.abs(step[..., None] * _IQ4_VALUES - sub[..., None]).argmin(axis=-1).astype(np.uint8)
    return idx[..., :16] | (idx[..., 16:] << 4)


def _quantize_iq4_nl(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]  # blocks of 32
    sub = blocks.astype(np.float32)
    big = np.take_along_axis(sub, np.abs(sub).argmax(axis=-1)[:, None], axis=-1)
    d = _f16(big[:, 0] / _IQ4_VALUES[0])
    qs = _iq4_indexes(sub, d.astype(np.float32)[:, None])
    return np.concatenate([d.reshape(n, 1).view(np.uint8), qs], axis=1)


def _quantize_iq4_xs(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    sub = blocks.reshape(n, 8, 32).astype(np.float32)
    d, sc = _signed_scales(sub, int(_IQ4_VALUES[0]), 16)
    qs = _iq4_indexes(sub, (d.astype(np.float32)[:, None] * sc)[..., None])
    ls = (sc + 32).astype(np.uint16)  # [n, 8], 6 bits
    scales_h = np.zeros(n, dtype=np.uint16)
    for j in range(8):
        scales_h |= ((ls[:, j] >> 4) & 3) << (2 * j)
    scales_l = ((ls[:, 0::2] & 0x0F) | ((ls[:, 1::2] & 0x0F) << 4)).astype(np.uint8)
    return np.concatenate(
        [d.reshape(n, 1).view(np.uint8), scales_h.reshape(n, 1).view(np.uint8), scales_l, qs.reshape(n, 128)], axis=1
    )


# Encoders by type, each taking [n, block elements] floats.
_K_ENCODERS = {
    QT.Q2_K: _quantize_q2_k,
    QT.Q3_K: _quantize_q3_k,
    QT.Q4_K: _quantize_q4_k,
    QT.Q5_K: _quantize_q5_k,
    QT.Q6_K: _quantize_q6_k,
    QT.IQ4_NL: _quantize_iq4_nl,
    QT.IQ4_XS: _quantize_iq4_xs,
}


def quantize_matrix(w: np.ndarray, qtype: QT, rng: np.random.Generator | None = None) -> np.ndarray:
    """[rows, cols] float matrix -> the array GGUFWriter.add_tensor stores
    with raw_dtype=qtype (F32/F16 as float arrays, the rest as uint8 rows)."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    if qtype == QT.F32:
        return w
    if qtype == QT.F16:
        return w.astype(np.float16)
    if qtype in _K_ENCODERS:
        rows, cols = w.shape
        blocks = _K_ENCODERS[qtype](w.reshape(-1, gguf.GGML_QUANT_SIZES[qtype][0]))
        return blocks.reshape(rows, -1)
    try:
        return gguf.quants.quantize(w, qtype)
    except NotImplementedError:
        # no encoder: random blocks of the right size (for rejection tests only)
        block, type_bytes = gguf.GGML_QUANT_SIZES[qtype]
        rows, cols = w.shape
        rng = rng if rng is not None else np.random.default_rng(0)
        return rng.integers(0, 256, size=(rows, cols // block * type_bytes), dtype=np.uint8)


def check_k_quant_round_trip(seed: int = 0) -> dict:
    """Max relative error of encode -> gguf dequantize for the types with
    encoders here (the K-quants, IQ4_NL, IQ4_XS)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 512)).astype(np.float32)
    x[0, :40] += 3.0  # a positive-only sub-block (no min) and an outlier mix
    x[1] = 0.0  # all-zero rows must survive
    out = {}
    for qt in _K_ENCODERS:
        deq = gguf.quants.dequantize(quantize_matrix(x, qt), qt).reshape(x.shape)
        out[qt.name] = float(np.abs(deq - x).max() / np.abs(x).max())
    return out


# ---------------------------------------------------------------- the model
def _type(weight_type) -> QT:
    if isinstance(weight_type, QT):
        return weight_type
    return QT[str(weight_type).upper()]


def write_tiny_model(
    path,
    arch: str,
    weight_type="F32",
    tied: bool = True,
    seed: int = 0,
    *,
    rope_freqs: bool = False,
    rope_scaling: tuple[str, float] | None = None,
    **overrides,
) -> pathlib.Path:
    """Writes a tiny random ``arch`` model with matrices in ``weight_type``
    to ``path``; returns the path.  ``overrides`` change TinyConfig fields
    (e.g. ``head_dim=128``, ``n_layer=1``).

    ``rope_freqs=True`` adds a Llama-3.1-style ``rope_freqs.weight`` (F32,
    one divisor per rotated pair, here random in [1, 8] so that it matters
    at short positions); ``rope_scaling=(kind, f)`` writes
    ``rope.scaling.type = kind`` (e.g. "linear") and ``rope.scaling.factor = f``."""
    path = pathlib.Path(path)
    qtype = _type(weight_type)
    c = tiny_config(arch, **overrides)
    tok = tiny_tokenizer()
    n_vocab = len(tok["tokens"])
    q_dim, kv_dim = c.n_head * c.head_dim, c.n_head_kv * c.head_dim
    rng = np.random.default_rng(seed)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm_weight(n, spread=0.1):
        return (1.0 + normal((n,), spread)).astype(np.float32)

    # Standard deviations chosen so that activations stay O(1): a projection
    # of an RMS-normalised row with std s gives outputs of std s*sqrt(cols).
    # Attention scores come out with std ~1-2 (not uniform, not one-hot),
    # the FFN and attention add O(0.5) to the residual, and the logits of
    # the tied 0.2-std embedding spread over about +-10.
    s_in = 1.0 / np.sqrt(c.dim)
    tensors = {}  # name -> (float array, type)
    tensors["token_embd.weight"] = (normal((n_vocab, c.dim), 0.2), qtype)
    tensors["output_norm.weight"] = (norm_weight(c.dim), QT.F32)
    if rope_freqs:
        tensors["rope_freqs.weight"] = (rng.uniform(1.0, 8.0, c.head_dim // 2).astype(np.float32), QT.F32)
    if not tied:
        tensors["output.weight"] = (normal((n_vocab, c.dim), 0.2), qtype)
    for i in range(c.n_layer):
        b = f"blk.{i}."
        tensors[b + "attn_norm.weight"] = (norm_weight(c.dim), QT.F32)
        tensors[b + "attn_q.weight"] = (normal((q_dim, c.dim), 1.3 * s_in), qtype)
        tensors[b + "attn_k.weight"] = (normal((kv_dim, c.dim), 1.3 * s_in), qtype)
        tensors[b + "attn_v.weight"] = (normal((kv_dim, c.dim), 1.0 * s_in), qtype)
        tensors[b + "attn_output.weight"] = (normal((c.dim, q_dim), 0.8 / np.sqrt(q_dim)), qtype)
        if arch == "qwen2":
            tensors[b + "attn_q.bias"] = (normal((q_dim,), 0.5), QT.F32)
            tensors[b + "attn_k.bias"] = (normal((kv_dim,), 0.5), QT.F32)
            tensors[b + "attn_v.bias"] = (normal((kv_dim,), 0.3), QT.F32)
        if arch == "qwen3":
            tensors[b + "attn_q_norm.weight"] = (norm_weight(c.head_dim, 0.3), QT.F32)
            tensors[b + "attn_k_norm.weight"] = (norm_weight(c.head_dim, 0.3), QT.F32)
        tensors[b + "ffn_norm.weight"] = (norm_weight(c.dim), QT.F32)
        tensors[b + "ffn_gate.weight"] = (normal((c.ffn, c.dim), 1.0 * s_in), qtype)
        tensors[b + "ffn_up.weight"] = (normal((c.ffn, c.dim), 1.0 * s_in), qtype)
        tensors[b + "ffn_down.weight"] = (normal((c.dim, c.ffn), 1.0 / np.sqrt(c.ffn)), qtype)

    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"tiny-{arch}-{qtype.name}")
    a = arch + "."
    w.add_uint32(a + "block_count", c.n_layer)
    w.add_uint32(a + "context_length", c.context)
    w.add_uint32(a + "embedding_length", c.dim)
    w.add_uint32(a + "feed_forward_length", c.ffn)
    w.add_uint32(a + "attention.head_count", c.n_head)
    w.add_uint32(a + "attention.head_count_kv", c.n_head_kv)
    w.add_float32(a + "rope.freq_base", c.rope_base)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", c.rms_eps)
    w.add_uint32(a + "rope.dimension_count", c.head_dim)
    if rope_scaling is not None:
        w.add_string(a + "rope.scaling.type", rope_scaling[0])
        w.add_float32(a + "rope.scaling.factor", float(rope_scaling[1]))
    if c.head_dim * c.n_head != c.dim:
        w.add_uint32(a + "attention.key_length", c.head_dim)
        w.add_uint32(a + "attention.value_length", c.head_dim)
    w.add_uint32(a + "vocab_size", n_vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tok["tokens"])
    w.add_token_types(tok["types"])
    w.add_token_merges(tok["merges"])
    w.add_bos_token_id(tok["bos_id"])
    w.add_eos_token_id(tok["eos_id"])
    w.add_add_bos_token(False)
    for name, (data, t) in tensors.items():
        if t == QT.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, quantize_matrix(data, t, rng), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


if __name__ == "__main__":  # quick self-check
    import sys
    import tempfile

    print("K-quant round trip (max error / max |x|):", check_k_quant_round_trip())
    with tempfile.TemporaryDirectory() as d:
        for arch in ("llama", "qwen2", "qwen3"):
            for t in WEIGHT_TYPES:
                p = write_tiny_model(pathlib.Path(d) / f"{arch}-{t}.gguf", arch, t)
                print(arch, t, p.stat().st_size, file=sys.stderr)
