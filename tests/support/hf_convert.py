"""Converts between a GGUF file and a Hugging Face model directory.

Pure Python (numpy and the `gguf` package; no torch, no transformers), so
the suite can make Hugging Face forms of its GGUF models and back:

    python tests/support/hf_convert.py to-hf MODEL.gguf OUT_DIR [--dtype bf16|f16|f32]
    python tests/support/hf_convert.py to-gguf MODEL_DIR OUT.gguf [--dtype bf16|f16|f32]

One table per architecture (ARCHITECTURES) holds the config.json keys and
the tensor names of both forms; the engine's loader
(third_party/vllm.cpp/src/formats/hf_architecture.cpp) has the same rows.
The two formats differ beyond names where llama.cpp's converter changes
the values, and both directions undo that:
  - Llama/Mistral q/k rows are permuted for llama.cpp's adjacent-pairs RoPE
    (`permute_qk`); HF checkpoints rotate halves.
  - Gemma norm weights are stored as 1 + w (`norm_plus_one`).
  - RoPE scaling (`_rope_to_gguf`, `_rope_from_gguf`): linear and YaRN as
    metadata (YaRN's attention_factor as llama.cpp's attn_factor, which
    multiplies YaRN's own 1 + 0.1 ln(factor));
    Llama 3's "llama3" as the rope_freqs.weight divisors llama.cpp's
    converter computes (the rope_scaling dict itself is kept under the
    private key HF_ROPE_SCALING_KEY so that the way back can restore it);
    Phi-3's LongRoPE as the rope_factors_long/short.weight tensors with the
    original context and the attention factor.
  - Gemma 2/3's query_pre_attn_scalar, when it is not the head size (which
    is all llama.cpp assumes), as `<arch>.attention.scale` = scalar^-0.5.
The tokenizer goes through tokenizer.json (byte-level BPE: vocab, merges,
added tokens, the pre-tokenizer `tokenizer.ggml.pre` names; GGUF -> HF also
Gemma's SentencePiece vocabulary, as transformers exports it),
tokenizer_config.json (chat template, bos/eos) and generation_config.json.
"""

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import struct
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import gguf


# --- the architecture table -------------------------------------------------

# config.json key -> GGUF key suffix (after "<arch>."), for every architecture.
COMMON_CONFIG = (
    ("hidden_size", "embedding_length", int),
    ("num_hidden_layers", "block_count", int),
    ("intermediate_size", "feed_forward_length", int),
    ("num_attention_heads", "attention.head_count", int),
    ("num_key_value_heads", "attention.head_count_kv", int),
    ("max_position_embeddings", "context_length", int),
    ("rms_norm_eps", "attention.layer_norm_rms_epsilon", float),
    ("rope_theta", "rope.freq_base", float),
    ("head_dim", "attention.key_length", int),
    ("vocab_size", "vocab_size", int),
)

