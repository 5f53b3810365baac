module github.com/toolguard/toolguard/cmd/toolguard

go 1.24.0

require (
	github.com/segmentio/encoding v0.5.4
	github.com/stretchr/testify v1.12.1
	github.com/toolguard/toolguard v0.2.0
	github.com/toolguard/toolguard/quotafile v0.2.0
	golang.org/x/net v0.47.0
	golang.org/x/term v0.37.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
)
