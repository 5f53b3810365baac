package mcpproxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// oauth is MCP's authorization flow for a remote server, as the client
// side of the 2025-11-25 revision asks: a 401 names the server's protected
// resource metadata (RFC 9728), which names its authorization server
// (RFC 8414 metadata); the proxy identifies itself (see clientFor: a
// pre-registered client, a client ID metadata document, or dynamic
// registration, RFC 7591, as a public client), sends the user's browser to
// authorize with PKCE (S256) and the resource indicator (RFC 8707), takes
// the code on a loopback redirect, and keeps the tokens in the user's
// config directory (toolguard/oauth/<hash of the server URL>.json, mode
// 0600), refreshing them when they expire. A client secret is never
// written there.
type oauth struct {
	server string       // the MCP server's URL: the resource
	client *http.Client // for the metadata, registration and token requests
	dir    string       // where the tokens are kept
	open   func(string) error
	log    func(format string, a ...any)
	wait   time.Duration // how long the user has to authorize

	// clientID is --client-id: a client registered with the authorization
	// server by hand, or the https URL of a client ID metadata document.
	// "" means dynamic registration.
	clientID string
	// clientSecret is the pre-registered client's secret
	// (TOOLGUARD_OAUTH_CLIENT_SECRET); "" for a public client.
	clientSecret string
	// redirectPort is --redirect-port: the loopback port of the redirect
	// URI, for a client registered with a fixed one; 0 means any free port
	// (RFC 8252 7.3 asks authorization servers to accept any).
	redirectPort int

	mu  sync.Mutex
	tok *tokenFile
}

// tokenFile is what is kept on disk for one server.
type tokenFile struct {
	Server        string `json:"server"`
	TokenEndpoint string `json:"token_endpoint"`
	ClientID      string `json:"client_id"`
	// AuthMethod is how the client authenticates at the token endpoint:
	// "" (a public client), client_secret_basic or client_secret_post.
	AuthMethod   string    `json:"token_endpoint_auth_method,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// defaultOAuthDir is the directory of the kept tokens:
// os.UserConfigDir()/toolguard/oauth.
func defaultOAuthDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "toolguard", "oauth"), nil
}

func (o *oauth) path() string {
	sum := sha256.Sum256([]byte(o.server))
	return filepath.Join(o.dir, hex.EncodeToString(sum[:8])+".json")
}

// token returns the access token to send, "" when there is none yet.
func (o *oauth) token() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok == nil {
		o.tok = o.load()
	}
	if o.tok == nil {
		return ""
	}
	if !o.tok.Expiry.IsZero() && time.Now().After(o.tok.Expiry.Add(-30*time.Second)) && o.tok.RefreshToken != "" {
		if t, err := o.refresh(o.tok); err == nil {
			o.tok = t
		} else {
			o.log("refreshing the token of %s: %v", o.server, err)
		}
	}
	return o.tok.AccessToken
}

func (o *oauth) load() *tokenFile {
	data, err := os.ReadFile(o.path())
	if err != nil {
		return nil
	}
	var t tokenFile
	if json.Unmarshal(data, &t) != nil || t.Server != o.server || t.AccessToken == "" {
		return nil
	}
	return &t
}

func (o *oauth) save(t *tokenFile) error {
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	tmp := o.path() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, o.path())
}

// unauthorized handles a 401 of the server: the token sent (if any) is
// refreshed or a new authorization is run. It returns nil when a new token
// is ready to retry with.
func (o *oauth) unauthorized(ctx context.Context, resp *http.Response, sent string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok != nil && o.tok.AccessToken != sent {
		return nil // another request got a new token meanwhile
	}
	if o.tok != nil && o.tok.RefreshToken != "" {
		if t, err := o.refresh(o.tok); err == nil {
			o.tok = t
			return nil
		}
	}
	t, err := o.authorize(ctx, resourceMetadataURL(resp.Header.Get("WWW-Authenticate")))
	if err != nil {
		return err
	}
	o.tok = t
	return nil
}

// resourceMetadataURL reads resource_metadata="…" of a WWW-Authenticate
// header.
func resourceMetadataURL(h string) string {
	_, rest, ok := strings.Cut(h, `resource_metadata="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// getJSON fetches a JSON document of at most 1 MiB.
func (o *oauth) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// asMeta is the authorization server metadata the flow reads.
type asMeta struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
	// ClientIDMetadata says the server accepts an https URL as a client
	// id and reads the client's metadata from it.
	ClientIDMetadata bool `json:"client_id_metadata_document_supported"`
}

// clientFor returns the client id to authorize as, in the order MCP's
// authorization asks of a client: a client registered by hand
// (--client-id), a client ID metadata document (--client-id with an https
// URL, when the server supports them), dynamic registration.
func (o *oauth) clientFor(ctx context.Context, as *asMeta, redirect string) (string, error) {
	cimd := isMetadataURL(o.clientID)
	switch {
	case o.clientID != "" && !cimd, cimd && as.ClientIDMetadata:
		return o.clientID, nil
	case as.RegistrationEndpoint != "":
		if cimd {
			o.log("the authorization server of %s does not read client ID metadata documents: registering instead", o.server)
		}
		id, err := o.register(ctx, as.RegistrationEndpoint, redirect)
		if err != nil {
			return "", fmt.Errorf("client registration: %w", err)
		}
		return id, nil
	case cimd:
		return "", errors.New("the authorization server reads no client ID metadata documents and offers no registration: give the id of a client registered with it (--client-id)")
	}
	return "", errors.New("the authorization server offers no dynamic client registration: register a client with it and give its id with --client-id (its secret, if any, in TOOLGUARD_OAUTH_CLIENT_SECRET), or the https URL of a client ID metadata document")
}

