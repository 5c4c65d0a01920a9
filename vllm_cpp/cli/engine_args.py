"""The engine flags every subcommand shares, named as vLLM names them, and
their translation into ``Engine.load`` options, both from the engine option
table (``engine_options.ENGINE_OPTION_TABLE``). Values the engine refuses (an unknown
scheduling policy, a speculative config) are passed through for the engine
to refuse with its own message."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Dict

from ..engine_options import ENGINE_OPTION_TABLE


class UsageError(Exception):
    """A flag the command cannot honour (one line, exit status 2)."""


def _argparse_type(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert`` with its refusal as argparse's one-line message (int and
    str keep argparse's own)."""
    if convert in (int, str):
        return convert

    def parse(text: str) -> Any:
        try:
            return convert(text)
        except (ValueError, OSError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = convert.__name__
    return parse


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """One flag per engine option the table marks for the command line,
    named ``--<vLLM's name with dashes>``."""
    group = parser.add_argument_group("engine options")
    for option in ENGINE_OPTION_TABLE:
        if not option.cli:
            continue
        flag = "--" + option.flag_name.replace("_", "-")
        if option.kind.cli_type is None:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=option.cli_help)
        else:
            group.add_argument(flag, type=_argparse_type(option.kind.cli_type), default=None,
                               metavar=option.metavar, help=option.cli_help)


def engine_options(args: argparse.Namespace) -> Dict[str, Any]:
    """``Engine.load`` keyword arguments for the parsed flags."""
    return {option.name: getattr(args, option.flag_name)
            for option in ENGINE_OPTION_TABLE if option.cli}


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
