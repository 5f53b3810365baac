package audit

import segjson "github.com/segmentio/encoding/json"

// decode decodes one record into v. It is encoding/json's Unmarshal in
// behaviour (same types, same errors) from a faster implementation: the
// audit of gigabytes of transcripts spends most of its time here. Error
// messages that name a field path still come from encoding/json, which
// parseRecord uses.
func decode(data []byte, v any) error { return segjson.Unmarshal(data, v) }