// isMetadataURL reports whether a client id is the URL of a client ID
// metadata document: https, with a path.
func isMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/"
}

// authMethod is how the client id authenticates at the token endpoint: a
// secret only for the pre-registered client, in the Authorization header
// unless the server accepts it only in the form.
func (o *oauth) authMethod(clientID string, as *asMeta) string {
	if o.clientSecret == "" || clientID != o.clientID {
		return ""
	}
	if len(as.TokenAuthMethods) > 0 && !slices.Contains(as.TokenAuthMethods, "client_secret_basic") &&
		slices.Contains(as.TokenAuthMethods, "client_secret_post") {
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// authorize runs the flow: discovery, registration, the browser, the code.
func (o *oauth) authorize(ctx context.Context, prmURL string) (*tokenFile, error) {
	base, err := url.Parse(o.server)
	if err != nil {
		return nil, err
	}
	if prmURL == "" {
		prmURL = base.Scheme + "://" + base.Host + "/.well-known/oauth-protected-resource"
	}
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := o.getJSON(ctx, prmURL, &prm); err != nil {
		return nil, fmt.Errorf("protected resource metadata: %w", err)
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, errors.New("protected resource metadata names no authorization server")
	}
	issuer := strings.TrimSuffix(prm.AuthorizationServers[0], "/")
	var as asMeta
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	if err := o.getJSON(ctx, iu.Scheme+"://"+iu.Host+"/.well-known/oauth-authorization-server"+iu.Path, &as); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
		return nil, errors.New("the authorization server metadata names no authorization or token endpoint")
	}

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.redirectPort))
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"

	clientID, err := o.clientFor(ctx, &as, redirect)
	if err != nil {
		return nil, err
	}
	method := o.authMethod(clientID, &as)
	verifier, state := randomString(), randomString()
	challenge := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirect},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {o.server},
	}
	authURL := as.AuthorizationEndpoint + "?" + q.Encode()

	codes := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" || r.URL.Query().Get("state") != state {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		if e := r.URL.Query().Get("error"); e != "" {
			fmt.Fprintf(w, "toolguard: authorization refused (%s). You can close this page.", e)
			select {
			case codes <- "":
			default:
			}
			return
		}
		fmt.Fprintln(w, "toolguard: authorized. You can close this page.")
		select {
		case codes <- r.URL.Query().Get("code"):
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	o.log("the MCP server at %s asks for authorization: open %s", o.server, authURL)
	if err := o.open(authURL); err != nil {
		o.log("cannot open a browser (%v): open the address above", err)
	}
	var code string
	select {
	case code = <-codes:
	case <-time.After(o.wait):
		return nil, fmt.Errorf("no authorization within %v", o.wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if code == "" {
		return nil, errors.New("the authorization was refused")
	}
	t, err := o.tokenRequest(ctx, as.TokenEndpoint, clientID, method, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirect},
		"code_verifier": {verifier},
		"resource":      {o.server},
	})
	if err != nil {
		return nil, err
	}
	t.ClientID, t.AuthMethod = clientID, method
	if err := o.save(t); err != nil {
		o.log("cannot keep the token of %s: %v", o.server, err)
	}
	return t, nil
}

// register registers the proxy as a public client with one loopback
// redirect URI.
func (o *oauth) register(ctx context.Context, endpoint, redirect string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"client_name":                "toolguard mcp-proxy",
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST %s: %s", endpoint, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil || r.ClientID == "" {
		return "", errors.New("no client_id in the registration response")
	}
	return r.ClientID, nil
}

// refresh exchanges the refresh token for a new access token.
func (o *oauth) refresh(t *tokenFile) (*tokenFile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nt, err := o.tokenRequest(ctx, t.TokenEndpoint, t.ClientID, t.AuthMethod, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {t.RefreshToken},
		"resource":      {o.server},
	})
	if err != nil {
		return nil, err
	}
	nt.ClientID, nt.AuthMethod = t.ClientID, t.AuthMethod
	if nt.RefreshToken == "" {
		nt.RefreshToken = t.RefreshToken
	}
	if err := o.save(nt); err != nil {
		o.log("cannot keep the token of %s: %v", o.server, err)
	}
	return nt, nil
}

// tokenRequest posts form to the token endpoint as clientID, which
// authenticates by method (see authMethod).
func (o *oauth) tokenRequest(ctx context.Context, endpoint, clientID, method string, form url.Values) (*tokenFile, error) {
	if method == "" || method == "client_secret_post" {
		form.Set("client_id", clientID)
	}
	if method == "client_secret_post" {
		form.Set("client_secret", o.clientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	if method == "client_secret_basic" {
		// RFC 6749 2.3.1: both form-encoded, then basic authentication.
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(o.clientSecret))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token request: %s", resp.Status)
	}
	var r struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil || r.AccessToken == "" {
		return nil, errors.New("token request: no access_token in the response")
	}
	t := &tokenFile{Server: o.server, TokenEndpoint: endpoint, AccessToken: r.AccessToken, RefreshToken: r.RefreshToken}
	if r.ExpiresIn > 0 {
		t.Expiry = time.Now().Add(time.Duration(r.ExpiresIn) * time.Second)
	}
	return t, nil
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// openBrowser opens u in the user's browser.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
