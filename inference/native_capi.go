package inference

// The runtime's C API entries the pinned onnxruntime_go lacks (GetEpDevices,
// SessionOptionsAppendExecutionProvider_V2, the EP graph assignment record), reached through
// the OrtApi table of the runtime the binding already loaded. This file is the only place that
// knows the table's layout and the binding's private struct layout; native_capi_test.go pins
// both against the pinned module's header and types, so a change there fails loudly.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Indices of the entries used, in OrtApi (version 24; the table only ever grows).
enum {
	ONNXRL_IDX_GetErrorMessage = 2,
	ONNXRL_IDX_CreateEnv = 3,
	ONNXRL_IDX_ReleaseStatus = 93,
	ONNXRL_IDX_GetEpDevices = 303,
	ONNXRL_IDX_SessionOptionsAppendExecutionProvider_V2 = 304,
	ONNXRL_IDX_EpDevice_EpName = 312,
	ONNXRL_IDX_Session_GetEpGraphAssignmentInfo = 407,
	ONNXRL_IDX_EpAssignedSubgraph_GetEpName = 408,
	ONNXRL_IDX_EpAssignedSubgraph_GetNodes = 409,
	ONNXRL_IDX_EpAssignedNode_GetName = 410,
	ONNXRL_IDX_EpAssignedNode_GetOperatorType = 412,
};
#define ONNXRL_ORT_API_VERSION 24

typedef struct {
	const void *(*GetApi)(uint32_t version);
	const char *(*GetVersionString)(void);
} onnxrl_api_base;

typedef void *onnxrl_status;
static void *const *onnxrl_api;
static void *onnxrl_env;

#define ONNXRL_FN(idx, type) ((type)onnxrl_api[idx])

// onnxrl_take_message turns a status into a malloc'ed message (NULL for success).
static char *onnxrl_take_message(onnxrl_status st) {
	if (st == NULL) return NULL;
	const char *m = ONNXRL_FN(ONNXRL_IDX_GetErrorMessage, const char *(*)(onnxrl_status))(st);
	char *out = strdup(m ? m : "unknown error");
	ONNXRL_FN(ONNXRL_IDX_ReleaseStatus, void (*)(onnxrl_status))(st);
	return out;
}

// onnxrl_capi_open finds the already loaded runtime and its process-wide environment.
static char *onnxrl_capi_open(const char *lib) {
	if (onnxrl_api != NULL) return NULL;
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	if (h == NULL) return strdup("the ONNX Runtime library is not loaded in this process");
	const onnxrl_api_base *(*get_base)(void) = (const onnxrl_api_base *(*)(void))dlsym(h, "OrtGetApiBase");
	if (get_base == NULL) return strdup("the ONNX Runtime library has no OrtGetApiBase");
	const onnxrl_api_base *base = get_base();
	void *const *api = (void *const *)base->GetApi(ONNXRL_ORT_API_VERSION);
	if (api == NULL) return strdup("the ONNX Runtime library does not offer C API version 24 (1.24)");
	onnxrl_api = api;
	// CreateEnv returns the process's existing environment (the binding's).
	onnxrl_status st = ONNXRL_FN(ONNXRL_IDX_CreateEnv, onnxrl_status (*)(int, const char *, void **))(3, "onnxrl", &onnxrl_env);
	if (st != NULL) {
		onnxrl_api = NULL;
		return onnxrl_take_message(st);
	}
	return NULL;
}

// onnxrl_capi_append appends the EP named ep_name (the first of its devices) to the session options.
static char *onnxrl_capi_append(void *so, const char *ep_name, const char **keys, const char **vals, size_t n) {
	const void *const *devs = NULL;
	size_t ndev = 0;
	onnxrl_status st = ONNXRL_FN(ONNXRL_IDX_GetEpDevices, onnxrl_status (*)(const void *, const void *const **, size_t *))(onnxrl_env, &devs, &ndev);
	if (st != NULL) return onnxrl_take_message(st);
	for (size_t i = 0; i < ndev; i++) {
		const char *name = ONNXRL_FN(ONNXRL_IDX_EpDevice_EpName, const char *(*)(const void *))(devs[i]);
		if (name == NULL || strcmp(name, ep_name) != 0) continue;
		st = ONNXRL_FN(ONNXRL_IDX_SessionOptionsAppendExecutionProvider_V2,
		               onnxrl_status (*)(void *, void *, const void *const *, size_t, const char *const *, const char *const *, size_t))(
		    so, onnxrl_env, &devs[i], 1, keys, vals, n);
		return onnxrl_take_message(st);
	}
	return strdup("the runtime lists no device for the execution provider (was the library registered?)");
}

