package toolguard

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/store"
)

// defaultSimilarityThreshold is the default of Policy.SimilarityThreshold,
// which the window rule uses when the similar-query check is off.
const defaultSimilarityThreshold = 0.75

// maxCyclePeriod and maxWindow bound what a policy may ask for, so a
// configuration mistake cannot make every call expensive.
const (
	maxCyclePeriod  = 16
	maxCycleRepeats = 64
	maxWindow       = 1024
)

// defaultSearchTools and defaultThinkTools are the built-in lists used when
// Policy.SearchTools or Policy.ThinkTools is nil: names and path.Match glob
// patterns. They are never modified.
var (
	defaultSearchTools = []string{
		"search", "*search*", "*Search*", "*_query", "query_*", "*_lookup", "lookup*", "Lookup*",
		"web_fetch_search", "grep", "Grep", "*retrieve*", "*Retrieve*",
	}
	defaultThinkTools = []string{
		"think", "Think", "*_think", "reflect", "Reflect", "plan", "Plan",
		"sequentialthinking", "sequential_thinking",
	}
)

// Policy configures a Tracker. Its zero value is the defaults, listed with
// each field; docs/policy.md says where each comes from. Values that make no
// sense fall back to a documented behaviour; Validate reports them.
type Policy struct {
	// MaxCallsPerTurn is the turn budget. 0 means 300; negative: unlimited.
	MaxCallsPerTurn int
	// NudgeRatio is the share of the budget at which the turn enters
	// PhaseNudge. 0 or NaN means 0.75; negative, ≥ 1 or infinite: no nudge.
	NudgeRatio float64
	// CountRounds makes the turn budget count model responses (a round of
	// calls uses one unit). false (the default) counts every executed call.
	CountRounds bool

	// MaxRepeats is how many identical calls (same tool and canonical
	// arguments) may run without progress. 0 means 2; negative: off.
	MaxRepeats int
	// MaxFailures is how many equivalent failures of one tool are allowed;
	// its next call fires. 0 means 3; negative disables the check.
	MaxFailures int
	// MaxFailureStreak is how many calls of a turn in a row, any tools, may
	// fail; the next gets one hint (never an abort) per run. 0 means 6; negative: off.
	MaxFailureStreak int
	// MaxRewordings is how many calls in a row of a non-search tool may ask for
	// the same thing in other words and return the same result; the next fires
	// ReasonDuplicate. 0 means 2; negative: off, as where the tool's MaxRepeats is off.
	MaxRewordings int
	// MaxRevisits is how many calls of a turn in a row may each return what their
	// key returned before; the next call of a key the turn has seen fires
	// ReasonCycle. 0 means twice the tool's MaxRepeats (4 by default); negative: off.
	MaxRevisits int
	// SimilarityThreshold is the score at which two queries of a search tool are
	// the same question. 0 or NaN means 0.75; negative or above 1: check off.
	SimilarityThreshold float64
	// SearchTools names the search tools (names or glob patterns). nil means
	// the built-in list (docs/policy.md); empty non-nil: none.
	SearchTools []string
	// ThinkTools names the tools that only record the model's reasoning
	// (names or glob patterns), so read-only. nil means the built-in list
	// (think, reflect, plan, … in docs/policy.md); empty non-nil: none.
	ThinkTools []string
	// SimilarIgnoresResults makes the similar-query check result-blind. false
	// (the default) fires only after similar queries that brought nothing new.
	SimilarIgnoresResults bool
	// Action is what the first firing does: ActionHint (zero) or
	// ActionAbort. Other values mean ActionHint.
	Action Action
	// Tools holds per-tool overrides keyed by tool name or glob pattern; nil
	// means none. An exact name wins, then the longest pattern, then the
	// lexically smallest.
	Tools map[string]ToolPolicy

	// CyclePeriod is the longest cycle detected (A,B,… of distinct calls).
	// 0 means 4; 1 means 2; at most 16; negative disables cycle detection.
	CyclePeriod int
	// CycleRepeats is how many unchanged repetitions of a cycle are allowed.
	// 0 means 3; 1 means 2; at most 64; negative disables cycle detection.
	CycleRepeats int
	// Window is the number of most recent calls of the turn in which similar
	// searches and fetches of one host and path are counted. 0 means 10; at
	// most 1024; negative disables the rule.
	Window int
	// WindowLimit is how many such calls the window may hold; the next one
	// fires. 0 means 5; negative disables the rule.
	WindowLimit int

	// LedgerSize caps the entries the ledger reports (per-tool totals stay
	// exact). 0 means 4096; negative means unbounded. At least
	// CyclePeriod·CycleRepeats entries are kept, for the cycle rule.
	LedgerSize int
	// KeepRaw keeps the raw arguments and results in the ledger. false (the
	// default) keeps only hashes and a redacted purpose: they may hold secrets.
	KeepRaw bool

	// SessionLimit is the rule default for calls to one tool in a session
	// (across turns). 0 or negative means none.
	SessionLimit int
	// HighCostLimit is the rule default for a high-cost tool (HighCostTools,
	// ToolPolicy.HighCost). 0 means 10; negative means SessionLimit.
	HighCostLimit int
	// HighCostTools names high-cost tools (names or glob patterns): external,
	// paid or rate-limited APIs. nil means none.
	HighCostTools []string
	// AgentQuota and PlatformQuota are the quotas declared by the agent
	// definition and by the platform; nil means not set. A tool's session
	// limit is the least of them and the rule default, over those set.
	AgentQuota    *Quota
	PlatformQuota *Quota

	// Store shares quota counters between Trackers (store.NewMemory, or the
	// redisstore module across processes). nil means session quotas are
	// counted in this Tracker and SharedQuotas in a private store.Memory.
	Store store.Store
	// SessionID names the session in the Store, so the replicas serving it
	// share its session quotas. Empty means this Tracker counts them alone.
	SessionID string
	// SharedQuotas are totals shared through Store by every Tracker that
	// declares them (per tenant, per day…). nil means none.
	SharedQuotas []store.SharedQuota
	// StoreTimeout bounds each Store operation. 0 means 250ms.
	StoreTimeout time.Duration
	// ReservationTTL is how long a reservation holds quota without a Record
	// (a crashed replica). 0 means 5 minutes.
	ReservationTTL time.Duration
	// FailOpen: when the Store does not answer, false (fail closed) refuses
	// calls that need a shared quota (store.ErrUnavailable); true counts
	// them locally until it answers, with an EventStore per failure.
	FailOpen bool
	// Breaker stops asking the Store for a moment after it failed. nil means
	// one private to this Tracker (cooldown 1s), or none before a
	// store.ServerBreaker (redisstore); &store.Breaker{Cooldown: -1}: none.
	Breaker *store.Breaker

	// Now is the clock. nil means time.Now.
	Now func() time.Time
	// OnEvent, when set, receives every decision, record and phase change,
	// outside the Tracker's lock, so it may call back into it. nil: none.
	OnEvent func(Event)
	// Logger, when set, logs firings at Warn, other decisions and records at
	// Debug (attributes gen_ai.tool.name, gen_ai.tool.call.id). nil: silent.
	Logger *slog.Logger
}

