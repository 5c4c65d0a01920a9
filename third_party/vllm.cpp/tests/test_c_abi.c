/*
 * C-ABI conformance test: a plain C11 client of libvllm, as a foreign host
 * would be. Usage: test_c_abi [model.gguf]. Without a model only the
 * model-free checks run. Prints "N passed, M failed"; exit status 1 on any
 * failure. A crash anywhere is a failure of the contract ("never crash").
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "vllm.h"

static int passed = 0, failed = 0;

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (cond) {                                                              \
            ++passed;                                                            \
        } else {                                                                 \
            ++failed;                                                            \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, \
                    what, vllm_last_error());                                    \
        }                                                                        \
    } while (0)

/* An error must come with a non-empty message. */
#define CHECK_STATUS(expr, expected, what)                                        \
    do {                                                                          \
        vllm_status st_ = (expr);                                                 \
        CHECK(st_ == (expected), what);                                           \
        if (st_ != VLLM_OK) CHECK(vllm_last_error()[0] != '\0', what " (message)"); \
    } while (0)

static bool count_cb(const char* delta, bool finished, void* user_data) {
    (void)delta;
    (void)finished;
    ++*(int*)user_data;
    return true;
}

struct collect {
    char text[8192];
    int finished_calls;
    int calls;
    int stop_after; /* return false on this call (1-based); 0: never */
};

static bool collect_cb(const char* delta, bool finished, void* user_data) {
    struct collect* c = (struct collect*)user_data;
    ++c->calls;
    if (finished) ++c->finished_calls;
    strncat(c->text, delta, sizeof c->text - strlen(c->text) - 1);
    return c->stop_after == 0 || c->calls < c->stop_after;
}

static void test_without_model(void) {
    CHECK(vllm_abi_version() == 10, "abi version is 10");
    CHECK(vllm_version() != NULL && vllm_version()[0] != '\0', "version string");
    CHECK(vllm_last_error() != NULL, "last error never NULL");

    vllm_model_params mp = vllm_model_params_default();
    CHECK(mp.model_path == NULL && mp.block_size == 0 && mp.enable_prefix_caching == 0, "model params defaults");
    vllm_sampling_params sp = vllm_sampling_params_default();
    CHECK(sp.temperature == 1.0f && sp.top_p == 1.0f && sp.top_k == 0 && sp.max_tokens == 16 &&
              sp.repetition_penalty == 1.0f && sp.stop == NULL && sp.logits_processor == NULL,
          "sampling params defaults");

    vllm_engine* engine = (vllm_engine*)0x1;
    CHECK_STATUS(vllm_engine_load(NULL, &engine), VLLM_ERR_INVALID_ARGUMENT, "load(NULL params)");
    CHECK(engine == NULL, "load failure leaves *out NULL");
    CHECK_STATUS(vllm_engine_load(&mp, NULL), VLLM_ERR_INVALID_ARGUMENT, "load(NULL out)");
    CHECK_STATUS(vllm_engine_load(&mp, &engine), VLLM_ERR_INVALID_ARGUMENT, "load(NULL model_path)");
    mp.model_path = "/nonexistent/model.gguf";
    CHECK_STATUS(vllm_engine_load(&mp, &engine), VLLM_ERR_MODEL_LOAD, "load(missing file)");
    CHECK(strstr(vllm_last_error(), "/nonexistent/model.gguf") != NULL, "load error names the path");
    mp.enable_prefix_caching = 7;
    CHECK_STATUS(vllm_engine_load(&mp, &engine), VLLM_ERR_INVALID_ARGUMENT, "enable_prefix_caching out of range");
    mp.enable_prefix_caching = 0;
    mp.scheduling_policy = "random";
    CHECK_STATUS(vllm_engine_load(&mp, &engine), VLLM_ERR_INVALID_ARGUMENT, "unknown scheduling policy");
    mp.scheduling_policy = NULL;

    vllm_completion c;
    memset(&c, 0x5a, sizeof c);
    CHECK_STATUS(vllm_complete(NULL, "hi", &sp, &c), VLLM_ERR_INVALID_ARGUMENT, "complete(NULL engine)");
    CHECK(c.text == NULL && c.finish_reason == NULL, "complete error zeroes out");
    CHECK_STATUS(vllm_complete(NULL, "hi", &sp, NULL), VLLM_ERR_INVALID_ARGUMENT, "complete(NULL out)");
    int calls = 0;
    CHECK_STATUS(vllm_complete_stream(NULL, "hi", &sp, count_cb, &calls), VLLM_ERR_INVALID_ARGUMENT,
                 "complete_stream(NULL engine)");
    CHECK(calls == 0, "no callback on error");
    vllm_request* req = (vllm_request*)0x1;
    CHECK_STATUS(vllm_request_submit(NULL, "hi", &sp, count_cb, NULL, &req), VLLM_ERR_INVALID_ARGUMENT,
                 "submit(NULL engine)");
    CHECK(req == NULL, "submit failure leaves *out NULL");
    CHECK_STATUS(vllm_request_cancel(NULL), VLLM_ERR_INVALID_ARGUMENT, "cancel(NULL)");
    CHECK_STATUS(vllm_request_wait(NULL), VLLM_ERR_INVALID_ARGUMENT, "wait(NULL)");
    CHECK(vllm_request_done(NULL) == false, "done(NULL) is false");
    CHECK(vllm_request_error(NULL) != NULL, "request_error(NULL) is not NULL");
    vllm_request_free(NULL);
    char* json = (char*)0x1;
    CHECK_STATUS(vllm_chat(NULL, "{}", &json), VLLM_ERR_INVALID_ARGUMENT, "chat(NULL engine)");
    CHECK(json == NULL, "chat failure leaves *out NULL");
    CHECK_STATUS(vllm_chat_stream(NULL, "{}", count_cb, NULL), VLLM_ERR_INVALID_ARGUMENT, "chat_stream(NULL engine)");
    vllm_engine_free(NULL);
    vllm_string_free(NULL);
    vllm_completion_free(NULL);
}

/* A callback that calls back into its own request: wait must be refused,
   free is deferred to the delivery thread. */
struct self_call {
    vllm_request* request;
    vllm_status wait_status;
    vllm_status wait_for_status;
    int freed;
};

static bool self_call_cb(const char* delta, bool finished, void* user_data) {
    (void)delta;
    (void)finished;
    struct self_call* s = (struct self_call*)user_data;
    if (s->freed) return true;
    s->wait_status = vllm_request_wait(s->request);
    vllm_request_outcome outcome;
    s->wait_for_status = vllm_request_wait_for(s->request, 0, &outcome);
    vllm_request_free(s->request);
    s->freed = 1;
    return true;
}

struct thread_job {
    vllm_engine* engine;
    const vllm_sampling_params* sp;
    const char* prompt;
    struct collect col;
    vllm_status status;
};

static void* submit_and_wait(void* arg) {
    struct thread_job* job = (struct thread_job*)arg;
    vllm_request* req = NULL;
    job->status = vllm_request_submit(job->engine, job->prompt, job->sp, collect_cb, &job->col, &req);
    if (job->status == VLLM_OK) {
        job->status = vllm_request_wait(req);
        vllm_request_free(req);
    }
    return NULL;
}

static void test_requests(vllm_engine* engine, const vllm_sampling_params* sp) {
    vllm_completion alone;
    CHECK_STATUS(vllm_complete(engine, "Once upon a time", sp, &alone), VLLM_OK, "reference completion");

    /* Submit, wait, done, error, repeated wait, idempotent cancel after the end. */
    struct collect col;
    memset(&col, 0, sizeof col);
    vllm_request* req = NULL;
    CHECK_STATUS(vllm_request_submit(engine, "Once upon a time", sp, collect_cb, &col, &req), VLLM_OK, "submit");
    CHECK(req != NULL, "submit hands out a request");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "wait");
    CHECK(vllm_request_done(req), "done after wait");
    CHECK(strcmp(vllm_request_error(req), "") == 0, "no error");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "second wait");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel after finish");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel twice");
    CHECK(col.finished_calls == 1, "one terminal call");
    CHECK(alone.text != NULL && strcmp(col.text, alone.text) == 0, "request text equals the blocking completion");
    vllm_completion rc;
    CHECK_STATUS(vllm_request_completion(req, &rc), VLLM_OK, "request completion");
    CHECK(rc.text != NULL && strcmp(rc.text, alone.text) == 0 && rc.finish_reason != NULL &&
              strcmp(rc.finish_reason, alone.finish_reason) == 0 && rc.completion_tokens == alone.completion_tokens &&
              rc.prompt_tokens == alone.prompt_tokens,
          "request completion equals the blocking completion");
    vllm_completion_free(&rc);
    CHECK_STATUS(vllm_request_completion(NULL, &rc), VLLM_ERR_INVALID_ARGUMENT, "request_completion(NULL)");
    vllm_request_free(req);

    /* Cancel right away: no terminal call, wait returns OK. */
    vllm_sampling_params long_sp = *sp;
    long_sp.max_tokens = 200;
    long_sp.ignore_eos = 1;
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_request_submit(engine, "Count to a thousand:", &long_sp, collect_cb, &col, &req), VLLM_OK,
                 "submit long");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel is idempotent");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "wait after cancel");
    CHECK(col.finished_calls == 0, "no terminal call after cancel");
    CHECK_STATUS(vllm_request_completion(req, &rc), VLLM_OK, "completion of a cancelled request");
    CHECK(rc.finish_reason != NULL && strcmp(rc.finish_reason, "abort") == 0, "cancelled request finished with abort");
    vllm_completion_free(&rc);
    vllm_request_free(req);

    /* Free without wait while running. */
    CHECK_STATUS(vllm_request_submit(engine, "Count to a thousand:", &long_sp, collect_cb, &col, &req), VLLM_OK,
                 "submit to free");
    vllm_request_free(req);

    /* Wait and free from the request's own callback. */
    struct self_call self;
    memset(&self, 0, sizeof self);
    self.wait_status = VLLM_OK;
    CHECK_STATUS(vllm_request_submit(engine, "Hello", sp, self_call_cb, &self, &self.request), VLLM_OK,
                 "submit self-calling");
    for (int i = 0; i < 1000 && !self.freed; ++i) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(self.freed, "callback ran");
    CHECK(self.wait_status == VLLM_ERR_INVALID_ARGUMENT, "wait from the own callback is refused");
    CHECK(self.wait_for_status == VLLM_ERR_INVALID_ARGUMENT, "wait_for from the own callback is refused");

    /* Concurrent submissions from several threads batch together and each
       gets the text it gets alone (greedy). */
    enum { N = 4 };
    pthread_t threads[N];
    struct thread_job jobs[N];
    for (int i = 0; i < N; ++i) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].engine = engine;
        jobs[i].sp = sp;
        jobs[i].prompt = "Once upon a time";
        pthread_create(&threads[i], NULL, submit_and_wait, &jobs[i]);
    }
    for (int i = 0; i < N; ++i) {
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].status == VLLM_OK, "threaded request OK");
        CHECK(strcmp(jobs[i].col.text, alone.text) == 0, "threaded request text equals the blocking one");
        if (strcmp(jobs[i].col.text, alone.text) != 0) fprintf(stderr, "[%s] vs [%s]\n", jobs[i].col.text, alone.text);
    }
    vllm_completion_free(&alone);

    /* The priority entry point and stats. */
    CHECK_STATUS(vllm_request_submit_with_priority(engine, "Hi", sp, -3, collect_cb, &col, &req), VLLM_OK,
                 "submit with priority");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "wait priority request");
    vllm_request_free(req);
    char* stats = NULL;
    CHECK_STATUS(vllm_engine_stats(engine, &stats), VLLM_OK, "stats");
    CHECK(stats != NULL && strstr(stats, "\"kv_blocks_total\":") != NULL, "stats JSON has kv_blocks_total");
    vllm_string_free(stats);
    CHECK_STATUS(vllm_engine_stats(engine, NULL), VLLM_ERR_INVALID_ARGUMENT, "stats(NULL out)");
    CHECK_STATUS(vllm_engine_stats(NULL, &stats), VLLM_ERR_INVALID_ARGUMENT, "stats(NULL engine)");
    CHECK_STATUS(vllm_request_submit(engine, "", sp, collect_cb, &col, &req), VLLM_ERR_INVALID_ARGUMENT,
                 "submit empty prompt");
    CHECK(req == NULL, "refused submit leaves *out NULL");
}