# HF tensor name -> GGUF tensor name; "{N}" is the layer number.
LAYER = "model.layers.{N}."
COMMON_TENSORS = (
    ("model.embed_tokens.weight", "token_embd.weight"),
    ("model.norm.weight", "output_norm.weight"),
    ("lm_head.weight", "output.weight"),
    (LAYER + "input_layernorm.weight", "blk.{N}.attn_norm.weight"),
    (LAYER + "self_attn.q_proj.weight", "blk.{N}.attn_q.weight"),
    (LAYER + "self_attn.k_proj.weight", "blk.{N}.attn_k.weight"),
    (LAYER + "self_attn.v_proj.weight", "blk.{N}.attn_v.weight"),
    (LAYER + "self_attn.o_proj.weight", "blk.{N}.attn_output.weight"),
    (LAYER + "mlp.gate_proj.weight", "blk.{N}.ffn_gate.weight"),
    (LAYER + "mlp.up_proj.weight", "blk.{N}.ffn_up.weight"),
    (LAYER + "mlp.down_proj.weight", "blk.{N}.ffn_down.weight"),
)
PRE_FFN_NORM = ((LAYER + "post_attention_layernorm.weight", "blk.{N}.ffn_norm.weight"),)
QKV_BIAS = (
    (LAYER + "self_attn.q_proj.bias", "blk.{N}.attn_q.bias"),
    (LAYER + "self_attn.k_proj.bias", "blk.{N}.attn_k.bias"),
    (LAYER + "self_attn.v_proj.bias", "blk.{N}.attn_v.bias"),
)
QK_NORM = (
    (LAYER + "self_attn.q_norm.weight", "blk.{N}.attn_q_norm.weight"),
    (LAYER + "self_attn.k_norm.weight", "blk.{N}.attn_k_norm.weight"),
)
SANDWICH_NORMS = (
    (LAYER + "post_attention_layernorm.weight", "blk.{N}.post_attention_norm.weight"),
    (LAYER + "pre_feedforward_layernorm.weight", "blk.{N}.ffn_norm.weight"),
    (LAYER + "post_feedforward_layernorm.weight", "blk.{N}.post_ffw_norm.weight"),
)
SLIDING_WINDOW = (("sliding_window", "attention.sliding_window", int),)
# Gemma 3's sliding layers' RoPE base (llama.cpp's converter leaves the key out
# and llama.cpp fixes the base at 10000).
LOCAL_ROPE_BASE = (("rope_local_base_freq", "rope.freq_base_swa", float),)
SOFTCAPPING = (
    ("attn_logit_softcapping", "attn_logit_softcapping", float),
    ("final_logit_softcapping", "final_logit_softcapping", float),
)
# config.json rope_scaling key -> GGUF key suffix, for "rope_type": "yarn"
# (the engine's HF loader, hf_model.cpp, maps the same keys).
YARN_SCALING = (
    ("factor", "rope.scaling.factor", float),
    ("original_max_position_embeddings", "rope.scaling.original_context_length", int),
    ("beta_fast", "rope.scaling.yarn_beta_fast", float),
    ("beta_slow", "rope.scaling.yarn_beta_slow", float),
)

#: GGUF tensors that carry RoPE scaling, not weights of the checkpoint.
ROPE_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")
#: Where hf_to_gguf keeps a "llama3" rope_scaling dict (JSON) for gguf_to_hf.
HF_ROPE_SCALING_KEY = "hf_convert.rope_scaling"


@dataclasses.dataclass(frozen=True)
class Architecture:
    gguf_name: str
    hf_class: str
    model_type: str
    config: tuple
    tensors: tuple
    permute_qk: bool = False
    norm_plus_one: bool = False
    tie_default: bool = False  # transformers' default for tie_word_embeddings


ARCHITECTURES = (
    Architecture("llama", "LlamaForCausalLM", "llama", COMMON_CONFIG, COMMON_TENSORS + PRE_FFN_NORM, permute_qk=True),
    # llama.cpp converts Mistral checkpoints to its "llama" architecture.
    Architecture("llama", "MistralForCausalLM", "mistral", COMMON_CONFIG + SLIDING_WINDOW,
                 COMMON_TENSORS + PRE_FFN_NORM, permute_qk=True),
    Architecture("qwen2", "Qwen2ForCausalLM", "qwen2", COMMON_CONFIG, COMMON_TENSORS + PRE_FFN_NORM + QKV_BIAS),
    Architecture("qwen3", "Qwen3ForCausalLM", "qwen3", COMMON_CONFIG, COMMON_TENSORS + PRE_FFN_NORM + QK_NORM),
    Architecture("gemma", "GemmaForCausalLM", "gemma", COMMON_CONFIG, COMMON_TENSORS + PRE_FFN_NORM,
                 norm_plus_one=True, tie_default=True),
    Architecture("gemma2", "Gemma2ForCausalLM", "gemma2", COMMON_CONFIG + SLIDING_WINDOW + SOFTCAPPING,
                 COMMON_TENSORS + SANDWICH_NORMS, norm_plus_one=True, tie_default=True),
    Architecture("gemma3", "Gemma3ForCausalLM", "gemma3_text", COMMON_CONFIG + SLIDING_WINDOW + LOCAL_ROPE_BASE,
                 COMMON_TENSORS + SANDWICH_NORMS + QK_NORM, norm_plus_one=True, tie_default=True),
    Architecture("phi3", "Phi3ForCausalLM", "phi3", COMMON_CONFIG + SLIDING_WINDOW,
                 COMMON_TENSORS[:4] + (
                     (LAYER + "self_attn.qkv_proj.weight", "blk.{N}.attn_qkv.weight"),
                     (LAYER + "self_attn.o_proj.weight", "blk.{N}.attn_output.weight"),
                     # llama.cpp keeps the fused gate and up projection as ffn_up.
                     (LAYER + "mlp.gate_up_proj.weight", "blk.{N}.ffn_up.weight"),
                     (LAYER + "mlp.down_proj.weight", "blk.{N}.ffn_down.weight"),
                 ) + PRE_FFN_NORM),
)


