/* A concurrency stress of the C ABI, for ThreadSanitizer (tests/support/sanitize.py
 * tsan) and as a short smoke in the Python suite (tests/unit/test_native.py).
 *
 *   stress_c_abi MODEL.gguf [SECONDS_PER_ROUND] [ROUNDS] [THREADS]
 *
 * Each round loads an engine with a small KV cache (so requests are
 * preempted), starts a poller thread (in odd rounds it waits on the
 * poller's descriptor, as an event loop does, and polls without blocking),
 * and has THREADS threads pick random
 * operations until the time is up: blocking and streamed completions (some
 * stopped by their callback), callback requests that are waited, cancelled
 * at a random moment, freed while running, or freed from their own
 * callback, pull requests (waited or cancelled, their events counted),
 * chats (blocking, and submitted then cancelled), stats, tokenize and
 * detokenize. Then the threads free what they hold and the engine is freed
 * at once, while it may still be dropping their cancelled requests.
 *
 * It checks what a client can: every call returns OK, every pull request
 * gets exactly one finished event, and every request ends (a hang is the
 * caller's timeout). Prints "N operations passed, M failed"; exit status 0
 * when all held.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "vllm.h"

#define MAX_TAGS 1000000
#define MAX_THREADS 32

static const char* PROMPTS[] = {"The capital of France is", "Once upon a time", "def fibonacci(n):",
                                "Tokyo \xe6\x9d\xb1\xe4\xba\xac is", "1, 2, 3,"};
static const char* CHAT = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 6}";

static vllm_engine* g_engine;
static vllm_poller* g_poller;
static atomic_int g_stop;         /* the workers' */
static atomic_int g_stop_polling; /* the poller thread's, once the workers are gone */
static atomic_int g_failures;
static atomic_uint_fast64_t g_next_tag;
static atomic_uchar g_finished[MAX_TAGS];  /* finished events per pull tag */
static atomic_long g_ops;

