"""Gemma 3 270M as a Hugging Face directory, and chat on the Gemma files.

The directory (conftest's gemma3_hf_dir) is made from the published GGUF by
tests/support/hf_convert.py and cached in ~/.cache/vllm-cpp-test/: bf16 weights
dequantized from the file's Q4_K/Q5_0/Q6_K/Q8_0 tensors, and the
tokenizer.json that transformers exports from that GGUF (hf_convert writes
the same document, vocabulary, 514,906 merges and added tokens alike:
checked against transformers 5.25's export when the golden was made).

* The directory's tokenizer.json, read by the engine's native loader,
  tokenizes Gemma's corpus as Hugging Face `tokenizers` did on transformers'
  export (golden/tokenizer_json_gemma3.json), so as llama.cpp does on the
  GGUF; decoding gives the text back.
* The GGUF is the base model and carries no chat template: chat renders the
  engine's documented plain fallback ("role: content" lines, then
  "assistant: ").
* Gemma 3's instruction template (the shared fixture gemma-3-it.jinja),
  given as the directory's tokenizer_config.json chat_template through
  tokenizer_config_path, renders as transformers renders it
  (chat_reference.py), and the prompt ids are that text's ids.
* The directory's weights complete a factual prompt as the GGUF does.
"""

import json
import pathlib

import pytest

import chat_reference
from fixture_dirs import CHAT_TEMPLATES_DIR
from vllm_cpp import Engine, SamplingParams

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"

GEMMA_TEMPLATE = CHAT_TEMPLATES_DIR / "gemma-3-it.jinja"
CONVERSATION = [
    {"role": "system", "content": "Answer in one word."},
    {"role": "user", "content": "What is the capital of France?"},
]
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def hf_engine(gemma3_hf_dir):
    with Engine.load(str(gemma3_hf_dir), max_model_len=512) as engine:
        yield engine


@pytest.fixture(scope="module")
def gguf_engine(gemma3_gguf):
    with Engine.load(str(gemma3_gguf), max_model_len=512) as engine:
        yield engine


def test_directory_tokenizes_as_tokenizers(hf_engine):
    golden = json.loads((GOLDEN_DIR / "tokenizer_json_gemma3.json").read_text(encoding="utf-8"))
    for case in golden["cases"]:
        ids = hf_engine.tokenize(case["text"], add_special_tokens=case["add_special_tokens"])
        assert ids == case["ids"], case
        if not case["add_special_tokens"] and "\u2581" not in case["text"]:
            assert hf_engine.detokenize(ids) == case["text"], case


def test_directory_and_gguf_share_the_vocabulary(hf_engine, gguf_engine):
    text = "Gemma 3 speaks <start_of_turn>user and   spaces, 日本語 and ünïcödé."
    assert hf_engine.tokenize(text) == gguf_engine.tokenize(text)


def test_base_gguf_chat_falls_back_to_plain_rendering(gguf_engine):
    rendered = "system: Answer in one word.\nuser: What is the capital of France?\nassistant: "
    assert gguf_engine.tokenize_chat({"messages": CONVERSATION}) == gguf_engine.tokenize(
        rendered, add_special_tokens=False)


@pytest.fixture(scope="module")
def instruct_engine(gemma3_hf_dir, tmp_path_factory):
    if not GEMMA_TEMPLATE.is_file():
        pytest.skip(f"{GEMMA_TEMPLATE} is missing (the shared chat-template fixtures)")
    config = json.loads((gemma3_hf_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = GEMMA_TEMPLATE.read_text(encoding="utf-8")
    override = tmp_path_factory.mktemp("gemma3-it") / "tokenizer_config.json"
    override.write_text(json.dumps(config), encoding="utf-8")
    with Engine.load(str(gemma3_hf_dir), max_model_len=512, tokenizer_config_path=str(override)) as engine:
        yield engine


def test_instruction_template_renders_as_transformers(instruct_engine):
    source = GEMMA_TEMPLATE.read_text(encoding="utf-8")
    expected = chat_reference.render(source, CONVERSATION, add_generation_prompt=True, bos_token="<bos>",
                                     eos_token="<eos>")
    assert expected.startswith("<bos><start_of_turn>user\nAnswer in one word.\n\nWhat is the capital")
    ids = instruct_engine.tokenize_chat({"messages": CONVERSATION})
    assert ids == instruct_engine.tokenize(expected, add_special_tokens=False)
    assert ids[0] == 2  # <bos> is the template's text, parsed as the special token, not added again


def test_directory_answers_as_the_gguf(hf_engine, gguf_engine):
    # bf16 weights dequantized from the file's blocks: not the file's
    # arithmetic, so not the same logits, but the same model.
    prompt = "Question: What is the capital of France?\nAnswer:"
    for engine in (hf_engine, gguf_engine):
        assert engine.complete(prompt, SamplingParams.greedy(max_tokens=4)).text.startswith(" Paris")
