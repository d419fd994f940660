// Package connectors turns environment observations into the rows of a policy's input batch
// (agent connectors) and the policy's outputs back into per-agent actions, log-probabilities
// and RNN states (action connectors), as RLlib's connectors do, working on batch rows in
// place.
package connectors
