package env

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is an environment's configuration: values from JSON (float64, bool, string, ...) or
// from the command line (strings, parsed on access by the typed getters).
type Config map[string]any

// ParseConfig parses the CLI's --env-config: a JSON object ({"key": value, ...}, values
// decoded as JSON), or "key=value,key=value" pairs whose values stay strings. A pair's value
// may itself hold commas inside JSON brackets or quotes
// (observation_space={"type":"Box","shape":[3]},episode_len=10).
func ParseConfig(s string) (Config, error) {
	cfg := Config{}
	t := strings.TrimSpace(s)
	if t == "" {
		return cfg, nil
	}
	if strings.HasPrefix(t, "{") {
		if err := json.Unmarshal([]byte(t), &cfg); err != nil {
			return nil, fmt.Errorf("env: config JSON: %w", err)
		}
		if cfg == nil {
			cfg = Config{}
		}
		return cfg, nil
	}
	for _, kv := range splitTopLevel(t) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("env: config entry %q: want key=value (or a JSON object)", kv)
		}
		if _, dup := cfg[k]; dup {
			return nil, fmt.Errorf("env: config key %q given twice", k)
		}
		cfg[k] = strings.TrimSpace(v)
	}
	return cfg, nil
}

// splitTopLevel splits s at the commas that are outside JSON brackets, braces and strings.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case (c == '}' || c == ']') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// Check returns an error naming the first key of c that is not among known.
func (c Config) Check(known ...string) error {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return fmt.Errorf("env: unknown config key %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// Int returns the integer value of key, or def when it is absent.
func (c Config) Int(key string, def int) (int, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("env: config %s: want an integer, got %v", key, x)
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(x)
		if err != nil {
			return 0, fmt.Errorf("env: config %s: want an integer, got %q", key, x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("env: config %s: want an integer, got %T", key, v)
}

// Float returns the float value of key, or def when it is absent.
func (c Config) Float(key string, def float64) (float64, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("env: config %s: want a number, got %q", key, x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("env: config %s: want a number, got %T", key, v)
}

// Bool returns the boolean value of key, or def when it is absent.
func (c Config) Bool(key string, def bool) (bool, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return false, fmt.Errorf("env: config %s: want true or false, got %q", key, x)
		}
		return b, nil
	}
	return false, fmt.Errorf("env: config %s: want true or false, got %T", key, v)
}

// String returns the string value of key, or def when it is absent.
func (c Config) String(key string, def string) (string, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("env: config %s: want a string, got %T", key, v)
}

// Duration returns the duration value of key ("5ms", or a number of seconds), or def when
// it is absent.
func (c Config) Duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	if s, ok := v.(string); ok {
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
	}
	f, err := c.Float(key, 0)
	if err != nil {
		return 0, fmt.Errorf("env: config %s: want a duration like 5ms or a number of seconds, got %v", key, v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// Maker makes an environment from its configuration. It returns an Env, a MultiAgentEnv, a
// VectorEnv or a BaseEnv.
type Maker func(cfg Config) (any, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Maker{}
)

// Register makes an environment available by name. It panics if maker is nil or the name is
// already registered (as sql.Register does).
func Register(name string, maker Maker) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if maker == nil {
		panic("env: Register maker is nil")
	}
	if _, dup := registry[name]; dup {
		panic("env: Register called twice for " + name)
	}
	registry[name] = maker
}

// Names returns the registered environment names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Make makes the environment registered under name with cfg (nil: the defaults). The
// Environment says which kind it is and returns it as that kind:
//
//	made, err := env.Make("CartPole-v1", env.Config{"max_episode_steps": 200})
//	cartPole := made.Env() // nil for a multi-agent or vectorized environment
func Make(name string, cfg Config) (Environment, error) {
	registryMu.RLock()
	maker, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return Environment{}, fmt.Errorf("env: unknown environment %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	if cfg == nil {
		cfg = Config{}
	}
	v, err := maker(cfg)
	if err != nil {
		return Environment{}, fmt.Errorf("env: make %s: %w", name, err)
	}
	e, err := newEnvironment(v)
	if err != nil {
		return Environment{}, fmt.Errorf("env: make %s: %w", name, err)
	}
	return e, nil
}
