package otelguard

import "go.opentelemetry.io/otel/attribute"

// The names below are those of the OpenTelemetry semantic conventions for
// generative AI, defined here because the GenAI conventions left the core
// semantic conventions (the last Go bindings that carry them are
// go.opentelemetry.io/otel/semconv/v1.41.0) and have no Go bindings of
// their own yet. They follow the GenAI conventions as published with
// semantic conventions v1.41.0 (execute_tool spans, gen_ai.tool.*,
// gen_ai.agent.name, error.type); the histogram
// gen_ai.execute_tool.duration follows the pattern of their
// gen_ai.client.operation.duration (a histogram in seconds with
// gen_ai.operation.name and error.type). All of them are in development
// upstream and may change: GenAIConventionsVersion says which version they
// follow.
const GenAIConventionsVersion = "1.41.0"

// SchemaURL is the schema of the conventions the Observer follows.
const SchemaURL = "https://opentelemetry.io/schemas/" + GenAIConventionsVersion

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
