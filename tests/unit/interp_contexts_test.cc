// Contexts through the Interpreter on the host (see interp_test_support.h):
// lifecycle, request validation, and the bash and javascript drivers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "interp/context.h"
#include "interp/interp.h"
#include "interp_test_support.h"

namespace abx::interp {
namespace {

using testing::HostSandbox;
using testing::run;

class InterpContexts : public ::testing::Test {
 protected:
  HostSandbox sandbox;
  std::unique_ptr<Interpreter> interpreter = Interpreter::create(sandbox, {});

  std::string create(const std::string& language) {
    auto info = interpreter->create_context(language, "");
    EXPECT_TRUE(info.ok()) << info.error().message();
    return info.ok() ? info->id : "";
  }
};

TEST(InterpContextLabel, RoundTripsAndRefusesWhatWeWouldNotWrite) {
  const ContextLabel label{{new_context_id(), "bash", "/tmp"}, new_driver_token(), true};
  const auto back = parse_context_label(context_label(label));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->info.id, label.info.id);
  EXPECT_EQ(back->info.language, "bash");
  EXPECT_EQ(back->info.cwd, "/tmp");
  EXPECT_EQ(back->token, label.token);
  EXPECT_TRUE(back->is_default);
  // A command's label, and labels changed inside the sandbox, are no context's.
  EXPECT_FALSE(parse_context_label(R"({"tag":"","cmd":"sleep"})"));
  EXPECT_FALSE(parse_context_label("not json"));
  auto changed = [&](const char* key, const nlohmann::json& value) {
    auto json = nlohmann::json::parse(context_label(label));
    json[key] = value;
    return parse_context_label(json.dump());
  };
  EXPECT_FALSE(changed("id", "../../etc"));
  EXPECT_FALSE(changed("id", 7));
  EXPECT_FALSE(changed("language", "cobol"));
  EXPECT_FALSE(changed("token", "x"));
  EXPECT_FALSE(changed("cwd", ""));
  EXPECT_TRUE(changed("default", "yes").has_value());  // not a boolean: not the default
  EXPECT_FALSE(changed("default", "yes")->is_default);
}

TEST_F(InterpContexts, UnknownLanguageIsRejectedWithTheKnownOnes) {
  auto info = interpreter->create_context("cobol", "");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().step, "context language");
  EXPECT_EQ(info.error().errnum, EINVAL);
  EXPECT_EQ(info.error().detail,
            "unknown language 'cobol'; known: python, javascript (js), typescript (ts), bash");
  ExecuteRequest request{.code = "1", .language = "cobol"};
  EXPECT_EQ(run(*interpreter, request).status.error().errnum, EINVAL);
}

TEST_F(InterpContexts, LanguageNamesAreNormalizedAsE2BDoes) {
  auto info = interpreter->create_context(" Python\n", "");
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->language, "python");
  auto bash = interpreter->create_context("BASH", "");
  ASSERT_TRUE(bash.ok()) << bash.error().message();
  EXPECT_EQ(bash->language, "bash");
}

TEST_F(InterpContexts, JavascriptWithoutNodeSaysSo) {
  auto without_node = Interpreter::create(sandbox, {{"PATH", "/nonexistent"}});
  auto info = without_node->create_context("javascript", "");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().errnum, EINVAL);
  EXPECT_NE(info.error().message().find("need `node`"), std::string::npos);
}

TEST_F(InterpContexts, BadRequestsFailBeforeAnyLine) {
  ExecuteRequest both{.code = "1", .context_id = "x", .language = "python"};
  auto r = run(*interpreter, both);
  EXPECT_EQ(r.status.error().errnum, EINVAL);
  EXPECT_TRUE(r.lines.empty());
  EXPECT_EQ(run(*interpreter, "1", "no-such-context").status.error().errnum, ENOENT);
  ExecuteRequest bad_env{.code = "1", .env_vars = {{"A B", "x"}}};
  EXPECT_EQ(run(*interpreter, bad_env).status.error().errnum, EINVAL);
}

TEST_F(InterpContexts, ContextsAreIndependentAndListed) {
  const std::string a = create("python"), b = create("python");
  run(*interpreter, "v = 'a'", a);
  run(*interpreter, "v = 'b'", b);
  EXPECT_EQ(run(*interpreter, "v", a).main_text(), "a");
  EXPECT_EQ(run(*interpreter, "v", b).main_text(), "b");
  auto listed = interpreter->list_contexts();
  ASSERT_GE(listed.size(), 3u);  // the defaults first, then a and b in creation order
  EXPECT_EQ(listed[listed.size() - 2].id, a);
  EXPECT_EQ(listed.back().id, b);
  EXPECT_EQ(listed.back().language, "python");
  EXPECT_EQ(listed.back().cwd, "/home/user");
  EXPECT_EQ(a.size(), 36u);  // a UUID, like Jupyter kernel ids
}

// E2B's code-interpreter server makes a python and a javascript context at
// start-up (code-interpreter tests/sync/test_contexts.py::test_list_contexts).
TEST_F(InterpContexts, DefaultContextsAreListedAndServeExecutions) {
  auto listed = interpreter->list_contexts();
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0].language, "python");
  const bool has_node = ::system("command -v node > /dev/null") == 0;
  ASSERT_EQ(listed.size(), has_node ? 2u : 1u);
  if (has_node) {
    EXPECT_EQ(listed[1].language, "javascript");
  }
  run(*interpreter, "w = 1");
  EXPECT_EQ(run(*interpreter, "w").main_text(), "1");
  EXPECT_EQ(interpreter->list_contexts().size(), listed.size());  // the same default context
}

