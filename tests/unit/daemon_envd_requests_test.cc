// envd_requests: every sandbox-plane request body, valid and invalid. A bad
// field is a kErrBadInput error whose message names the field.
#include <gtest/gtest.h>

#include <csignal>

#include "daemon/envd_requests.h"

namespace abx::daemon {
namespace {

using nlohmann::json;

json parse(const char* text) { return json::parse(text); }

// The error of `result`, which must have failed as bad input.
template <class T>
std::string bad_input(const Result<T>& result) {
  EXPECT_FALSE(result.ok());
  if (result.ok()) return {};
  EXPECT_EQ(result.error().errnum, kErrBadInput) << result.error().message();
  return result.error().message();
}

#define EXPECT_BAD(result, field) EXPECT_NE(bad_input(result).find(field), std::string::npos)

TEST(EnvdRequests, StartFullAndCamelOrSnakeCase) {
  auto start = parse_start(parse(R"({
      "process": {"cmd": "/bin/bash", "args": ["-c", "echo hi"], "envs": {"A": "1"}, "cwd": "/tmp"},
      "tag": "t1", "pty": {"size": {"cols": 120, "rows": "40"}}, "stdin": false})"));
  ASSERT_TRUE(start) << start.error().message();
  EXPECT_EQ(start->config.cmd, "/bin/bash");
  EXPECT_EQ(start->config.args, (std::vector<std::string>{"-c", "echo hi"}));
  EXPECT_EQ(start->config.envs.at("A"), "1");
  EXPECT_EQ(start->config.cwd, "/tmp");
  EXPECT_EQ(start->tag, "t1");
  EXPECT_TRUE(start->pty);
  EXPECT_EQ(start->pty_cols, 120);
  EXPECT_EQ(start->pty_rows, 40);
  EXPECT_FALSE(start->stdin_pipe);

  auto minimal = parse_start(parse(R"({"process": {"cmd": "ls", "args": null}})"));
  ASSERT_TRUE(minimal);
  EXPECT_FALSE(minimal->pty);
  EXPECT_TRUE(minimal->stdin_pipe);
}

TEST(EnvdRequests, StartRefusesBadFields) {
  EXPECT_BAD(parse_start(parse("{}")), "process");
  EXPECT_BAD(parse_start(parse(R"({"process": "ls"})")), "process");
  EXPECT_BAD(parse_start(parse(R"({"process": {"args": []}})")), "process.cmd");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": 7}})")), "process.cmd");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls", "args": "-l"}})")), "process.args");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls", "args": [1]}})")), "process.args");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls", "envs": {"A": 1}}})")),
             "process.envs.A");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls", "cwd": []}})")), "process.cwd");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls"}, "tag": 5})")), "tag");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls"}, "stdin": "yes"})")), "stdin");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls"}, "pty": true})")), "pty");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls"}, "pty": {"size": {"cols": 70000,
      "rows": 24}}})")),
             "pty.size.cols");
  EXPECT_BAD(parse_start(parse(R"({"process": {"cmd": "ls"}, "pty": {"size": {"cols": 80,
      "rows": -1}}})")),
             "pty.size.rows");
}

TEST(EnvdRequests, SelectorByPidOrTag) {
  auto by_pid = parse_connect(parse(R"({"process": {"pid": "42"}})"));
  ASSERT_TRUE(by_pid);
  EXPECT_EQ(by_pid->process.pid, 42);
  auto by_tag = parse_connect(parse(R"({"process": {"tag": "web"}})"));
  ASSERT_TRUE(by_tag);
  EXPECT_EQ(by_tag->process.tag, "web");

  EXPECT_BAD(parse_connect(parse("{}")), "process");
  EXPECT_BAD(parse_connect(parse(R"({"process": {}})")), "process");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": 1099511627776}})")), "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": 18446744073709551615}})")), "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": -3}})")), "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": 1.5}})")), "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": "12abc"}})")), "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"pid": "99999999999999999999999"}})")),
             "process.pid");
  EXPECT_BAD(parse_connect(parse(R"({"process": {"tag": ["a"]}})")), "process.tag");
}

TEST(EnvdRequests, SendInputDecodesBase64) {
  auto stdin_input =
      parse_send_input(parse(R"({"process": {"pid": 7}, "input": {"stdin": "aGk="}})"));
  ASSERT_TRUE(stdin_input);
  EXPECT_EQ(stdin_input->bytes, "hi");
  EXPECT_FALSE(stdin_input->to_pty);
  auto pty_input = parse_send_input(parse(R"({"process": {"pid": 7}, "input": {"pty": "eA=="}})"));
  ASSERT_TRUE(pty_input);
  EXPECT_EQ(pty_input->bytes, "x");
  EXPECT_TRUE(pty_input->to_pty);

  EXPECT_BAD(parse_send_input(parse(R"({"process": {"pid": 7}})")), "input");
  EXPECT_BAD(parse_send_input(parse(R"({"process": {"pid": 7}, "input": {}})")), "input");
  EXPECT_BAD(parse_send_input(parse(R"({"process": {"pid": 7}, "input": {"stdin": "@@@"}})")),
             "input.stdin");
  EXPECT_BAD(parse_send_input(parse(R"({"process": {"pid": 7}, "input": {"pty": 3}})")),
             "input.pty");
  EXPECT_BAD(parse_send_input(parse(R"({"input": {"stdin": "aGk="}})")), "process");
}

