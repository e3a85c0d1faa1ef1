package openai

import "net/http"

// TransportName is the transport the Client's requests go through:
// TransportSurge (surge's own HTTP/1.1) or TransportGo (net/http), what
// Config.Transport "auto" picked for the endpoint.
func (c *Client) TransportName() string {
	if c.h1 {
		return TransportSurge
	}
	return TransportGo
}

// HTTPClient is an HTTP client over the Client's own transport (its TLS
// settings, dialer and connection pool), for side requests to the same
// server such as /tokenize.
func (c *Client) HTTPClient() *http.Client { return &http.Client{Transport: c.tr} }

// AuthHeader is a copy of the headers the Client sends with every request
// that are not about the body: authorization, the user's extra headers
// and the user agent. Never log it: it holds the API key.
func (c *Client) AuthHeader() http.Header {
	h := c.header.Clone()
	h.Del("Content-Type")
	h.Del("Accept")
	return h
}
