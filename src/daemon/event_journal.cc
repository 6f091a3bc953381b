#include "daemon/event_journal.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include "common/clock.h"
#include "common/fd_io.h"
#include "common/ids.h"
#include "common/json_text.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path older(const fs::path& file) { return fs::path(file.string() + ".1"); }

// The events of `file`, parsed; a torn last line (a daemon killed mid-write) is skipped.
std::vector<json> load(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    json event = json::parse(line, nullptr, false);
    if (event.is_object()) out.push_back(std::move(event));
  }
  return out;
}

// The next seq after what `file` (and its older half) hold.
uint64_t next_seq(const fs::path& file) {
  uint64_t last = 0;
  for (const fs::path& path : {older(file), file})
    for (const json& event : load(path)) last = std::max(last, event.value("seq", uint64_t{0}));
  return last + 1;
}

// The first event of `file`: its first line.
std::optional<json> first_event(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  json event = json::parse(line, nullptr, false);
  if (!event.is_object()) return std::nullopt;
  return event;
}

// The last whole event of `file`, from its final kTailBytes (an `ended` is
// short; a longer last line is no `ended`); a torn last line is passed over.
std::optional<json> last_event(const fs::path& file) {
  constexpr std::streamoff kTailBytes = 64 << 10;
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - kTailBytes);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.seekg(from);
  if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size()))) return std::nullopt;
  size_t end = tail.size();
  while (end > 0) {
    const size_t newline = end >= 2 ? tail.rfind('\n', end - 2) : std::string::npos;
    const size_t start = newline == std::string::npos ? 0 : newline + 1;
    if (start == 0 && from > 0) return std::nullopt;  // the line began before the tail
    json event = json::parse(tail.substr(start, end - start), nullptr, false);
    if (event.is_object()) return event;
    end = start;
  }
  return std::nullopt;
}

UniqueFd open_append(const fs::path& file) {
  return UniqueFd(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
}

}  // namespace

void EventJournal::record(const std::string& type, const std::string& name, json fields) {
  json event = fields.is_object() ? std::move(fields) : json::object();
  std::lock_guard lock(mutex_);
  if (closed_) return;
  event["seq"] = next_seq_++;
  event["at"] = unix_ms_now();
  event["type"] = type;
  event["event"] = name;
  event["team"] = team_;
  const std::string line = json_text::dump(event) + "\n";
  if (written_ + line.size() > max_bytes_) rotate_locked();
  if (!fd_.valid()) return;
  if (auto written = write_all(fd_.get(), line, "record event", file_.string()); !written)
    spdlog::warn("{}", written.error().message());
  written_ += line.size();
}

void EventJournal::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  fd_.reset();
}

// The current file becomes the older half; a new one starts.
void EventJournal::rotate_locked() {
  fd_.reset();
  if (::rename(file_.c_str(), older(file_).c_str()) != 0)
    spdlog::warn("event journal {}: rotate: {}", file_.string(), std::strerror(errno));
  fd_ = open_append(file_);
  written_ = 0;
}

fs::path EventJournals::file_of(const std::string& id) const { return dir_ / (id + ".jsonl"); }

std::shared_ptr<EventJournal> EventJournals::open(const std::string& id,
                                                  const std::string& team) const {
  if (!ids::is_valid_sandbox_id(id) || !limits_.enabled) return nullptr;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::path file = file_of(id);
  UniqueFd fd = open_append(file);
  if (!fd.valid()) {
    spdlog::warn("sandbox {}: no event journal: {}: {}", id, file.string(), std::strerror(errno));
    return nullptr;
  }
  return std::make_shared<EventJournal>(file, team, next_seq(file), std::move(fd),
                                        limits_.max_bytes);
}

Result<std::vector<json>> EventJournals::read(const std::string& id, const std::string& team,
                                              uint64_t after, const std::string& type) const {
  std::vector<json> out;
  bool visible = false;  // any event of the caller's team, whatever the filters
  if (ids::is_valid_sandbox_id(id)) {
    const fs::path file = file_of(id);
    for (const fs::path& path : {older(file), file}) {
      for (json& event : load(path)) {
        if (event.value("team", "") != team) continue;
        visible = true;
        if (event.value("seq", uint64_t{0}) <= after) continue;
        if (!type.empty() && event.value("type", "") != type) continue;
        event.erase("team");
        out.push_back(std::move(event));
        if (out.size() >= kMaxRead) return out;
      }
    }
  }
  if (!visible)
    return Error::with_message("no events of sandbox " + id + " (unknown, or ended over " +
                                   std::to_string(limits_.retention.count()) + " h ago)",
                               ENOENT);
  return out;
}

uint64_t EventJournals::stamp(const std::string& id) const {
  if (!ids::is_valid_sandbox_id(id)) return 0;
  std::error_code ec;
  const fs::path file = file_of(id);
  const uint64_t size = fs::file_size(file, ec);
  if (ec) return 0;
  const auto written = fs::last_write_time(file, ec).time_since_epoch().count();
  return size ^ (static_cast<uint64_t>(written) << 20);
}

std::vector<std::string> EventJournals::ids() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.ends_with(".jsonl")) continue;  // the older halves (.jsonl.1) go with their sandbox
    const std::string id = name.substr(0, name.size() - 6);
    if (ids::is_valid_sandbox_id(id)) out.push_back(id);
  }
  return out;
}

std::optional<EventJournals::Bounds> EventJournals::bounds(const std::string& id,
                                                           const std::string& team) const {
  if (!ids::is_valid_sandbox_id(id)) return std::nullopt;
  const fs::path file = file_of(id);
  std::optional<json> last = last_event(file);
  if (!last || last->value("team", "") != team) return std::nullopt;
  std::error_code ec;
  std::optional<json> first = first_event(fs::exists(older(file), ec) ? older(file) : file);
  Bounds out{first ? std::move(*first) : json::object(), std::move(*last)};
  out.first.erase("team");
  out.last.erase("team");
  return out;
}

void EventJournals::sweep(const std::vector<std::string>& live) const {
  const std::set<std::string> keep(live.begin(), live.end());
  const auto cutoff = fs::file_time_type::clock::now() - limits_.retention;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string id = name.substr(0, name.find('.'));
    std::error_code time_ec;
    if (keep.count(id) || fs::last_write_time(it->path(), time_ec) > cutoff || time_ec) continue;
    fs::remove(it->path(), time_ec);
  }
}

Result<EventJournals::Limits> load_event_limits(const fs::path& config_file) {
  EventJournals::Limits limits;
  std::ifstream in(config_file);
  if (!in) return limits;
  const json doc = json::parse(in, nullptr, false);
  if (!doc.is_object() || !doc.contains("events")) return limits;
  const json& events = doc["events"];
  auto bad = [&](const std::string& why) {
    return Error::with_message("config " + config_file.string() + ": events." + why, kErrBadInput);
  };
  if (!events.is_object()) return bad(" must be an object");
  for (const auto& [key, value] : events.items()) {
    if (key == "enabled") {
      if (!value.is_boolean()) return bad("enabled must be true or false");
      limits.enabled = value.get<bool>();
      continue;
    }
    const bool size = key == "maxMiB";
    if (!size && key != "retentionHours")
      return bad(key + ": unknown (events takes maxMiB, retentionHours and enabled)");
    const int64_t most = size ? 1024 : 8760;
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > most)
      return bad(key + " must be a whole number from 1 to " + std::to_string(most));
    if (size)
      limits.max_bytes = value.get<uint64_t>() << 20;
    else
      limits.retention = std::chrono::hours(value.get<int64_t>());
  }
  return limits;
}

}  // namespace abx::daemon