/* Chat completions through the model's own template, blocking and streamed,
   and requests the chat layer must refuse. */
static void test_chat(vllm_engine* engine) {
    static const char* kHello =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 8, \"temperature\": 0}";
    char* json = (char*)0x1;
    CHECK_STATUS(vllm_chat(engine, "{\"messages\": []}", &json), VLLM_ERR_INVALID_ARGUMENT, "chat: empty messages");
    CHECK(strstr(vllm_last_error(), "messages") != NULL, "chat error names 'messages'");
    CHECK(json == NULL, "chat failure leaves *out NULL");
    CHECK_STATUS(vllm_chat(engine, "{\"messages\": [", &json), VLLM_ERR_INVALID_ARGUMENT, "chat: malformed JSON");
    CHECK_STATUS(vllm_chat(engine, kHello, NULL), VLLM_ERR_INVALID_ARGUMENT, "chat(NULL out)");

    CHECK_STATUS(vllm_chat(engine, kHello, &json), VLLM_OK, "chat completion");
    CHECK(json != NULL && strstr(json, "\"chat.completion\"") != NULL && strstr(json, "\"assistant\"") != NULL,
          "chat returns a chat.completion with an assistant message");
    vllm_string_free(json);

    struct collect col;
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_chat_stream(engine, kHello, collect_cb, &col), VLLM_OK, "chat stream");
    CHECK(col.finished_calls == 1 && col.calls >= 4, "chat stream: role, deltas, finish chunk, then the terminal call");
    CHECK(strstr(col.text, "\"chat.completion.chunk\"") != NULL, "chat stream sends chunks");

    memset(&col, 0, sizeof col);
    col.stop_after = 1;
    CHECK_STATUS(vllm_chat_stream(engine, kHello, collect_cb, &col), VLLM_OK, "chat stream stopped by the callback");
    CHECK(col.calls == 1 && col.finished_calls == 0, "no calls after the callback stops the chat stream");
    int calls = 0;
    CHECK_STATUS(vllm_chat_stream(engine, "{\"messages\": 1}", count_cb, &calls), VLLM_ERR_INVALID_ARGUMENT,
                 "chat stream: messages of the wrong type");
    CHECK(calls == 0, "no chat callback for a refused request");
}

/* The additive entry points the server uses: tokenize/detokenize, token-id
   prompts with logprobs and their output JSON, the non-blocking chat call
   (blocking and streamed responses, cancel, refusals). */
static void test_server_entry_points(vllm_engine* engine, const vllm_sampling_params* sp) {
    int32_t* ids = NULL;
    int32_t n_ids = -1;
    CHECK_STATUS(vllm_tokenize(engine, "The capital of France is", true, &ids, &n_ids), VLLM_OK, "tokenize");
    CHECK(ids != NULL && n_ids > 0, "tokenize gives ids");
    char* text = NULL;
    CHECK_STATUS(vllm_detokenize(engine, ids, n_ids, true, &text), VLLM_OK, "detokenize");
    CHECK(text != NULL && strcmp(text, "The capital of France is") == 0, "detokenize round-trips the text");
    vllm_string_free(text);

    int32_t* empty = NULL;
    int32_t n_empty = -1;
    CHECK_STATUS(vllm_tokenize(engine, "", false, &empty, &n_empty), VLLM_OK, "tokenize empty text");
    CHECK(empty != NULL && n_empty == 0, "empty text: no ids, non-NULL buffer");
    vllm_tokens_free(empty);
    CHECK_STATUS(vllm_tokenize(engine, "\xff bad", false, &empty, &n_empty), VLLM_ERR_INVALID_ARGUMENT,
                 "tokenize invalid UTF-8");
    CHECK(empty == NULL && n_empty == 0, "refused tokenize leaves no ids");
    CHECK_STATUS(vllm_tokenize(engine, NULL, false, &empty, &n_empty), VLLM_ERR_INVALID_ARGUMENT, "tokenize NULL");
    const int32_t bad_id = 1 << 30;
    CHECK_STATUS(vllm_detokenize(engine, &bad_id, 1, true, &text), VLLM_ERR_INVALID_ARGUMENT,
                 "detokenize an id outside the vocabulary");
    CHECK(strstr(vllm_last_error(), "vocabulary") != NULL && text == NULL, "the error names the vocabulary");
    CHECK_STATUS(vllm_detokenize(engine, NULL, 0, true, &text), VLLM_OK, "detokenize no ids");
    CHECK(text != NULL && text[0] == '\0', "no ids: empty text");
    vllm_string_free(text);

    /* A token-id prompt gives what its text gives. */
    struct collect col;
    memset(&col, 0, sizeof col);
    vllm_request* req = NULL;
    CHECK_STATUS(vllm_request_submit_tokens(engine, ids, n_ids, sp, 0, 2, collect_cb, &col, &req), VLLM_OK,
                 "submit tokens with logprobs");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "token request finishes");
    vllm_completion c;
    CHECK_STATUS(vllm_complete(engine, "The capital of France is", sp, &c), VLLM_OK, "the same prompt as text");
    CHECK(strcmp(col.text, c.text) == 0, "token-id prompt output equals the text prompt's");
    vllm_completion_free(&c);
    char* output = NULL;
    CHECK_STATUS(vllm_request_output(engine, req, &output), VLLM_OK, "request output");
    CHECK(output != NULL && strstr(output, "\"token_ids\":[") != NULL && strstr(output, "\"top_logprobs\":[") != NULL,
          "output JSON has token ids and logprobs");
    vllm_string_free(output);
    CHECK_STATUS(vllm_request_output(engine, req, NULL), VLLM_ERR_INVALID_ARGUMENT, "request output(NULL out)");
    vllm_request_free(req);

    req = (vllm_request*)0x1;
    CHECK_STATUS(vllm_request_submit_tokens(engine, ids, n_ids, sp, 0, 21, collect_cb, &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "logprobs above 20 refused");
    CHECK(req == NULL && strstr(vllm_last_error(), "logprobs") != NULL, "refusal names logprobs, *out NULL");
    CHECK_STATUS(vllm_request_submit_tokens(engine, ids, 0, sp, 0, -1, collect_cb, &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "no prompt ids refused");
    CHECK_STATUS(vllm_request_submit_tokens(engine, &bad_id, 1, sp, 0, -1, collect_cb, &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "prompt id outside the vocabulary refused");
    CHECK_STATUS(vllm_request_submit_tokens(engine, NULL, 1, sp, 0, -1, collect_cb, &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "NULL prompt ids refused");
    vllm_tokens_free(ids);

    /* Chat: blocking response as one terminal call. */
    static const char* kHello =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 8, \"temperature\": 0}";
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_chat_submit(engine, kHello, collect_cb, &col, &req), VLLM_OK, "chat submit");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "chat request finishes");
    CHECK(col.calls == 1 && col.finished_calls == 1 && strstr(col.text, "\"chat.completion\"") != NULL,
          "a blocking chat call delivers one terminal chat.completion");
    {
        int32_t* chat_ids = NULL;
        int32_t n_chat_ids = 0;
        CHECK_STATUS(vllm_chat_tokenize(engine, kHello, &chat_ids, &n_chat_ids), VLLM_OK, "chat tokenize");
        char usage[64];
        snprintf(usage, sizeof usage, "\"prompt_tokens\":%d,", (int)n_chat_ids);
        CHECK(chat_ids != NULL && n_chat_ids > 0 && strstr(col.text, usage) != NULL,
              "chat tokenize gives the ids the chat call counts");
        vllm_tokens_free(chat_ids);
        CHECK_STATUS(vllm_chat_tokenize(engine, "{\"messages\": []}", &chat_ids, &n_chat_ids),
                     VLLM_ERR_INVALID_ARGUMENT, "chat tokenize refuses a bad request");
        CHECK(chat_ids == NULL && n_chat_ids == 0, "refused chat tokenize leaves no ids");
    }
    CHECK_STATUS(vllm_request_completion(req, &c), VLLM_ERR_INVALID_ARGUMENT, "no completion for a chat request");
    CHECK_STATUS(vllm_request_output(engine, req, &output), VLLM_ERR_INVALID_ARGUMENT, "no output for a chat request");
    vllm_request_free(req);

    /* Streamed, with two choices. */
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_chat_submit(engine,
                                  "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 4, "
                                  "\"n\": 2, \"stream\": true}",
                                  collect_cb, &col, &req),
                 VLLM_OK, "streamed chat submit");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "streamed chat finishes");
    CHECK(col.finished_calls == 1 && strstr(col.text, "\"chat.completion.chunk\"") != NULL &&
              strstr(col.text, "\"index\":1") != NULL,
          "streamed chat delivers chunks of both choices, then the terminal call");
    vllm_request_free(req);

    /* Cancelled mid-generation: the engine lets go of every choice. */
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_chat_submit(engine,
                                  "{\"messages\": [{\"role\": \"user\", \"content\": \"Tell a long story\"}], "
                                  "\"max_tokens\": 200, \"ignore_eos\": true, \"n\": 2, \"stream\": true}",
                                  collect_cb, &col, &req),
                 VLLM_OK, "long chat submit");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "chat cancel");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "a cancelled chat ends OK");
    vllm_request_free(req);
    /* Stats are published after the engine's next step: poll (bounded). */
    bool released = false;
    for (int i = 0; i < 500 && !released; ++i) {
        char* stats = NULL;
        if (vllm_engine_stats(engine, &stats) != VLLM_OK) break;
        released = strstr(stats, "\"running_requests\":0") != NULL && strstr(stats, "\"kv_blocks_used\":0") != NULL;
        vllm_string_free(stats);
        if (!released) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    CHECK(released, "no running request and no KV block left after a cancelled chat");

    req = (vllm_request*)0x1;
    CHECK_STATUS(vllm_chat_submit(engine, "{\"messages\": 1}", collect_cb, &col, &req), VLLM_ERR_INVALID_ARGUMENT,
                 "chat submit refuses a bad request before it starts");
    CHECK(req == NULL && strstr(vllm_last_error(), "messages") != NULL, "refusal names the field, *out NULL");
    CHECK_STATUS(vllm_chat_submit(engine, kHello, NULL, NULL, &req), VLLM_ERR_INVALID_ARGUMENT,
                 "chat submit without a callback");
}

