"""Regenerate the Qwen vision-language goldens under tests/golden/tiny_vl/.

What this script does, per case of ``CASES`` (make_moe_goldens.py's steps,
reused by import: randomisation, float16 Hugging Face save with the tiny
tokenizer, llama.cpp's converter with the pre-tokenizer workaround, the
llama.cpp run):

1. Builds a tiny ``Qwen2_5_VLForConditionalGeneration`` (``qwen2vl``) or
   ``Qwen3VLForConditionalGeneration`` (``qwen3vl``) with transformers from a
   config (torch seed 0, float32, eager attention): a 2-layer text model of
   hidden size 64 with 2 query heads / 1 KV head of 32, multimodal RoPE
   sections [4, 6, 6] (Qwen2.5-VL: contiguous sections) or [6, 5, 5]
   (Qwen3-VL: interleaved), and a tiny vision tower (patch 14, temporal
   patch 2, spatial merge 2). Every weight is seeded normal, rounded to
   float16 (make_moe_goldens._randomize; the Conv3d patch embedding by its
   fan-in 3 * 2 * 14 * 14).
2. Saves it as a float16 Hugging Face directory ``tiny_vl/<case>.hf/`` (the
   whole checkpoint: text model under ``model.language_model.``, vision tower
   under ``model.visual.``) with a ``preprocessor_config.json``, and converts
   it with llama.cpp's ``convert_hf_to_gguf.py --outtype f16`` into the text
   GGUF ``tiny_vl/<case>.gguf`` (general.architecture qwen2vl / qwen3vl,
   ``rope.dimension_sections``) and, for qwen2vl, with ``--mmproj`` into
   ``tiny_vl/<case>-mmproj.gguf`` (``clip.*`` metadata, ``v.*`` tensors),
   to which ``clip.vision.image_min_pixels`` / ``image_max_pixels`` (llama.cpp's
   keys, which its converter writes for Qwen3-VL but not for Qwen2.5-VL) are
   added with the preprocessor config's bounds.
3. Text only: 3 seeded prompts of random ids (12, 20, 30), transformers' 32
   greedy ids and gaps, transformers' float32 logits for every position of
   prompt 0 + its ids (``<case>_logits.npy``), and llama.cpp's greedy ids on
   the text GGUF. Without images the three M-RoPE position ids of a token are
   equal, so the model is its text decoder with plain RoPE.
4. qwen2vl's image side: ``IMAGES`` (seeded random RGB of three sizes: one
   scaled up to min_pixels, one scaled down to max_pixels, one rounded) through
   transformers' ``Qwen2VLImageProcessorPil`` (Pillow's bicubic resize,
   rescale, CLIP normalisation, patchify into 2 x 14 x 14 patches) with the
   directory's preprocessor config: ``<case>_image<i>.npy`` (the RGB input,
   uint8 [H, W, 3]), ``<case>_pixels<i>.npy`` (pixel_values float32) and the
   grid in the JSON; and the vision tower's output on each image alone
   (``model.visual(pixel_values, grid_thw).pooler_output``: window attention
   over 4 x 4 merged windows with full attention at layers 1 and 3, the 2 x 2
   patch merger) as ``<case>_vision<i>.npy``; and llama.cpp's rows
   (llama-cpp-python's mtmd on the mmproj GGUF) for the image that neither
   resizes (``LLAMA_CPP_IMAGE``), ``<case>_llama_cpp_vision3.npy`` (0.0023 from
   transformers': llama.cpp rounds activations to float16 for F16 matrices).
5. qwen2vl, for the engine's image road (not run by the tests yet: the
   decoder has no M-RoPE image positions): ``IMAGE_PROMPT``, seeded text ids
   around images 0 and 2 (``<|vision_start|>``, one ``<|image_pad|>`` per
   merged unit, ``<|vision_end|>``), transformers' M-RoPE positions
   (``get_rope_index``: ``image_prompt.positions`` [3][tokens], ``rope_delta``),
   its greedy ids (``IMAGE_N_NEW``, a full forward with the images per step)
   and the logits at every position of the prompt + those ids
   (``<case>_image_prompt_logits.npy``).

Run from the repository root with the reference venv (Pillow installed into
it for the image processor)::

    python tests/golden/make_vl_goldens.py [--only CASE ...] [--llama-cpp DIR]
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import make_arch_goldens  # noqa: E402
import make_moe_goldens as moe  # noqa: E402

OUT = HERE / "tiny_vl"
TOKENIZER = moe.TOKENIZER
VOCAB = make_arch_goldens.VOCAB

TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, max_position_embeddings=256, rms_norm_eps=1e-6,
            bos_token_id=TOKENIZER["bos_id"], eos_token_id=TOKENIZER["eos_id"], pad_token_id=None,
            tie_word_embeddings=False)
#: The image placeholder ids, inside the tiny vocabulary (the 4 ids below
#: its end-of-text id, the last).
SPECIAL = dict(image_token_id=VOCAB - 5, video_token_id=VOCAB - 4, vision_start_token_id=VOCAB - 3,
               vision_end_token_id=VOCAB - 2)
QWEN25_VISION = dict(depth=4, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=14,
                     spatial_merge_size=2, temporal_patch_size=2, window_size=112, fullatt_block_indexes=[1, 3],
                     in_channels=3, hidden_act="silu")
QWEN3_VISION = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=16,
                    spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64,
                    deepstack_visual_indexes=[0], in_channels=3)

#: case -> (config class, its arguments)
CASES = {
    "qwen2vl": ("Qwen2_5_VLConfig", dict(
        text_config=dict(TEXT, rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                                    mrope_section=[4, 6, 6])),
        vision_config=QWEN25_VISION, **SPECIAL)),
    "qwen3vl": ("Qwen3VLConfig", dict(
        text_config=dict(TEXT, head_dim=32, rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                                                 mrope_section=[6, 5, 5], mrope_interleaved=True)),
        vision_config=QWEN3_VISION, **SPECIAL)),
}

#: The image processor's pixel bounds (smaller than the published 56 x 56 to
#: 28 x 28 x 1280 so that the tiny images take both scaling paths).
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 40
#: (width, height) of each seeded image: scaled up to MIN_PIXELS, scaled
#: down to MAX_PIXELS (7 x 5 merged units: windows of 4 x 4 with padding),
#: rounded to multiples of 28 (Pillow resizes it vertically first), as is.
IMAGES = [(60, 40), (250, 180), (130, 90), (112, 84)]
#: The image whose sides are already multiples of 28 inside the bounds, so
#: that neither transformers nor llama.cpp resizes it: llama.cpp's rows for
#: it (``<case>_llama_cpp_vision3.npy``) are its tower's alone.
LLAMA_CPP_IMAGE = 3
#: The image prompt: text id counts at even places, image indexes at odd ones.
IMAGE_PROMPT = [5, 0, 4, 2, 3]
IMAGE_N_NEW = 8


def _image(i):
    width, height = IMAGES[i]
    return np.random.default_rng(100 + i).integers(0, 256, (height, width, 3), dtype=np.uint8)


def _tiny_vl_model(config_class, kwargs, seed):
    import torch
    import transformers

    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    model_class = config_class.replace("Config", "ForConditionalGeneration")
    model = getattr(transformers, model_class)(config).to(torch.float32).eval()
    moe._randomize(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 5:  # the Conv3d patch embedding: by its fan-in
                p.copy_((torch.randn(p.shape, generator=g) / np.sqrt(np.prod(p.shape[1:]))).half().float())
    return config, model


def _vision_goldens(case, model, hf_dir):
    import PIL.Image
    import torch
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = Qwen2VLImageProcessorPil.from_pretrained(hf_dir)
    images = []
    for i in range(len(IMAGES)):
        rgb = _image(i)
        np.save(OUT / f"{case}_image{i}.npy", rgb)
        out = processor(images=[PIL.Image.fromarray(rgb)], return_tensors="np")
        pixels = out["pixel_values"].astype(np.float32)
        grid = [int(v) for v in out["image_grid_thw"][0]]
        np.save(OUT / f"{case}_pixels{i}.npy", pixels)
        with torch.no_grad():
            rows = model.model.visual(torch.from_numpy(pixels), grid_thw=torch.tensor([grid])).pooler_output
        rows = rows.numpy().astype(np.float32)
        np.save(OUT / f"{case}_vision{i}.npy", rows)
        images.append(dict(size=list(IMAGES[i]), grid_thw=grid, tokens=int(rows.shape[0]),
                           pixels_shape=list(pixels.shape), rows_std=float(rows.std())))
    return images


def _llama_cpp_rows(case, rgb):
    """llama.cpp's rows for one image (llama-cpp-python's mtmd: the mmproj beside
    the text GGUF, the image alone between its markers) and its grid (rows,
    columns of merged units)."""
    import ctypes

    import llama_cpp
    from llama_cpp import mtmd_cpp as mtmd

    llm = llama_cpp.Llama(str(OUT / f"{case}.gguf"), n_ctx=256, n_threads=2, verbose=False)
    params = mtmd.mtmd_context_params_default()
    params.use_gpu = False
    params.n_threads = 2
    params.print_timings = False
    ctx = mtmd.mtmd_init_from_file(str(OUT / f"{case}-mmproj.gguf").encode(), llm.model, params)
    assert ctx, "mtmd_init_from_file failed"
    h, w, _ = rgb.shape
    data = (ctypes.c_uint8 * rgb.size).from_buffer_copy(np.ascontiguousarray(rgb).tobytes())
    bitmap = mtmd.mtmd_bitmap_init(w, h, data)
    chunks = mtmd.mtmd_input_chunks_init()
    marker = mtmd.mtmd_default_marker()
    text = mtmd.mtmd_input_text()
    text.text = marker
    text.text_len = len(marker)
    text.add_special = False
    text.parse_special = True
    bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
    assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), bitmaps, 1) == 0
    for i in range(mtmd.mtmd_input_chunks_size(chunks)):
        chunk = mtmd.mtmd_input_chunks_get(chunks, i)
        if mtmd.mtmd_input_chunk_get_type(chunk) != mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
            continue
        n = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
        assert mtmd.mtmd_encode_chunk(ctx, chunk) == 0
        embd = mtmd.mtmd_get_output_embd(ctx)
        rows = np.ctypeslib.as_array(embd, shape=(n * llm.n_embd(),)).reshape(n, -1).copy()
        img = mtmd.mtmd_input_chunk_get_tokens_image(chunk)
        grid = (mtmd.mtmd_image_tokens_get_ny(img), mtmd.mtmd_image_tokens_get_nx(img))
    mtmd.mtmd_input_chunks_free(chunks)
    mtmd.mtmd_bitmap_free(bitmap)
    mtmd.mtmd_free(ctx)
    llm.close()
    return rows, grid


def _image_prompt_golden(case, model, images, seed):
    """Step 5: the image prompt's ids, positions, greedy ids and logits."""
    import torch

    rng = np.random.default_rng(seed + 7)
    ids, pixels, grids = [], [], []
    for i, part in enumerate(IMAGE_PROMPT):
        if i % 2 == 0:
            ids += [int(t) for t in rng.integers(0, SPECIAL["image_token_id"], part)]
        else:
            ids += [SPECIAL["vision_start_token_id"]] + [SPECIAL["image_token_id"]] * images[part]["tokens"] + \
                   [SPECIAL["vision_end_token_id"]]
            pixels.append(np.load(OUT / f"{case}_pixels{part}.npy"))
            grids.append(images[part]["grid_thw"])
    pixel_values, grid_thw = torch.from_numpy(np.concatenate(pixels)), torch.tensor(grids)

    def run(tokens):
        input_ids = torch.tensor([tokens])
        types = (input_ids == SPECIAL["image_token_id"]).int()
        with torch.no_grad():
            return model(input_ids=input_ids, pixel_values=pixel_values, image_grid_thw=grid_thw,
                         mm_token_type_ids=types).logits[0]

    prompt, new = list(ids), []
    for _ in range(IMAGE_N_NEW):
        new.append(int(run(prompt + new)[-1].argmax()))
    logits = run(prompt + new).numpy().astype(np.float32)
    np.save(OUT / f"{case}_image_prompt_logits.npy", logits)
    input_ids = torch.tensor([prompt])
    positions, delta = model.model.get_rope_index(input_ids, (input_ids == SPECIAL["image_token_id"]).int(),
                                                  image_grid_thw=grid_thw)
    return dict(prompt_ids=prompt, images=[p for i, p in enumerate(IMAGE_PROMPT) if i % 2], ref_ids=new,
                positions=positions[:, 0].tolist(), rope_delta=int(delta.reshape(-1)[0]))


