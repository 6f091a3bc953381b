// The Python context driver, run through the Interpreter on the host (see
// interp_test_support.h): notebook semantics, streaming, errors, interrupts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "interp/interp.h"
#include "interp_test_support.h"

namespace abx::interp {
namespace {

using testing::HostSandbox;
using testing::run;
using namespace std::chrono_literals;

// ABX_INTERP_TEST_PATH picks another python3 (say a venv with pandas and
// matplotlib) for the contexts.
std::map<std::string, std::string> test_env() {
  const char* path = std::getenv("ABX_INTERP_TEST_PATH");
  if (path == nullptr) return {};
  return {{"PATH", path}};
}

class InterpPython : public ::testing::Test {
 protected:
  HostSandbox sandbox;
  std::unique_ptr<Interpreter> interpreter = Interpreter::create(sandbox, test_env());

  bool host_has(const std::string& module) {
    return run(*interpreter,
               "import importlib.util\nimportlib.util.find_spec('" + module + "') is not None")
               .main_text() == "True";
  }
};

TEST_F(InterpPython, LastExpressionIsTheMainResultAndStatePersists) {
  auto first = run(*interpreter, "x = 1\nx + 1");
  ASSERT_TRUE(first.status.ok()) << first.status.error().message();
  EXPECT_EQ(first.main_text(), "2");
  EXPECT_EQ(first.first("number_of_executions")["execution_count"], 1);
  EXPECT_TRUE(first.ended());
  auto second = run(*interpreter, "x += 40\nx");
  EXPECT_EQ(second.main_text(), "41");
  EXPECT_EQ(second.first("number_of_executions")["execution_count"], 2);
}

TEST_F(InterpPython, NoResultForNoneOrStatementsOrTrailingSemicolon) {
  EXPECT_TRUE(run(*interpreter, "None").first("result").is_null());
  EXPECT_TRUE(run(*interpreter, "y = 3").first("result").is_null());
  EXPECT_TRUE(run(*interpreter, "y;").first("result").is_null());
  EXPECT_EQ(run(*interpreter, "'text'").main_text(), "text");  // E2B strips one layer of quotes
}

TEST_F(InterpPython, PrintsStreamInOrderWhileTheCodeRuns) {
  auto r = run(*interpreter,
               "import sys, time, os, subprocess\nprint('a')\nprint('b', file=sys.stderr)\n"
               "os.write(1, b'raw\\n')\nsubprocess.run(['echo', 'child'])\ntime.sleep(0.6)\n"
               "print('c')");
  EXPECT_EQ(r.joined("stdout"), "a\nraw\nchild\nc\n");
  EXPECT_EQ(r.joined("stderr"), "b\n");
  const auto& a = r.first("stdout");
  EXPECT_EQ(a["text"].get<std::string>().rfind("a\n", 0), 0u);
  EXPECT_TRUE(a["timestamp"].get<std::string>().ends_with("Z"));
  // 'a' was forwarded before the sleep, not at the end.
  size_t a_index = 0, c_index = 0;
  for (size_t i = 0; i < r.lines.size(); ++i) {
    const std::string text = r.lines[i].value("text", "");
    if (text.rfind("a\n", 0) == 0) a_index = i;
    if (text == "c\n") c_index = i;
  }
  EXPECT_GE(r.arrived[c_index] - r.arrived[a_index], 500ms);
}

TEST_F(InterpPython, ExceptionIsAnErrorAndTheContextLivesOn) {
  run(*interpreter, "kept = 7");
  auto r = run(*interpreter, "def f():\n    return 1 / 0\nf()");
  const auto error = r.first("error");
  ASSERT_FALSE(error.is_null());
  EXPECT_EQ(error["name"], "ZeroDivisionError");
  EXPECT_EQ(error["value"], "division by zero");
  EXPECT_NE(error["traceback"].get<std::string>().find("return 1 / 0"), std::string::npos);
  EXPECT_EQ(error["traceback"].get<std::string>().find("python_driver"), std::string::npos);
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(run(*interpreter, "kept").main_text(), "7");
  EXPECT_EQ(run(*interpreter, "def (:").first("error")["name"], "SyntaxError");
}

TEST_F(InterpPython, SystemExitIsAnError) {
  auto r = run(*interpreter, "import sys\nsys.exit(3)");
  EXPECT_EQ(r.first("error")["name"], "SystemExit");
  EXPECT_EQ(r.first("error")["value"], "3");
  EXPECT_EQ(run(*interpreter, "1").main_text(), "1");
}

TEST_F(InterpPython, EnvVarsApplyToOneExecutionOnly) {
  ExecuteRequest request;
  request.code = "import os\nos.environ.get('ABX_T', 'unset')";
  request.env_vars = {{"ABX_T", "on"}};
  EXPECT_EQ(run(*interpreter, request).main_text(), "on");
  EXPECT_EQ(run(*interpreter, "os.environ.get('ABX_T', 'unset')").main_text(), "unset");
}

TEST_F(InterpPython, SandboxEnvReachesTheContext) {
  auto with_env = Interpreter::create(sandbox, {{"FROM_CREATE", "yes"}});
  EXPECT_EQ(run(*with_env, "import os\nos.environ['FROM_CREATE']").main_text(), "yes");
}

TEST_F(InterpPython, TimeoutInterruptsTheCodeNotTheContext) {
  run(*interpreter, "kept = 'still here'");
  ExecuteRequest request;
  request.code = "import time\ntime.sleep(30)";
  const auto started = std::chrono::steady_clock::now();
  auto r = run(*interpreter, request, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s) << "the 30 s sleep was interrupted";
  EXPECT_EQ(r.first("error")["name"], "KeyboardInterrupt");
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(run(*interpreter, "kept").main_text(), "still here");
}

TEST_F(InterpPython, CancelInterruptsTheCode) {
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancelled = true;
  });
  ExecuteRequest request;
  request.code = "while True: pass";
  auto r = run(*interpreter, request, 60s, &cancelled);
  canceller.join();
  EXPECT_EQ(r.first("error")["name"], "KeyboardInterrupt");
  EXPECT_EQ(run(*interpreter, "2 * 2").main_text(), "4");
}

