#include "common/e2b_api.h"

#include <algorithm>

#include "common/base64.h"
#include "common/connect_frame.h"
#include "common/ids.h"

namespace abx::e2b {
namespace {

constexpr const char* kEnvdPort = "49983";
constexpr const char* kInterpreterPort = "49999";

Error sandbox_not_found(const std::string& id) { return Error{"sandbox " + id + " not found"}; }

// A malformed id names no sandbox: say so before asking the daemon (CLI and MCP alike).
Status check_sandbox_id(const std::string& id) {
  if (ids::is_valid_sandbox_id(id)) return {};
  return Error{"'" + id +
               "' is not a valid sandbox id: sandbox ids are lowercase letters and digits only"};
}

Result<json> parse_json(const std::string& body, const std::string& what) {
  auto parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) return Error{"bad JSON in the answer to " + what};
  return parsed;
}

}  // namespace

std::string describe_failure(const http::Response& response) {
  auto body = json::parse(response.body, nullptr, false);
  if (body.is_object() && body.contains("message") && body["message"].is_string()) {
    return body["message"].get<std::string>();
  }
  std::string text = response.body.substr(0, 200);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return "HTTP " + std::to_string(response.status) + (text.empty() ? "" : " " + text);
}

ControlPlane::ControlPlane(Endpoint endpoint)
    : endpoint_(std::move(endpoint)), client_(endpoint_.url) {}

Result<http::Response> ControlPlane::call(const std::string& method, const std::string& target,
                                          const std::string& body) const {
  http::Request request{method, target, {{"X-API-KEY", endpoint_.api_key}}, body};
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  auto response = client_.send(request);
  if (!response) {
    return Error{response.error().message() +
                 "; check that the daemon runs there (abx daemon status) or fix "
                 "ABX_SANDBOX_API_URL / `abx config set sandbox_api_url URL`"};
  }
  if (response->status == 401 || response->status == 403) {
    return Error{"the daemon at " + endpoint_.url.str() + " refused the API key (" +
                 describe_failure(*response) +
                 "); check `abx config get sandbox_api_key` or ABX_SANDBOX_API_KEY"};
  }
  return response;
}

Result<json> ControlPlane::create_sandbox(const json& request) const {
  auto response = call("POST", "/sandboxes", request.dump());
  if (!response) return response.error();
  if (response->status / 100 != 2) {
    return Error{"could not create the sandbox: " + describe_failure(*response)};
  }
  return parse_json(response->body, "POST /sandboxes");
}

Result<json> ControlPlane::list_sandboxes(const std::string& query) const {
  json all = json::array();
  std::string next_token;
  do {
    std::string target = "/v2/sandboxes?limit=100" + (query.empty() ? "" : "&" + query);
    if (!next_token.empty()) target += "&nextToken=" + http::url_encode(next_token);
    auto response = call("GET", target);
    if (!response) return response.error();
    if (response->status != 200) {
      return Error{"could not list sandboxes: " + describe_failure(*response)};
    }
    auto page = parse_json(response->body, "GET /v2/sandboxes");
    if (!page) return page.error();
    for (auto& item : *page) all.push_back(std::move(item));
    next_token = response->header("X-Next-Token");
  } while (!next_token.empty());
  return all;
}

Result<json> ControlPlane::get_sandbox(const std::string& id) const {
  if (Status st = check_sandbox_id(id); !st) return st.error();
  auto response = call("GET", "/sandboxes/" + http::url_encode(id));
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status != 200) {
    return Error{"could not look up sandbox " + id + ": " + describe_failure(*response)};
  }
  return parse_json(response->body, "GET /sandboxes/" + id);
}

Status ControlPlane::set_timeout(const std::string& id, int seconds) const {
  if (Status st = check_sandbox_id(id); !st) return st;
  const json body = {{"timeout", seconds}};
  auto response = call("POST", "/sandboxes/" + http::url_encode(id) + "/timeout", body.dump());
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status / 100 != 2) {
    return Error{"could not set the timeout of sandbox " + id + ": " + describe_failure(*response)};
  }
  return {};
}

Result<bool> ControlPlane::pause_sandbox(const std::string& id, bool keep_memory) const {
  if (Status st = check_sandbox_id(id); !st) return st.error();
  const std::string body = keep_memory ? "" : json{{"memory", false}}.dump();
  auto response = call("POST", "/sandboxes/" + http::url_encode(id) + "/pause", body);
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status == 409) return false;
  if (response->status / 100 != 2)
    return Error{"could not pause sandbox " + id + ": " + describe_failure(*response)};
  return true;
}

Status ControlPlane::resume_sandbox(const std::string& id, int seconds) const {
  if (Status st = check_sandbox_id(id); !st) return st;
  const json body = {{"timeout", seconds}};
  auto response = call("POST", "/sandboxes/" + http::url_encode(id) + "/connect", body.dump());
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status / 100 != 2)
    return Error{"could not resume sandbox " + id + ": " + describe_failure(*response)};
  return {};
}

