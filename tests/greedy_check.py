"""The near-tie rule for greedy ids against a reference (shared by
test_correctness.py and test_gemma3.py).

Two implementations that round differently can pick different argmaxes where
the reference's top two logits are nearly tied; after the first such step
their continuations are unrelated. So a prompt passes when the ids are
identical, or when at the first difference the reference's top-2 gap is
below ``gap_threshold``.
"""


def first_difference(a, b):
    """Index of the first differing element, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None


def greedy_failures(prompts, outputs, gap_threshold):
    """One message per prompt that breaks the rule. ``prompts``: dicts with
    name, ref_ids and ref_gaps; ``outputs``: our greedy ids, one list per prompt."""
    if len(outputs) != len(prompts):
        return [f"{len(outputs)} outputs for {len(prompts)} prompts"]
    failures = []
    for prompt, ours in zip(prompts, outputs):
        ref, gaps = list(prompt["ref_ids"]), list(prompt["ref_gaps"])
        if len(ours) != len(ref):
            failures.append(f"{prompt['name']}: {len(ours)} ids, expected {len(ref)}")
            continue
        diff = first_difference(ours, ref)
        if diff is not None and gaps[diff] >= gap_threshold:
            failures.append(f"{prompt['name']}: first difference at step {diff}, reference gap {gaps[diff]:.3f} "
                            f"(>= {gap_threshold}): ours {ours} vs reference {ref}")
    return failures
