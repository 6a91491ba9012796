package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// mailbox is the fake email provider the workers POST the receipts to
// (examples/server's -mail-url): it records each POST's Idempotency-Key
// and the invoice its subject names, and answers 200.
type mailbox struct {
	mu       sync.Mutex
	posts    int
	keys     map[string]int    // Idempotency-Key → POSTs with it
	invoices map[string]string // Idempotency-Key → the invoice its email is the receipt of
	refused  int               // POSTs without a key, or whose email names no invoice
}

func newMailbox() *mailbox {
	return &mailbox{keys: map[string]int{}, invoices: map[string]string{}}
}

// receiptSubject begins the subject of examples/server's receipt email,
// the invoice's id following it.
const receiptSubject = "Receipt for invoice "

func (m *mailbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var email struct {
		Subject string `json:"subject"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get("Idempotency-Key")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.posts++
	if r.Method != http.MethodPost || err != nil || key == "" || json.Unmarshal(body, &email) != nil ||
		!strings.HasPrefix(email.Subject, receiptSubject) {
		m.refused++
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	m.keys[key]++
	m.invoices[key] = strings.TrimPrefix(email.Subject, receiptSubject)
	w.WriteHeader(http.StatusOK)
}

// perInvoice returns the distinct keys of each invoice's emails, and how
// many POSTs repeated a key already seen.
func (m *mailbox) perInvoice() (keys map[string]int, repeats int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys = map[string]int{}
	for key, n := range m.keys {
		keys[m.invoices[key]]++
		repeats += n - 1
	}
	return keys, repeats
}
