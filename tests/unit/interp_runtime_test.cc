// The Interpreter in real runtime sandboxes (a `host`-style rootfs: symlinks
// plus a read-only bind of the host's /usr), its drivers on pipes the test
// holds and in band (the sandbox's agent holds them). Needs root; skipped
// otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "interp/interp.h"
#include "interp_test_support.h"
#include "runtime/runtime.h"

namespace abx::interp {
namespace {

namespace fs = std::filesystem;
using testing::run;
using namespace std::chrono_literals;

class InterpRuntime : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    char tmpl[] = "/tmp/abx-interp-rt-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // the sandbox's root must traverse to the rootfs
    const fs::path init = fs::read_symlink("/proc/self/exe").parent_path() / "abx-init";
    auto rt = runtime::open_runtime({dir_ / "state", init, {}});
    ASSERT_TRUE(rt) << rt.error().message();
    runtime_ = std::move(*rt);
    ASSERT_NO_FATAL_FAILURE(make_rootfs());
    runtime::SandboxSpec spec;
    spec.id = "interp" + std::to_string(::getpid());
    spec.rootfs = {{dir_ / "rootfs"}, {{"/usr", "/usr"}}};
    auto sandbox = runtime_->create(spec);
    ASSERT_TRUE(sandbox) << sandbox.error().message();
    sandbox_ = std::move(*sandbox);
    interpreter_ = make_interpreter();
  }

  std::unique_ptr<Interpreter> make_interpreter() {
    return Interpreter::create(*sandbox_, {{"FROM_SANDBOX", "1"}}, nullptr, nullptr, GetParam());
  }

  void TearDown() override {
    interpreter_.reset();
    if (sandbox_) {
      const runtime::SandboxRecord record = sandbox_->record();
      sandbox_.reset();
      EXPECT_TRUE(runtime_->destroy(record));
    }
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  void make_rootfs() {
    const fs::path rootfs = dir_ / "rootfs";
    fs::create_directories(rootfs / "etc");
    for (const char* link : {"bin", "lib", "lib64", "sbin"}) {
      fs::create_symlink(std::string("usr/") + link, rootfs / link);
    }
    std::ofstream(rootfs / "etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n"
                                         << "user:x:1000:1000::/home/user:/bin/sh\n";
    std::ofstream(rootfs / "etc/group") << "root:x:0:\nuser:x:1000:\n";
    for (const auto& entry : fs::recursive_directory_iterator(rootfs)) {
      ASSERT_EQ(::lchown(entry.path().c_str(), runtime_->host_uid(0), runtime_->host_gid(0)), 0);
    }
    ASSERT_EQ(::lchown(rootfs.c_str(), runtime_->host_uid(0), runtime_->host_gid(0)), 0);
  }

  fs::path dir_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<runtime::Sandbox> sandbox_;
  std::unique_ptr<Interpreter> interpreter_;
};

// As E2B's kernels: root (its Jupyter server runs as root), in /home/user.
TEST_P(InterpRuntime, PythonRunsAsRootInHomeUserWithState) {
  auto first = run(
      *interpreter_,
      "import os\nprint(os.getuid(), os.getcwd(), os.environ['HOME'], os.environ['FROM_SANDBOX'])\n"
      "n = 20\nn + 1");
  ASSERT_TRUE(first.status.ok()) << first.status.error().message();
  EXPECT_EQ(first.joined("stdout"), "0 /home/user /root 1\n");
  EXPECT_EQ(first.main_text(), "21");
  EXPECT_EQ(run(*interpreter_, "n * 2").main_text(), "40");
}

TEST_P(InterpRuntime, PythonTimeoutInterruptsAndKeepsTheContext) {
  run(*interpreter_, "kept = 1");
  ExecuteRequest request{.code = "import time\ntime.sleep(30)"};
  auto r = run(*interpreter_, request, 300ms);
  EXPECT_EQ(r.first("error")["name"], "KeyboardInterrupt");
  EXPECT_EQ(run(*interpreter_, "kept").main_text(), "1");
}

TEST_P(InterpRuntime, PythonContextDeathIsReported) {
  auto r = run(*interpreter_, "import os\nos._exit(5)");
  EXPECT_EQ(r.first("error")["name"], "ContextDied");
  EXPECT_TRUE(r.ended());
  EXPECT_EQ(run(*interpreter_, "6").main_text(), "6");
}

TEST_P(InterpRuntime, BashAndJavascriptContexts) {
  auto bash = interpreter_->create_context("bash", "/tmp");
  ASSERT_TRUE(bash) << bash.error().message();
  EXPECT_EQ(run(*interpreter_, "pwd; id -u", bash->id).joined("stdout"), "/tmp\n0\n");
  if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "node is not installed";
  auto js = interpreter_->create_context("javascript", "");
  ASSERT_TRUE(js) << js.error().message();
  EXPECT_EQ(run(*interpreter_, "process.getuid() + 1", js->id).main_text(), "1");
}

// What a daemon restart does: the contexts are left running, and a new
// interpreter finds them again (handed over, or in the agent's list) with
// their state.
TEST_P(InterpRuntime, ContextsLeftRunningAreFoundAgainWithTheirState) {
  if (!GetParam())
    GTEST_SKIP() << "init hands pipes over only once their daemon's connection went: "
                    "tests/e2e/test_durable_processes.py restarts a daemon for that";
  auto made = interpreter_->create_context("python", "/tmp");
  ASSERT_TRUE(made) << made.error().message();
  ExecuteRequest request{.code = "kept = 41", .context_id = made->id};
  ASSERT_TRUE(run(*interpreter_, request).ended());
  interpreter_->leave_running();
  interpreter_ = make_interpreter();
  auto handed = sandbox_->adopt_processes();
  ASSERT_TRUE(handed) << handed.error().message();
  auto listed = sandbox_->list_processes();
  ASSERT_TRUE(listed) << listed.error().message();
  EXPECT_EQ(interpreter_->adopt(std::move(*handed)) + interpreter_->adopt_in_band(*listed), 1u);
  request.code = "kept + 1";
  EXPECT_EQ(run(*interpreter_, request).main_text(), "42");
  EXPECT_EQ(interpreter_->adopt_in_band(*listed), 0u) << "a context it has already";
}

INSTANTIATE_TEST_SUITE_P(Drivers, InterpRuntime, ::testing::Bool(), [](const auto& param_info) {
  return param_info.param ? "in_band" : "pipes";
});

}  // namespace
}  // namespace abx::interp