def architecture(*, gguf_name=None, hf_class=None) -> Architecture:
    for arch in ARCHITECTURES:
        if gguf_name is not None and arch.gguf_name == gguf_name:
            return arch
        if hf_class is not None and arch.hf_class == hf_class:
            return arch
    known = ", ".join(a.gguf_name if gguf_name is not None else a.hf_class for a in ARCHITECTURES)
    raise ValueError("unknown architecture %r (known: %s)" % (gguf_name or hf_class, known))


def _rename(name: str, table, src: int, dst: int) -> Optional[str]:
    """`name` in the other form's naming (column src -> dst), or None."""
    for row in table:
        pattern = row[src]
        if "{N}" not in pattern:
            if name == pattern:
                return row[dst]
            continue
        head, tail = pattern.split("{N}")
        middle = name[len(head):len(name) - len(tail)] if name.startswith(head) and name.endswith(tail) else ""
        if middle.isdigit():
            return row[dst].replace("{N}", middle)
    return None


# --- values that llama.cpp's converter changes --------------------------------

def _permute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """HF rows (halves RoPE) -> llama.cpp rows (adjacent pairs), per head."""
    return w.reshape(n_heads, 2, w.shape[0] // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    return w.reshape(n_heads, w.shape[0] // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _adjust(arch: Architecture, hf_name: str, w: np.ndarray, heads: Tuple[int, int], to_gguf: bool) -> np.ndarray:
    if arch.permute_qk and hf_name.endswith(("q_proj.weight", "k_proj.weight")):
        n = heads[0] if hf_name.endswith("q_proj.weight") else heads[1]
        return _permute_qk(w, n) if to_gguf else _unpermute_qk(w, n)
    if arch.norm_plus_one and hf_name.endswith("norm.weight"):
        return w + 1.0 if to_gguf else w - 1.0
    return w


# --- dtypes -------------------------------------------------------------------

def _to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _from_bf16_bits(u: np.ndarray) -> np.ndarray:
    return (u.astype(np.uint32) << 16).view(np.float32)


# safetensors dtype name -> (numpy storage dtype, to float32, from float32)
SAFETENSORS_DTYPES = {
    "F32": (np.float32, lambda a: a, lambda a: a.astype(np.float32)),
    "F16": (np.float16, lambda a: a.astype(np.float32), lambda a: a.astype(np.float16)),
    "BF16": (np.uint16, _from_bf16_bits, _to_bf16_bits),
}
# --dtype -> (safetensors dtype, GGUF type)
DTYPES = {
    "f32": ("F32", gguf.GGMLQuantizationType.F32),
    "f16": ("F16", gguf.GGMLQuantizationType.F16),
    "bf16": ("BF16", gguf.GGMLQuantizationType.BF16),
}
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


# --- safetensors --------------------------------------------------------------

def write_safetensors(path: str, tensors: Dict[str, Tuple[str, np.ndarray]], metadata=None) -> None:
    """tensors: name -> (safetensors dtype, array already in that storage)."""
    header, offset = {}, 0
    for name, (dtype, array) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    header["__metadata__"] = metadata or {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, array in tensors.values():
            f.write(np.ascontiguousarray(array).tobytes())


def read_safetensors(path: str) -> Dict[str, Tuple[str, np.ndarray]]:
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        storage = SAFETENSORS_DTYPES[info["dtype"]][0]
        out[name] = (info["dtype"], np.frombuffer(raw, storage, (end - begin) // np.dtype(storage).itemsize,
                                                  8 + n + begin).reshape(info["shape"]))
    return out


def read_hf_tensors(model_dir: str) -> Dict[str, np.ndarray]:
    """Every tensor of a directory (single file or sharded), as float32."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for name in files:
        for tensor, (dtype, array) in read_safetensors(os.path.join(model_dir, name)).items():
            out[tensor] = SAFETENSORS_DTYPES[dtype][1](array)
    return out


# --- tokenizer ----------------------------------------------------------------

def _byte_level(use_regex: bool) -> dict:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def _split(pattern: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# tokenizer.ggml.pre -> (normalizer, pre_tokenizer, ignore_merges) of the
# tokenizer.json that splits the same way (as the models' own files have them).
PRE_TOKENIZERS = {
    "default": (None, _byte_level(True), False),
    "gpt-2": (None, _byte_level(True), False),
    "smollm": (None, {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                            _byte_level(True)]}, False),
    "llama-bpe": (None, {"type": "Sequence", "pretokenizers": [_split(LLAMA3_REGEX), _byte_level(False)]}, True),
    "qwen2": ({"type": "NFC"}, {"type": "Sequence", "pretokenizers": [_split(QWEN2_REGEX), _byte_level(False)]}, False),
}

CONTROL, USER_DEFINED = 3, 4  # llama.cpp token types
GEMMA_ARCHITECTURES = ("gemma", "gemma2", "gemma3")



def tokenizer_json(tokens: List[str], types: List[int], merges: List[str], pre: str) -> dict:
    if pre not in PRE_TOKENIZERS:
        raise ValueError("tokenizer.ggml.pre %r has no tokenizer.json form here (known: %s)"
                         % (pre, ", ".join(PRE_TOKENIZERS)))
    normalizer, pre_tokenizer, ignore_merges = PRE_TOKENIZERS[pre]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": types[i] != CONTROL, "special": types[i] == CONTROL}
             for i, t in enumerate(tokens) if types[i] in (CONTROL, USER_DEFINED)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }


def _gemma_vocabulary(tokens: List[str]) -> List[str]:
    """Gemma GGUFs store a token of two or more spaces as spaces, while the
    tokenizer.json model looks it up as U+2581s (its normalizer turns every
    space into one), so those tokens are respelled."""
    return ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]


def _merges_from_vocabulary(vocab_tokens: List[str]) -> List[List[str]]:
    """SentencePiece GGUFs list no merges, so they are recovered from the
    vocabulary as transformers does: every cut of a token into two tokens is a
    merge. A Gemma file's scores do not follow its merge order, its token
    order does: merges rank by the merged token's id (the last one, for a
    spelling that occurs twice), then the longer left half first; one token's
    cuts that tie keep the order of their halves' ids."""
    vocab = {t: i for i, t in enumerate(vocab_tokens)}
    merges = []
    for merged, rank in vocab.items():
        cuts = [(vocab[merged[:k]], vocab[merged[k:]], merged[:k], merged[k:]) for k in range(1, len(merged))
                if merged[:k] in vocab and merged[k:] in vocab]
        cuts.sort()
        merges.extend((rank, -len(left), -len(right), left, right) for _, _, left, right in cuts)
    merges.sort(key=lambda m: m[:3])  # stable: equal keys stay in their cuts' order
    return [[left, right] for _, _, _, left, right in merges]


def gemma_tokenizer_json(tokens: List[str], types: List[int], bos: int, merges: Optional[List[str]] = None) -> dict:
    """A Gemma SentencePiece vocabulary (tokenizer.ggml.model "llama") as the
    tokenizer.json transformers exports from the GGUF (GemmaTokenizer): BPE
    over characters with byte fallback, spaces normalized to U+2581, no
    space prefix, BOS added by the post-processor; control tokens are
    special added tokens, user-defined ones plain added tokens. ``merges``
    ("a b", a Gemma 4 GGUF's own) replace the ones recovered from the
    vocabulary."""
    vocab_tokens = _gemma_vocabulary(tokens)
    vocab = {t: i for i, t in enumerate(vocab_tokens)}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": types[i] == CONTROL}
             for i, t in enumerate(tokens)
             if types[i] == CONTROL or (types[i] == USER_DEFINED and t in vocab)]
    bos_text = tokens[bos]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                          "invert": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos_text, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos_text, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos_text, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos_text: {"id": bos_text, "ids": [bos], "tokens": [bos_text]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": ([m.split(" ", 1) for m in merges] if merges is not None
                                             else _merges_from_vocabulary(vocab_tokens))},
    }


