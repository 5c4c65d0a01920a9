"""Regenerate the Gemma 3 vision goldens under tests/golden/tiny_vision/ (issue 46).

What this script does
---------------------
1. Builds a tiny ``Gemma3ForConditionalGeneration`` with transformers from a
   ``Gemma3Config`` (a 6-layer Gemma 3 text model of width 64, a 2-layer
   SigLIP vision tower of width 32 over 64x64 images in 8x8 patches, 16 soft
   tokens per image: the projector average-pools the 8x8 patch grid 2x2),
   torch seed 0, float32, eager attention, every weight redrawn
   (make_arch_goldens._randomize's scales) and rounded to float16.
2. Saves it as a Hugging Face directory ``gemma3-vision.hf/`` (float16
   safetensors, a tiny Gemma vocabulary with Gemma 3's turn and image tokens
   as tokenizer.json, the Gemma 3 chat template: tiny_vision/
   gemma3_chat_template.jinja, the chat template of Hugging Face google/gemma-3
   models as transformers' tests/models/gemma3/test_processing_gemma3.py
   carries it; preprocessor_config.json and processor_config.json).
3. Converts it with **llama.cpp's own converter** twice: the text model
   (``gemma3-vision.gguf``) and, with ``--mmproj``, the vision tower and
   projector (``mmproj-gemma3-vision.gguf``).
4. Records (``gemma3-vision.json``): for each of ``IMAGES`` (seeded
   synthetic RGB images of several sizes, saved as ``gemma3-vision_image_<name>.npy``,
   [height, width, 3] uint8) the processor's ``pixel_values``
   (``gemma3-vision_pixels.npy``, [images, 3, 64, 64]); for each of
   ``PROMPTS`` (text with ``<start_of_image>`` markers and the images it
   takes) the processor's ``input_ids`` (the placeholder layout), the
   ``token_type_ids``, transformers' 8 greedy ids (``generate``,
   do_sample False) and the float32 logits of every position of the prompt
   + its greedy ids, teacher-forced (``gemma3-vision_logits_<i>.npy``); and
   the chat template's render of ``CHAT`` (one image part) through the
   processor (tokenized without added special tokens, as vLLM tokenizes a
   rendered chat).
5. llama.cpp's multimodal path (llama-cpp-python's Llava15ChatHandler over
   the mmproj) is tried on the GGUF pair; what it gave, or why it did not
   run, is recorded as ``llama_cpp``.

How to regenerate
-----------------
From the repository root, with the reference venv (torch CPU, transformers
5.25.0, Pillow, numpy, gguf, llama-cpp-python 0.3.36 and its sdist)::

    python tests/golden/make_gemma3_vision_goldens.py [--llama-cpp DIR]

About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import hf_convert  # noqa: E402
import make_arch_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_vision"
CASE = "gemma3-vision"
N_NEW = 8

PAD, EOS, BOS, UNK = 0, 1, 2, 3
SPECIALS = ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
_WORDS = ["▁t", "he", "▁the", "▁a", "in", "er", "on", "▁of", "▁and", "▁to", "▁is", "ing", "at", "en", "or", "▁w",
          "▁s", "an", "▁c", "it"]


def _vocabulary():
    """(tokens, llama.cpp token types): Gemma's four specials, the byte
    tokens, "▁", a-z, _WORDS, then Gemma 3's turn and image tokens (control)."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + ["<0x%02X>" % b for b in range(256)]
    types = [3, 3, 3, 2] + [6] * 256
    for t in ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + _WORDS:
        tokens.append(t)
        types.append(1)
    for t in SPECIALS:
        tokens.append(t)
        types.append(3)
    return tokens, types


TOKENS, TYPES = _vocabulary()
VOCAB = len(TOKENS)
BOI, EOI, IMAGE = (TOKENS.index(t) for t in ("<start_of_image>", "<end_of_image>", "<image_soft_token>"))
IMAGE_SIZE, PATCH, SOFT_TOKENS = 64, 8, 16

