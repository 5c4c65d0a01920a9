"""The mixture-of-experts golden files are whole and agree with themselves
(no engine here; tests/models/test_moe_goldens.py runs the engine on them).

tests/golden/make_moe_goldens.py wrote, per case, a GGUF made by llama.cpp's
converter, the Hugging Face directory transformers saved, the config.json,
a JSON of prompts and greedy ids and the teacher-forced logits. Checked here:
every file is present; the JSON's prompts, ids and gaps have the lengths and
ranges the script promises; the logits are [prompt 0 + 32 ids, vocab]; the
GGUF's architecture, expert count and expert tensors match the config; the
safetensors hold float16 tensors for every expert (or fused expert banks,
as the architecture saves them); llama.cpp's greedy ids on the GGUF pass the
near-tie rule against transformers' (gpt-oss: against transformers with
YaRN truncated, which is what its GGUF means to llama.cpp); gpt-oss's chat
renders come from the template its directory and GGUF carry.
"""

import json
import pathlib
import struct

import numpy as np
import pytest

import greedy_rule

gguf = pytest.importorskip("gguf")

TINY_MOE = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_moe"
CASES = sorted(p.stem for p in TINY_MOE.glob("*.json") if not p.stem.endswith((".config", "_chat")))
N_NEW = 32
#: case -> (GGUF architecture, config key of the expert count)
ARCH = {"qwen3moe": ("qwen3moe", "num_experts"), "qwen2moe": ("qwen2moe", "num_experts"),
        "mixtral": ("llama", "num_local_experts"), "olmoe": ("olmoe", "num_experts"),
        "granitemoe": ("granitemoe", "num_local_experts"), "gpt-oss": ("gpt-oss", "num_local_experts")}


def _golden(case):
    return json.loads((TINY_MOE / f"{case}.json").read_text())


def _safetensors_header(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    header.pop("__metadata__", None)
    return header


def test_every_case_is_there():
    assert set(CASES) == set(ARCH), CASES


@pytest.mark.parametrize("case", CASES)
def test_files_present(case):
    for name in (f"{case}.gguf", f"{case}.config.json", f"{case}_logits.npy", f"{case}.hf/config.json",
                 f"{case}.hf/model.safetensors", f"{case}.hf/tokenizer.json", f"{case}.hf/tokenizer_config.json"):
        assert (TINY_MOE / name).is_file(), name
    assert json.loads((TINY_MOE / f"{case}.config.json").read_text()) == \
        json.loads((TINY_MOE / f"{case}.hf" / "config.json").read_text())


@pytest.mark.parametrize("case", CASES)
def test_prompts_and_logits(case):
    golden = _golden(case)
    vocab = golden["config"]["vocab_size"]
    assert golden["case"] == case and len(golden["prompts"]) == 3
    for prompt in golden["prompts"]:
        keys = [k for k in prompt if k.endswith("_ids") and k != "prompt_ids"]
        assert "ref_ids" in keys and "llama_cpp_ids" in keys
        for key in keys:
            ids, gaps = prompt[key], prompt[key[:-4] + "_gaps"]
            assert len(ids) == len(gaps) == N_NEW, key
            assert all(0 <= i < vocab for i in ids) and all(g >= 0 for g in gaps), key
        assert all(0 <= i < vocab for i in prompt["prompt_ids"])
    first = golden["prompts"][0]
    logits = np.load(TINY_MOE / f"{case}_logits.npy")
    assert logits.dtype == np.float32 and logits.shape == (len(first["prompt_ids"]) + N_NEW, vocab)
    # the logits are the greedy run's: argmax of each row from the prompt's last is the next greedy id
    start = len(first["prompt_ids"]) - 1
    assert [int(i) for i in logits[start:start + N_NEW].argmax(axis=1)] == first["ref_ids"]


@pytest.mark.parametrize("case", CASES)
def test_gguf_matches_config(case):
    config = json.loads((TINY_MOE / f"{case}.config.json").read_text())
    arch, experts_key = ARCH[case]
    n_experts = config.get(experts_key, config.get("num_local_experts", config.get("num_experts")))
    reader = gguf.GGUFReader(TINY_MOE / f"{case}.gguf")
    fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("tokenizer.ggml.")}
    assert fields["general.architecture"] == arch
    assert fields[f"{arch}.expert_count"] == n_experts
    assert fields[f"{arch}.expert_used_count"] == config["num_experts_per_tok"]
    assert fields[f"{arch}.block_count"] == config["num_hidden_layers"]
    tensors = {t.name: t for t in reader.tensors}
    for layer in range(config["num_hidden_layers"]):
        for kind in ("gate", "up", "down"):
            t = tensors[f"blk.{layer}.ffn_{kind}_exps.weight"]
            assert t.tensor_type == gguf.GGMLQuantizationType.F16 and int(t.shape[-1]) == n_experts
        assert int(tensors[f"blk.{layer}.ffn_gate_inp.weight"].shape[-1]) == n_experts