/* ---- Sampling options (vllm_request_submit_with_options, chat's logit_bias) ---- */

/* The one id `text` tokenizes to (without special tokens); -1 otherwise. */
static int32_t single_token(vllm_engine* engine, const char* text) {
    int32_t* ids = NULL;
    int32_t n = 0;
    if (vllm_tokenize(engine, text, false, &ids, &n) != VLLM_OK) return -1;
    const int32_t id = n == 1 ? ids[0] : -1;
    vllm_tokens_free(ids);
    return id;
}

/* The generated ids of a finished completion request (vllm_request_output's
   "token_ids"), at most max of them; their count, -1 on failure. */
static int generated_ids(vllm_engine* engine, const vllm_request* req, int32_t* out, int max) {
    char* json = NULL;
    if (vllm_request_output(engine, req, &json) != VLLM_OK) return -1;
    const char* p = strstr(json, "\"token_ids\":[");
    int n = 0;
    if (p != NULL) {
        p += strlen("\"token_ids\":[");
        while (*p != ']' && n < max) {
            char* end = NULL;
            out[n++] = (int32_t)strtol(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
    }
    vllm_string_free(json);
    return p == NULL ? -1 : n;
}

/* Runs a greedy completion with options to its end; the generated ids' count
   (-1 when the submit or the request failed). */
static int run_with_options(vllm_engine* engine, const char* prompt, const vllm_sampling_params* sp,
                            const char* options, int32_t* ids, int max) {
    struct collect col;
    memset(&col, 0, sizeof col);
    vllm_request* req = NULL;
    if (vllm_request_submit_with_options(engine, prompt, NULL, 0, sp, 0, -1, options, collect_cb, &col, &req) !=
        VLLM_OK)
        return -1;
    const int n = vllm_request_wait(req) == VLLM_OK ? generated_ids(engine, req, ids, max) : -1;
    vllm_request_free(req);
    return n;
}

static void test_sampling_options(vllm_engine* engine, const vllm_sampling_params* sp) {
    const int32_t paris = single_token(engine, " Paris");
    const int32_t london = single_token(engine, " London");
    CHECK(paris >= 0 && london >= 0 && paris != london, "' Paris' and ' London' are single tokens");
    int32_t plain[16], got[16];
    const int n_plain = run_with_options(engine, "The capital of France is", sp, NULL, plain, 16);
    CHECK(n_plain == sp->max_tokens, "no options: a plain greedy completion");

    char options[256];
    snprintf(options, sizeof options, "{\"logit_bias\": {\"%d\": 100}}", (int)london);
    int n = run_with_options(engine, "The capital of France is", sp, options, got, 16);
    bool all_london = n == sp->max_tokens;
    for (int i = 0; i < n; ++i) all_london = all_london && got[i] == london;
    CHECK(all_london, "logit_bias +100 makes greedy decoding pick that token every time");
    snprintf(options, sizeof options, "{\"logit_bias\": {\"%d\": -100}}", (int)plain[0]);
    n = run_with_options(engine, "The capital of France is", sp, options, got, 16);
    CHECK(n > 0 && got[0] != plain[0], "logit_bias -100 bans the token greedy decoding picked first");
    snprintf(options, sizeof options, "{\"allowed_token_ids\": [%d, %d], \"logit_bias\": null}", (int)london,
             (int)paris);
    n = run_with_options(engine, "The capital of France is", sp, options, got, 16);
    bool only_allowed = n == sp->max_tokens;
    for (int i = 0; i < n; ++i) only_allowed = only_allowed && (got[i] == london || got[i] == paris);
    CHECK(only_allowed, "allowed_token_ids: every generated token is one of them");
    snprintf(options, sizeof options, "{\"stop_token_ids\": [%d, %d]}", (int)plain[2], (int)plain[2]);
    n = run_with_options(engine, "The capital of France is", sp, options, got, 16);
    CHECK(n == 3 && memcmp(got, plain, sizeof(int32_t) * 3) == 0,
          "stop_token_ids: the output ends with the stop token");
    CHECK(run_with_options(engine, "The capital of France is", sp, "", got, 16) == n_plain &&
              memcmp(got, plain, sizeof(int32_t) * (size_t)n_plain) == 0,
          "empty options: the plain completion");

    /* Token ids, with logprobs, through the same entry point; pull delivery too. */
    int32_t* prompt_ids = NULL;
    int32_t n_prompt = 0;
    CHECK_STATUS(vllm_tokenize(engine, "The capital of France is", true, &prompt_ids, &n_prompt), VLLM_OK, "tokenize");
    struct collect col;
    memset(&col, 0, sizeof col);
    vllm_request* req = NULL;
    snprintf(options, sizeof options, "{\"logit_bias\": {\"%d\": 100}}", (int)london);
    CHECK_STATUS(vllm_request_submit_with_options(engine, NULL, prompt_ids, n_prompt, sp, 0, 1, options, collect_cb,
                                                  &col, &req),
                 VLLM_OK, "submit_with_options token ids and logprobs");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "token-id request with options finishes");
    n = generated_ids(engine, req, got, 16);
    CHECK(n == sp->max_tokens && got[0] == london, "token-id prompt: the bias applies");
    vllm_request_free(req);
    vllm_poller* poller = NULL;
    CHECK_STATUS(vllm_poller_create(engine, &poller), VLLM_OK, "poller for options");
    CHECK_STATUS(vllm_request_submit_pull_with_options(engine, poller, 1, "The capital of France is", NULL, 0, sp, 0,
                                                       -1, options, &req),
                 VLLM_OK, "submit_pull_with_options");
    CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "pull request with options finishes");
    n = generated_ids(engine, req, got, 16);
    CHECK(n == sp->max_tokens && got[n - 1] == london, "pull delivery: the bias applies");
    vllm_request_free(req);

    /* Refusals: INVALID_ARGUMENT naming the field, *out NULL. */
    static const struct {
        const char* options;
        const char* names;
    } kBad[] = {
        {"[1]", "JSON object"},
        {"{\"logit_bias\": {\"5\": 1}", "options_json"},
        {"{\"best_of\": 2}", "best_of"},
        {"{\"logit_bias\": {\"5\": 101}}", "[-100, 100]"},
        {"{\"logit_bias\": {\"5\": \"high\"}}", "logit_bias[\"5\"]"},
        {"{\"logit_bias\": {\"five\": 1}}", "token ids"},
        {"{\"logit_bias\": {\"-5\": 1}}", "token ids"},
        {"{\"logit_bias\": {\"5\": 1, \"05\": 2}}", "twice"},
        {"{\"logit_bias\": [5]}", "logit_bias"},
        {"{\"logit_bias\": {\"999999\": 1}}", "vocabulary"},
        {"{\"allowed_token_ids\": []}", "allowed_token_ids"},
        {"{\"allowed_token_ids\": [3, 3]}", "twice"},
        {"{\"allowed_token_ids\": [1.5]}", "allowed_token_ids[0]"},
        {"{\"allowed_token_ids\": [999999]}", "vocabulary"},
        {"{\"stop_token_ids\": [999999]}", "stop_token_ids"},
        {"{\"stop_token_ids\": [-1]}", "stop_token_ids[0]"},
        {"{\"stop_token_ids\": 5}", "stop_token_ids"},
        {"{\"include_stop_str_in_output\": 1}", "include_stop_str_in_output"},
        {"{\"truncate_prompt_tokens\": 0}", "truncate_prompt_tokens"},
        {"{\"bad_words\": [\"ok\", 3]}", "bad_words[1]"},
        {"{\"bad_words\": \"word\"}", "bad_words"},
        {"{\"skip_special_tokens\": \"no\"}", "skip_special_tokens"},
    };
    for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; ++i) {
        req = (vllm_request*)0x1;
        CHECK_STATUS(vllm_request_submit_with_options(engine, "hi", NULL, 0, sp, 0, -1, kBad[i].options, collect_cb,
                                                      &col, &req),
                     VLLM_ERR_INVALID_ARGUMENT, "bad options refused");
        CHECK(req == NULL && strstr(vllm_last_error(), kBad[i].names) != NULL, kBad[i].options);
        CHECK_STATUS(vllm_request_submit_pull_with_options(engine, poller, 2, "hi", NULL, 0, sp, 0, -1,
                                                           kBad[i].options, &req),
                     VLLM_ERR_INVALID_ARGUMENT, "bad options refused (pull)");
    }
    CHECK_STATUS(vllm_request_submit_with_options(engine, NULL, NULL, 0, sp, 0, -1, NULL, collect_cb, &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_with_options without a prompt");
    CHECK(strstr(vllm_last_error(), "exactly one") != NULL, "names the two prompt forms");
    CHECK_STATUS(vllm_request_submit_with_options(engine, "hi", prompt_ids, n_prompt, sp, 0, -1, NULL, collect_cb,
                                                  &col, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_with_options with both prompts");
    CHECK_STATUS(vllm_request_submit_with_options(engine, "hi", NULL, 0, sp, 0, -1, NULL, NULL, NULL, &req),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_with_options without a callback");
    vllm_tokens_free(prompt_ids);
    vllm_poller_free(poller);

    /* Masks that leave no allowed token fail the request, not the engine. */
    {
        vllm_sampling_params held = *sp;
        held.min_tokens = 2;
        int32_t* eos = NULL;
        int32_t n_eos = 0;
        CHECK_STATUS(vllm_tokenize(engine, "<|im_end|>", false, &eos, &n_eos), VLLM_OK, "tokenize EOS");
        snprintf(options, sizeof options, "{\"allowed_token_ids\": [%d]}", n_eos == 1 ? (int)eos[0] : 0);
        vllm_tokens_free(eos);
        memset(&col, 0, sizeof col);
        CHECK_STATUS(vllm_request_submit_with_options(engine, "Hi", NULL, 0, &held, 0, -1, options, collect_cb, &col,
                                                      &req),
                     VLLM_OK, "only EOS allowed, min_tokens 2: accepted");
        CHECK_STATUS(vllm_request_wait(req), VLLM_ERR_RUNTIME, "the request fails at its first token");
        CHECK(strstr(vllm_request_error(req), "allowed_token_ids") != NULL, "its error names allowed_token_ids");
        vllm_request_free(req);
    }

    /* prompt_logprobs: null for the first prompt token, one entry for each other. */
    {
        memset(&col, 0, sizeof col);
        CHECK_STATUS(vllm_request_submit_with_options(engine, "The capital of France is", NULL, 0, sp, 0, -1,
                                                      "{\"prompt_logprobs\": 1}", collect_cb, &col, &req),
                     VLLM_OK, "submit with prompt_logprobs");
        CHECK_STATUS(vllm_request_wait(req), VLLM_OK, "prompt_logprobs request finishes");
        char* json = NULL;
        CHECK_STATUS(vllm_request_output(engine, req, &json), VLLM_OK, "its output");
        const char* prompt = json != NULL ? strstr(json, "\"prompt_logprobs\":[null,{\"token_id\":") : NULL;
        int entries = 0;
        for (const char* p = prompt; p != NULL && (p = strstr(p + 1, "\"top_logprobs\":[{")) != NULL;) ++entries;
        CHECK(prompt != NULL && entries == 4, "one entry for each of the 5 prompt tokens but the first");
        char* alone = NULL;
        CHECK_STATUS(vllm_request_prompt_logprobs(engine, req, &alone), VLLM_OK, "prompt logprobs alone");
        CHECK(alone != NULL && prompt != NULL && strncmp(alone, prompt + strlen("\"prompt_logprobs\":"),
                                                         strlen(alone)) == 0,
              "the same array as the output's");
        vllm_string_free(alone);
        vllm_string_free(json);
        vllm_request_free(req);
        req = (vllm_request*)0x1;
        CHECK_STATUS(vllm_request_submit_with_options(engine, "hi", NULL, 0, sp, 0, -1, "{\"prompt_logprobs\": 21}",
                                                      collect_cb, &col, &req),
                     VLLM_ERR_INVALID_ARGUMENT, "prompt_logprobs 21");
        CHECK(req == NULL && strstr(vllm_last_error(), "prompt_logprobs") != NULL, "names prompt_logprobs");
        CHECK_STATUS(vllm_request_submit_with_options(engine, "hi", NULL, 0, sp, 0, -1, NULL, collect_cb, &col, &req),
                     VLLM_OK, "a request without prompt logprobs");
        vllm_request_wait(req);
        char* none = (char*)0x1;
        CHECK_STATUS(vllm_request_prompt_logprobs(engine, req, &none), VLLM_ERR_INVALID_ARGUMENT,
                     "no prompt logprobs to read");
        CHECK(none == NULL, "*out_json NULL on refusal");
        vllm_request_free(req);
        char* refused = NULL;
        CHECK_STATUS(vllm_chat(engine, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                                       "\"prompt_logprobs\": 1}", &refused),
                     VLLM_ERR_INVALID_ARGUMENT, "chat refuses prompt_logprobs");
        CHECK(refused == NULL, "no response for a refused chat");
    }

    /* Chat requests read the same fields. */
    char chat[512];
    snprintf(chat, sizeof chat,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3, \"temperature\": 0, "
             "\"logit_bias\": {\"%d\": 100}}",
             (int)london);
    char* response = NULL;
    CHECK_STATUS(vllm_chat(engine, chat, &response), VLLM_OK, "chat with logit_bias");
    CHECK(response != NULL && strstr(response, "\"content\":\" London London London\"") != NULL,
          "chat: the biased token every time");
    vllm_string_free(response);
    snprintf(chat, sizeof chat,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3, \"temperature\": 0, "
             "\"allowed_token_ids\": [%d]}",
             (int)paris);
    CHECK_STATUS(vllm_chat(engine, chat, &response), VLLM_OK, "chat with allowed_token_ids");
    CHECK(response != NULL && strstr(response, "\"content\":\" Paris Paris Paris\"") != NULL,
          "chat: only the allowed token");
    vllm_string_free(response);
    snprintf(chat, sizeof chat,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 1, \"temperature\": 0, "
             "\"allowed_token_ids\": [%d], \"logprobs\": true, \"return_tokens_as_token_ids\": true}",
             (int)paris);
    CHECK_STATUS(vllm_chat(engine, chat, &response), VLLM_OK, "chat with return_tokens_as_token_ids");
    char named[64];
    snprintf(named, sizeof named, "\"token\":\"token_id:%d\"", (int)paris);
    CHECK(response != NULL && strstr(response, named) != NULL, "chat logprobs name the token by its id");
    vllm_string_free(response);
    response = NULL;
    CHECK_STATUS(vllm_chat(engine,
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                           "\"logit_bias\": {\"999999\": 5}}",
                           &response),
                 VLLM_ERR_INVALID_ARGUMENT, "chat: a logit_bias id outside the vocabulary");
    CHECK(response == NULL && strstr(vllm_last_error(), "logit_bias") != NULL, "the chat refusal names logit_bias");
}

/* vllm_engine_load_with_options: every refusal is INVALID_ARGUMENT naming the
   key, decided before the model file is read. */
static void test_load_options_refusals(void) {
    vllm_model_params mp = vllm_model_params_default();
    mp.model_path = "/nonexistent/model.gguf";
    vllm_engine* engine = (vllm_engine*)0x1;
    static const struct { const char* json; const char* named; } bad[] = {
        {"[1]", "object"},
        {"{\"chat_template\": ", "options_json"},
        {"{\"max_model_len\": 64}", "max_model_len"},
        {"{\"chat_template\": 3}", "chat_template"},
        {"{\"chat_template\": \"\"}", "chat_template"},
        {"{\"kv_cache_dtype\": \"fp8\"}", "fp8"},
        {"{\"kv_cache_dtype\": \"fp8_e4m3\"}", "fp8"},
        {"{\"kv_cache_dtype\": \"bfloat16\"}", "bfloat16"},
        {"{\"kv_cache_dtype\": \"int4\"}", "kv_cache_dtype"},
        {"{\"kv_cache_memory_bytes\": 0}", "kv_cache_memory_bytes"},
        {"{\"kv_cache_memory_bytes\": 1.5}", "kv_cache_memory_bytes"},
        {"{\"kv_cache_memory_bytes\": \"1G\"}", "kv_cache_memory_bytes"},
        {"{\"num_threads\": 0}", "num_threads"},
        {"{\"num_threads\": 100000}", "num_threads"},
        {"{\"num_threads\": true}", "num_threads"},
        {"{\"isa\": \"sse4\"}", "isa"},
#if defined(__x86_64__)
        {"{\"isa\": \"neon\"}", "isa"},
#endif
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        CHECK_STATUS(vllm_engine_load_with_options(&mp, bad[i].json, &engine), VLLM_ERR_INVALID_ARGUMENT, "bad option");
        CHECK(strstr(vllm_last_error(), bad[i].named) != NULL, bad[i].json);
        CHECK(engine == NULL, "failure leaves *out NULL");
    }
    mp.num_blocks = 64;
    CHECK_STATUS(vllm_engine_load_with_options(&mp, "{\"kv_cache_memory_bytes\": 1000000}", &engine),
                 VLLM_ERR_INVALID_ARGUMENT, "kv_cache_memory_bytes with num_blocks");
    mp.num_blocks = 0;
    CHECK_STATUS(vllm_engine_load_with_options(NULL, "{}", &engine), VLLM_ERR_INVALID_ARGUMENT, "NULL params");
    CHECK_STATUS(vllm_engine_load_with_options(&mp, "{}", NULL), VLLM_ERR_INVALID_ARGUMENT, "NULL out");
    /* Valid options, then the model's own error. */
    CHECK_STATUS(vllm_engine_load_with_options(&mp, "{\"kv_cache_dtype\": \"auto\", \"num_threads\": null}", &engine),
                 VLLM_ERR_MODEL_LOAD, "good options reach the model load");
    CHECK_STATUS(vllm_engine_load_with_options(&mp, NULL, &engine), VLLM_ERR_MODEL_LOAD, "NULL options: as vllm_engine_load");
}

/* Chat-tokenizes one user message "Hi" (optionally with a request template). */
static int chat_ids(vllm_engine* engine, const char* request, int32_t* ids, int32_t max_ids) {
    int32_t* out = NULL;
    int32_t n = 0;
    if (vllm_chat_tokenize(engine, request, &out, &n) != VLLM_OK) return -1;
    int32_t kept = n < max_ids ? n : max_ids;
    memcpy(ids, out, (size_t)kept * sizeof *ids);
    vllm_tokens_free(out);
    return n;
}

static bool ids_of_text(vllm_engine* engine, const char* text, const int32_t* ids, int n) {
    int32_t* out = NULL;
    int32_t m = 0;
    if (vllm_tokenize(engine, text, false, &out, &m) != VLLM_OK) return false;
    bool same = m == n && memcmp(out, ids, (size_t)n * sizeof *ids) == 0;
    vllm_tokens_free(out);
    return same;
}

/* The model at `path` with max_model_len 256; NULL (a failed check) when it
   does not load. */
static vllm_engine* load_test_engine(const char* path) {
    vllm_model_params mp = vllm_model_params_default();
    mp.model_path = path;
    mp.max_model_len = 256;
    vllm_engine* engine = NULL;
    CHECK_STATUS(vllm_engine_load(&mp, &engine), VLLM_OK, "load model");
    return engine;
}

static vllm_sampling_params greedy_params(int32_t max_tokens) {
    vllm_sampling_params sp = vllm_sampling_params_default();
    sp.temperature = 0.0f;
    sp.max_tokens = max_tokens;
    return sp;
}

/* ---- The additive request lifecycle ---- */

static bool stop_at_terminal_cb(const char* delta, bool finished, void* user_data) {
    (void)delta;
    ++*(int*)user_data;
    return !finished;
}

/* Lets through only token 0, which the choice constraint masks: the engine
   fails the request at its first token. */
static void defeat_mask_processor(const int32_t* ids, int32_t n_ids, float* logits, int32_t vocab, void* user_data) {
    (void)ids;
    (void)n_ids;
    (void)user_data;
    for (int32_t i = 0; i < vocab; ++i) logits[i] = i == 0 ? 0.0f : -1e30f;
}

static int thread_count(void) {
#ifdef __linux__
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    if (f != NULL) fclose(f);
    return n;
#else
    return -1;
#endif
}

static bool outcome_is(const vllm_request_outcome* o, int32_t state, const char* finish_reason) {
    if (o->state != state || o->error == NULL) return false;
    if (finish_reason == NULL) return o->finish_reason == NULL;
    return o->finish_reason != NULL && strcmp(o->finish_reason, finish_reason) == 0;
}

static void test_lifecycle(const char* path) {
    const int threads_before = thread_count();
    vllm_engine* engine = load_test_engine(path);
    if (engine == NULL) return;
    const vllm_sampling_params sp = greedy_params(4);
    vllm_sampling_params long_sp = sp;
    long_sp.max_tokens = 200;
    long_sp.ignore_eos = 1;
    vllm_request_outcome o;
    vllm_request* req = NULL;
    int calls = 0;

    /* Refusals. */
    memset(&o, 0x5a, sizeof o);
    CHECK_STATUS(vllm_request_wait_for(NULL, 0, &o), VLLM_ERR_INVALID_ARGUMENT, "wait_for(NULL request)");
    CHECK(outcome_is(&o, VLLM_REQUEST_RUNNING, NULL) && o.error[0] == '\0', "a refused wait_for reads as running");
    CHECK_STATUS(vllm_request_submit(engine, "Count to a thousand:", &long_sp, count_cb, &calls, &req), VLLM_OK,
                 "submit long");
    CHECK_STATUS(vllm_request_wait_for(req, 0, NULL), VLLM_ERR_INVALID_ARGUMENT, "wait_for(NULL out)");

    /* A timeout leaves the request as it is; the cancel is then reported. */
    CHECK_STATUS(vllm_request_wait_for(req, 0, &o), VLLM_OK, "wait_for 0 ms");
    CHECK(outcome_is(&o, VLLM_REQUEST_RUNNING, NULL) && o.status == VLLM_OK && o.error[0] == '\0',
          "a running request times out");
    CHECK_STATUS(vllm_request_wait_for(req, 20, &o), VLLM_OK, "wait_for 20 ms");
    CHECK(o.state == VLLM_REQUEST_RUNNING, "still running after 20 ms");
    CHECK(!vllm_request_done(req), "not done after timeouts");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for without limit");
    CHECK(outcome_is(&o, VLLM_REQUEST_CANCELLED, "abort") && o.status == VLLM_OK, "cancelled, finish reason abort");
    CHECK_STATUS(vllm_request_wait_for(req, 0, &o), VLLM_OK, "wait_for again");
    CHECK(o.state == VLLM_REQUEST_CANCELLED, "the outcome is stable");
    vllm_request_free(req);

    /* Finished by itself; stopped before and at the terminal call. */
    CHECK_STATUS(vllm_request_submit(engine, "Hello", &sp, count_cb, &calls, &req), VLLM_OK, "submit short");
    CHECK_STATUS(vllm_request_wait_for(req, 60000, &o), VLLM_OK, "wait_for a finishing request");
    CHECK(outcome_is(&o, VLLM_REQUEST_FINISHED, "length") && o.status == VLLM_OK, "finished, length");
    vllm_request_free(req);
    struct collect col;
    memset(&col, 0, sizeof col);
    col.stop_after = 2;
    CHECK_STATUS(vllm_request_submit(engine, "Once upon a time", &long_sp, collect_cb, &col, &req), VLLM_OK,
                 "submit to stop");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for a stopped request");
    CHECK(outcome_is(&o, VLLM_REQUEST_STOPPED, "abort"), "stopped by its callback");
    vllm_request_free(req);
    calls = 0;
    CHECK_STATUS(vllm_request_submit(engine, "Hello", &sp, stop_at_terminal_cb, &calls, &req), VLLM_OK,
                 "submit to stop at the end");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for");
    CHECK(outcome_is(&o, VLLM_REQUEST_STOPPED, "length") && o.status == VLLM_OK,
          "false on the terminal call: stopped, with the request's own finish reason");
    vllm_request_free(req);

    /* Failed by the engine: status and error, as vllm_request_wait says. */
    vllm_sampling_params failing = sp;
    const char* choices[] = {"yes", "no"};
    failing.structured_choice = choices;
    failing.n_structured_choice = 2;
    failing.logits_processor = defeat_mask_processor;
    CHECK_STATUS(vllm_request_submit(engine, "Answer:", &failing, count_cb, &calls, &req), VLLM_OK, "submit to fail");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for a failed request is OK");
    CHECK(o.state == VLLM_REQUEST_FAILED && o.status == VLLM_ERR_RUNTIME && o.error != NULL &&
              strstr(o.error, "structured-output") != NULL,
          "failed: its status and error");
    CHECK(vllm_request_wait(req) == VLLM_ERR_RUNTIME && strcmp(vllm_request_error(req), o.error) == 0,
          "the same status and error as vllm_request_wait");
    vllm_request_free(req);

    /* A chat call: no finish reason of its own. */
    CHECK_STATUS(vllm_chat_submit(engine,
                                  "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 4}",
                                  count_cb, &calls, &req), VLLM_OK, "chat_submit");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for a chat call");
    CHECK(outcome_is(&o, VLLM_REQUEST_FINISHED, NULL), "a chat call finished, no finish reason");
    vllm_request_free(req);

    /* Pull requests: timeout, cancel, finish. */
    vllm_poller* poller = NULL;
    CHECK_STATUS(vllm_poller_create(engine, &poller), VLLM_OK, "poller");
    vllm_request* pulled = NULL;
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, "Count to a thousand:", NULL, 0, &long_sp, 0, -1, &pulled),
                 VLLM_OK, "submit_pull long");
    CHECK_STATUS(vllm_request_wait_for(pulled, 0, &o), VLLM_OK, "wait_for a pull request");
    CHECK(o.state == VLLM_REQUEST_RUNNING, "a running pull request times out");
    CHECK_STATUS(vllm_request_cancel(pulled), VLLM_OK, "cancel the pull request");
    CHECK_STATUS(vllm_request_wait_for(pulled, -1, &o), VLLM_OK, "wait_for the cancelled pull request");
    CHECK(outcome_is(&o, VLLM_REQUEST_CANCELLED, "abort"), "a cancelled pull request");
    vllm_request_free(pulled);
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 2, "Hello", NULL, 0, &sp, 0, -1, &pulled), VLLM_OK,
                 "submit_pull short");
    CHECK_STATUS(vllm_request_wait_for(pulled, 60000, &o), VLLM_OK, "wait_for the pull request");
    CHECK(outcome_is(&o, VLLM_REQUEST_FINISHED, "length"), "a finished pull request");
    vllm_request_free(pulled);

    /* The engine handle freed while requests and a poller live: they go on;
       the last of them tears the engine down. */
    CHECK_STATUS(vllm_request_submit(engine, "Count to a thousand:", &long_sp, count_cb, &calls, &req), VLLM_OK,
                 "submit, then free the engine");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 3, "Hello", NULL, 0, &sp, 0, -1, &pulled), VLLM_OK,
                 "submit_pull, then free the engine");
    vllm_engine_free(engine);
    engine = NULL;
    CHECK_STATUS(vllm_request_wait_for(pulled, -1, &o), VLLM_OK, "wait_for after the engine's free");
    CHECK(outcome_is(&o, VLLM_REQUEST_FINISHED, "length"), "a request outlives its engine handle");
    vllm_completion c;
    CHECK_STATUS(vllm_request_completion(pulled, &c), VLLM_OK, "its completion");
    CHECK(c.completion_tokens == 4, "its whole completion");
    vllm_completion_free(&c);
    vllm_event events[4];
    int32_t n = 0, finished_events = 0;
    for (int i = 0; i < 100 && finished_events == 0; ++i) {
        CHECK_STATUS(vllm_poller_poll(poller, 1000, events, 4, &n), VLLM_OK, "poll after the engine's free");
        for (int32_t j = 0; j < n; ++j) finished_events += events[j].finished;
    }
    CHECK(finished_events == 1, "the poller reports after the engine's free");
    vllm_request_free(pulled);
    vllm_poller_free(poller);
    CHECK_STATUS(vllm_request_wait_for(req, 0, &o), VLLM_OK, "wait_for the running one");
    CHECK(o.state == VLLM_REQUEST_RUNNING, "still running without the engine handle");
    CHECK_STATUS(vllm_request_cancel(req), VLLM_OK, "cancel without the engine handle");
    CHECK_STATUS(vllm_request_wait_for(req, -1, &o), VLLM_OK, "wait_for it");
    CHECK(o.state == VLLM_REQUEST_CANCELLED, "cancelled without the engine handle");
    vllm_request_free(req);  /* the last reference: the engine is torn down here */
    if (threads_before >= 0)
        CHECK(thread_count() == threads_before, "the last request's free joined the engine's threads");
}