TEST(EnvdRequests, SignalNamesAndNumbers) {
  auto kill = parse_signal(parse(R"({"process": {"pid": 7}, "signal": "SIGNAL_SIGKILL"})"));
  ASSERT_TRUE(kill);
  EXPECT_EQ(kill->signal, SIGKILL);
  auto term = parse_signal(parse(R"({"process": {"pid": 7}, "signal": 15})"));
  ASSERT_TRUE(term);
  EXPECT_EQ(term->signal, SIGTERM);

  EXPECT_BAD(parse_signal(parse(R"({"process": {"pid": 7}})")), "signal");
  EXPECT_BAD(parse_signal(parse(R"({"process": {"pid": 7}, "signal": "SIGNAL_UNSPECIFIED"})")),
             "signal");
  EXPECT_BAD(parse_signal(parse(R"({"process": {"pid": 7}, "signal": "SIGNAL_SIGSTOP"})")),
             "signal");
  // Ours beyond envd's enum: the CLI passes on Ctrl-C and hang-ups.
  auto interrupt = parse_signal(parse(R"({"process": {"pid": 7}, "signal": "SIGNAL_SIGINT"})"));
  ASSERT_TRUE(interrupt);
  EXPECT_EQ(interrupt->signal, SIGINT);
  auto hangup = parse_signal(parse(R"({"process": {"pid": 7}, "signal": 1})"));
  ASSERT_TRUE(hangup);
  EXPECT_EQ(hangup->signal, SIGHUP);
  EXPECT_BAD(parse_signal(parse(R"({"process": {"pid": 7}, "signal": 3})")), "signal");
  EXPECT_BAD(parse_signal(parse(R"({"process": {"pid": 7}, "signal": 4294967305})")), "signal");
}

TEST(EnvdRequests, UpdateNeedsPtySize) {
  auto update =
      parse_update(parse(R"({"process": {"pid": 7}, "pty": {"size": {"cols": 100, "rows": 30}}})"));
  ASSERT_TRUE(update);
  EXPECT_EQ(update->cols, 100);
  EXPECT_EQ(update->rows, 30);

  EXPECT_BAD(parse_update(parse(R"({"process": {"pid": 7}})")), "pty.size");
  EXPECT_BAD(parse_update(parse(R"({"process": {"pid": 7}, "pty": {"size": {"cols": 80}}})")),
             "pty.size");
  EXPECT_BAD(parse_update(
                 parse(R"({"process": {"pid": 7}, "pty": {"size": {"cols": 70000, "rows": 30}}})")),
             "pty.size.cols");
  EXPECT_BAD(
      parse_update(parse(R"({"process": {"pid": 7}, "pty": {"size": {"cols": 0, "rows": 30}}})")),
      "pty.size.cols");
  EXPECT_BAD(parse_update(parse(R"({"process": {"pid": 7}, "pty": {"size": "80x24"}})")),
             "pty.size");
}

TEST(EnvdRequests, FilesystemPaths) {
  auto stat = parse_path_request(parse(R"({"path": "~/a.txt"})"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->path, "~/a.txt");
  EXPECT_BAD(parse_path_request(parse("{}")), "path");
  EXPECT_BAD(parse_path_request(parse(R"({"path": ""})")), "path");
  EXPECT_BAD(parse_path_request(parse(R"({"path": 1})")), "path");
  EXPECT_BAD(parse_path_request(json{{"path", std::string("a\0b", 3)}}), "path");

  auto move = parse_move(parse(R"({"source": "/a", "destination": "/b"})"));
  ASSERT_TRUE(move);
  EXPECT_EQ(move->source, "/a");
  EXPECT_EQ(move->destination, "/b");
  EXPECT_BAD(parse_move(parse(R"({"source": "/a"})")), "destination");
  EXPECT_BAD(parse_move(parse(R"({"destination": "/b"})")), "source");
}

TEST(EnvdRequests, ListDirDepth) {
  auto plain = parse_list_dir(parse(R"({"path": "/"})"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->depth, 1);
  auto zero = parse_list_dir(parse(R"({"path": "/", "depth": 0})"));
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->depth, 1);
  auto deep = parse_list_dir(parse(R"({"path": "/", "depth": 3})"));
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->depth, 3);
  EXPECT_BAD(parse_list_dir(parse(R"({"path": "/", "depth": -1})")), "depth");
  EXPECT_BAD(parse_list_dir(parse(R"({"path": "/", "depth": 2147483648})")), "depth");
  EXPECT_BAD(parse_list_dir(parse(R"({"path": "/", "depth": "deep"})")), "depth");
}