def make_case(case, llama_cpp, seed=0):
    import torch

    config_class, kwargs = CASES[case]
    config, model = _tiny_vl_model(config_class, kwargs, seed)
    prompts = moe.seeded_prompts(seed)
    hf_dir = moe.fresh_hf_dir(model, OUT / f"{case}.hf")
    patch = kwargs["vision_config"]["patch_size"]
    (hf_dir / "preprocessor_config.json").write_text(json.dumps(dict(
        image_processor_type="Qwen2VLImageProcessor", min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS,
        patch_size=patch, temporal_patch_size=2, merge_size=2, image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711], do_resize=True, do_rescale=True, do_normalize=True,
        rescale_factor=1 / 255, resample=3), indent=1) + "\n")
    gguf_path = OUT / f"{case}.gguf"
    moe.convert(hf_dir, gguf_path, llama_cpp)
    extra = {}
    if case == "qwen2vl":
        # The converter writes no pixel bounds for Qwen2.5-VL (it does for
        # Qwen3-VL, under these keys): the file gets the directory's, so that
        # it describes the processor the goldens ran.
        import gguf_rewrite

        converted = OUT / f"{case}-mmproj.converted.gguf"
        moe.convert(hf_dir, converted, llama_cpp, extra_args=["--mmproj"])
        gguf_rewrite.rewritten(converted, OUT / f"{case}-mmproj.gguf", set_values={
            "clip.vision.image_min_pixels": MIN_PIXELS, "clip.vision.image_max_pixels": MAX_PIXELS})
        converted.unlink()
        extra["images"] = _vision_goldens(case, model, hf_dir)
        extra["image_prompt"] = _image_prompt_golden(case, model, extra["images"], seed)
        rows, grid = _llama_cpp_rows(case, _image(LLAMA_CPP_IMAGE))
        np.save(OUT / f"{case}_llama_cpp_vision{LLAMA_CPP_IMAGE}.npy", rows.astype(np.float32))
        reference = np.load(OUT / f"{case}_vision{LLAMA_CPP_IMAGE}.npy")
        extra["llama_cpp_vision"] = dict(image=LLAMA_CPP_IMAGE, grid=[int(v) for v in grid],
                                         max_err_vs_transformers=float(np.abs(rows - reference).max()))

    records = moe.reference_records(model, prompts)
    forced = prompts[0] + records[0]["ref_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    greedy, llama_logits = moe._llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    moe.write_record(OUT, case, dict(config_class=config_class, config=kwargs, architecture=type(model).__name__),
                     dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max()), **extra),
                     records, gguf_path, logits)


if __name__ == "__main__":
    moe.main(CASES, make_case, OUT)
