"""The engine flags every subcommand shares, named as vLLM names them, and
their translation into ``Engine.load`` options. Values the engine refuses
(an unknown scheduling policy, a speculative config) are passed through for
the engine to refuse with its own message."""

from __future__ import annotations

import argparse
from typing import Any, Dict

from ..core import Toggle


class UsageError(Exception):
    """A flag the command cannot honour (one line, exit status 2)."""


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine options")
    group.add_argument("--max-model-len", type=int, default=None, metavar="N",
                       help="model context length (prompt + output); default: the model's")
    group.add_argument("--max-num-seqs", type=int, default=None, metavar="N",
                       help="maximum number of sequences per iteration (default 8)")
    group.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                       help="maximum number of batched tokens per iteration (default 2048)")
    group.add_argument("--block-size", type=int, default=None, metavar="N",
                       help="token block size of the paged KV cache (default 16)")
    group.add_argument("--num-blocks", type=int, default=None, metavar="N",
                       help="number of KV cache blocks; default: sized from VLLM_CPP_KV_CACHE_MB")
    group.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None,
                       help="automatic prefix caching (on by default)")
    group.add_argument("--scheduling-policy", default=None, metavar="POLICY",
                       help="fcfs (default), priority or lpm")
    group.add_argument("--tool-call-parser", default=None, metavar="NAME",
                       help="hermes, llama3_json, mistral or pythonic; default: detected from the template")
    group.add_argument("--reasoning-parser", default=None, metavar="NAME",
                       help="deepseek_r1, qwen3, mistral or none; default: detected from the template")
    group.add_argument("--speculative-config", default=None, metavar="JSON",
                       help="speculative decoding configuration (JSON)")
    group.add_argument("--kv-transfer-config", default=None, metavar="JSON",
                       help="KV transfer connector configuration (JSON)")
    group.add_argument("--chat-template", default=None, metavar="FILE",
                       help="a chat template file to use instead of the model's")


def engine_options(args: argparse.Namespace) -> Dict[str, Any]:
    """``Engine.load`` keyword arguments for the parsed flags."""
    prefix = args.enable_prefix_caching
    return {
        "max_model_len": args.max_model_len,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "block_size": args.block_size,
        "num_blocks": args.num_blocks,
        "prefix_caching": None if prefix is None else (Toggle.ON if prefix else Toggle.OFF),
        "scheduler": args.scheduling_policy,
        "tool_parser": args.tool_call_parser,
        "reasoning_parser": args.reasoning_parser,
        "speculative_config": args.speculative_config,
        "kv_transfer_config": args.kv_transfer_config,
    }


def add_sampling_args(parser: argparse.ArgumentParser, max_tokens: int) -> None:
    group = parser.add_argument_group("sampling options")
    group.add_argument("--max-tokens", type=int, default=max_tokens, metavar="N",
                       help="maximum number of generated tokens (default %d)" % max_tokens)
    group.add_argument("--temperature", type=float, default=0.7,
                       help="sampling temperature (default 0.7; 0: greedy)")
    group.add_argument("--top-p", type=float, default=1.0,
                       help="nucleus sampling probability mass (default 1.0)")
    group.add_argument("--top-k", type=int, default=0, help="top-k sampling (default 0: all tokens)")
    group.add_argument("--seed", type=int, default=None, help="random seed (default: unseeded)")


def sampling_fields(args: argparse.Namespace) -> Dict[str, Any]:
    """The sampling flags as SamplingParams / OpenAI request fields."""
    fields: Dict[str, Any] = {"max_tokens": args.max_tokens, "temperature": args.temperature,
                              "top_p": args.top_p, "top_k": args.top_k}
    if args.seed is not None:
        fields["seed"] = args.seed
    return fields
