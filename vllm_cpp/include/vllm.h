/*
 * vllm.h: the vllm.cpp C ABI, version 10.
 *
 * The one copy of the contract between libvllm and its clients (the vllm_cpp
 * cffi module, Rust/Go/C hosts). Field order and types are binding: foreign
 * clients lay the structs out from their own copy of this header. Additive
 * entry points go after the v10 surface; v10 structs and signatures never
 * change.
 *
 * Ownership, for every function:
 *   - strings passed in are borrowed for the call only; the library copies
 *     what it keeps;
 *   - `char*` returned through out-parameters (completion text, chat JSON)
 *     are owned by the caller: release them with vllm_string_free or
 *     vllm_completion_free;
 *   - `const char*` returns (finish_reason, vllm_last_error, vllm_version,
 *     vllm_request_error) are owned by the library.
 *
 * Errors: every entry point catches everything internally and returns a
 * vllm_status; on a non-OK status vllm_last_error() (thread-local) says why.
 * NOTE: this file is parsed by cffi's cdef (build_ffi.py strips the
 * preprocessor lines), so keep declarations plain C.
 */
#ifndef VLLM_H
#define VLLM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define VLLM_API __declspec(dllexport)
#else
#define VLLM_API __attribute__((visibility("default")))
#endif

#define VLLM_ABI_VERSION 10

typedef enum vllm_status {
    VLLM_OK = 0,
    VLLM_ERR_INVALID_ARGUMENT = 1,
    VLLM_ERR_MODEL_LOAD = 2,
    VLLM_ERR_RUNTIME = 3,
    VLLM_ERR_UNKNOWN = 4
} vllm_status;

/* The whole stack: tokenizer, weights, KV cache, scheduler. Thread-safe. */
typedef struct vllm_engine vllm_engine;
/* One non-blocking request. The engine must outlive it (v10; with the
   additive lifecycle below, the request holds a reference on its engine). */
typedef struct vllm_request vllm_request;

typedef struct vllm_model_params {
    const char* model_path;            /* GGUF file or HF model directory; required */
    const char* tokenizer_config_path; /* NULL: <model_dir>/tokenizer_config.json */
    int32_t block_size;                /* <= 0: engine default */
    int32_t num_blocks;                /* <= 0: sized from a memory budget */
    int32_t max_model_len;             /* <= 0: the model's context length */
    int32_t max_num_seqs;              /* <= 0: engine default */
    const char* tool_parser;           /* NULL/"": detect from the chat template */
    const char* reasoning_parser;      /* NULL/"": detect; "none": disabled */
    const char* speculative_config;    /* JSON; NULL/"": off */
    int32_t enable_prefix_caching;     /* 0 default, 1 on, 2 off */
    int32_t max_num_batched_tokens;    /* <= 0: engine default */
    const char* scheduling_policy;     /* "fcfs" (default), "priority", "lpm" */
    const char* kv_transfer_config;    /* JSON; NULL/"": no connector */
    int32_t enable_jump_forward;       /* 0 default (env VT_ENABLE_JUMP_FORWARD), 1 on, 2 off */
} vllm_model_params;

/* Called once per decode step with the ids generated so far (borrowed) and
 * the request's mutable logits row. Must not throw. */
typedef void (*vllm_logits_processor)(const int32_t* token_ids, int32_t n_token_ids,
                                      float* logits, int32_t vocab_size, void* user_data);

typedef struct vllm_sampling_params {
    float temperature;                 /* <= 1e-5: greedy (1.0) */
    float top_p;                       /* (0, 1] (1.0) */
    int32_t top_k;                     /* 0 or -1: all tokens (0) */
    float min_p;                       /* [0, 1] (0) */
    int32_t max_tokens;                /* <= 0: unbounded up to max_model_len (16) */
    uint64_t seed;                     /* used when has_seed != 0 */
    int32_t has_seed;
    float presence_penalty;
    float frequency_penalty;
    float repetition_penalty;          /* must be > 0 (1.0) */
    int32_t min_tokens;                /* EOS and stop strings ignored before this many tokens */
    int32_t ignore_eos;
    const char* const* stop;           /* stop strings; text stops before the match */
    int32_t n_stop;
    const char* structured_json;       /* JSON Schema */
    const char* structured_regex;
    const char* const* structured_choice;
    int32_t n_structured_choice;
    const char* structured_grammar;    /* GBNF, llama.cpp dialect */
    int32_t structured_json_object;
    vllm_logits_processor logits_processor;
    void* logits_processor_user_data;
} vllm_sampling_params;

typedef struct vllm_completion {
    char* text;                 /* caller frees (vllm_completion_free) */
    const char* finish_reason;  /* library-owned; NULL if unfinished */
    int32_t prompt_tokens;
    int32_t completion_tokens;
} vllm_completion;

/* delta_text is borrowed for the call and never splits a UTF-8 code point.
 * Return false to stop (abort) the request. */
typedef bool (*vllm_token_callback)(const char* delta_text, bool finished, void* user_data);

VLLM_API vllm_model_params vllm_model_params_default(void);
VLLM_API vllm_sampling_params vllm_sampling_params_default(void);

/* On failure *out stays NULL. */
VLLM_API vllm_status vllm_engine_load(const vllm_model_params* params, vllm_engine** out);
/* NULL is a no-op; every request handle must be freed first (v10; see
   "Request lifecycle" below for what happens when some are not). */
VLLM_API void vllm_engine_free(vllm_engine* engine);

/* Blocking. On error *out is zeroed. */
VLLM_API vllm_status vllm_complete(vllm_engine* engine, const char* prompt,
                                   const vllm_sampling_params* params, vllm_completion* out);