TEST_F(InterpPython, CodeThatIgnoresTheInterruptGetsAFreshContext) {
  run(*interpreter, "lost = 1");
  ExecuteRequest request;
  request.code =
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)";
  const auto started = std::chrono::steady_clock::now();
  auto r = run(*interpreter, request, 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
  EXPECT_NE(r.first("error")["value"].get<std::string>().find("killed"), std::string::npos);
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(run(*interpreter, "lost").first("error")["name"], "NameError");
}

TEST_F(InterpPython, AContextThatDiesIsReportedAndRestarted) {
  auto r = run(*interpreter, "import os\nos._exit(3)");
  EXPECT_EQ(r.first("error")["name"], "ContextDied");
  EXPECT_NE(r.first("error")["value"].get<std::string>().find("exit status 3"), std::string::npos);
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(run(*interpreter, "5").main_text(), "5");
}

TEST_F(InterpPython, KeepaliveWhileTheCodeIsSilent) {
  auto r = run(*interpreter, "import time\ntime.sleep(5.4)");
  EXPECT_FALSE(r.first("keepalive").is_null());
}

TEST_F(InterpPython, RichReprsBecomeResultFields) {
  auto r = run(*interpreter,
               "class Table:\n    def _repr_html_(self): return '<table></table>'\n"
               "    def _repr_png_(self): return b'\\x89PNG'\n"
               "    def __repr__(self): return 'Table()'\nTable()");
  const auto result = r.first("result");
  EXPECT_EQ(result["text"], "Table()");
  EXPECT_EQ(result["html"], "<table></table>");
  EXPECT_EQ(result["png"], "iVBORw==");
  EXPECT_EQ(result["is_main_result"], true);
  auto shown = run(*interpreter, "display(Table())");
  EXPECT_EQ(shown.first("result")["is_main_result"], false);
}

