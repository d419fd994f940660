// The parts of the C API that need no Go: the calling thread's last error message,
// onnxrl_abi_version, onnxrl_status_name, and the library's own path (for finding ONNX
// Runtime beside it).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnxrl/sampler.h"
#include "internal.h"

// Each thread's message lives in a malloc'd string under a pthread key (freed when the
// thread exits): no static TLS, which a library loaded with dlopen may not get much of.
static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;
static int error_key_ok;

static void make_error_key(void) { error_key_ok = pthread_key_create(&error_key, free) == 0; }

void capi_set_error(const char *msg, size_t n) {
    pthread_once(&error_once, make_error_key);
    if (!error_key_ok) return;
    char *old = pthread_getspecific(error_key);
    char *buf = malloc(n + 1);
    if (buf != NULL) {
        memcpy(buf, msg, n);
        buf[n] = '\0';
    }
    pthread_setspecific(error_key, buf); // NULL when out of memory: the message is ""
    free(old);
}

void capi_clear_error(void) {
    pthread_once(&error_once, make_error_key);
    if (!error_key_ok) return;
    char *old = pthread_getspecific(error_key);
    if (old != NULL) {
        pthread_setspecific(error_key, NULL);
        free(old);
    }
}

const char *onnxrl_last_error(void) {
    pthread_once(&error_once, make_error_key);
    if (!error_key_ok) return "onnxrl: no thread-specific storage for error messages";
    const char *msg = pthread_getspecific(error_key);
    return msg != NULL ? msg : "";
}

int onnxrl_abi_version(void) { return ONNXRL_ABI_VERSION; }

const char *onnxrl_status_name(int status) {
    switch (status) {
    case ONNXRL_OK: return "ONNXRL_OK";
    case ONNXRL_ERR_INVALID_ARGUMENT: return "ONNXRL_ERR_INVALID_ARGUMENT";
    case ONNXRL_ERR_NOT_FOUND: return "ONNXRL_ERR_NOT_FOUND";
    case ONNXRL_ERR_STATE: return "ONNXRL_ERR_STATE";
    case ONNXRL_ERR_MODEL: return "ONNXRL_ERR_MODEL";
    case ONNXRL_ERR_LIMIT: return "ONNXRL_ERR_LIMIT";
    case ONNXRL_ERR_TIMEOUT: return "ONNXRL_ERR_TIMEOUT";
    case ONNXRL_ERR_IO: return "ONNXRL_ERR_IO";
    case ONNXRL_ERR_INTERNAL: return "ONNXRL_ERR_INTERNAL";
    case ONNXRL_ERR_DEVICE: return "ONNXRL_ERR_DEVICE";
    }
    return "unknown status";
}

const char *capi_self_path(void) {
    Dl_info info;
    if (dladdr((void *)onnxrl_status_name, &info) == 0 || info.dli_fname == NULL) return "";
    return info.dli_fname;
}