@pytest.mark.parametrize("case", CASES)
def test_safetensors_hold_every_expert(case):
    config = json.loads((TINY_MOE / f"{case}.config.json").read_text())
    header = _safetensors_header(TINY_MOE / f"{case}.hf" / "model.safetensors")
    assert {v["dtype"] for v in header.values()} == {"F16"}
    n_experts = config.get("num_local_experts", config.get("num_experts"))
    per_expert = [k for k in header if ".experts." in k and k.split(".experts.")[1].split(".")[0].isdigit()]
    fused = [k for k in header if len(header[k]["shape"]) == 3]
    if per_expert:
        assert len(per_expert) == config["num_hidden_layers"] * n_experts * 3
    else:  # granitemoe (input/output_linear), gpt-oss (gate_up_proj, down_proj): banks [experts, ...]
        assert fused and all(header[k]["shape"][0] == n_experts for k in fused)


@pytest.mark.parametrize("case", CASES)
def test_llama_cpp_agrees_under_near_tie_rule(case):
    golden = _golden(case)
    ref_key = "truncated_ref" if case == "gpt-oss" else "ref"
    prompts = [dict(name=p["name"], ref_ids=p[f"{ref_key}_ids"], ref_gaps=p[f"{ref_key}_gaps"])
               for p in golden["prompts"]]
    outputs = [p["llama_cpp_ids"] for p in golden["prompts"]]
    assert greedy_rule.greedy_failures(prompts, outputs, greedy_rule.PEER_GAP_THRESHOLD) == []
    if case == "gpt-oss":  # the MXFP4 file: llama.cpp against transformers on its dequantized weights
        prompts = [dict(name=p["name"], ref_ids=p["mxfp4_ref_ids"], ref_gaps=p["mxfp4_ref_gaps"])
                   for p in golden["prompts"]]
        outputs = [p["llama_cpp_mxfp4_ids"] for p in golden["prompts"]]
        assert greedy_rule.greedy_failures(prompts, outputs, greedy_rule.PEER_GAP_THRESHOLD) == []


def test_gpt_oss_mxfp4_file():
    reader = gguf.GGUFReader(TINY_MOE / "gpt-oss-mxfp4.gguf")
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert {types[f"blk.0.ffn_{k}_exps.weight"] for k in ("gate", "up", "down")} == {"MXFP4"}
    golden = _golden("gpt-oss")
    forced = golden["prompts"][0]["prompt_ids"] + golden["prompts"][0]["ref_ids"]
    for name in ("gpt-oss_truncated_logits.npy", "gpt-oss_llama_cpp_logits.npy", "gpt-oss-mxfp4_llama_cpp_logits.npy",
                 "gpt-oss-mxfp4_logits.npy"):
        assert np.load(TINY_MOE / name).shape == (len(forced), golden["config"]["vocab_size"]), name


def test_gpt_oss_chat_renders():
    chat = json.loads((TINY_MOE / "gpt-oss_chat.json").read_text())
    template = (TINY_MOE / chat["template"]).read_text(encoding="utf-8")
    reader = gguf.GGUFReader(TINY_MOE / "gpt-oss.gguf")
    assert reader.fields["tokenizer.chat_template"].contents() == template
    assert chat["chats"] and all(("text" in c) != ("error" in c) for c in chat["chats"])
    for c in chat["chats"]:
        if "text" in c:
            assert c["text"].startswith("<|start|>system<|message|>") and f"Current date: {chat['date']}" in c["text"]