def tokenizer_from_json(doc: dict) -> Tuple[List[str], List[int], List[str], str]:
    """tokenizer.json -> (tokens by id, llama.cpp token types, merges "a b", pre name)."""
    model = doc["model"]
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        raise ValueError("only byte-level BPE tokenizer.json files convert to GGUF here")
    found = (doc.get("normalizer"), doc.get("pre_tokenizer"), bool(model.get("ignore_merges")))
    pre = next((name for name, form in PRE_TOKENIZERS.items() if form == found), None)
    if pre is None:
        raise ValueError("the tokenizer.json pre_tokenizer matches no tokenizer.ggml.pre known here")
    size = max(list(model["vocab"].values()) + [t["id"] for t in doc["added_tokens"]]) + 1
    tokens, types = ["[PAD%d]" % i for i in range(size)], [USER_DEFINED] * size
    for text, i in model["vocab"].items():
        tokens[i], types[i] = text, 1
    for t in doc["added_tokens"]:
        tokens[t["id"]], types[t["id"]] = t["content"], CONTROL if t["special"] else USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, types, merges, pre


# --- GGUF -> HF ----------------------------------------------------------------

def _field(reader: gguf.GGUFReader, key: str, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    return field.contents()


def gguf_to_hf(gguf_path: str, out_dir: str, dtype: str = "bf16") -> None:
    reader = gguf.GGUFReader(gguf_path)
    name = _field(reader, "general.architecture")
    arch = architecture(gguf_name=name)
    if name == "llama" and _field(reader, "llama.attention.sliding_window") is not None:
        # Both Llama and Mistral checkpoints become llama.cpp's "llama"; only
        # Mistral has a sliding window, which LlamaForCausalLM would drop.
        arch = architecture(hf_class="MistralForCausalLM")
    a = arch.gguf_name + "."
    config = {"architectures": [arch.hf_class], "model_type": arch.model_type}
    for hf_key, suffix, kind in arch.config:
        value = _field(reader, a + suffix)
        if value is not None:
            config[hf_key] = kind(value)
    _rope_from_gguf(reader, a, config)
    tokens = _field(reader, "tokenizer.ggml.tokens")
    config.setdefault("vocab_size", len(tokens))
    config.setdefault("num_key_value_heads", config["num_attention_heads"])
    heads = (config["num_attention_heads"], config["num_key_value_heads"])
    names = {t.name for t in reader.tensors}
    config["tie_word_embeddings"] = "output.weight" not in names
    st_dtype = DTYPES[dtype][0]
    config["torch_dtype"] = TORCH_DTYPE[st_dtype]

    tensors = {}
    for t in reader.tensors:
        if t.name in ROPE_TENSORS:
            continue
        hf_name = _rename(t.name, arch.tensors, 1, 0)
        if hf_name is None:
            raise ValueError("GGUF tensor %r has no Hugging Face name for %s" % (t.name, arch.gguf_name))
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w = _adjust(arch, hf_name, w.reshape([int(d) for d in reversed(t.shape)]), heads, to_gguf=False)
        tensors[hf_name] = (st_dtype, SAFETENSORS_DTYPES[st_dtype][2](w))

    bos, eos = _field(reader, "tokenizer.ggml.bos_token_id"), _field(reader, "tokenizer.ggml.eos_token_id")
    config["bos_token_id"], config["eos_token_id"] = bos, eos
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    types = list(_field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    vocabulary = _field(reader, "tokenizer.ggml.model", "gpt2")
    if vocabulary == "gpt2":
        doc = tokenizer_json(tokens, types, _field(reader, "tokenizer.ggml.merges"),
                             _field(reader, "tokenizer.ggml.pre", "default"))
    elif vocabulary == "llama" and name in GEMMA_ARCHITECTURES:
        doc = gemma_tokenizer_json(tokens, types, bos)
    else:
        raise ValueError("a %r vocabulary of a %r model has no tokenizer.json form here" % (vocabulary, name))
    tok_config = {
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
        "add_eos_token": bool(_field(reader, "tokenizer.ggml.add_eos_token", False)),
        "bos_token": tokens[bos] if bos is not None else None,
        "eos_token": tokens[eos] if eos is not None else None,
        "tokenizer_class": "GemmaTokenizer" if vocabulary == "llama" else "PreTrainedTokenizerFast",
    }
    template = _field(reader, "tokenizer.chat_template")
    if template is not None:
        tok_config["chat_template"] = template
    write_json(out_dir, "config.json", config)
    write_json(out_dir, "tokenizer.json", doc)
    write_json(out_dir, "tokenizer_config.json", tok_config)
    write_json(out_dir, "generation_config.json", {"bos_token_id": bos, "eos_token_id": eos})


def write_json(out_dir: str, name: str, doc: dict) -> None:
    with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


def read_json(model_dir: str, name: str, default=None):
    path = os.path.join(model_dir, name)
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# --- RoPE scaling and the attention scale ---------------------------------------

def _rope_kind(scaling: dict) -> str:
    return scaling.get("rope_type", scaling.get("type", "default"))


def _head_size(config: dict) -> int:
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def llama3_rope_factors(config: dict, scaling: dict) -> np.ndarray:
    """The per-pair frequency divisors of "llama3" RoPE scaling, as llama.cpp's
    converter writes them to rope_freqs.weight (its defaults included)."""
    dim = int(_head_size(config) * config.get("partial_rotary_factor", 1.0))
    factor = scaling.get("factor", 8.0)
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    original = scaling.get("original_max_position_embeddings", 8192)
    wavelen = 2 * np.pi * config.get("rope_theta", 10000.0) ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    smooth = (original / wavelen - low) / (high - low)
    blended = 1.0 / ((1.0 - smooth) / factor + smooth)
    out = np.where(wavelen < original / high, 1.0, np.where(wavelen > original / low, factor, blended))
    return out.astype(np.float32)


def _longrope_original(config: dict, scaling: dict) -> int:
    # transformers takes the top-level key over rope_scaling's, and
    # max_position_embeddings where neither is given.
    return int(config.get("original_max_position_embeddings") or scaling.get("original_max_position_embeddings")
               or config["max_position_embeddings"])


def longrope_attention_factor(config: dict, scaling: dict) -> float:
    """transformers' LongRoPE attention factor (cos and sin are scaled by it)."""
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])
    original = _longrope_original(config, scaling)
    factor = scaling.get("factor") or config["max_position_embeddings"] / original
    return 1.0 if factor <= 1.0 else float(np.sqrt(1.0 + np.log(factor) / np.log(original)))


