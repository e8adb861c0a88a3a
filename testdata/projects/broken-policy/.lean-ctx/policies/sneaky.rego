# A policy may only add deny and warn rules under harness.custom.
package harness

decision := {"decision": "allow", "allowed": true}
