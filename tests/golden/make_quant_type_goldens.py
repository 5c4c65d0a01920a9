"""Regenerate tests/golden/quant_types/: a tiny llama in each tensor type of
issue 40 (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0,
TQ2_0, MXFP4), quantized by llama.cpp's own quantizer, with llama.cpp's
greedy ids on it (tests/models/test_quant_types.py checks the engine
against them; CI has no llama_cpp, so the files are committed).

1. tests/support/tiny_models.write_tiny_model writes a one-layer random
   llama in F32 (256 wide, FFN 512, the tiny byte-level vocabulary, tied
   embedding, seed 0): every matrix's rows are a whole number of 256-element
   super-blocks, so every type fits everywhere.
2. llama_cpp.llama_model_quantize makes each type's "pure" file (every
   matrix, the embedding included, in that type; MXFP4 through its
   MXFP4_MOE file type, pure: this model has no experts; IQ2_S through
   IQ2_M, whose base type it is, since the IQ2_S file type's is IQ2_XS),
   with a uniform
   importance matrix for the IQ1/IQ2/IQ3_XXS types, which the quantizer
   refuses without one (tests/support/llama_quantize.py).
3. llama.cpp (llama-cpp-python) greedily decodes N_NEW ids after each of
   N_PROMPTS seeded random prompts, recording the top-1 minus top-2 logit
   gap at every step (the near-tie rule's input).
4. Writes quant_types/<type>.gguf and quant_types/goldens.json (per type:
   file, prompts with prompt_ids, ref_ids, ref_gaps; llama-cpp-python's
   version).

Usage (needs llama_cpp, gguf, numpy):
    python tests/golden/make_quant_type_goldens.py
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import tiny_models as tm  # noqa: E402
from llama_quantize import quantized  # noqa: E402
from make_reference_golden import llamacpp_greedy  # noqa: E402

OUT = HERE / "quant_types"
# type -> (llama.cpp file type, needs an importance matrix)
TYPES = {
    "IQ1_S": ("IQ1_S", True),
    "IQ1_M": ("IQ1_M", True),
    "IQ2_XXS": ("IQ2_XXS", True),
    "IQ2_XS": ("IQ2_XS", True),
    "IQ2_S": ("IQ2_M", True),  # the IQ2_S file type's own type is IQ2_XS
    "IQ3_XXS": ("IQ3_XXS", True),
    "IQ3_S": ("IQ3_S", False),
    "TQ1_0": ("TQ1_0", False),
    "TQ2_0": ("TQ2_0", False),
    "MXFP4": ("MXFP4_MOE", False),
}
N_PROMPTS = 4
PROMPT_LEN = 8
N_NEW = 16


def main():
    import llama_cpp

    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(40)
    prompts = [rng.integers(0, 256, PROMPT_LEN).tolist() for _ in range(N_PROMPTS)]
    record = {"llama_cpp": llama_cpp.__version__, "n_new": N_NEW, "types": {}}
    with tempfile.TemporaryDirectory() as tmp:
        source = tm.write_tiny_model(pathlib.Path(tmp) / "tiny-llama-quant-source.gguf", "llama", "F32", n_layer=1)
        for name, (ftype, imatrix) in TYPES.items():
            made = quantized(source, ftype, pure=True, imatrix=imatrix)
            target = OUT / f"{name}.gguf"
            shutil.copyfile(made, target)
            made.unlink()  # keyed by the temporary source's name only: not worth caching
            llm = llama_cpp.Llama(str(target), n_ctx=64, n_threads=2, logits_all=False, verbose=False)
            try:
                cases = []
                for p in prompts:
                    ids, gaps = llamacpp_greedy(llm, p, N_NEW)
                    cases.append({"prompt_ids": p, "ref_ids": ids, "ref_gaps": [round(float(g), 6) for g in gaps]})
            finally:
                llm.close()
            record["types"][name] = {"file": target.name, "prompts": cases}
            print(f"{name}: {target.stat().st_size} bytes, min gap "
                  f"{min(min(c['ref_gaps']) for c in cases):.4f}")
    (OUT / "goldens.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
