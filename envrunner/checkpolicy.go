package envrunner

// CheckPolicy binds cfg's policy as New binds it (its spec against the spaces given, the
// connectors, a session on cfg.Session's device whose outputs are probed), then releases it:
// for a model that runners will bind later, such as one `sample publish-policy` is about to
// hand to a fleet of workers. The error is New's for the same policy.
func CheckPolicy(id PolicyID, cfg PolicyConfig) error {
	p, err := newPolicy(id, cfg, 1)
	if err != nil {
		return err
	}
	return p.close()
}
