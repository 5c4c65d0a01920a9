"""A GGUF copied with edits (metadata set, a tensor left out, tensors added,
layers repeated): the bad-model tests' files (test_arch_goldens,
test_embed_goldens)."""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "golden"))
import gemma3_file  # noqa: E402


def rewritten(source, target, set_values=(), drop_tensor=None, add_tensors=(), layers=None):
    """A copy of GGUF ``source`` with metadata keys set (int32, float32 or
    string by the value's type, a list an array; None leaves the key out), one tensor left out and float32 tensors
    added (a dropped tensor can be added back with other values). With
    ``layers``, the model has that many blocks, block i a copy of block
    i mod the source's count."""
    import gguf

    reader = gguf.GGUFReader(str(source))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(target), arch)
    overrides = dict(set_values)
    if layers is not None:
        source_layers = int(reader.fields[f"{arch}.block_count"].contents())
        overrides[f"{arch}.block_count"] = layers
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in overrides:
            continue
        gemma3_file.copy_field(writer, field)
    for key, value in overrides.items():
        if value is None:
            continue
        add = {int: writer.add_int32, float: writer.add_float32, str: writer.add_string,
               list: writer.add_array}[type(value)]
        add(key, value)
    for t in reader.tensors:
        if t.name == drop_tensor:
            continue
        copies = [t.name]
        if layers is not None and t.name.startswith("blk."):
            block, rest = t.name[4:].split(".", 1)
            copies = [f"blk.{i}.{rest}" for i in range(int(block), layers, source_layers)]
        for name in copies:
            writer.add_tensor(name, np.asarray(t.data), raw_dtype=t.tensor_type)
    for name, values in dict(add_tensors).items():
        writer.add_tensor(name, np.asarray(values, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target