// onnxrl_capi_assignment writes the session's assignment record as lines "ep\tnode\top\n"
// into a malloc'ed *out.
static char *onnxrl_capi_assignment(void *session, char **out) {
	const void *const *subs = NULL;
	size_t nsub = 0;
	*out = NULL;
	if (onnxrl_api == NULL) return strdup("the runtime's C API is not bound (onnxrl_capi_open)");
	onnxrl_status st = ONNXRL_FN(ONNXRL_IDX_Session_GetEpGraphAssignmentInfo, onnxrl_status (*)(const void *, const void *const **, size_t *))(session, &subs, &nsub);
	if (st != NULL) return onnxrl_take_message(st);
	size_t cap = 256, len = 0;
	char *buf = malloc(cap);
	if (buf == NULL) return strdup("out of memory");
	buf[0] = 0;
	for (size_t i = 0; i < nsub; i++) {
		const char *ep = NULL;
		st = ONNXRL_FN(ONNXRL_IDX_EpAssignedSubgraph_GetEpName, onnxrl_status (*)(const void *, const char **))(subs[i], &ep);
		if (st != NULL) { free(buf); return onnxrl_take_message(st); }
		const void *const *nodes = NULL;
		size_t nn = 0;
		st = ONNXRL_FN(ONNXRL_IDX_EpAssignedSubgraph_GetNodes, onnxrl_status (*)(const void *, const void *const **, size_t *))(subs[i], &nodes, &nn);
		if (st != NULL) { free(buf); return onnxrl_take_message(st); }
		for (size_t j = 0; j <= nn; j++) {
			// Line 0 of a subgraph is "#\tep"; then one "ep\tnode\top" line per node.
			const char *name = "#", *op = NULL;
			if (j > 0) {
				st = ONNXRL_FN(ONNXRL_IDX_EpAssignedNode_GetName, onnxrl_status (*)(const void *, const char **))(nodes[j - 1], &name);
				if (st != NULL) { free(buf); return onnxrl_take_message(st); }
				st = ONNXRL_FN(ONNXRL_IDX_EpAssignedNode_GetOperatorType, onnxrl_status (*)(const void *, const char **))(nodes[j - 1], &op);
				if (st != NULL) { free(buf); return onnxrl_take_message(st); }
			}
			if (name == NULL) name = "";
			size_t need = strlen(ep) + strlen(name) + (op ? strlen(op) : 0) + 8;
			if (len + need >= cap) {
				while (len + need >= cap) cap *= 2;
				char *nb = realloc(buf, cap);
				if (nb == NULL) { free(buf); return strdup("out of memory"); }
				buf = nb;
			}
			if (j == 0) {
				len += (size_t)snprintf(buf + len, cap - len, "#\t%s\n", ep);
			} else {
				len += (size_t)snprintf(buf + len, cap - len, "%s\t%s\t%s\n", ep, name, op ? op : "");
			}
		}
	}
	*out = buf;
	return NULL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

func takeCError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// capiOpen binds the runtime library that Init loaded (idempotent).
func capiOpen(lib string) error {
	c := C.CString(lib)
	defer C.free(unsafe.Pointer(c))
	return takeCError(C.onnxrl_capi_open(c))
}

// sessionOptionsPtr is the binding's OrtSessionOptions pointer: SessionOptions is
// struct{ o *C.OrtSessionOptions } (pinned by TestBindingLayout).
func sessionOptionsPtr(so *ort.SessionOptions) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(so))
}

