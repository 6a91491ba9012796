package dashboard

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// sentForms remembers for a while where each action's form sent the
// browser, so that the same form sent again (a double click, a resend
// after the back button) is answered as it was the first time, instead of
// acting again: the page then says what was done, not "nothing redriven"
// or "nothing to forget". A form is the same when every field is, its
// token too: each page writes a new token into its forms.
type sentForms struct {
	mu    sync.Mutex
	forms map[[sha256.Size]byte]*sentForm
}

// sentForm is one form's submission: done is closed once it is answered,
// with loc its redirect (empty when it failed, and it is then forgotten).
type sentForm struct {
	done chan struct{}
	loc  string
	at   time.Time
}

const (
	// sentFormsFor is how long a form is remembered.
	sentFormsFor = 10 * time.Minute
	// maxSentForms bounds the forms remembered; past it a form is acted
	// on without being remembered.
	maxSentForms = 10000
)

// begin returns the submission of the form key and whether this is its
// first (nil and true when none can be remembered).
func (s *sentForms) begin(key string, now time.Time) (*sentForm, bool) {
	h := sha256.Sum256([]byte(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.forms[h]; ok && now.Sub(f.at) < sentFormsFor {
		return f, false
	}
	if len(s.forms) >= maxSentForms {
		for k, f := range s.forms {
			if now.Sub(f.at) >= sentFormsFor {
				delete(s.forms, k)
			}
		}
		if len(s.forms) >= maxSentForms {
			return nil, true
		}
	}
	if s.forms == nil {
		s.forms = map[[sha256.Size]byte]*sentForm{}
	}
	f := &sentForm{done: make(chan struct{}), at: now}
	s.forms[h] = f
	return f, true
}

// finish answers the first submission of key with loc, or forgets it
// when it failed (loc empty), so that sending it again acts.
func (s *sentForms) finish(key string, f *sentForm, loc string) {
	if loc == "" {
		h := sha256.Sum256([]byte(key))
		s.mu.Lock()
		if s.forms[h] == f {
			delete(s.forms, h)
		}
		s.mu.Unlock()
	}
	f.loc = loc
	close(f.done)
}

// statusWriter records the status an action answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}
