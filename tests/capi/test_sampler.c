/*
 * Tests of the C API's sampler (onnxrl_sampler_*): open with `sample run`'s options, info,
 * sample with column views (names, dtypes, shapes, data), the Arrow C Data Interface export
 * (a struct array of the batch's rows, released by the consumer), metrics, errors and handle
 * lifetimes. Needs ONNX Runtime for the bundled policy. Prints "N passed, M failed" last and
 * exits non-zero on a failure.
 */
#include <onnxrl/sampler.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Arrow C Data Interface's ArrowSchema and ArrowArray, as its specification lays them out
   (https://arrow.apache.org/docs/format/CDataInterface.html). */
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

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

static const onnxrl_column *find(const onnxrl_column *cols, int64_t n, const char *name) {
    for (int64_t i = 0; i < n; i++) {
        if (strcmp(cols[i].name, name) == 0) return &cols[i];
    }
    return NULL;
}

static void test_errors(void) {
    onnxrl_sampler *s = (onnxrl_sampler *)1;
    CHECK(STATUS(onnxrl_sampler_open("{\"env\":\"NoSuchEnv-v0\"}", &s)) == ONNXRL_ERR_NOT_FOUND && s == NULL);
    CHECK(STATUS(onnxrl_sampler_open("{\"num_envs\":0}", &s)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_sampler_open("{\"bad_key\":1}", &s)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "bad_key") != NULL);
    CHECK(STATUS(onnxrl_sampler_open("{\"model\":\"no_such_model\"}", &s)) == ONNXRL_ERR_NOT_FOUND);
    CHECK(STATUS(onnxrl_sampler_open(NULL, NULL)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_sampler_close(NULL)) == ONNXRL_OK);
}

static void test_sample(void) {
    onnxrl_sampler *s = NULL;
    CHECK_OK(onnxrl_sampler_open("{\"env\":\"CartPole-v1\",\"num_envs\":3,\"fragment_length\":10,\"seed\":1}", &s));
    if (s == NULL) return;
    const char *info = NULL;
    size_t len = 0;
    CHECK_OK(onnxrl_sampler_info(s, &info, &len));
    CHECK(info != NULL && strlen(info) == len && strstr(info, "\"policies\":[\"default_policy\"]") != NULL);

    const onnxrl_column *cols = NULL;
    int64_t n = 0, rows = 0, env_steps = 0, agent_steps = 0;
    CHECK(STATUS(onnxrl_sampler_columns(s, 0, &cols, &n, &rows)) == ONNXRL_ERR_STATE); /* no batch yet */
    int64_t last_eps = -1;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(onnxrl_sampler_sample(s, &env_steps, &agent_steps));
        CHECK(env_steps == 30 && agent_steps == 30);
        CHECK_OK(onnxrl_sampler_columns(s, 0, &cols, &n, &rows));
        CHECK(rows == 30 && n >= 10);
        const onnxrl_column *obs = find(cols, n, "obs"), *act = find(cols, n, "actions"),
                            *term = find(cols, n, "terminateds"), *t = find(cols, n, "t"),
                            *eps = find(cols, n, "eps_id");
        CHECK(obs && obs->dtype == ONNXRL_DTYPE_FLOAT32 && obs->ndim == 2 && obs->shape[0] == 30 && obs->shape[1] == 4);
        CHECK(act && act->dtype == ONNXRL_DTYPE_INT64 && act->ndim == 1 && act->shape[0] == 30);
        CHECK(term && term->dtype == ONNXRL_DTYPE_BOOL && term->shape[0] == 30);
        CHECK(t && t->dtype == ONNXRL_DTYPE_INT32 && eps && eps->dtype == ONNXRL_DTYPE_INT64);
        if (!(obs && act && term && t && eps)) break;
        const int64_t *a = act->data;
        const uint8_t *tm = term->data;
        const float *o = obs->data;
        int ok = 1;
        for (int i = 0; i < 30; i++) {
            ok &= (a[i] == 0 || a[i] == 1) && tm[i] <= 1 && o[i * 4] > -5.f && o[i * 4] < 5.f;
        }
        CHECK(ok);
        /* Fragments cut the episodes: sub-environment 0's (the trained policy keeps the pole
           up) goes on in the next batch, with the same id. */
        CHECK(((const int32_t *)t->data)[0] == 10 * k);
        CHECK(last_eps == -1 || ((const int64_t *)eps->data)[0] == last_eps);
        last_eps = ((const int64_t *)eps->data)[0];

        struct ArrowArray arr;
        struct ArrowSchema sch;
        memset(&arr, 0xff, sizeof arr); /* the library zeroes them first */
        memset(&sch, 0xff, sizeof sch);
        CHECK_OK(onnxrl_sampler_export_arrow(s, &arr, &sch));
        CHECK(arr.length == 30 && arr.n_children == sch.n_children && sch.n_children >= 12);
        CHECK(strcmp(sch.format, "+s") == 0 && strcmp(sch.children[0]->name, "obs") == 0);
        /* obs is a fixed-size list whose child's values buffer is the batch's own array. */
        CHECK(arr.children[0]->n_children == 1 && arr.children[0]->children[0]->buffers[1] == obs->data);
        arr.release(&arr);
        sch.release(&sch);
        CHECK(arr.release == NULL && sch.release == NULL);
    }
    CHECK(STATUS(onnxrl_sampler_columns(s, 1, &cols, &n, &rows)) == ONNXRL_ERR_INVALID_ARGUMENT);
    CHECK(STATUS(onnxrl_sampler_columns(s, 0, NULL, &n, &rows)) == ONNXRL_ERR_INVALID_ARGUMENT);
    const char *m = NULL;
    CHECK_OK(onnxrl_sampler_metrics(s, &m, &len));
    CHECK(m != NULL && strstr(m, "\"num_env_steps_sampled_lifetime\":90") != NULL && strstr(m, "\"batches\":3") != NULL);
    CHECK_OK(onnxrl_sampler_close(s));
    CHECK(STATUS(onnxrl_sampler_close(s)) == ONNXRL_ERR_STATE);
    CHECK(STATUS(onnxrl_sampler_sample(s, NULL, NULL)) == ONNXRL_ERR_STATE);
}

static void test_workers(void) {
    onnxrl_sampler *s = NULL;
    CHECK_OK(onnxrl_sampler_open("{\"num_envs\":4,\"workers\":2,\"fragment_length\":5,\"model\":\"random\"}", &s));
    if (s == NULL) return;
    for (int k = 0; k < 4; k++) {
        int64_t env_steps = 0;
        CHECK_OK(onnxrl_sampler_sample(s, &env_steps, NULL));
        CHECK(env_steps == 10);
    }
    CHECK_OK(onnxrl_sampler_close(s)); /* stops the workers while they fill their next batches */
}

int main(void) {
    CHECK(sizeof(onnxrl_column) == 40);
    test_errors();
    test_sample();
    test_workers();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
