"""``vllm-cpp``: argument parsing and dispatch.

Flag errors print one line (``vllm-cpp serve: error: ...``) and exit with
status 2, as do option values the engine refuses at load; a model that
cannot be loaded exits with 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .. import __version__
from ..errors import InvalidArgumentError, InvalidConfigurationError, VllmError
from ..models import resolve_model
from .bench import client_counts, run_bench
from .embed import add_embed_args, run_embed
from .engine_args import UsageError, add_engine_args, add_sampling_args, engine_options
from .kv_events_args import add_kv_events_args
from .models import run_models

MODEL_HELP = ("a bundled model's short name (smollm2, gemma3-270m: see 'vllm-cpp models'), "
              "a GGUF file or a Hugging Face model directory")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit status 2
        self.exit(2, "%s: error: %s\n" % (self.prog, message))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vllm-cpp", description="vllm-cpp: a C++ LLM inference engine with vLLM's interface.")
    parser.add_argument("-v", "--version", action="version", version="vllm-cpp " + __version__)
    commands = parser.add_subparsers(dest="command", metavar="{serve,generate,chat,bench,models}", parser_class=_Parser)
    commands.required = True

    serve = commands.add_parser("serve", help="Start the OpenAI-compatible API server.",
                                description="Start the OpenAI-compatible API server for MODEL.",
                                usage="vllm-cpp serve MODEL [options]")
    serve.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    group = serve.add_argument_group("server options")
    group.add_argument("--host", default="127.0.0.1", help="host name to bind (default 127.0.0.1)")
    group.add_argument("--port", type=int, default=8000, help="port number (default 8000; 0: any free port)")
    group.add_argument("--api-key", default=None, metavar="KEY",
                       help="require this key in 'Authorization: Bearer KEY' (default: env VLLM_API_KEY)")
    group.add_argument("--served-model-name", default=None, metavar="NAME",
                       help="the model name in the API and the metrics (default: the short name, "
                            "or the file's name without its extension)")
    group.add_argument("--enable-auto-tool-choice", action="store_true",
                       help="allow tool_choice 'auto' (needs a tool call parser)")
    group.add_argument("--trust-request-chat-template", action="store_true",
                       help="use a request's own chat_template (refused by default, as in vLLM)")
    group.add_argument("--max-pending-requests", type=int, default=256, metavar="N",
                       help="engine requests in flight before the server answers 503 (default 256)")
    group.add_argument("--max-request-bytes", type=int, default=16 * 1024 * 1024, metavar="N",
                       help="largest request body accepted, larger ones get 413 (default 16 MiB)")
    group.add_argument("--max-n", type=int, default=16, metavar="N",
                       help="most choices one request may ask for ('n', 'best_of'; default 16)")
    group.add_argument("--max-tokens-limit", type=int, default=None, metavar="N",
                       help="largest 'max_tokens' accepted (default: the model's max_model_len)")
    group.add_argument("--max-stop-strings", type=int, default=16, metavar="N",
                       help="most 'stop' strings in one request (default 16)")
    group.add_argument("--max-stop-string-bytes", type=int, default=4096, metavar="N",
                       help="longest 'stop' string accepted, in UTF-8 bytes (default 4096)")
    group.add_argument("--max-tools", type=int, default=128, metavar="N",
                       help="most 'tools' in one request (default 128, OpenAI's bound)")
    group.add_argument("--request-header-timeout", type=float, default=30.0, metavar="SECONDS",
                       help="seconds a client may take to send a request's headers; then 408 and the "
                            "connection is closed (default 30)")
    group.add_argument("--request-body-timeout", type=float, default=60.0, metavar="SECONDS",
                       help="seconds a client may take to send a request's whole body; then 408 and the "
                            "connection is closed (default 60)")
    group.add_argument("--max-connections-per-client", type=int, default=256, metavar="N",
                       help="connections one client address may hold open; further ones get 429 (default 256)")
    group.add_argument("--uvicorn-log-level", default="warning",
                       choices=["critical", "error", "warning", "info", "debug", "trace"],
                       help="uvicorn's own log level (requests are logged by vllm-cpp; default warning)")
    group.add_argument("--responses-store-max-entries", type=int, default=1024, metavar="N",
                       help="/v1/responses: most responses kept for previous_response_id and GET; the oldest "
                            "go first (default 1024; 0 keeps none)")
    group.add_argument("--responses-store-max-age", type=float, default=3600.0, metavar="SECONDS",
                       help="/v1/responses: seconds a stored response is kept (default 3600)")
    group.add_argument("--responses-store-max-bytes", type=int, default=256 << 20, metavar="BYTES",
                       help="/v1/responses: most bytes of stored responses (as JSON, with their conversations); "
                            "the oldest go first (default 268435456)")
    group.add_argument("--messages-ping-interval", type=float, default=15.0, metavar="SECONDS",
                       help="/v1/messages: a stream idle this long gets a ping event, as Anthropic's streams "
                            "do (default 15)")
    ray = serve.add_argument_group("Ray Serve options (the [ray] extra; docs/ray-serve.md)")
    ray.add_argument("--replicas", type=int, default=None, metavar="N",
                     help="serve with N engine replicas on Ray Serve, each of --num-threads threads (default 1) "
                          "and as many Serve CPUs")
    ray.add_argument("--max-replicas", type=int, default=None, metavar="N",
                     help="autoscale between --replicas and N replicas on ongoing requests")
    ray.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="the Ray cluster to join (default: RAY_ADDRESS, else a local Ray started for the server)")
    ray.add_argument("--ray-router", default="prefix", choices=["prefix", "pow2"],
                     help="replica routing: prefix-cache affinity (default) or Serve's power of two choices")
    group.add_argument("--lora-modules", nargs="+", default=None, metavar="NAME=PATH",
                       help="LoRA adapters served by name (with --enable-lora), vLLM's syntax: name=path, or "
                            "'{\"name\": ..., \"path\": ..., \"base_model_name\": ...}'; a request's model field "
                            "picks one")
    group.add_argument("--allowed-media-domains", nargs="+", default=None, metavar="HOST",
                       help="chat image_url parts may name http(s) URLs on these hosts (exact names); the server "
                            "fetches them (off by default: remote URLs are refused)")
    group.add_argument("--allowed-local-media-path", default=None, metavar="DIR",
                       help="chat image_url parts may name file:// URLs of files under DIR (resolved: symlinks "
                            "and '..' cannot leave it; off by default)")
    group.add_argument("--media-fetch-timeout", type=float, default=5.0, metavar="SECONDS",
                       help="an image URL's whole fetch (connect, redirects, body) may take this long (default 5)")
    group.add_argument("--media-fetch-max-bytes", type=int, default=32 << 20, metavar="N",
                       help="an image URL's body may be this many bytes (default 33554432)")
    group.add_argument("--media-fetch-max-redirects", type=int, default=3, metavar="N",
                       help="redirects an image URL's fetch follows, each target checked against "
                            "--allowed-media-domains (default 3)")
    add_engine_args(serve)
    add_kv_events_args(serve)

    generate = commands.add_parser("generate", help="Complete one prompt and print the text as it streams.",
                                   usage="vllm-cpp generate MODEL PROMPT [options]")
    generate.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    generate.add_argument("prompt", metavar="PROMPT", help="the prompt text")
    add_sampling_args(generate, 64)
    add_engine_args(generate)

    chat = commands.add_parser("chat", help="Chat with the model in the terminal (its chat template, streaming).",
                               usage="vllm-cpp chat MODEL [options]")
    chat.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    chat.add_argument("--system", default=None, help="a system message")
    add_sampling_args(chat, 256)
    add_engine_args(chat)

    bench = commands.add_parser("bench", help="Measure throughput and latency on this machine.",
                                usage="vllm-cpp bench MODEL [options]")
    bench.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    bench.add_argument("--concurrency", type=client_counts, default=[1, 8, 32], metavar="N,N,...",
                       help="client counts to measure (default 1,8,32)")
    bench.add_argument("--input-len", type=int, default=128, metavar="N", help="prompt tokens (default 128)")
    bench.add_argument("--output-len", type=int, default=128, metavar="N", help="output tokens (default 128)")
    bench.add_argument("--json", default=None, metavar="PATH",
                       help="also write the results, with each request's time to first token, to PATH "
                            "(what bench/plot_results.py reads)")
    add_engine_args(bench)

    embed = commands.add_parser("embed", help="Print one embedding per text (a JSON list of floats per line).",
                                usage="vllm-cpp embed MODEL TEXT... [options]")
    embed.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    add_embed_args(embed)
    add_engine_args(embed)

    commands.add_parser("models", help="List the bundled models (short names) and whether they are installed.",
                        usage="vllm-cpp models")
    return parser


def _load(args: argparse.Namespace):
    from ..engine import Engine

    options = engine_options(args)
    if args.command == "embed":
        if options.get("runner") is None:  # the command's job; --runner both also serves it
            options["runner"] = "pooling"
    return Engine.load(args.model, **options)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = "vllm-cpp " + args.command
    if args.command == "models":
        return run_models()
    try:
        args.model, args.short_name = resolve_model(args.model)
    except FileNotFoundError as exc:
        print("%s: error: %s" % (prog, exc), file=sys.stderr)
        return 1
    try:
        if args.command == "serve":
            from .serve import run_serve
            return run_serve(args, _load)
        engine = _load(args)
        with engine:
            if args.command == "generate":
                from .generate import run_generate
                return run_generate(engine, args)
            if args.command == "embed":
                return run_embed(engine, args)
            if args.command == "chat":
                from .chat import run_chat
                return run_chat(engine, args)
            return run_bench(engine, args)
    except (UsageError, InvalidArgumentError, InvalidConfigurationError) as exc:
        print("%s: error: %s" % (prog, exc), file=sys.stderr)
        return 2
    except VllmError as exc:
        print("%s: error: %s" % (prog, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
