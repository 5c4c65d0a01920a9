"""The engine options: one table (:data:`ENGINE_OPTION_TABLE`) drives
``Engine.load``'s keywords, ``EngineBuilder``'s methods, validation,
marshalling (:mod:`vllm_cpp.marshalling`), ``LLM``'s vLLM names and the
command line's flags, so adding an option is one row here."""

from __future__ import annotations

import enum
import json
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Union

from .chat_template import load_chat_template
from .checks import int32, int64, opt_json, opt_str, path_str
from .errors import InvalidConfigurationError

__all__ = [
    "Toggle",
    "SchedulerPolicy",
    "OptionKind",
    "EngineOption",
    "ENGINE_OPTION_TABLE",
    "ENGINE_OPTIONS",
    "normalize_options",
    "engine_options_from_vllm_names",
]

PathLike = Union[str, "os.PathLike[str]"]


class Toggle(enum.IntEnum):
    """A tri-state engine switch: the engine's default, on, or off."""

    DEFAULT = 0
    ON = 1
    OFF = 2


class SchedulerPolicy(str, enum.Enum):
    """Scheduling policy: first come first served, (priority, arrival) order,
    or longest cached prefix first."""

    FCFS = "fcfs"
    PRIORITY = "priority"
    LPM = "lpm"

    def __str__(self) -> str:
        return self.value


def _toggle(value: Any, name: str) -> Toggle:
    if value is None:
        return Toggle.DEFAULT
    if isinstance(value, Toggle):
        return value
    if isinstance(value, bool):
        return Toggle.ON if value else Toggle.OFF
    if isinstance(value, str):
        try:
            return Toggle[value.upper()]
        except KeyError:
            pass
    elif isinstance(value, numbers.Integral):
        try:
            return Toggle(int(value))
        except ValueError:
            pass
    raise InvalidConfigurationError(
        "%s must be a Toggle (DEFAULT, ON, OFF), not %r" % (name, value)
    )


def _policy(value: Any, name: str) -> Union[SchedulerPolicy, str]:
    if isinstance(value, SchedulerPolicy):
        return value
    if not isinstance(value, str):
        raise InvalidConfigurationError(
            "%s must be a SchedulerPolicy or str, not %s" % (name, type(value).__name__)
        )
    try:
        return SchedulerPolicy(value)
    except ValueError:
        # Unknown names are the engine's to refuse (InvalidArgumentError).
        return opt_str(value, name)


@dataclass(frozen=True)
class OptionKind:
    """How values of one kind of engine option are checked and carried."""

    annotation: Any
    #: A set value (not None) -> its normalized form; InvalidConfigurationError.
    check: Callable[[Any, str], Any]
    #: The normalized form -> the vllm_model_params field's or the JSON value.
    native: Callable[[Any], Any]
    #: The command line's argparse ``type``; None: a --flag/--no-flag switch.
    cli_type: Optional[Callable[[str], Any]] = str


_INT32 = OptionKind(int, int32, int, int)
_INT64 = OptionKind(int, int64, int, int)
_TEXT = OptionKind(str, opt_str, str)
_TEMPLATE = OptionKind(str, opt_str, str, load_chat_template)  # the CLI takes FILE or TEXT
_PATH = OptionKind(PathLike, path_str, str)
_JSON = OptionKind(Union[str, Dict[str, Any]], opt_json, str)
_TOGGLE = OptionKind(Toggle, _toggle, int, None)
_POLICY = OptionKind(Union[SchedulerPolicy, str], _policy, str)