# Six layers: Gemma 3's pattern (five sliding, then one full, each kind its own RoPE base), as
# llama.cpp's gemma3 reads it whatever layer_types says.
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16, sliding_window=512,
            max_position_embeddings=512, rms_norm_eps=1e-6,
            pad_token_id=PAD, eos_token_id=EOS, bos_token_id=BOS)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=IMAGE_SIZE,
              patch_size=PATCH, layer_norm_eps=1e-6, vision_use_head=False)
CONFIG = dict(mm_tokens_per_image=SOFT_TOKENS, boi_token_index=BOI, eoi_token_index=EOI, image_token_index=IMAGE)

#: name -> (width, height, seed): seeded RGB noise over a gradient.
IMAGES = {"square": (64, 64, 1), "wide": (97, 41, 2), "tall": (30, 75, 3), "large": (300, 200, 4)}
#: (text with <start_of_image> markers, the images in order)
PROMPTS = [
    ("Describe <start_of_image> in a word.", ["square"]),
    ("<start_of_image>the cat", ["wide"]),
    ("Compare <start_of_image> and <start_of_image> now", ["tall", "large"]),
]
CHAT = [dict(role="user", content=[dict(type="image"), dict(type="text", text="What is in the image?")])]


def make_image(name):
    from PIL import Image

    w, h, seed = IMAGES[name]
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 255 // max(w + h - 2, 1)], -1)
    noise = rng.integers(-40, 41, (h, w, 3))
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")


def _save_hf(model, directory):
    import copy

    import torch

    copy.deepcopy(model).to(torch.float16).save_pretrained(directory, safe_serialization=True)
    _published_names(directory / "model.safetensors")
    doc = hf_convert.gemma_tokenizer_json(TOKENS, TYPES, BOS)
    (directory / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False))
    (directory / "tokenizer_config.json").write_text(json.dumps(dict(
        bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>", add_bos_token=True,
        add_eos_token=False, tokenizer_class="PreTrainedTokenizerFast", processor_class="Gemma3Processor",
        extra_special_tokens=dict(boi_token="<start_of_image>", eoi_token="<end_of_image>",
                                  image_token="<image_soft_token>"))))
    shutil.copy(OUT / "gemma3_chat_template.jinja", directory / "chat_template.jinja")
    (directory / "preprocessor_config.json").write_text(json.dumps(dict(
        image_processor_type="Gemma3ImageProcessor", processor_class="Gemma3Processor", do_resize=True,
        size=dict(height=IMAGE_SIZE, width=IMAGE_SIZE), resample=2, do_rescale=True, rescale_factor=1 / 255,
        do_normalize=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], do_convert_rgb=None,
        do_pan_and_scan=None, image_seq_length=SOFT_TOKENS), indent=1))
    (directory / "processor_config.json").write_text(json.dumps(dict(
        processor_class="Gemma3Processor", image_seq_length=SOFT_TOKENS)))


