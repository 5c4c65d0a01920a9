"""``vllm_cpp.LLM``: vLLM's offline API (generate, chat) over one engine."""

import json

import pytest
import vllm_cpp

from vllm_cpp import (LLM, CompletionOutput, InvalidArgumentError, InvalidConfigurationError, RequestOutput,
                      SamplingParams, StructuredOutput)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def llm(smollm2_path):
    with LLM(model=smollm2_path, max_model_len=256, enable_prefix_caching=False) as model:
        yield model


def test_generate_batch(llm):
    prompts = ["The capital of France is", "Once upon a time", "def fibonacci(n):"]
    params = SamplingParams(temperature=0.0, max_tokens=8)
    outputs = llm.generate(prompts, params)
    assert [o.prompt for o in outputs] == prompts
    assert len({o.request_id for o in outputs}) == 3
    for prompt, output in zip(prompts, outputs):
        assert isinstance(output, RequestOutput) and output.finished
        [completion] = output.outputs
        assert isinstance(completion, CompletionOutput) and completion.finished()
        alone = llm.engine.complete(prompt, params)
        assert completion.text == alone.text
        assert len(completion.token_ids) == alone.completion_tokens
        assert completion.finish_reason in ("length", "stop")
        assert output.prompt_token_ids == llm.get_tokenizer().encode(prompt)
    assert llm.get_tokenizer().decode(outputs[0].outputs[0].token_ids) == outputs[0].outputs[0].text


def test_prompt_forms_and_params(llm):
    ids = llm.get_tokenizer().encode("Once upon a time")
    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    [by_text] = llm.generate("Once upon a time", greedy)
    by_ids, by_dict = llm.generate([{"prompt_token_ids": ids}, {"prompt": "Once upon a time"}], greedy)
    assert by_ids.prompt is None and by_ids.prompt_token_ids == ids
    assert by_text.outputs[0].text == by_ids.outputs[0].text == by_dict.outputs[0].text
    [single_ids] = llm.generate(ids, greedy)
    assert single_ids.outputs[0].text == by_text.outputs[0].text

    short, long = llm.generate(["a", "b"], [SamplingParams(max_tokens=1), SamplingParams(max_tokens=5,
                                                                                          ignore_eos=True)])
    assert len(short.outputs[0].token_ids) == 1 and len(long.outputs[0].token_ids) == 5
    with pytest.raises(InvalidConfigurationError, match="2 prompts"):
        llm.generate(["a", "b"], [greedy])
    with pytest.raises(InvalidConfigurationError, match="prompt_token_ids"):
        llm.generate([{"text": "a"}], greedy)

    [with_logprobs] = llm.generate("Once upon a time", SamplingParams(temperature=0.0, max_tokens=4, logprobs=1))
    completion = with_logprobs.outputs[0]
    chosen = [position[token].logprob for position, token in zip(completion.logprobs, completion.token_ids)]
    assert completion.cumulative_logprob == pytest.approx(sum(chosen))


def test_generate_logprobs_are_vllm_shaped(llm):
    """vLLM's shape: per position a dict token id -> Logprob(logprob, rank,
    decoded_token), the chosen token first (a vLLM script's `.items()`
    works); the values are the native Engine API's (which keeps TokenLogprob)."""
    params = SamplingParams(temperature=0.0, max_tokens=4, logprobs=3, prompt_logprobs=2)
    [output] = llm.generate("Once upon a time", params)
    native = llm.engine.complete("Once upon a time", params)
    completion = output.outputs[0]
    assert len(completion.logprobs) == len(completion.token_ids) == len(native.logprobs)
    for position, token, entry in zip(completion.logprobs, completion.token_ids, native.logprobs):
        assert isinstance(position, dict) and next(iter(position)) == token
        assert all(isinstance(k, int) and isinstance(v, vllm_cpp.Logprob) for k, v in position.items())
        assert position[token] == vllm_cpp.Logprob(entry.logprob, entry.rank, entry.token)
        assert position[token].rank == 1  # greedy: the most likely token
        alternatives = {alt.token_id: alt.logprob for alt in entry.top_logprobs}
        assert {k: v.logprob for k, v in position.items() if k in alternatives} == alternatives
        assert sorted(v.rank for k, v in position.items() if k in alternatives) == [1, 2, 3]
    assert output.prompt_logprobs[0] is None
    first = output.prompt_logprobs[1]
    assert isinstance(first, dict) and next(iter(first)) == output.prompt_token_ids[1]
    assert all(isinstance(v.decoded_token, str) and v.rank >= 1 for v in first.values())


def test_chat(llm):
    conversation = [{"role": "user", "content": "What is the capital of France?"}]
    params = SamplingParams(temperature=0.0, max_tokens=8)
    [output] = llm.chat(conversation, params)
    expected = llm.engine.chat({"messages": conversation, "temperature": 0.0, "max_tokens": 8})
    assert output.outputs[0].text == expected["choices"][0]["message"]["content"]
    assert output.outputs[0].finish_reason == expected["choices"][0]["finish_reason"]
    assert len(output.prompt_token_ids) == expected["usage"]["prompt_tokens"]
    batch = llm.chat([conversation, [{"role": "user", "content": "Hi"}]], params)
    assert [o.outputs[0].text for o in batch][0] == output.outputs[0].text
    assert len(batch) == 2

    def processor(ids, logits):
        pass

    with pytest.raises(InvalidConfigurationError, match="logits processors"):
        llm.chat(conversation, SamplingParams(max_tokens=2, logits_processor=processor))


