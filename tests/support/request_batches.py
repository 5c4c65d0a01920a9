"""Requests submitted together and read to their end: the batch-invariance
tests' shared step (each compares these ids with the same requests run alone)."""


def completed_ids(vllm_cpp, requests, n_new):
    """Each request's first ``n_new`` ids once it completed (asserted), in
    order; every request closed."""
    out = []
    for r in requests:
        assert r.wait() is vllm_cpp.RequestOutcome.COMPLETED
        out.append(r.token_ids(0, n_new))
        r.close()
    return out
