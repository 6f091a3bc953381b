#include "agent/protocol.h"

#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstring>

namespace abx::agent::proto {
namespace {

class Writer {
 public:
  Writer() = default;
  explicit Writer(size_t expected) { out_.reserve(expected); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// Every read checks bounds; a short or malformed message fails as a whole.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool u8(uint8_t* v) { return raw(v, sizeof *v); }
  bool u32(uint32_t* v) { return raw(v, sizeof *v); }
  bool i32(int32_t* v) { return raw(v, sizeof *v); }
  bool u64(uint64_t* v) { return raw(v, sizeof *v); }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > in_.size() - pos_) return false;
    s->assign(in_, pos_, n);
    pos_ += n;
    return true;
  }
  bool strs(std::vector<std::string>* v) {
    uint32_t n = 0;
    if (!u32(&n) || n > in_.size() - pos_) return false;
    v->resize(n);
    for (auto& s : *v)
      if (!str(&s)) return false;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  bool raw(void* p, size_t n) {
    if (n > in_.size() - pos_) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  const std::string& in_;
  size_t pos_ = 0;
};

std::vector<std::string> flatten(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) {
    out.push_back(k);
    out.push_back(v);
  }
  return out;
}

bool unflatten(const std::vector<std::string>& flat, std::map<std::string, std::string>* env) {
  if (flat.size() % 2 != 0) return false;
  for (size_t i = 0; i < flat.size(); i += 2) (*env)[flat[i]] = flat[i + 1];
  return true;
}

void write_spec(Writer& w, const ProcessSpec& s) {
  w.strs(s.argv);
  w.strs(flatten(s.env));
  w.str(s.cwd);
  w.u32(s.uid);
  w.u32(s.gid);
  w.u8(s.pty);
  w.u32(s.pty_cols);
  w.u32(s.pty_rows);
  w.u8(s.stdin_pipe);
}

bool read_spec(Reader& r, ProcessSpec* s) {
  std::vector<std::string> env;
  uint8_t pty = 0, stdin_pipe = 0;
  uint32_t cols = 0, rows = 0;
  if (!r.strs(&s->argv) || !r.strs(&env) || !unflatten(env, &s->env) || !r.str(&s->cwd) ||
      !r.u32(&s->uid) || !r.u32(&s->gid) || !r.u8(&pty) || !r.u32(&cols) || !r.u32(&rows) ||
      !r.u8(&stdin_pipe))
    return false;
  s->pty = pty != 0;
  s->stdin_pipe = stdin_pipe != 0;
  s->pty_cols = static_cast<uint16_t>(cols);
  s->pty_rows = static_cast<uint16_t>(rows);
  return true;
}

void write_file_request(Writer& w, const FileRequest& f) {
  w.u8(static_cast<uint8_t>(f.op));
  w.str(f.path);
  w.str(f.other);
  w.u32(f.uid);
  w.u32(f.gid);
  w.u32(f.depth);
  w.u32(f.mode);
  w.strs(flatten(f.metadata));
}

bool read_file_request(Reader& r, FileRequest* f) {
  uint8_t op = 0;
  if (!r.u8(&op) || op < static_cast<uint8_t>(FileOp::kStat) ||
      op > static_cast<uint8_t>(FileOp::kReadFile))
    return false;
  f->op = static_cast<FileOp>(op);
  std::vector<std::string> metadata;
  return r.str(&f->path) && r.str(&f->other) && r.u32(&f->uid) && r.u32(&f->gid) &&
         r.u32(&f->depth) && r.u32(&f->mode) && r.strs(&metadata) &&
         unflatten(metadata, &f->metadata);
}

void write_entry(Writer& w, const EntryInfo& e) {
  w.str(e.name);
  w.str(e.path);
  w.u8(static_cast<uint8_t>(e.type));
  w.u64(e.size);
  w.u32(e.mode);
  w.str(e.owner);
  w.str(e.group);
  w.u64(static_cast<uint64_t>(e.mtime_sec));
  w.u64(static_cast<uint64_t>(e.mtime_nsec));
  w.str(e.symlink_target);
  w.u8(static_cast<uint8_t>(e.target_type));
  w.u32(e.target_mode);
  w.strs(flatten(e.metadata));
}

bool read_entry(Reader& r, EntryInfo* e) {
  uint8_t type = 0, target_type = 0;
  uint64_t sec = 0, nsec = 0;
  std::vector<std::string> metadata;
  constexpr auto kLastType = static_cast<uint8_t>(FileType::kOther);
  if (!r.str(&e->name) || !r.str(&e->path) || !r.u8(&type) || type > kLastType ||
      !r.u64(&e->size) || !r.u32(&e->mode) || !r.str(&e->owner) || !r.str(&e->group) ||
      !r.u64(&sec) || !r.u64(&nsec) || !r.str(&e->symlink_target) || !r.u8(&target_type) ||
      target_type > kLastType || !r.u32(&e->target_mode) || !r.strs(&metadata) ||
      !unflatten(metadata, &e->metadata))
    return false;
  e->type = static_cast<FileType>(type);
  e->target_type = static_cast<FileType>(target_type);
  e->mtime_sec = static_cast<int64_t>(sec);
  e->mtime_nsec = static_cast<int64_t>(nsec);
  return true;
}

}  // namespace

std::string encode(const InitConfig& c) {
  Writer w;
  w.str(c.hostname);
  w.u64(c.disk_bytes);
  w.strs(c.lower_layers);
  std::vector<std::string> binds;
  for (const auto& [host, inside] : c.binds) {
    binds.push_back(host);
    binds.push_back(inside);
  }
  w.strs(binds);
  w.u8(c.full_id_map);
  w.str(c.seccomp_bpf);
  w.u8(c.host_writable_dir);
  w.strs(c.proc_views);
  w.u8(c.workload_cgroup);
  w.str(c.nameserver);
  w.u8(c.raw_sockets);
  w.u8(c.allow_setid);
  w.u32(c.tcp_port);
  w.str(c.tcp_token);
  w.u8(c.idmapped_layers);
  w.strs(c.volumes);
  return w.take();
}

bool decode(const std::string& bytes, InitConfig* c) {
  Reader r(bytes);
  std::vector<std::string> binds;
  uint8_t full = 0, writable = 0, workload = 0, raw = 0, setid = 0, idmapped = 0;
  uint32_t tcp_port = 0;
  if (!r.str(&c->hostname) || !r.u64(&c->disk_bytes) || !r.strs(&c->lower_layers) ||
      !r.strs(&binds) || binds.size() % 2 != 0 || !r.u8(&full) || !r.str(&c->seccomp_bpf) ||
      !r.u8(&writable) || !r.strs(&c->proc_views) || !r.u8(&workload) || !r.str(&c->nameserver) ||
      !r.u8(&raw) || !r.u8(&setid) || !r.u32(&tcp_port) || tcp_port > 65535 ||
      !r.str(&c->tcp_token) || !r.u8(&idmapped) || !r.strs(&c->volumes) || !r.done())
    return false;
  c->tcp_port = static_cast<uint16_t>(tcp_port);
  for (size_t i = 0; i < binds.size(); i += 2) c->binds.emplace_back(binds[i], binds[i + 1]);
  c->full_id_map = full != 0;
  c->host_writable_dir = writable != 0;
  c->workload_cgroup = workload != 0;
  c->raw_sockets = raw != 0;
  c->allow_setid = setid != 0;
  c->idmapped_layers = idmapped != 0;
  return true;
}

namespace {
// A terminal's width or height: 1 to 65535 cells.
bool read_terminal_side(Reader& r, uint16_t* side) {
  uint32_t value = 0;
  if (!r.u32(&value) || value == 0 || value > 0xffff) return false;
  *side = static_cast<uint16_t>(value);
  return true;
}
}  // namespace

std::string encode(const Request& q) {
  Writer w;
  w.u8(static_cast<uint8_t>(q.type));
  if (q.type == RequestType::kSpawn) {
    write_spec(w, q.spec);
    // Absent: what an older daemon sends (and an older init understands).
    // In band implies supervised: that section carries its timeout and ring.
    const bool supervised = q.supervised || q.in_band;
    if (q.command_group || supervised) w.u8(q.command_group ? 1 : 0);
    if (supervised) {
      w.u8(1);
      w.str(q.label);
      w.u32(q.timeout_ms);
      w.u8(q.keep_stdin);
      if (q.ring_bytes > 0 || q.in_band)
        w.u32(q.ring_bytes > 0 ? q.ring_bytes : kDefaultTcpRingBytes);
      if (q.in_band) w.u8(1);  // absent: what an older daemon sends
    }
  } else if (q.type == RequestType::kOpen) {
    w.str(q.open.path);
    w.u32(q.open.uid);
    w.u32(q.open.gid);
  } else if (q.type == RequestType::kFile) {
    write_file_request(w, q.file);
  } else if (q.type == RequestType::kSignal) {
    w.u32(static_cast<uint32_t>(q.pid));
    w.u32(static_cast<uint32_t>(q.signo));
  } else if (q.type == RequestType::kCloseStdin) {
    w.u32(static_cast<uint32_t>(q.pid));
  } else if (q.type == RequestType::kRead) {
    w.u32(static_cast<uint32_t>(q.pid));
    w.u64(q.offset);
    w.u32(q.max_bytes);
    if (q.wait_ms > 0) w.u32(q.wait_ms);  // absent: what an older daemon sends
  } else if (q.type == RequestType::kInput) {
    w.u32(static_cast<uint32_t>(q.pid));
    w.str(q.input);
  } else if (q.type == RequestType::kResize) {
    w.u32(static_cast<uint32_t>(q.pid));
    w.u32(q.cols);
    w.u32(q.rows);
  }
  return w.take();
}

bool decode(const std::string& bytes, Request* q) {
  Reader r(bytes);
  uint8_t type = 0;
  if (!r.u8(&type)) return false;
  q->type = static_cast<RequestType>(type);
  switch (q->type) {
    case RequestType::kSpawn: {
      uint8_t group = 0, supervised = 0, keep_stdin = 0;
      if (!read_spec(r, &q->spec) || (!r.done() && (!r.u8(&group) || group > 1))) return false;
      if (!r.done() && (!r.u8(&supervised) || supervised != 1 || !r.str(&q->label) ||
                        q->label.size() > kMaxProcessLabel || !r.u32(&q->timeout_ms) ||
                        !r.u8(&keep_stdin) || keep_stdin > 1))
        return false;
      if (!r.done() &&
          (!r.u32(&q->ring_bytes) || q->ring_bytes == 0 || q->ring_bytes > kMaxRingBytes))
        return false;
      uint8_t in_band = 0;
      if (!r.done() && (!r.u8(&in_band) || in_band != 1)) return false;
      q->in_band = in_band == 1;
      q->command_group = group == 1;
      q->supervised = supervised == 1;
      // Only a pipe of its own can be kept: a pty's input is its master.
      q->keep_stdin = keep_stdin == 1;
      if (q->keep_stdin && (q->spec.pty || !q->spec.stdin_pipe)) return false;
      return r.done();
    }
    case RequestType::kAdopt:
    case RequestType::kList:
    case RequestType::kPrepareCheckpoint:
      return r.done();
    case RequestType::kSignal:
      return r.i32(&q->pid) && r.i32(&q->signo) && r.done();
    case RequestType::kCloseStdin:
      return r.i32(&q->pid) && r.done();
    case RequestType::kRead:
      if (!r.i32(&q->pid) || !r.u64(&q->offset) || !r.u32(&q->max_bytes) ||
          q->max_bytes > kMaxReadBytes)
        return false;
      if (!r.done() && (!r.u32(&q->wait_ms) || q->wait_ms == 0 || q->wait_ms > kMaxReadWaitMs))
        return false;
      return r.done();
    case RequestType::kInput:
      return r.i32(&q->pid) && r.str(&q->input) && q->input.size() <= kMaxInputBytes && r.done();
    case RequestType::kResize:
      return r.i32(&q->pid) && read_terminal_side(r, &q->cols) && read_terminal_side(r, &q->rows) &&
             r.done();
    case RequestType::kOpen:
      return r.str(&q->open.path) && r.u32(&q->open.uid) && r.u32(&q->open.gid) && r.done();
    case RequestType::kFile:
      return read_file_request(r, &q->file) && r.done();
  }
  return false;
}

std::string encode(const Reply& p) {
  Writer w;
  w.u32(static_cast<uint32_t>(p.pid));
  w.u32(static_cast<uint32_t>(p.errnum));
  w.str(p.step);
  return w.take();
}

bool decode(const std::string& bytes, Reply* p) {
  Reader r(bytes);
  return r.i32(&p->pid) && r.i32(&p->errnum) && r.str(&p->step) && r.done();
}

std::string encode(const FileReply& p) {
  Writer w;
  w.u32(static_cast<uint32_t>(p.errnum));
  w.str(p.step);
  w.str(p.detail);
  w.u8(p.done);
  w.u64(p.written);
  w.u32(static_cast<uint32_t>(p.entries.size()));
  for (const auto& e : p.entries) write_entry(w, e);
  if (!p.data.empty()) w.str(p.data);  // absent: what an older init sends
  return w.take();
}

bool decode(const std::string& bytes, FileReply* p) {
  Reader r(bytes);
  uint8_t done = 0;
  uint32_t count = 0;
  if (!r.i32(&p->errnum) || !r.str(&p->step) || !r.str(&p->detail) || !r.u8(&done) ||
      !r.u64(&p->written) || !r.u32(&count) || count > bytes.size())
    return false;
  p->done = done != 0;
  p->entries.resize(count);
  for (auto& e : p->entries)
    if (!read_entry(r, &e)) return false;
  if (!r.done() && (!r.str(&p->data) || p->data.empty() || p->data.size() > kFilePieceBytes))
    return false;
  return r.done();
}

// Tagged, so a daemon can tell it from the Reply of an older init that
// could not decode the kAdopt.
constexpr uint32_t kSupervisedTag = 0x53555056;  // "SUPV"

std::string encode(const Supervised& p) {
  Writer w;
  w.u32(kSupervisedTag);
  w.u32(static_cast<uint32_t>(p.pid));
  w.u8(p.ended);
  w.u8(p.pty);
  w.str(p.label);
  w.u8(p.done);
  w.u8(p.has_stdin);
  if (p.in_band || p.delivered > 0) {  // absent: what an older daemon can read
    w.u8(p.in_band);
    w.u64(p.delivered);
  }
  return w.take();
}

bool decode(const std::string& bytes, Supervised* p) {
  Reader r(bytes);
  uint32_t tag = 0;
  uint8_t ended = 0, pty = 0, done = 0, has_stdin = 0, in_band = 0;
  if (!r.u32(&tag) || tag != kSupervisedTag || !r.i32(&p->pid) || !r.u8(&ended) || !r.u8(&pty) ||
      !r.str(&p->label) || p->label.size() > kMaxProcessLabel || !r.u8(&done) || !r.u8(&has_stdin))
    return false;
  if (!r.done() && (!r.u8(&in_band) || in_band > 1 || !r.u64(&p->delivered))) return false;
  if (!r.done()) return false;
  p->in_band = in_band != 0;
  p->has_stdin = has_stdin != 0;
  p->ended = ended != 0;
  p->pty = pty != 0;
  p->done = done != 0;
  return true;
}

// Tagged like Supervised, so a daemon tells it from an older init's Reply.
constexpr uint32_t kReadReplyTag = 0x52494e47;  // "RING"

std::string encode(const ReadReplyView& p) {
  size_t size = 64 + p.step.size();
  for (const auto& chunk : p.chunks) size += 16 + chunk.bytes.size();
  Writer w(size);
  w.u32(kReadReplyTag);
  w.u32(static_cast<uint32_t>(p.errnum));
  w.str(p.step);
  w.u64(p.start);
  w.u64(p.end);
  w.u8(p.ended);
  w.u32(static_cast<uint32_t>(p.wait_status));
  w.u32(static_cast<uint32_t>(p.chunks.size()));
  for (const auto& chunk : p.chunks) {
    w.u8(static_cast<uint8_t>(chunk.stream));
    w.u64(chunk.offset);
    w.str(chunk.bytes);
  }
  return w.take();
}

std::string encode(const ReadReply& p) {
  ReadReplyView view{
      p.errnum, p.step, p.slice.start, p.slice.end, p.slice.ended, p.slice.wait_status, {}};
  for (const auto& chunk : p.slice.chunks)
    view.chunks.push_back({chunk.stream, chunk.offset, chunk.bytes});
  return encode(view);
}

bool decode(const std::string& bytes, ReadReply* p) {
  Reader r(bytes);
  uint32_t tag = 0, count = 0;
  uint8_t ended = 0;
  if (!r.u32(&tag) || tag != kReadReplyTag || !r.i32(&p->errnum) || !r.str(&p->step) ||
      !r.u64(&p->slice.start) || !r.u64(&p->slice.end) || p->slice.start > p->slice.end ||
      !r.u8(&ended) || ended > 1 || !r.i32(&p->slice.wait_status) || !r.u32(&count) ||
      count > bytes.size())
    return false;
  p->slice.ended = ended == 1;
  p->slice.chunks.resize(count);
  uint64_t next = p->slice.start;
  for (auto& chunk : p->slice.chunks) {
    uint8_t stream = 0;
    if (!r.u8(&stream) || stream < 1 || stream > 2 || !r.u64(&chunk.offset) ||
        !r.str(&chunk.bytes) || chunk.offset < next ||
        chunk.bytes.size() > p->slice.end - chunk.offset)
      return false;
    chunk.stream = static_cast<runtime::OutputStream>(stream);
    next = chunk.offset + chunk.bytes.size();
  }
  return r.done();
}

Status check_readable_file(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::from_errno("stat", path);
  if (S_ISDIR(st.st_mode)) return Error{"open", EISDIR, path};
  if (!S_ISREG(st.st_mode)) return Error{kNotRegularStep, EINVAL, path};
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return Error::from_errno("statfs", path);
  if (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)
    return Error{kPseudoFileStep, EPERM, path};
  return {};
}

Reply reply_from(const Error& error) {
  Reply reply;
  reply.errnum = error.errnum;
  reply.step = error.detail.empty() ? error.step : error.step + " " + error.detail;
  if (reply.step.empty()) reply.step = "unknown step";
  return reply;
}

Error error_from(const Reply& reply) {
  return Error{"sandbox init: " + reply.step, reply.errnum, {}};
}

Status send_message(int sock, const std::string& bytes, const std::vector<int>& fds) {
  if (bytes.size() > kMaxMessage || fds.size() > kMaxFds)
    return Error{"send to sandbox init", EMSGSIZE, "request too large"};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Error::from_errno("send to sandbox init");
  return {};
}

Result<bool> recv_message(int sock, std::string* bytes, std::vector<UniqueFd>* fds) {
  // The message's size first (a seqpacket socket tells it with MSG_TRUNC), so
  // that a small request is not received into kMaxMessage zeroed bytes.
  ssize_t size;
  do size = ::recv(sock, nullptr, 0, MSG_PEEK | MSG_TRUNC);
  while (size < 0 && errno == EINTR);
  if (size < 0) return Error::from_errno("receive from sandbox socket");
  bytes->resize(std::clamp<size_t>(static_cast<size_t>(size), 1, kMaxMessage));
  iovec iov{bytes->data(), bytes->size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Error::from_errno("receive from sandbox socket");
  fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->emplace_back(fd);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
    return Error{"receive from sandbox socket", EMSGSIZE, "message truncated"};
  bytes->resize(static_cast<size_t>(n));
  if (n == 0 && fds->empty()) return false;
  return true;
}

std::string encode(const Hello& hello) {
  Writer w;
  w.u32(hello.version);
  w.str(hello.token);
  return w.take();
}

bool decode(const std::string& bytes, Hello* hello) {
  Reader r(bytes);
  return r.u32(&hello->version) && r.str(&hello->token) && r.done();
}

bool same_token(const std::string& a, const std::string& b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  const std::string& walk = differ ? a : b;  // same length when compared for real
  for (size_t i = 0; i < walk.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ walk[i]);
  return differ == 0 && !a.empty();
}

FrameReader::Next FrameReader::next(std::string* frame) {
  uint32_t size = 0;
  if (buffer_.size() < sizeof size) return Next::kMore;
  std::memcpy(&size, buffer_.data(), sizeof size);
  if (size > kMaxMessage) return Next::kTooBig;
  if (buffer_.size() - sizeof size < size) return Next::kMore;
  frame->assign(buffer_, sizeof size, size);
  buffer_.erase(0, sizeof size + size);
  return Next::kFrame;
}

std::string frame(const std::string& message) {
  const auto size = static_cast<uint32_t>(message.size());
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  return out + message;
}

Status send_frame(int sock, const std::string& message) {
  if (message.size() > kMaxMessage) return Error{"send frame", EMSGSIZE, {}};
  const std::string bytes = frame(message);
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(sock, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::from_errno("send frame");
    sent += static_cast<size_t>(n);
  }
  return {};
}

namespace {

// Reads exactly `size` bytes; false on EOF before any of them.
Result<bool> recv_exact(int sock, char* into, size_t size) {
  for (size_t got = 0; got < size;) {
    const ssize_t n = ::recv(sock, into + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("receive frame");
    if (n == 0) {
      if (got == 0) return false;
      return Error{"receive frame", EPROTO, "the connection ended inside a frame"};
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// Exactly one frame: a reply is never followed by anything unasked.
Result<bool> recv_frame(int sock, std::string* message) {
  uint32_t size = 0;
  auto header = recv_exact(sock, reinterpret_cast<char*>(&size), sizeof size);
  if (!header || !*header) return header;
  if (size > kMaxMessage) return Error{"receive frame", EMSGSIZE, {}};
  message->assign(size, '\0');
  auto body = recv_exact(sock, message->data(), size);
  if (!body) return body.error();
  if (!*body && size > 0)
    return Error{"receive frame", EPROTO, "the connection ended inside a frame"};
  return true;
}

}  // namespace abx::agent::proto