TEST_F(InterpPython, DataFrameHasHtml) {
  if (!host_has("pandas")) GTEST_SKIP() << "pandas is not installed for the host python3";
  auto r = run(*interpreter, "import pandas as pd\npd.DataFrame({'a': [1, 2]})");
  EXPECT_NE(r.first("result")["html"].get<std::string>().find("<table"), std::string::npos);
}

TEST_F(InterpPython, MatplotlibFiguresArePngResults) {
  if (!host_has("matplotlib")) GTEST_SKIP() << "matplotlib is not installed for the host python3";
  auto r = run(*interpreter, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()");
  const auto figure = r.first("result");
  ASSERT_FALSE(figure.is_null());
  EXPECT_EQ(figure["is_main_result"], false);
  EXPECT_EQ(figure["png"].get<std::string>().rfind("iVBOR", 0), 0u);
  EXPECT_TRUE(r.first("stderr").is_null()) << r.joined("stderr");
  EXPECT_TRUE(run(*interpreter, "1;").first("result").is_null());  // figures were closed
}

TEST_F(InterpPython, TopLevelAwait) {
  EXPECT_EQ(run(*interpreter, "import asyncio\nawait asyncio.sleep(0, result=9)").main_text(), "9");
}

// IPython's cell transforms that E2B's suites rely on: their cells are
// indented triple-quoted strings, and `!cmd` runs a shell command.
TEST_F(InterpPython, IndentedCellsAreDedented) {
  auto r = run(*interpreter, "\n    a = 40\n    if a:\n        a += 2\n    a\n    ");
  EXPECT_EQ(r.main_text(), "42");
  auto failing = run(*interpreter, "\n    b = 1\n    1 / 0\n");
  const std::string traceback = failing.first("error")["traceback"];
  // Lines as written; IPython (where the host has it) drops leading blank lines first.
  const std::string line = host_has("IPython") ? "line 2" : "line 3";
  EXPECT_NE(traceback.find(line), std::string::npos) << traceback;
}

TEST_F(InterpPython, ShellEscapesRunInBash) {
  EXPECT_EQ(run(*interpreter, "print('before')\n!echo shell\nprint('after')").joined("stdout"),
            "before\nshell\nafter\n");
  auto captured = run(*interpreter, "n = 3\nout = !seq {n}\n!exit 4\n(out, _exit_code)");
  EXPECT_EQ(captured.main_text(), "(['1', '2', '3'], 4)");
  auto in_string = run(*interpreter, "s = \"\"\"\n!text\n\"\"\"\n!true\ns");
  EXPECT_EQ(in_string.main_text(), "\\n!text\\n");
  EXPECT_EQ(run(*interpreter, "1 != 2").main_text(), "True");
}

// Where the host's python3 has IPython, cells run through its InteractiveShell
// (as in code-interpreter-v1): magics and IPython.display's raw MIME bundles.
TEST_F(InterpPython, IPythonMagicsAndRawDisplay) {
  if (!host_has("IPython")) GTEST_SKIP() << "IPython is not installed for the host python3";
  EXPECT_EQ(run(*interpreter, "%cd /\nimport os\nos.getcwd()").main_text(), "/");
  auto shown = run(*interpreter,
                   "from IPython.display import display\n"
                   "display({'text/latex': 'x', 'application/x-other': 'y'}, raw=True)");
  const auto result = shown.first("result");
  EXPECT_EQ(result["latex"], "x");
  EXPECT_EQ(result["extra"]["application/x-other"], "y");
  EXPECT_FALSE(result.contains("text")) << result.dump();
}

}  // namespace
}  // namespace abx::interp
