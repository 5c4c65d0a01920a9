"""The acceptance rule for a greedy continuation against another one (the
foundation issue's): the ids must be equal, except that from the first
position where they differ on nothing more is asked when the other side's
top-2 logit gap there is below a threshold (a near-tie, which 8-bit
activation rounding may flip; after it the continuations are unrelated).

GAP_THRESHOLD holds against an exact float reference (test_correctness.py).
Against llama.cpp (test_gemma3.py, test_quant_mixes.py) both sides round,
at different points (llama.cpp also rounds its activation scales and Q8_1
block sums to fp16), so their logit errors add: PEER_GAP_THRESHOLD is
twice GAP_THRESHOLD, the triangle inequality's bound for two errors each
within it. Measured on SmolLM2's mixes: departures at gaps up to 0.56
(Q5_K_S), 0.40 on the bundled Q4_1 file itself.
"""

GAP_THRESHOLD = 0.35
PEER_GAP_THRESHOLD = 2 * GAP_THRESHOLD


def first_difference(a, b):
    """The first index where a and b differ, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None


def divergence(ours, theirs, their_gaps, threshold=GAP_THRESHOLD):
    """(step, gap) where ``ours`` first differs from ``theirs`` at a gap of at
    least ``threshold`` (a real disagreement), else None."""
    diff = first_difference(ours, theirs)
    if diff is not None and their_gaps[diff] >= threshold:
        return diff, their_gaps[diff]
    return None


def greedy_failures(prompts, outputs, gap_threshold=GAP_THRESHOLD):
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
        found = divergence(ours, ref, gaps, gap_threshold)
        if found is not None:
            failures.append(f"{prompt['name']}: first difference at step {found[0]}, reference gap {found[1]:.3f} "
                            f"(>= {gap_threshold}): ours {ours} vs reference {ref}")
    return failures