static void fail(const char* what, vllm_status status) {
    fprintf(stderr, "FAIL: %s: status %d: %s\n", what, (int)status, vllm_last_error());
    atomic_fetch_add(&g_failures, 1);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static vllm_sampling_params params_for(unsigned* seed) {
    vllm_sampling_params p = vllm_sampling_params_default();
    p.max_tokens = 1 + (int32_t)(rand_r(seed) % 16);
    p.temperature = rand_r(seed) % 2 ? 0.0f : 0.8f;
    p.seed = rand_r(seed);
    p.has_seed = 1;
    p.ignore_eos = 1;
    return p;
}

/* -- callbacks ------------------------------------------------------------ */

typedef struct {
    int stop_after;            /* return false after this many events (< 0: never) */
    int events;
} StreamState;

static bool stream_cb(const char* delta, bool finished, void* user_data) {
    StreamState* s = (StreamState*)user_data;
    (void)delta;
    (void)finished;
    return s->stop_after < 0 || ++s->events <= s->stop_after;
}

/* A request that may be freed from its own callback. Whoever takes
 * `owner` first frees the request; only the winner touches it after that.
 * The state is shared by the submitting thread and the callback: each holds
 * a reference, and the side that frees the request from its callback drops
 * its own as its last act (the submitter, when it frees the request, knows
 * the callback is over and drops both). */
typedef struct {
    _Atomic(vllm_request*) self;
    atomic_int owner;          /* 0: nobody has freed the request yet */
    atomic_int refs;
    int free_at_event;
    int events;
} SelfFreeing;

static void self_freeing_release(SelfFreeing* s) {
    if (atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

static bool self_freeing_cb(const char* delta, bool finished, void* user_data) {
    SelfFreeing* s = (SelfFreeing*)user_data;
    vllm_request* self = atomic_load(&s->self);
    (void)delta;
    if (self != NULL && (++s->events >= s->free_at_event || finished) && atomic_exchange(&s->owner, 1) == 0) {
        vllm_request_free(self);  /* deferred until this callback returns */
        self_freeing_release(s);
    }
    return true;
}

/* -- operations ----------------------------------------------------------- */

static void op_complete(unsigned* seed) {
    vllm_sampling_params p = params_for(seed);
    vllm_completion c;
    vllm_status st = vllm_complete(g_engine, PROMPTS[rand_r(seed) % 5], &p, &c);
    if (st != VLLM_OK) fail("vllm_complete", st);
    else vllm_completion_free(&c);
}

static void op_stream(unsigned* seed) {
    vllm_sampling_params p = params_for(seed);
    StreamState s = {(int)(rand_r(seed) % 4) - 1, 0};
    vllm_status st = vllm_complete_stream(g_engine, PROMPTS[rand_r(seed) % 5], &p, stream_cb, &s);
    if (st != VLLM_OK) fail("vllm_complete_stream", st);
}

static void op_submit(unsigned* seed) {
    vllm_sampling_params p = params_for(seed);
    StreamState* s = calloc(1, sizeof *s);
    s->stop_after = (int)(rand_r(seed) % 4) - 1;
    vllm_request* r = NULL;
    vllm_status st = vllm_request_submit(g_engine, PROMPTS[rand_r(seed) % 5], &p, stream_cb, s, &r);
    if (st != VLLM_OK) {
        fail("vllm_request_submit", st);
        free(s);
        return;
    }
    switch (rand_r(seed) % 3) {
        case 0:
            if ((st = vllm_request_wait(r)) != VLLM_OK) fail("vllm_request_wait", st);
            break;
        case 1:
            for (int i = rand_r(seed) % 50; i > 0 && !vllm_request_done(r); --i) sched_yield();
            if ((st = vllm_request_cancel(r)) != VLLM_OK) fail("vllm_request_cancel", st);
            if ((st = vllm_request_wait(r)) != VLLM_OK) fail("vllm_request_wait after cancel", st);
            break;
        default:
            break;  /* freed while it may still run */
    }
    vllm_request_free(r);
    free(s);
}

static void op_submit_self_free(unsigned* seed) {
    vllm_sampling_params p = params_for(seed);
    p.max_tokens = 8;
    SelfFreeing* s = calloc(1, sizeof *s);
    atomic_init(&s->refs, 2);
    s->free_at_event = 1 + (int)(rand_r(seed) % 4);
    vllm_request* r = NULL;
    vllm_status st = vllm_request_submit(g_engine, PROMPTS[rand_r(seed) % 5], &p, self_freeing_cb, s, &r);
    if (st != VLLM_OK) {
        fail("vllm_request_submit (self-freeing)", st);
        free(s);
        return;
    }
    atomic_store(&s->self, r);
    /* Give the callback a chance to free it; then take it over if it has not. */
    for (int i = rand_r(seed) % 2 ? 0 : 20000; i > 0 && !atomic_load(&s->owner); --i) sched_yield();
    if (atomic_exchange(&s->owner, 1) == 0) {
        vllm_request_free(r);  /* joins delivery: the callback will not run again */
        self_freeing_release(s);
    }
    self_freeing_release(s);
}

static void op_pull(unsigned* seed) {
    vllm_sampling_params p = params_for(seed);
    uint64_t tag = atomic_fetch_add(&g_next_tag, 1);
    if (tag >= MAX_TAGS) return;
    vllm_request* r = NULL;
    vllm_status st = vllm_request_submit_pull(g_engine, g_poller, tag, PROMPTS[rand_r(seed) % 5], NULL, 0, &p, 0,
                                              rand_r(seed) % 2 ? -1 : 2, &r);
    if (st != VLLM_OK) {
        fail("vllm_request_submit_pull", st);
        return;
    }
    if (rand_r(seed) % 2) vllm_request_cancel(r);
    if ((st = vllm_request_wait(r)) != VLLM_OK) fail("vllm_request_wait (pull)", st);
    /* Done, so its finished event is reported (freeing it first may drop
     * the event): wait for the poller to see it. */
    const double deadline = now() + 60;
    while (atomic_load(&g_finished[tag]) == 0 && now() < deadline) sched_yield();
    vllm_request_free(r);
}

static void op_chat(unsigned* seed) {
    char* out = NULL;
    vllm_status st;
    if (rand_r(seed) % 2) {
        if ((st = vllm_chat(g_engine, CHAT, &out)) != VLLM_OK) fail("vllm_chat", st);
        vllm_string_free(out);
        return;
    }
    StreamState s = {-1, 0};
    vllm_request* r = NULL;
    if ((st = vllm_chat_submit(g_engine, CHAT, stream_cb, &s, &r)) != VLLM_OK) {
        fail("vllm_chat_submit", st);
        return;
    }
    if (rand_r(seed) % 2) vllm_request_cancel(r);
    vllm_request_free(r);
}

static void op_misc(unsigned* seed) {
    char* json = NULL;
    vllm_status st = vllm_engine_stats(g_engine, &json);
    if (st != VLLM_OK) fail("vllm_engine_stats", st);
    vllm_string_free(json);
    int32_t* ids = NULL;
    int32_t n = 0;
    if ((st = vllm_tokenize(g_engine, PROMPTS[rand_r(seed) % 5], true, &ids, &n)) != VLLM_OK) {
        fail("vllm_tokenize", st);
        return;
    }
    char* text = NULL;
    if ((st = vllm_detokenize(g_engine, ids, n, true, &text)) != VLLM_OK) fail("vllm_detokenize", st);
    vllm_string_free(text);
    vllm_tokens_free(ids);
}

typedef void (*Op)(unsigned*);
static const Op OPS[] = {op_complete, op_stream, op_submit, op_submit, op_submit_self_free, op_pull, op_pull,
                         op_chat, op_misc};

static void* worker(void* arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    while (!atomic_load(&g_stop)) {
        OPS[rand_r(&seed) % (sizeof OPS / sizeof OPS[0])](&seed);
        atomic_fetch_add(&g_ops, 1);
    }
    return NULL;
}

/* arg: non-NULL to wait on the poller's descriptor, then poll with timeout 0. */
static void* poller_main(void* arg) {
    vllm_event events[64];
    int fd = -1;
    if (arg != NULL) {
        vllm_status st = vllm_poller_fd(g_poller, &fd);
        if (st != VLLM_OK) {
            fail("vllm_poller_fd", st);
            return NULL;
        }
    }
    while (!atomic_load(&g_stop_polling)) {
        int32_t n = 0;
        if (fd >= 0) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 50) < 0) {
                fail("poll(2) on the poller's descriptor", VLLM_OK);
                return NULL;
            }
        }
        vllm_status st = vllm_poller_poll(g_poller, fd >= 0 ? 0 : 50, events, 64, &n);
        if (st != VLLM_OK) {
            fail("vllm_poller_poll", st);
            return NULL;
        }
        for (int32_t i = 0; i < n; ++i)
            if (events[i].finished && events[i].tag < MAX_TAGS) atomic_fetch_add(&g_finished[events[i].tag], 1);
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [SECONDS_PER_ROUND] [ROUNDS] [THREADS]\n", argv[0]);
        return 2;
    }
    const double seconds = argc > 2 ? atof(argv[2]) : 5.0;
    const int rounds = argc > 3 ? atoi(argv[3]) : 2;
    int threads = argc > 4 ? atoi(argv[4]) : 6;
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    for (int round = 0; round < rounds; ++round) {
        vllm_model_params mp = vllm_model_params_default();
        mp.model_path = argv[1];
        mp.max_model_len = 128;
        mp.max_num_seqs = 8;
        mp.num_blocks = 24;  /* 3 full-length sequences: preemption under load */
        vllm_status st = vllm_engine_load(&mp, &g_engine);
        if (st != VLLM_OK) {
            fail("vllm_engine_load", st);
            return 1;
        }
        if ((st = vllm_poller_create(g_engine, &g_poller)) != VLLM_OK) {
            fail("vllm_poller_create", st);
            return 1;
        }
        const uint64_t first_tag = atomic_load(&g_next_tag);
        atomic_store(&g_stop, 0);
        atomic_store(&g_stop_polling, 0);
        pthread_t poll_thread, pool[MAX_THREADS];
        pthread_create(&poll_thread, NULL, poller_main, round % 2 ? (void*)1 : NULL);
        for (int i = 0; i < threads; ++i) pthread_create(&pool[i], NULL, worker, (void*)(uintptr_t)(round * 100 + i + 1));
        const double end = now() + seconds;
        while (now() < end) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        atomic_store(&g_stop, 1);
        for (int i = 0; i < threads; ++i) pthread_join(pool[i], NULL);
        /* Every pull request was freed after its finished event arrived. */
        const uint64_t last_tag = atomic_load(&g_next_tag) < MAX_TAGS ? atomic_load(&g_next_tag) : MAX_TAGS;
        atomic_store(&g_stop_polling, 1);
        vllm_poller_wake(g_poller);
        pthread_join(poll_thread, NULL);
        for (uint64_t t = first_tag; t < last_tag; ++t) {
            const int got = atomic_load(&g_finished[t]);
            if (got != 1) {
                fprintf(stderr, "FAIL: pull request %llu got %d finished events\n", (unsigned long long)t, got);
                atomic_fetch_add(&g_failures, 1);
            }
        }
        vllm_poller_free(g_poller);
        vllm_engine_free(g_engine);  /* at once: cancelled requests may still be being dropped */
        printf("round %d: %ld operations, %llu pull requests\n", round, atomic_load(&g_ops),
               (unsigned long long)(last_tag - first_tag));
        fflush(stdout);
    }
    const int failures = atomic_load(&g_failures);
    printf("%ld operations passed, %d failed\n", atomic_load(&g_ops) - failures, failures);
    return failures ? 1 : 0;
}