// sessionPtr is the binding's OrtSession pointer: DynamicAdvancedSession is
// struct{ s *AdvancedSession } and AdvancedSession starts with ortSession *C.OrtSession
// (pinned by TestBindingLayout).
func sessionPtr(s *ort.DynamicAdvancedSession) unsafe.Pointer {
	adv := *(*unsafe.Pointer)(unsafe.Pointer(s))
	if adv == nil {
		return nil
	}
	return *(*unsafe.Pointer)(adv)
}

// capiAppend appends the execution provider named ep to so with the given options.
func capiAppend(so *ort.SessionOptions, ep string, opts map[string]string) error {
	cname := C.CString(ep)
	defer C.free(unsafe.Pointer(cname))
	n := len(opts)
	size := C.size_t(n+1) * C.size_t(unsafe.Sizeof(uintptr(0)))
	keys := (*[1 << 20]*C.char)(C.malloc(size))[: n+1 : n+1]
	vals := (*[1 << 20]*C.char)(C.malloc(size))[: n+1 : n+1]
	defer C.free(unsafe.Pointer(&keys[0]))
	defer C.free(unsafe.Pointer(&vals[0]))
	i := 0
	for k, v := range opts {
		keys[i], vals[i] = C.CString(k), C.CString(v)
		i++
	}
	defer func() {
		for j := 0; j < n; j++ {
			C.free(unsafe.Pointer(keys[j]))
			C.free(unsafe.Pointer(vals[j]))
		}
	}()
	return takeCError(C.onnxrl_capi_append(sessionOptionsPtr(so), cname, &keys[0], &vals[0], C.size_t(n)))
}

// AssignedNode is one node of the model as the runtime assigned it.
type AssignedNode struct {
	Name   string
	OpType string
}

// AssignedSubgraph is a group of nodes the runtime gave to one execution provider.
type AssignedSubgraph struct {
	Provider string
	Nodes    []AssignedNode
}

// capiAssignment reads the runtime's record of which provider runs which nodes. It binds the
// runtime's C API first: a session without the native provider (device cpu) has not.
func capiAssignment(s *ort.DynamicAdvancedSession) ([]AssignedSubgraph, error) {
	p := sessionPtr(s)
	if p == nil {
		return nil, ErrClosed
	}
	if err := capiOpen(LibraryPath()); err != nil {
		return nil, fmt.Errorf("reaching the runtime's C API: %w", err)
	}
	var out *C.char
	if err := takeCError(C.onnxrl_capi_assignment(p, &out)); err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(out))
	var subs []AssignedSubgraph
	for _, line := range strings.Split(C.GoString(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) == 2 && f[0] == "#" {
			subs = append(subs, AssignedSubgraph{Provider: f[1]})
			continue
		}
		if len(f) != 3 || len(subs) == 0 {
			return nil, errors.New("inference: malformed assignment record line " + strconv.Quote(line))
		}
		last := &subs[len(subs)-1]
		last.Nodes = append(last.Nodes, AssignedNode{Name: f[1], OpType: f[2]})
	}
	return subs, nil
}

// capiIndices are the OrtApi entries used and their indices, for TestOrtAPIIndices.
var capiIndices = map[string]int{
	"GetErrorMessage": C.ONNXRL_IDX_GetErrorMessage,
	"CreateEnv":       C.ONNXRL_IDX_CreateEnv,
	"ReleaseStatus":   C.ONNXRL_IDX_ReleaseStatus,
	"GetEpDevices":    C.ONNXRL_IDX_GetEpDevices,
	"SessionOptionsAppendExecutionProvider_V2": C.ONNXRL_IDX_SessionOptionsAppendExecutionProvider_V2,
	"EpDevice_EpName":                          C.ONNXRL_IDX_EpDevice_EpName,
	"Session_GetEpGraphAssignmentInfo":         C.ONNXRL_IDX_Session_GetEpGraphAssignmentInfo,
	"EpAssignedSubgraph_GetEpName":             C.ONNXRL_IDX_EpAssignedSubgraph_GetEpName,
	"EpAssignedSubgraph_GetNodes":              C.ONNXRL_IDX_EpAssignedSubgraph_GetNodes,
	"EpAssignedNode_GetName":                   C.ONNXRL_IDX_EpAssignedNode_GetName,
	"EpAssignedNode_GetOperatorType":           C.ONNXRL_IDX_EpAssignedNode_GetOperatorType,
}
