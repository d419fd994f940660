package wire

// Error codes: the "code" member of an error body {"error": "...", "code": "..."}, which the
// client maps back to externalenv's sentinel errors.
const (
	CodeBadRequest      = "bad_request"       // 400: malformed JSON, a missing member
	CodeBadObservation  = "bad_observation"   // 400: not in the observation space
	CodeBadAction       = "bad_action"        // 400: not in the action space
	CodeNotFound        = "not_found"         // 404: no such endpoint
	CodeEpisodeNotFound = "episode_not_found" // 404
	CodeMethod          = "method_not_allowed"
	CodeEpisodeExists   = "episode_exists"         // 409: already started
	CodeEpisodeDone     = "episode_done"           // 409: already ended
	CodeEpisodeBusy     = "episode_busy"           // 409: already waits for an action
	CodeTooLarge        = "body_too_large"         // 413
	CodeMediaType       = "unsupported_media_type" // 415: not Content-Type: application/json
	CodeUnauthorized    = "unauthorized"           // 401: no or a wrong bearer token
	CodeForbidden       = "forbidden"              // 403: a foreign Host or Origin
	CodeTooManyEpisodes = "too_many_episodes"      // 429
	CodeInternal        = "internal"               // 500
	CodeNotImplemented  = "not_implemented"        // 501: /v1/act without a policy
	CodeUnavailable     = "unavailable"            // 503: stopped or shutting down
	CodeTimeout         = "timeout"                // 504: no action in time
	CodeCanceled        = "canceled"               // 499: the client went away
)
