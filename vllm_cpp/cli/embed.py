"""``vllm-cpp embed MODEL TEXT...``: one embedding per text, printed as a
JSON list of floats per line (the engine's pooling and normalisation; the
model runs as a pooling model unless --runner says otherwise)."""

from __future__ import annotations

import argparse
import json
import sys

from ..engine import Engine


def add_embed_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("texts", metavar="TEXT", nargs="+", help="a text to embed (one vector each)")
    parser.add_argument("--dimensions", type=int, default=None, metavar="N",
                        help="keep the first N dimensions (Matryoshka models only), then normalise")
    parser.add_argument("--truncate-prompt-tokens", type=int, default=None, metavar="K",
                        help="embed only each text's last K tokens (-1: max_model_len)")


def run_embed(engine: Engine, args: argparse.Namespace) -> int:
    for vector in engine.embed(list(args.texts), dimensions=args.dimensions,
                               truncate_prompt_tokens=args.truncate_prompt_tokens):
        sys.stdout.write(json.dumps(vector) + "\n")
    return 0