static void test_load_options_with_model(const char* path) {
    vllm_model_params mp = vllm_model_params_default();
    mp.model_path = path;
    mp.max_model_len = 128;
    vllm_engine* engine = NULL;
    const char* options =
        "{\"chat_template\": \"{% for m in messages %}<<{{ m.content }}>>{% endfor %}\", \"kv_cache_dtype\": \"float32\", "
        "\"kv_cache_memory_bytes\": 16777216, \"num_threads\": 1}";
    CHECK_STATUS(vllm_engine_load_with_options(&mp, options, &engine), VLLM_OK, "load with options");
    if (engine == NULL) return;
    const char* hi = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}";
    int32_t ids[64];
    int n = chat_ids(engine, hi, ids, 64);
    CHECK(n > 0 && ids_of_text(engine, "<<Hi>>", ids, n), "the loaded template renders the prompt");
    n = chat_ids(engine,
                 "{\"chat_template\": \"[{{ messages[0].content }}]\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}",
                 ids, 64);
    CHECK(n > 0 && ids_of_text(engine, "[Hi]", ids, n), "a request's template renders its prompt");
    CHECK(chat_ids(engine, "{\"chat_template\": \"{% if %}\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}",
                   ids, 64) < 0 && strstr(vllm_last_error(), "chat_template") != NULL,
          "a request template that does not parse is refused by name");
    CHECK(chat_ids(engine, "{\"chat_template_kwargs\": {\"chat_template\": \"x\"}, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}", ids, 64) < 0 &&
              strstr(vllm_last_error(), "chat_template_kwargs.chat_template") != NULL,
          "chat_template_kwargs.chat_template is refused by name");
    char* stats = NULL;
    CHECK_STATUS(vllm_engine_stats(engine, &stats), VLLM_OK, "stats");
    /* float32 K/V within a 16 MiB budget (when no environment override is set). */
    if (stats != NULL && getenv("VLLM_CPP_KV_CACHE_MB") == NULL) {
        const char* at = strstr(stats, "\"kv_cache_bytes\":");
        CHECK(at != NULL && atoll(at + strlen("\"kv_cache_bytes\":")) <= 16777216, "kv_cache_bytes within the budget");
    }
    vllm_string_free(stats);
    vllm_sampling_params sp = vllm_sampling_params_default();
    sp.temperature = 0.0f;
    sp.max_tokens = 4;
    vllm_completion c;
    CHECK_STATUS(vllm_complete(engine, "The capital of France is", &sp, &c), VLLM_OK, "complete with options");
    vllm_completion_free(&c);
    vllm_engine_free(engine);

    engine = NULL;
    CHECK_STATUS(vllm_engine_load_with_options(&mp, "{\"chat_template\": \"{% for %}\"}", &engine),
                 VLLM_ERR_INVALID_ARGUMENT, "a template that does not parse is refused at load");
    CHECK(strstr(vllm_last_error(), "chat template") != NULL && engine == NULL, "the refusal names the template");
    CHECK_STATUS(vllm_engine_load_with_options(&mp, "{\"kv_cache_memory_bytes\": 4096}", &engine),
                 getenv("VLLM_CPP_KV_CACHE_MB") == NULL ? VLLM_ERR_INVALID_ARGUMENT : VLLM_OK,
                 "a budget below one sequence is refused");
    vllm_engine_free(engine);
    engine = NULL;
    /* The kernels are process-wide: scalar is the process's own only where nothing better runs. */
    vllm_status st = vllm_engine_load_with_options(&mp, "{\"isa\": \"scalar\"}", &engine);
    CHECK(st == VLLM_OK || (st == VLLM_ERR_INVALID_ARGUMENT && strstr(vllm_last_error(), "process-wide") != NULL),
          "a second engine's conflicting isa is refused by name");
    vllm_engine_free(engine);
}

