package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// goPrefixes are the package prefixes of the errors the server's answers carry: the Go
// names mean nothing to a client in another language (issue: "wire:", "server:").
var goPrefixes = strings.NewReplacer(
	"externalenv: ", "", "server: ", "", "wire: ", "", "spaces: ", "", "connectors: ", "",
	"envrunner: ", "", "inference: ", "", "models: ", "", "output: ", "",
)

// publicMessage is err's text as the protocol says it: without Go package prefixes.
func publicMessage(err error) string {
	return goPrefixes.Replace(err.Error())
}

// jsonProblem says what is wrong with a JSON value that encoding/json could not decode into
// want, in JSON's words: encoding/json's own message names Go types ("cannot unmarshal
// number into Go value of type env.Info").
func jsonProblem(err error, want string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("want %s, got a JSON %s", want, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	}
	return "want " + want
}
