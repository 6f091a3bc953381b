#include "runtime/agent_tcp_client.h"

#include <iterator>

namespace abx::runtime {

Result<AgentTcpClient> AgentTcpClient::start(UniqueFd connected, const std::string& token) {
  proto::Hello hello;
  hello.token = token;
  if (auto sent = proto::send_frame(connected.get(), proto::encode(hello)); !sent)
    return sent.error();
  return AgentTcpClient(std::move(connected));
}

Result<std::string> AgentTcpClient::call(const proto::Request& request) {
  if (auto sent = proto::send_frame(fd_.get(), proto::encode(request)); !sent) return sent.error();
  std::string reply;
  auto got = proto::recv_frame(fd_.get(), &reply);
  if (!got) return got.error();
  if (!*got)
    return Error{"sandbox agent", ECONNRESET,
                 "the agent closed the connection (a wrong token or protocol version?)"};
  return reply;
}

Result<proto::Reply> AgentTcpClient::call_for_reply(const proto::Request& request) {
  auto bytes = call(request);
  if (!bytes) return bytes.error();
  proto::Reply reply;
  if (!proto::decode(*bytes, &reply)) return Error{"sandbox agent", EPROTO, "malformed reply"};
  if (!reply.ok()) return proto::error_from(reply);
  return reply;
}

Result<int> AgentTcpClient::spawn(const ProcessSpec& spec, uint32_t timeout_ms,
                                  uint32_t ring_bytes) {
  proto::Request request;
  request.type = proto::RequestType::kSpawn;
  request.spec = spec;
  request.supervised = true;  // what carries the timeout and ring size on the wire
  request.label = spec.supervise_label;
  request.timeout_ms = timeout_ms;
  request.ring_bytes = ring_bytes;
  auto reply = call_for_reply(request);
  if (!reply) return reply.error();
  return reply->pid;
}

Result<OutputSlice> AgentTcpClient::read(int pid, uint64_t offset, uint32_t max_bytes,
                                         uint32_t wait_ms) {
  proto::Request request;
  request.type = proto::RequestType::kRead;
  request.pid = pid;
  request.offset = offset;
  request.max_bytes = max_bytes;
  request.wait_ms = wait_ms;
  auto bytes = call(request);
  if (!bytes) return bytes.error();
  proto::ReadReply reply;
  if (!proto::decode(*bytes, &reply)) return Error{"sandbox agent", EPROTO, "malformed reply"};
  if (reply.errnum != 0) return Error::with_message(reply.step, reply.errnum);
  return std::move(reply.slice);
}

Status AgentTcpClient::signal(int pid, int signo) {
  proto::Request request;
  request.type = proto::RequestType::kSignal;
  request.pid = pid;
  request.signo = signo;
  return status_of(request);
}

Status AgentTcpClient::send_input(int pid, const std::string& bytes) {
  proto::Request request;
  request.type = proto::RequestType::kInput;
  request.pid = pid;
  request.input = bytes;
  return status_of(request);
}

Status AgentTcpClient::close_stdin(int pid) {
  proto::Request request;
  request.type = proto::RequestType::kCloseStdin;
  request.pid = pid;
  return status_of(request);
}

Status AgentTcpClient::resize(int pid, uint16_t cols, uint16_t rows) {
  proto::Request request;
  request.type = proto::RequestType::kResize;
  request.pid = pid;
  request.cols = cols;
  request.rows = rows;
  return status_of(request);
}

Status AgentTcpClient::status_of(const proto::Request& request) {
  auto reply = call_for_reply(request);
  if (!reply) return reply.error();
  return {};
}

Result<std::vector<proto::Supervised>> AgentTcpClient::list() {
  proto::Request request;
  request.type = proto::RequestType::kList;
  if (auto s = proto::send_frame(fd_.get(), proto::encode(request)); !s) return s.error();
  std::vector<proto::Supervised> listed;
  for (;;) {
    std::string bytes;
    auto got = proto::recv_frame(fd_.get(), &bytes);
    if (!got) return got.error();
    if (!*got) return Error{"sandbox agent", ECONNRESET, "the agent closed the connection"};
    proto::Supervised process;
    if (!proto::decode(bytes, &process)) return Error{"sandbox agent", EPROTO, "malformed list"};
    if (process.pid != 0) listed.push_back(process);
    if (process.done) return listed;
  }
}

Status AgentTcpClient::send_file_request(const FileRequest& request) {
  proto::Request message;
  message.type = proto::RequestType::kFile;
  message.file = request;
  return proto::send_frame(fd_.get(), proto::encode(message));
}

// The worker's next answer; its failure as an Error.
Result<proto::FileReply> AgentTcpClient::next_file_reply() {
  std::string bytes;
  auto got = proto::recv_frame(fd_.get(), &bytes);
  if (!got) return got.error();
  if (!*got) return Error{"sandbox agent", ECONNRESET, "the file worker ended without an answer"};
  proto::FileReply reply;
  if (!proto::decode(bytes, &reply)) return Error{"sandbox agent", EPROTO, "malformed answer"};
  if (!reply.ok()) return Error{reply.step, reply.errnum, reply.detail};
  return reply;
}

Result<std::vector<EntryInfo>> AgentTcpClient::file_op(const FileRequest& request) && {
  if (auto s = send_file_request(request); !s) return s.error();
  std::vector<EntryInfo> entries;
  for (;;) {
    auto reply = next_file_reply();
    if (!reply) return reply.error();
    std::move(reply->entries.begin(), reply->entries.end(), std::back_inserter(entries));
    if (reply->done) return entries;
  }
}

Result<uint64_t> AgentTcpClient::write_file(const FileRequest& request, std::string_view data) && {
  if (auto s = send_file_request(request); !s) return s.error();
  auto opened = next_file_reply();  // the file is open: the data may come
  if (!opened) return opened.error();
  for (size_t at = 0; at < data.size(); at += proto::kFilePieceBytes)
    if (auto s = proto::send_frame(fd_.get(), std::string(data.substr(at, proto::kFilePieceBytes)));
        !s)
      return s.error();
  proto::FileReply commit;
  commit.written = data.size();
  if (auto s = proto::send_frame(fd_.get(), ""); !s) return s.error();
  if (auto s = proto::send_frame(fd_.get(), proto::encode(commit)); !s) return s.error();
  auto done = next_file_reply();
  if (!done) return done.error();
  return done->written;
}

Result<std::string> AgentTcpClient::read_file(FileRequest request) && {
  request.op = FileOp::kReadFile;
  if (auto s = send_file_request(request); !s) return s.error();
  std::string content;
  for (;;) {
    auto reply = next_file_reply();
    if (!reply) return reply.error();
    content += reply->data;
    if (!reply->done) continue;
    if (reply->written != content.size())
      return Error{"sandbox agent", EIO, request.path + ": the file arrived incomplete"};
    return content;
  }
}

}  // namespace abx::runtime