/* Pull-style delivery: requests without callbacks, one thread polling. */
#define PULL_REQUESTS 7
static void test_pull(vllm_engine* engine, const vllm_sampling_params* sp) {
    vllm_poller* poller = (vllm_poller*)0x1;
    CHECK_STATUS(vllm_poller_create(NULL, &poller), VLLM_ERR_INVALID_ARGUMENT, "poller_create(NULL engine)");
    CHECK(poller == NULL, "a failed poller_create leaves *out NULL");
    CHECK_STATUS(vllm_poller_create(engine, NULL), VLLM_ERR_INVALID_ARGUMENT, "poller_create(NULL out)");
    CHECK_STATUS(vllm_poller_create(engine, &poller), VLLM_OK, "poller_create");
    vllm_event events[4];
    int32_t n = -1;
    CHECK_STATUS(vllm_poller_poll(NULL, 0, events, 4, &n), VLLM_ERR_INVALID_ARGUMENT, "poll(NULL poller)");
    CHECK_STATUS(vllm_poller_poll(poller, 0, NULL, 4, &n), VLLM_ERR_INVALID_ARGUMENT, "poll(NULL events)");
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 0, &n), VLLM_ERR_INVALID_ARGUMENT, "poll(max_events 0)");
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 4, &n), VLLM_OK, "poll with nothing submitted");
    CHECK(n == 0, "nothing to report");
    CHECK_STATUS(vllm_poller_wake(poller), VLLM_OK, "wake");
    CHECK_STATUS(vllm_poller_poll(poller, -1, events, 4, &n), VLLM_OK, "a woken poll returns");
    CHECK(n == 0, "a woken poll reports nothing");
    CHECK_STATUS(vllm_poller_wake(NULL), VLLM_ERR_INVALID_ARGUMENT, "wake(NULL)");

    vllm_request* request = (vllm_request*)0x1;
    const int32_t ids[] = {504, 3458, 282};
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, NULL, NULL, 0, sp, 0, -1, &request),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_pull without a prompt");
    CHECK(request == NULL, "a refused submit_pull leaves *out NULL");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, "hi", ids, 3, sp, 0, -1, &request),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_pull with both prompts");
    CHECK_STATUS(vllm_request_submit_pull(engine, NULL, 1, "hi", NULL, 0, sp, 0, -1, &request),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_pull without a poller");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, "hi", NULL, 0, sp, 0, 21, &request),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_pull logprobs 21");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, "", NULL, 0, sp, 0, -1, &request),
                 VLLM_ERR_INVALID_ARGUMENT, "submit_pull empty prompt");
    CHECK_STATUS(vllm_chat_submit_pull(engine, poller, 1, "{\"messages\": 3}", &request), VLLM_ERR_INVALID_ARGUMENT,
                 "chat_submit_pull bad body");
    CHECK_STATUS(vllm_completion_submit_pull(engine, poller, 1, "{\"prompt\": \"Hi\", \"n\": 0}", &request),
                 VLLM_ERR_INVALID_ARGUMENT, "completion_submit_pull bad body");
    CHECK(strstr(vllm_last_error(), "'n'") != NULL, "the refusal names the field");

    /* Greedy requests, one with logprobs, one cancelled at once, one chat
       call; everything polled by this thread. */
    vllm_request* requests[PULL_REQUESTS];
    char texts[PULL_REQUESTS][4096];
    int finished[PULL_REQUESTS], logprob_events[PULL_REQUESTS], tokens[PULL_REQUESTS];
    memset(texts, 0, sizeof texts);
    memset(finished, 0, sizeof finished);
    memset(logprob_events, 0, sizeof logprob_events);
    memset(tokens, 0, sizeof tokens);
    vllm_sampling_params greedy = *sp;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 12;
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 0, "The capital of France is", NULL, 0, &greedy, 0, -1,
                                          &requests[0]), VLLM_OK, "submit_pull text");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, NULL, ids, 3, &greedy, 0, 2, &requests[1]), VLLM_OK,
                 "submit_pull ids with logprobs");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 2, "Once upon a time", NULL, 0, &greedy, 0, -1,
                                          &requests[2]), VLLM_OK, "submit_pull to cancel");
    CHECK_STATUS(vllm_request_cancel(requests[2]), VLLM_OK, "cancel a pull request");
    CHECK_STATUS(vllm_chat_submit_pull(engine, poller, 3,
                                       "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                                       "\"max_tokens\": 8, \"temperature\": 0, \"stream\": true}",
                                       &requests[3]), VLLM_OK, "chat_submit_pull streaming");
    CHECK_STATUS(vllm_chat_submit_pull(engine, poller, 4,
                                       "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                                       "\"max_tokens\": 8, \"temperature\": 0}",
                                       &requests[4]), VLLM_OK, "chat_submit_pull blocking");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 5, "The capital of France is", NULL, 0, &greedy, 0, -1,
                                          &requests[5]), VLLM_OK, "submit_pull to cancel later");
    CHECK_STATUS(vllm_completion_submit_pull(engine, poller, 6,
                                             "{\"prompt\": \"The capital of France is\", \"max_tokens\": 12, "
                                             "\"temperature\": 0}",
                                             &requests[6]), VLLM_OK, "completion_submit_pull (additive)");
    int left = PULL_REQUESTS, chat_chunks = 0, polls = 0, out_of_order = 0;
    int32_t streamed_ids[16];
    int streamed_n = 0;
    while (left > 0 && polls < 100000) {
        ++polls;
        CHECK_STATUS(vllm_poller_poll(poller, 1000, events, 4, &n), VLLM_OK, "poll");
        for (int32_t i = 0; i < n; ++i) {
            const int tag = (int)events[i].tag;
            if (tag < 0 || tag >= PULL_REQUESTS || finished[tag]) {
                ++out_of_order;
                continue;
            }
            if (tag == 3 && events[i].text[0] != '\0') {
                ++chat_chunks;
                CHECK(events[i].text[0] == '{', "a chat event is one JSON chunk");
            }
            if (tag == 5 && events[i].text[0] != '\0') vllm_request_cancel(requests[5]);
            strncat(texts[tag], events[i].text, sizeof texts[tag] - strlen(texts[tag]) - 1);
            if (tag == 0 && events[i].n_tokens > 0 && streamed_n + events[i].n_tokens <= 16) {
                /* The ids behind the event's n_tokens, read while the request runs. */
                int32_t got = -1;
                CHECK_STATUS(vllm_request_token_ids(requests[0], tokens[0], events[i].n_tokens,
                                                    streamed_ids + streamed_n, &got),
                             VLLM_OK, "token ids of an event");
                CHECK(got == events[i].n_tokens, "every announced token's id is there");
                streamed_n += got > 0 ? got : 0;
            }
            tokens[tag] += events[i].n_tokens;
            if (events[i].logprobs_json != NULL) {
                ++logprob_events[tag];
                CHECK(strstr(events[i].logprobs_json, "\"top_logprobs\"") != NULL, "logprobs JSON has alternatives");
            }
            if (events[i].finished) {
                finished[tag] = 1;
                --left;
                CHECK(vllm_request_done(requests[tag]), "done once the last event is out");
                CHECK_STATUS(vllm_request_wait(requests[tag]), VLLM_OK, "wait after the last event");
            }
        }
    }
    CHECK(left == 0, "every pull request ends with one finished event");
    CHECK(out_of_order == 0, "no event after a request's finished one");
    for (int i = 0; i < PULL_REQUESTS; ++i) CHECK(finished[i] == 1, "one finished event each");
    vllm_completion c;
    CHECK_STATUS(vllm_request_completion(requests[0], &c), VLLM_OK, "completion of a pull request");
    CHECK(c.text != NULL && strcmp(c.text, texts[0]) == 0, "polled text equals the completion");
    CHECK(c.completion_tokens == 12 && strcmp(c.finish_reason, "length") == 0, "pull request ran to max_tokens");
    CHECK(tokens[0] == 12 && tokens[1] == 12, "the events count every generated token");
    CHECK(tokens[3] == 0, "chat events count no tokens");
    {
        int32_t all[16], got = -1;
        CHECK(generated_ids(engine, requests[0], all, 16) == 12 && streamed_n == 12 &&
                  memcmp(all, streamed_ids, sizeof(int32_t) * 12) == 0,
              "the events' ids are the completion's");
        CHECK_STATUS(vllm_request_token_ids(requests[0], 10, 5, all, &got), VLLM_OK, "token ids past the end");
        CHECK(got == 2 && all[0] == streamed_ids[10], "fewer where fewer were generated");
        CHECK_STATUS(vllm_request_token_ids(requests[0], 0, 0, NULL, &got), VLLM_OK, "no ids asked for");
        CHECK(got == 0, "none given");
        CHECK_STATUS(vllm_request_token_ids(requests[0], -1, 2, all, &got), VLLM_ERR_INVALID_ARGUMENT, "from < 0");
        CHECK(got == 0, "a refusal gives no ids");
        CHECK_STATUS(vllm_request_token_ids(requests[0], 0, 2, NULL, &got), VLLM_ERR_INVALID_ARGUMENT, "NULL out_ids");
        CHECK_STATUS(vllm_request_token_ids(requests[0], 0, 2, all, NULL), VLLM_ERR_INVALID_ARGUMENT, "NULL out_n");
        CHECK_STATUS(vllm_request_token_ids(NULL, 0, 2, all, &got), VLLM_ERR_INVALID_ARGUMENT, "NULL request");
        CHECK_STATUS(vllm_request_token_ids(requests[3], 0, 2, all, &got), VLLM_ERR_INVALID_ARGUMENT, "a chat request");
        CHECK(strstr(vllm_last_error(), "chat") != NULL, "the refusal says it is a chat request");
    }
    vllm_completion_free(&c);
    {
        vllm_completion blocking;
        CHECK_STATUS(vllm_complete(engine, "The capital of France is", &greedy, &blocking), VLLM_OK, "blocking");
        CHECK(strcmp(blocking.text, texts[0]) == 0, "pull text equals the blocking text (greedy)");
        vllm_completion_free(&blocking);
    }
    char* output = NULL;
    CHECK_STATUS(vllm_request_output(engine, requests[1], &output), VLLM_OK, "output of a pull request");
    CHECK(output != NULL && strstr(output, "\"top_logprobs\"") != NULL, "its logprobs");
    vllm_string_free(output);
    CHECK(logprob_events[1] > 0 && logprob_events[0] == 0, "logprobs only where requested");
    CHECK_STATUS(vllm_request_completion(requests[2], &c), VLLM_OK, "completion of a cancelled pull request");
    CHECK(strcmp(c.finish_reason, "abort") == 0 && texts[2][0] == '\0', "cancelled at once: abort, no text");
    vllm_completion_free(&c);
    CHECK_STATUS(vllm_request_completion(requests[5], &c), VLLM_OK, "completion of a pull request cancelled later");
    CHECK(strcmp(c.finish_reason, "abort") == 0 && c.completion_tokens < 12, "cancelled mid-way: abort");
    vllm_completion_free(&c);
    CHECK(chat_chunks >= 2 && strstr(texts[3], "chat.completion.chunk") != NULL, "chat chunks pulled");
    CHECK(strstr(texts[4], "\"chat.completion\"") != NULL, "chat response pulled");
    CHECK(strstr(texts[6], "\"text_completion\"") != NULL &&
              strstr(texts[6], "\"finish_reason\":\"length\"") != NULL,
          "completions response pulled (12 greedy tokens)");
    CHECK_STATUS(vllm_request_completion(requests[3], &c), VLLM_ERR_INVALID_ARGUMENT, "no completion of a chat call");
    for (int i = 0; i < PULL_REQUESTS; ++i) vllm_request_free(requests[i]);

    /* Freed while running: nothing more is reported, the engine goes on. */
    vllm_sampling_params longer = greedy;
    longer.max_tokens = 64;
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 7, "Once upon a time", NULL, 0, &longer, 0, -1, &request),
                 VLLM_OK, "submit_pull to free while running");
    vllm_request_free(request);
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 4, &n), VLLM_OK, "poll after free");
    CHECK(n == 0, "a freed request is not reported");

    vllm_poller_free(poller);
    vllm_poller_free(NULL);
}

