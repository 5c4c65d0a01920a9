"""``vllm_cpp.LLM``: vLLM's offline API (generate, chat) over one engine."""

import pytest

from vllm_cpp import LLM, CompletionOutput, InvalidConfigurationError, RequestOutput, SamplingParams

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
    assert completion.cumulative_logprob == pytest.approx(sum(t.logprob for t in completion.logprobs))


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
