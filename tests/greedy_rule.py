"""The acceptance rule for a greedy continuation against another one (the
foundation issue's): the ids must be equal, except that from the first
position where they differ on nothing more is asked when the other side's
top-2 logit gap there is below GAP_THRESHOLD (a near-tie, which 8-bit
activation rounding may flip). Used against the float reference
(test_correctness.py) and against llama.cpp (test_quant_mixes.py).
"""

GAP_THRESHOLD = 0.35


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
