"""What got in a new user's way in the first hour (issue 39), each fixed
and kept fixed: the checkout's vllm_cpp/ shadowing the installed package
says so; a machine without a compiler gets one line naming what to
install; the bundled models have short names and short served names; a
chat on a model without a template warns once, naming the fallback and
--chat-template. (The command line's --help text, `vllm-cpp models` and
bench progress are in test_cli.py; vLLM-shaped logprobs in test_llm.py.)"""

import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

import pytest

import vllm_cpp
from vllm_cpp import LLM, SamplingParams
from vllm_cpp.chat_template import FALLBACK_WARNING, uses_plain_fallback
from vllm_cpp.models import BUNDLED_MODELS, resolve_model, served_name

ROOT = pathlib.Path(__file__).resolve().parents[2]


def installed_package_dir():
    """The installed (not editable) package's folder with its compiled
    module, or None."""
    try:
        files = importlib.metadata.distribution("vllm-cpp").files or ()
    except importlib.metadata.PackageNotFoundError:
        return None
    for name in files:
        if name.name.startswith("_vllm_ffi") and os.path.isfile(str(name.locate())):
            return os.path.dirname(os.path.abspath(str(name.locate())))
    return None


def test_a_checkout_shadowing_the_install_says_so(tmp_path):
    """`python -c 'import vllm_cpp'` from a checkout's root after
    `pip install .` imports the checkout's uncompiled folder: the error
    names both folders and what to do."""
    installed = installed_package_dir()
    if installed is None:
        pytest.skip("no installed (non-editable) vllm-cpp with its compiled module in this environment")
    source = os.path.dirname(os.path.abspath(vllm_cpp.__file__))
    shutil.copytree(source, str(tmp_path / "vllm_cpp"),
                    ignore=shutil.ignore_patterns("_vllm_ffi*", "libvllm*", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", "import vllm_cpp"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    message = proc.stderr.strip().splitlines()[-1]
    assert "source checkout" in message and str(tmp_path / "vllm_cpp") in message and installed in message
    assert "Run from another directory" in message and "pip install -e ." in message


def test_no_compiler_is_one_line_naming_what_to_install(tmp_path):
    """setup.py's build_ext without a C/C++ compiler on PATH stops before
    CMake with one line naming the packages to install."""
    if not (ROOT / "setup.py").is_file():
        pytest.skip("not a source checkout (no setup.py)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, str(bin_dir / "python"))
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX", "VLLM_CPP_ZIG_TARGET", "PYTHONPATH")}
    env["PATH"] = str(bin_dir)
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "temp"),
                           "--build-lib", str(tmp_path / "lib")], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("vllm-cpp: no C or C++ compiler found"), proc.stderr[-2000:]
    assert "apt-get install g++" in last and "xcode-select --install" in last
    assert "CMake Error" not in proc.stdout + proc.stderr


def test_short_model_names(smollm2_path):
    assert resolve_model("smollm2") == (smollm2_path, "smollm2")
    assert resolve_model(smollm2_path) == (smollm2_path, "SmolLM2-135M-Instruct.Q4_1")
    assert served_name("/models/some-dir/") == "some-dir"
    assert set(BUNDLED_MODELS) == {"smollm2", "gemma3-270m"}
    # A missing package is FileNotFoundError with the install command.
    missing = BUNDLED_MODELS["smollm2"]._replace(package="no_such_package_xyz")
    assert not missing.installed()


def test_template_less_model_warns_once(gemma3_gguf, smollm2_path):
    """The bundled Gemma 3 270M base has no chat template: LLM.chat warns
    once (not per call), naming the fallback and --chat-template; a model
    with a template, or a call that gives one, does not warn."""
    assert "--chat-template" in FALLBACK_WARNING and "'user: ...'" in FALLBACK_WARNING
    conversation = [{"role": "user", "content": "Hi"}]
    with LLM(model=gemma3_gguf, max_model_len=256) as llm:
        assert uses_plain_fallback(llm.engine)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            llm.chat(conversation, SamplingParams.greedy(max_tokens=2))
            llm.chat(conversation, SamplingParams.greedy(max_tokens=2))
        assert [str(w.message) for w in caught] == [FALLBACK_WARNING]
    with LLM(model=smollm2_path, max_model_len=256) as llm:
        assert not uses_plain_fallback(llm.engine)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            llm.chat(conversation, SamplingParams.greedy(max_tokens=2))
        assert not caught