/* Whether fd becomes readable within timeout_ms (0: is readable now). */
static int fd_readable(int fd, int timeout_ms) {
    struct pollfd p;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

/* A poller's descriptor: what an event loop waits on instead of a thread
   blocked in vllm_poller_poll. Readable exactly while a poll would return
   at once; the poller's free closes it. */
static void test_poller_fd(vllm_engine* engine, const vllm_sampling_params* sp) {
    int fd = 7;
    CHECK_STATUS(vllm_poller_fd(NULL, &fd), VLLM_ERR_INVALID_ARGUMENT, "poller_fd(NULL poller)");
    CHECK(fd == -1, "a failed poller_fd writes -1");
    vllm_poller* poller = NULL;
    CHECK_STATUS(vllm_poller_create(engine, &poller), VLLM_OK, "a poller for its descriptor");
    CHECK_STATUS(vllm_poller_fd(poller, NULL), VLLM_ERR_INVALID_ARGUMENT, "poller_fd(NULL out_fd)");

    /* The system refuses a descriptor (the open-file limit set to the lowest
       free one): RUNTIME with the reason; a later call, allowed, works. */
    struct rlimit saved;
    const int lowest = open("/dev/null", O_RDONLY);
    if (lowest >= 0 && getrlimit(RLIMIT_NOFILE, &saved) == 0) {
        close(lowest);
        struct rlimit tight = saved;
        tight.rlim_cur = (rlim_t)lowest;
        if (setrlimit(RLIMIT_NOFILE, &tight) == 0) {
            fd = 7;
            const vllm_status refused = vllm_poller_fd(poller, &fd);
            setrlimit(RLIMIT_NOFILE, &saved);
            CHECK(refused == VLLM_ERR_RUNTIME && fd == -1, "no descriptor to be had: RUNTIME, -1");
            CHECK(strstr(vllm_last_error(), "descriptor") != NULL, "the refusal says what it could not make");
        }
    }

    CHECK_STATUS(vllm_poller_fd(poller, &fd), VLLM_OK, "poller_fd");
    int again = -1;
    CHECK_STATUS(vllm_poller_fd(poller, &again), VLLM_OK, "poller_fd again");
    CHECK(fd >= 0 && again == fd, "one descriptor per poller");
    CHECK(!fd_readable(fd, 0), "nothing pending: not readable");
    CHECK_STATUS(vllm_poller_wake(poller), VLLM_OK, "wake");
    CHECK(fd_readable(fd, 0), "woken: readable");
    vllm_event events[4];
    int32_t n = -1;
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 4, &n), VLLM_OK, "poll the wake-up");
    CHECK(n == 0 && !fd_readable(fd, 0), "the poll took the wake-up: not readable");

    /* Driven as an event loop drives it: wait for the descriptor, poll with
       timeout 0, until the last event. The text is the blocking one. */
    vllm_sampling_params greedy = *sp;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 12;
    vllm_request* request = NULL;
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 9, "The capital of France is", NULL, 0, &greedy, 0, -1,
                                          &request), VLLM_OK, "submit_pull for the descriptor");
    char text[4096] = "";
    int finished = 0, wakeups = 0;
    while (!finished && wakeups < 10000) {
        if (!fd_readable(fd, 30000)) break;
        ++wakeups;
        CHECK_STATUS(vllm_poller_poll(poller, 0, events, 4, &n), VLLM_OK, "poll when readable");
        for (int32_t i = 0; i < n; ++i) {
            CHECK(events[i].tag == 9, "the request's tag");
            strncat(text, events[i].text, sizeof text - strlen(text) - 1);
            finished |= events[i].finished;
        }
    }
    CHECK(finished, "the descriptor announced every event up to the last");
    /* Once the engine is done (its last announcement has landed), a poll
       that finds nothing leaves the descriptor unreadable. */
    CHECK_STATUS(vllm_request_wait(request), VLLM_OK, "wait for the engine to finish it");
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 4, &n), VLLM_OK, "poll after the last event");
    CHECK(n == 0 && !fd_readable(fd, 0), "all taken: not readable");
    vllm_completion blocking;
    CHECK_STATUS(vllm_complete(engine, "The capital of France is", &greedy, &blocking), VLLM_OK, "blocking");
    CHECK(strcmp(blocking.text, text) == 0, "the text equals the blocking text (greedy)");
    vllm_completion_free(&blocking);
    vllm_request_free(request);

    /* A poll that leaves events behind leaves the descriptor readable. */
    vllm_request* two[2];
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 1, "Hello", NULL, 0, &greedy, 0, -1, &two[0]), VLLM_OK,
                 "submit_pull one of two");
    CHECK_STATUS(vllm_request_submit_pull(engine, poller, 2, "Once upon a time", NULL, 0, &greedy, 0, -1, &two[1]),
                 VLLM_OK, "submit_pull two of two");
    for (int i = 0; i < 2; ++i) CHECK_STATUS(vllm_request_wait(two[i]), VLLM_OK, "wait for the engine to finish it");
    CHECK(fd_readable(fd, 0), "two finished requests: readable");
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 1, &n), VLLM_OK, "poll one event of two");
    CHECK(n == 1 && events[0].finished && fd_readable(fd, 0), "one left behind: still readable");
    CHECK_STATUS(vllm_poller_poll(poller, 0, events, 1, &n), VLLM_OK, "poll the other");
    CHECK(n == 1 && events[0].finished && !fd_readable(fd, 0), "none left: not readable");
    for (int i = 0; i < 2; ++i) vllm_request_free(two[i]);

    /* The free closes the descriptor; a watcher's dup of it outlives the
       poller and never becomes readable. */
    const int watched = dup(fd);
    CHECK(watched >= 0, "dup the descriptor");
    vllm_poller_free(poller);
    errno = 0;
    CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "the poller's free closed its descriptor");
    CHECK(!fd_readable(watched, 0), "a dup outlives the poller, not readable");
    close(watched);
}

