package mcpproxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpTestServer starts the test server on streamable HTTP on loopback
// and returns its URL.
func httpTestServer(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(serverBin)
	cmd.Env = append(cmd.Environ(), append(env, "HTTP_ADDR=127.0.0.1:0")...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// The proxy in front of a remote server: stdio to the client, streamable
// HTTP to the server (event streams, JSON bodies, stateless), guarded alike.
func TestRemoteServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"sse-session", nil},
		{"json-session", []string{"HTTP_JSON=1"}},
		{"stateless", []string{"HTTP_STATELESS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := httpTestServer(t, tc.env...)
			s := start(t, nil, "--url", u)
			s.initialize()
			list := s.request("tools/list", map[string]any{})
			require.NotNil(t, list["result"], "%v", list)
			args := map[string]any{"path": "/etc/hosts"}
			var got []string
			for range 4 {
				got = append(got, verdict(s.call("read_file", args)))
			}
			assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
			assert.Equal(t, "got 3 bytes", resultText(s.call("echo_size", map[string]any{"blob": "abc"})))
			require.Equal(t, ExitOK, s.stop())
		})
	}
}

// A server that cannot be reached: each request gets an error, the proxy
// stays up.
func TestRemoteServerDown(t *testing.T) {
	s := start(t, nil, "--url", "http://127.0.0.1:1/mcp", "--grace", "100ms")
	m := s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	require.NotNil(t, m["error"], "%v", m)
	assert.Contains(t, m["error"].(map[string]any)["message"], "the MCP server at http://127.0.0.1:1/mcp")
	var out, errOut strings.Builder
	assert.Equal(t, ExitBadInput, Main([]string{"--url", "ftp://x"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Equal(t, ExitBadInput, Main([]string{"--url", "http://x", "--", "y"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Equal(t, ExitBadInput, Main([]string{"--client-id", "x", "--", "y"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Equal(t, ExitBadInput, Main([]string{"--url", "http://x", "--redirect-port", "70000"}, Env{Stdout: &out, Stderr: &errOut}))
}

// authServer is an OAuth authorization server on loopback for the test:
// dynamic registration, the authorization code with PKCE (S256) and the
// resource indicator, approved at once, and the token endpoint.
func authServer(t *testing.T, resource *string, token string) *httptest.Server {
	return authServerWith(t, resource, token, asOptions{register: true})
}

// asOptions are the ways a client may identify itself to authServerWith.
type asOptions struct {
	register bool // dynamic client registration, as client-1
	// preID and preSecret are a client registered by hand; preMethod is
	// how it must authenticate: client_secret_basic or client_secret_post
	// (a public client when preSecret is "").
	preID, preSecret, preMethod string
	redirect                    string // the pre-registered client's only redirect URI; "" any loopback one
	// metadata: the server reads client ID metadata documents over
	// metaClient (which trusts the test's TLS server).
	metadata   bool
	metaClient *http.Client
}

// authServerWith is authServer with the client identification of o. Each
// client is checked where OAuth checks it: its id and redirect URI at the
// authorization endpoint, its secret at the token endpoint.
func authServerWith(t *testing.T, resource *string, token string, o asOptions) *httptest.Server {
	var mu sync.Mutex
	challenges := map[string]string{} // code → challenge
	mux := http.NewServeMux()
	var ts *httptest.Server
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		meta := map[string]any{
			"issuer": ts.URL, "authorization_endpoint": ts.URL + "/authorize", "token_endpoint": ts.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"},
		}
		if o.register {
			meta["registration_endpoint"] = ts.URL + "/register"
		}
		if o.metadata {
			meta["client_id_metadata_document_supported"] = true
		}
		if o.preMethod != "" {
			meta["token_endpoint_auth_methods_supported"] = []string{"none", o.preMethod}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(meta)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if !o.register || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.RedirectURIs) != 1 || !strings.HasPrefix(req.RedirectURIs[0], "http://127.0.0.1:") {
			http.Error(w, "bad registration", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"client_id":"client-1"}`))
	})
	// knownClient reports whether the client id may use redirect.
	knownClient := func(id, redirect string) bool {
		switch {
		case o.register && id == "client-1":
			return true
		case o.preID != "" && id == o.preID:
			return o.redirect == "" || redirect == o.redirect
		case !o.metadata || !strings.HasPrefix(id, "https://"):
			return false
		}
		// A client ID metadata document: fetched from its URL, naming
		// itself, listing the redirect URI (a loopback one on any port).
		resp, err := o.metaClient.Get(id)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var doc struct {
			ClientID     string   `json:"client_id"`
			RedirectURIs []string `json:"redirect_uris"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&doc) != nil || doc.ClientID != id {
			return false
		}
		u, err := url.Parse(redirect)
		if err != nil {
			return false
		}
		return slices.Contains(doc.RedirectURIs, "http://"+u.Hostname()+u.Path) || slices.Contains(doc.RedirectURIs, redirect)
	}
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !knownClient(q.Get("client_id"), q.Get("redirect_uri")) || q.Get("code_challenge_method") != "S256" || q.Get("resource") != *resource {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		mu.Lock()
		challenges["code-1"] = q.Get("code_challenge")
		mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=code-1&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		challenge := challenges[r.PostForm.Get("code")]
		mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if r.PostForm.Get("grant_type") != "authorization_code" || challenge == "" ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != challenge || r.PostForm.Get("resource") != *resource {
			http.Error(w, "bad token request", http.StatusBadRequest)
			return
		}
		if o.preSecret != "" {
			id, secret, basic := r.BasicAuth()
			if o.preMethod == "client_secret_post" {
				id, secret, basic = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), false
			}
			if basic {
				id, _ = url.QueryUnescape(id)
				secret, _ = url.QueryUnescape(secret)
			}
			if id != o.preID || secret != o.preSecret {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"` + token + `","token_type":"Bearer","expires_in":3600,"refresh_token":"refresh-1"}`))
	})
	ts = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// approve is the user's browser: it follows the authorization page's
// redirects to the proxy's loopback, and counts the pages opened.
func approve(opened *int) func(string) error {
	return func(u string) error {
		*opened++
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("authorize: %s", resp.Status)
		}
		return nil
	}
}

// A client registered by hand (--client-id, the secret in the
// environment) and a client ID metadata document: the authorization
// servers below offer no registration, so only these work.
func TestRemoteServerOAuthClients(t *testing.T) {
	doc := httptest.NewUnstartedServer(nil)
	doc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"toolguard mcp-proxy","redirect_uris":["http://127.0.0.1/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
			"https://"+r.Host+r.URL.Path)
	})
	doc.StartTLS()
	t.Cleanup(doc.Close)
	metaURL := doc.URL + "/toolguard-client.json"
	port := freePort(t)
	for _, tc := range []struct {
		name   string
		o      asOptions
		args   []string
		secret string
	}{
		{"pre-registered public", asOptions{preID: "desk-app"}, []string{"--client-id", "desk-app"}, ""},
		{"pre-registered basic", asOptions{preID: "desk app:1", preSecret: "s3cr:t", preMethod: "client_secret_basic"}, []string{"--client-id", "desk app:1"}, "s3cr:t"},
		{"pre-registered post", asOptions{preID: "desk-app", preSecret: "s3cret", preMethod: "client_secret_post"}, []string{"--client-id", "desk-app"}, "s3cret"},
		{"client ID metadata document", asOptions{metadata: true, metaClient: doc.Client()}, []string{"--client-id", metaURL}, ""},
		{"fixed redirect port", asOptions{preID: "desk-app", redirect: "http://127.0.0.1:" + port + "/callback"}, []string{"--client-id", "desk-app", "--redirect-port", port}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resource string
			as := authServerWith(t, &resource, "token-2", tc.o)
			resource = httpTestServer(t, "HTTP_TOKENS=token-2", "HTTP_AS="+as.URL)
			dir := t.TempDir()
			opened := 0
			env := Env{OAuthDir: dir, OpenURL: approve(&opened), Getenv: func(k string) string {
				if k == ClientSecretEnv {
					return tc.secret
				}
				return ""
			}}
			s := startEnv(t, nil, env, append([]string{"--url", resource}, tc.args...)...)
			s.initialize()
			var got []string
			for range 3 {
				got = append(got, verdict(s.call("read_file", map[string]any{"path": "/etc/hosts"})))
			}
			assert.Equal(t, []string{"allow", "allow", "hint"}, got, s.stderr.String())
			require.Equal(t, ExitOK, s.stop())
			assert.Equal(t, 1, opened)
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			require.Len(t, files, 1)
			data, _ := os.ReadFile(files[0])
			assert.Contains(t, string(data), `"access_token":"token-2"`)
			if tc.secret != "" {
				assert.NotContains(t, string(data), tc.secret, "the client secret is not kept")
			}
		})
	}

	// Without registration, a document or a client id, the error says what
	// to give.
	t.Run("no way to identify", func(t *testing.T) {
		var resource string
		as := authServerWith(t, &resource, "token-2", asOptions{preID: "desk-app"})
		resource = httpTestServer(t, "HTTP_TOKENS=token-2", "HTTP_AS="+as.URL)
		s := startEnv(t, nil, Env{OAuthDir: t.TempDir(), OpenURL: approve(new(int))}, "--url", resource)
		m := s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "test", "version": "1"}})
		require.NotNil(t, m["error"], "%v", m)
		assert.Contains(t, s.stderr.String()+fmt.Sprint(m["error"]), "--client-id")
	})
}

// freePort returns a loopback port that was free a moment ago.
// freePort returns a loopback port that is free now, for a test of a
// fixed port. It is taken below Linux's ephemeral range (32768 and up), so
// the listeners that other tests open on port 0 meanwhile cannot take it
// before the proxy binds it.
func freePort(t *testing.T) string {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return fmt.Sprint(port)
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000 in 100 tries")
	return ""
}

// A remote server that asks for authorization: the proxy runs MCP's OAuth
// flow once (the "browser" follows the redirects), keeps the token in its
// directory with mode 0600, and a later proxy uses it without asking.
func TestRemoteServerOAuth(t *testing.T) {
	var resource string
	as := authServer(t, &resource, "token-1")
	resource = httpTestServer(t, "HTTP_TOKENS=token-1", "HTTP_AS="+as.URL)
	dir := t.TempDir()
	opened := 0
	env := Env{OAuthDir: dir, OpenURL: approve(&opened)}
	for run := range 2 {
		s := startEnv(t, nil, env, "--url", resource)
		s.initialize()
		var got []string
		for range 3 {
			got = append(got, verdict(s.call("read_file", map[string]any{"path": "/etc/hosts"})))
		}
		assert.Equal(t, []string{"allow", "allow", "hint"}, got, "run %d: %s", run, s.stderr.String())
		require.Equal(t, ExitOK, s.stop())
	}
	assert.Equal(t, 1, opened, "authorized once, the token kept")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, _ := os.ReadFile(files[0])
	assert.Contains(t, string(data), `"access_token":"token-1"`)
}

// What the server sends unasked (here: that its tool list changed) reaches
// the client through the GET stream, which opens after initialized: the
// tool is added until the notification comes.
func TestRemoteServerNotifications(t *testing.T) {
	u := httpTestServer(t)
	s := start(t, nil, "--url", u)
	s.initialize()
	seen := false
	for i := 0; i < 50 && !seen; i++ {
		id := fmt.Sprint("add-", i)
		s.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"add_tool","arguments":{}}}`)
		for {
			m := s.reply()
			if m["method"] == "notifications/tools/list_changed" {
				seen = true
			}
			if m["id"] == id {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, seen, "no notifications/tools/list_changed")
}
