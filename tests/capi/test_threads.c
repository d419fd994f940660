/*
 * Thread-safety test of the onnxrl sampler C API: many threads on one handle at once.
 *
 *   1. Reference: greedy actions and values of cartpole_mlp for 64 fixed observations,
 *      computed single-threaded, row by row, with one policy.
 *   2. One policy handle ({"workers": 4}) shared by 16 threads, 10,000 calls each, every call
 *      a random batch of rows of the reference set: every action and value must equal the
 *      reference exactly. Now and then a thread makes a bad call, to check that error
 *      messages stay with their thread.
 *   3. One env handle ({"explore": false, "max_episodes": 64, "max_wait_us": 100}) shared by
 *      16 threads, each running 4 episodes at once with get_action and get_actions (5,000
 *      actions per thread): every greedy action must equal the policy's reference action.
 *   4. Closing a policy and an env while other threads are calling them: calls succeed with
 *      the right result or fail with ONNXRL_ERR_STATE; nothing crashes or hangs.
 *   5. Busy episodes: while one thread waits in get_action for an episode, another thread's
 *      get_action for it is refused (ONNXRL_ERR_STATE); log_action or end for it from another
 *      thread neither hang nor fail the waiting call other than with ONNXRL_ERR_STATE (the
 *      library takes them after the waiting step).
 *
 * Run from the repository root. Prints "N passed, M failed" last; exits non-zero on failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <onnxrl/sampler.h>

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    N_REF = 64,           /* reference observations */
    OBS = 4,              /* CartPole's observation size */
    THREADS = 16,
    POLICY_CALLS = 10000, /* per thread, phase 2 */
    ENV_ACTIONS = 5000,   /* per thread, phase 3 */
    ENV_EPISODES = 4,     /* running at once per thread, phase 3 (16 * 4 = max_episodes) */
    MAX_BATCH = 16,       /* rows per policy call, phase 2 */
    MAX_REPORTS = 10,     /* failures printed per phase */
};

static const char *const MODEL = "cartpole_mlp";

/* ---- Counting checks (from any thread) --------------------------------------------------- */

static atomic_long g_passed, g_failed;
static atomic_int g_reports;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...) {
    if (ok) {
        atomic_fetch_add(&g_passed, 1);
        return;
    }
    atomic_fetch_add(&g_failed, 1);
    if (atomic_fetch_add(&g_reports, 1) < MAX_REPORTS) {
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

/* "STATUS_NAME \"message\"" of a failed call, into buf: the message is copied before the
   next call into the library (onnxrl_status_name included), since that ends its validity. */
static const char *describe(int status, char *buf, size_t cap) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", onnxrl_last_error());
    snprintf(buf, cap, "%s \"%s\"", onnxrl_status_name(status), msg);
    return buf;
}

#define DESCRIBE(status) describe((status), (char[1200]){0}, 1200)

/* Checks a status; on failure the message names the call and the library's message. */
static int check_status(int got, int want, const char *what) {
    if (got == want) {
        atomic_fetch_add(&g_passed, 1);
        return 1;
    }
    char msg[1024]; /* copied first: the message is valid until this thread's next call */
    snprintf(msg, sizeof msg, "%s", onnxrl_last_error());
    check(0, "%s: got %s \"%s\", want %s", what, onnxrl_status_name(got), msg, onnxrl_status_name(want));
    return 0;
}

/* ---- Random numbers: a per-thread xorshift ---------------------------------------------- */

static uint64_t next_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint64_t seed_for(int thread, int phase) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(thread + 1) + 0xD1B54A32D192ED03ull * (uint64_t)(phase + 1);
    return s ? s : 1;
}

static double uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * ((double)(next_rand(s) >> 11) / 9007199254740992.0);
}

/* ---- The reference ------------------------------------------------------------------------ */

static float g_obs[N_REF * OBS];
static float g_act[N_REF];
static float g_val[N_REF];

/* Fills the reference set: observations well inside the space (|x| <= 2, |theta| <= 0.2)
   where the policy does not hesitate (the greedy action has probability above 0.501), so that
   its greedy action cannot depend on rounding. Returns 0 on failure. */