/* Blocking streaming through cb. */
VLLM_API vllm_status vllm_complete_stream(vllm_engine* engine, const char* prompt,
                                          const vllm_sampling_params* params,
                                          vllm_token_callback cb, void* user_data);

VLLM_API vllm_status vllm_request_submit(vllm_engine* engine, const char* prompt,
                                         const vllm_sampling_params* params,
                                         vllm_token_callback cb, void* user_data,
                                         vllm_request** out);
VLLM_API vllm_status vllm_request_cancel(vllm_request* request);
VLLM_API vllm_status vllm_request_wait(vllm_request* request);
VLLM_API bool vllm_request_done(const vllm_request* request);
VLLM_API const char* vllm_request_error(const vllm_request* request);
VLLM_API void vllm_request_free(vllm_request* request);

/* OpenAI chat: request JSON in, chat.completion JSON out (caller frees). */
VLLM_API vllm_status vllm_chat(vllm_engine* engine, const char* request_json,
                               char** out_response_json);
VLLM_API vllm_status vllm_chat_stream(vllm_engine* engine, const char* request_json,
                                      vllm_token_callback cb, void* user_data);

VLLM_API void vllm_string_free(char* s);
VLLM_API void vllm_completion_free(vllm_completion* completion);

VLLM_API const char* vllm_last_error(void);
VLLM_API const char* vllm_version(void);
VLLM_API int32_t vllm_abi_version(void);

/* ---- Additive entry points (after the v10 surface; v10 clients ignore them) ---- */

/* vllm_request_submit with a caller-chosen scheduling priority: under the
   "priority" scheduling policy lower values run first (ties in arrival
   order); other policies ignore it. The v10 entry points submit priority 0.
   Same ownership and threading rules as vllm_request_submit. */
VLLM_API vllm_status vllm_request_submit_with_priority(vllm_engine* engine, const char* prompt,
                                                       const vllm_sampling_params* params,
                                                       int32_t priority, vllm_token_callback cb,
                                                       void* user_data, vllm_request** out);

/* The completion of a request whose delivery has finished
   (vllm_request_done is true): its whole text, finish reason ("abort" when
   it was cancelled or stopped by its callback), token counts. The text is
   the caller's (vllm_completion_free). INVALID_ARGUMENT while delivery is
   still running; the request's own error status when it failed. */
VLLM_API vllm_status vllm_request_completion(const vllm_request* request, vllm_completion* out);

/* Engine statistics as one JSON object (caller frees with vllm_string_free):
   running/waiting requests, KV blocks (total, used, free, cached), block
   size and KV cache bytes, prefix-cache queries and hits (tokens),
   prompt and generated token totals, preemptions, model steps, and
   spec_decode (null without speculative_config; else method, num_drafts,
   num_draft_tokens, num_accepted_tokens, num_accepted_tokens_per_pos, the
   draft model's KV blocks, and the costs the dynamic switch measured:
   draft_token_ms, null before the first draft, and forward_ms, the target
   forwards' milliseconds (each the median of its last 7 samples) by the
   sequences in them, then by the positions computed:
   {"1": {"1": ms, "5": ms}, "3": {"3": ms}}). A snapshot taken between
   engine steps. */
VLLM_API vllm_status vllm_engine_stats(vllm_engine* engine, char** out_json);

/* vllm_request_submit_with_priority for a prompt given as token ids (used as
   they are: no BOS is added), with log-probabilities on request. The ids are
   borrowed for the call. logprobs: -1 none; 0..20 report, per generated
   token, its log-probability and that many most likely alternatives (read
   them with vllm_request_output). INVALID_ARGUMENT for no ids, an id outside
   the vocabulary, more ids than max_model_len, logprobs out of range.
   vllm_tokenize(engine, text, true, ...) gives the ids vllm_request_submit
   would use for `text`. Same ownership and threading rules as
   vllm_request_submit. */
VLLM_API vllm_status vllm_request_submit_tokens(vllm_engine* engine, const int32_t* prompt_token_ids,
                                                int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                                int32_t priority, int32_t logprobs, vllm_token_callback cb,
                                                void* user_data, vllm_request** out);

/* What a completion request generated, once its delivery has finished, as
   one JSON object (caller frees with vllm_string_free):
   {"token_ids": [...], "logprobs": null | [{"token_id", "bytes", "logprob",
   "top_logprobs": [{"token_id", "bytes", "logprob"}, ...]}, ...]}, where
   "bytes" are the token's raw bytes (special tokens as their text) and a
   logprob of -inf reads -9999.0; a sampled or prompt token's entry also
   has "rank" (vLLM's: how many tokens were at least as likely; 1 for the
   most likely; absent for a token a grammar forced); a request submitted
   with the option "prompt_logprobs" (vllm_request_submit_with_options)
   also has "prompt_logprobs": [null, entry, ...]. Errors as vllm_request_completion;
   INVALID_ARGUMENT for a chat request. */
VLLM_API vllm_status vllm_request_output(vllm_engine* engine, const vllm_request* request, char** out_json);

/* A non-blocking OpenAI chat call. The request is validated, rendered and
   tokenized before this returns (INVALID_ARGUMENT naming the field, as
   vllm_chat); then a delivery thread calls cb with what vllm_chat_stream
   delivers when the request has "stream": true (each chunk's JSON, then the
   terminal call with "" and finished), and otherwise once, finished, with
   the chat.completion JSON vllm_chat returns (a call that fails gets that
   one terminal call with ""). vllm_request_cancel (or cb
   returning false) cancels every choice; their engine requests are dropped
   at the next engine step. vllm_request_wait gives the call's status;
   vllm_request_completion and vllm_request_output refuse a chat request.
   The returned request is the caller's (vllm_request_free), with the same
   threading rules as vllm_request_submit. */
