/*
 * Tests of the C API's vectorized built-in environments (onnxrl_vec_env_*): opening by name
 * with a config, sizes and spaces JSON, reset with seeds, stepping with next-step autoreset,
 * refused actions that leave the env usable, infos, NULL arguments and handle lifetimes; and
 * onnxrl_policy_space / onnxrl_env_space (those need ONNX Runtime: skipped without it). Prints "N passed, M failed" last and exits non-zero on a failure.
 */
#include <onnxrl/sampler.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_passed, g_failed;
static char g_err[4096];

static int record_status(int status) {
    snprintf(g_err, sizeof g_err, "%s", onnxrl_last_error());
    return status;
}

#define STATUS(call) record_status(call)
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            g_passed++;                                                        \
        } else {                                                               \
            g_failed++;                                                        \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, g_err); \
        }                                                                      \
    } while (0)
#define CHECK_OK(call) CHECK(STATUS(call) == ONNXRL_OK)

enum { N = 4, OBS = 4 };

/* The caller's buffers of one CartPole vector env. */
typedef struct {
    float obs[N * OBS];
    float actions[N];
    double rewards[N];
    uint8_t terminated[N], truncated[N];
    size_t infos_len;
} bufs;

static int step(onnxrl_vec_env *v, bufs *b) {
    return STATUS(onnxrl_vec_env_step(v, b->actions, b->obs, b->rewards, b->terminated, b->truncated, &b->infos_len));
}

