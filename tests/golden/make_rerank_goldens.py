"""Regenerate tests/golden/tiny_embed/qwen3-reranker.json: Qwen3-Reranker's
yes/no score done by hand in transformers (issue 43).

The model is the committed tiny Qwen3 decoder of make_embed_goldens.py
(``tiny_embed/qwen3-embedding.hf``: tied embeddings, so its LM head is the
embedding matrix), loaded by transformers as ``Qwen3ForCausalLM`` in float32.
Its 300-token byte-level vocabulary has no "yes"/"no" tokens, so the two
answer tokens are "n" (false) and "y" (true): the engine is loaded with
``hf_overrides={"classifier_from_token": ["n", "y"], ...}``.

Per (query, document) pair, two forms:

- ``qwen3``: Qwen3-Reranker's prompt spelled as vLLM's example
  (examples/offline_inference/qwen3_reranker.py) writes it: prefix (system
  message), ``<Instruct>: {instruction}\\n<Query>: {query}\\n`` then
  ``<Document>: {doc}`` and the suffix (assistant turn with an empty think
  block), tokenized whole by transformers' tokenizer.
- ``plain``: the query's ids then the document's (classifier_from_token
  without is_original_qwen3_reranker).

Recorded: the prompt ids, the last position's logits of "n" and "y", and the
score softmax([no, yes])[1] = sigmoid(yes - no), computed in float64 from
transformers' float32 logits.

Run with a Python that has torch and transformers:
``python tests/golden/make_rerank_goldens.py``.
"""

import json
import pathlib

import numpy as np

import make_moe_goldens  # noqa: F401  (the golden scripts' shared setup: paths, tokenizer)

HERE = make_moe_goldens.HERE
MODEL_DIR = HERE / "tiny_embed" / "qwen3-embedding.hf"
OUT = HERE / "tiny_embed" / "qwen3-reranker.json"

PREFIX = ('<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the '
          'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n')
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
FALSE_TOKEN, TRUE_TOKEN = "n", "y"

QUERY = "What is the capital of China?"
DOCUMENTS = ["The capital of China is Beijing.",
             "Gravity is a force that attracts two bodies towards each other.",
             "Paris is the capital of France."]


def qwen3_prompt(query, doc):
    return f"{PREFIX}<Instruct>: {INSTRUCTION}\n<Query>: {query}\n" + f"<Document>: {doc}{SUFFIX}"


def main():
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(MODEL_DIR)
    model = transformers.AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    no_id, yes_id = (tokenizer.convert_tokens_to_ids(t) for t in (FALSE_TOKEN, TRUE_TOKEN))
    records = []
    for form in ("qwen3", "plain"):
        for doc in DOCUMENTS:
            if form == "qwen3":
                ids = tokenizer(qwen3_prompt(QUERY, doc), add_special_tokens=False)["input_ids"]
            else:
                ids = tokenizer(QUERY)["input_ids"] + tokenizer(doc, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                last = model(torch.tensor([ids])).logits[0, -1].double().numpy()
            pair = np.array([last[no_id], last[yes_id]])
            score = float(np.exp(pair - pair.max())[1] / np.exp(pair - pair.max()).sum())
            records.append(dict(form=form, query=QUERY, document=doc, prompt_ids=ids, logit_no=float(pair[0]),
                                logit_yes=float(pair[1]), score=score))
    OUT.write_text(json.dumps(dict(false_token=FALSE_TOKEN, true_token=TRUE_TOKEN, no_id=no_id, yes_id=yes_id,
                                   records=records), indent=1))
    print("\n".join(f"{r['form']}: {len(r['prompt_ids'])} ids, score {r['score']:.6f}" for r in records))


if __name__ == "__main__":
    main()
