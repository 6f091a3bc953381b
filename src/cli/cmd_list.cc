// abx list (alias ls): the sandboxes as a table, ids only (-q), one line each
// from a template (--format '{{.ID}} {{.Template}}') or JSON lines (--format
// json); --metadata K=V keeps those whose metadata has every pair (E2B's
// `metadata` query on GET /v2/sandboxes, filtered by the daemon).
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/text.h"
#include "common/http_client.h"

namespace abx::cli {
namespace {

struct ListOptions {
  bool json = false;
  bool quiet = false;
  std::string format;
  std::vector<std::string> metadata;
  std::string state;  // "": every state
  size_t limit = 0;   // 0: all
};

// --state and --limit, on what the daemon listed (oldest first, as it lists).
json narrowed(const json& sandboxes, const ListOptions& options) {
  json out = json::array();
  for (const auto& sandbox : sandboxes) {
    if (!options.state.empty() && sandbox.value("state", "") != options.state) continue;
    if (options.limit && out.size() >= options.limit) break;
    out.push_back(sandbox);
  }
  return out;
}

// A METADATA cell longer than this ends with "…" (`abx info` shows it whole).
constexpr size_t kMetadataCell = 40;

std::string template_of(const json& sandbox) {
  const std::string alias = sandbox.value("alias", "");
  return alias.empty() ? sandbox.value("templateID", "") : alias;
}

std::string clipped(std::string text, size_t width) {
  if (text.size() <= width) return text;
  text.resize(width - 1);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
    text.pop_back();  // never half a UTF-8 character
  return text + "\u2026";
}

std::vector<std::string> table_row(const json& sandbox) {
  return {sandbox.value("sandboxID", ""),
          template_of(sandbox),
          rfc3339_to_local(sandbox.value("startedAt", "")),
          ends_text(sandbox),
          sandbox.value("state", ""),
          network_summary(sandbox),
          clipped(metadata_text(sandbox.value("metadata", json::object())), kMetadataCell)};
}

// The fields a --format template may name, Docker-style.
constexpr const char* kFields =
    "{{.ID}} {{.Template}} {{.TemplateID}} {{.State}} {{.StartedAt}} {{.EndAt}} {{.CPU}} "
    "{{.Memory}} {{.Disk}} {{.Network}} {{.Metadata}} {{.Metadata.KEY}}";

Result<std::string> field(const json& sandbox, const std::string& name) {
  if (name == "ID") return sandbox.value("sandboxID", "");
  if (name == "Template") return template_of(sandbox);
  if (name == "TemplateID") return sandbox.value("templateID", "");
  if (name == "State") return sandbox.value("state", "");
  if (name == "StartedAt") return sandbox.value("startedAt", "");
  if (name == "EndAt") return sandbox.value("endAt", "");
  if (name == "CPU") return std::to_string(sandbox.value("cpuCount", 0));
  if (name == "Memory") return std::to_string(sandbox.value("memoryMB", 0));
  if (name == "Disk") return std::to_string(sandbox.value("diskSizeMB", 0));
  if (name == "Network") return network_summary(sandbox);
  const json metadata = sandbox.value("metadata", json::object());
  if (name == "Metadata") return metadata_text(metadata);
  if (name.rfind("Metadata.", 0) == 0) return metadata.value(name.substr(9), "");
  return Error{"unknown field {{." + name + "}}; the fields are " + kFields};
}

// `template` with each {{.Field}} replaced and \t, \n made tab and newline.
Result<std::string> render(const std::string& format, const json& sandbox) {
  std::string out;
  for (size_t at = 0; at < format.size();) {
    if (format.compare(at, 2, "\\t") == 0 || format.compare(at, 2, "\\n") == 0) {
      out += format[at + 1] == 't' ? '\t' : '\n';
      at += 2;
      continue;
    }
    if (format.compare(at, 2, "{{") != 0) {
      out += format[at++];
      continue;
    }
    const size_t close = format.find("}}", at);
    if (close == std::string::npos) return Error{"a {{ without its }}"};
    std::string name = format.substr(at + 2, close - at - 2);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.empty() || name[0] != '.')
      return Error{"write fields as {{.ID}}; the fields are " + std::string(kFields)};
    auto value = field(sandbox, name.substr(1));
    if (!value) return value.error();
    out += *value;
    at = close + 2;
  }
  return out;
}

// A --format template's mistake, found at parse time (CLI11 puts "--format: "
// before it) rather than at the first sandbox listed; "" when it has none.
std::string format_error(const std::string& format) {
  if (format == "json") return {};
  auto line = render(format, json::object());
  return line ? std::string() : line.error().message();
}

Status print_formatted(const json& sandboxes, const std::string& format) {
  std::string out;
  for (const auto& sandbox : sandboxes) {
    if (format == "json") {
      out += sandbox.dump() + "\n";
      continue;
    }
    auto line = render(format, sandbox);
    if (!line) return line.error();
    out += sanitize_for_terminal(*line) + "\n";
  }
  std::cout << out;
  return {};
}

Result<int> run_list(const ListOptions& options) {
  auto query = metadata_query(options.metadata);
  if (!query) return query.error();
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto listed = ControlPlane(*endpoint).list_sandboxes(*query);
  if (!listed) return listed.error();
  const json narrowed_list = narrowed(*listed, options);
  const json* sandboxes = &narrowed_list;
  if (options.json) {
    std::cout << sandboxes->dump(2) << "\n";
    return 0;
  }
  if (options.quiet || !options.format.empty()) {
    auto printed = print_formatted(*sandboxes, options.quiet ? "{{.ID}}" : options.format);
    if (!printed) return printed.error();
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "TEMPLATE", "STARTED", "ENDS", "STATE", "NETWORK", "METADATA"}};
  for (const auto& sandbox : *sandboxes) rows.push_back(table_row(sandbox));
  std::cout << format_table(rows);
  return 0;
}

}  // namespace

std::string metadata_text(const json& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata.items())
    out += (out.empty() ? "" : ", ") + key + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

void add_list(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<ListOptions>();
  auto* app = root.add_subcommand("list", "List sandboxes (alias: ls)");
  app->alias("ls");
  app->add_flag("--json", options->json, "Print the raw JSON array");
  app->add_flag("-q,--quiet", options->quiet, "Print ids only, one a line");
  app->add_option("--format", options->format,
                  "One line per sandbox from a template, e.g. '{{.ID}}\\t{{.Template}}' "
                  "(fields: " +
                      std::string(kFields) + "), or json (one object a line)")
      ->check(value_check(format_error, "FORMAT"));
  app->add_option("--metadata", options->metadata,
                  "Only sandboxes whose metadata has K=V (repeatable: every pair)")
      ->check(key_value());
  app->add_option("--state", options->state, "Only running or only paused sandboxes")
      ->check(CLI::IsMember({"running", "paused"}));
  app->add_option("-n,--limit", options->limit, "At most this many sandboxes")
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  commands.push_back({app, [options] { return run_list(*options); }});
}

}  // namespace abx::cli
