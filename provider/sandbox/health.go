package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// checkHealth GETs url until it answers 200 with a JSON body holding every
// field of want (more fields are fine), within timeout and ctx. It returns a
// short description of the healthy answer.
func checkHealth(ctx context.Context, url string, want json.RawMessage, timeout, poll time.Duration) (string, error) {
	var expected map[string]any
	if err := json.Unmarshal(want, &expected); err != nil {
		return "", fmt.Errorf("the contract's health body: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The URL may be a local emulator's worker, http://<script>.workers.localhost.
	client := loopback.Client(30 * time.Second)
	var last error
	for attempt := 1; ; attempt++ {
		body, err := getJSON(ctx, client, url)
		if err == nil {
			if contains(body, expected) {
				raw, _ := json.Marshal(body["data"])
				return "healthy: " + string(raw), nil
			}
			raw, _ := json.Marshal(body)
			err = fmt.Errorf("answered %s", raw)
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s is not healthy after %d tries (%s): %w", url, attempt, timeout, last)
		case <-time.After(poll):
		}
	}
}

func getJSON(ctx context.Context, client *http.Client, url string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return body, nil
}

// contains reports whether got holds every field of want, recursively.
func contains(got, want map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		wm, wIsMap := w.(map[string]any)
		gm, gIsMap := g.(map[string]any)
		switch {
		case wIsMap && gIsMap:
			if !contains(gm, wm) {
				return false
			}
		case !reflect.DeepEqual(g, w):
			return false
		}
	}
	return true
}
