package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A sender that sends its headers and then stalls in the body loses its
// connection after readTimeout, instead of holding it and a goroutine for
// as long as it likes.
func TestRunDropsAStalledBody(t *testing.T) {
	old := readTimeout
	readTimeout = 300 * time.Millisecond
	t.Cleanup(func() { readTimeout = old })
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": secret}
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard)
	defer func() { require.NoError(t, stop()) }()

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\":")
	require.NoError(t, err)
	// Only a guard against a hang: the server should end the exchange
	// well before it.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode, "a partial body was acknowledged")
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server held the stalled connection open")
	}
}