// ToolPolicy overrides the Policy for one tool or a glob pattern of tools.
// Its zero value overrides nothing.
type ToolPolicy struct {
	// Limit is the calls of this tool allowed per turn. 0 means no limit.
	Limit int
	// MaxRepeats overrides Policy.MaxRepeats for this tool. 0 means inherit;
	// negative disables the check for this tool.
	MaxRepeats int
	// Exempt marks a polling tool: never a repeat, a repeated failure, part
	// of a cycle or of the window rule. Budgets and quotas still count it.
	Exempt bool
	// Search subjects the tool to the similar-query check even when it is
	// not in Policy.SearchTools.
	Search bool
	// NoSearch takes the tool off the search tools: no similar-query check,
	// and not read-only unless ReadOnly says so. Search wins over it.
	NoSearch bool
	// ReadOnly says the tool's calls never change the world, so they never
	// count as progress for other calls (as search and think tools).
	ReadOnly bool
	// NotReadOnly makes the MCP adapters and proxy ignore the server's
	// readOnlyHint for the tool. The Tracker reads only ReadOnly, which wins.
	NotReadOnly bool
	// HighCost marks an external, paid or rate-limited tool: its rule
	// default session limit is Policy.HighCostLimit.
	HighCost bool
	// IgnoreArgs lists top-level argument fields that do not make a call
	// different (request ids, progress notes).
	IgnoreArgs []string
}