static void test_with_model(const char* path) {
    vllm_engine* engine = load_test_engine(path);
    if (engine == NULL) return;

    const vllm_sampling_params sp = greedy_params(12);
    vllm_completion c;
    CHECK_STATUS(vllm_complete(engine, "The capital of France is", &sp, &c), VLLM_OK, "complete");
    CHECK(vllm_last_error()[0] == '\0', "last error empty after success");
    CHECK(c.text != NULL && c.text[0] != '\0', "complete produced text");
    CHECK(c.finish_reason != NULL, "finish reason set");
    CHECK(c.prompt_tokens > 0 && c.completion_tokens > 0 && c.completion_tokens <= 12, "token counts");

    struct collect col;
    memset(&col, 0, sizeof col);
    CHECK_STATUS(vllm_complete_stream(engine, "The capital of France is", &sp, collect_cb, &col), VLLM_OK,
                 "complete_stream");
    CHECK(c.text != NULL && strcmp(col.text, c.text) == 0, "stream deltas concatenate to the completion");
    CHECK(col.finished_calls == 1, "exactly one terminal call");
    vllm_completion_free(&c);
    CHECK(c.text == NULL, "completion_free zeroes");

    memset(&col, 0, sizeof col);
    col.stop_after = 2;
    CHECK_STATUS(vllm_complete_stream(engine, "Once upon a time", &sp, collect_cb, &col), VLLM_OK,
                 "stream stopped by callback returns OK");
    CHECK(col.calls == 2 && col.finished_calls == 0, "no call after the callback returned false");

    /* Bad input: each refused with INVALID_ARGUMENT, engine still usable. */
    CHECK_STATUS(vllm_complete(engine, NULL, &sp, &c), VLLM_ERR_INVALID_ARGUMENT, "NULL prompt");
    CHECK_STATUS(vllm_complete(engine, "hi", NULL, &c), VLLM_ERR_INVALID_ARGUMENT, "NULL params");
    CHECK_STATUS(vllm_complete_stream(engine, "hi", &sp, NULL, NULL), VLLM_ERR_INVALID_ARGUMENT, "NULL callback");
    CHECK_STATUS(vllm_complete(engine, "", &sp, &c), VLLM_ERR_INVALID_ARGUMENT, "empty prompt");
    CHECK_STATUS(vllm_complete(engine, "\xff\xfe bad utf-8", &sp, &c), VLLM_ERR_INVALID_ARGUMENT, "invalid UTF-8 prompt");
    vllm_sampling_params bad = sp;
    bad.repetition_penalty = 0.0f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "repetition_penalty 0");
    bad = sp;
    bad.repetition_penalty = -1.0f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "repetition_penalty < 0");
    bad = sp;
    bad.top_p = 0.0f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "top_p 0");
    bad.top_p = 1.5f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "top_p > 1");
    bad = sp;
    bad.min_p = -0.1f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "min_p < 0");
    bad.min_p = 1.1f;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "min_p > 1");
    bad = sp;
    bad.top_k = -2;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "top_k < -1");
    bad = sp;
    bad.n_stop = 2;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "n_stop without stop");
    bad = sp;
    bad.structured_regex = "[a-z]+(";
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "malformed regex refused");
    CHECK(strstr(vllm_last_error(), "regex") != NULL, "refusal names the regex");
    bad.structured_json_object = 1;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "two constraints refused");
    bad = sp;
    bad.n_structured_choice = 2;
    CHECK_STATUS(vllm_complete(engine, "hi", &bad, &c), VLLM_ERR_INVALID_ARGUMENT, "choice count without choices");
    {
        vllm_sampling_params re = sp;
        re.structured_regex = "(yes|no), [0-9]{3}";
        CHECK_STATUS(vllm_complete(engine, "Answer:", &re, &c), VLLM_OK, "regex-constrained completion");
        CHECK(c.text != NULL && (strncmp(c.text, "yes, ", 5) == 0 || strncmp(c.text, "no, ", 4) == 0) &&
                  strlen(c.text) == (c.text[0] == 'y' ? 8u : 7u) && strcmp(c.finish_reason, "stop") == 0,
              "output matches the regex");
        vllm_completion_free(&c);
    }

    /* A prompt longer than max_model_len (256 tokens). */
    char long_prompt[4096];
    long_prompt[0] = '\0';
    for (int i = 0; i < 300; ++i) strcat(long_prompt, " cat");
    CHECK_STATUS(vllm_complete(engine, long_prompt, &sp, &c), VLLM_ERR_INVALID_ARGUMENT, "prompt over max_model_len");
    /* vLLM's words, which OpenAI clients recognise as a context overflow. */
    CHECK(strstr(vllm_last_error(), "This model's maximum context length is 256 tokens. However, your request has ") ==
              vllm_last_error(),
          "error says the context length, as vLLM does");

    test_requests(engine, &sp);
    test_chat(engine);
    test_server_entry_points(engine, &sp);
    test_pull(engine, &sp);
    test_poller_fd(engine, &sp);
    test_sampling_options(engine, &sp);

    CHECK_STATUS(vllm_complete(engine, "The capital of France is", &sp, &c), VLLM_OK, "engine usable after errors");
    vllm_completion_free(&c);
    vllm_engine_free(engine);
}

