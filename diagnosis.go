package toolguard

// Diagnosis before the hint. The failure hint asks the model to look for
// the real interface, path or precondition, then allows one evidence-backed
// attempt. A model that already looked on its own deserves that attempt:
// while a tool's failure chain is counting, a call of a read-only tool
// (not a think tool: it reads the world, not the model's notes) that
// succeeded with new information (progress of its own) counts as the
// diagnosis. The chain's next call runs as the attempt, as after a hint;
// if it fails the same way, the next retry gets the hint (not an abort:
// the model has not been told yet), and the usual escalation follows.

// maxChains bounds the failure chains of a turn the diagnosis looks at.
const maxChains = 16

// diagnosis books the outcome r of the call p for the turn's chains: a
// failure's chain is watched, a diagnosis moves the counting chains of the
// other tools to their attempt.
func (d *failures) diagnosis(p *probe, r *outcome) {
	own := p.turn.fail
	if r.failed {
		if !containsChain(d.chains, own) && len(d.chains) < maxChains {
			d.chains = append(d.chains, own)
		}
		return
	}
	if !p.rule.readOnly || p.rule.think || !r.progress {
		return
	}
	for _, f := range d.chains {
		if f != own && f.stage == failCounting && f.count > 0 {
			f.stage, f.diagnosed = failHinted, true
		}
	}
}

func containsChain(chains []*failState, f *failState) bool {
	for _, c := range chains {
		if c == f {
			return true
		}
	}
	return false
}