def _published_names(path):
    """transformers 5 saves the SigLIP tower as ``vision_tower.*``; the
    published Gemma 3 checkpoints (and llama.cpp's converter) name it
    ``vision_tower.vision_model.*``, which transformers loads back the same."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(path))
    renamed = {("vision_tower.vision_model." + k[len("vision_tower."):] if k.startswith("vision_tower.") else k): v
               for k, v in tensors.items()}
    save_file(renamed, str(path), metadata={"format": "pt"})


def _processor(hf_dir):
    import transformers

    return transformers.AutoProcessor.from_pretrained(hf_dir)


def _llama_cpp_multimodal(gguf_path, mmproj_path):
    """llama-cpp-python's multimodal chat handler on the GGUF pair, or why not."""
    try:
        import base64
        import io

        import llama_cpp
        from llama_cpp.llama_chat_format import Llava15ChatHandler

        buf = io.BytesIO()
        make_image("square").save(buf, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        handler = Llava15ChatHandler(clip_model_path=str(mmproj_path), verbose=False)
        llm = llama_cpp.Llama(str(gguf_path), chat_handler=handler, n_ctx=512, n_threads=2, verbose=False)
        out = llm.create_chat_completion(messages=[dict(role="user", content=[
            dict(type="image_url", image_url=dict(url=url)), dict(type="text", text="What is in the image?")])],
            max_tokens=N_NEW, temperature=0.0)
        return dict(ran=True, text=out["choices"][0]["message"]["content"])
    except Exception as e:  # recorded: the engine's test then skips the comparison, naming it
        return dict(ran=False, why=f"{type(e).__name__}: {e}"[:500])


def make(llama_cpp):
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.Gemma3Config(text_config=transformers.Gemma3TextConfig(**TEXT),
                                       vision_config=transformers.SiglipVisionConfig(**VISION), **CONFIG)
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    model = transformers.Gemma3ForConditionalGeneration(config).to(torch.float32).eval()
    make_arch_goldens._randomize(model, 0)

    hf_dir = OUT / f"{CASE}.hf"
    shutil.rmtree(hf_dir, ignore_errors=True)
    hf_dir.mkdir(parents=True)
    _save_hf(model, hf_dir)
    # What runs below is the saved model, loaded back (float16 weights in float32).
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    model = transformers.Gemma3ForConditionalGeneration.from_pretrained(
        hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    for k, v in model.state_dict().items():  # every weight came back under the published names
        if not torch.equal(v, saved[k].half().float()):
            raise AssertionError(f"{k} did not load back from {hf_dir}")
    processor = _processor(hf_dir)

    names = list(IMAGES)
    for n in names:  # the images themselves, for the engine's side of every comparison
        np.save(OUT / f"{CASE}_image_{n}.npy", np.asarray(make_image(n), dtype=np.uint8))
    pixels = processor.image_processor([make_image(n) for n in names], return_tensors="np")["pixel_values"]
    np.save(OUT / f"{CASE}_pixels.npy", np.asarray(pixels, dtype=np.float32))

    records = []
    for i, (text, images) in enumerate(PROMPTS):
        inputs = processor(text=text, images=[[make_image(n) for n in images]], return_tensors="pt")
        with torch.no_grad():
            generated = model.generate(**inputs, max_new_tokens=N_NEW, do_sample=False)
        ids = inputs["input_ids"][0].tolist()
        new = generated[0, len(ids):].tolist()
        forced = torch.tensor([ids + new])
        types = torch.cat([inputs["token_type_ids"], torch.zeros((1, len(new)), dtype=torch.long)], 1)
        with torch.no_grad():
            logits = model(input_ids=forced, pixel_values=inputs["pixel_values"], token_type_ids=types).logits[0]
        np.save(OUT / f"{CASE}_logits_{i}.npy", logits.numpy().astype(np.float32))
        records.append(dict(text=text, images=images, input_ids=ids,
                            token_type_ids=inputs["token_type_ids"][0].tolist(), greedy_ids=new))

    chat_text = processor.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    # As vLLM runs a chat prompt: the template wrote <bos>, no special tokens added.
    chat_inputs = processor(text=chat_text, images=[[make_image("square")]], return_tensors="pt",
                            add_special_tokens=False)

    gguf_path, mmproj_path = OUT / f"{CASE}.gguf", OUT / f"mmproj-{CASE}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)
    make_moe_goldens.convert(hf_dir, mmproj_path, llama_cpp, extra_args=("--mmproj",))

    import PIL

    doc = dict(case=CASE, config=dict(text=TEXT, vision=VISION, **CONFIG), transformers=transformers.__version__,
               torch=torch.__version__, pillow=PIL.__version__, image_processor=type(processor.image_processor).__name__,
               images={n: dict(zip(("width", "height", "seed"), IMAGES[n])) for n in names},
               prompts=records, chat=dict(messages=CHAT, text=chat_text, input_ids=chat_inputs["input_ids"][0].tolist()),
               llama_cpp=_llama_cpp_multimodal(gguf_path, mmproj_path))
    (OUT / f"{CASE}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"{CASE}: pixels {pixels.shape}, prompts {[len(r['input_ids']) for r in records]}, "
          f"llama.cpp {doc['llama_cpp']}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", help="llama.cpp source tree with convert_hf_to_gguf.py")
    make(make_moe_goldens.llama_cpp_dir(ap.parse_args().llama_cpp))
