package zones

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRouteMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, host, target string
		want                  bool
	}{
		{"example.com/*", "example.com", "/", true},
		{"example.com/*", "example.com", "/a/b?q=1", true},
		{"example.com/*", "www.example.com", "/", false},
		{"*example.com/*", "example.com", "/x", true},
		{"*example.com/*", "www.example.com", "/x", true},
		{"*.example.com/*", "example.com", "/x", false},
		{"*.example.com/*", "a.b.example.com", "/x", true},
		{"*.example.com/api/*", "app.example.com", "/api/v1", true},
		{"*.example.com/api/*", "app.example.com", "/apis", false},
		{"example.com/exact", "example.com", "/exact", true},
		{"example.com/exact", "example.com", "/exact/", false},
		{"example.com/exact", "example.com", "/exact?q=1", false}, // the whole URL counts
		{"example.com/exact*", "example.com", "/exact?q=1", true},
		{"Example.COM/*", "example.com", "/", true},
	} {
		assert.Equal(t, c.want, routeMatches(c.pattern, c.host, c.target), "%s against %s%s", c.pattern, c.host, c.target)
	}
}

// The most specific pattern wins: exact host over wildcard host, a longer
// host over a shorter one, then exact path over wildcard path, then the
// longer path.
func TestMoreSpecificOrdersPatterns(t *testing.T) {
	patterns := []string{
		"*example.com/*",
		"www.example.com/api/v1",
		"*.example.com/api/*",
		"www.example.com/*",
		"www.example.com/api/*",
		"*.www.example.com/*",
	}
	slices.SortFunc(patterns, func(a, b string) int {
		switch {
		case moreSpecific(a, b):
			return -1
		case moreSpecific(b, a):
			return 1
		}
		return 0
	})
	assert.Equal(t, []string{
		"www.example.com/api/v1",
		"www.example.com/api/*",
		"www.example.com/*",
		"*.www.example.com/*",
		"*.example.com/api/*",
		"*example.com/*",
	}, patterns)
	assert.False(t, moreSpecific("example.com/*", "example.com/*"), "a pattern is not more specific than itself")
}