static int build_reference(void) {
    onnxrl_policy *p = NULL;
    if (!check_status(onnxrl_policy_open(MODEL, NULL, &p), ONNXRL_OK, "reference policy_open"))
        return 0;
    uint64_t s = 12345;
    int filled = 0, tries = 0;
    while (filled < N_REF && tries++ < 100000) {
        float *o = g_obs + OBS * filled;
        o[0] = (float)uniform(&s, -2.0, 2.0);
        o[1] = (float)uniform(&s, -1.5, 1.5);
        o[2] = (float)uniform(&s, -0.2, 0.2);
        o[3] = (float)uniform(&s, -1.5, 1.5);
        float logp = 0;
        if (onnxrl_policy_act(p, o, 1, 0, &g_act[filled], &logp, &g_val[filled]) != ONNXRL_OK) {
            check(0, "reference policy_act: %s", onnxrl_last_error());
            onnxrl_policy_close(p);
            return 0;
        }
        if (logp > (float)-0.6911491778972723) /* log(0.501), spelt out: no libm needed */
            filled++;
    }
    check(filled == N_REF, "only %d confident reference observations", filled);

    /* The whole set as one batch gives the same answers as row by row. */
    float act[N_REF], val[N_REF];
    check_status(onnxrl_policy_act(p, g_obs, N_REF, 0, act, NULL, val), ONNXRL_OK, "reference batch");
    int zeros = 0;
    for (int i = 0; i < N_REF; i++) {
        check(act[i] == g_act[i], "reference row %d: batch action %g, single %g", i, act[i], g_act[i]);
        check(val[i] == g_val[i], "reference row %d: batch value %.9g, single %.9g", i, val[i], g_val[i]);
        zeros += g_act[i] == 0.0f;
    }
    check(zeros > 0 && zeros < N_REF, "the reference set has %d left and %d right actions", zeros, N_REF - zeros);
    check_status(onnxrl_policy_close(p), ONNXRL_OK, "reference policy_close");
    return filled == N_REF;
}

/* ---- Phase 2: one shared policy ----------------------------------------------------------- */

typedef struct {
    int index;
    onnxrl_policy *policy;
    onnxrl_env *env;
    long calls; /* phase 4: successful calls before the handle went away */
    int saw_state;
} worker;

static void *policy_worker(void *arg) {
    worker *w = arg;
    uint64_t s = seed_for(w->index, 2);
    float obs[MAX_BATCH * OBS], act[MAX_BATCH], val[MAX_BATCH], logp[MAX_BATCH];
    int rows[MAX_BATCH];
    long bad = 0, good = 0;
    for (int call = 0; call < POLICY_CALLS; call++) {
        long bad_before = bad;
        int n = 1 + (int)(next_rand(&s) % MAX_BATCH);
        for (int i = 0; i < n; i++) {
            rows[i] = (int)(next_rand(&s) % N_REF);
            memcpy(obs + OBS * i, g_obs + OBS * rows[i], sizeof(float) * OBS);
        }
        int with_logp = call % 3 == 0;
        int st = onnxrl_policy_act(w->policy, obs, n, 0, act, with_logp ? logp : NULL, val);
        const char *after = onnxrl_last_error();
        if (st == ONNXRL_OK && after[0] != '\0') {
            check(0, "thread %d call %d: last error \"%s\" after a success", w->index, call, after);
            bad++;
        }
        if (st != ONNXRL_OK) {
            check(0, "thread %d call %d: policy_act: %s", w->index, call, DESCRIBE(st));
            bad++;
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (act[i] != g_act[rows[i]] || val[i] != g_val[rows[i]]) {
                check(0, "thread %d call %d row %d (ref %d): action %g value %.9g, want %g %.9g", w->index, call, i,
                      rows[i], act[i], val[i], g_act[rows[i]], g_val[rows[i]]);
                bad++;
            }
            if (with_logp && !(isfinite(logp[i]) && logp[i] <= 0.0f)) {
                check(0, "thread %d call %d row %d: logp %g", w->index, call, i, logp[i]);
                bad++;
            }
        }
        /* Every 97th call also makes a bad one: the message is this thread's own. */
        if (call % 97 == 0) {
            float bad_obs[OBS] = {100.0f + (float)w->index, 0, 0, 0}, a;
            int st2 = onnxrl_policy_act(w->policy, bad_obs, 1, 0, &a, NULL, NULL);
            if (st2 != ONNXRL_ERR_INVALID_ARGUMENT || onnxrl_last_error()[0] == '\0') {
                check(0, "thread %d: observation outside the space: %s, want ONNXRL_ERR_INVALID_ARGUMENT", w->index,
                      DESCRIBE(st2));
                bad++;
            }
        }
        good += bad == bad_before;
    }
    atomic_fetch_add(&g_passed, good);
    check(bad == 0, "thread %d: %ld bad policy results", w->index, bad);
    return NULL;
}

