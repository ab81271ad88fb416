package config

import (
	"compress/gzip"
	"fmt"
	"strconv"
	"strings"
)

// WorkerLimits are the Workers platform limits a Worker upload is checked
// against before it is sent. The values are Cloudflare's, from
// https://developers.cloudflare.com/workers/platform/limits/ (read
// 2026-11): per Worker 64 environment variables on Workers Free and 128 on
// Workers Paid, secrets and text combined, each at most 5 KB; a Worker of at
// most 64 MiB. The size limit has changed over time (1 MB/10 MB, then
// 3 MB/10 MB measured after gzip until September 2026), so it is
// configurable: workerSizeLimit "10MiB compressed" restores the older rule.
type WorkerLimits struct {
	Plan string
	// MaxVars counts plain-text vars and secrets together.
	MaxVars int
	// MaxVarBytes bounds each var's and secret's value.
	MaxVarBytes int
	// MaxScriptBytes bounds the modules' total size, gzip-compressed when
	// Compressed.
	MaxScriptBytes int64
	Compressed     bool
	// MaxAssetFiles bounds a Worker's static asset files (workerAssetsFileLimit).
	MaxAssetFiles int
	// MaxCrons bounds the cron triggers of the account (0: no bound known):
	// Cloudflare allows 5 on Workers Free and 250 on Workers Paid, per
	// account, so one Worker or one installation over it can never deploy.
	MaxCrons int
}

// CronsPerPlan are the cron triggers an account has on each plan.
var CronsPerPlan = map[string]int{"free": 5, "paid": 250}

// Plans are the plan names workersPlan accepts.
var Plans = map[string]int{"free": 64, "paid": 128}

const (
	// DefaultWorkersPlan is the plan assumed when workersPlan is unset:
	// Durable Objects with SQLite, which Open-Inspect needs, exist on both.
	DefaultWorkersPlan = "paid"
	// DefaultWorkerSizeLimit is the documented Worker size on both plans.
	DefaultWorkerSizeLimit = "64MiB"
	varBytes               = 5 * 1024
)

// WorkerLimits resolves workersPlan and workerSizeLimit (or their
// environment fallbacks); the error names the key.
func (c *Config) WorkerLimits() (WorkerLimits, error) {
	resolved := c.resolved()
	plan := resolved.WorkersPlan
	if plan == "" {
		plan = DefaultWorkersPlan
	}
	maxVars, ok := Plans[plan]
	if !ok {
		return WorkerLimits{}, fmt.Errorf("openinspect:workersPlan: %q is not a Workers plan: use free or paid", plan)
	}
	size := resolved.WorkerSizeLimit
	if size == "" {
		size = DefaultWorkerSizeLimit
	}
	limit, compressed, err := ParseSizeLimit(size)
	if err != nil {
		return WorkerLimits{}, fmt.Errorf("openinspect:workerSizeLimit: %w", err)
	}
	files, err := assetFileLimit(resolved.WorkerAssetsFileLimit)
	if err != nil {
		return WorkerLimits{}, err
	}
	return WorkerLimits{Plan: plan, MaxVars: maxVars, MaxVarBytes: varBytes, MaxScriptBytes: limit, Compressed: compressed,
		MaxAssetFiles: files, MaxCrons: CronsPerPlan[plan]}, nil
}

// DefaultAssetFileLimit is Cloudflare's asset file count on Workers Free,
// the smallest, so a preview never passes what an account refuses.
const DefaultAssetFileLimit = 20000

// assetFileLimit parses workerAssetsFileLimit ("" means the default).
func assetFileLimit(s string) (int, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultAssetFileLimit, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("openinspect:workerAssetsFileLimit: %q is not a positive whole number of files such as 20000", s)
	}
	return n, nil
}

var sizeUnits = map[string]int64{"": 1, "B": 1, "KB": 1000, "KiB": 1 << 10, "MB": 1000 * 1000, "MiB": 1 << 20}

// ParseSizeLimit reads "<number><unit>[ compressed]", units B, KB, KiB, MB
// and MiB ("10MiB compressed", "64MiB").
func ParseSizeLimit(s string) (int64, bool, error) {
	text, compressed := strings.CutSuffix(strings.TrimSpace(s), "compressed")
	text = strings.TrimSpace(text)
	i := strings.IndexFunc(text, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(text)
	}
	unit, ok := sizeUnits[strings.TrimSpace(text[i:])]
	n, err := strconv.ParseFloat(text[:i], 64)
	if !ok || err != nil || n <= 0 {
		return 0, false, fmt.Errorf("%q is not a size such as 64MiB or \"10MiB compressed\" (units B, KB, KiB, MB, MiB)", s)
	}
	return int64(n * float64(unit)), compressed, nil
}

// FormatSize renders a byte count as Cloudflare's messages do (MiB with up
// to two decimals, else KiB or bytes).
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64), "0"), ".") + " MiB"
	case n >= 1<<10:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(float64(n)/(1<<10), 'f', 2, 64), "0"), ".") + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// SizeProblem says why modules are over MaxScriptBytes, or "": their total
// size, or its gzip size when the limit is measured compressed.
func (l WorkerLimits) SizeProblem(modules ...[]byte) string {
	var size int64
	how := ""
	if l.Compressed {
		// Only the compressed size matters: count it, keep nothing.
		var counted byteCounter
		zw := gzip.NewWriter(&counted)
		for _, m := range modules {
			_, _ = zw.Write(m) // a counter never fails
		}
		_ = zw.Close()
		size, how = int64(counted), " after gzip"
	} else {
		for _, m := range modules {
			size += int64(len(m))
		}
	}
	if size <= l.MaxScriptBytes {
		return ""
	}
	return fmt.Sprintf("the Worker is %s%s; Cloudflare refuses Workers over %s (10027): see openinspect:workerSizeLimit",
		FormatSize(size), how, FormatSize(l.MaxScriptBytes))
}

// byteCounter is an io.Writer that only counts what is written to it.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
