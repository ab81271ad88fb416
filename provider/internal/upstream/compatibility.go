package upstream

// Compatibility holds the settings shared by every upstream worker.
type Compatibility struct {
	Date       string   `json:"date"`
	Flags      []string `json:"flags"`
	WorkersDev bool     `json:"workersDev"`
	// Observability is the Workers Logs setting upstream's worker module
	// gives every worker it creates.
	Observability *Observability `json:"observability,omitempty"`
}

// Observability is a worker's Workers Logs setting, as Cloudflare's script
// settings carry it.
type Observability struct {
	Enabled          bool              `json:"enabled"`
	HeadSamplingRate float64           `json:"headSamplingRate"`
	Logs             ObservabilityLogs `json:"logs"`
}

// ObservabilityLogs are the persisted logs of Observability.
type ObservabilityLogs struct {
	Enabled          bool    `json:"enabled"`
	HeadSamplingRate float64 `json:"headSamplingRate"`
	InvocationLogs   bool    `json:"invocationLogs"`
}

// CompatibilityDate is the Workers compatibility date upstream pins its
// workers to (compatibility.date): the Worker resource's default.
func CompatibilityDate() string { return embedded().Compatibility.Date }

func (v *validator) compatibility() {
	cp := v.c.Compatibility
	if !dateRE.MatchString(cp.Date) {
		v.add("compatibility.date %q is not YYYY-MM-DD", cp.Date)
	}
	if o := cp.Observability; o != nil {
		for name, rate := range map[string]float64{"headSamplingRate": o.HeadSamplingRate, "logs.headSamplingRate": o.Logs.HeadSamplingRate} {
			if rate < 0 || rate > 1 {
				v.add("compatibility.observability.%s %v is not between 0 and 1", name, rate)
			}
		}
	}
}