/* ---- Phase 3: one shared env ------------------------------------------------------------- */

typedef struct {
    char id[64];
    int steps, length;
} episode;

static int start_episode(worker *w, episode *ep, uint64_t *s) {
    int st = onnxrl_episode_start(w->env, NULL, 1, ep->id, sizeof ep->id);
    if (st != ONNXRL_OK) {
        check(0, "thread %d: episode_start: %s", w->index, DESCRIBE(st));
        return 0;
    }
    ep->steps = 0;
    ep->length = 1 + (int)(next_rand(s) % 60);
    return 1;
}

static void *env_worker(void *arg) {
    worker *w = arg;
    uint64_t s = seed_for(w->index, 3);
    episode eps[ENV_EPISODES];
    long actions = 0, bad = 0, ended = 0, good = 0;
    for (int i = 0; i < ENV_EPISODES; i++)
        if (!start_episode(w, &eps[i], &s))
            return NULL;

    while (actions < ENV_ACTIONS && bad < 100) {
        int rows[ENV_EPISODES];
        float obs[ENV_EPISODES * OBS], act[ENV_EPISODES];
        for (int i = 0; i < ENV_EPISODES; i++) {
            rows[i] = (int)(next_rand(&s) % N_REF);
            memcpy(obs + OBS * i, g_obs + OBS * rows[i], sizeof(float) * OBS);
            act[i] = -7.0f;
        }
        int st;
        if (next_rand(&s) % 2 == 0) {
            const char *ids[ENV_EPISODES];
            for (int i = 0; i < ENV_EPISODES; i++)
                ids[i] = eps[i].id;
            st = onnxrl_episode_get_actions(w->env, ids, ENV_EPISODES, obs, act);
            if (st != ONNXRL_OK) {
                check(0, "thread %d: get_actions: %s", w->index, DESCRIBE(st));
                bad++;
                break;
            }
        } else {
            for (int i = 0; i < ENV_EPISODES; i++) {
                st = onnxrl_episode_get_action(w->env, eps[i].id, obs + OBS * i, &act[i]);
                if (st != ONNXRL_OK) {
                    check(0, "thread %d: get_action(%s): %s", w->index, eps[i].id, DESCRIBE(st));
                    bad++;
                    break;
                }
            }
            if (st != ONNXRL_OK)
                break;
        }
        for (int i = 0; i < ENV_EPISODES; i++) {
            actions++;
            good += act[i] == g_act[rows[i]];
            if (act[i] != g_act[rows[i]]) {
                check(0, "thread %d episode %s step %d (ref %d): greedy env action %g, policy %g", w->index,
                      eps[i].id, eps[i].steps, rows[i], act[i], g_act[rows[i]]);
                bad++;
            }
            st = onnxrl_episode_log_returns(w->env, eps[i].id, 1.0);
            if (st != ONNXRL_OK) {
                check(0, "thread %d: log_returns: %s", w->index, DESCRIBE(st));
                bad++;
            }
            if (++eps[i].steps < eps[i].length)
                continue;
            const float *last = g_obs + OBS * (int)(next_rand(&s) % N_REF);
            st = ended % 2 ? onnxrl_episode_end_truncated(w->env, eps[i].id, last)
                           : onnxrl_episode_end(w->env, eps[i].id, last);
            ended++;
            if (st != ONNXRL_OK) {
                check(0, "thread %d: end(%s): %s", w->index, eps[i].id, DESCRIBE(st));
                bad++;
            }
            if (!start_episode(w, &eps[i], &s))
                return NULL;
        }
    }
    for (int i = 0; i < ENV_EPISODES; i++) {
        int st = onnxrl_episode_end_truncated(w->env, eps[i].id, g_obs);
        if (st != ONNXRL_OK) {
            check(0, "thread %d: final end_truncated: %s", w->index, DESCRIBE(st));
            bad++;
        }
    }
    atomic_fetch_add(&g_passed, good);
    check(bad == 0 && actions >= ENV_ACTIONS, "thread %d: %ld bad env results, %ld actions", w->index, bad, actions);
    return NULL;
}

/* ---- Phase 4: closing under load ---------------------------------------------------------- */

