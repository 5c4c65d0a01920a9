"""SmolLM2 as a Hugging Face directory (bf16, made from the bundled GGUF by
tests/support/hf_convert.py and cached) through the whole engine: its tokenizer.json,
tokenizer_config.json and generation_config.json are used; it generates what
the same weights as a GGUF F16 file generate; tokenizer_config_path changes
the chat template; generation_config.json's eos list ends generation; a bad
tokenizer.json is a ModelLoadError naming it, the engine still usable.
"""

import json
import os
import subprocess
import sys

import pytest

import hf_convert
import native_build
from suite_settings import ENGINE_MAX_MODEL_LEN
from vllm_cpp import Engine, ModelLoadError, SamplingParams

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in 1984,", "Résumé: ünïcödé 😀"]
CHAT = {"messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 16, "temperature": 0}
# A ChatML template with no default system prompt, unlike SmolLM2's own.
OVERRIDE_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                     "{% endfor %}{{ '<|im_start|>assistant\\n' }}")


@pytest.fixture(scope="module")
def hf_dir(smollm2_path):
    return hf_convert.cached(smollm2_path, "to-hf", "bf16")


@pytest.fixture(scope="module")
def hf_engine(hf_dir):
    with Engine.load(hf_dir, max_model_len=ENGINE_MAX_MODEL_LEN) as eng:
        yield eng


def greedy(engine, prompt, n=24):
    return engine.complete(prompt, SamplingParams.greedy(max_tokens=n))


def variant(tmp_path, hf_dir, **files):
    """A directory with hf_dir's weights and tokenizer (linked) and `files`
    (name -> text) replacing or adding files."""
    out = tmp_path / "variant"
    out.mkdir()
    for name in os.listdir(hf_dir):
        if name not in files:
            os.symlink(os.path.join(hf_dir, name), out / name)
    for name, text in files.items():
        (out / name).write_text(text)
    return out


@pytest.mark.timeout(900)
def test_same_greedy_text_as_gguf_f16(hf_engine, hf_dir):
    gguf = hf_convert.cached(hf_dir, "to-gguf", "f16")
    hf_out = [greedy(hf_engine, p) for p in PROMPTS]
    hf_chat = hf_engine.chat(CHAT)
    with Engine.load(gguf, max_model_len=ENGINE_MAX_MODEL_LEN) as gguf_engine:
        gguf_out = [greedy(gguf_engine, p) for p in PROMPTS]
        gguf_chat = gguf_engine.chat(CHAT)
    assert [o.text for o in hf_out] == [o.text for o in gguf_out]
    assert [o.prompt_tokens for o in hf_out] == [o.prompt_tokens for o in gguf_out]
    assert hf_chat["choices"][0]["message"] == gguf_chat["choices"][0]["message"]
    assert hf_chat["usage"] == gguf_chat["usage"]
    assert hf_out[0].text.startswith(" Paris")


def test_tokenizer_config_path_changes_the_chat_template(hf_engine, hf_dir, tmp_path):
    override = tmp_path / "tokenizer_config.json"
    override.write_text(json.dumps({"chat_template": OVERRIDE_TEMPLATE, "eos_token": "<|im_end|>"}))
    rendered = "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"
    with Engine.load(hf_dir, max_model_len=ENGINE_MAX_MODEL_LEN, tokenizer_config_path=str(override)) as eng:
        chat = eng.chat(CHAT)
        direct = eng.complete(rendered, SamplingParams.greedy(max_tokens=16))
    own = hf_engine.chat(CHAT)
    # The override's template is the one rendered: chat equals completing its text.
    assert chat["usage"]["prompt_tokens"] == direct.prompt_tokens
    assert chat["choices"][0]["message"]["content"] == direct.text
    assert chat["usage"]["prompt_tokens"] < own["usage"]["prompt_tokens"]


def test_tokenizer_config_add_bos_token(hf_engine, hf_dir, tmp_path):
    override = tmp_path / "tokenizer_config.json"
    override.write_text(json.dumps({"add_bos_token": True, "bos_token": "<|im_start|>"}))
    with Engine.load(hf_dir, max_model_len=ENGINE_MAX_MODEL_LEN, tokenizer_config_path=str(override)) as eng:
        with_bos = greedy(eng, PROMPTS[0], 1)
    assert with_bos.prompt_tokens == greedy(hf_engine, PROMPTS[0], 1).prompt_tokens + 1