// Validate reports the fields of p that the Tracker would replace with a
// fallback: NaN or out-of-range ratios, malformed glob patterns, negative
// per-tool limits and quotas. A nil result means every value is used as
// written.
func (p Policy) Validate() error {
	var errs []error
	switch {
	case math.IsNaN(p.NudgeRatio):
		errs = append(errs, fmt.Errorf("NudgeRatio NaN is not a number (0.75 is used)"))
	case math.IsInf(p.NudgeRatio, 0):
		errs = append(errs, fmt.Errorf("NudgeRatio %v is not a number (the nudge is off)", p.NudgeRatio))
	}
	switch {
	case math.IsNaN(p.SimilarityThreshold):
		errs = append(errs, fmt.Errorf("SimilarityThreshold NaN is not a number (0.75 is used)"))
	case math.IsInf(p.SimilarityThreshold, 0):
		errs = append(errs, fmt.Errorf("SimilarityThreshold %v is not a number (the check is off)", p.SimilarityThreshold))
	case p.SimilarityThreshold > 1:
		errs = append(errs, fmt.Errorf("SimilarityThreshold %v is above 1 (the check is off)", p.SimilarityThreshold))
	}
	if p.Action != ActionHint && p.Action != ActionAbort {
		errs = append(errs, fmt.Errorf("Action %d is unknown (hint is used)", int(p.Action)))
	}
	errs = append(append(errs, p.validateNames()...), validateSharedQuotas(p.SharedQuotas)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("toolguard: invalid policy: %w", err)
	}
	return nil
}

// validateNames reports malformed patterns and negative limits of tools.
func (p Policy) validateNames() []error {
	var errs []error
	checkPatterns := func(field string, pats ...string) {
		for _, pat := range pats {
			if _, err := path.Match(pat, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s: malformed pattern %q (it matches nothing)", field, pat))
			}
		}
	}
	checkPatterns("SearchTools", p.SearchTools...)
	checkPatterns("ThinkTools", p.ThinkTools...)
	checkPatterns("HighCostTools", p.HighCostTools...)
	for _, name := range slices.Sorted(maps.Keys(p.Tools)) {
		checkPatterns("Tools", name)
		if tp := p.Tools[name]; tp.Limit < 0 {
			errs = append(errs, fmt.Errorf("Tools[%q].Limit %d is negative (no per-turn limit)", name, tp.Limit))
		}
	}
	for i, q := range []*Quota{p.AgentQuota, p.PlatformQuota} {
		field := [...]string{"AgentQuota", "PlatformQuota"}[i]
		if q == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(q.Tools)) {
			checkPatterns(field, name)
			if n := q.Tools[name]; n < 0 {
				errs = append(errs, fmt.Errorf("%s[%q] %d is negative (not set)", field, name, n))
			}
		}
		if q.Default < 0 {
			errs = append(errs, fmt.Errorf("%s.Default %d is negative (not set)", field, q.Default))
		}
	}
	return errs
}

// validateSharedQuotas reports the shared quotas that are ignored or used
// otherwise than written, and those whose counter keys meet (a quota "t:web"
// counts the calls of tool "web" of a PerTool quota "t").
func validateSharedQuotas(qs []store.SharedQuota) []error {
	var errs []error
	for i, q := range qs {
		at := fmt.Sprintf("SharedQuotas[%d] %q", i, q.Name)
		if q.Name == "" {
			errs = append(errs, fmt.Errorf("%s: the name is empty (the quota is ignored)", at))
			continue
		}
		if q.Window < 0 {
			errs = append(errs, fmt.Errorf("%s: Window %v is negative (the total never expires)", at, q.Window))
		}
		for j, o := range qs[:i] {
			if key := sharedKeyMeet(o, q); key != "" {
				errs = append(errs, fmt.Errorf("%s: SharedQuotas[%d] %q uses its counter %q too (each call counts in it twice)", at, j, o.Name, key))
			}
		}
	}
	return errs
}

