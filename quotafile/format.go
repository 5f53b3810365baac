package quotafile

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/toolguard/toolguard"
	"go.yaml.in/yaml/v4"
)

// Format returns the policy file that declares p: Parse(name, Format(p))
// gives back p's fields that a file holds (every field of Policy and
// ToolPolicy but Store, Breaker, Now, OnEvent and Logger, which are set
// in code). Fields at their zero value are left out, as are quota entries of
// 0 or less, which mean "not set".
//
// Format fails for what a file cannot hold: NaN or infinite ratios,
// integers beyond ±2147483647, unknown Action values,
// negative durations, and a SharedQuota without a name or a positive limit.
func Format(p toolguard.Policy) ([]byte, error) {
	doc, err := formatDoc(p)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("quotafile: format: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("quotafile: format: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(b.Bytes()), []byte("{}")) {
		return nil, nil // the zero Policy: an empty file
	}
	return b.Bytes(), nil
}

// fileDoc is the YAML of a policy file, in the order Format writes it.
type fileDoc struct {
	MaxCallsPerTurn       int                `yaml:"max_calls_per_turn,omitempty"`
	NudgeRatio            float64            `yaml:"nudge_ratio,omitempty"`
	BudgetUnit            string             `yaml:"budget_unit,omitempty"`
	MaxRepeats            int                `yaml:"max_repeats,omitempty"`
	MaxFailures           int                `yaml:"max_failures,omitempty"`
	MaxFailureStreak      int                `yaml:"max_failure_streak,omitempty"`
	MaxRewordings         int                `yaml:"max_rewordings,omitempty"`
	MaxRevisits           int                `yaml:"max_revisits,omitempty"`
	SimilarityThreshold   float64            `yaml:"similarity_threshold,omitempty"`
	SearchTools           *[]string          `yaml:"search_tools,omitempty"`
	ThinkTools            *[]string          `yaml:"think_tools,omitempty"`
	SimilarIgnoresResults bool               `yaml:"similar_ignores_results,omitempty"`
	Action                string             `yaml:"action,omitempty"`
	Tools                 map[string]toolDoc `yaml:"tools,omitempty"`
	CyclePeriod           int                `yaml:"cycle_period,omitempty"`
	CycleRepeats          int                `yaml:"cycle_repeats,omitempty"`
	Window                int                `yaml:"window,omitempty"`
	WindowLimit           int                `yaml:"window_limit,omitempty"`
	LedgerSize            int                `yaml:"ledger_size,omitempty"`
	KeepRaw               bool               `yaml:"keep_raw,omitempty"`
	SessionLimit          int                `yaml:"session_limit,omitempty"`
	HighCostLimit         int                `yaml:"high_cost_limit,omitempty"`
	HighCostTools         *[]string          `yaml:"high_cost_tools,omitempty"`
	ToolQuota             *map[string]any    `yaml:"tool_quota,omitempty"`
	PlatformQuota         *map[string]any    `yaml:"platform_quota,omitempty"`
	SessionID             string             `yaml:"session_id,omitempty"`
	SharedQuotas          *[]sharedDoc       `yaml:"shared_quotas,omitempty"`
	StoreTimeout          string             `yaml:"store_timeout,omitempty"`
	ReservationTTL        string             `yaml:"reservation_ttl,omitempty"`
	FailOpen              bool               `yaml:"fail_open,omitempty"`
}

type toolDoc struct {
	Limit      int       `yaml:"limit,omitempty"`
	MaxRepeats int       `yaml:"max_repeats,omitempty"`
	Exempt     bool      `yaml:"exempt,omitempty"`
	Search     *bool     `yaml:"search,omitempty"`
	ReadOnly   *bool     `yaml:"read_only,omitempty"`
	HighCost   bool      `yaml:"high_cost,omitempty"`
	IgnoreArgs *[]string `yaml:"ignore_args,omitempty"`
}

type sharedDoc struct {
	Name    string    `yaml:"name"`
	Limit   int       `yaml:"limit"`
	Tools   *[]string `yaml:"tools,omitempty"`
	Window  string    `yaml:"window,omitempty"`
	PerTool bool      `yaml:"per_tool,omitempty"`
}