static void test_open_and_spaces(void) {
    onnxrl_vec_env *v = (onnxrl_vec_env *)1;
    CHECK(STATUS(onnxrl_vec_env_open("NoSuchEnv-v0", NULL, 2, 0, &v)) == ONNXRL_ERR_NOT_FOUND && v == NULL);
    CHECK(strstr(g_err, "CartPole-v1") != NULL); /* the message lists the registered names */
    CHECK(STATUS(onnxrl_vec_env_open("CartPole-v1", NULL, 0, 0, &v)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_open("CartPole-v1", "{\"bad_key\":1}", 2, 0, &v)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "bad_key") != NULL);
    CHECK(STATUS(onnxrl_vec_env_open("MultiAgentCartPole", NULL, 2, 0, &v)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_open(NULL, NULL, 2, 0, &v)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_open("CartPole-v1", NULL, 2, 0, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);

    CHECK_OK(onnxrl_vec_env_open("Pendulum-v1", "{\"max_episode_steps\": 7}", 3, 0, &v));
    int64_t n = 0, o = 0, a = 0;
    CHECK_OK(onnxrl_vec_env_sizes(v, &n, &o, &a));
    CHECK(n == 3 && o == 3 && a == 1);
    size_t len = 0;
    CHECK_OK(onnxrl_vec_env_space(v, 1, NULL, 0, &len)); /* the length only */
    char small[8], buf[512];
    CHECK(STATUS(onnxrl_vec_env_space(v, 1, small, sizeof small, &len)) == ONNXRL_ERR_LIMIT && len > sizeof small);
    CHECK_OK(onnxrl_vec_env_space(v, 1, buf, sizeof buf, &len));
    CHECK(len == strlen(buf) && strstr(buf, "\"type\":\"Box\"") && strstr(buf, "\"shape\":[1]"));
    CHECK_OK(onnxrl_vec_env_space(v, 0, buf, sizeof buf, &len));
    CHECK(strstr(buf, "\"high\":[1,1,8]") != NULL);
    CHECK(STATUS(onnxrl_vec_env_space(v, 2, buf, sizeof buf, &len)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK_OK(onnxrl_vec_env_close(v));
    CHECK(STATUS(onnxrl_vec_env_close(v)) == ONNXRL_ERR_STATE);
    CHECK(STATUS(onnxrl_vec_env_sizes(v, &n, &o, &a)) == ONNXRL_ERR_STATE);
    CHECK_OK(onnxrl_vec_env_close(NULL));

    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", "", 1, 0, &v));
    CHECK_OK(onnxrl_vec_env_space(v, 0, buf, sizeof buf, &len));
    CHECK(strstr(buf, "\"inf\"") != NULL); /* CartPole's unbounded velocities */
    CHECK_OK(onnxrl_vec_env_space(v, 1, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "{\"type\":\"Discrete\",\"n\":2,\"start\":0}") == 0);
    CHECK_OK(onnxrl_vec_env_close(v));
}

/* Seeds: sub-environment i of a vector env opened with seed s starts as sub-environment 0
   of one opened with s + i; reset with seeds reseeds. */
static void test_seeds(void) {
    onnxrl_vec_env *v, *w;
    bufs b, c;
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", NULL, N, 40, &v));
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", NULL, 1, 42, &w));
    CHECK(STATUS(step(v, &b)) == ONNXRL_ERR_STATE); /* before the first reset */
    CHECK_OK(onnxrl_vec_env_reset(v, NULL, 0, b.obs, &b.infos_len));
    CHECK(b.infos_len == 0);
    CHECK_OK(onnxrl_vec_env_reset(w, NULL, 0, c.obs, NULL));
    CHECK(memcmp(b.obs + 2 * OBS, c.obs, OBS * sizeof(float)) == 0);
    uint64_t seed = 7, seeds[N] = {9, 8, 7, 6};
    CHECK_OK(onnxrl_vec_env_reset(v, &seed, 1, b.obs, NULL));
    CHECK_OK(onnxrl_vec_env_reset(w, seeds + 2, 1, c.obs, NULL));
    CHECK(memcmp(b.obs, c.obs, OBS * sizeof(float)) == 0); /* 7 + 0 and 7 */
    CHECK_OK(onnxrl_vec_env_reset(v, seeds, N, b.obs, NULL));
    CHECK(memcmp(b.obs + 2 * OBS, c.obs, OBS * sizeof(float)) == 0); /* seeds[2] = 7 */
    CHECK(STATUS(onnxrl_vec_env_reset(v, seeds, 2, b.obs, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_reset(v, NULL, 1, b.obs, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_reset(v, NULL, 0, NULL, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK_OK(onnxrl_vec_env_close(v));
    CHECK_OK(onnxrl_vec_env_close(w));
}

/* Next-step autoreset with a time limit of 2: step 2 truncates every sub-environment, step 3
   starts new episodes (reward 0, no flags, a new first observation), step 4 steps again. */
static void test_autoreset(void) {
    onnxrl_vec_env *v;
    bufs b;
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", "{\"max_episode_steps\": 2}", N, 3, &v));
    CHECK_OK(onnxrl_vec_env_reset(v, NULL, 0, b.obs, NULL));
    for (int i = 0; i < N; i++) b.actions[i] = (float)(i % 2);
    CHECK_OK(step(v, &b));
    CHECK(b.rewards[0] == 1 && !b.terminated[0] && !b.truncated[0]);
    CHECK_OK(step(v, &b));
    float last[N * OBS];
    memcpy(last, b.obs, sizeof last);
    int all = 1;
    for (int i = 0; i < N; i++) all = all && b.truncated[i] && !b.terminated[i] && b.rewards[i] == 1;
    CHECK(all);
    CHECK_OK(step(v, &b));
    all = 1;
    for (int i = 0; i < N; i++) {
        all = all && !b.truncated[i] && !b.terminated[i] && b.rewards[i] == 0;
        all = all && fabsf(b.obs[i * OBS]) < 0.05f && b.obs[i * OBS] != last[i * OBS];
    }
    CHECK(all);
    CHECK_OK(step(v, &b));
    CHECK(b.rewards[0] == 1 && b.rewards[N - 1] == 1 && !b.truncated[0]);

    /* A CartPole pushed one way falls: terminated, then autoreset. */
    CHECK_OK(onnxrl_vec_env_close(v));
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", NULL, N, 3, &v));
    CHECK_OK(onnxrl_vec_env_reset(v, NULL, 0, b.obs, NULL));
    for (int i = 0; i < N; i++) b.actions[i] = 1;
    int steps = 0;
    do {
        CHECK_OK(step(v, &b));
    } while (!b.terminated[0] && ++steps < 100);
    CHECK(b.terminated[0] && fabsf(b.obs[2]) > 0.2f); /* the pole's angle beyond 12 degrees */
    CHECK_OK(step(v, &b));
    CHECK(!b.terminated[0] && b.rewards[0] == 0 && fabsf(b.obs[2]) < 0.05f);
    CHECK_OK(onnxrl_vec_env_close(v));
}

/* A refused action changes nothing: the env then steps as a twin that never saw it. */
static void test_bad_actions(void) {
    onnxrl_vec_env *v, *w;
    bufs b, c;
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", NULL, N, 5, &v));
    CHECK_OK(onnxrl_vec_env_open("CartPole-v1", NULL, N, 5, &w));
    CHECK_OK(onnxrl_vec_env_reset(v, NULL, 0, b.obs, NULL));
    CHECK_OK(onnxrl_vec_env_reset(w, NULL, 0, c.obs, NULL));
    const float bad[] = {2, -1, 0.5f, NAN};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        for (int i = 0; i < N; i++) b.actions[i] = 0;
        b.actions[3] = bad[k];
        CHECK(step(v, &b) == ONNXRL_ERR_INVALID_ARGUMENT && strstr(g_err, "actions[3]") != NULL);
    }
    CHECK(memcmp(b.obs, c.obs, sizeof b.obs) == 0);
    for (int t = 0; t < 30; t++) {
        for (int i = 0; i < N; i++) b.actions[i] = c.actions[i] = (float)((i + t) % 2);
        CHECK_OK(step(v, &b));
        CHECK_OK(step(w, &c));
    }
    CHECK(memcmp(b.obs, c.obs, sizeof b.obs) == 0 && memcmp(b.rewards, c.rewards, sizeof b.rewards) == 0);
    CHECK(STATUS(onnxrl_vec_env_step(v, NULL, b.obs, b.rewards, b.terminated, b.truncated, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_vec_env_step(v, b.actions, b.obs, NULL, b.terminated, b.truncated, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    size_t len = 99;
    char buf[16];
    CHECK_OK(onnxrl_vec_env_infos(v, buf, sizeof buf, &len));
    CHECK(len == 0 && buf[0] == '\0'); /* the built-in environments report no infos */
    CHECK_OK(onnxrl_vec_env_close(v));
    CHECK_OK(onnxrl_vec_env_close(w));
}

/* onnxrl_policy_space and onnxrl_env_space (they need ONNX Runtime; skipped without it). */
static void test_policy_and_env_spaces(void) {
    onnxrl_policy *p = NULL;
    int st = STATUS(onnxrl_policy_open("cartpole_mlp", NULL, &p));
    if (st == ONNXRL_ERR_NOT_FOUND) {
        printf("skipping the policy and env spaces: %s\n", g_err);
        return;
    }
    CHECK(st == ONNXRL_OK);
    char buf[512];
    size_t len = 0;
    CHECK_OK(onnxrl_policy_space(p, 1, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "{\"type\":\"Discrete\",\"n\":2,\"start\":0}") == 0 && len == strlen(buf));
    CHECK_OK(onnxrl_policy_space(p, 0, buf, sizeof buf, &len));
    CHECK(strstr(buf, "\"shape\":[4]") != NULL);
    CHECK(STATUS(onnxrl_policy_space(p, 5, buf, sizeof buf, &len)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK_OK(onnxrl_policy_close(p));
    CHECK(STATUS(onnxrl_policy_space(p, 1, buf, sizeof buf, &len)) == ONNXRL_ERR_STATE);
    onnxrl_env *e = NULL;
    CHECK_OK(onnxrl_env_open("pendulum_gaussian", NULL, &e));
    CHECK_OK(onnxrl_env_space(e, 1, buf, sizeof buf, &len));
    CHECK(strstr(buf, "\"type\":\"Box\"") != NULL && strstr(buf, "\"shape\":[1]") != NULL);
    CHECK(STATUS(onnxrl_env_space(e, 1, buf, 4, &len)) == ONNXRL_ERR_LIMIT);
    CHECK_OK(onnxrl_env_close(e));
}

int main(void) {
    test_open_and_spaces();
    test_seeds();
    test_autoreset();
    test_bad_actions();
    test_policy_and_env_spaces();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
