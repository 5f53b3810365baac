module github.com/toolguard/toolguard/quotafile

go 1.24

require (
	github.com/agnivade/levenshtein v1.2.2
	github.com/stretchr/testify v1.12.1
	github.com/toolguard/toolguard v0.2.0
	go.yaml.in/yaml/v4 v4.0.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
