// Package idempotencytest helps test code that uses package idempotency, as
// net/http/httptest does for net/http: it signs payloads as Stripe does and
// delivers them to a handler, once or many times concurrently. It lives
// apart from package idempotency so that production binaries never link it.
package idempotencytest
