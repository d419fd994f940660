/*
 * Unit tests of the onnxrl sampler C API (include/onnxrl/sampler.h): every function, its
 * statuses and messages, NULL and wrong arguments, handle lifetimes, and the documented
 * semantics of batch inference (onnxrl_policy_*) and of the episode API (onnxrl_env_*,
 * onnxrl_episode_*).
 *
 * Run from the repository root (the bundled models and third_party/onnxruntime are found
 * from there). Prints "N passed, M failed" last and exits non-zero when a check failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <onnxrl/sampler.h>

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- The assertion machinery ----------------------------------------------------------- */

static int g_passed, g_failed;

/* The message of the last call made through STATUS(): copied at once, since the library's
   string is valid only until this thread's next call into it. */
static char g_err[4096];

static int record_status(int status) {
    const char *msg = onnxrl_last_error();
    snprintf(g_err, sizeof g_err, "%s", msg ? msg : "(NULL)");
    return status;
}

#define STATUS(call) record_status(call)

/* Counts a failed check and prints where it failed and why. */
static void fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    g_failed++;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define CHECK(cond)                                      \
    do {                                                 \
        if (cond)                                        \
            g_passed++;                                  \
        else                                             \
            fail(__FILE__, __LINE__, "%s", #cond);       \
    } while (0)

/* CHECKF(cond, fmt, ...): CHECK with a formatted explanation on failure. */
#define CHECKF(cond, ...)                                \
    do {                                                 \
        if (cond)                                        \
            g_passed++;                                  \
        else                                             \
            fail(__FILE__, __LINE__, __VA_ARGS__);       \
    } while (0)

/* Checks that a call returns `want` and that onnxrl_last_error() agrees: "" after a success,
   a non-empty message after a failure. */
static void expect_status(int got, int want, const char *expr, const char *file, int line) {
    if (got != want)
        fail(file, line, "%s: got %s (%d) \"%s\", want %s", expr, onnxrl_status_name(got), got, g_err,
             onnxrl_status_name(want));
    else if (want == ONNXRL_OK && g_err[0] != '\0')
        fail(file, line, "%s: succeeded but onnxrl_last_error() is \"%s\", want \"\"", expr, g_err);
    else if (want != ONNXRL_OK && g_err[0] == '\0')
        fail(file, line, "%s: failed with %s but onnxrl_last_error() is empty", expr, onnxrl_status_name(got));
    else
        g_passed++;
}

#define EXPECT(call, want) expect_status(STATUS(call), (want), #call, __FILE__, __LINE__)

/* For a call that may fail with either of two codes (a pointer that may or may not look like
   a released handle, say). */
static void expect_either(int got, int want1, int want2, const char *expr, const char *file, int line) {
    expect_status(got, got == want2 ? want2 : want1, expr, file, line);
}

#define EXPECT_EITHER(call, want1, want2) \
    expect_either(STATUS(call), (want1), (want2), #call, __FILE__, __LINE__)

/* Case-insensitive substring test. */
static int contains(const char *haystack, const char *needle) {
    size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* Checks that the last message mentions `needle`. */
#define EXPECT_MSG(needle) \
    CHECKF(contains(g_err, (needle)), "last error \"%s\" does not mention \"%s\"", g_err, (needle))

/* ---- Helpers ---------------------------------------------------------------------------- */

static char g_tmpdir[256];

static void make_tmpdir(void) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/onnxrl_capi_test_XXXXXX");
    if (mkdtemp(g_tmpdir) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

static void tmp_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", g_tmpdir, name); }

/* Removes the files the tests write, and the directory (left, with a note, if something else
   is in it). */
static void remove_tmpdir(void) {
    static const char *const files[] = {"garbage.onnx",       "empty.onnx",      "identity.onnx",
                                        "identity.policy.json", "not-a-directory", "samples.json"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tmp_path(path, sizeof path, files[i]);
        unlink(path);
    }
    if (rmdir(g_tmpdir) != 0)
        fprintf(stderr, "note: left %s behind\n", g_tmpdir);
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int file_contains(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2 + 1);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return 0;
    buf[len] = '\0';
    int found = strstr(buf, needle) != NULL;
    free(buf);
    return found;
}

/* A tiny hand-encoded ONNX model (IR 7, opset 13) without a value output: one Identity node,
   input "obs" float[batch, 2] -> output "logits" float[batch, 2]. */
static const unsigned char k_identity_onnx[] = {
    0x08, 0x07, 0x12, 0x04, 0x68, 0x61, 0x6e, 0x64, 0x3a, 0x5b, 0x0a, 0x1b, 0x0a, 0x03, 0x6f, 0x62,
    0x73, 0x12, 0x06, 0x6c, 0x6f, 0x67, 0x69, 0x74, 0x73, 0x1a, 0x02, 0x69, 0x64, 0x22, 0x08, 0x49,
    0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79, 0x12, 0x01, 0x67, 0x5a, 0x1a, 0x0a, 0x03, 0x6f, 0x62,
    0x73, 0x12, 0x13, 0x0a, 0x11, 0x08, 0x01, 0x12, 0x0d, 0x0a, 0x07, 0x12, 0x05, 0x62, 0x61, 0x74,
    0x63, 0x68, 0x0a, 0x02, 0x08, 0x02, 0x62, 0x1d, 0x0a, 0x06, 0x6c, 0x6f, 0x67, 0x69, 0x74, 0x73,
    0x12, 0x13, 0x0a, 0x11, 0x08, 0x01, 0x12, 0x0d, 0x0a, 0x07, 0x12, 0x05, 0x62, 0x61, 0x74, 0x63,
    0x68, 0x0a, 0x02, 0x08, 0x02, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d,
};

static const char k_identity_spec[] =
    "{\"observation_input\": \"obs\", \"action_output\": \"logits\", \"distribution\": \"categorical\","
    " \"observation_space\": {\"type\": \"Box\", \"low\": -10.0, \"high\": 10.0, \"shape\": [2], \"dtype\": \"float32\"},"
    " \"action_space\": {\"type\": \"Discrete\", \"n\": 2}}";

/* Observations of CartPole well inside its space (|x| <= 2, |theta| <= 0.2). */
static void cartpole_obs(float *obs, int n, unsigned seed) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (int i = 0; i < n * 4; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
        double scale = (i % 4 == 2) ? 0.2 : (i % 4 == 0 ? 2.0 : 1.5);
        obs[i] = (float)((2 * u - 1) * scale);
    }
}

/* log(1/2), spelt out so that the tests need no libm. */
#define LOG_HALF (-0.6931471805599453)

static int all_finite(const float *v, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* ---- Tests: the basics ------------------------------------------------------------------ */

static void test_abi_and_status_names(void) {
    CHECK(onnxrl_abi_version() == ONNXRL_ABI_VERSION);

    static const struct {
        int code;
        const char *name;
    } names[] = {
        {ONNXRL_OK, "ONNXRL_OK"},
        {ONNXRL_ERR_INVALID_ARGUMENT, "ONNXRL_ERR_INVALID_ARGUMENT"},
        {ONNXRL_ERR_NOT_FOUND, "ONNXRL_ERR_NOT_FOUND"},
        {ONNXRL_ERR_STATE, "ONNXRL_ERR_STATE"},
        {ONNXRL_ERR_MODEL, "ONNXRL_ERR_MODEL"},
        {ONNXRL_ERR_LIMIT, "ONNXRL_ERR_LIMIT"},
        {ONNXRL_ERR_TIMEOUT, "ONNXRL_ERR_TIMEOUT"},
        {ONNXRL_ERR_IO, "ONNXRL_ERR_IO"},
        {ONNXRL_ERR_INTERNAL, "ONNXRL_ERR_INTERNAL"},
        {ONNXRL_ERR_DEVICE, "ONNXRL_ERR_DEVICE"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *got = onnxrl_status_name(names[i].code);
        CHECKF(got != NULL && strcmp(got, names[i].name) == 0, "onnxrl_status_name(%d) = \"%s\", want \"%s\"",
               names[i].code, got ? got : "(NULL)", names[i].name);
    }
    const int unknown[] = {1, 2, -10, -100, 12345, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *got = onnxrl_status_name(unknown[i]);
        CHECKF(got != NULL && strcmp(got, "unknown status") == 0, "onnxrl_status_name(%d) = \"%s\", want \"unknown status\"",
               unknown[i], got ? got : "(NULL)");
    }
    CHECK(onnxrl_last_error() != NULL);

    /* The library's version begins with the header's release; "+commit" may follow. */
    const char *v = onnxrl_version();
    size_t n = strlen(ONNXRL_VERSION);
    CHECKF(v != NULL && strncmp(v, ONNXRL_VERSION, n) == 0 && (v[n] == '\0' || v[n] == '+'),
           "onnxrl_version() = \"%s\", want \"%s\" or \"%s+<commit>\"", v ? v : "(NULL)", ONNXRL_VERSION,
           ONNXRL_VERSION);
    CHECK(onnxrl_version() == v);
}

/* The message is per thread: a failure in another thread leaves this thread's message alone. */
static void *fail_in_other_thread(void *arg) {
    (void)arg;
    onnxrl_policy *p = NULL;
    int st = onnxrl_policy_open("no_such_model_in_thread", NULL, &p);
    const char *msg = onnxrl_last_error();
    static int ok;
    ok = st == ONNXRL_ERR_NOT_FOUND && msg != NULL && strstr(msg, "no_such_model_in_thread") != NULL;
    return &ok;
}

static void test_last_error_per_thread(void) {
    onnxrl_policy *p = NULL;
    EXPECT(onnxrl_policy_open("no_such_model_in_main", NULL, &p), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("no_such_model_in_main");
    pthread_t t;
    void *res = NULL;
    CHECK(pthread_create(&t, NULL, fail_in_other_thread, NULL) == 0 && pthread_join(t, &res) == 0);
    CHECK(res != NULL && *(int *)res == 1);
    const char *mine = onnxrl_last_error();
    CHECKF(mine != NULL && strstr(mine, "no_such_model_in_main") != NULL && strstr(mine, "in_thread") == NULL,
           "main thread's message changed by another thread: \"%s\"", mine ? mine : "(NULL)");
    /* A success clears it. */
    int64_t o = 0, a = 0;
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_OK);
    CHECK(strcmp(onnxrl_last_error(), "") == 0);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

/* ---- Tests: onnxrl_policy_open -------------------------------------------------------- */

static void test_policy_open_errors(void) {
    onnxrl_policy *p = NULL;
    char path[512];

    EXPECT(onnxrl_policy_open(NULL, NULL, &p), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_EITHER(onnxrl_policy_open("", NULL, &p), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_NOT_FOUND);

    EXPECT(onnxrl_policy_open("no_such_bundled_model", NULL, &p), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("no_such_bundled_model");
    EXPECT(onnxrl_policy_open("/nonexistent-onnxrl-dir/missing_model.onnx", NULL, &p), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("missing_model.onnx");

    /* Random bytes are no ONNX model. */
    unsigned char junk[4096];
    srand(12345);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(rand() & 0xff);
    tmp_path(path, sizeof path, "garbage.onnx");
    CHECK(write_file(path, junk, sizeof junk) == 0);
    EXPECT(onnxrl_policy_open(path, NULL, &p), ONNXRL_ERR_MODEL);
    EXPECT_MSG("garbage.onnx");
    /* An empty file neither. */
    tmp_path(path, sizeof path, "empty.onnx");
    CHECK(write_file(path, "", 0) == 0);
    EXPECT(onnxrl_policy_open(path, NULL, &p), ONNXRL_ERR_MODEL);

    /* Options: not JSON, not an object, unknown keys, wrong types, env-only keys. */
    const char *bad_options[] = {
        "{",
        "[1, 2]",
        "42",
        "\"cpu\"",
        "{\"seed\": 1} trailing",
        "{\"bogus_option\": 1}",
        "{\"Seed\": 1}",
        "{\"seed\": \"one\"}",
        "{\"threads\": \"4\"}",
        "{\"workers\": true}",
        "{\"device\": 0}",
        "{\"normalize_actions\": 1}",
        "{\"clip_actions\": \"yes\"}",
        "{\"max_episodes\": 4}",
        "{\"explore\": false}",
    };
    for (size_t i = 0; i < sizeof bad_options / sizeof bad_options[0]; i++) {
        int st = STATUS(onnxrl_policy_open("cartpole_mlp", bad_options[i], &p));
        CHECKF(st == ONNXRL_ERR_INVALID_ARGUMENT && g_err[0] != '\0',
               "onnxrl_policy_open(cartpole_mlp, %s): got %s \"%s\", want ONNXRL_ERR_INVALID_ARGUMENT", bad_options[i],
               onnxrl_status_name(st), g_err);
        if (st == ONNXRL_OK)
            onnxrl_policy_close(p);
    }
    EXPECT(onnxrl_policy_open("cartpole_mlp", "{\"bogus_option\": 1}", &p), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_MSG("bogus_option");
    EXPECT(onnxrl_policy_open("cartpole_mlp", "{\"seed\": \"one\"}", &p), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_MSG("seed");

    /* Recurrent policies are for the episode API only. */
    EXPECT(onnxrl_policy_open("lstm_policy", NULL, &p), ONNXRL_ERR_MODEL);
    CHECKF(contains(g_err, "recurrent") || contains(g_err, "state") || contains(g_err, "episode"),
           "the message for a recurrent policy does not say why: \"%s\"", g_err);
    EXPECT(onnxrl_policy_open("gru_policy", NULL, &p), ONNXRL_ERR_MODEL);
}

static void test_policy_open_ok(void) {
    onnxrl_policy *p = NULL;
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    CHECK(p != NULL);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);

    p = NULL;
    EXPECT(onnxrl_policy_open("cartpole_mlp", "{}", &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);

    p = NULL;
    EXPECT(onnxrl_policy_open("cartpole_mlp",
                              "{\"device\": \"cpu\", \"threads\": 1, \"seed\": 3, \"workers\": 2,"
                              " \"normalize_actions\": true, \"clip_actions\": false}",
                              &p),
           ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);

    /* The bundled model by its path too, when the test runs from the repository root. */
    const char *candidates[] = {"models/cartpole_mlp.onnx", "../models/cartpole_mlp.onnx",
                                "../../models/cartpole_mlp.onnx"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (access(candidates[i], R_OK) != 0)
            continue;
        p = NULL;
        int64_t o = 0, a = 0;
        EXPECT(onnxrl_policy_open(candidates[i], NULL, &p), ONNXRL_OK);
        EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_OK);
        CHECK(o == 4 && a == 1);
        EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
        break;
    }
}

/* ---- Tests: onnxrl_policy_sizes ----------------------------------------------------------- */

static void test_policy_sizes(void) {
    onnxrl_policy *p = NULL;
    int64_t o = -1, a = -1;

    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_OK);
    CHECKF(o == 4 && a == 1, "cartpole_mlp sizes: obs %lld action %lld, want 4 and 1", (long long)o, (long long)a);
    EXPECT(onnxrl_policy_sizes(NULL, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_sizes(p, NULL, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_sizes(p, &o, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);

    o = a = -1;
    EXPECT(onnxrl_policy_open("pendulum_gaussian", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_OK);
    CHECKF(o == 3 && a == 1, "pendulum_gaussian sizes: obs %lld action %lld, want 3 and 1", (long long)o,
           (long long)a);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

/* ---- Tests: onnxrl_policy_act ------------------------------------------------------------- */

enum { N_OBS = 16 };

static void test_policy_act_arguments(void) {
    onnxrl_policy *p = NULL;
    float obs[4 * N_OBS], act[N_OBS], logp[N_OBS], val[N_OBS];
    cartpole_obs(obs, N_OBS, 1);

    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(NULL, obs, 1, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(p, NULL, 1, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(p, obs, 1, 0, NULL, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(p, obs, -1, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(p, obs, INT64_MIN, 1, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    /* A count whose buffers could not exist (n * obs_size overflows): refused before reading. */
    EXPECT(onnxrl_policy_act(p, obs, INT64_MAX, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(p, obs, INT64_MAX / 4 + 1, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);

    /* n == 0 does nothing. */
    for (int i = 0; i < N_OBS; i++)
        act[i] = logp[i] = val[i] = -7.0f;
    EXPECT(onnxrl_policy_act(p, obs, 0, 0, act, logp, val), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, 0, 1, act, logp, val), ONNXRL_OK);
    CHECK(act[0] == -7.0f && logp[0] == -7.0f && val[0] == -7.0f);

    /* logp and values may be NULL. */
    EXPECT(onnxrl_policy_act(p, obs, N_OBS, 0, act, NULL, NULL), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N_OBS, 1, act, NULL, val), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N_OBS, 0, act, logp, NULL), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

static void test_policy_act_greedy(void) {
    onnxrl_policy *p = NULL;
    float obs[4 * N_OBS], act[N_OBS], act2[N_OBS], logp[N_OBS], logp2[N_OBS], val[N_OBS], val2[N_OBS];
    cartpole_obs(obs, N_OBS, 2);

    EXPECT(onnxrl_policy_open("cartpole_mlp", "{\"seed\": 5}", &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N_OBS, 0, act, logp, val), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N_OBS, 0, act2, logp2, val2), ONNXRL_OK);
    int binary = 1, same = 1, logp_ok = 1, logp_mode = 1;
    for (int i = 0; i < N_OBS; i++) {
        binary &= act[i] == 0.0f || act[i] == 1.0f;
        same &= act[i] == act2[i] && logp[i] == logp2[i] && val[i] == val2[i];
        logp_ok &= isfinite(logp[i]) && logp[i] <= 0.0f;
        /* The mode of a two-way categorical has probability >= 1/2. */
        logp_mode &= logp[i] >= (float)LOG_HALF - 1e-5f;
    }
    CHECK(binary);
    CHECK(same);
    CHECK(logp_ok);
    CHECK(logp_mode);
    CHECK(all_finite(val, N_OBS));

    /* Row by row gives the same actions as the batch. */
    int rows_same = 1;
    for (int i = 0; i < N_OBS; i++) {
        float a = -1, l = 1, v = 0;
        EXPECT(onnxrl_policy_act(p, obs + 4 * i, 1, 0, &a, &l, &v), ONNXRL_OK);
        rows_same &= a == act[i] && fabsf(l - logp[i]) <= 1e-5f && fabsf(v - val[i]) <= 1e-3f * (1 + fabsf(v));
    }
    CHECK(rows_same);

    /* The pole falling right: the trained policy pushes the cart right, and the other way round. */
    const float falling_right[4] = {0.0f, 0.0f, 0.15f, 1.0f};
    const float falling_left[4] = {0.0f, 0.0f, -0.15f, -1.0f};
    float a = -1;
    EXPECT(onnxrl_policy_act(p, falling_right, 1, 0, &a, NULL, NULL), ONNXRL_OK);
    CHECKF(a == 1.0f, "pole falling right: action %g, want 1 (push right)", a);
    EXPECT(onnxrl_policy_act(p, falling_left, 1, 0, &a, NULL, NULL), ONNXRL_OK);
    CHECKF(a == 0.0f, "pole falling left: action %g, want 0 (push left)", a);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

static void test_policy_act_explore_seeded(void) {
    enum { CALLS = 20 };
    onnxrl_policy *p1 = NULL, *p2 = NULL;
    float obs[4 * N_OBS];
    EXPECT(onnxrl_policy_open("cartpole_mlp", "{\"seed\": 42}", &p1), ONNXRL_OK);
    EXPECT(onnxrl_policy_open("cartpole_mlp", "{\"seed\": 42}", &p2), ONNXRL_OK);
    int same = 1, binary = 1, logp_ok = 1, ok = 1;
    for (int c = 0; c < CALLS; c++) {
        float a1[N_OBS], a2[N_OBS], l1[N_OBS], l2[N_OBS];
        int n = 1 + c % N_OBS;
        cartpole_obs(obs, n, 100 + (unsigned)c);
        ok &= onnxrl_policy_act(p1, obs, n, 1, a1, l1, NULL) == ONNXRL_OK;
        ok &= onnxrl_policy_act(p2, obs, n, 1, a2, l2, NULL) == ONNXRL_OK;
        for (int i = 0; i < n; i++) {
            same &= a1[i] == a2[i] && l1[i] == l2[i];
            binary &= a1[i] == 0.0f || a1[i] == 1.0f;
            logp_ok &= isfinite(l1[i]) && l1[i] <= 0.0f;
        }
    }
    CHECK(ok);
    CHECKF(same, "two policies with seed 42 sampled different actions for the same calls");
    CHECK(binary);
    CHECK(logp_ok);
    EXPECT(onnxrl_policy_close(p1), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p2), ONNXRL_OK);
}

static void test_policy_act_outside_space(void) {
    onnxrl_policy *p = NULL;
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);

    const float bad[][4] = {
        {100.0f, 0.0f, 0.0f, 0.0f}, /* x bound 4.8 */
        {-4.9f, 0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 1.0f, 0.0f}, /* theta bound 0.4189 */
        {NAN, 0.0f, 0.0f, 0.0f},
        {0.0f, NAN, 0.0f, 0.0f},
        {0.0f, INFINITY, 0.0f, 0.0f},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        float a = -7.0f, l = -7.0f, v = -7.0f;
        int st = STATUS(onnxrl_policy_act(p, bad[i], 1, 0, &a, &l, &v));
        CHECKF(st == ONNXRL_ERR_INVALID_ARGUMENT && g_err[0] != '\0',
               "observation %zu outside the space: got %s \"%s\", want ONNXRL_ERR_INVALID_ARGUMENT", i,
               onnxrl_status_name(st), g_err);
        CHECKF(a == -7.0f && l == -7.0f && v == -7.0f, "observation %zu outside the space: outputs were written", i);
    }

    /* One bad row in a batch: nothing is written. */
    float obs[4 * 3];
    cartpole_obs(obs, 3, 9);
    obs[4 * 2 + 0] = 100.0f;
    float act[3] = {-7, -7, -7}, logp[3] = {-7, -7, -7}, val[3] = {-7, -7, -7};
    EXPECT(onnxrl_policy_act(p, obs, 3, 1, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(act[0] == -7 && act[1] == -7 && act[2] == -7);
    CHECK(logp[0] == -7 && val[0] == -7);

    /* Large velocities are inside (their bound is float32's largest value). */
    const float fast[4] = {0.0f, 1e30f, 0.0f, -1e30f};
    float a = -7.0f;
    EXPECT(onnxrl_policy_act(p, fast, 1, 0, &a, NULL, NULL), ONNXRL_OK);
    CHECK(a == 0.0f || a == 1.0f);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

static void test_policy_act_pendulum(void) {
    onnxrl_policy *p = NULL;
    enum { N = 8 };
    float obs[3 * N], act[N], act2[N], logp[N], val[N];
    for (int i = 0; i < N; i++) {
        /* A point of the unit circle (cos, sin of the angle 2 atan(t)), without libm. */
        double t = -2.0 + 0.5 * i;
        obs[3 * i + 0] = (float)((1 - t * t) / (1 + t * t));
        obs[3 * i + 1] = (float)(2 * t / (1 + t * t));
        obs[3 * i + 2] = (float)(-4.0 + i);
    }
    EXPECT(onnxrl_policy_open("pendulum_gaussian", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N, 0, act, logp, val), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N, 0, act2, NULL, NULL), ONNXRL_OK);
    int in_range = 1, same = 1;
    for (int i = 0; i < N; i++) {
        in_range &= isfinite(act[i]) && act[i] >= -2.0f && act[i] <= 2.0f;
        same &= act[i] == act2[i];
    }
    CHECKF(in_range, "pendulum greedy actions outside [-2, 2] (normalize_actions is on by default)");
    CHECK(same);
    CHECK(all_finite(logp, N));
    CHECK(all_finite(val, N));

    EXPECT(onnxrl_policy_act(p, obs, N, 1, act, logp, NULL), ONNXRL_OK);
    CHECK(all_finite(act, N));
    CHECK(all_finite(logp, N));

    const float bad[3] = {2.0f, 0.0f, 0.0f}; /* cos > 1 */
    float a = -7;
    EXPECT(onnxrl_policy_act(p, bad, 1, 0, &a, NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(a == -7);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);

    /* clip_actions keeps sampled actions inside the space. */
    EXPECT(onnxrl_policy_open("pendulum_gaussian", "{\"clip_actions\": true, \"seed\": 1}", &p), ONNXRL_OK);
    int clipped = 1;
    for (int c = 0; c < 10; c++) {
        EXPECT(onnxrl_policy_act(p, obs, N, 1, act, NULL, NULL), ONNXRL_OK);
        for (int i = 0; i < N; i++)
            clipped &= act[i] >= -2.0f && act[i] <= 2.0f;
    }
    CHECK(clipped);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

/* A model without a value output: values must be NULL. Also checks logits -> actions and
   logp exactly, through the identity model (the logits are the observation). */
static void test_policy_without_value(void) {
    char model[512], spec[512];
    tmp_path(model, sizeof model, "identity.onnx");
    tmp_path(spec, sizeof spec, "identity.policy.json");
    CHECK(write_file(model, k_identity_onnx, sizeof k_identity_onnx) == 0);
    CHECK(write_file(spec, k_identity_spec, strlen(k_identity_spec)) == 0);

    onnxrl_policy *p = NULL;
    int64_t o = 0, a = 0;
    EXPECT(onnxrl_policy_open(model, NULL, &p), ONNXRL_OK);
    if (p == NULL)
        return;
    EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_OK);
    CHECK(o == 2 && a == 1);

    const float obs[6] = {1.0f, -1.0f, -0.5f, 0.5f, 2.0f, 2.0f};
    float act[3] = {-7, -7, -7}, logp[3], val[3] = {-7, -7, -7};
    EXPECT(onnxrl_policy_act(p, obs, 3, 0, act, logp, val), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_MSG("value");
    CHECK(act[0] == -7 && val[0] == -7);
    EXPECT(onnxrl_policy_act(p, obs, 3, 0, act, logp, NULL), ONNXRL_OK);
    CHECKF(act[0] == 0.0f && act[1] == 1.0f, "identity logits: greedy actions %g %g, want 0 1", act[0], act[1]);
    CHECK(act[2] == 0.0f || act[2] == 1.0f);
    const double want0 = -0.1269280110429725;  /* log softmax([1, -1])[0] = -log(1 + e^-2) */
    const double want1 = -0.31326168751822286; /* log softmax([-0.5, 0.5])[1] = -log(1 + e^-1) */
    const double want2 = LOG_HALF;             /* log softmax([2, 2])[either] */
    CHECKF(fabs(logp[0] - want0) < 1e-5 && fabs(logp[1] - want1) < 1e-5 && fabs(logp[2] - want2) < 1e-5,
           "identity logits: logp %g %g %g, want %g %g %g", logp[0], logp[1], logp[2], want0, want1, want2);

    /* Sampling at equal logits gives both actions. */
    float tie[2 * 64], sampled[64];
    for (int i = 0; i < 64; i++)
        tie[2 * i] = tie[2 * i + 1] = 0.0f;
    EXPECT(onnxrl_policy_act(p, tie, 64, 1, sampled, NULL, NULL), ONNXRL_OK);
    int zeros = 0, ones = 0;
    for (int i = 0; i < 64; i++) {
        zeros += sampled[i] == 0.0f;
        ones += sampled[i] == 1.0f;
    }
    CHECKF(zeros > 0 && ones > 0 && zeros + ones == 64, "64 samples at equal logits: %d zeros, %d ones", zeros, ones);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

/* ---- Tests: policy handles ------------------------------------------------------------- */

static void test_policy_handles(void) {
    onnxrl_policy *p = NULL, *q = NULL;
    int64_t o = 0, a = 0;
    float obs[4] = {0, 0, 0, 0}, act = -7;

    EXPECT(onnxrl_policy_close(NULL), ONNXRL_OK);

    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_policy_sizes(p, &o, &a), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_policy_act(p, obs, 1, 0, &act, NULL, NULL), ONNXRL_ERR_STATE);
    CHECK(act == -7);

    /* A released handle is never handed out again. */
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &q), ONNXRL_OK);
    CHECK(q != p);
    EXPECT(onnxrl_policy_close(p), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_policy_act(q, obs, 1, 0, &act, NULL, NULL), ONNXRL_OK);

    /* Pointers that are no policy handle. */
    onnxrl_policy *garbage = (onnxrl_policy *)(uintptr_t)0x1234;
    EXPECT_EITHER(onnxrl_policy_sizes(garbage, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_STATE);
    EXPECT_EITHER(onnxrl_policy_act(garbage, obs, 1, 0, &act, NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT,
                  ONNXRL_ERR_STATE);
    EXPECT_EITHER(onnxrl_policy_close(garbage), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_STATE);
    int local = 0;
    onnxrl_policy *stack_ptr = (onnxrl_policy *)(void *)&local;
    EXPECT_EITHER(onnxrl_policy_act(stack_ptr, obs, 1, 0, &act, NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT,
                  ONNXRL_ERR_STATE);

    /* An env handle is no policy handle, and the other way round; neither is harmed. */
    onnxrl_env *e = NULL;
    EXPECT(onnxrl_env_open("cartpole_mlp", NULL, &e), ONNXRL_OK);
    onnxrl_policy *env_as_policy = (onnxrl_policy *)(void *)e;
    EXPECT(onnxrl_policy_sizes(env_as_policy, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_act(env_as_policy, obs, 1, 0, &act, NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_policy_close(env_as_policy), ONNXRL_ERR_INVALID_ARGUMENT);
    onnxrl_env *policy_as_env = (onnxrl_env *)(void *)q;
    EXPECT(onnxrl_env_sizes(policy_as_env, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_start(policy_as_env, "x", 1, NULL, 0), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_action(policy_as_env, "x", obs, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_close(policy_as_env), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_sizes(e, &o, &a), ONNXRL_OK);
    CHECK(o == 4 && a == 1);
    EXPECT(onnxrl_policy_sizes(q, &o, &a), ONNXRL_OK);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(q), ONNXRL_OK);
}

/* ---- Tests: onnxrl_env_open and sizes --------------------------------------------------- */

static void test_env_open_errors(void) {
    onnxrl_env *e = NULL;
    char path[512], opts[1024];

    EXPECT(onnxrl_env_close(NULL), ONNXRL_OK);
    EXPECT(onnxrl_env_open(NULL, NULL, &e), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_open("cartpole_mlp", NULL, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_open("no_such_bundled_env_model", NULL, &e), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("no_such_bundled_env_model");
    tmp_path(path, sizeof path, "garbage.onnx"); /* written by test_policy_open_errors */
    EXPECT(onnxrl_env_open(path, NULL, &e), ONNXRL_ERR_MODEL);

    const char *bad_options[] = {
        "{",
        "[]",
        "{\"max_episodes\": \"ten\"}",
        "{\"explore\": \"no\"}",
        "{\"explore\": 0}",
        "{\"seed\": [1]}",
        "{\"out\": 5}",
        "{\"max_wait_us\": \"200\"}",
        "{\"max_batch\": false}",
        "{\"timeout_ms\": \"1000\"}",
        "{\"fragment_length\": {}}",
        "{\"max_file_size\": \"64M\"}",
        "{\"no_such_env_option\": 1}",
        "{\"workers\": 2}", /* a policy option, not an env option */
        "{\"raise_gomaxprocs\": 0}",
    };
    for (size_t i = 0; i < sizeof bad_options / sizeof bad_options[0]; i++) {
        int st = STATUS(onnxrl_env_open("cartpole_mlp", bad_options[i], &e));
        CHECKF(st == ONNXRL_ERR_INVALID_ARGUMENT && g_err[0] != '\0',
               "onnxrl_env_open(cartpole_mlp, %s): got %s \"%s\", want ONNXRL_ERR_INVALID_ARGUMENT", bad_options[i],
               onnxrl_status_name(st), g_err);
        if (st == ONNXRL_OK)
            onnxrl_env_close(e);
    }
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"no_such_env_option\": 1}", &e), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_MSG("no_such_env_option");

    /* An output file that cannot be written (its directory would be a regular file: even root
       cannot create it): refused at open or reported at close. */
    char blocker[512];
    tmp_path(blocker, sizeof blocker, "not-a-directory");
    CHECK(write_file(blocker, "x", 1) == 0);
    snprintf(opts, sizeof opts, "{\"out\": \"%s/sub/samples.json\"}", blocker);
    e = NULL;
    int st = STATUS(onnxrl_env_open("cartpole_mlp", opts, &e));
    if (st == ONNXRL_OK) {
        CHECK(g_err[0] == '\0');
        EXPECT(onnxrl_episode_start(e, "io-ep", 1, NULL, 0), ONNXRL_OK);
        const float obs[4] = {0, 0, 0, 0};
        float act;
        EXPECT(onnxrl_episode_get_action(e, "io-ep", obs, &act), ONNXRL_OK);
        EXPECT(onnxrl_episode_end(e, "io-ep", obs), ONNXRL_OK);
        EXPECT(onnxrl_env_close(e), ONNXRL_ERR_IO);
        EXPECT(onnxrl_env_close(e), ONNXRL_ERR_STATE);
    } else {
        CHECKF(st == ONNXRL_ERR_IO && g_err[0] != '\0', "env with an unwritable out file: got %s \"%s\", want ONNXRL_ERR_IO",
               onnxrl_status_name(st), g_err);
    }
}

static void test_env_sizes(void) {
    onnxrl_env *e = NULL;
    int64_t o = -1, a = -1;
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"max_episodes\": 4, \"timeout_ms\": 10000}", &e), ONNXRL_OK);
    EXPECT(onnxrl_env_sizes(e, &o, &a), ONNXRL_OK);
    CHECK(o == 4 && a == 1);
    EXPECT(onnxrl_env_sizes(NULL, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_sizes(e, NULL, &a), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_sizes(e, &o, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);

    EXPECT(onnxrl_env_open("pendulum_gaussian", NULL, &e), ONNXRL_OK);
    EXPECT(onnxrl_env_sizes(e, &o, &a), ONNXRL_OK);
    CHECK(o == 3 && a == 1);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

/* ---- Tests: episodes ------------------------------------------------------------------ */

static int looks_like_uuid(const char *s) {
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

static void test_episode_start(void) {
    onnxrl_env *e = NULL;
    char id[64], id2[64];
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"max_episodes\": 16, \"timeout_ms\": 10000}", &e), ONNXRL_OK);

    EXPECT(onnxrl_episode_start(NULL, "a", 1, NULL, 0), ONNXRL_ERR_INVALID_ARGUMENT);
    /* A generated id needs id_out. */
    EXPECT(onnxrl_episode_start(e, NULL, 1, NULL, 64), ONNXRL_ERR_INVALID_ARGUMENT);

    /* A given id; id_out may be NULL, or receives a copy. */
    EXPECT(onnxrl_episode_start(e, "given-1", 1, NULL, 0), ONNXRL_OK);
    memset(id, 'x', sizeof id);
    EXPECT(onnxrl_episode_start(e, "given-2", 1, id, sizeof id), ONNXRL_OK);
    CHECK(strcmp(id, "given-2") == 0);

    /* A generated id: a UUID, NUL-terminated; two are different. */
    memset(id, 'x', sizeof id);
    EXPECT(onnxrl_episode_start(e, NULL, 1, id, sizeof id), ONNXRL_OK);
    CHECKF(memchr(id, '\0', sizeof id) != NULL && looks_like_uuid(id), "generated id \"%.64s\" is no UUID", id);
    EXPECT(onnxrl_episode_start(e, NULL, 0, id2, 37), ONNXRL_OK);
    CHECK(looks_like_uuid(id2) && strcmp(id, id2) != 0);

    /* id_cap too small for a generated id. */
    char small[36];
    EXPECT(onnxrl_episode_start(e, NULL, 1, small, sizeof small), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_episode_start(e, NULL, 1, small, 0), ONNXRL_ERR_LIMIT);

    /* An empty id; a given id that does not fit id_out. */
    EXPECT(onnxrl_episode_start(e, "", 1, NULL, 0), ONNXRL_ERR_INVALID_ARGUMENT);
    char tiny[4];
    EXPECT(onnxrl_episode_start(e, "given-3", 1, tiny, sizeof tiny), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_episode_start(e, "given-3", 1, NULL, 0), ONNXRL_OK); /* it was not started */

    /* The same id twice. */
    EXPECT(onnxrl_episode_start(e, "given-1", 1, NULL, 0), ONNXRL_ERR_STATE);
    EXPECT_MSG("given-1");
    EXPECT(onnxrl_episode_start(e, id, 1, NULL, 0), ONNXRL_ERR_STATE);

    /* Ids are at most 1024 bytes. */
    char long_id[1026];
    memset(long_id, 'k', 1025);
    long_id[1025] = '\0';
    EXPECT(onnxrl_episode_start(e, long_id, 1, NULL, 0), ONNXRL_ERR_LIMIT);
    long_id[1024] = '\0';
    EXPECT(onnxrl_episode_start(e, long_id, 1, NULL, 0), ONNXRL_OK);
    const float obs[4] = {0.01f, 0.02f, -0.01f, 0.0f};
    EXPECT(onnxrl_episode_end(e, long_id, obs), ONNXRL_OK);

    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

static void test_episode_limits(void) {
    onnxrl_env *e = NULL;
    const float obs[4] = {0.01f, 0.02f, -0.01f, 0.0f};
    char id[64];

    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"max_episodes\": 2}", &e), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "a", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "b", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "c", 1, NULL, 0), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_episode_start(e, NULL, 1, id, sizeof id), ONNXRL_ERR_LIMIT);
    /* An ended episode frees its place. */
    EXPECT(onnxrl_episode_end(e, "a", obs), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "c", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "d", 1, NULL, 0), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);

    /* With id_cap too small no episode is started. */
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"max_episodes\": 1}", &e), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, NULL, 1, id, 36), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_episode_start(e, NULL, 1, id, 37), ONNXRL_OK);
    CHECK(looks_like_uuid(id));
    EXPECT(onnxrl_episode_start(e, "other", 1, NULL, 0), ONNXRL_ERR_LIMIT);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

static void test_episode_flow(void) {
    onnxrl_env *e = NULL;
    char out[512], opts[1024], id[64];
    tmp_path(out, sizeof out, "samples.json");
    snprintf(opts, sizeof opts,
             "{\"out\": \"%s\", \"seed\": 1, \"max_episodes\": 8, \"explore\": true, \"max_wait_us\": 0,"
             " \"max_batch\": 8, \"timeout_ms\": 10000, \"fragment_length\": 50, \"max_file_size\": 1048576,"
             " \"device\": \"cpu\", \"threads\": 1, \"normalize_actions\": true, \"clip_actions\": false}",
             out);
    EXPECT(onnxrl_env_open("cartpole_mlp", opts, &e), ONNXRL_OK);
    if (e == NULL)
        return;

    float obs[4] = {0.01f, -0.02f, 0.03f, 0.01f}, act = -7, act2[2], obs2[8];
    EXPECT(onnxrl_episode_start(e, "ep-a", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, NULL, 1, id, sizeof id), ONNXRL_OK);

    /* get_action: NULL arguments, unknown episode, observation outside the space. */
    EXPECT(onnxrl_episode_get_action(NULL, "ep-a", obs, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_action(e, NULL, obs, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_action(e, "ep-a", NULL, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_action(e, "ep-a", obs, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_action(e, "no-such-episode", obs, &act), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("no-such-episode");
    const float outside[4] = {100.0f, 0, 0, 0};
    EXPECT(onnxrl_episode_get_action(e, "ep-a", outside, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    const float nan_obs[4] = {0, 0, NAN, 0};
    EXPECT(onnxrl_episode_get_action(e, "ep-a", nan_obs, &act), ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(act == -7);

    /* A few good steps. */
    for (int t = 0; t < 5; t++) {
        act = -7;
        EXPECT(onnxrl_episode_get_action(e, "ep-a", obs, &act), ONNXRL_OK);
        CHECK(act == 0.0f || act == 1.0f);
        EXPECT(onnxrl_episode_log_returns(e, "ep-a", 1.0), ONNXRL_OK);
        EXPECT(onnxrl_episode_log_returns(e, "ep-a", 0.5), ONNXRL_OK);
        obs[0] += 0.01f;
    }

    /* log_returns: NULL arguments, unknown episode. */
    EXPECT(onnxrl_episode_log_returns(NULL, "ep-a", 1.0), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns(e, NULL, 1.0), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns(e, "no-such-episode", 1.0), ONNXRL_ERR_NOT_FOUND);
    EXPECT(onnxrl_episode_log_returns(e, "ep-a", NAN), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns(e, "ep-a", INFINITY), ONNXRL_ERR_INVALID_ARGUMENT);

    /* log_action: the simulator's own action; an action outside Discrete(2) is refused. */
    const float one = 1.0f, five = 5.0f, minus = -1.0f, half = 0.5f, nan_act = NAN;
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &one), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_returns(e, "ep-a", 1.0), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &five), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &minus), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &half), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &nan_act), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", outside, &one), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(NULL, "ep-a", obs, &one), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, NULL, obs, &one), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", NULL, &one), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_action(e, "no-such-episode", obs, &one), ONNXRL_ERR_NOT_FOUND);
    EXPECT(onnxrl_episode_get_action(e, "ep-a", obs, &act), ONNXRL_OK);

    /* get_actions for two episodes at once. */
    const char *ids[2] = {"ep-a", id};
    memcpy(obs2, obs, sizeof obs);
    memcpy(obs2 + 4, obs, sizeof obs);
    obs2[4 + 2] = -0.03f;
    act2[0] = act2[1] = -7;
    EXPECT(onnxrl_episode_get_actions(e, ids, 2, obs2, act2), ONNXRL_OK);
    CHECK((act2[0] == 0.0f || act2[0] == 1.0f) && (act2[1] == 0.0f || act2[1] == 1.0f));
    EXPECT(onnxrl_episode_get_actions(e, ids, 0, obs2, act2), ONNXRL_OK);
    EXPECT(onnxrl_episode_get_actions(e, ids, -1, obs2, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_actions(NULL, ids, 2, obs2, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_actions(e, NULL, 2, obs2, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_actions(e, ids, 2, NULL, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_actions(e, ids, 2, obs2, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    const char *null_id[2] = {"ep-a", NULL};
    EXPECT(onnxrl_episode_get_actions(e, null_id, 2, obs2, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_get_actions(e, ids, INT64_MAX, obs2, act2), ONNXRL_ERR_INVALID_ARGUMENT);
    /* The same episode twice in one call: its second request finds it busy. */
    const char *twice[2] = {"ep-a", "ep-a"};
    EXPECT_EITHER(onnxrl_episode_get_actions(e, twice, 2, obs2, act2), ONNXRL_ERR_STATE, ONNXRL_ERR_INVALID_ARGUMENT);

    /* Episode 1 of 2 unknown: episode 0 is answered, 1 is not, and the message names it. */
    const char *half_known[2] = {"ep-a", "unknown-second"};
    act2[0] = act2[1] = -7;
    EXPECT(onnxrl_episode_get_actions(e, half_known, 2, obs2, act2), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("unknown-second");
    CHECK(act2[0] == 0.0f || act2[0] == 1.0f);
    CHECK(act2[1] == -7);
    EXPECT(onnxrl_episode_log_returns(e, "ep-a", 1.0), ONNXRL_OK);

    /* log_returns_batch: rewards for several episodes in one call. */
    const double rewards[2] = {0.25, 0.5};
    EXPECT(onnxrl_episode_log_returns_batch(e, ids, 2, rewards), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_returns_batch(e, ids, 0, NULL), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_returns_batch(e, ids, -1, rewards), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns_batch(NULL, ids, 2, rewards), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns_batch(e, NULL, 2, rewards), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns_batch(e, ids, 2, NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_log_returns_batch(e, null_id, 2, rewards), ONNXRL_ERR_INVALID_ARGUMENT);
    const double bad_rewards[2] = {1.0, NAN};
    EXPECT(onnxrl_episode_log_returns_batch(e, ids, 2, bad_rewards), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT_MSG("rewards[1]");
    EXPECT(onnxrl_episode_log_returns_batch(e, half_known, 2, rewards), ONNXRL_ERR_NOT_FOUND);
    EXPECT_MSG("episode 1 of 2");

    /* end / end_truncated: NULL arguments and unknown episodes. */
    EXPECT(onnxrl_episode_end(NULL, "ep-a", obs), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end(e, NULL, obs), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end(e, "ep-a", NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end(e, "no-such-episode", obs), ONNXRL_ERR_NOT_FOUND);
    EXPECT(onnxrl_episode_end_truncated(NULL, "ep-a", obs), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end_truncated(e, NULL, obs), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end_truncated(e, "ep-a", NULL), ONNXRL_ERR_INVALID_ARGUMENT);
    EXPECT(onnxrl_episode_end_truncated(e, "no-such-episode", obs), ONNXRL_ERR_NOT_FOUND);
    EXPECT(onnxrl_episode_end(e, "ep-a", outside), ONNXRL_ERR_INVALID_ARGUMENT);

    /* End one terminated, the other truncated. */
    EXPECT(onnxrl_episode_end(e, "ep-a", obs), ONNXRL_OK);
    EXPECT(onnxrl_episode_end_truncated(e, id, obs), ONNXRL_OK);

    /* An ended episode takes no more calls. */
    EXPECT(onnxrl_episode_get_action(e, "ep-a", obs, &act), ONNXRL_ERR_STATE);
    EXPECT_MSG("ep-a");
    EXPECT(onnxrl_episode_get_actions(e, ids, 1, obs, &act), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_log_action(e, "ep-a", obs, &one), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_log_returns(e, "ep-a", 1.0), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_end(e, "ep-a", obs), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_end_truncated(e, "ep-a", obs), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_end(e, id, obs), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_start(e, "ep-a", 1, NULL, 0), ONNXRL_ERR_STATE);

    /* A complete short episode with training off, and one left running (close ends it). */
    EXPECT(onnxrl_episode_start(e, "untrained", 0, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_get_action(e, "untrained", obs, &act), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_returns(e, "untrained", 1.0), ONNXRL_OK);
    EXPECT(onnxrl_episode_end(e, "untrained", obs), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "left-running", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_get_action(e, "left-running", obs, &act), ONNXRL_OK);
    EXPECT(onnxrl_episode_log_returns(e, "left-running", 1.0), ONNXRL_OK);

    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
    long size = file_size(out);
    CHECKF(size > 0, "out file %s: size %ld, want > 0", out, size);
    CHECKF(file_contains(out, "SampleBatch"), "out file %s does not contain \"SampleBatch\"", out);

    /* After close. */
    int64_t o, a;
    EXPECT(onnxrl_env_close(e), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_env_sizes(e, &o, &a), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_start(e, "after-close", 1, NULL, 0), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_get_action(e, "left-running", obs, &act), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_get_actions(e, ids, 1, obs, &act), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_log_action(e, "left-running", obs, &one), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_log_returns(e, "left-running", 1.0), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_end(e, "left-running", obs), ONNXRL_ERR_STATE);
    EXPECT(onnxrl_episode_end_truncated(e, "left-running", obs), ONNXRL_ERR_STATE);

    onnxrl_env *garbage = (onnxrl_env *)(uintptr_t)0x1234;
    EXPECT_EITHER(onnxrl_env_sizes(garbage, &o, &a), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_STATE);
    EXPECT_EITHER(onnxrl_episode_get_action(garbage, "x", obs, &act), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_STATE);
    EXPECT_EITHER(onnxrl_env_close(garbage), ONNXRL_ERR_INVALID_ARGUMENT, ONNXRL_ERR_STATE);
}

/* Greedy env actions are the greedy policy's actions for the same observations. */
static void test_env_greedy_matches_policy(void) {
    enum { N = 8 };
    onnxrl_env *e = NULL;
    onnxrl_policy *p = NULL;
    float obs[4 * N], want[N], got[N];
    cartpole_obs(obs, N, 77);
    EXPECT(onnxrl_policy_open("cartpole_mlp", NULL, &p), ONNXRL_OK);
    EXPECT(onnxrl_policy_act(p, obs, N, 0, want, NULL, NULL), ONNXRL_OK);
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"explore\": false, \"max_episodes\": 8}", &e), ONNXRL_OK);
    char ids[N][64];
    const char *id_ptrs[N];
    for (int i = 0; i < N; i++) {
        EXPECT(onnxrl_episode_start(e, NULL, 1, ids[i], sizeof ids[i]), ONNXRL_OK);
        id_ptrs[i] = ids[i];
    }
    EXPECT(onnxrl_episode_get_actions(e, id_ptrs, N, obs, got), ONNXRL_OK);
    CHECK(memcmp(want, got, sizeof want) == 0);
    for (int i = 0; i < N; i++) {
        float a = -7;
        EXPECT(onnxrl_episode_get_action(e, ids[i], obs + 4 * i, &a), ONNXRL_OK);
        CHECKF(a == want[i], "episode %d: greedy env action %g, policy %g", i, a, want[i]);
        EXPECT(onnxrl_episode_end(e, ids[i], obs + 4 * i), ONNXRL_OK);
    }
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
    EXPECT(onnxrl_policy_close(p), ONNXRL_OK);
}

/* An action that does not come within timeout_ms: with two episodes running and one asking, the
   sampler waits max_wait_us (2 s) for the other before it infers, longer than the 50 ms timeout. */
static void test_episode_timeout(void) {
    onnxrl_env *e = NULL;
    const float obs[4] = {0.01f, 0.02f, -0.01f, 0.0f};
    float act = -7;
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"max_episodes\": 4, \"max_wait_us\": 2000000, \"timeout_ms\": 50}", &e),
           ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "slow", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_start(e, "idle", 1, NULL, 0), ONNXRL_OK);
    EXPECT(onnxrl_episode_get_action(e, "slow", obs, &act), ONNXRL_ERR_TIMEOUT);
    EXPECT_MSG("slow");
    CHECK(act == -7);
    EXPECT(onnxrl_episode_end(e, "slow", obs), ONNXRL_OK);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

/* The episode API keeps the state of recurrent policies. */
static void test_env_recurrent(void) {
    onnxrl_env *e = NULL;
    int64_t o = 0, a = 0;
    EXPECT(onnxrl_env_open("lstm_policy", "{\"explore\": false}", &e), ONNXRL_OK);
    if (e == NULL)
        return;
    EXPECT(onnxrl_env_sizes(e, &o, &a), ONNXRL_OK);
    CHECK(o == 2 && a == 1);
    EXPECT(onnxrl_episode_start(e, "rnn", 1, NULL, 0), ONNXRL_OK);
    float obs[2] = {0.01f, 0.02f}, act = -7;
    int ok = 1;
    for (int t = 0; t < 10; t++) {
        ok &= onnxrl_episode_get_action(e, "rnn", obs, &act) == ONNXRL_OK && (act == 0.0f || act == 1.0f);
        ok &= onnxrl_episode_log_returns(e, "rnn", 1.0) == ONNXRL_OK;
        obs[1] += act == 1.0f ? 0.01f : -0.01f;
    }
    CHECK(ok);
    EXPECT(onnxrl_episode_end_truncated(e, "rnn", obs), ONNXRL_OK);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

/* native:cuda:0 where the driver library is missing: ONNXRL_ERR_DEVICE with a clear error
 * naming it, never a silent fallback to the host backend (main points
 * ONNXRL_CUDA_DRIVER_LIBRARY at a missing file); the env and the sampler say the same. */
static void test_policy_cuda_without_driver(void) {
    onnxrl_policy *p = NULL;
    int st = STATUS(onnxrl_policy_open("cartpole_mlp", "{\"device\": \"native:cuda:0\"}", &p));
    CHECKF(st == ONNXRL_ERR_DEVICE, "onnxrl_policy_open on native:cuda:0 without a driver: got %s \"%s\", want ONNXRL_ERR_DEVICE",
           onnxrl_status_name(st), g_err);
    if (st == ONNXRL_OK) {
        onnxrl_policy_close(p);
        return;
    }
    EXPECT_MSG("NVIDIA driver library was not found");
    EXPECT_MSG("/nonexistent-onnxrl-dir/libcuda.so.1");

    onnxrl_env *e = NULL;
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"device\": \"native:cuda:0\"}", &e), ONNXRL_ERR_DEVICE);
    onnxrl_sampler *s = NULL;
    EXPECT(onnxrl_sampler_open("{\"env\": \"CartPole-v1\", \"device\": \"native:cuda:0\"}", &s), ONNXRL_ERR_DEVICE);
    /* A runtime without ONNX Runtime's CUDA provider (the CPU build) cannot give "cuda". */
    st = STATUS(onnxrl_policy_open("cartpole_mlp", "{\"device\": \"cuda:0\"}", &p));
    if (st == ONNXRL_OK)
        onnxrl_policy_close(p); /* a GPU build of ONNX Runtime */
    else
        CHECKF(st == ONNXRL_ERR_DEVICE, "device cuda:0 on the CPU runtime: got %s \"%s\"", onnxrl_status_name(st), g_err);
}

/* "raise_gomaxprocs": false is accepted, and the env works without it. */
static void test_env_raise_gomaxprocs_off(void) {
    onnxrl_env *e = NULL;
    EXPECT(onnxrl_env_open("cartpole_mlp", "{\"raise_gomaxprocs\": false, \"explore\": false}", &e), ONNXRL_OK);
    if (e == NULL)
        return;
    EXPECT(onnxrl_episode_start(e, "procs", 1, NULL, 0), ONNXRL_OK);
    const float obs[4] = {0.01f, 0, 0.02f, 0};
    float act = -1;
    EXPECT(onnxrl_episode_get_action(e, "procs", obs, &act), ONNXRL_OK);
    CHECK(act == 0 || act == 1);
    EXPECT(onnxrl_env_close(e), ONNXRL_OK);
}

int main(void) {
    make_tmpdir();
    /* Before any session: the CUDA backend reads it once, when it first loads the driver. */
    setenv("ONNXRL_CUDA_DRIVER_LIBRARY", "/nonexistent-onnxrl-dir/libcuda.so.1", 1);

    test_abi_and_status_names();
    test_last_error_per_thread();
    test_policy_open_errors();
    test_policy_open_ok();
    test_policy_sizes();
    test_policy_act_arguments();
    test_policy_act_greedy();
    test_policy_act_explore_seeded();
    test_policy_act_outside_space();
    test_policy_act_pendulum();
    test_policy_without_value();
    test_policy_handles();
    test_env_open_errors();
    test_env_sizes();
    test_episode_start();
    test_episode_limits();
    test_episode_flow();
    test_episode_timeout();
    test_env_greedy_matches_policy();
    test_env_recurrent();
    test_policy_cuda_without_driver();
    test_env_raise_gomaxprocs_off();

    remove_tmpdir();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