static atomic_int g_go;

static void *policy_until_closed(void *arg) {
    worker *w = arg;
    uint64_t s = seed_for(w->index, 4);
    while (!atomic_load(&g_go)) {
    }
    for (long call = 0; call < 10000000; call++) {
        int row = (int)(next_rand(&s) % N_REF);
        float a = -7.0f;
        int st = onnxrl_policy_act(w->policy, g_obs + OBS * row, 1, 0, &a, NULL, NULL);
        if (st == ONNXRL_ERR_STATE) {
            w->saw_state = 1;
            return NULL;
        }
        if (st != ONNXRL_OK || a != g_act[row]) {
            check(0, "thread %d while closing: policy_act %s, action %g want %g", w->index, DESCRIBE(st), a,
                  g_act[row]);
            return NULL;
        }
        w->calls++;
    }
    return NULL;
}

static void *env_until_closed(void *arg) {
    worker *w = arg;
    uint64_t s = seed_for(w->index, 5);
    char id[64];
    while (!atomic_load(&g_go)) {
    }
    int st = onnxrl_episode_start(w->env, NULL, 1, id, sizeof id);
    for (long call = 0; st == ONNXRL_OK && call < 10000000; call++) {
        int row = (int)(next_rand(&s) % N_REF);
        float a = -7.0f;
        st = onnxrl_episode_get_action(w->env, id, g_obs + OBS * row, &a);
        if (st == ONNXRL_OK && a != g_act[row]) {
            check(0, "thread %d while closing: env action %g want %g", w->index, a, g_act[row]);
            return NULL;
        }
        if (st == ONNXRL_OK)
            st = onnxrl_episode_log_returns(w->env, id, 1.0);
        if (st == ONNXRL_OK)
            w->calls++;
    }
    if (st == ONNXRL_ERR_STATE) {
        w->saw_state = 1;
    } else {
        check(0, "thread %d while closing: env call %s, want ONNXRL_OK or ONNXRL_ERR_STATE", w->index, DESCRIBE(st));
    }
    return NULL;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void close_under_load(void) {
    enum { N = 8 };
    pthread_t th[N];
    worker w[N];

    onnxrl_policy *p = NULL;
    if (!check_status(onnxrl_policy_open(MODEL, "{\"workers\": 2}", &p), ONNXRL_OK, "policy_open (close under load)"))
        return;
    atomic_store(&g_go, 0);
    for (int i = 0; i < N; i++) {
        w[i] = (worker){.index = i, .policy = p};
        pthread_create(&th[i], NULL, policy_until_closed, &w[i]);
    }
    atomic_store(&g_go, 1);
    sleep_ms(100);
    check_status(onnxrl_policy_close(p), ONNXRL_OK, "policy_close under load");
    long calls = 0;
    int stopped = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        calls += w[i].calls;
        stopped += w[i].saw_state;
    }
    check(stopped == N, "policy closed under load: %d of %d threads saw ONNXRL_ERR_STATE", stopped, N);
    printf("close under load: policy answered %ld calls before closing\n", calls);

    onnxrl_env *e = NULL;
    if (!check_status(onnxrl_env_open(MODEL, "{\"explore\": false, \"max_episodes\": 8, \"max_wait_us\": 50}", &e),
                      ONNXRL_OK, "env_open (close under load)"))
        return;
    atomic_store(&g_go, 0);
    for (int i = 0; i < N; i++) {
        w[i] = (worker){.index = i, .env = e};
        pthread_create(&th[i], NULL, env_until_closed, &w[i]);
    }
    atomic_store(&g_go, 1);
    sleep_ms(100);
    check_status(onnxrl_env_close(e), ONNXRL_OK, "env_close under load");
    calls = 0;
    stopped = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        calls += w[i].calls;
        stopped += w[i].saw_state;
    }
    check(stopped == N, "env closed under load: %d of %d threads saw ONNXRL_ERR_STATE", stopped, N);
    printf("close under load: env answered %ld steps before closing\n", calls);
}

/* ---- Phase 5: busy episodes ------------------------------------------------------------- */

typedef struct {
    onnxrl_env *env;
    const char *id;
    int status;
    float action;
} waiter;

static void *wait_for_action(void *arg) {
    waiter *w = arg;
    w->status = onnxrl_episode_get_action(w->env, w->id, g_obs, &w->action);
    return NULL;
}