TEST(EnvdRequests, Watchers) {
  auto watch = parse_watch_dir(parse(R"({"path": "/tmp", "recursive": true})"));
  ASSERT_TRUE(watch);
  EXPECT_TRUE(watch->recursive);
  EXPECT_BAD(parse_watch_dir(parse(R"({"recursive": true})")), "path");
  EXPECT_BAD(parse_watch_dir(parse(R"({"path": "/tmp", "recursive": "yes"})")), "recursive");

  auto camel = parse_watcher(parse(R"({"watcherId": "abc"})"));
  ASSERT_TRUE(camel);
  EXPECT_EQ(camel->watcher_id, "abc");
  auto snake = parse_watcher(parse(R"({"watcher_id": "def"})"));
  ASSERT_TRUE(snake);
  EXPECT_EQ(snake->watcher_id, "def");
  EXPECT_BAD(parse_watcher(parse("{}")), "watcherId");
  EXPECT_BAD(parse_watcher(parse(R"({"watcherId": 3})")), "watcherId");
}

TEST(EnvdRequests, FilesQuery) {
  auto download = parse_files_query({{"path", "/a"}, {"username", "root"}}, true);
  ASSERT_TRUE(download);
  EXPECT_EQ(download->path, "/a");
  EXPECT_EQ(download->username, "root");
  auto multipart = parse_files_query({}, false);
  ASSERT_TRUE(multipart);
  EXPECT_EQ(multipart->path, "");
  EXPECT_BAD(parse_files_query({}, true), "path");
  EXPECT_BAD(parse_files_query({{"path", std::string("/a\0b", 4)}}, false), "path");
}

TEST(EnvdRequests, InterpreterBody) {
  EXPECT_TRUE(parse_interpreter_body(""));
  EXPECT_TRUE(parse_interpreter_body(R"({"code": "1"})"));
  EXPECT_BAD(parse_interpreter_body("[1]"), "body");
  EXPECT_BAD(parse_interpreter_body("{"), "body");
}

TEST(EnvdRequests, Execute) {
  auto sdk = parse_execute(parse(R"j({"code": "print(1)", "context_id": null,
      "language": "python", "env_vars": {"A": "b"}})j"));
  ASSERT_TRUE(sdk) << sdk.error().message();
  EXPECT_EQ(sdk->run.code, "print(1)");
  EXPECT_EQ(sdk->run.language, "python");
  EXPECT_EQ(sdk->run.env_vars.at("A"), "b");
  EXPECT_EQ(sdk->timeout, kDefaultRunTimeout);
  auto timed = parse_execute(parse(R"({"code": "1", "timeout": 2.5})"));
  ASSERT_TRUE(timed);
  EXPECT_EQ(timed->timeout, std::chrono::milliseconds(2500));

  EXPECT_BAD(parse_execute(parse(R"({"code": 5})")), "code");
  EXPECT_BAD(parse_execute(parse(R"({"code": null})")), "code");
  EXPECT_BAD(parse_execute(parse(R"({"language": "python"})")), "code");
  EXPECT_BAD(parse_execute(parse(R"({"code": "1", "env_vars": ["A"]})")), "env_vars");
  EXPECT_BAD(parse_execute(parse(R"({"code": "1", "env_vars": {"A": 1}})")), "env_vars.A");
  EXPECT_BAD(parse_execute(parse(R"({"code": "1", "timeout": "10"})")), "timeout");
  EXPECT_BAD(parse_execute(parse(R"({"code": "1", "timeout": 1e300})")), "timeout");
  EXPECT_BAD(parse_execute(parse(R"({"code": "1", "context_id": "c", "language": "python"})")),
             "context_id");
}

TEST(EnvdRequests, CreateContextCwd) {
  auto plain = parse_create_context(parse("{}"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->cwd, "");
  auto with_cwd = parse_create_context(parse(R"({"language": "bash", "cwd": "/tmp"})"));
  ASSERT_TRUE(with_cwd);
  EXPECT_EQ(with_cwd->language, "bash");
  EXPECT_EQ(with_cwd->cwd, "/tmp");
  EXPECT_BAD(parse_create_context(parse(R"({"cwd": "relative/dir"})")), "cwd");
  EXPECT_BAD(parse_create_context(parse(R"({"cwd": 42})")), "cwd");
  EXPECT_BAD(parse_create_context(parse(R"({"language": ["python"]})")), "language");
}

TEST(EnvdRequests, ContextId) {
  auto id = parse_context_id({{"context", "abc-1"}});
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, "abc-1");
  EXPECT_BAD(parse_context_id({}), "context id");
  EXPECT_BAD(parse_context_id({{"context", ""}}), "context id");
}

}  // namespace
}  // namespace abx::daemon
