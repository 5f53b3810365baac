package otelguard

import "go.opentelemetry.io/otel/attribute"

// The names below are those of the OpenTelemetry semantic conventions for
// generative AI, which left the core semantic conventions for a registry of
// their own (the open-telemetry/semantic-conventions-genai repository); core
// has deprecated its copies of them, and neither has Go bindings of these
// names, so they are defined here. They follow the GenAI conventions'
// registry as published under its own schema URL (execute_tool spans,
// gen_ai.tool.*, gen_ai.agent.name, error.type); the histogram
// gen_ai.execute_tool.duration follows the pattern of their
// gen_ai.client.operation.duration (a histogram in seconds with
// gen_ai.operation.name and error.type). The GenAI conventions are in
// development and have no tagged release yet: GenAIConventionsVersion is the
// version their registry's manifest publishes, and SchemaURL its schema URL.
const GenAIConventionsVersion = "1.42.0-dev"

// SchemaURL is the schema of the conventions the Observer follows: the
// GenAI conventions' own schema (a development schema, hence gen-ai-dev),
// not a core semantic conventions schema.
const SchemaURL = "https://opentelemetry.io/schemas/gen-ai-dev/" + GenAIConventionsVersion

// Attribute keys of the GenAI conventions that the Observer sets.
const (
	AttrOperationName   = attribute.Key("gen_ai.operation.name")
	AttrToolName        = attribute.Key("gen_ai.tool.name")
	AttrToolCallID      = attribute.Key("gen_ai.tool.call.id")
	AttrToolType        = attribute.Key("gen_ai.tool.type")
	AttrToolDescription = attribute.Key("gen_ai.tool.description")
	AttrAgentName       = attribute.Key("gen_ai.agent.name")
	AttrErrorType       = attribute.Key("error.type")
)

// OperationExecuteTool is the gen_ai.operation.name of a tool call.
const OperationExecuteTool = "execute_tool"

// MetricExecuteToolDuration is the name of the histogram of tool call
// durations, in seconds.
const MetricExecuteToolDuration = "gen_ai.execute_tool.duration"

// Tool types of gen_ai.tool.type.
const (
	ToolTypeFunction  = "function"  // a function the application runs
	ToolTypeExtension = "extension" // a tool run by an agent-side extension, such as an MCP server
	ToolTypeDatastore = "datastore" // a tool that reads a data store
)