def test_n_sequences_per_prompt(llm):
    """SamplingParams.n as vLLM's: n outputs per prompt, indexed; a seeded
    sequence i is the one-sequence request with seed + i."""
    prompts = ["Once upon a time", "The capital of France is"]
    first, second = llm.generate(prompts, SamplingParams(n=3, seed=7, max_tokens=8))
    for prompt, output in zip(prompts, (first, second)):
        assert [c.index for c in output.outputs] == [0, 1, 2]
        alone = [llm.engine.complete(prompt, SamplingParams(seed=7 + i, max_tokens=8)).text for i in range(3)]
        assert [c.text for c in output.outputs] == alone
    assert len({c.text for c in first.outputs}) > 1
    # The engine's protocol room (the server's /v1/completions) fans n out by the same rule.
    room = json.loads(llm.engine.completions_json(json.dumps({"prompt": prompts, "n": 3, "seed": 7, "max_tokens": 8})))
    assert [c["text"] for c in room["choices"]] == [c.text for o in (first, second) for c in o.outputs]
    greedy, = llm.generate(prompts[0], SamplingParams(n=2, temperature=0.0, max_tokens=6))
    assert greedy.outputs[0].token_ids == greedy.outputs[1].token_ids
    mixed = llm.generate(prompts, [SamplingParams(n=2, max_tokens=2), SamplingParams(max_tokens=2)])
    assert [len(o.outputs) for o in mixed] == [2, 1]

    conversation = [{"role": "user", "content": "Hi"}]
    [chat] = llm.chat(conversation, SamplingParams(n=2, seed=1, max_tokens=8))
    expected = llm.engine.chat({"messages": conversation, "n": 2, "seed": 1, "max_tokens": 8})
    assert [c.index for c in chat.outputs] == [0, 1]
    assert [c.text for c in chat.outputs] == [c["message"]["content"] for c in expected["choices"]]


def test_n_refused_where_it_cannot_apply(llm):
    with pytest.raises(InvalidConfigurationError, match="n=0"):
        SamplingParams(n=0)
    with pytest.raises(InvalidConfigurationError, match="n=2: an engine request samples one sequence"):
        llm.engine.complete("a", SamplingParams(n=2, max_tokens=2))
    with pytest.raises(InvalidArgumentError, match="'n' must be between 1 and 128"):
        llm.chat([{"role": "user", "content": "Hi"}], SamplingParams(n=129, max_tokens=2))
    assert llm.engine.complete("a", SamplingParams.greedy(max_tokens=2)).completion_tokens >= 1


def test_chat_outputs_carry_token_ids(llm):
    conversation = [{"role": "user", "content": "What is the capital of France?"}]
    [output] = llm.chat(conversation, SamplingParams(temperature=0.0, max_tokens=8))
    completion = output.outputs[0]
    assert len(completion.token_ids) == 8 or completion.finish_reason == "stop"
    assert llm.get_tokenizer().decode(completion.token_ids) == completion.text
    assert output.prompt_token_ids == llm.engine.tokenize_chat({"messages": conversation})
    # Logprobs by token id (the chat call's return_tokens_as_token_ids), as
    # LLM.generate reports them for the same prompt ids.
    [scored] = llm.chat(conversation, SamplingParams(temperature=0.0, max_tokens=4, logprobs=2))
    entries = scored.outputs[0].logprobs
    assert [next(iter(e)) for e in entries] == list(scored.outputs[0].token_ids)
    [direct] = llm.generate({"prompt_token_ids": output.prompt_token_ids},
                            SamplingParams(temperature=0.0, max_tokens=4, logprobs=2))
    assert [{k: (v.logprob, v.decoded_token) for k, v in e.items()} for e in entries] == \
        [{k: (v.logprob, v.decoded_token) for k, v in e.items()} for e in direct.outputs[0].logprobs]
    assert scored.outputs[0].cumulative_logprob == pytest.approx(
        sum(e[t].logprob for e, t in zip(entries, scored.outputs[0].token_ids)))


def test_logit_bias_in_generate_and_chat(llm):
    london = llm.get_tokenizer().encode(" London", add_special_tokens=False)[0]
    params = SamplingParams.greedy(max_tokens=3, logit_bias={london: 100})
    [generated] = llm.generate(["The capital of France is"], params)
    assert generated.outputs[0].text == " London London London"
    [chatted] = llm.chat([{"role": "user", "content": "Hi"}], SamplingParams.greedy(max_tokens=3,
                                                                                    allowed_token_ids=[london]))
    assert chatted.outputs[0].text == " London London London"


def test_chat_takes_every_structured_output_kind(llm):
    ask = [{"role": "user", "content": "Is the sky blue?"}]
    for constraint, allowed in ((StructuredOutput.choice(["yes", "no"]), {"yes", "no"}),
                                (StructuredOutput.regex("(maybe|never)"), {"maybe", "never"})):
        [output] = llm.chat(ask, SamplingParams.greedy(max_tokens=8, structured_output=constraint))
        assert output.outputs[0].text in allowed