VLLM_API vllm_status vllm_chat_submit(vllm_engine* engine, const char* request_json, vllm_token_callback cb,
                                      void* user_data, vllm_request** out);

/* The token ids of `text` (UTF-8), special-token texts parsed as their
   tokens; add_special_tokens adds BOS/EOS as the model asks. *out_ids is the
   caller's (vllm_tokens_free; never NULL on success, even for no ids).
   INVALID_ARGUMENT for text that is not UTF-8. */
VLLM_API vllm_status vllm_tokenize(vllm_engine* engine, const char* text, bool add_special_tokens,
                                   int32_t** out_ids, int32_t* out_n_ids);
VLLM_API void vllm_tokens_free(int32_t* ids);

/* The token ids of a chat request's prompt: its messages rendered by the
   model's chat template and tokenized exactly as vllm_chat and
   vllm_chat_submit submit them. The request is validated as vllm_chat does
   (INVALID_ARGUMENT naming the field); nothing is generated. *out_ids is
   the caller's (vllm_tokens_free). */
VLLM_API vllm_status vllm_chat_tokenize(vllm_engine* engine, const char* request_json, int32_t** out_ids,
                                        int32_t* out_n_ids);

/* The text of token ids (borrowed; NULL allowed when n is 0), special
   tokens left out when skip_special_tokens; bytes that are not valid UTF-8
   become U+FFFD. *out_text is the caller's (vllm_string_free).
   INVALID_ARGUMENT for an id outside the vocabulary, naming it. */
VLLM_API vllm_status vllm_detokenize(vllm_engine* engine, const int32_t* token_ids, int32_t n_token_ids,
                                     bool skip_special_tokens, char** out_text);

/* vllm_engine_load with engine options beyond vllm_model_params, as one JSON
   object (borrowed for the call; NULL or "" is exactly vllm_engine_load).
   A key whose value is null counts as left out. Keys:
     "chat_template"          string, the chat template's text (Jinja, as
                              transformers renders it): used instead of the
                              GGUF's tokenizer.chat_template or the directory's
                              template, also for detecting the tool/reasoning
                              parsers. Parsed at load: a template that does not
                              parse (or an unknown tool_parser/reasoning_parser)
                              is INVALID_ARGUMENT "chat template line N: ...".
                              Per engine.
     "kv_cache_dtype"         string, vLLM's names: "auto" (the default, IEEE
                              half), "float16" ("fp16", "half", "f16"),
                              "float32" ("fp32", "float", "f32"), and "int8"
                              (8-bit, one half scale per token and KV head:
                              about half the f16 cache's bytes); "bfloat16"
                              and "fp8"/"fp8_e4m3"/"fp8_e5m2"... are refused by
                              name (not implemented). Per engine.
     "kv_cache_memory_bytes"  integer >= 1: the KV cache budget when num_blocks
                              is unset (the cache holds at most max_num_seqs
                              full-length sequences within it); a budget below
                              one max_model_len sequence, or num_blocks also
                              set, is INVALID_ARGUMENT. Per engine.
     "num_threads"            integer in [1, 1024]: the engine's thread pool
                              (default: all hardware threads). Per engine.
     "isa"                    "scalar", "avx2", "avx512", "amx" (x86-64: the
                              AVX-512 build with BF16 matmuls on AMX tiles) or
                              "neon" (AArch64): the kernel build. Process-wide: the
                              first engine that names one (or the first kernel
                              use) fixes it; a later engine naming another, or
                              one this CPU cannot run, is INVALID_ARGUMENT.
     "structured_compile_timeout_ms"  integer in [1, 3600000] (default 10000):
                              the time one structured-output constraint may
                              take to compile (on the engine's compile
                              workers, the submitting call waiting), and each
                              of its token masks that the engine loop hands
                              to them. Past it the submit is INVALID_ARGUMENT
                              naming this option (a mask: the request ends
                              with that error). Per engine.
     "structured_max_grammar_size"  integer >= 1 (default 8000000): the most
                              positions (terminals, rule references, ends of
                              alternatives) a compiled constraint may have;
                              past it the submit is INVALID_ARGUMENT naming
                              this option. Per engine.
   Environment overrides win over these options when set:
   VLLM_CPP_KV_CACHE_DTYPE (f16|f32|i8), VLLM_CPP_KV_CACHE_MB (MiB),
   VLLM_CPP_NUM_THREADS, VLLM_CPP_ISA; the option's value is still checked.
   (VLLM_CPP_ENABLE_JUMP_FORWARD, or its upstream alias VT_ENABLE_JUMP_FORWARD,
   likewise overrides enable_jump_forward.)
   The struct's fields and these keys are read by one parser, so an option
   refused either way gets the same text ("'num_threads' must be between 1
   and 1024 (got 0)", "'block_size' must be between 1 and 1024 (got 2000)");
   the struct's fields are not keys here (one is an unknown key).
   Errors: INVALID_ARGUMENT naming the key for JSON that is not an object,
   an unknown key, a wrong type or a value out of range; otherwise those of
   vllm_engine_load. On failure *out stays NULL; the engine is freed with
   vllm_engine_free. */
VLLM_API vllm_status vllm_engine_load_with_options(const vllm_model_params* params, const char* options_json,
                                                   vllm_engine** out);
/* ---- Pull-style delivery (additive) ----
   A poller is a queue of ready requests that one client thread polls,
   instead of a delivery thread per request calling a callback: requests
   submitted with vllm_request_submit_pull / vllm_chat_submit_pull have no
   callback, and vllm_poller_poll hands over the new output of every request
   that has some, in one call. So one thread serves any number of streams.
   The callback entry points are unchanged (one delivery thread each). */
