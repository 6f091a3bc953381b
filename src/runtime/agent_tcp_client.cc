#include "runtime/agent_tcp_client.h"

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
  request.timeout_ms = timeout_ms;
  request.ring_bytes = ring_bytes;
  auto reply = call_for_reply(request);
  if (!reply) return reply.error();
  return reply->pid;
}

Result<OutputSlice> AgentTcpClient::read(int pid, uint64_t offset, uint32_t max_bytes) {
  proto::Request request;
  request.type = proto::RequestType::kRead;
  request.pid = pid;
  request.offset = offset;
  request.max_bytes = max_bytes;
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

}  // namespace abx::runtime
