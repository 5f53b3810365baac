package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// rolloutTail is how much of the end of a Codex rollout is read for a
// call's exit status.
const rolloutTail = 1 << 20

// codexRolloutFailed reads the exit status of call id from the end of a
// Codex rollout: Codex writes the command's completion (an event_msg
// item_completed with exit_code and status) before it runs PostToolUse,
// whose tool_response is only the output. ok is false when the rollout
// does not say.
func codexRolloutFailed(path, id string) (failed, ok bool) {
	if path == "" || id == "" {
		return false, false
	}
	f, err := os.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, false
	}
	off := max(st.Size()-rolloutTail, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return false, false
	}
	quoted, _ := json.Marshal(id)
	for len(data) > 0 {
		i := bytes.LastIndexByte(bytes.TrimRight(data, "\n"), '\n')
		line := data[i+1:]
		data = data[:max(i, 0)]
		if !bytes.Contains(line, quoted) || !bytes.Contains(line, []byte("item_completed")) {
			if i < 0 {
				break
			}
			continue
		}
		var rec struct {
			Payload struct {
				Type string `json:"type"`
				Item struct {
					ID       string `json:"id"`
					Status   string `json:"status"`
					ExitCode *int   `json:"exit_code"`
				} `json:"item"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Payload.Type == "item_completed" && rec.Payload.Item.ID == id {
			it := rec.Payload.Item
			if it.ExitCode != nil {
				return *it.ExitCode != 0, true
			}
			return it.Status == "failed", it.Status != ""
		}
		if i < 0 {
			break
		}
	}
	return false, false
}