typedef struct vllm_poller vllm_poller;

/* One request's new output, as vllm_poller_poll reports it. */
typedef struct vllm_event {
    uint64_t tag;               /* the tag the request was submitted with */
    const char* text;           /* library-owned, valid until the next vllm_poller_poll
                                   or vllm_poller_free; never splits a UTF-8 code point */
    bool finished;              /* the request's last event */
    int32_t n_tokens;           /* a completion's tokens generated since its previous
                                   event (text may lag behind them: a stop string's
                                   possible start is held back); 0 for chat */
    const char* logprobs_json;  /* NULL, or (a completion submitted with logprobs >= 0)
                                   library-owned like text: a JSON array of the entries
                                   vllm_request_output's "logprobs" has, for the tokens
                                   of this event */
} vllm_event;

/* A poller for requests of `engine`, on which it holds a reference (see
   "Request lifecycle" below). The poller is the caller's (vllm_poller_free). */
VLLM_API vllm_status vllm_poller_create(vllm_engine* engine, vllm_poller** out);
/* NULL is a no-op. Free every request submitted with the poller first. */
VLLM_API void vllm_poller_free(vllm_poller* poller);

/* Waits up to timeout_ms (< 0: without limit) until some request of the
   poller has new output, or vllm_poller_wake; then writes at most
   max_events events to `events` and their count to *out_n (0: timed out,
   woken, or nothing new after all). Per request, events come in order and a
   completion's event carries all the text (and logprobs) generated since its
   previous one: the deltas of several engine steps, concatenated. A chat
   call's events are the JSON texts its callback would get, one per event
   (each chunk when it streams; else the chat.completion JSON), then a
   terminal event with "". Every request ends with exactly one event with
   finished set, also when cancelled (then once the engine has dropped it,
   with no more text); by then vllm_request_wait returns at once, with the
   request's status, and vllm_request_completion / vllm_request_output
   work. One thread at a time may poll a poller; the strings of the
   previous call are released by the next. A request freed while its event
   is being prepared by a poll in progress may still be reported by that
   poll (by its tag); never by a later one. */
VLLM_API vllm_status vllm_poller_poll(vllm_poller* poller, int32_t timeout_ms, vllm_event* events,
                                      int32_t max_events, int32_t* out_n);
/* Makes a vllm_poller_poll in progress (or else the next) return at once
   (e.g. to stop the polling thread). Any thread. */
VLLM_API vllm_status vllm_poller_wake(vllm_poller* poller);

/* vllm_request_submit_tokens without a callback: the request's output is
   reported by `poller` under `tag` (the caller's choice, e.g. an index).
   The prompt is text (`prompt`, tokenized as vllm_request_submit does;
   prompt_token_ids must be NULL) or token ids (`prompt` NULL). The request
   is the caller's (vllm_request_free; that cancels it if still running and
   returns once the engine has let go of it); vllm_request_cancel,
   vllm_request_wait, vllm_request_done, vllm_request_error,
   vllm_request_completion and vllm_request_output work as for a submitted
   request, where "delivery has finished" means the engine is done with it.
   Errors as vllm_request_submit_tokens. */
VLLM_API vllm_status vllm_request_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                              const char* prompt, const int32_t* prompt_token_ids,
                                              int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                              int32_t priority, int32_t logprobs, vllm_request** out);

/* vllm_chat_submit without a callback: validated before it returns (as
   vllm_chat_submit); its output is reported by `poller` under `tag` (see
   vllm_poller_poll). No thread of its own: its choices' output is rendered
   into chunks when the poll takes it (every choice's role chunk, then the
   choices' chunks interleaved as they are generated, as vLLM orders them).
   The request is the caller's (vllm_request_free), as vllm_chat_submit's. */
VLLM_API vllm_status vllm_chat_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                           const char* request_json, vllm_request** out);

/* An OpenAI /v1/completions request (its JSON body: prompt as a string, a
   list of strings, token ids or lists of token ids; n, echo, logprobs,
   stream, stream_options, response_format and vLLM's structured outputs,
   prompt_logprobs, return_token_ids, ... and the sampling fields under
   vLLM's names; fields it does not know are ignored), run as
   vllm_chat_submit_pull runs a chat request: validated and tokenized before
   it returns (VLLM_ERR_INVALID_ARGUMENT naming the field; a prompt past the
   context refused as vllm_request_submit_tokens refuses it), then reported by `poller` under `tag`: streaming, one
   `text_completion` chunk JSON per event (each choice's text as it is
   generated, the choices, numbered prompt_index * n + i, interleaved as
   they are generated; then the usage chunk when
   stream_options.include_usage asks for it); not streaming, the one
   `text_completion` response; then the terminal event (finished, "").
   Choice i of a seeded request samples with seed + i. The request is the
   caller's (vllm_request_free). Additive. */
VLLM_API vllm_status vllm_completion_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                                 const char* request_json, vllm_request** out);

/* ---- Request lifecycle (additive) ----
   The library, not its caller, keeps an engine alive for its requests and
   says how each request ended:
   - every request handle (and every poller) holds a reference on its
     engine. vllm_engine_free releases the caller's handle: with no request
     or poller left it tears the engine down at once, joining its threads,
     exactly as v10 promises; with some still live (which v10 leaves to the
     caller to avoid) they go on working (running, wait, cancel, completion,
     free) and the last vllm_request_free or vllm_poller_free tears the
     engine down, on its own thread (a request freed from its own callback:
     on its delivery thread, once the callback returns; never from a logits
     processor, which runs on an engine thread). The freed handle must not be passed to
     any entry point again (vllm_request_output included); a call still in
     flight on it when vllm_engine_free runs remains the caller's to avoid.
   - vllm_request_wait_for waits with a timeout and reports the outcome
     that vllm_request_wait, vllm_request_done and vllm_request_error
     report piecemeal. */