Status ControlPlane::kill_sandbox(const std::string& id) const {
  if (Status st = check_sandbox_id(id); !st) return st;
  auto response = call("DELETE", "/sandboxes/" + http::url_encode(id));
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status / 100 != 2) {
    return Error{"could not kill sandbox " + id + ": " + describe_failure(*response)};
  }
  return {};
}

Result<SandboxPlane> SandboxPlane::open(const ControlPlane& control, const std::string& id,
                                        const std::string& user) {
  auto detail = control.get_sandbox(id);
  if (!detail) return detail.error();
  http::Headers headers{{"E2b-Sandbox-Id", id}, {"E2b-Sandbox-Port", kEnvdPort}};
  // No user: the sandbox's default (its template's USER, else `user`).
  if (!user.empty()) headers.emplace_back("Authorization", "Basic " + base64::encode(user + ":"));
  // A sandbox made with secure: false has no token: its team's key stands in.
  if (auto token = detail->value("envdAccessToken", ""); !token.empty()) {
    headers.emplace_back("X-Access-Token", token);
  } else {
    headers.emplace_back("X-API-KEY", control.endpoint().api_key);
  }
  return SandboxPlane(http::Client(control.endpoint().url), id, user, std::move(headers));
}

namespace {

// The daemon's 502 says whether the sandbox is gone or paused (E2B's shape:
// {"message": "The sandbox is paused: ..."}).
bool says_paused(const std::string& body) {
  const json doc = json::parse(body, nullptr, false);
  return doc.is_object() && doc.value("message", "").starts_with("The sandbox is paused");
}

}  // namespace

Error SandboxPlane::failure(int status, const std::string& body, const std::string& what) const {
  if (status == 502 && says_paused(body))
    return Error{"sandbox " + id_ + " is paused: abx resume " + id_};
  if (status == 502) return sandbox_not_found(id_);
  return Error{what + ": " + describe_failure({status, {}, body})};
}

Result<http::Response> SandboxPlane::rpc_response(const std::string& method,
                                                  const json& request) const {
  http::Request call{"POST", "/" + method, headers_, request.dump()};
  call.headers.emplace_back("Content-Type", "application/json");
  call.headers.emplace_back("Connect-Protocol-Version", "1");
  return client_.send(call);
}

Result<json> SandboxPlane::rpc(const std::string& method, const json& request) const {
  auto response = rpc_response(method, request);
  if (!response) return response.error();
  if (response->status != 200) return failure(response->status, response->body, method);
  return parse_json(response->body.empty() ? "{}" : response->body, method);
}

Result<std::unique_ptr<http::ResponseStream>> SandboxPlane::stream(
    const std::string& method, const json& request, const http::Headers& extra) const {
  http::Request call{"POST", "/" + method, headers_, connect::encode(request.dump())};
  call.headers.emplace_back("Content-Type", "application/connect+json");
  call.headers.emplace_back("Connect-Protocol-Version", "1");
  call.headers.insert(call.headers.end(), extra.begin(), extra.end());
  auto stream = client_.open(call);
  if (!stream) return stream.error();
  if ((*stream)->status() != 200) {
    auto body = (*stream)->read_all();
    return failure((*stream)->status(), body ? *body : "", method);
  }
  return stream;
}

std::string SandboxPlane::files_target(const std::string& path) const {
  std::string target = "/files?path=" + http::url_encode(path);
  if (!user_.empty()) target += "&username=" + http::url_encode(user_);
  return target;
}

Result<std::unique_ptr<http::ResponseStream>> SandboxPlane::download(
    const std::string& path) const {
  auto stream = client_.open({"GET", files_target(path), headers_, {}});
  if (!stream) return stream.error();
  const int status = (*stream)->status();
  if (status == 200) return stream;
  auto body = (*stream)->read_all();
  if (status == 404) return Error{path + " not found in sandbox " + id_};
  if (status == 400 && body) {
    return Error{"cannot download " + path + " (" + describe_failure({status, {}, *body}) +
                 "); pass -r if it is a directory"};
  }
  return failure(status, body ? *body : "", "download " + path);
}

Status SandboxPlane::upload(const std::string& path, const http::BodySource& body) const {
  http::Request call{"POST", files_target(path), headers_, {}};
  call.headers.emplace_back("Content-Type", "application/octet-stream");
  auto stream = client_.open(call, &body);
  if (!stream) return stream.error();
  auto answer = (*stream)->read_all();
  if (!answer) return answer.error();
  if ((*stream)->status() != 200) {
    return failure((*stream)->status(), *answer, "upload to " + path);
  }
  return {};
}

http::Headers SandboxPlane::interpreter_headers() const {
  http::Headers headers = headers_;
  for (auto& [name, value] : headers) {
    if (name == "E2b-Sandbox-Port") value = kInterpreterPort;
  }
  headers.emplace_back("Content-Type", "application/json");
  return headers;
}

