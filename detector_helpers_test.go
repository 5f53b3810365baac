package toolguard

import "time"

// detTest builds probes for the detectors' own tests: no Tracker, the
// default Policy but for what a test sets.
type detTest struct {
	cfg   *config
	tools map[string]*toolEntry
	keys  map[callKey]*keyState
}

func newDetTest(p Policy) *detTest {
	cfg := newConfig(p)
	return &detTest{cfg: &cfg, tools: map[string]*toolEntry{}, keys: map[callKey]*keyState{}}
}

// probe returns the probe of a call of tool with args in round; query and
// url are what inspect would have read. changes is the turn's counter.
func (d *detTest) probe(tool, args string, round uint64, changes uint32) *probe {
	e := d.tools[tool]
	if e == nil {
		e = &toolEntry{rule: d.cfg.rule(tool)}
		d.tools[tool] = e
	}
	sc := new(scratch)
	sc.scan.Scan([]byte(args))
	p := &sc.p
	*p = probe{tool: e, rule: e.rule, round: round, turn: &e.turn, turnNo: 1, changes: changes, s: sc}
	p.args = Hash(sc.scan.Hash(e.rule.ignore))
	p.key = callKey{e.rule.name, p.args}
	if e.rule.search {
		if k, q, ok := sc.scan.StringArg(queryKeys, redactMaxBytes); ok {
			p.query = normalizeQuery(q)
			p.sim = simKeyOf(p.query)
			p.sim.specific = specificBits(q)
			p.scope = Hash(sc.scan.Hash(append(e.rule.ignore[:len(e.rule.ignore):len(e.rule.ignore)], k)))
		}
	}
	if host, path, ok := sc.scan.URL(); ok {
		p.url = host + path
	}
	ks := d.keys[p.key]
	if ks == nil {
		ks = &keyState{}
		d.keys[p.key] = ks
	}
	p.ks = ks
	return p
}

// okOut and failOut are outcomes of a call allowed as seq.
func okOut(seq uint64, result string, changes uint32) *outcome {
	return &outcome{seq: seq, digest: digestResult(result), changes: changes}
}

func failOut(seq uint64, p *probe, errText string, changes uint32) *outcome {
	return &outcome{seq: seq, failed: true, digest: digestError(errText), shape: p.s.scan.Shape(), changes: changes}
}

var detTestNow = time.Unix(1_700_000_000, 0)