/* How a request ended (vllm_request_outcome.state). */
typedef enum vllm_request_state {
    VLLM_REQUEST_RUNNING = 0,   /* not yet: delivery (a pull completion: the engine) is at work */
    VLLM_REQUEST_FINISHED = 1,  /* ended by itself (EOS, stop string, length; a chat call's
                                   answer) and its terminal output was delivered */
    VLLM_REQUEST_CANCELLED = 2, /* vllm_request_cancel (or vllm_request_free) took effect
                                   before the terminal callback / terminal event */
    VLLM_REQUEST_STOPPED = 3,   /* its callback returned false (on the terminal call too:
                                   finish_reason then says how the request itself ended) */
    VLLM_REQUEST_FAILED = 4     /* the engine failed it: status and error say why */
} vllm_request_state;

/* A request's outcome, as vllm_request_wait_for reports it. */
typedef struct vllm_request_outcome {
    int32_t state;              /* a vllm_request_state */
    vllm_status status;         /* what vllm_request_wait returns: VLLM_OK unless FAILED */
    const char* error;          /* library-owned, valid until vllm_request_free; never NULL
                                   ("" unless FAILED) */
    const char* finish_reason;  /* a completion's ("stop", "length", "abort", ...), a
                                   library-owned constant; NULL for a chat call (its JSON
                                   carries each choice's) and while RUNNING */
} vllm_request_outcome;

/* vllm_request_wait with a timeout, reporting the outcome: waits up to
   timeout_ms (< 0: without limit; 0: just looks) until the request's
   delivery has finished (a pull completion: until the engine is done with
   it), then fills *out and returns VLLM_OK, also when the request itself
   failed (its status and error are in *out). A wait that times out returns
   VLLM_OK with out->state VLLM_REQUEST_RUNNING, error "" and finish_reason
   NULL; the request is untouched. Any thread but the request's own
   callback, any number of times, concurrently too, but not racing
   vllm_request_free; works after vllm_engine_free released the request's
   engine. INVALID_ARGUMENT for a NULL request or out, and from the
   request's own callback; *out (when not NULL) then reads as a timed-out
   wait's. */
VLLM_API vllm_status vllm_request_wait_for(vllm_request* request, int32_t timeout_ms, vllm_request_outcome* out);

/* ---- A poller's file descriptor (additive) ----
   For a client that runs an event loop (epoll, kqueue, libuv, asyncio's
   add_reader): it waits on the poller's descriptor next to its sockets and
   polls with timeout 0 when it is readable, instead of keeping a thread
   blocked in vllm_poller_poll. */

/* Writes to *out_fd a descriptor that is readable whenever a
   vllm_poller_poll would return at once: some request of the poller has new
   output, or vllm_poller_wake was called after the last poll. A poll that
   takes everything makes it unreadable again; one that leaves events
   behind (max_events reached) leaves it readable. It may also be readable
   for a moment with nothing to take (the engine announced output that a
   poll already took): the next poll then returns no events and makes it
   unreadable. Wait on it for
   readability only (level-triggered); never read, write or close it. Made
   at the first call; every later call returns the same one. It is the
   poller's: vllm_poller_free closes it, so stop watching it before that (a
   watcher that may outlive the poller watches a dup() of it, which then
   never becomes readable again). Polling from another thread, or blocking,
   works as before. Any thread. Errors: INVALID_ARGUMENT for a NULL poller
   or out_fd; RUNTIME when the system refuses a descriptor (e.g. the
   process's limit of open files), naming the reason; the poller then works
   on as before. On failure *out_fd (when not NULL) is -1. */
VLLM_API vllm_status vllm_poller_fd(vllm_poller* poller, int* out_fd);