def _yarn_mscale(scaling: dict) -> float:
    """YaRN's default attention factor, 1 + 0.1 ln(factor)."""
    return 1.0 + 0.1 * float(np.log(scaling["factor"]))


def older_rope_layout(config: dict) -> dict:
    """``config`` in the layout transformers wrote before version 5, which
    this converter reads: transformers 5 writes ``rope_parameters`` (one dict,
    or one per layer type: Gemma 3's full_attention and sliding_attention)
    instead of the top-level rope_theta, partial_rotary_factor, rope_scaling
    and Gemma 3's rope_local_base_freq."""
    config = dict(config)
    rope = config.pop("rope_parameters", None) or {}
    sliding = rope.get("sliding_attention")
    rope = dict(rope.get("full_attention", rope))
    if sliding and sliding.get("rope_theta") is not None:
        config.setdefault("rope_local_base_freq", sliding["rope_theta"])
    for key in ("rope_theta", "partial_rotary_factor"):
        if rope.get(key) is not None:
            config.setdefault(key, rope.pop(key))
    if rope.get("rope_type", "default") != "default" and not config.get("rope_scaling"):
        config["rope_scaling"] = rope
    return config


def _rope_to_gguf(writer: gguf.GGUFWriter, a: str, config: dict) -> None:
    scaling = config.get("rope_scaling") or {}
    kind = _rope_kind(scaling)
    if kind == "yarn":
        writer.add_string(a + "rope.scaling.type", "yarn")
        for hf_key, suffix, value_type in YARN_SCALING:
            if scaling.get(hf_key) is not None:
                (writer.add_uint32 if value_type is int else writer.add_float32)(a + suffix, value_type(scaling[hf_key]))
        if scaling.get("attention_factor") is not None:  # it replaces YaRN's mscale, which llama.cpp multiplies by
            writer.add_float32(a + "rope.scaling.attn_factor", scaling["attention_factor"] / _yarn_mscale(scaling))
    elif kind == "linear":
        writer.add_string(a + "rope.scaling.type", "linear")
        writer.add_float32(a + "rope.scaling.factor", float(scaling["factor"]))
    elif kind == "llama3":
        writer.add_tensor("rope_freqs.weight", llama3_rope_factors(config, scaling))
        writer.add_string(HF_ROPE_SCALING_KEY, json.dumps(scaling))
    elif kind in ("longrope", "su"):
        writer.add_uint32(a + "rope.scaling.original_context_length", _longrope_original(config, scaling))
        writer.add_float32(a + "rope.scaling.attn_factor", longrope_attention_factor(config, scaling))
        writer.add_tensor("rope_factors_long.weight", np.asarray(scaling["long_factor"], dtype=np.float32))
        writer.add_tensor("rope_factors_short.weight", np.asarray(scaling["short_factor"], dtype=np.float32))
    elif kind != "default":
        raise ValueError("rope_scaling type %r has no GGUF form here" % kind)
    scalar = config.get("query_pre_attn_scalar")
    if scalar is not None and scalar != _head_size(config):
        writer.add_float32(a + "attention.scale", float(scalar) ** -0.5)


