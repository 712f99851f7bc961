package servicetest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// ToxiproxyEnv names the variable that holds the base URL of a toxiproxy
// server's HTTP API (scripts/services.sh starts one).
const ToxiproxyEnv = "ORGADMIN_TOXIPROXY_URL"

// toxiproxy is a client of a toxiproxy server's HTTP API
// (github.com/Shopify/toxiproxy, v2).
type toxiproxy struct {
	base string
	hc   *http.Client
}

// connect returns a client of the toxiproxy server of ToxiproxyEnv, or
// skips t.
func connect(t testing.TB) *toxiproxy {
	t.Helper()
	base := os.Getenv(ToxiproxyEnv)
	if base == "" {
		t.Skip(ToxiproxyEnv + " not set; scripts/test.sh starts a toxiproxy server")
	}
	return &toxiproxy{base: strings.TrimSuffix(base, "/"), hc: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body (JSON, unless nil) to the API and decodes the answer into
// out (unless nil). Any status but 200, 201 and 204 is an error.
func (tp *toxiproxy) call(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, tp.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tp.hc.Do(req)
	if err != nil {
		return fmt.Errorf("toxiproxy: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("toxiproxy: %s %s: %w", method, path, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
	default:
		return fmt.Errorf("toxiproxy: %s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("toxiproxy: %s %s: %w", method, path, err)
		}
	}
	return nil
}

// proxy is one proxy of the toxiproxy server: it listens on a loopback
// port of its own and forwards to one upstream address.
type proxy struct {
	tp       *toxiproxy
	name     string
	listen   string
	upstream string
}

// newProxy creates a proxy to upstream, deleted when t ends.
func (tp *toxiproxy) newProxy(t testing.TB, upstream string) *proxy {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	in := map[string]any{
		"name":     "orgadmin-" + hex.EncodeToString(b[:]),
		"listen":   "127.0.0.1:0",
		"upstream": upstream,
		"enabled":  true,
	}
	var out struct {
		Name   string `json:"name"`
		Listen string `json:"listen"`
	}
	if err := tp.call(http.MethodPost, "/proxies", in, &out); err != nil {
		t.Fatal(err)
	}
	p := &proxy{tp: tp, name: out.Name, listen: out.Listen, upstream: upstream}
	t.Cleanup(func() {
		if err := tp.call(http.MethodDelete, "/proxies/"+p.name, nil, nil); err != nil {
			t.Error(err)
		}
	})
	return p
}

// toxic is a fault toxiproxy applies to the data of one direction
// ("upstream": towards the server, "downstream": its answers).
type toxic struct {
	Name       string           `json:"name"`
	Type       string           `json:"type"`
	Stream     string           `json:"stream"`
	Toxicity   float64          `json:"toxicity"`
	Attributes map[string]int64 `json:"attributes"`
}

// add adds x to the proxy: it applies to the connections open now and to
// new ones.
func (p *proxy) add(x toxic) error {
	if x.Toxicity == 0 {
		x.Toxicity = 1
	}
	return p.tp.call(http.MethodPost, "/proxies/"+p.name+"/toxics", x, nil)
}

// remove removes the toxic named name.
func (p *proxy) remove(name string) error {
	return p.tp.call(http.MethodDelete, "/proxies/"+p.name+"/toxics/"+name, nil, nil)
}

// enable turns the proxy on or off. Off, it closes every connection and
// refuses new ones; on again, it listens on the same address.
func (p *proxy) enable(on bool) error {
	return p.tp.call(http.MethodPost, "/proxies/"+p.name, map[string]bool{"enabled": on}, nil)
}