/* ---- Sampling options beyond vllm_sampling_params (additive) ----
   A completion submitted with options_json: one JSON object (borrowed for
   the call; NULL or "" means none; a key whose value is null counts as left
   out), with the keys a chat request takes for the same purpose (vllm_chat
   and the other chat entry points read them from the request's JSON).
   It may also name any field of vllm_sampling_params by vLLM's name
   (additive): "temperature", "top_p", "top_k", "min_p", "max_tokens" (and
   chat's "max_completion_tokens"), "seed", "presence_penalty",
   "frequency_penalty", "repetition_penalty", "min_tokens", "ignore_eos",
   "stop" (a string or an array of strings); a key given replaces the
   struct's value. One parser reads these keys wherever they come from (a
   chat request, options_json, the struct's fields), so a value out of range
   gets the same INVALID_ARGUMENT text each way, naming the field, e.g.
   "'top_p' must be in (0, 1] (got 1.5)": temperature >= 0; top_p in (0, 1];
   top_k -1, 0 (all tokens) or positive; min_p in [0, 1]; presence_penalty
   and frequency_penalty in [-2, 2]; repetition_penalty > 0; max_tokens
   (given here) >= 1; min_tokens >= 0 and not above max_tokens; seed any
   64-bit integer (a negative one wraps, as in the struct's uint64); stop
   strings not empty. The beyond-the-struct keys:
     "logit_bias"         {"<token id>": bias, ...}, OpenAI's: each bias, a
                          number in [-100, 100], is added to that token's
                          logit before sampling (-100 all but bans a token,
                          100 all but forces it).
     "allowed_token_ids"  [id, ...], vLLM's: only these tokens can be
                          generated (a non-empty list, each id once).
     "stop_token_ids"     [id, ...], vLLM's: generating one of these
                          finishes the request ("stop"); its text is output
                          unless it is a special token. Masked, like EOS,
                          before min_tokens; ignore_eos does not affect them.
     "include_stop_str_in_output"  boolean, vLLM's: a matched stop string
                          stays at the end of the text (default false).
     "skip_special_tokens"  boolean, vLLM's: control tokens add no text
                          (default true); false: their text is output too
                          (EOS, which ends the output, never is).
     "truncate_prompt_tokens"  integer >= 1, vLLM's: only the prompt's last
                          that many tokens run (left truncation); vLLM's -1
                          (the model's length) is refused by name.
     "bad_words"          [string, ...], vLLM's: words the output may not
                          contain; each is tokenized alone and after a space
                          (kept when that gives other tokens as many), and a
                          word's last token is masked wherever the output
                          ends with the rest of it. A position where that
                          leaves no token fails the request (RUNTIME naming
                          bad_words).
     "prompt_logprobs"    integer 0..20, vLLM's: each prompt token's
                          log-probability (given the tokens before it) and
                          that many most likely alternatives, in
                          vllm_request_output's JSON as "prompt_logprobs":
                          [null (the first token), entry, ...], entries as
                          its "logprobs" has them. Such a request computes
                          its whole prompt (no prefix-cache or KV-connector
                          hit), in chunks of at most about 64 MiB of logits
                          (a bound such requests share within a step).
                          Chat requests refuse it.
   logit_bias and allowed_token_ids apply at every sampled position
   (verified draft positions too), after the min_tokens and
   structured-output masks and before the
   vllm_sampling_params.logits_processor and the penalties; reported
   log-probabilities stay those of the model's raw output. A position where
   the masks leave no allowed token fails the request (RUNTIME error naming
   allowed_token_ids). Errors: INVALID_ARGUMENT for JSON that is not an
   object, an unknown key, a value of the wrong type, a key of logit_bias
   that is not a token id, a bias out of range, an id outside the
   vocabulary or (logit_bias, allowed_token_ids) repeated, naming the
   field; otherwise those of vllm_request_submit_tokens. */

/* vllm_request_submit_tokens for a prompt given as text (`prompt`,
   tokenized as vllm_request_submit does; prompt_token_ids NULL) or token
   ids (`prompt` NULL), with options_json. Same ownership and threading
   rules as vllm_request_submit. */
VLLM_API vllm_status vllm_request_submit_with_options(vllm_engine* engine, const char* prompt,
                                                      const int32_t* prompt_token_ids, int32_t n_prompt_token_ids,
                                                      const vllm_sampling_params* params, int32_t priority,
                                                      int32_t logprobs, const char* options_json,
                                                      vllm_token_callback cb, void* user_data, vllm_request** out);

/* vllm_request_submit_pull with options_json. */
VLLM_API vllm_status vllm_request_submit_pull_with_options(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                                           const char* prompt, const int32_t* prompt_token_ids,
                                                           int32_t n_prompt_token_ids,
                                                           const vllm_sampling_params* params, int32_t priority,
                                                           int32_t logprobs, const char* options_json,
                                                           vllm_request** out);

/* Checks options_json as vllm_request_submit_with_options reads it, with
   no engine (additive): VLLM_OK, or INVALID_ARGUMENT with the message that
   submit would give (naming the field), except for the checks that need a
   model (token ids against its vocabulary). A caller that validates a
   request before it has a prompt (an HTTP server) answers with the
   engine's own words. Any thread. */
VLLM_API vllm_status vllm_sampling_options_check(const char* options_json);

/* ---- A completion's token ids while it runs (additive) ----
   Copies the ids of a completion request's generated tokens
   [from, from + count) into out_ids (count int32_t, the caller's), fewer
   where fewer have been generated so far, and their number into *out_n.
   A pull completion's events count their tokens (n_tokens), so a client
   that sums them reads each event's ids with from = the sum before the
   event and count = its n_tokens (all generated by then; a stop string's
   tokens, whose text never comes out, count too). Any thread, during or
   after delivery, but not racing vllm_request_free. INVALID_ARGUMENT for a
   NULL request or out_n, a NULL out_ids with count > 0, a negative from or
   count, or a chat request; *out_n is then 0. */
VLLM_API vllm_status vllm_request_token_ids(const vllm_request* request, int32_t from, int32_t count,
                                            int32_t* out_ids, int32_t* out_n);

/* The prompt_logprobs of a completion request submitted with that option
   (vllm_request_submit_with_options), as vllm_request_output's
   "prompt_logprobs" array (caller frees with vllm_string_free), readable
   while the request runs: they are set once its prompt is computed, before
   its first token's event or callback. INVALID_ARGUMENT for NULL
   arguments, a chat request, or a request without them (not asked for, or
   not yet computed); *out_json is then NULL. Any thread, not racing
   vllm_request_free. */
VLLM_API vllm_status vllm_request_prompt_logprobs(vllm_engine* engine, const vllm_request* request, char** out_json);

/* ---- The OpenAI Responses API over the chat road (additive) ----
   A /v1/responses request runs as a chat request: no engine is needed to
   translate it, so these take none. vllm_responses_begin reads the request
   (request_json) with the conversation before it (history_json: a JSON array
   of items, the "conversation" a previous call's vllm_responses_finish gave;
   NULL or "" for none) and writes the chat request it runs as into
   *out_chat_json (caller frees; run it with vllm_chat_submit_pull or any
   chat entry point, its "stream" set as the request's). INVALID_ARGUMENT
   names the field ("'input[2].type' 'web_search_call' is not supported
   (...)"); *out_call and *out_chat_json are then NULL. response_id is the
   response's "id" (the caller's, "resp_..."), created_at its Unix seconds.
   vllm_responses_feed reads one output of that chat call (a
   chat.completion.chunk, or the whole chat.completion) and writes the
   Responses events it makes as a JSON array (caller frees; "[]" for a
   chat.completion, and the first chunk's begins with response.created and
   response.in_progress). vllm_responses_finish writes
   {"events": [the closing events, last response.completed or
   response.incomplete], "response": the response object,
   "conversation": history, input and output items}. A call is used by one
   thread at a time; vllm_responses_free releases it (NULL is a no-op). */
typedef struct vllm_responses_call vllm_responses_call;
VLLM_API vllm_status vllm_responses_begin(const char* request_json, const char* history_json,
                                          const char* response_id, int64_t created_at,
                                          vllm_responses_call** out_call, char** out_chat_json);
VLLM_API vllm_status vllm_responses_feed(vllm_responses_call* call, const char* chat_json, char** out_events_json);
VLLM_API vllm_status vllm_responses_finish(vllm_responses_call* call, char** out_json);
VLLM_API void vllm_responses_free(vllm_responses_call* call);

/* ---- Anthropic's Messages API (additive) ----
   An Anthropic /v1/messages request (its JSON body: model, max_tokens,
   system, messages with text / tool_use / tool_result / thinking blocks,
   tools with input_schema, tool_choice, stop_sequences, temperature, top_p,
   top_k, thinking, metadata, stream; fields it does not know are ignored),
   translated into the chat request it means and run on the chat road (the
   model's template, tool and reasoning parsers, constraints), reported by
   `poller` under `tag` as vllm_chat_submit_pull reports a chat call:
   streaming, one Anthropic stream event JSON per event (message_start,
   content_block_start / _delta / _stop, message_delta, message_stop; each
   names itself in "type"); not streaming, the one `message`; then the
   terminal event (finished, ""). Validated before it returns:
   VLLM_ERR_INVALID_ARGUMENT naming the field (images, documents, server
   tools and a tool_result answering no earlier tool_use are refused so); a
   prompt past the context refused as for chat. The request is the
   caller's (vllm_request_free). */
VLLM_API vllm_status vllm_messages_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                               const char* request_json, vllm_request** out);

/* The token ids of the prompt an Anthropic /v1/messages (or
   /v1/messages/count_tokens) body renders to: what
   vllm_messages_submit_pull would run with (max_tokens and the sampling
   fields are not needed). Errors and freeing as vllm_chat_tokenize. */
VLLM_API vllm_status vllm_messages_tokenize(vllm_engine* engine, const char* request_json, int32_t** out_ids,
                                            int32_t* out_n_ids);

/* ---- KV cache events (additive) ----
   What vLLM publishes with --kv-events-config, from the engine's side: the
   full blocks its prefix cache stores and evicts. vllm_engine_kv_events_enable
   starts recording (from the engine's next step; call it before submitting
   requests, so that every cached block's parent is reported before it);
   INVALID_ARGUMENT when prefix caching is off. Idempotent. Without it nothing
   is recorded and nothing costs.
   vllm_engine_kv_events_take waits up to timeout_ms (0: not at all) for
   events, then writes every pending one into *out_json (the caller's:
   vllm_string_free), oldest first:
     {"dropped": N, "events": [
       {"type": "stored", "group": g, "hash": h, "parent": p or null,
        "tokens": [block_size ids]},
       {"type": "removed", "group": g, "hash": h}, ...]}
   group: the KV cache group (vllm_engine_stats' kv_cache_groups index);
   hash, parent: the prefix cache's own unsigned 64-bit chain hashes (a
   block is known by its parent's hash and its tokens; parent null for a
   sequence's first block). They are not vLLM's block hashes: a consumer
   computes those from the tokens along the chain. N counts the events lost
   since the last take because more than a bounded number (262144) were
   pending. The library does no I/O for them: publishing (vLLM's ZMQ
   publisher) is the caller's. One consumer thread at a time; a take still
   waiting when the engine is freed is the caller's error, as for any call. */
VLLM_API vllm_status vllm_engine_kv_events_enable(vllm_engine* engine);
VLLM_API vllm_status vllm_engine_kv_events_take(vllm_engine* engine, int32_t timeout_ms, char** out_json);
/* --- Embeddings (issue 43; additive). An engine serves them when loaded
   as a pooling model: runner "pooling" (or "auto" on a model whose file
   names a pooling, e.g. llama.cpp's `<arch>.pooling_type` from
   sentence-transformers' Pooling module), convert "embed", or runner
   "both" (generation and pooling in one engine); see the options JSON's
   runner / convert / pooler_config / hf_overrides. A generation request
   to a pooling-only engine, and an embedding request to a generation-only
   one, fail with VLLM_ERR_INVALID_ARGUMENT naming what to use instead.
   Pooling requests run through the same scheduler as generation ones
   (prefill only, batched together, sharing the token budget) and keep no
   KV blocks once done. */

/* One embedding batch (the upstream vllm.cpp v15 shape). OWNERSHIP:
   `values` is library-allocated; free with vllm_embedding_result_free.
   Row-major: embedding i is values[i * dim .. (i + 1) * dim). */
typedef struct vllm_embedding_result {
    float* values;          /* n_embeddings * dim floats */
    int32_t n_embeddings;   /* the number of input texts */
    int32_t dim;            /* the vector's length (the hidden size) */
    int32_t prompt_tokens;  /* all inputs' tokens (OpenAI's usage) */
} vllm_embedding_result;