TEST_F(InterpContexts, RestartForgetsStateAndRemoveForgetsTheContext) {
  const std::string id = create("python");
  run(*interpreter, "z = 1", id);
  ASSERT_TRUE(interpreter->restart_context(id).ok());
  EXPECT_EQ(run(*interpreter, "z", id).first("error")["name"], "NameError");
  ASSERT_TRUE(interpreter->remove_context(id).ok());
  EXPECT_EQ(run(*interpreter, "1", id).status.error().errnum, ENOENT);
  EXPECT_EQ(interpreter->remove_context(id).error().errnum, ENOENT);
  EXPECT_EQ(interpreter->restart_context(id).error().errnum, ENOENT);
}

TEST_F(InterpContexts, BashKeepsShellStateAndReportsExitCodes) {
  const std::string id = create("bash");
  auto first = run(*interpreter, "X=5\ncd /\necho \"x=$X\"\necho oops >&2", id);
  EXPECT_EQ(first.joined("stdout"), "x=5\n");
  EXPECT_EQ(first.joined("stderr"), "oops\n");
  EXPECT_TRUE(first.first("error").is_null());
  auto second = run(*interpreter, "printf '%s' \"$X $(pwd)\"", id);
  EXPECT_EQ(second.joined("stdout"), "5 /");
  auto failed = run(*interpreter, "ls /no/such/dir", id);
  EXPECT_EQ(failed.first("error")["name"], "");  // as E2B's bash kernel has it
  EXPECT_EQ(failed.first("error")["value"], "2");
  EXPECT_EQ(failed.first("error")["traceback"], "");
  EXPECT_EQ(failed.first("number_of_executions")["execution_count"], 3);
  EXPECT_TRUE(failed.ended());
}

TEST_F(InterpContexts, BashEnvVarsAndAwkwardBytesSurvive) {
  const std::string id = create("bash");
  ExecuteRequest request{.code = "echo \"$ABX_V|$HOME\"",
                         .context_id = id,
                         .env_vars = {{"ABX_V", "it's \\ \"q\"\n2"}, {"HOME", "/elsewhere"}}};
  EXPECT_EQ(run(*interpreter, request).joined("stdout"), "it's \\ \"q\"\n2|/elsewhere\n");
  EXPECT_EQ(run(*interpreter, "echo \"${ABX_V-unset}|$HOME\"", id).joined("stdout"),
            "unset|/root\n");
  EXPECT_EQ(run(*interpreter, "echo 'tab\there' \\\necho ü", id).joined("stdout"),
            "tab\there echo ü\n");
}

TEST_F(InterpContexts, BashExitEndsTheContextWhichStartsAgain) {
  const std::string id = create("bash");
  EXPECT_EQ(run(*interpreter, "exit 4", id).first("error")["name"], "ContextDied");
  EXPECT_EQ(run(*interpreter, "echo back", id).joined("stdout"), "back\n");
}

class InterpJavascript : public InterpContexts {
 protected:
  void SetUp() override {
    if (::system("command -v node > /dev/null") != 0) GTEST_SKIP() << "node is not installed";
  }
};

TEST_F(InterpJavascript, CompletionValueStateConsoleAndErrors) {
  const std::string id = create("javascript");
  auto first = run(*interpreter, "let a = 2;\nconsole.log('hi', {x: 1});\na * 21", id);
  EXPECT_EQ(first.main_text(), "42");
  EXPECT_EQ(first.joined("stdout"), "hi { x: 1 }\n");
  EXPECT_EQ(run(*interpreter, "a + 1", id).main_text(), "3");
  EXPECT_EQ(run(*interpreter, "'str'", id).main_text(), "str");
  EXPECT_EQ(run(*interpreter, "Promise.resolve(7)", id).main_text(), "7");
  auto thrown = run(*interpreter, "throw new TypeError('bad')", id);
  EXPECT_EQ(thrown.first("error")["name"], "TypeError");
  EXPECT_EQ(thrown.first("error")["value"], "bad");
  EXPECT_EQ(run(*interpreter, "a", id).main_text(), "2");
}

TEST_F(InterpJavascript, JsIsAnAliasSharingTheDefaultContext) {
  auto info = interpreter->create_context("js", "");
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->language, "javascript");
  run(*interpreter, ExecuteRequest{.code = "globalThis.shared = 5", .language = "javascript"});
  auto r = run(*interpreter, ExecuteRequest{.code = "shared", .language = "js"});
  EXPECT_EQ(r.main_text(), "5");
}

TEST_F(InterpJavascript, TimeoutInterruptsALoop) {
  const std::string id = create("javascript");
  ExecuteRequest request{.code = "while (true) {}", .context_id = id};
  auto r = run(*interpreter, request, std::chrono::milliseconds(300));
  EXPECT_EQ(r.first("error")["name"], "KeyboardInterrupt");
  EXPECT_EQ(run(*interpreter, "1 + 1", id).main_text(), "2");
}

TEST_F(InterpJavascript, ChildProcessOutputIsCaptured) {
  const std::string id = create("javascript");
  auto r = run(*interpreter,
               "require('child_process').execSync('echo child', {stdio: 'inherit'}); 0", id);
  EXPECT_EQ(r.joined("stdout"), "child\n");
}

}  // namespace
}  // namespace abx::interp
