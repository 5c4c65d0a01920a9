"""``vllm-cpp generate MODEL PROMPT``: one completion, streamed to stdout."""

from __future__ import annotations

import argparse
import sys

from ..engine import Engine
from ..sampling_params import SamplingParams
from .engine_args import sampling_fields


def run_generate(engine: Engine, args: argparse.Namespace) -> int:
    params = SamplingParams(**sampling_fields(args))
    for delta in engine.stream(args.prompt, params):
        sys.stdout.write(delta)
        sys.stdout.flush()
    sys.stdout.write("\n")
    return 0