/* Embeds n_texts NUL-terminated UTF-8 strings (tokenized with the model's
   special tokens), blocking until every vector is ready; the engine's
   pooling and normalisation. On any non-OK status *out is zeroed and
   vllm_last_error() says why (INVALID_ARGUMENT: a NULL argument,
   n_texts <= 0, a text with no tokens or past max_model_len, a
   generation-only engine). */
VLLM_API vllm_status vllm_embed(vllm_engine* engine, const char* const* texts, int32_t n_texts,
                                vllm_embedding_result* out);
/* Frees out->values and zeroes *out; NULL is a no-op. */
VLLM_API void vllm_embedding_result_free(vllm_embedding_result* out);

/* An OpenAI /v1/embeddings body (input: a string, a list of strings, token
   ids or token id lists; encoding_format float or base64; dimensions, only
   for a Matryoshka model; vLLM's truncate_prompt_tokens, normalize,
   add_special_tokens, priority) -> the response JSON in *out_json (caller
   frees with vllm_string_free), blocking. INVALID_ARGUMENT naming the
   field for a bad body. */
VLLM_API vllm_status vllm_embeddings(vllm_engine* engine, const char* request_json, char** out_json);

/* ---- Scoring and reranking (additive; issue 43) ----
   vLLM's /score body (text_1 / text_2, or queries / documents: one text
   against many, or pair by pair; truncate_prompt_tokens, priority) and its
   /rerank body (Jina's and Cohere v2's shape: query, documents as strings
   or {"text": ...}, top_n (0: all), return_documents) -> the response JSON
   in *out_json (caller frees with vllm_string_free), blocking. A model
   loaded with hf_overrides' classifier_from_token (Qwen3-Reranker's
   ["no", "yes"], is_original_qwen3_reranker) scores the last row's logits
   of the two tokens, sigmoid(true - false); an embedding model scores the
   cosine similarity of the embeddings. INVALID_ARGUMENT naming the field
   for a bad body, or naming what to load for an engine that cannot score. */
VLLM_API vllm_status vllm_score(vllm_engine* engine, const char* request_json, char** out_json);
VLLM_API vllm_status vllm_rerank(vllm_engine* engine, const char* request_json, char** out_json);

/* vLLM's /classify body (input as a string, a list of strings, token ids
   or token-id lists; truncate_prompt_tokens, add_special_tokens, priority)
   -> its response JSON in *out_json (caller frees with vllm_string_free),
   blocking: per input its index, label (the likeliest class's id2label
   name), probs (softmax over the labels; sigmoid for one) and num_classes.
   A classification model (a BERT or XLM-RoBERTa *ForSequenceClassification
   head) only; INVALID_ARGUMENT naming the field for a bad body, or naming
   the task for a model without a classification head. (Additive; issue 43.) */
VLLM_API vllm_status vllm_classify(vllm_engine* engine, const char* request_json, char** out_json);

/* vLLM's /pooling body (the /v1/embeddings body plus "task": "embed",
   "token_embed" (every prompt row, or STEP's rows and columns, as
   pooler_config's tok_pooling_type says) or "classify"; absent: the
   model's own task) -> its response JSON in *out_json (caller frees with
   vllm_string_free), blocking: data[i] = {index, object "pooling", data:
   a vector, a list of rows, or base64 of the float32 values}.
   INVALID_ARGUMENT naming the field. (Additive; issue 43.) */
VLLM_API vllm_status vllm_pooling(vllm_engine* engine, const char* request_json, char** out_json);

/* ---- LoRA adapters (additive) ----
   An engine loaded with the options JSON's "enable_lora": true (and
   "max_loras": adapters resident at once and running in one batch, default
   1; "max_lora_rank": the largest rank accepted, default 16) serves
   Hugging Face PEFT adapters (a directory with adapter_config.json and
   adapter_model.safetensors) beside its base model. A request runs one by
   naming its id in its options JSON or chat body: "lora_int_id": <id> (0 or
   absent: the base model). Adapters past max_loras stay registered and are
   loaded again from their directory when a request needs them (the least
   recently used resident one evicted). vllm_engine_stats' JSON then has
   "lora": {registered, resident, loads, evictions, max_loras, max_lora_rank,
   running_adapters, waiting_adapters (their names)}. */

/* vllm_lora_adapter_add loads and checks the adapter now (it blocks while
   the files are read; any thread): `id` >= 1 and `name` unique on the
   engine; `path` the PEFT directory; all three borrowed for the call.
   Errors: INVALID_ARGUMENT for an engine without enable_lora, an id < 1, an
   empty name, or an id or name already registered; MODEL_LOAD naming the
   adapter (and the tensor and the shapes) for an adapter that does not
   match the base model (architecture, shapes, rank above max_lora_rank,
   missing or truncated files, options or target modules the engine does not
   run: modules_to_save, DoRA, ...). Nothing is registered on failure. */
VLLM_API vllm_status vllm_lora_adapter_add(vllm_engine* engine, int32_t id, const char* name, const char* path);

/* Unregisters adapter `id`: new requests can no longer name it; requests
   already submitted with it run to their end. INVALID_ARGUMENT for an
   engine without enable_lora or an id not registered. */
VLLM_API vllm_status vllm_lora_adapter_remove(vllm_engine* engine, int32_t id);

/* The registered adapters as a JSON array of {"id", "name", "path"}, by id
   (caller frees with vllm_string_free). INVALID_ARGUMENT without enable_lora. */
VLLM_API vllm_status vllm_lora_adapters(vllm_engine* engine, char** out_json);

#ifdef __cplusplus
}
#endif

#endif /* VLLM_H */
