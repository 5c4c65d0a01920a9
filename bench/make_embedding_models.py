"""Random-weight embedding models of real shapes for bench/bench_embeddings.py:
a bge-small-en-v1.5-shaped BERT (CLS pooling) and a Qwen3-Embedding-0.6B-shaped
decoder (last-token pooling), each as a sentence-transformers directory (for
sentence-transformers) and as a GGUF written by **llama.cpp's own converter**
from that directory (for llama.cpp and vllm-cpp, the same file).

transformers builds each model from a config of the real dimensions (its own
random initialisation, float16 on disk); ``modules.json`` / ``1_Pooling`` /
``2_Normalize`` make it a sentence-transformers model as the published ones are
(tests/golden/make_embed_goldens.py's writer), and the converter reads them into
``<arch>.pooling_type``. Tokenizers: BERT gets the goldens' small WordPiece
vocabulary padded with ``[unusedN]`` tokens to bge's 30522 rows; the decoder
gets the goldens' tiny byte-level BPE, padded by the converter to
Qwen3-Embedding's 151669 rows (the embedding matrix has its real size; the
texts tokenize to more tokens than with the real vocabulary, and the benchmark
reports tokens/s beside texts/s for that reason).

Needs torch, transformers 5 and sentence-transformers (the reference
environment, not the project's):

    python bench/make_embedding_models.py [--shapes bge-small,qwen3-embedding-0.6b] [--types f16,q8_0]

Files go to ``~/.cache/vllm-cpp-bench/embed/`` (``--dir``): ``<shape>.hf/`` and
``<shape>-random-<type>.gguf``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "golden"))
import make_sized_ggufs  # noqa: E402

#: shape -> (transformers config class, its arguments, sentence-transformers pooling).
SHAPES = {
    # BAAI/bge-small-en-v1.5's config.json.
    "bge-small": ("BertConfig", dict(vocab_size=30522, hidden_size=384, num_hidden_layers=12, num_attention_heads=12,
                                     intermediate_size=1536, max_position_embeddings=512, type_vocab_size=2,
                                     layer_norm_eps=1e-12, hidden_act="gelu", pad_token_id=0), "CLS"),
    # Qwen/Qwen3-Embedding-0.6B's config.json.
    "qwen3-embedding-0.6b": ("Qwen3Config", dict(
        vocab_size=151669, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, intermediate_size=3072, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_parameters=dict(rope_type="default", rope_theta=1000000.0), tie_word_embeddings=True,
        hidden_act="silu"), "LAST"),
}


def default_dir():
    return make_sized_ggufs.default_dir() / "embed"


def hf_path(directory, shape):
    return pathlib.Path(directory) / f"{shape}.hf"


def gguf_path(directory, shape, kind):
    return pathlib.Path(directory) / f"{shape}-random-{kind}.gguf"


def write_hf(shape, out):
    """transformers' random model of `shape` as a sentence-transformers directory."""
    import make_embed_goldens
    import make_moe_goldens
    import torch
    import transformers

    class_name, arguments, pooling = SHAPES[shape]
    config = getattr(transformers, class_name)(**arguments)
    torch.manual_seed(make_sized_ggufs.SEED)
    tmp = out.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    if class_name == "BertConfig":
        model = transformers.BertModel(config).to(torch.float16)
        model.save_pretrained(tmp, safe_serialization=True)
        vocab = list(make_embed_goldens.BERT_VOCAB)
        vocab += [f"[unused{i}]" for i in range(config.vocab_size - len(vocab))]
        transformers.BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True).save_pretrained(tmp)
    else:
        config.architectures = ["Qwen3ForCausalLM"]
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float16)
        model.save_pretrained(tmp, safe_serialization=True)
        make_moe_goldens.save_tokenizer(tmp)
        with_padding(tmp / "tokenizer_config.json")
    del model
    make_embed_goldens.write_sentence_transformers(tmp, pooling, config.hidden_size)
    tmp.rename(out)


def with_padding(tokenizer_config):
    """Qwen3-Embedding's padding (sentence-transformers pads a batch): on the
    left, with <|endoftext|>, as its tokenizer_config.json says."""
    import json

    doc = json.loads(tokenizer_config.read_text())
    doc.update(pad_token="<|endoftext|>", padding_side="left")
    tokenizer_config.write_text(json.dumps(doc))


def make(shape, kinds, directory, threads, log=print):
    import make_moe_goldens

    directory.mkdir(parents=True, exist_ok=True)
    hf = hf_path(directory, shape)
    if not hf.exists():
        start = time.perf_counter()
        write_hf(shape, hf)
        log(f"wrote {hf} in {time.perf_counter() - start:.0f} s")
    paths = {"hf": hf}
    f16 = gguf_path(directory, shape, "f16")
    for kind in kinds:
        path = paths[kind] = gguf_path(directory, shape, kind)
        if path.exists():
            continue
        start = time.perf_counter()
        if kind == "f16" or not f16.exists():
            partial = f16.with_suffix(".partial")
            make_moe_goldens.convert(hf, partial, make_moe_goldens.llama_cpp_dir())
            partial.rename(f16)
        if kind != "f16":
            make_sized_ggufs.quantize(f16, path, kind, threads)
        log(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - start:.0f} s")
    if "f16" not in kinds and f16.exists():
        f16.unlink()
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--types", default="f16", help=f"comma-separated, of: f16, {', '.join(make_sized_ggufs.QUANT_TYPES)}")
    parser.add_argument("--dir", type=pathlib.Path, default=default_dir())
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    kinds = [k for k in args.types.split(",") if k]
    for kind in kinds:
        if kind != "f16" and kind not in make_sized_ggufs.QUANT_TYPES:
            parser.error(f"unknown type {kind!r}")
    for name in args.shapes.split(","):
        if name not in SHAPES:
            parser.error(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
        for kind, path in make(name, kinds, args.dir, args.threads).items():
            print(f"{name} {kind}: {path}")


if __name__ == "__main__":
    sys.exit(main())
