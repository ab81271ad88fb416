package workers

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"

	"github.com/openinspect/pulumi-openinspect/provider/esm"
)

// Limits are the Workers platform limits uploads are refused by, as
// https://developers.cloudflare.com/workers/platform/limits/ documents them
// (read 2026-11). The zero value is the Workers Paid plan.
type Limits struct {
	// MaxVars counts plain_text, json and secret_text bindings together
	// (64 on Workers Free, 128 on Workers Paid).
	MaxVars int
	// MaxVarBytes bounds each one's value (5 KB on both plans).
	MaxVarBytes int
	// MaxScriptBytes bounds the modules' total size (64 MiB on both plans
	// since September 2026), measured after gzip when Compressed (the
	// earlier rule: 3 MB Free, 10 MB Paid).
	MaxScriptBytes int64
	Compressed     bool
}

// FreePlanLimits are Workers Free's limits.
var FreePlanLimits = Limits{MaxVars: 64, MaxVarBytes: 5 << 10, MaxScriptBytes: 64 << 20}

func (l Limits) withDefaults() Limits {
	if l.MaxVars == 0 {
		l.MaxVars = 128
	}
	if l.MaxVarBytes == 0 {
		l.MaxVarBytes = 5 << 10
	}
	if l.MaxScriptBytes == 0 {
		l.MaxScriptBytes = 64 << 20
	}
	return l
}

// wkCheckLimits refuses an upload over the size limit (10027, with
// Cloudflare's message) or with too many or too large variables. Cloudflare
// documents those limits but not the code it answers with; 10021, its code
// for an upload that fails validation, is inferred.
func (s *Service) wkCheckLimits(up *scriptUpload, bindings []bindingSpec) error {
	lim := s.workerLimits
	size := int64(0)
	if lim.Compressed {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for _, m := range up.modules {
			_, _ = zw.Write(m.Content)
		}
		_ = zw.Close()
		size = int64(buf.Len())
	} else {
		for _, m := range up.modules {
			size += int64(len(m.Content))
		}
	}
	if size > lim.MaxScriptBytes {
		return core.NewAPIError(http.StatusBadRequest, 10027, fmt.Sprintf(
			"Your Worker exceeded the size limit of %s. Refer to the Workers documentation (https://developers.cloudflare.com/workers/observability/errors/#errors-on-worker-upload) for more details.",
			sizeText(lim.MaxScriptBytes)))
	}
	vars := 0
	for _, b := range bindings {
		switch b.Type {
		case "plain_text", "secret_text", "json":
			vars++
			if b.Text != nil && len(*b.Text) > lim.MaxVarBytes {
				return wkInvalid("environment variable %s is larger than the limit of %d bytes", b.Name, lim.MaxVarBytes)
			}
		}
	}
	if vars > lim.MaxVars {
		return wkInvalid("the Worker has %d environment variables and secrets; the limit is %d", vars, lim.MaxVars)
	}
	return nil
}

// sizeText is a limit as Cloudflare's 10027 message prints it ("3 MiB").
func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
}

// wkCheckExports refuses, for an ES module Worker, a migration that creates
// a class the main module does not export (10070) and a binding to one of
// the script's own classes it does not export (10061), with Cloudflare's
// messages. The check is structural: the module's export statements, as
// Cloudflare reads them without running the script. A star export from a
// module not uploaded leaves the names unknown and nothing is refused.
func wkCheckExports(up *scriptUpload, script string, bindings []bindingSpec) error {
	if up.meta.MainModule == "" {
		return nil
	}
	exported, known := uploadExports(up)
	if !known {
		return nil
	}
	if m := up.meta.Migrations; m != nil {
		for _, st := range m.steps() {
			created := append([]string{}, st.NewSqliteClasses...)
			for _, rc := range st.RenamedClasses {
				created = append(created, rc.To)
			}
			for _, c := range created {
				if !exported[c] {
					return core.NewAPIError(http.StatusBadRequest, 10070,
						fmt.Sprintf("Cannot apply new-class migration to class '%s' that is not exported by script", c))
				}
			}
		}
	}
	for _, b := range bindings {
		if b.Type == "durable_object_namespace" && (b.ScriptName == "" || b.ScriptName == script) && !exported[b.ClassName] {
			return core.NewAPIError(http.StatusBadRequest, 10061,
				fmt.Sprintf("Cannot create binding for class '%s' that is not exported by the script", b.ClassName))
		}
	}
	return nil
}

// uploadExports are the names the main module exports (esm.Graph).
func uploadExports(up *scriptUpload) (map[string]bool, bool) {
	return esm.Graph(up.main, func(name string) ([]byte, bool) {
		if mod := up.module(name); mod != nil {
			return mod.Content, true
		}
		return nil, false
	})
}
