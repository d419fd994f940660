package spaces

// The tests were written against testify's assert and require, but the module's go.sum
// lacks the sums of testify's own dependencies (go-spew, go-difflib, yaml), so importing
// testify does not build. These two values provide the subset of that API the tests use,
// on the standard library only; swapping the imports back is all it takes to return.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

type checker struct{ fatal bool }

var (
	assert  = checker{fatal: false}
	require = checker{fatal: true}
)

func (c checker) fail(t testing.TB, msg string, msgAndArgs []any) bool {
	t.Helper()
	if len(msgAndArgs) > 0 {
		if f, ok := msgAndArgs[0].(string); ok {
			msg += ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
		} else {
			msg += ": " + fmt.Sprint(msgAndArgs...)
		}
	}
	if c.fatal {
		t.Fatal(msg)
	} else {
		t.Error(msg)
	}
	return false
}

func (c checker) Equal(t testing.TB, want, got any, msgAndArgs ...any) bool {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		return c.fail(t, fmt.Sprintf("not equal:\nwant %#v\n got %#v", want, got), msgAndArgs)
	}
	return true
}

func (c checker) NotEqual(t testing.TB, a, b any, msgAndArgs ...any) bool {
	t.Helper()
	if reflect.DeepEqual(a, b) {
		return c.fail(t, fmt.Sprintf("should differ, both are %#v", a), msgAndArgs)
	}
	return true
}

func (c checker) True(t testing.TB, v bool, msgAndArgs ...any) bool {
	t.Helper()
	if !v {
		return c.fail(t, "should be true", msgAndArgs)
	}
	return true
}

func (c checker) False(t testing.TB, v bool, msgAndArgs ...any) bool {
	t.Helper()
	if v {
		return c.fail(t, "should be false", msgAndArgs)
	}
	return true
}

func (c checker) NoError(t testing.TB, err error, msgAndArgs ...any) bool {
	t.Helper()
	if err != nil {
		return c.fail(t, fmt.Sprintf("unexpected error: %v", err), msgAndArgs)
	}
	return true
}

func (c checker) Error(t testing.TB, err error, msgAndArgs ...any) bool {
	t.Helper()
	if err == nil {
		return c.fail(t, "expected an error", msgAndArgs)
	}
	return true
}

func (c checker) ErrorAs(t testing.TB, err error, target any, msgAndArgs ...any) bool {
	t.Helper()
	if !errors.As(err, target) {
		return c.fail(t, fmt.Sprintf("error %v is not a %T", err, target), msgAndArgs)
	}
	return true
}

func (c checker) Contains(t testing.TB, s, sub string, msgAndArgs ...any) bool {
	t.Helper()
	if !strings.Contains(s, sub) {
		return c.fail(t, fmt.Sprintf("%q does not contain %q", s, sub), msgAndArgs)
	}
	return true
}

func (c checker) Nil(t testing.TB, v any, msgAndArgs ...any) bool {
	t.Helper()
	if v != nil && !(reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil()) {
		return c.fail(t, fmt.Sprintf("should be nil, got %#v", v), msgAndArgs)
	}
	return true
}

func (c checker) Zero(t testing.TB, v any, msgAndArgs ...any) bool {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		return c.fail(t, fmt.Sprintf("should be zero, got %v", v), msgAndArgs)
	}
	return true
}

func (c checker) Len(t testing.TB, v any, n int, msgAndArgs ...any) bool {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		return c.fail(t, fmt.Sprintf("length %d, want %d", l, n), msgAndArgs)
	}
	return true
}

func (c checker) InDelta(t testing.TB, want, got, delta float64, msgAndArgs ...any) bool {
	t.Helper()
	if math.IsNaN(got) || math.Abs(want-got) > delta {
		return c.fail(t, fmt.Sprintf("%v is not within %v of %v", got, delta, want), msgAndArgs)
	}
	return true
}

func (c checker) Same(t testing.TB, want, got any, msgAndArgs ...any) bool {
	t.Helper()
	if want != got {
		return c.fail(t, fmt.Sprintf("not the same pointer: %p and %p", want, got), msgAndArgs)
	}
	return true
}

func (c checker) Panics(t testing.TB, f func(), msgAndArgs ...any) (ok bool) {
	t.Helper()
	defer func() {
		t.Helper()
		if recover() != nil {
			ok = true
			return
		}
		ok = c.fail(t, "should panic", msgAndArgs)
	}()
	f()
	return false // not reached when f panics; the deferred call decides
}
