/*
 * A downstream program built against the installed onnxrl sampler (find_package
 * (onnxrl_sampler), target onnxrl::sampler): checks the library's ABI version against the
 * header's, opens the bundled CartPole policy and acts greedily on one observation.
 * Prints "downstream ok action=<a>" and returns 0, or a message and 1.
 */
#include <onnxrl/sampler.h>

#include <stdio.h>

static int fail(const char *what, int status) {
    char message[1024]; /* copied first: the message is valid until this thread's next call */
    snprintf(message, sizeof message, "%s", onnxrl_last_error());
    fprintf(stderr, "downstream: %s: %s: %s\n", what, onnxrl_status_name(status), message);
    return 1;
}

int main(void) {
    int abi = onnxrl_abi_version();
    if (abi != ONNXRL_ABI_VERSION) {
        fprintf(stderr, "downstream: library ABI version %d, header %d\n", abi, ONNXRL_ABI_VERSION);
        return 1;
    }

    onnxrl_policy *policy = NULL;
    int st = onnxrl_policy_open("cartpole_mlp", NULL, &policy);
    if (st != ONNXRL_OK)
        return fail("onnxrl_policy_open(cartpole_mlp)", st);

    int64_t obs_size = 0, action_size = 0;
    st = onnxrl_policy_sizes(policy, &obs_size, &action_size);
    if (st != ONNXRL_OK) {
        onnxrl_policy_close(policy);
        return fail("onnxrl_policy_sizes", st);
    }
    if (obs_size != 4 || action_size != 1) {
        fprintf(stderr, "downstream: cartpole_mlp sizes obs %lld action %lld, want 4 and 1\n", (long long)obs_size,
                (long long)action_size);
        onnxrl_policy_close(policy);
        return 1;
    }

    const float obs[4] = {0.01f, -0.02f, 0.03f, 0.04f};
    float action = -1.0f;
    st = onnxrl_policy_act(policy, obs, 1, 0, &action, NULL, NULL);
    if (st != ONNXRL_OK) {
        onnxrl_policy_close(policy);
        return fail("onnxrl_policy_act", st);
    }
    st = onnxrl_policy_close(policy);
    if (st != ONNXRL_OK)
        return fail("onnxrl_policy_close", st);
    if (action != 0.0f && action != 1.0f) {
        fprintf(stderr, "downstream: action %g is not 0 or 1\n", action);
        return 1;
    }
    printf("downstream ok action=%d\n", (int)action);
    return 0;
}
