// The tools' names, descriptions and input JSON Schemas: data, in one place.
#include "mcp/tool_schemas.h"

namespace abx::mcp {
namespace {

// Written as JSON so it reads like what clients receive from tools/list.
constexpr const char* kToolsJson = R"json([
 {"name": "sandbox_create",
  "description": "Create a new isolated Linux sandbox and return its id. Pass the id to the other tools; it is NOT killed when this session ends (it lives until its timeout or sandbox_kill). For quick work, skip this: run_code and run_command without sandbox_id use a session sandbox made on first use.",
  "inputSchema": {"type": "object", "properties": {
    "template": {"type": "string", "description": "Template name, e.g. base or code-interpreter-v1", "default": "base"},
    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds the sandbox lives before it is killed", "default": 300},
    "envs": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment variables for everything run in the sandbox"},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Free-form string labels"},
    "allow_internet_access": {"type": "boolean", "description": "false: the sandbox reaches no network at all (pip install and downloads fail)", "default": true}},
   "additionalProperties": false}},
 {"name": "sandbox_list",
  "description": "List the running sandboxes with their ids, templates, metadata and end times.",
  "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}},
 {"name": "sandbox_info",
  "description": "Describe one sandbox: template, state, start and end time, resources, metadata.",
  "inputSchema": {"type": "object", "properties": {
    "sandbox_id": {"type": "string", "description": "The sandbox id"}},
   "required": ["sandbox_id"], "additionalProperties": false}},
 {"name": "sandbox_set_timeout",
  "description": "Set how many seconds from now the sandbox lives before it is killed.",
  "inputSchema": {"type": "object", "properties": {
    "sandbox_id": {"type": "string", "description": "The sandbox id"},
    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds from now"}},
   "required": ["sandbox_id", "timeout"], "additionalProperties": false}},
 {"name": "sandbox_kill",
  "description": "Kill a sandbox now; its files and processes are gone.",
  "inputSchema": {"type": "object", "properties": {
    "sandbox_id": {"type": "string", "description": "The sandbox id"}},
   "required": ["sandbox_id"], "additionalProperties": false}},
 {"name": "sandbox_events",
  "description": "Review what happened in a sandbox, oldest first: its lifecycle (created, timeout set, paused, resumed, ended and why), the commands run (argv, cwd, env names, exit code, out of memory) the files uploaded, downloaded or removed (path, bytes, sha256) and its network traffic (DNS names asked, connections and requests through the egress proxy: allowed, or why not). Works for a sandbox that ended within the last day. A page at a time: pass the next_since it returns as since for the rest.",
  "inputSchema": {"type": "object", "properties": {
    "sandbox_id": {"type": "string", "description": "The sandbox id"},
    "type": {"type": "string", "enum": ["lifecycle", "commands", "files", "network"], "description": "Only events of this kind"},
    "since": {"type": "integer", "minimum": 0, "description": "Only events after this seq (the next_since of the previous call)"}},
   "required": ["sandbox_id"], "additionalProperties": false}},
 {"name": "run_code",
  "description": "Run code in a stateful interpreter (variables and imports persist between calls, like a notebook). Returns stdout, stderr, the value of the last expression and any error. Without sandbox_id it uses the session sandbox (made on first use, killed when the session ends).",
  "inputSchema": {"type": "object", "properties": {
    "code": {"type": "string", "description": "The code to run"},
    "language": {"type": "string", "enum": ["python", "javascript", "bash"], "default": "python"},
    "context": {"type": "string", "description": "An interpreter context id to run in instead of the language's default context"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"},
    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the run is interrupted", "default": 300}},
   "required": ["code"], "additionalProperties": false}},
 {"name": "run_command",
  "description": "Run a shell command (bash -l -c) in a sandbox as user 'user' and return its stdout, stderr and exit code. With background: true it returns the pid at once and the command keeps running. Without sandbox_id it uses the session sandbox (made on first use, killed when the session ends).",
  "inputSchema": {"type": "object", "properties": {
    "command": {"type": "string", "description": "A bash command line, e.g. 'ls -la /home/user | head'"},
    "cwd": {"type": "string", "description": "Working directory (default /home/user)"},
    "envs": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables"},
    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed", "default": 60},
    "background": {"type": "boolean", "description": "Start it and return its pid without waiting", "default": false},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["command"], "additionalProperties": false}},
 {"name": "file_write",
  "description": "Write text to a file in the sandbox, creating parent directories; an existing file is replaced.",
  "inputSchema": {"type": "object", "properties": {
    "path": {"type": "string", "description": "Absolute path in the sandbox, e.g. /home/user/data.csv"},
    "content": {"type": "string", "description": "The file's new text"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["path", "content"], "additionalProperties": false}},
 {"name": "file_read",
  "description": "Read a text file from the sandbox. Binary files are refused: use download for them.",
  "inputSchema": {"type": "object", "properties": {
    "path": {"type": "string", "description": "Absolute path in the sandbox"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["path"], "additionalProperties": false}},
 {"name": "file_list",
  "description": "List a directory in the sandbox: names, types, sizes.",
  "inputSchema": {"type": "object", "properties": {
    "path": {"type": "string", "description": "Absolute directory path in the sandbox", "default": "/home/user"},
    "depth": {"type": "integer", "minimum": 1, "description": "How many levels to descend", "default": 1},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "additionalProperties": false}},
 {"name": "file_remove",
  "description": "Remove a file or a whole directory in the sandbox.",
  "inputSchema": {"type": "object", "properties": {
    "path": {"type": "string", "description": "Absolute path in the sandbox"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["path"], "additionalProperties": false}},
 {"name": "upload",
  "description": "Copy a file from the host into the sandbox. Only host paths under the directories the user allowed (abx mcp serve --allow-dir; with none, this tool is off) can be read.",
  "inputSchema": {"type": "object", "properties": {
    "host_path": {"type": "string", "description": "File on the host, absolute or relative to the server's working directory"},
    "path": {"type": "string", "description": "Destination path in the sandbox"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["host_path", "path"], "additionalProperties": false}},
 {"name": "download",
  "description": "Copy a file from the sandbox to the host (binary-safe). Only host paths under the directories the user allowed (abx mcp serve --allow-dir; with none, this tool is off) can be written.",
  "inputSchema": {"type": "object", "properties": {
    "path": {"type": "string", "description": "File in the sandbox"},
    "host_path": {"type": "string", "description": "Destination on the host, absolute or relative to the server's working directory"},
    "sandbox_id": {"type": "string", "description": "Sandbox to use; omit for the session sandbox"}},
   "required": ["path", "host_path"], "additionalProperties": false}}
])json";

}  // namespace

const nlohmann::json& tool_definitions() {
  static const nlohmann::json tools = nlohmann::json::parse(kToolsJson);
  return tools;
}

}  // namespace abx::mcp