func formatDoc(p toolguard.Policy) (fileDoc, error) {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	num := func(field string, n int) int {
		if n > maxValue || n < -maxValue {
			fail("%s %d is out of range", field, n)
		}
		return n
	}
	ratio := func(field string, f float64) float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			fail("%s %v is not a finite number", field, f)
		}
		return f
	}
	dur := func(field string, d interface{ String() string }, neg bool) string {
		if neg {
			fail("%s %v is negative", field, d)
		}
		return d.String()
	}
	doc := fileDoc{
		MaxCallsPerTurn:       num("MaxCallsPerTurn", p.MaxCallsPerTurn),
		NudgeRatio:            ratio("NudgeRatio", p.NudgeRatio),
		MaxRepeats:            num("MaxRepeats", p.MaxRepeats),
		MaxFailures:           num("MaxFailures", p.MaxFailures),
		MaxFailureStreak:      num("MaxFailureStreak", p.MaxFailureStreak),
		MaxRewordings:         num("MaxRewordings", p.MaxRewordings),
		MaxRevisits:           num("MaxRevisits", p.MaxRevisits),
		SimilarityThreshold:   ratio("SimilarityThreshold", p.SimilarityThreshold),
		SearchTools:           listDoc(p.SearchTools),
		ThinkTools:            listDoc(p.ThinkTools),
		SimilarIgnoresResults: p.SimilarIgnoresResults,
		CyclePeriod:           num("CyclePeriod", p.CyclePeriod),
		CycleRepeats:          num("CycleRepeats", p.CycleRepeats),
		Window:                num("Window", p.Window),
		WindowLimit:           num("WindowLimit", p.WindowLimit),
		LedgerSize:            num("LedgerSize", p.LedgerSize),
		KeepRaw:               p.KeepRaw,
		SessionLimit:          num("SessionLimit", p.SessionLimit),
		HighCostLimit:         num("HighCostLimit", p.HighCostLimit),
		HighCostTools:         listDoc(p.HighCostTools),
		ToolQuota:             quotaDoc(p.AgentQuota),
		PlatformQuota:         quotaDoc(p.PlatformQuota),
		SessionID:             p.SessionID,
		FailOpen:              p.FailOpen,
	}
	if p.CountRounds {
		doc.BudgetUnit = "rounds"
	}
	switch p.Action {
	case toolguard.ActionHint:
	case toolguard.ActionAbort:
		doc.Action = "abort"
	default:
		fail("Action %d is unknown", int(p.Action))
	}
	if p.StoreTimeout != 0 {
		doc.StoreTimeout = dur("StoreTimeout", p.StoreTimeout, p.StoreTimeout < 0)
	}
	if p.ReservationTTL != 0 {
		doc.ReservationTTL = dur("ReservationTTL", p.ReservationTTL, p.ReservationTTL < 0)
	}
	if len(p.Tools) > 0 {
		doc.Tools = make(map[string]toolDoc, len(p.Tools))
		for _, name := range sortedNames(p.Tools) {
			tp := p.Tools[name]
			td := toolDoc{
				Limit:      num("Tools["+name+"].Limit", tp.Limit),
				MaxRepeats: num("Tools["+name+"].MaxRepeats", tp.MaxRepeats),
				Exempt:     tp.Exempt,
				HighCost:   tp.HighCost,
				IgnoreArgs: listDoc(tp.IgnoreArgs),
			}
			if tp.Limit < 0 {
				fail("Tools[%q].Limit %d is negative", name, tp.Limit)
			}
			switch {
			case tp.Search:
				td.Search = ptr(true)
			case tp.NoSearch:
				td.Search = ptr(false)
			}
			switch {
			case tp.ReadOnly:
				td.ReadOnly = ptr(true)
			case tp.NotReadOnly:
				td.ReadOnly = ptr(false)
			}
			doc.Tools[name] = td
		}
	}
	if p.SharedQuotas != nil {
		qs := make([]sharedDoc, 0, len(p.SharedQuotas))
		for i, q := range p.SharedQuotas {
			if q.Name == "" || q.Limit <= 0 || q.Limit > maxValue {
				fail("SharedQuotas[%d] needs a name and a limit from 1 to %d", i, maxValue)
			}
			sd := sharedDoc{Name: q.Name, Limit: q.Limit, Tools: listDoc(q.Tools), PerTool: q.PerTool}
			if q.Window != 0 {
				sd.Window = dur(fmt.Sprintf("SharedQuotas[%d].Window", i), q.Window, q.Window < 0)
			}
			qs = append(qs, sd)
		}
		doc.SharedQuotas = &qs
	}
	if len(errs) > 0 {
		return fileDoc{}, fmt.Errorf("quotafile: format: %w", errors.Join(errs...))
	}
	return doc, nil
}

func ptr[T any](v T) *T { return &v }

// listDoc keeps the difference between nil (left out) and an empty list.
func listDoc(l []string) *[]string {
	if l == nil {
		return nil
	}
	return &l
}

// quotaDoc is the tool_quota mapping of q; the reserved names defaults and
// tools go under the nested tools mapping.
func quotaDoc(q *toolguard.Quota) *map[string]any {
	if q == nil {
		return nil
	}
	m := map[string]any{}
	nested := map[string]int{}
	for name, n := range q.Tools {
		switch {
		case n <= 0:
		case name == keyDefaults || name == keyTools:
			nested[name] = n
		default:
			m[name] = n
		}
	}
	if len(nested) > 0 {
		m[keyTools] = nested
	}
	if q.Default > 0 {
		m[keyDefaults] = q.Default
	}
	return &m
}