def test_chat_template_jinja_is_used(hf_engine, hf_dir, tmp_path):
    model = variant(tmp_path, hf_dir, **{"chat_template.jinja": OVERRIDE_TEMPLATE})
    with Engine.load(str(model) + "/", max_model_len=ENGINE_MAX_MODEL_LEN) as eng:
        chat = eng.chat(CHAT)
    assert chat["usage"]["prompt_tokens"] < hf_engine.chat(CHAT)["usage"]["prompt_tokens"]
    assert chat["model"] == "variant"  # the directory's name, trailing '/' or not


def test_generation_config_eos_list_ends_generation(hf_engine, hf_dir, tmp_path):
    assert greedy(hf_engine, PROMPTS[0], 4).text.startswith(" Paris")
    paris = 7042  # SmolLM2's " Paris", the first greedy token
    model = variant(tmp_path, hf_dir, **{"generation_config.json": json.dumps({"eos_token_id": [2, paris]})})
    with Engine.load(str(model), max_model_len=ENGINE_MAX_MODEL_LEN) as eng:
        out = greedy(eng, PROMPTS[0], 4)
    assert out.completion_tokens == 1 and out.text == ""
    assert str(out.finish_reason).lower().endswith("stop")


def _load_fails(hf_engine, model, *parts):
    with pytest.raises(ModelLoadError) as info:
        Engine.load(str(model), max_model_len=ENGINE_MAX_MODEL_LEN)
    for part in parts:
        assert part in str(info.value), str(info.value)
    assert greedy(hf_engine, PROMPTS[0], 2).completion_tokens == 2


def test_tokenizer_json_not_json(hf_engine, hf_dir, tmp_path):
    model = variant(tmp_path, hf_dir, **{"tokenizer.json": '{"model": {"type": "BPE",'})
    _load_fails(hf_engine, model, "tokenizer.json", "JSON")


def test_tokenizer_json_unsupported_model_type(hf_engine, hf_dir, tmp_path):
    with open(os.path.join(hf_dir, "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    doc["model"]["type"] = "WordPiece"
    model = variant(tmp_path, hf_dir, **{"tokenizer.json": json.dumps(doc)})
    _load_fails(hf_engine, model, "tokenizer.json", "WordPiece")


def test_tokenizer_json_missing(hf_engine, hf_dir, tmp_path):
    model = tmp_path / "no-tokenizer"
    model.mkdir()
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(hf_dir, name), model / name)
    _load_fails(hf_engine, model, str(model), "tokenizer.json is missing")


def test_bad_generation_config(hf_engine, hf_dir, tmp_path):
    model = variant(tmp_path, hf_dir, **{"generation_config.json": json.dumps({"eos_token_id": [2, 10 ** 6]})})
    _load_fails(hf_engine, model, "eos_token_id 1000000", "outside the vocabulary")


_RSS_SCRIPT = """
import sys
from vllm_cpp import Engine, SamplingParams
def status_mb(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field)) / 1024
before = status_mb("VmRSS")
with Engine.load(sys.argv[1], max_model_len=256, num_blocks=16) as engine:
    engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4))
    print(status_mb("VmRSS") - before, status_mb("VmHWM") - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmRSS from /proc")
@pytest.mark.skipif(native_build.SANITIZE, reason="under AddressSanitizer resident memory holds its shadow memory, "
                    "redzones and quarantine, not the engine's own footprint")
def test_resident_memory_is_about_the_file_size(hf_dir, tmp_path):
    """bf16 weights are used as stored: loading does not expand them to
    float32 (that would be twice the file), neither after the load nor at
    its peak."""
    # From a neutral folder: `python -c` puts the current one first on
    # sys.path, and a checkout's vllm_cpp/ has no compiled module unless it
    # was installed in editable mode.
    out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, hf_dir], capture_output=True, text=True, timeout=300,
                         check=True, cwd=tmp_path)
    grown_mb, peak_mb = map(float, out.stdout.strip().splitlines()[-1].split())
    file_mb = os.path.getsize(os.path.join(hf_dir, "model.safetensors")) / 2 ** 20
    assert grown_mb < 1.4 * file_mb, (grown_mb, file_mb)
    # The load's peak too: the weights are copied band by band (on several
    # threads), each band's file pages released once written, so the file
    # and its copies are never both resident whole.
    assert peak_mb < 1.4 * file_mb, (peak_mb, file_mb)
