package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
)

// Email is one email the Mailer sent.
type Email struct {
	To      string // the account: the example keeps no addresses
	Subject string
	Body    string
}

// Mailer stands in for an email provider, in the process. Like Stripe's
// API and most email APIs it honours idempotency keys: a request whose key
// it has seen is answered as the first one was and sends nothing. It logs
// one line per email sent, with its idempotency key and nothing of the
// email itself. Tests read what it sent.
type Mailer struct {
	log *slog.Logger

	mu       sync.Mutex
	requests int              // Send calls, repeated keys included
	sent     map[string]Email // by idempotency key
	// loseAnswers makes the next n requests fail after the email was
	// accepted, as a connection cut before the answer does (tests set it).
	loseAnswers int
}

func newMailer(log *slog.Logger) *Mailer {
	return &Mailer{log: log, sent: map[string]Email{}}
}

// errAnswerLost is the error of a request whose answer a test dropped.
var errAnswerLost = errors.New("mailer: connection reset before the answer")

// Send sends e once per idempotency key.
func (m *Mailer) Send(ctx context.Context, idempotencyKey string, e Email) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.requests++
	_, repeated := m.sent[idempotencyKey]
	if !repeated {
		m.sent[idempotencyKey] = e
	}
	lost := m.loseAnswers > 0
	if lost {
		m.loseAnswers--
	}
	m.mu.Unlock()
	if repeated {
		m.log.DebugContext(ctx, "email request repeated; not sent again", "idempotency_key", idempotencyKey)
	} else {
		m.log.InfoContext(ctx, "email sent", "idempotency_key", idempotencyKey)
	}
	if lost {
		return errAnswerLost
	}
	return nil
}

// Sent returns the emails sent, in no particular order, and how many
// requests asked for them.
func (m *Mailer) Sent() (emails []Email, requests int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.sent {
		emails = append(emails, e)
	}
	return emails, m.requests
}
