"""The engine's own test programs, run from this suite.

test_c_abi is a plain C client of libvllm (NULL pointers into every entry
point, bad parameters, refusals, a real completion), stress_c_abi a
concurrency stress of it; test_kernels, test_moe (the mixture-of-experts
block's router and grouped expert MLP), test_attention, test_latent_attention
(multi-head latent attention's absorbed kernel against the expanded form), test_thread_pool,
test_huge_pages (the weights' memory), test_sampler, test_reasoning_gate (the
thinking budget's gate), test_sampling_fields
(the one parser of the sampling fields), test_engine_fields (that of the
engine options), the serving core's
(test_scheduler, test_block_pool, test_kv_cache_groups and
test_output_processor: fake requests, no model), test_recursion_budget
and test_tokenizer are C++ unit tests of internals. Each prints
"N passed, M failed" and exits non-zero on failure.
"""

import os
import pathlib

import pytest

from native_build import build_native_tests, run_program

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.mark.timeout(900)
def test_c_abi_without_model(build):
    run_program(build, "test_c_abi")


@pytest.mark.timeout(600)
def test_c_abi_with_model(build, smollm2_path):
    run_program(build, "test_c_abi", smollm2_path)


@pytest.mark.timeout(300)
def test_c_abi_concurrency_stress(build, smollm2_path):
    """stress_c_abi: threads submitting, streaming, cancelling and freeing
    requests (also from their own callbacks), pull requests, chats; the
    engine freed at once after each round. A short smoke here; tests/
    sanitize.py tsan runs it longer under ThreadSanitizer."""
    run_program(build, "stress_c_abi", smollm2_path, 3, 2, 6)


@pytest.mark.timeout(600)
def test_kernels(build):
    run_program(build, "test_kernels")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512", "neon"])
def test_moe(build, isa):
    """test_moe: the MoE router, and the grouped expert MLP equal to each
    token run alone, bit for bit, on each kernel build this CPU runs."""
    result = run_program(build, "test_moe", env={**os.environ, "VLLM_CPP_ISA": isa})
    if f"kernel build: {isa}" not in result.stdout:
        pytest.skip(f"this CPU has no {isa} build (ran {result.stdout.splitlines()[0]})")


@pytest.mark.timeout(120)
def test_latent_attention_kernel(build):
    """test_latent_attention: multi-head latent attention's absorbed kernel
    equals attention over the expanded K/V."""
    run_program(build, "test_latent_attention")


@pytest.mark.timeout(300)
def test_thread_pool(build):
    run_program(build, "test_thread_pool")


@pytest.mark.timeout(300)
def test_huge_pages(build):
    run_program(build, "test_huge_pages")


@pytest.mark.timeout(300)
def test_recursion_budget(build):
    """Every recursive walk (JSON, GBNF, regex, JSON Schema and $ref, the
    Jinja parser and evaluator, tool-call literals) refused past its limit at
    depths 10^3..10^6, on the main thread and on 128/256 KiB threads."""
    run_program(build, "test_recursion_budget")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("program", ["test_sampler", "test_sampling_fields", "test_engine_fields",
                                     "test_reasoning_gate"])
def test_sampling(build, program):
    run_program(build, program)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("program", ["test_kv_cache_groups", "test_scheduler", "test_block_pool",
                                     "test_output_processor", "test_recurrent_state_group"])
def test_serving_core(build, program):
    # Fake requests, no model: the scheduler, the block pool and KV cache
    # manager, the output processor.
    run_program(build, program)


@pytest.mark.timeout(300)
def test_delta_rule(build):
    # Qwen3.5's gated delta rule: the chunked (prefill) and recurrent
    # (decode) forms equal each other and the definition, state carried.
    run_program(build, "test_delta_rule")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
def test_attention_kernel(build, isa):
    # VLLM_CPP_ISA only lowers the level: on a CPU without the ISA this runs a lower build.
    run_program(build, "test_attention", env={**os.environ, "VLLM_CPP_ISA": isa})


@pytest.mark.timeout(600)
def test_tokenizer_against_llamacpp_golden(build, smollm2_path):
    run_program(build, "test_tokenizer", smollm2_path, GOLDEN / "tokenizer_smollm2.txt")


@pytest.mark.timeout(300)
def test_x86_features_agree_with_the_compiler(build):
    run_program(build, "test_x86_features")


def test_messages_protocol(build):
    """test_messages_protocol: Anthropic Messages requests translated into
    chat requests (every block kind, tool pairing, refusals by name), and
    the message and stream-event builders."""
    run_program(build, "test_messages_protocol")
