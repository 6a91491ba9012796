package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
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
// it has seen is answered as the first one was and sends nothing. Like
// them, it forgets keys: it keeps the newest mailerKeys with their emails,
// the oldest forgotten first, so that a service running for weeks on it
// keeps a bounded memory, and a request with a key forgotten sends again.
// It logs one line per email sent, with its idempotency key and nothing of
// the email itself. Tests read what it sent.
//
// With a URL (-mail-url) it keeps nothing: each Send POSTs the email as
// JSON ({"to","subject","body"}) with an Idempotency-Key header, and any
// answer but a 2xx (a redirect too: it is not followed) is an error,
// retried by the task. That URL is an
// email provider's API or a fake one.
type Mailer struct {
	log    *slog.Logger
	url    string       // empty: the emails stay in the process
	client *http.Client // with url

	mu       sync.Mutex
	requests int              // Send calls, repeated keys included
	sent     map[string]Email // by idempotency key, the newest mailerKeys
	keys     []string         // the keys of sent, oldest at next once full
	next     int
	// loseAnswers makes the next n requests fail after the email was
	// accepted, as a connection cut before the answer does (tests set it).
	loseAnswers int
}

// mailerKeys is how many idempotency keys the Mailer in the process
// remembers, with their emails: some 35 MB. That covers a receipt task's
// retries, whose last starts 6.5 days after its first attempt with the
// inbox's default backoff and attempts, while a service sends fewer than
// one receipt every six seconds; a busier one forgets a key sooner (as a
// provider does: Stripe's API keeps one for a day), and a retry
// after that, of an attempt whose email was sent but whose task failed,
// sends the email again.
const mailerKeys = 100_000

func newMailer(log *slog.Logger) *Mailer {
	return &Mailer{log: log, sent: map[string]Email{}}
}

// errAnswerLost is the error of a request whose answer a test dropped.
var errAnswerLost = errors.New("mailer: connection reset before the answer")

// checkMailURL accepts an http or https URL with a host, or none.
func checkMailURL(rawURL string) error {
	if rawURL == "" {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not quoted: it may hold a provider's key.
		return errors.New("-mail-url must be an http or https URL with a host")
	}
	return nil
}

// postingTo makes m POST each email to rawURL, which checkMailURL
// accepted; an empty one leaves m as it is.
func (m *Mailer) postingTo(rawURL string) *Mailer {
	if rawURL != "" {
		m.url = rawURL
		m.client = &http.Client{
			// A redirect has not sent the email: followed, a 302 would
			// turn the POST into a GET whose 2xx counts as sent.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return m
}

// Send sends e once per idempotency key.
func (m *Mailer) Send(ctx context.Context, idempotencyKey string, e Email) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.url != "" {
		return m.post(ctx, idempotencyKey, e)
	}
	m.mu.Lock()
	m.requests++
	_, repeated := m.sent[idempotencyKey]
	if !repeated {
		m.remember(idempotencyKey, e)
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

// remember keeps e under key, a key not kept, forgetting the oldest key
// once mailerKeys are kept. m.mu is held.
func (m *Mailer) remember(key string, e Email) {
	if len(m.keys) < mailerKeys {
		m.keys = append(m.keys, key)
	} else {
		delete(m.sent, m.keys[m.next])
		m.keys[m.next] = key
		m.next = (m.next + 1) % mailerKeys
	}
	m.sent[key] = e
}

// post sends e to m.url. Its errors name neither the URL nor the email.
func (m *Mailer) post(ctx context.Context, idempotencyKey string, e Email) error {
	body, err := json.Marshal(map[string]string{"to": e.To, "subject": e.Subject, "body": e.Body})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return errors.New("mailer: the request could not be made")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := m.client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("mailer: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection is reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("mailer: answered %d", resp.StatusCode)
	}
	m.log.InfoContext(ctx, "email sent", "idempotency_key", idempotencyKey)
	return nil
}

// Sent returns the emails sent whose keys it remembers (the newest
// mailerKeys), in no particular order, and how many requests asked for
// emails, all of them.
func (m *Mailer) Sent() (emails []Email, requests int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.sent {
		emails = append(emails, e)
	}
	return emails, m.requests
}
