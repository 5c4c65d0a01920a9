"""PEFT LoRA adapter directories written and read without torch or the
safetensors package (a safetensors file is an 8-byte header length, a JSON
header, then the tensors' bytes): variants of the committed golden adapters
and random adapters for a model's shapes, for the LoRA tests."""

import json
import pathlib
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    """{name: float32 array} of a F32/F16/BF16 safetensors file."""
    data = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        if info["dtype"] == "BF16":
            values = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, _DTYPES[info["dtype"]]).astype(np.float32)
        out[name] = values.reshape(info["shape"])
    return out


def write_safetensors(path, tensors):
    """Writes {name: array} as F32 safetensors."""
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def write_adapter(directory, tensors, **config):
    """A PEFT directory: adapter_config.json (r, lora_alpha, target_modules
    and `config`'s keys over PEFT's defaults) and adapter_model.safetensors."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "use_rslora": False, "bias": "none",
           "modules_to_save": None, "use_dora": False, "fan_in_fan_out": False, "rank_pattern": {},
           "alpha_pattern": {}, "target_modules": sorted({name.split(".")[-3] for name in tensors})}
    doc.update(config)
    (directory / "adapter_config.json").write_text(json.dumps(doc))
    write_safetensors(directory / "adapter_model.safetensors", tensors)
    return directory


def scaled_variant(source_dir, directory, factor):
    """``source_dir``'s adapter with every B matrix times ``factor`` (another
    adapter of the same shapes, whose outputs differ)."""
    source_dir = pathlib.Path(source_dir)
    tensors = read_safetensors(source_dir / "adapter_model.safetensors")
    tensors = {k: v * factor if ".lora_B." in k else v for k, v in tensors.items()}
    config = json.loads((source_dir / "adapter_config.json").read_text())
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "adapter_config.json").write_text(json.dumps(config))
    write_safetensors(directory / "adapter_model.safetensors", tensors)
    return directory


def random_adapter(directory, layers, hidden, q_rows, rank=8, seed=0, modules=("q_proj",)):
    """A random adapter on ``modules`` (square or q-shaped attention
    projections) of ``layers`` for a model of width ``hidden``."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in layers:
        for module in modules:
            rows = q_rows if module == "q_proj" else hidden
            stem = f"base_model.model.model.layers.{layer}.self_attn.{module}"
            tensors[f"{stem}.lora_A.weight"] = rng.standard_normal((rank, hidden)) / np.sqrt(hidden)
            tensors[f"{stem}.lora_B.weight"] = rng.standard_normal((rows, rank)) / np.sqrt(rank)
    return write_adapter(directory, tensors, r=rank, lora_alpha=2 * rank)