// sharedKeyMeet returns a counter key that quotas a and b both use, or "".
func sharedKeyMeet(a, b store.SharedQuota) string {
	if a.Name == b.Name && a.PerTool == b.PerTool {
		return a.Key("{tool}")
	}
	for _, pair := range [2][2]store.SharedQuota{{a, b}, {b, a}} {
		per, other := pair[0], pair[1]
		if tool, ok := strings.CutPrefix(other.Name, per.Name+":"); ok && per.PerTool && tool != "" {
			return other.Key("{tool}") // per's key too: of tool (tool:… when other is PerTool)
		}
	}
	return ""
}

// config is a Policy with every default and fallback applied. It never
// changes after NewTracker, so it is read without the lock.
type config struct {
	maxCalls     int // 0: unlimited
	nudgeAt      int // 0: no nudge
	unit         budgetUnit
	maxFailures  int // 0: off
	maxStreak    int // 0: off
	threshold    float64
	similarOn    bool
	action       Action
	cyclePeriod  int // 0: off
	cycleRepeats int
	window       int // 0: off
	windowLimit  int
	ledgerSize   int // 0: unbounded
	ledgerKeep   int // the entries the ledger keeps: ledgerSize, at least what a cycle spans
	store        store.Store
	shared       []store.SharedQuota
	storeTimeout time.Duration
	ttl          time.Duration
	fallback     *store.Memory // counts locally while the store is down (FailOpen)
	breaker      *store.Breaker
	now          func() time.Time
	hooked       bool       // OnEvent or Logger is set: events are built
	rules        *ruleCache // a Sessions' resolved tool policies; nil for NewTracker(p)
	// policy is the Policy as written, the built-in lists in place of nil
	// ones; the fields above are those that need a default, bound or fallback.
	policy Policy
}

func newConfig(p Policy) config {
	c := config{
		policy: p,
		store:  p.Store,
		now:    p.Now,
		hooked: p.OnEvent != nil || p.Logger != nil,
	}
	if p.Action == ActionAbort { // other values mean ActionHint, the zero value
		c.action = ActionAbort
	}
	if p.CountRounds {
		c.unit = unitRounds
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.shared = slices.DeleteFunc(slices.Clone(p.SharedQuotas),
		func(q store.SharedQuota) bool { return q.Limit <= 0 || q.Name == "" })
	if c.store == nil && len(c.shared) > 0 {
		c.store = store.NewMemory(c.now)
	}
	if c.store != nil && p.FailOpen {
		c.fallback = store.NewMemory(c.now)
	}
	if c.breaker = p.Breaker; c.breaker == nil && c.store != nil {
		c.breaker = &store.Breaker{}
		if _, ok := c.store.(store.ServerBreaker); ok {
			c.breaker.Cooldown = -1 // the Store breaks per server itself
		}
	}
	c.storeTimeout = cmp.Or(max(p.StoreTimeout, 0), 250*time.Millisecond)
	c.ttl = cmp.Or(max(p.ReservationTTL, 0), store.DefaultTTL)
	c.ruleConfig(p)
	return c
}

// ruleConfig applies the defaults and bounds of the rules' and the ledger's
// settings.
func (c *config) ruleConfig(p Policy) {
	c.maxCalls = orDefault(p.MaxCallsPerTurn, 300)
	if ratio := ratioOr(p.NudgeRatio, 0.75); c.maxCalls > 0 && ratio > 0 && ratio < 1 {
		c.nudgeAt = int(math.Floor(ratio * float64(c.maxCalls)))
	}
	c.maxFailures = orDefault(p.MaxFailures, 3)
	c.maxStreak = orDefault(p.MaxFailureStreak, 6)
	c.threshold = ratioOr(p.SimilarityThreshold, defaultSimilarityThreshold)
	if c.similarOn = c.threshold > 0 && c.threshold <= 1; !c.similarOn {
		c.threshold = defaultSimilarityThreshold // the window rule still needs "similar"
	}
	if p.SearchTools == nil {
		c.policy.SearchTools = defaultSearchTools
	}
	if p.ThinkTools == nil {
		c.policy.ThinkTools = defaultThinkTools
	}
	// A negative count turns its rule off, as it does for every rule.
	if p.CyclePeriod >= 0 && p.CycleRepeats >= 0 {
		c.cyclePeriod = min(max(orDefault(p.CyclePeriod, 4), 2), maxCyclePeriod)
	}
	c.cycleRepeats = min(max(orDefault(p.CycleRepeats, 3), 2), maxCycleRepeats)
	if p.WindowLimit >= 0 {
		c.window = min(orDefault(p.Window, 10), maxWindow)
	}
	c.windowLimit = max(orDefault(p.WindowLimit, 5), 1)
	c.ledgerSize = orDefault(p.LedgerSize, 4096)
	if c.ledgerKeep = c.ledgerSize; c.ledgerSize > 0 { // the cycle rule reads the turn's last calls
		c.ledgerKeep = max(c.ledgerSize, c.cyclePeriod*c.cycleRepeats)
	}
}

// orDefault maps 0 to def and a negative value to 0 ("off").
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return max(v, 0)
}

