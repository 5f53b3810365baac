// Package quotafile loads policy files into a toolguard.Policy: the tool
// quotas an agent declares, from a YAML quota file or from the YAML front
// matter of a Markdown agent definition, or the whole policy (see The full
// policy below). A quota file:
//
//	tool_quota:
//	  Bash: 10        # calls per session of the tool Bash
//	  WebFetch: 5
//	  "mcp__github__*": 8 # a path.Match glob pattern
//	  defaults: 20    # every tool not named
//	loop_detection:
//	  same_call_window: 5 # similar calls allowed in the rolling window
//	  max_retries: 3      # equivalent failures before the next call stops
//
// tool_quota becomes Policy.AgentQuota (defaults is Quota.Default),
// same_call_window becomes Policy.WindowLimit and max_retries
// Policy.MaxFailures. Everything the file leaves out keeps its zero value
// (the default) with Parse and Load, or the base policy's value with Apply.
//
// # The full policy
//
// A plain file may set every other field of toolguard.Policy that a file can
// hold (all but Store, Breaker, Now, OnEvent and Logger), in snake case:
//
//	preset: loop-detection   # the base, replacing Apply's
//	max_calls_per_turn: off  # off is -1
//	action: abort
//	tools:
//	  "mcp__*": {max_repeats: 4}
//	  get_status: {exempt: true}
//	  list_issues: {read_only: false} # ToolPolicy.NotReadOnly
//
// Format writes the file of a Policy; Parse reads it back field for field.
// The README lists every key.
//
// # Reserved names
//
// In tool_quota the keys defaults and tools are reserved. A tool that is
// really called defaults or tools is written under the nested tools
// mapping, which takes any tool name:
//
//	tool_quota:
//	  defaults: 20    # every tool not named
//	  tools:
//	    defaults: 3   # the tool named "defaults"
//
// # Formats
//
// A name ending in .md or .markdown (any case) is a Markdown agent
// definition: if its first line is "---", the YAML up to the next "---"
// line is read, and keys other than tool_quota and loop_detection (name,
// description, tools, model, …) are ignored. A definition without front
// matter declares nothing. Any other name is a plain quota file, in which
// an unknown key is an error.
//
// # Strictness
//
// Every limit is a positive decimal integer: 0, negative numbers, floats,
// strings, booleans, null, octal or hexadecimal forms are errors, as are
// duplicate keys, unknown keys, values of the wrong kind, empty tool names,
// malformed glob patterns, merge keys and aliases where a value is read.
// Aliases are never expanded, so a "billion laughs" file costs no more than
// its size, and files larger than MaxSize (1 MiB) are refused. Every
// problem is an *Error naming the file, the line, the column and the key.
package quotafile
