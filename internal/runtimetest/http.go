package runtimetest

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// maxBody bounds what Get reads of a response: the largest is a kubelet's
// or Prometheus' /metrics or API answer, some MiB.
const maxBody = 64 << 20

// Get returns the body of a GET of url with client, or an error that names
// url for a failed request or a status other than 200 (with the body).
func Get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}