/* Starts a get_action for id on another thread and returns once it is surely waiting: the
   env waits max_wait_us (1 s) for the idle episode's request before it infers. */
static void start_waiter(waiter *w, pthread_t *t, onnxrl_env *e, const char *id) {
    *w = (waiter){.env = e, .id = id, .status = 1, .action = -7.0f};
    pthread_create(t, NULL, wait_for_action, w);
    sleep_ms(100);
}

static void busy_episodes(void) {
    onnxrl_env *e = NULL;
    if (!check_status(onnxrl_env_open(MODEL,
                                      "{\"explore\": false, \"max_episodes\": 8, \"max_wait_us\": 1000000,"
                                      " \"timeout_ms\": 10000}",
                                      &e),
                      ONNXRL_OK, "env_open (busy episodes)"))
        return;
    const char *ids[] = {"idle", "busy-get", "busy-log", "busy-end"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        check_status(onnxrl_episode_start(e, ids[i], 1, NULL, 0), ONNXRL_OK, "episode_start (busy episodes)");

    waiter w;
    pthread_t t;
    float a = -7.0f;

    /* A second get_action for a waiting episode. */
    start_waiter(&w, &t, e, "busy-get");
    check_status(onnxrl_episode_get_action(e, "busy-get", g_obs + OBS, &a), ONNXRL_ERR_STATE,
                 "get_action for an episode waiting in another thread");
    pthread_join(t, NULL);
    check(w.status == ONNXRL_OK && w.action == g_act[0], "the waiting get_action: %s, action %g want %g",
          onnxrl_status_name(w.status), w.action, g_act[0]);

    /* log_action, then end, for a waiting episode: each succeeds or is refused as busy, and
       the waiting call gets its action (or ONNXRL_ERR_STATE), with no timeout. */
    const char *what[2] = {"log_action", "end"};
    for (int k = 0; k < 2; k++) {
        const char *id = k == 0 ? "busy-log" : "busy-end";
        start_waiter(&w, &t, e, id);
        const float one = 1.0f;
        int st = k == 0 ? onnxrl_episode_log_action(e, id, g_obs + OBS, &one) : onnxrl_episode_end(e, id, g_obs + OBS);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", onnxrl_last_error());
        pthread_join(t, NULL);
        check(st == ONNXRL_OK || st == ONNXRL_ERR_STATE, "%s for an episode waiting in another thread: %s \"%s\"",
              what[k], onnxrl_status_name(st), msg);
        check((w.status == ONNXRL_OK && w.action == g_act[0]) || w.status == ONNXRL_ERR_STATE,
              "the get_action waiting during %s: %s, action %g want %g", what[k], onnxrl_status_name(w.status),
              w.action, g_act[0]);
    }

    check_status(onnxrl_env_close(e), ONNXRL_OK, "env_close (busy episodes)");
}

/* ---- Main ------------------------------------------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_threads(void *(*fn)(void *), worker *w) {
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, fn, &w[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(2);
        }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
}

int main(void) {
    worker w[THREADS];

    if (build_reference()) {
        onnxrl_policy *p = NULL;
        if (check_status(onnxrl_policy_open(MODEL, "{\"workers\": 4}", &p), ONNXRL_OK, "shared policy_open")) {
            for (int i = 0; i < THREADS; i++)
                w[i] = (worker){.index = i, .policy = p};
            double t0 = now_s();
            run_threads(policy_worker, w);
            printf("shared policy: %d threads x %d calls in %.2f s\n", THREADS, POLICY_CALLS, now_s() - t0);
            check_status(onnxrl_policy_close(p), ONNXRL_OK, "shared policy_close");
        }

        onnxrl_env *e = NULL;
        if (check_status(onnxrl_env_open(MODEL, "{\"explore\": false, \"max_episodes\": 64, \"max_wait_us\": 100}", &e),
                         ONNXRL_OK, "shared env_open")) {
            for (int i = 0; i < THREADS; i++)
                w[i] = (worker){.index = i, .env = e};
            double t0 = now_s();
            run_threads(env_worker, w);
            printf("shared env: %d threads x %d actions in %.2f s\n", THREADS, ENV_ACTIONS, now_s() - t0);
            check_status(onnxrl_env_close(e), ONNXRL_OK, "shared env_close");
        }

        close_under_load();
        busy_episodes();
    }

    long passed = atomic_load(&g_passed), failed = atomic_load(&g_failed);
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