// ratioOr maps 0 and NaN to def.
func ratioOr(v, def float64) float64 {
	if v == 0 || math.IsNaN(v) {
		return def
	}
	return v
}

// match is path.Match without the error.
func match(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// lookup returns what m holds for name: its own value, else that of the
// longest pattern name matches, ties going to the pattern less puts
// first; ok is false when there is none.
func lookup[V any](m map[string]V, name string, less func(a, b string) bool) (v V, ok bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	best := ""
	for pat, pv := range m {
		if match(pat, name) && (!ok || len(pat) > len(best) || len(pat) == len(best) && less(pat, best)) {
			v, ok, best = pv, true, pat
		}
	}
	return v, ok
}

// matchAny reports whether name is one of the tool names and path.Match
// patterns of list. Malformed patterns match nothing.
func matchAny(list []string, name string) bool {
	return slices.ContainsFunc(list, func(p string) bool { return p == name || match(p, name) })
}

// toolRule is everything the Tracker needs to know about one tool name,
// resolved once from the config and cached.
type toolRule struct {
	name       string
	limit      int     // per turn; 0: none
	maxRepeats int     // 0: off
	rewordings int     // Policy.MaxRewordings for this tool; 0: off
	threshold  float64 // the similarity threshold, for the prose of rewordings
	// Policy.CyclePeriod, CycleRepeats and MaxRevisits for the tool (0: off;
	// exempt tools are never part of a cycle or a revisit).
	cyclePeriod, cycleRepeats, revisits int32
	exempt                              bool
	search                              bool
	readOnly                            bool // search and think tools too
	think                               bool // a think tool (Policy.ThinkTools)
	ignore                              []string
	quota                               int             // effective session limit; 0: none
	quotaFrom                           string          // "agent", "platform" or "rule"
	counters                            []store.Counter // shared through the Store
	counterOf                           []string        // what each counter is, for messages
	// desc is the ledger's description of the tool's last call with the
	// argument names of most of its calls, shared by its sessions.
	desc atomic.Pointer[callDesc]
}

func (c *config) resolve(tool string) *toolRule {
	tp, _ := lookup(c.policy.Tools, tool, func(a, b string) bool { return a < b })
	r := &toolRule{
		name:   tool,
		limit:  max(tp.Limit, 0),
		exempt: tp.Exempt,
		search: tp.Search || !tp.NoSearch && matchAny(c.policy.SearchTools, tool),
		think:  matchAny(c.policy.ThinkTools, tool),
		ignore: tp.IgnoreArgs,
	}
	r.readOnly = tp.ReadOnly || r.search || r.think
	if !r.exempt {
		r.maxRepeats = orDefault(cmp.Or(tp.MaxRepeats, c.policy.MaxRepeats), 2)
		r.cyclePeriod, r.cycleRepeats = int32(c.cyclePeriod), int32(c.cycleRepeats)
		r.revisits = int32(orDefault(c.policy.MaxRevisits, min(r.maxRepeats, math.MaxInt32/2)*2))
	}
	if r.maxRepeats > 0 && !r.search {
		r.rewordings, r.threshold = orDefault(c.policy.MaxRewordings, 2), c.threshold
	}
	c.resolveQuota(r, tp)
	return r
}