def _rope_from_gguf(reader: gguf.GGUFReader, a: str, config: dict) -> None:
    tensors = {t.name: t for t in reader.tensors if t.name in ROPE_TENSORS}
    if _field(reader, a + "rope.scaling.type") == "yarn":
        config["rope_scaling"] = {"rope_type": "yarn"}
        for hf_key, suffix, kind in YARN_SCALING:
            value = _field(reader, a + suffix)
            if value is not None:
                config["rope_scaling"][hf_key] = kind(value)
        attn_factor = _field(reader, a + "rope.scaling.attn_factor")
        if attn_factor is not None:
            config["rope_scaling"]["attention_factor"] = float(attn_factor) * _yarn_mscale(config["rope_scaling"])
    if _field(reader, a + "rope.scaling.type") == "linear":
        config["rope_scaling"] = {"rope_type": "linear", "factor": float(_field(reader, a + "rope.scaling.factor"))}
    if "rope_freqs.weight" in tensors:
        saved = _field(reader, HF_ROPE_SCALING_KEY)
        if saved is None:
            raise ValueError("rope_freqs.weight without the llama3 rope_scaling it was computed from")
        config["rope_scaling"] = json.loads(saved)
    if "rope_factors_long.weight" in tensors:
        config["original_max_position_embeddings"] = int(_field(reader, a + "rope.scaling.original_context_length"))
        config["rope_scaling"] = scaling = {
            "rope_type": "longrope",
            "long_factor": [float(f) for f in tensors["rope_factors_long.weight"].data],
            "short_factor": [float(f) for f in tensors["rope_factors_short.weight"].data],
        }
        # Only an attention factor that is not transformers' default is written.
        attention = float(_field(reader, a + "rope.scaling.attn_factor", 1.0))
        if not np.isclose(attention, longrope_attention_factor(config, scaling), rtol=1e-6):
            scaling["attention_factor"] = attention
    scale = _field(reader, a + "attention.scale")
    if scale is not None:
        config["query_pre_attn_scalar"] = float(scale) ** -2