/* The Responses API's translator (no engine): NULLs and a bad request
   refused, a request's chat form, a chunk's events, the closing. */
static void test_responses_translation(void) {
    vllm_responses_call* call = NULL;
    char* chat = NULL;
    char* out = NULL;
    CHECK_STATUS(vllm_responses_begin(NULL, NULL, "resp_1", 0, &call, &chat), VLLM_ERR_INVALID_ARGUMENT,
                 "responses_begin NULL request");
    CHECK_STATUS(vllm_responses_begin("{\"input\": \"hi\"}", NULL, NULL, 0, &call, &chat), VLLM_ERR_INVALID_ARGUMENT,
                 "responses_begin NULL id");
    CHECK_STATUS(vllm_responses_begin("{\"input\": \"hi\"}", NULL, "resp_1", 0, NULL, &chat),
                 VLLM_ERR_INVALID_ARGUMENT, "responses_begin NULL out_call");
    CHECK_STATUS(vllm_responses_begin("{\"input\": 1}", NULL, "resp_1", 0, &call, &chat), VLLM_ERR_INVALID_ARGUMENT,
                 "responses_begin bad input");
    CHECK(call == NULL && chat == NULL, "a refused begin leaves its outputs NULL");
    CHECK(strstr(vllm_last_error(), "'input'") != NULL, "the refusal names the field");
    CHECK_STATUS(vllm_responses_feed(NULL, "{}", &out), VLLM_ERR_INVALID_ARGUMENT, "responses_feed NULL call");
    CHECK_STATUS(vllm_responses_finish(NULL, &out), VLLM_ERR_INVALID_ARGUMENT, "responses_finish NULL call");
    vllm_responses_free(NULL);

    CHECK_STATUS(vllm_responses_begin("{\"input\": \"hi\", \"stream\": true}", "[]", "resp_1", 5, &call, &chat),
                 VLLM_OK, "responses_begin");
    CHECK(chat != NULL && strstr(chat, "\"messages\"") != NULL, "the chat request");
    vllm_string_free(chat);
    CHECK_STATUS(vllm_responses_feed(call, NULL, &out), VLLM_ERR_INVALID_ARGUMENT, "responses_feed NULL output");
    CHECK_STATUS(vllm_responses_feed(call, "{\"object\": \"chat.completion.chunk\", \"choices\": [{\"index\": 0, "
                                           "\"delta\": {\"content\": \"Hey\"}}]}", &out),
                 VLLM_OK, "responses_feed");
    CHECK(out != NULL && strstr(out, "response.created") != NULL && strstr(out, "response.output_text.delta") != NULL,
          "a chunk's events");
    vllm_string_free(out);
    CHECK_STATUS(vllm_responses_finish(call, &out), VLLM_OK, "responses_finish");
    CHECK(out != NULL && strstr(out, "response.completed") != NULL && strstr(out, "\"conversation\"") != NULL,
          "the closing events, the response and the conversation");
    vllm_string_free(out);
    vllm_responses_free(call);
}

int main(int argc, char** argv) {
    test_without_model();
    test_load_options_refusals();
    test_responses_translation();
    if (argc > 1) {
        test_with_model(argv[1]);
        test_load_options_with_model(argv[1]);
        test_lifecycle(argv[1]);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
