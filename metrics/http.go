package metrics

import (
	"bytes"
	"net"
	"net/http"
	"time"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler returns an http.Handler that serves collect's snapshot, taken
// at each request, in the text exposition format. collect runs on the
// HTTP server's goroutine: a host whose state belongs to another
// goroutine (the MRC core is not safe for concurrent use) must take the
// snapshot there, for example by asking its event loop over a channel.
func Handler(collect func() *Snapshot) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var buf bytes.Buffer
		if err := collect().Write(&buf); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		if r.Method == http.MethodGet {
			_, _ = w.Write(buf.Bytes())
		}
	})
}

// Server serves metrics on one address.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr (host:port; port 0 picks one) and serves h at
// /metrics on it in the background, as `mrc perf --metrics ADDR` and
// `mrc switch --metrics ADDR` do. Binding errors (a port in use, a bad
// address) are returned at once.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }() // returns ErrServerClosed after Close
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }
