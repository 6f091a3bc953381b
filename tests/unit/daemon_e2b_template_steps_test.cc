// E2B's template build steps as a Sandboxfile: every field is quoted so that
// no value can add an instruction, and bad steps are named.
#include <gtest/gtest.h>

#include "daemon/e2b_template_steps.h"

namespace abx::daemon::e2b_steps {
namespace {

using nlohmann::json;

const std::string kHash(64, 'a');

TEST(E2bTemplateSteps, StepsBecomeASandboxfile) {
  const json request = {
      {"fromImage", "e2bdev/base"},
      {"steps",
       {{{"type", "ENV"}, {"args", {"A", "x \"y\" $z"}}},
        {{"type", "RUN"}, {"args", {"echo hi\nRUN rm -rf /", "root"}}},
        {{"type", "COPY"}, {"args", {"dir/*", "out", "", ""}}, {"filesHash", kHash}},
        {{"type", "WORKDIR"}, {"args", {"/app"}}}}},
      {"startCmd", "serve"},
      {"readyCmd", "true"}};
  auto out = translate(request, [](const std::string&) { return std::string("user"); });
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->from, "base");
  EXPECT_EQ(out->sandboxfile,
            "FROM base\n"
            "ENV A=\"x \\\"y\\\" \\$z\"\n"
            "USER root\n"
            "RUN [\"/bin/sh\",\"-c\",\"echo hi\\nRUN rm -rf /\"]\n"
            "USER user\n"
            "COPY [\"e2b-files-" +
                kHash +
                "/dir/*\", \"out/\"]\n"
                "WORKDIR \"/app\"\n"
                "CMD [\"/bin/sh\",\"-c\",\"serve\"]\n"
                "READY true\n");
  EXPECT_EQ(out->hashes, std::vector<std::string>{kHash});
  // Each instruction knows its E2B step (the RUN with a user is three), so a failure is named.
  EXPECT_EQ(out->step_names, (std::vector<std::string>{"base", "1", "2", "2", "2", "3", "4"}));
  EXPECT_EQ(step_name(*out, 3), "2");
  EXPECT_EQ(step_name(*out, 7), "finalize");
  ASSERT_EQ(out->runs_as.count("2"), 1u);
  EXPECT_EQ(out->runs_as.at("2").second, "root");
}

TEST(E2bTemplateSteps, HostileStepsAreRefused) {
  const auto refused = [](const json& steps) {
    auto out = translate(json{{"fromTemplate", "base"}, {"steps", steps}}, {});
    return !out && out.error().errnum == kErrBadInput;
  };
  EXPECT_TRUE(refused(json::array({{{"type", "ENV"}, {"args", {"A", "1\nRUN x"}}}})));
  EXPECT_TRUE(refused(json::array({{{"type", "ENV"}, {"args", {"A B", "1"}}}})));
  EXPECT_TRUE(refused(json::array({{{"type", "USER"}, {"args", {"root\nRUN x"}}}})));
  EXPECT_TRUE(
      refused(json::array({{{"type", "COPY"}, {"args", {"a", "b"}}, {"filesHash", "../x"}}})));
  EXPECT_TRUE(
      refused(json::array({{{"type", "COPY"}, {"args", {"/etc", "b"}}, {"filesHash", kHash}}})));
  EXPECT_TRUE(refused(json::array({{{"type", "NOPE"}}})));
  EXPECT_FALSE(translate(json{{"fromImage", "x\nRUN y"}}, {}));
  EXPECT_FALSE(translate(json{{"fromImageRegistry", {{"type", "aws"}}}}, {}));
}

TEST(E2bTemplateSteps, ImageNames) {
  EXPECT_EQ(from_of_image("e2bdev/base:latest"), "base");
  EXPECT_EQ(from_of_image("ubuntu:22.04"), "docker.io/library/ubuntu:22.04");
  EXPECT_EQ(from_of_image("org/img:1"), "docker.io/org/img:1");
  EXPECT_EQ(from_of_image("localhost:5000/img"), "localhost:5000/img");
  EXPECT_EQ(from_of_image("debian:bookworm"), "debian:bookworm");
  EXPECT_TRUE(valid_hash(kHash));
  EXPECT_FALSE(valid_hash(std::string(64, 'A')));
}

}  // namespace
}  // namespace abx::daemon::e2b_steps
