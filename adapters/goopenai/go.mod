module github.com/toolguard/toolguard/adapters/goopenai

go 1.24

require (
	github.com/sashabaranov/go-openai v1.43.0
	github.com/stretchr/testify v1.12.1
	github.com/toolguard/toolguard v0.2.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
