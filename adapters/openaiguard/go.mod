module github.com/toolguard/toolguard/adapters/openaiguard

go 1.26.0

require (
	github.com/openai/openai-go/v3 v3.99.0
	github.com/stretchr/testify v1.12.1
	github.com/toolguard/toolguard v0.2.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