Result<std::unique_ptr<http::ResponseStream>> SandboxPlane::execute(const json& request) const {
  auto stream = client_.open({"POST", "/execute", interpreter_headers(), request.dump()});
  if (!stream) return stream.error();
  if ((*stream)->status() == 200) return stream;
  auto body = (*stream)->read_all();
  return failure((*stream)->status(), body ? *body : "", "run code");
}

Result<json> ControlPlane::create_snapshot(const std::string& id, const std::string& name) const {
  if (Status st = check_sandbox_id(id); !st) return st.error();
  const json body = name.empty() ? json::object() : json{{"name", name}};
  auto response = call("POST", "/sandboxes/" + http::url_encode(id) + "/snapshots", body.dump());
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status / 100 != 2)
    return Error{"could not snapshot sandbox " + id + ": " + describe_failure(*response)};
  return parse_json(response->body, "POST /sandboxes/" + id + "/snapshots");
}

Result<json> ControlPlane::list_snapshots(const std::string& sandbox_id) const {
  json all = json::array();
  std::string next_token;
  do {
    std::string target = "/snapshots?limit=1000";
    if (!sandbox_id.empty()) target += "&sandboxID=" + http::url_encode(sandbox_id);
    if (!next_token.empty()) target += "&nextToken=" + http::url_encode(next_token);
    auto response = call("GET", target);
    if (!response) return response.error();
    if (response->status != 200)
      return Error{"could not list snapshots: " + describe_failure(*response)};
    auto page = parse_json(response->body, "GET /snapshots");
    if (!page) return page.error();
    for (auto& item : *page) all.push_back(std::move(item));
    next_token = response->header("X-Next-Token");
  } while (!next_token.empty());
  return all;
}

Result<bool> ControlPlane::delete_snapshot(const std::string& snapshot_id) const {
  if (!ids::is_valid_sandbox_id(snapshot_id))
    return Error{"'" + snapshot_id + "' is not a snapshot id (see `abx snapshot list`)"};
  auto response = call("DELETE", "/templates/" + http::url_encode(snapshot_id));
  if (!response) return response.error();
  if (response->status == 404) return false;
  if (response->status / 100 != 2)
    return Error{"could not remove snapshot " + snapshot_id + ": " + describe_failure(*response)};
  return true;
}

Result<json> ControlPlane::fork_sandbox(const std::string& id, int count, int timeout_sec) const {
  if (Status st = check_sandbox_id(id); !st) return st.error();
  json body = {{"count", count}};
  if (timeout_sec > 0) body["timeout"] = timeout_sec;
  auto response = call("POST", "/sandboxes/" + http::url_encode(id) + "/fork", body.dump());
  if (!response) return response.error();
  if (response->status == 404) return sandbox_not_found(id);
  if (response->status / 100 != 2)
    return Error{"could not fork sandbox " + id + ": " + describe_failure(*response)};
  return parse_json(response->body, "POST /sandboxes/" + id + "/fork");
}

namespace {

// A string as it is, unless it holds a control character (a command's output
// with its newlines, or a terminal escape a sandbox printed): then quoted and
// escaped as JSON, so that each event stays one line and no sandbox output
// reaches the reader's terminal as a control sequence.
std::string detail_text(const json& value) {
  if (!value.is_string()) return value.dump();
  const auto& text = value.get_ref<const std::string&>();
  const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  return plain ? text : value.dump();
}

}  // namespace

std::string event_details(const json& event) {
  std::string out;
  for (const auto& [key, value] : event.items()) {
    if (key == "seq" || key == "at" || key == "type" || key == "event") continue;
    if (value.is_null() || (value.is_string() && value.get<std::string>().empty())) continue;
    out += (out.empty() ? "" : " ") + key + "=" + detail_text(value);
  }
  return out;
}

Result<json> ControlPlane::sandbox_events(const std::string& id, const std::string& query) const {
  if (Status st = check_sandbox_id(id); !st) return st.error();
  const std::string target =
      "/abx/v1/sandboxes/" + http::url_encode(id) + "/events" + (query.empty() ? "" : "?" + query);
  auto response = call("GET", target);
  if (!response) return response.error();
  if (response->status == 404) {
    return Error{"no events of sandbox " + id +
                 " (unknown, another team's, or ended over a day ago)"};
  }
  if (response->status != 200)
    return Error{"could not read the events of " + id + ": " + describe_failure(*response)};
  json events = json::array();
  for (size_t start = 0; start < response->body.size();) {
    size_t end = response->body.find('\n', start);
    if (end == std::string::npos) end = response->body.size();
    auto event = json::parse(response->body.substr(start, end - start), nullptr, false);
    if (!event.is_object()) return Error{"bad JSON line in the events of " + id};
    events.push_back(std::move(event));
    start = end + 1;
  }
  return events;
}

}  // namespace abx::e2b