# --- HF -> GGUF ----------------------------------------------------------------

def hf_to_gguf(model_dir: str, gguf_path: str, dtype: str = "f16") -> None:
    config = older_rope_layout(read_json(model_dir, "config.json"))
    arch = architecture(hf_class=config["architectures"][0])
    writer = gguf.GGUFWriter(gguf_path, arch.gguf_name)
    a = arch.gguf_name + "."
    for hf_key, suffix, kind in arch.config:
        if config.get(hf_key) is not None:
            (writer.add_uint32 if kind is int else writer.add_float32)(a + suffix, kind(config[hf_key]))
    if config.get("head_dim") is not None:
        writer.add_uint32(a + "attention.value_length", int(config["head_dim"]))
    _rope_to_gguf(writer, a, config)
    heads = (config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"])

    gguf_type = DTYPES[dtype][1]
    tied = config.get("tie_word_embeddings", arch.tie_default)
    for hf_name, w in read_hf_tensors(model_dir).items():
        if tied and hf_name == "lm_head.weight":
            continue
        name = _rename(hf_name, arch.tensors, 0, 1)
        if name is None:
            raise ValueError("tensor %r has no GGUF name for %s" % (hf_name, arch.hf_class))
        w = _adjust(arch, hf_name, w, heads, to_gguf=True)
        if w.ndim == 1:  # llama.cpp keeps vectors in float32
            writer.add_tensor(name, w.astype(np.float32))
        elif gguf_type == gguf.GGMLQuantizationType.BF16:
            writer.add_tensor(name, _to_bf16_bits(w), raw_dtype=gguf_type)
        else:
            writer.add_tensor(name, w.astype(np.float16 if gguf_type == gguf.GGMLQuantizationType.F16 else np.float32))

    tokens, types, merges, pre = tokenizer_from_json(read_json(model_dir, "tokenizer.json"))
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", pre)
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.token_type", types)
    writer.add_array("tokenizer.ggml.merges", merges)
    tok_config = read_json(model_dir, "tokenizer_config.json", {})
    ids = {t: i for i, t in enumerate(tokens)}
    for key, gguf_key in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id")):
        text = tok_config.get(key)
        text = text.get("content") if isinstance(text, dict) else text
        if text in ids:
            writer.add_uint32("tokenizer.ggml." + gguf_key, ids[text])
    for key in ("add_bos_token", "add_eos_token"):
        if key in tok_config:
            writer.add_bool("tokenizer.ggml." + key, bool(tok_config[key]))
    template_file = os.path.join(model_dir, "chat_template.jinja")
    if os.path.exists(template_file):
        with open(template_file, encoding="utf-8") as f:
            writer.add_string("tokenizer.chat_template", f.read())
    elif isinstance(tok_config.get("chat_template"), str):
        writer.add_string("tokenizer.chat_template", tok_config["chat_template"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# --- a cache for the test set-up -------------------------------------------------

#: Bump when the conversion's output changes, so stale caches are not reused.
CONVERTER_VERSION = 1
CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "vllm-cpp-test")


def content_key(source: str) -> str:
    """A digest of `source`'s bytes (a file, or a directory's files and
    their names). Not its mtime: each fresh install of the bundled model
    has a new one, and a cache keyed by it grew by a conversion per test
    run (15 GB on a development machine)."""
    digest = hashlib.blake2b(digest_size=8)
    if os.path.isdir(source):
        paths = sorted(os.path.join(source, n) for n in os.listdir(source))
        paths = [p for p in paths if os.path.isfile(p)]
    else:
        paths = [source]
    for path in paths:
        digest.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def cached(source: str, direction: str, dtype: str) -> str:
    """The conversion of `source` ("to-hf" or "to-gguf"), made once and kept
    in CACHE_DIR (keyed by the source's name and content_key)."""
    stem = os.path.basename(os.path.normpath(source)).rsplit(".gguf", 1)[0]
    name = "%s-%s-%s-v%d" % (stem, dtype, content_key(source), CONVERTER_VERSION)
    target = os.path.join(CACHE_DIR, name if direction == "to-hf" else name + ".gguf")
    if os.path.exists(target):
        return target
    os.makedirs(CACHE_DIR, exist_ok=True)
    partial = "%s.partial-%d" % (target, os.getpid())
    (gguf_to_hf if direction == "to-hf" else hf_to_gguf)(source, partial, dtype)
    try:
        os.replace(partial, target)  # whole or absent, even with concurrent runs
    except OSError:
        if not os.path.exists(target):  # not a concurrent run that finished first
            raise
        shutil.rmtree(partial, ignore_errors=True)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("direction", choices=("to-hf", "to-gguf"))
    parser.add_argument("source")
    parser.add_argument("destination")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=None)
    args = parser.parse_args(argv)
    if args.direction == "to-hf":
        gguf_to_hf(args.source, args.destination, args.dtype or "bf16")
    else:
        hf_to_gguf(args.source, args.destination, args.dtype or "f16")
    return 0


if __name__ == "__main__":
    sys.exit(main())