def _json_object(text: str) -> Any:
    """An options-JSON key whose value is an object (pooler_config): the text parsed."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidConfigurationError("not valid JSON: %s (%r)" % (exc, text)) from None


_JSON_OBJECT = OptionKind(Union[str, Dict[str, Any]], opt_json, _json_object)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidConfigurationError("%s must be a bool, not %s" % (name, type(value).__name__))
    return value


_BOOL = OptionKind(bool, _flag, bool, None)


@dataclass(frozen=True)
class EngineOption:
    """One engine option: an ``Engine.load`` keyword and the
    ``EngineBuilder`` method of the same name."""

    name: str
    kind: OptionKind
    #: Its ``vllm_model_params`` field; None: a key (``name``) of the
    #: options JSON of ``vllm_engine_load_with_options``.
    field: Optional[str]
    doc: str
    #: vLLM's name when it differs (``LLM`` keywords, the CLI flag).
    vllm_name: Optional[str] = None
    #: A flag of every ``vllm-cpp`` subcommand: ``--<vLLM name with dashes>``.
    cli: bool = False
    metavar: Optional[str] = None
    #: The flag's --help text where ``doc`` speaks of Python values
    #: (``Toggle.ON``, a dict): the values a user types on the command line.
    cli_doc: Optional[str] = None

    @property
    def flag_name(self) -> str:
        return self.vllm_name or self.name

    @property
    def cli_help(self) -> str:
        return self.cli_doc or self.doc


#: Every engine option, v10's struct fields in their order, then the options JSON.
ENGINE_OPTION_TABLE: Tuple[EngineOption, ...] = (
    EngineOption("tokenizer_config_path", _PATH, "tokenizer_config_path",
                 "Override for a Hugging Face directory's tokenizer_config.json (unused for GGUF files)."),
    EngineOption("block_size", _INT32, "block_size",
                 "Tokens per KV block (unset or <= 0: engine default, 16).", cli=True, metavar="N"),
    EngineOption("num_blocks", _INT32, "num_blocks",
                 "KV block count (unset or <= 0: sized from the KV cache budget).", cli=True, metavar="N"),
    EngineOption("max_model_len", _INT32, "max_model_len",
                 "Longest sequence, prompt + output (unset or <= 0: the model's context length).",
                 cli=True, metavar="N"),
    EngineOption("max_num_seqs", _INT32, "max_num_seqs",
                 "Most sequences scheduled at once (unset: engine default, 8).", cli=True, metavar="N"),
    EngineOption("tool_parser", _TEXT, "tool_parser",
                 "Tool-call parser for chat: hermes, llama3_json, mistral, pythonic, llama4_pythonic, "
                 "qwen3_coder, glm45, deepseek_v3, deepseek_v31, kimi_k2, granite, phi4_mini_json, openai "
                 "(unset or auto: detected from the chat template).", vllm_name="tool_call_parser", cli=True,
                 metavar="NAME"),
    EngineOption("reasoning_parser", _TEXT, "reasoning_parser",
                 "Reasoning parser: deepseek_r1, qwen3, mistral, openai_gptoss, glm45, granite, deepseek_v3, "
                 "seed_oss or none (unset or auto: detected from the template).",
                 cli=True, metavar="NAME"),
    EngineOption("speculative_config", _JSON, "speculative_config",
                 "Speculative decoding config as vLLM's --speculative-config (str or dict).",
                 cli=True, metavar="JSON",
                 cli_doc="Speculative decoding as vLLM's JSON, e.g. '{\"method\": \"ngram\", "
                         "\"num_speculative_tokens\": 4}' (methods: ngram, suffix, draft_model)."),
    EngineOption("prefix_caching", _TOGGLE, "enable_prefix_caching",
                 "Automatic prefix caching: Toggle.DEFAULT (on), ON or OFF.",
                 vllm_name="enable_prefix_caching", cli=True,
                 cli_doc="Automatic prefix caching (default: on)."),
    EngineOption("max_num_batched_tokens", _INT32, "max_num_batched_tokens",
                 "Per-step token budget (chunked prefill; None: engine default, 2048).", cli=True, metavar="N",
                 cli_doc="Per-step token budget (chunked prefill; default 2048)."),
    EngineOption("scheduler", _POLICY, "scheduling_policy",
                 "Scheduling policy: SchedulerPolicy.FCFS (default), PRIORITY or LPM.",
                 vllm_name="scheduling_policy", cli=True, metavar="POLICY",
                 cli_doc="Scheduling policy: fcfs (default), priority or lpm."),
    EngineOption("kv_transfer_config", _JSON, "kv_transfer_config",
                 "KV connector config as vLLM's --kv-transfer-config (str or dict).", cli=True, metavar="JSON",
                 cli_doc="KV connector as vLLM's --kv-transfer-config JSON."),
    EngineOption("jump_forward", _TOGGLE, "enable_jump_forward",
                 "Jump-forward decoding for structured output: Toggle.DEFAULT (off), ON or OFF "
                 "(VLLM_CPP_ENABLE_JUMP_FORWARD, alias VT_ENABLE_JUMP_FORWARD, overrides)."),
    EngineOption("chat_template", _TEMPLATE, None,
                 "Chat template text used instead of the model's (parsed at load); the command line "
                 "takes a file or the text.", cli=True, metavar="FILE|TEXT"),
    EngineOption("kv_cache_dtype", _TEXT, None,
                 "KV cache element type: auto (float16), float16/fp16, float32/fp32, int8 (8-bit with a "
                 "scale per token and head: half the bytes) (VLLM_CPP_KV_CACHE_DTYPE overrides).", cli=True, metavar="DTYPE"),
    EngineOption("kv_cache_memory_bytes", _INT64, None,
                 "KV cache budget in bytes when num_blocks is unset (default 1 GiB; "
                 "VLLM_CPP_KV_CACHE_MB overrides).", cli=True, metavar="N"),
    EngineOption("num_threads", _INT32, None,
                 "Threads of the engine's pool, 1-1024 (default: all cores; VLLM_CPP_NUM_THREADS overrides).",
                 cli=True, metavar="N"),
    EngineOption("isa", _TEXT, None,
                 "Kernel build: scalar, avx2, avx512, amx (AVX-512 with BF16 matmuls on AMX tiles) or "
                 "neon, process-wide (default: the best this CPU runs; VLLM_CPP_ISA overrides).",
                 cli=True, metavar="NAME"),
    EngineOption("structured_compile_timeout_ms", _INT64, None,
                 "Time budget in ms of one structured-output constraint's compile, and of each of its "
                 "token masks computed off the engine loop (default 10000); past it the request is "
                 "refused (HTTP 400) naming the budget.", cli=True, metavar="MS"),
    EngineOption("structured_max_grammar_size", _INT64, None,
                 "Size budget of a compiled structured-output constraint, in grammar positions "
                 "(default 8000000); past it the request is refused naming the budget.",
                 cli=True, metavar="N"),
    # Pooling (embeddings; issue 43).
    EngineOption("runner", _TEXT, None,
                 "What the engine serves: auto (the model's kind: pooling for an embedding model), generate, "
                 "pooling, or both (a decoder embedder serving generation and embeddings in one engine).",
                 cli=True, metavar="NAME"),
    EngineOption("convert", _TEXT, None,
                 "auto, none or embed: run a generation model as an embedding model (runner pooling, last-token "
                 "pooling, normalised, as vLLM's --convert embed).", cli=True, metavar="NAME"),
    EngineOption("pooler_config", _JSON_OBJECT, None,
                 "Pooling over the model's own, as vLLM's --pooler-config: pooling_type (CLS, MEAN, LAST) and "
                 "normalize (str or dict).", cli=True, metavar="JSON",
                 cli_doc="Pooling over the model's own, as vLLM's JSON, e.g. '{\"pooling_type\": \"MEAN\", "
                         "\"normalize\": false}' (CLS, MEAN or LAST)."),
    EngineOption("hf_overrides", _JSON_OBJECT, None,
                 "The model config keys this engine lets you override, as vLLM's --hf-overrides: is_matryoshka "
                 "and matryoshka_dimensions (which `dimensions` requests may ask for); classifier_from_token "
                 "(two tokens, false then true), is_original_qwen3_reranker and architectures "
                 "(*ForSequenceClassification): Qwen3-Reranker's yes/no score head.", cli=True, metavar="JSON",
                 cli_doc="Model config overrides as vLLM's JSON: is_matryoshka, matryoshka_dimensions, and "
                         "Qwen3-Reranker's score head ('{\"architectures\": [\"Qwen3ForSequenceClassification\"], "
                         "\"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true}')."),
    EngineOption("enable_lora", _BOOL, None,
                 "Serve LoRA adapters (Hugging Face PEFT directories) beside the base model (vLLM's "
                 "--enable-lora); requests name one with a LoRARequest.", cli=True),
    EngineOption("max_loras", _INT32, None,
                 "LoRA adapters resident at once and in one batch (default 1); others are loaded again "
                 "when needed, the least recently used evicted.", cli=True, metavar="N"),
    EngineOption("max_lora_rank", _INT32, None,
                 "Largest LoRA rank accepted (default 16).", cli=True, metavar="N"),
    EngineOption("mmproj", _PATH, None,
                 "A vision-language model's projector GGUF beside its text GGUF (llama.cpp's --mmproj): the "
                 "model then takes images (docs/features/vision.md).", cli=True, metavar="FILE"),
    EngineOption("limit_mm_per_prompt", _JSON_OBJECT, None,
                 "Most images a prompt may carry, as vLLM's --limit-mm-per-prompt '{\"image\": N}' (default 8).",
                 cli=True, metavar="JSON"),
)

_OPTIONS_BY_NAME = {o.name: o for o in ENGINE_OPTION_TABLE}

#: Option names accepted by Engine.load and EngineBuilder, in table order.
ENGINE_OPTIONS = tuple(_OPTIONS_BY_NAME)


def normalize_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """Validate engine options; returns the set ones, normalized."""
    unknown = sorted(set(options) - set(ENGINE_OPTIONS))
    if unknown:
        raise TypeError("unknown engine option(s): %s (known: %s)"
                        % (", ".join(unknown), ", ".join(ENGINE_OPTIONS)))
    return {o.name: o.kind.check(options[o.name], o.name)
            for o in ENGINE_OPTION_TABLE if options.get(o.name) is not None}


def engine_options_from_vllm_names(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``Engine.load`` options from keywords that may use vLLM's names
    (``enable_prefix_caching``, ``scheduling_policy``, ``tool_call_parser``)."""
    by_vllm_name = {o.vllm_name: o.name for o in ENGINE_OPTION_TABLE if o.vllm_name}
    return {by_vllm_name.get(name, name): value for name, value in kwargs.items()}
