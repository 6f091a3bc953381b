#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "templates/sandboxfile.h"

namespace abx::templates::sandboxfile {
namespace {

using Args = std::map<std::string, std::string>;
using Pairs = std::vector<std::pair<std::string, std::string>>;
using Strings = std::vector<std::string>;

Sandboxfile parse_ok(const std::string& text, const Args& build_args = {},
                     const BaseImage& base = {}) {
  Result<Sandboxfile> result = parse(text, build_args, base);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? result.value() : Sandboxfile{};
}

std::string parse_error(const std::string& text, const Args& build_args = {}) {
  Result<Sandboxfile> result = parse(text, build_args);
  EXPECT_FALSE(result.ok()) << text;
  return result.ok() ? "" : result.error().message();
}

// The steps after FROM, which most tests look at.
std::vector<Step> steps_after_from(const std::string& text, const Args& build_args = {},
                                   const BaseImage& base = {}) {
  std::vector<Step> steps = parse_ok(text, build_args, base).steps;
  EXPECT_FALSE(steps.empty());
  if (!steps.empty()) steps.erase(steps.begin());
  return steps;
}

Step only_step(const std::string& text, const Args& build_args = {}, const BaseImage& base = {}) {
  std::vector<Step> steps = steps_after_from(text, build_args, base);
  EXPECT_EQ(steps.size(), 1u) << text;
  return steps.empty() ? Step{} : steps.front();
}

Strings shell(const std::string& command) { return {"/bin/sh", "-c", command}; }

// ---- Lines, comments, continuations ----

TEST(SandboxfileTest, FromAloneIsTheFirstStep) {
  const Sandboxfile file = parse_ok("FROM base\n");
  ASSERT_EQ(file.steps.size(), 1u);
  EXPECT_EQ(file.steps[0].kind, Kind::kFrom);
  EXPECT_EQ(file.steps[0].args, Strings{"base"});
  EXPECT_EQ(file.steps[0].line, 1);
  EXPECT_EQ(file.steps[0].text, "FROM base");
  EXPECT_TRUE(file.warnings.empty());
}

TEST(SandboxfileTest, InstructionsAreCaseInsensitive) {
  const std::vector<Step> steps = steps_after_from("from base\nRun echo hi\nworkdir /app\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, Kind::kRun);
  EXPECT_EQ(steps[0].text, "Run echo hi");
  EXPECT_EQ(steps[1].kind, Kind::kWorkdir);
}

TEST(SandboxfileTest, CommentsAndBlankLinesAreSkippedButCounted) {
  const std::vector<Step> steps = steps_after_from(R"SF(# a template for jq
FROM base

   # indented comment
RUN echo hi # not a comment: the shell sees it
)SF");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].line, 5);
  EXPECT_EQ(steps[0].args, shell("echo hi # not a comment: the shell sees it"));
}

TEST(SandboxfileTest, ContinuationJoinsLinesAsDockerDoes) {
  const std::vector<Step> steps = steps_after_from(
      "FROM base\n"
      "RUN apt-get update && \\\n"
      "    apt-get install -y jq\n"
      "USER user\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].line, 2);
  EXPECT_EQ(steps[0].args, shell("apt-get update &&     apt-get install -y jq"));
  EXPECT_EQ(steps[0].text, "RUN apt-get update && apt-get install -y jq");
  EXPECT_EQ(steps[1].line, 4);
}

TEST(SandboxfileTest, ContinuationWithoutBlanksJoinsWords) {
  const Step step = only_step("FROM base\nRUN echo ab\\\ncd\n");
  EXPECT_EQ(step.args, shell("echo abcd"));
  EXPECT_EQ(step.text, "RUN echo abcd");
}

TEST(SandboxfileTest, BlanksAfterTheBackslashStillContinue) {
  const Step step = only_step("FROM base\nRUN echo a \\   \n  b\n");
  EXPECT_EQ(step.args, shell("echo a   b"));
  EXPECT_EQ(step.text, "RUN echo a b");
}

TEST(SandboxfileTest, CommentAndEmptyLinesInsideAContinuationAreSkipped) {
  const std::vector<Step> steps = steps_after_from(
      "FROM base\n"
      "RUN apt-get install -y \\\n"
      "# jq for JSON\n"
      "      jq \\\n"
      "\n"
      "      curl\n"
      "USER user\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].args[2], "apt-get install -y       jq       curl");
  EXPECT_EQ(steps[0].text, "RUN apt-get install -y jq curl");
  EXPECT_EQ(steps[1].line, 7);
}

TEST(SandboxfileTest, ContinuationAtEndOfFileEndsTheInstruction) {
  const Step step = only_step("FROM base\nRUN echo hi \\");
  EXPECT_EQ(step.args, shell("echo hi"));
}

TEST(SandboxfileTest, ContinuedKeywordLine) {
  const Step step = only_step("FROM base\nENV \\\n  A=1 \\\n  B=2\n");
  EXPECT_EQ(step.pairs, (Pairs{{"A", "1"}, {"B", "2"}}));
  EXPECT_EQ(step.line, 2);
}

TEST(SandboxfileTest, WindowsLineEndingsAndByteOrderMark) {
  const std::vector<Step> steps = steps_after_from(
      "\xEF\xBB\xBF"
      "FROM base\r\nRUN echo a \\\r\n  b\r\nUSER user\r\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].args, shell("echo a   b"));
  EXPECT_EQ(steps[1].args, Strings{"user"});
}

TEST(SandboxfileTest, ParserDirectivesAreIgnored) {
  const Sandboxfile file = parse_ok("# syntax=docker/dockerfile:1\n# escape=\\\nFROM base\n");
  EXPECT_EQ(file.steps[0].line, 3);
}

TEST(SandboxfileTest, OtherEscapeCharacterIsAnError) {
  EXPECT_EQ(parse_error("# syntax=docker/dockerfile:1\n# escape=`\nFROM base\n"),
            "Sandboxfile line 2: only \\ is supported as the escape character; remove the escape "
            "directive and continue lines with \\");
}

TEST(SandboxfileTest, EscapeDirectiveAfterOtherLinesIsAComment) {
  EXPECT_TRUE(parse("FROM base\n# escape=`\n", {}).ok());
  EXPECT_TRUE(parse("# a comment\n# escape=`\nFROM base\n", {}).ok());
}

// ---- FROM ----

TEST(SandboxfileTest, FromAliasIsAcceptedAndIgnored) {
  EXPECT_EQ(parse_ok("FROM debian:bookworm AS build\n").steps[0].args, Strings{"debian:bookworm"});
  EXPECT_EQ(parse_ok("from ./image.tar as build\n").steps[0].args, Strings{"./image.tar"});
}

TEST(SandboxfileTest, FromNeedsOneImage) {
  EXPECT_EQ(parse_error("FROM\n"), "Sandboxfile line 1: FROM needs an image, e.g. FROM base");
  EXPECT_EQ(parse_error("FROM a b\n"),
            "Sandboxfile line 1: FROM takes an image and an optional AS name, e.g. FROM "
            "debian:bookworm AS build");
}

TEST(SandboxfileTest, SecondFromIsMultiStage) {
  EXPECT_EQ(parse_error("FROM base AS build\nRUN make\n\nFROM base\n"),
            "Sandboxfile line 4: multi-stage builds are not supported; build the first stage "
            "as its own template and FROM it");
}

TEST(SandboxfileTest, MissingFromIsAnError) {
  EXPECT_EQ(parse_error(""),
            "Sandboxfile: no FROM instruction; start with FROM <image>, e.g. "
            "FROM base");
  EXPECT_EQ(parse_error("# only a comment\nARG V=1\n"),
            "Sandboxfile: no FROM instruction; start with FROM <image>, e.g. FROM base");
}

TEST(SandboxfileTest, OnlyArgMayComeBeforeFrom) {
  EXPECT_EQ(parse_error("\nRUN echo hi\nFROM base\n"),
            "Sandboxfile line 2: RUN comes before FROM; start with FROM <image> (only ARG may "
            "come before it)");
  EXPECT_EQ(parse_error("LABEL a=b\nFROM base\n"),
            "Sandboxfile line 1: LABEL comes before FROM; start with FROM <image> (only ARG may "
            "come before it)");
}

TEST(SandboxfileTest, ArgBeforeFromSubstitutesIntoFromAndMakesNoStep) {
  const std::string text = "ARG SUITE=bookworm\nFROM debian:${SUITE}-slim\n";
  const Sandboxfile defaulted = parse_ok(text);
  ASSERT_EQ(defaulted.steps.size(), 1u);
  EXPECT_EQ(defaulted.steps[0].args, Strings{"debian:bookworm-slim"});
  EXPECT_EQ(defaulted.steps[0].text, "FROM debian:${SUITE}-slim");
  EXPECT_EQ(parse_ok(text, {{"SUITE", "trixie"}}).steps[0].args, Strings{"debian:trixie-slim"});
}

TEST(SandboxfileTest, FromSeesOnlyArgsDeclaredBeforeIt) {
  EXPECT_EQ(parse_error("ENV X=1\nFROM base\n"),
            "Sandboxfile line 1: ENV comes before FROM; start with FROM <image> (only ARG may "
            "come before it)");
  EXPECT_EQ(parse_error("FROM $IMAGE\n", {{"IMAGE", "base"}}),
            "Sandboxfile line 1: FROM $IMAGE names no image after substitution; give the ARG a "
            "default or pass --build-arg");
}

TEST(SandboxfileTest, ArgBeforeFromIsNotInScopeAfterFromUntilRedeclared) {
  const std::vector<Step> steps =
      steps_after_from("ARG V=1\nFROM base\nWORKDIR /a$V\nARG V\nWORKDIR b$V\n", {}, {});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].args, Strings{"/a"});
  EXPECT_EQ(steps[1].pairs, (Pairs{{"V", "1"}}));
  EXPECT_EQ(steps[2].args, Strings{"/a/b1"});
  EXPECT_EQ(parse_ok("ARG V=1\nFROM base\nWORKDIR /a$V\n").warnings,
            Strings{"Sandboxfile line 3: $V is not defined and expands to \"\"; declare it with "
                    "ARG or ENV before this line"});
}

TEST(SandboxfileTest, RedeclaredArgTakesTheBuildArgOverTheGlobalDefault) {
  const Step step = only_step("ARG V=1\nFROM base\nARG V\n", {{"V", "2"}});
  EXPECT_EQ(step.pairs, (Pairs{{"V", "2"}}));
}

TEST(SandboxfileTest, FromPlatformMustBeTheHost) {
  const Step arch = only_step("FROM base\nARG TARGETARCH\n");
  ASSERT_EQ(arch.pairs.size(), 1u);
  const std::string host = "linux/" + arch.pairs[0].second;
  EXPECT_NE(arch.pairs[0].second, "");
  EXPECT_TRUE(parse("FROM --platform=$BUILDPLATFORM base\n", {}).ok());
  EXPECT_TRUE(parse("FROM --platform=" + host + " base\n", {}).ok());
  EXPECT_EQ(parse_error("FROM --platform=windows/amd64 base\n"),
            "Sandboxfile line 1: FROM --platform=windows/amd64 does not match this host; "
            "sandboxes run " +
                host + " images, so drop the option");
  EXPECT_EQ(parse_error("FROM --pull base\n"),
            "Sandboxfile line 1: FROM --pull is not supported; remove the option");
}

// ---- Skipped and unknown instructions ----

TEST(SandboxfileTest, ContainerOnlyInstructionsAreSkippedWithAWarning) {
  const Sandboxfile file = parse_ok(R"SF(FROM base
LABEL a=b
LABEL a=c
EXPOSE 8080
LABEL org.opencontainers.image.title=x
HEALTHCHECK CMD curl -f http://localhost/
STOPSIGNAL SIGTERM
VOLUME /data
SHELL ["/bin/bash", "-c"]
ONBUILD RUN make
MAINTAINER someone
RUN echo kept
)SF");
  ASSERT_EQ(file.steps.size(), 2u);
  EXPECT_EQ(file.steps[1].args, shell("echo kept"));
  ASSERT_EQ(file.warnings.size(), 10u);
  EXPECT_EQ(file.warnings[0], "Sandboxfile line 2: LABEL is ignored: templates carry no labels");
  EXPECT_EQ(file.warnings[4],
            "Sandboxfile line 6: HEALTHCHECK is ignored: write the check as READY <shell "
            "command> (it must exit 0 when ready)");
  EXPECT_EQ(file.warnings[2],
            "Sandboxfile line 4: EXPOSE is ignored: every port of a sandbox is reachable "
            "through get_host(port)");
  EXPECT_EQ(file.warnings[7],
            "Sandboxfile line 9: SHELL is ignored: RUN always uses /bin/sh -c; for another shell "
            "write RUN [\"/bin/bash\", \"-c\", \"...\"]");
  EXPECT_EQ(file.warnings[9].rfind("Sandboxfile line 11: MAINTAINER is ignored: ", 0), 0u);
}

TEST(SandboxfileTest, UnknownInstructionNamesTheSupportedSet) {
  EXPECT_EQ(parse_error("FROM base\nRUN apt-get update\n  apt-get install jq\n"),
            "Sandboxfile line 3: unknown instruction APT-GET; a Sandboxfile supports FROM, RUN, "
            "COPY, ADD, ENV, WORKDIR, USER, ARG, CMD, ENTRYPOINT, READY");
}

// ---- RUN ----

TEST(SandboxfileTest, RunShellFormIsNotSubstituted) {
  const std::vector<Step> steps = steps_after_from("FROM base\nENV A=1\nRUN echo $A ${B:-x}\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].kind, Kind::kRun);
  EXPECT_EQ(steps[1].args, shell("echo $A ${B:-x}"));
}

TEST(SandboxfileTest, RunExecFormIsTheArgvAsGiven) {
  const Step step = only_step(R"SF(FROM base
RUN ["/usr/bin/env", "A=b c", "printenv", "$HOME"]
)SF");
  EXPECT_EQ(step.args, (Strings{"/usr/bin/env", "A=b c", "printenv", "$HOME"}));
}

TEST(SandboxfileTest, RunThatIsNotValidJsonIsShellForm) {
  EXPECT_EQ(only_step("FROM base\nRUN [ -f /etc/os-release ] && echo yes\n").args,
            shell("[ -f /etc/os-release ] && echo yes"));
  // Single quotes are not JSON: Docker runs this through the shell too.
  EXPECT_EQ(only_step("FROM base\nRUN ['echo', 'hi']\n").args, shell("['echo', 'hi']"));
  EXPECT_EQ(only_step("FROM base\nRUN [\"echo\", \"hi\"] && true\n").args,
            shell("[\"echo\", \"hi\"] && true"));
}

TEST(SandboxfileTest, RunExecFormMustHoldStrings) {
  EXPECT_EQ(parse_error("FROM base\nRUN [\"sleep\", 5]\n"),
            "Sandboxfile line 2: RUN [...] must be a JSON array of strings, e.g. RUN "
            "[\"/bin/echo\", \"hi\"]");
  EXPECT_EQ(parse_error("FROM base\nRUN []\n"),
            "Sandboxfile line 2: RUN [] needs a command, e.g. RUN [\"/bin/echo\", \"hi\"]");
}

TEST(SandboxfileTest, EmptyRunIsAnError) {
  EXPECT_EQ(parse_error("FROM base\n\nRUN\n"),
            "Sandboxfile line 3: RUN needs a command, e.g. RUN apt-get install -y jq");
  EXPECT_EQ(parse_error("FROM base\nRUN   \\\n\n"),
            "Sandboxfile line 2: RUN needs a command, e.g. RUN apt-get install -y jq");
}

TEST(SandboxfileTest, RunFlagsAreNotSupported) {
  EXPECT_EQ(parse_error("FROM base\nRUN --mount=type=cache,target=/root/.cache pip install x\n"),
            "Sandboxfile line 2: RUN --mount is not supported; remove the option");
  EXPECT_EQ(parse_error("FROM base\nRUN --network=none make\n"),
            "Sandboxfile line 2: RUN --network is not supported; remove the option");
  // Not a flag: a dash option inside the command.
  EXPECT_EQ(only_step("FROM base\nRUN pip --version\n").args, shell("pip --version"));
}

TEST(SandboxfileTest, HeredocsAreRejectedNotMisparsed) {
  EXPECT_EQ(parse_error("FROM base\nRUN <<EOF\necho hi\nEOF\n"),
            "Sandboxfile line 2: RUN heredocs (<<EOF) are not supported; put the script in a "
            "file in the build context, COPY it and RUN it");
  EXPECT_FALSE(parse("FROM base\nRUN cat <<-'EOT' > /x\nhi\nEOT\n", {}).ok());
  EXPECT_FALSE(parse("FROM base\nCOPY <<EOF /x\nhi\nEOF\n", {}).ok());
  // Shifts and here-strings are not heredocs.
  EXPECT_TRUE(parse("FROM base\nRUN echo $((1 << 2)) $((1<<2))\n", {}).ok());
  EXPECT_TRUE(parse("FROM base\nRUN cat <<< hi\n", {}).ok());
  EXPECT_TRUE(parse("FROM base\nRUN echo '<<EOF'\n", {}).ok());
}

TEST(SandboxfileTest, RunEnvHoldsTheArgsInEffect) {
  const std::vector<Step> steps = steps_after_from(R"SF(FROM base
RUN echo first
ARG VERSION=1.0
ARG TOKEN
ARG EMPTY=
RUN echo second
ARG LATE=x
)SF");
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_TRUE(steps[0].env.empty());
  // TOKEN has no value: unset in RUN, as in Docker.
  EXPECT_EQ(steps[4].env, (Args{{"EMPTY", ""}, {"VERSION", "1.0"}}));
}

TEST(SandboxfileTest, RunEnvLeavesOutArgsThatEnvShadows) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\nARG MODE=debug\nENV MODE=release\nRUN make\n");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_TRUE(steps[2].env.empty());
  const Step from_image =
      only_step("FROM base\nARG LANG=C\n", {}, BaseImage{{{"LANG", "C.UTF-8"}}, "/"});
  EXPECT_EQ(from_image.pairs, (Pairs{{"LANG", "C"}}));
  const std::vector<Step> with_image = steps_after_from("FROM base\nARG LANG=C\nRUN locale\n", {},
                                                        BaseImage{{{"LANG", "C.UTF-8"}}, "/"});
  ASSERT_EQ(with_image.size(), 2u);
  EXPECT_TRUE(with_image[1].env.empty());
}

TEST(SandboxfileTest, ProxyBuildArgsReachRunWithoutArg) {
  const Sandboxfile file =
      parse_ok("FROM base\nRUN apt-get update\n", {{"https_proxy", "http://proxy:3128"}});
  ASSERT_EQ(file.steps.size(), 2u);
  EXPECT_EQ(file.steps[1].env, (Args{{"https_proxy", "http://proxy:3128"}}));
  EXPECT_TRUE(file.warnings.empty());
}

// ---- COPY and ADD ----

TEST(SandboxfileTest, CopySourcesAndDestination) {
  const Step step = only_step("FROM base\nCOPY app.py lib/ /app/\n");
  EXPECT_EQ(step.kind, Kind::kCopy);
  EXPECT_EQ(step.args, (Strings{"app.py", "lib/", "/app/"}));
  EXPECT_FALSE(step.add);
  EXPECT_EQ(step.chown, "");
}

TEST(SandboxfileTest, CopyDestinationResolvesAgainstWorkdir) {
  const std::vector<Step> steps = steps_after_from(
      "FROM base\nWORKDIR /app\nCOPY a.py .\nCOPY b.py src/\nCOPY c.py ./c.py\nCOPY d.py ..\n");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[1].args, (Strings{"a.py", "/app/"}));
  EXPECT_EQ(steps[2].args, (Strings{"b.py", "/app/src/"}));
  EXPECT_EQ(steps[3].args, (Strings{"c.py", "/app/c.py"}));
  EXPECT_EQ(steps[4].args, (Strings{"d.py", "/"}));
  EXPECT_EQ(only_step("FROM base\nCOPY x y\n").args, (Strings{"x", "/y"}));
}

TEST(SandboxfileTest, CopyOfSeveralSourcesNeedsADirectory) {
  EXPECT_EQ(parse_error("FROM base\nCOPY a b /app\n"),
            "Sandboxfile line 2: COPY of several sources needs a directory destination ending "
            "in /, e.g. /app/");
  EXPECT_TRUE(parse("FROM base\nWORKDIR /app\nCOPY a b .\n", {}).ok());
}

TEST(SandboxfileTest, CopyNeedsSourceAndDestination) {
  EXPECT_EQ(parse_error("FROM base\nCOPY app.py\n"),
            "Sandboxfile line 2: COPY needs a source and a destination, e.g. COPY app.py /app/");
  EXPECT_EQ(parse_error("FROM base\nADD\n"),
            "Sandboxfile line 2: ADD needs a source and a destination, e.g. ADD app.py /app/");
}

TEST(SandboxfileTest, CopySubstitutesVariablesAndQuotes) {
  const std::vector<Step> steps = steps_after_from(
      "FROM base\nARG APP=web\nENV DEST=/srv\nCOPY \"$APP files\" ${APP}.conf $DEST/\n");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[2].args, (Strings{"web files", "web.conf", "/srv/"}));
  EXPECT_EQ(steps[2].text, "COPY \"$APP files\" ${APP}.conf $DEST/");
}

TEST(SandboxfileTest, CopyJsonFormAllowsSpaces) {
  const Step step = only_step(R"SF(FROM base
COPY --chown=user:user ["my file.txt", "other file", "/data/"]
)SF");
  EXPECT_EQ(step.args, (Strings{"my file.txt", "other file", "/data/"}));
  EXPECT_EQ(step.chown, "user:user");
  EXPECT_EQ(parse_error("FROM base\nCOPY [\"a\", 1]\n"),
            "Sandboxfile line 2: COPY [...] must be a JSON array of strings, e.g. COPY [\"my "
            "file\", \"/app/\"]");
}

TEST(SandboxfileTest, CopyChownIsSubstituted) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\nARG UID=1000\nCOPY --link --chown=${UID}:${UID} a /a\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].chown, "1000:1000");
  EXPECT_EQ(parse_error("FROM base\nCOPY --chown= a /a\n"),
            "Sandboxfile line 2: COPY --chown needs user[:group], e.g. --chown=1000:1000");
}

TEST(SandboxfileTest, AddIsCopyWithTheAddFlag) {
  const Step step = only_step("FROM base\nADD rootfs.tar.gz /\n");
  EXPECT_EQ(step.kind, Kind::kCopy);
  EXPECT_TRUE(step.add);
  EXPECT_EQ(step.args, (Strings{"rootfs.tar.gz", "/"}));
}

TEST(SandboxfileTest, AddOfUrlsIsRejected) {
  EXPECT_EQ(parse_error("FROM base\nADD https://example.com/x.tgz /opt/\n"),
            "Sandboxfile line 2: ADD of URLs is not supported (https://example.com/x.tgz); RUN "
            "curl -o ... instead");
  EXPECT_FALSE(parse("FROM base\nADD git@github.com:o/r.git /src\n", {}).ok());
  EXPECT_FALSE(parse("FROM base\nARG U=http://x/y\nADD $U /y\n", {}).ok());
}

TEST(SandboxfileTest, CopySourcesStayInsideTheContext) {
  EXPECT_EQ(parse_error("FROM base\nCOPY /etc/passwd /x\n"),
            "Sandboxfile line 2: COPY source /etc/passwd is absolute; name it relative to the "
            "build context, e.g. etc/passwd");
  EXPECT_EQ(parse_error("FROM base\nCOPY ../secret /x\n"),
            "Sandboxfile line 2: COPY source ../secret is outside the build context; move it "
            "into the context dir");
  EXPECT_FALSE(parse("FROM base\nCOPY a/../../b /x\n", {}).ok());
  EXPECT_FALSE(parse("FROM base\nARG UP=..\nCOPY $UP/x /x\n", {}).ok());
  EXPECT_EQ(only_step("FROM base\nCOPY a/../b ./c . /x/\n").args,
            (Strings{"a/../b", "./c", ".", "/x/"}));
}

TEST(SandboxfileTest, CopySourceThatExpandsToNothingIsAnError) {
  EXPECT_EQ(parse_error("FROM base\nARG SRC\nCOPY $SRC /x\n"),
            "Sandboxfile line 3: COPY has an empty source (a variable that expands to \"\"?); "
            "name a path in the build context");
}

TEST(SandboxfileTest, CopyFlagsOtherThanChown) {
  EXPECT_EQ(parse_error("FROM base\nCOPY --from=build /out /app\n"),
            "Sandboxfile line 2: COPY --from is not supported (multi-stage builds are not "
            "supported); copy from the build context instead");
  EXPECT_EQ(parse_error("FROM base\nCOPY --chmod=755 run.sh /\n"),
            "Sandboxfile line 2: COPY --chmod is not supported; RUN chmod after the COPY");
  EXPECT_EQ(parse_error("FROM base\nADD --checksum=sha256:0 x /\n"),
            "Sandboxfile line 2: ADD --checksum is not supported; the only option is "
            "--chown=user[:group]");
}

// ---- ENV ----

TEST(SandboxfileTest, EnvNameValuePairsWithQuoting) {
  const Step step = only_step(R"SF(FROM base
ENV A=1 B="two words" C='single $quoted' D=esc\ aped E= F="say \"hi\""
)SF");
  EXPECT_EQ(step.kind, Kind::kEnv);
  EXPECT_EQ(step.pairs, (Pairs{{"A", "1"},
                               {"B", "two words"},
                               {"C", "single $quoted"},
                               {"D", "esc aped"},
                               {"E", ""},
                               {"F", "say \"hi\""}}));
}

TEST(SandboxfileTest, EnvLegacyFormTakesTheRestOfTheLine) {
  EXPECT_EQ(only_step("FROM base\nENV GREETING hello  big world\n").pairs,
            (Pairs{{"GREETING", "hello  big world"}}));
  EXPECT_EQ(only_step("FROM base\nENV Q \"quoted value\"\n").pairs, (Pairs{{"Q", "quoted value"}}));
}

TEST(SandboxfileTest, EnvValuesUseTheVariablesFromBeforeTheLine) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\nENV abc=hello\nENV abc=bye def=$abc\nENV ghi=$abc\n");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].pairs, (Pairs{{"abc", "bye"}, {"def", "hello"}}));
  EXPECT_EQ(steps[2].pairs, (Pairs{{"ghi", "bye"}}));
}

TEST(SandboxfileTest, EnvErrors) {
  EXPECT_EQ(parse_error("FROM base\nENV\n"),
            "Sandboxfile line 2: ENV needs NAME=value, e.g. ENV LANG=C.UTF-8");
  EXPECT_EQ(parse_error("FROM base\nENV ONLY\n"),
            "Sandboxfile line 2: ENV ONLY needs a value; write ENV ONLY=value");
  EXPECT_EQ(parse_error("FROM base\nENV A=1 two words\n"),
            "Sandboxfile line 2: ENV two is not NAME=value; quote values with spaces, as in ENV "
            "NAME=\"a b\"");
  EXPECT_EQ(parse_error("FROM base\nENV A=1 =2\n"),
            "Sandboxfile line 2: ENV =2 is not NAME=value; quote values with spaces, as in ENV "
            "NAME=\"a b\"");
  EXPECT_EQ(parse_error("FROM base\nENV A=\"open\n"),
            "Sandboxfile line 2: a \" quote is not closed; close it or write \\\"");
  EXPECT_EQ(parse_error("FROM base\nENV A='open\n"),
            "Sandboxfile line 2: a ' quote is not closed; close it or write \\'");
}

// ---- Substitution ----

// The value ENV V gets from `expression` with the given ARG and ENV lines before it.
std::string expand_with(const std::string& declarations, const std::string& expression,
                        const Args& build_args = {}) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\n" + declarations + "ENV V=" + expression + "\n", build_args);
  if (steps.empty() || steps.back().pairs.empty()) return "<no step>";
  return steps.back().pairs.back().second;
}

TEST(SandboxfileTest, SubstitutionForms) {
  const std::string vars = "ARG SET=x\nARG EMPTY=\nARG UNSET\n";
  EXPECT_EQ(expand_with(vars, "$SET/${SET}/${SET}y"), "x/x/xy");
  EXPECT_EQ(expand_with(vars, "${SET:-d},${EMPTY:-d},${UNSET:-d}"), "x,d,d");
  EXPECT_EQ(expand_with(vars, "${SET-d},${EMPTY-d},${UNSET-d}"), "x,,d");
  EXPECT_EQ(expand_with(vars, "${SET:+a},${EMPTY:+a},${UNSET:+a}"), "a,,");
  EXPECT_EQ(expand_with(vars, "${SET+a},${EMPTY+a},${UNSET+a}"), "a,a,");
  EXPECT_EQ(expand_with(vars, "${UNSET:-${SET}z}"), "xz");
  EXPECT_EQ(expand_with(vars, "\"${UNSET:-a b}\""), "a b");
  EXPECT_EQ(expand_with(vars, "${UNSET:-a b}"), "a b");  // blanks inside ${...} stay in the word
  EXPECT_EQ(expand_with(vars, "${SET:?must be set}"), "x");
}

TEST(SandboxfileTest, EscapesAndLiteralDollars) {
  EXPECT_EQ(expand_with("ARG A=1\n", "\\$A"), "$A");
  EXPECT_EQ(expand_with("ARG A=1\n", "'$A'"), "$A");
  EXPECT_EQ(expand_with("ARG A=1\n", "\"\\$A $A\""), "$A 1");
  EXPECT_EQ(expand_with("", "cost$"), "cost$");
  EXPECT_EQ(expand_with("", "a$-b"), "a$-b");
}

TEST(SandboxfileTest, UnknownVariablesExpandToEmptyWithAWarning) {
  const Sandboxfile file = parse_ok("FROM base\nENV A=x${NOPE}y B=$NOPE C=${NOPE:-quiet}\n");
  EXPECT_EQ(file.steps[1].pairs, (Pairs{{"A", "xy"}, {"B", ""}, {"C", "quiet"}}));
  EXPECT_EQ(file.warnings, Strings{"Sandboxfile line 2: $NOPE is not defined and expands to "
                                   "\"\"; declare it with ARG or ENV before this line"});
  // A declared ARG without a value is no surprise: no warning.
  EXPECT_TRUE(parse_ok("FROM base\nARG TOKEN\nENV T=$TOKEN\n").warnings.empty());
}

TEST(SandboxfileTest, EnvWinsOverArgOfTheSameName) {
  EXPECT_EQ(expand_with("ARG MODE=debug\nENV MODE=release\n", "$MODE"), "release");
  EXPECT_EQ(expand_with("ENV MODE=release\nARG MODE=debug\n", "$MODE", {{"MODE", "cli"}}),
            "release");
}

TEST(SandboxfileTest, ImageEnvIsAvailableToSubstitution) {
  const BaseImage image{{{"PATH", "/usr/bin:/bin"}}, "/home/user"};
  const std::vector<Step> steps =
      steps_after_from("FROM base\nENV PATH=/opt/bin:$PATH\nWORKDIR app\n", {}, image);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].pairs, (Pairs{{"PATH", "/opt/bin:/usr/bin:/bin"}}));
  EXPECT_EQ(steps[1].args, Strings{"/home/user/app"});
  EXPECT_TRUE(parse("FROM base\nENV PATH=/opt/bin:$PATH\n", {}, image)->warnings.empty());
}

TEST(SandboxfileTest, SubstitutionErrors) {
  EXPECT_EQ(parse_error("FROM base\nARG V\nENV X=${V:?}\n"),
            "Sandboxfile line 3: V is not set; pass --build-arg V=...");
  EXPECT_EQ(parse_error("FROM base\nARG V\nENV X=${V:?give a version}\n"),
            "Sandboxfile line 3: V: give a version");
  EXPECT_EQ(parse_error("FROM base\nENV X=${V%.*}\n"),
            "Sandboxfile line 2: ${V%...} is not supported; use $NAME, ${NAME}, "
            "${NAME:-default} or ${NAME:+alternative}");
  EXPECT_EQ(parse_error("FROM base\nENV X=${V:-open\n"),
            "Sandboxfile line 2: a ${ has no closing }; add the }");
  EXPECT_EQ(parse_error("FROM base\nENV X=${V\n"),
            "Sandboxfile line 2: ${V has no closing }; add the }");
  EXPECT_EQ(parse_error("FROM base\nENV X=${}\n"),
            "Sandboxfile line 2: ${ must be followed by a variable name, as in ${NAME}; write "
            "\\$ for a literal $");
}

TEST(SandboxfileTest, ErrorsNameTheLineWhereAContinuedInstructionStarts) {
  EXPECT_EQ(parse_error("FROM base\n\nENV A=1 \\\n  B=2 \\\n  C=\"open\n"),
            "Sandboxfile line 3: a \" quote is not closed; close it or write \\\"");
}

// ---- WORKDIR and USER ----

TEST(SandboxfileTest, WorkdirResolvesRelativePaths) {
  const std::vector<Step> steps = steps_after_from(R"SF(FROM base
WORKDIR app
WORKDIR src/../lib
WORKDIR ./x/
WORKDIR /opt//tool/.
WORKDIR ../../..
)SF");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].args, Strings{"/app"});
  EXPECT_EQ(steps[1].args, Strings{"/app/lib"});
  EXPECT_EQ(steps[2].args, Strings{"/app/lib/x"});
  EXPECT_EQ(steps[3].args, Strings{"/opt/tool"});
  EXPECT_EQ(steps[4].args, Strings{"/"});
}

TEST(SandboxfileTest, WorkdirSubstitutesAndKeepsSpaces) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\nENV HOME_DIR=/home/user\nWORKDIR $HOME_DIR/my project\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].args, Strings{"/home/user/my project"});
}

TEST(SandboxfileTest, WorkdirErrors) {
  EXPECT_EQ(parse_error("FROM base\nWORKDIR\n"),
            "Sandboxfile line 2: WORKDIR needs a path, e.g. WORKDIR /app");
  EXPECT_EQ(parse_error("FROM base\nARG D\nWORKDIR $D\n"),
            "Sandboxfile line 3: WORKDIR $D is empty after substitution; give the variable a "
            "value");
}

TEST(SandboxfileTest, UserTakesOneUserAndGroup) {
  EXPECT_EQ(only_step("FROM base\nUSER user:staff\n").args, Strings{"user:staff"});
  const std::vector<Step> steps = steps_after_from("FROM base\nARG UID=1000\nUSER ${UID}:$UID\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].kind, Kind::kUser);
  EXPECT_EQ(steps[1].args, Strings{"1000:1000"});
  EXPECT_EQ(parse_error("FROM base\nUSER a b\n"),
            "Sandboxfile line 2: USER takes one user[:group], e.g. USER user or USER 1000:1000");
  EXPECT_EQ(parse_error("FROM base\nUSER\n"),
            "Sandboxfile line 2: USER takes one user[:group], e.g. USER user or USER 1000:1000");
  EXPECT_EQ(parse_error("FROM base\nUSER $NOBODY\n"),
            "Sandboxfile line 2: USER $NOBODY is empty after substitution; give the variable a "
            "value");
}

// ---- ARG and build args ----

TEST(SandboxfileTest, ArgValueIsBuildArgElseDefaultElseEmpty) {
  const std::vector<Step> steps = steps_after_from(
      "FROM base\nARG GIVEN=default\nARG DEFAULTED=default\nARG BARE\n", {{"GIVEN", "cli"}});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, Kind::kArg);
  EXPECT_EQ(steps[0].pairs, (Pairs{{"GIVEN", "cli"}}));
  EXPECT_EQ(steps[1].pairs, (Pairs{{"DEFAULTED", "default"}}));
  EXPECT_EQ(steps[2].pairs, (Pairs{{"BARE", ""}}));
}

TEST(SandboxfileTest, ArgBuildArgReachesRunAndSubstitution) {
  const std::vector<Step> steps =
      steps_after_from("FROM base\nARG VERSION=1.0\nRUN echo $VERSION\nWORKDIR /opt/v$VERSION\n",
                       {{"VERSION", "2.0"}});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].env, (Args{{"VERSION", "2.0"}}));
  EXPECT_EQ(steps[2].args, Strings{"/opt/v2.0"});
}

TEST(SandboxfileTest, SeveralArgsOnOneLineAndDefaultsFromEarlierOnes) {
  const Step step = only_step("FROM base\nARG A=1 B=${A}2 C=\"x y\"\n");
  EXPECT_EQ(step.pairs, (Pairs{{"A", "1"}, {"B", "12"}, {"C", "x y"}}));
}

TEST(SandboxfileTest, ArgErrors) {
  EXPECT_EQ(parse_error("FROM base\nARG\n"),
            "Sandboxfile line 2: ARG needs a name, e.g. ARG VERSION=1.0");
  EXPECT_EQ(parse_error("FROM base\nARG 9LIVES=1\n"),
            "Sandboxfile line 2: ARG name 9LIVES must be letters, digits and _, not starting "
            "with a digit");
  EXPECT_EQ(parse_error("FROM base\nARG my-var\n"),
            "Sandboxfile line 2: ARG name my-var must be letters, digits and _, not starting "
            "with a digit");
}

TEST(SandboxfileTest, UndeclaredBuildArgIsAWarning) {
  const Sandboxfile file = parse_ok("ARG USED_IN_FROM=base\nFROM $USED_IN_FROM\nARG USED\n",
                                    {{"USED", "1"}, {"USED_IN_FROM", "base"}, {"TYPO", "x"}});
  EXPECT_EQ(file.warnings,
            Strings{"Sandboxfile: --build-arg TYPO is unused; no ARG TYPO declares it"});
}

TEST(SandboxfileTest, PlatformArgsAreDeclaredByDocker) {
  const Sandboxfile file = parse_ok("FROM base:$TARGETARCH\nARG TARGETARCH\nARG TARGETOS\n");
  ASSERT_EQ(file.steps.size(), 3u);
  const std::string arch = file.steps[1].pairs[0].second;
  EXPECT_FALSE(arch.empty());
  EXPECT_EQ(file.steps[0].args, Strings{"base:" + arch});
  EXPECT_EQ(file.steps[2].pairs, (Pairs{{"TARGETOS", "linux"}}));
  EXPECT_TRUE(file.warnings.empty());
}

// ---- A realistic file ----

TEST(SandboxfileTest, RealisticFile) {
  const Sandboxfile file = parse_ok(R"SF(# syntax=docker/dockerfile:1
ARG BASE=base
FROM ${BASE} AS runtime

ARG PY_VERSION=3.11
ENV LANG=C.UTF-8 \
    APP_HOME=/srv/app
WORKDIR $APP_HOME
COPY --chown=user:user requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt \
 && rm -rf /root/.cache
COPY . .
USER user
CMD ["python3", "main.py"]
)SF",
                                    {{"PY_VERSION", "3.12"}});
  ASSERT_EQ(file.steps.size(), 8u);
  EXPECT_EQ(file.steps[0].args, Strings{"base"});
  EXPECT_EQ(file.steps[1].pairs, (Pairs{{"PY_VERSION", "3.12"}}));
  EXPECT_EQ(file.steps[2].pairs, (Pairs{{"LANG", "C.UTF-8"}, {"APP_HOME", "/srv/app"}}));
  EXPECT_EQ(file.steps[3].args, Strings{"/srv/app"});
  EXPECT_EQ(file.steps[4].args, (Strings{"requirements.txt", "/srv/app/"}));
  EXPECT_EQ(file.steps[4].chown, "user:user");
  EXPECT_EQ(file.steps[5].line, 10);
  EXPECT_EQ(file.steps[5].text,
            "RUN pip install --no-cache-dir -r requirements.txt && rm -rf /root/.cache");
  EXPECT_EQ(file.steps[5].env, (Args{{"PY_VERSION", "3.12"}}));
  EXPECT_EQ(file.steps[6].args, (Strings{".", "/srv/app/"}));
  EXPECT_EQ(file.steps[7].args, Strings{"user"});
  EXPECT_TRUE(file.warnings.empty());
  EXPECT_EQ(file.start_cmd, "exec 'python3' 'main.py'");
}

// ---- Start and ready commands ----

TEST(SandboxfileTest, NoCmdLeavesTheStartCommandToTheFromTemplate) {
  const Sandboxfile file = parse_ok("FROM base\nRUN true\n");
  EXPECT_EQ(file.start_cmd, std::nullopt);
  EXPECT_EQ(file.ready_cmd, std::nullopt);
}

TEST(SandboxfileTest, ShellFormCmdIsTheStartCommandAsWritten) {
  const Sandboxfile file =
      parse_ok("FROM base\nENV PORT=9000\nCMD python3 -m http.server $PORT\nRUN true\n");
  EXPECT_EQ(file.start_cmd, "python3 -m http.server $PORT");  // the shell expands it
  EXPECT_EQ(file.steps.size(), 3u);                           // CMD makes no step
}

TEST(SandboxfileTest, ExecFormCmdIsQuotedForTheShell) {
  EXPECT_EQ(parse_ok("FROM base\nCMD [\"echo\", \"it's\", \"a b\"]\n").start_cmd,
            "exec 'echo' 'it'\\''s' 'a b'");
}

TEST(SandboxfileTest, TheLastCmdCounts) {
  EXPECT_EQ(parse_ok("FROM base\nCMD one\nCMD two\n").start_cmd, "two");
}

TEST(SandboxfileTest, ExecEntrypointTakesCmdAsArguments) {
  EXPECT_EQ(parse_ok("FROM base\nCMD [\"--port\", \"9000\"]\nENTRYPOINT [\"server\"]\n").start_cmd,
            "exec 'server' '--port' '9000'");
  EXPECT_EQ(parse_ok("FROM base\nENTRYPOINT [\"server\"]\nCMD run it\n").start_cmd,
            "exec 'server' '/bin/sh' '-c' 'run it'");
  EXPECT_EQ(parse_ok("FROM base\nENTRYPOINT [\"server\", \"-v\"]\n").start_cmd,
            "exec 'server' '-v'");
}

TEST(SandboxfileTest, ShellEntrypointIgnoresCmd) {
  EXPECT_EQ(parse_ok("FROM base\nENTRYPOINT server --quiet\nCMD [\"x\"]\n").start_cmd,
            "server --quiet");
}

TEST(SandboxfileTest, EmptyExecCmdClearsTheStartCommand) {
  EXPECT_EQ(parse_ok("FROM base\nCMD []\n").start_cmd, "");
}

TEST(SandboxfileTest, ReadyIsAShellCommand) {
  const Sandboxfile file =
      parse_ok("FROM base\nCMD python3 -m http.server 9000\nREADY curl -sf localhost:9000\n");
  EXPECT_EQ(file.ready_cmd, "curl -sf localhost:9000");
}

TEST(SandboxfileTest, BadStartAndReadyCommandsAreNamed) {
  EXPECT_EQ(parse_error("FROM base\nCMD\n"),
            "Sandboxfile line 2: CMD needs a command, e.g. CMD python3 -m http.server 9000");
  EXPECT_EQ(parse_error("FROM base\nREADY\n"),
            "Sandboxfile line 2: READY takes a shell command that exits 0 once the start "
            "command is ready, e.g. READY curl -sf http://localhost:9000/");
  EXPECT_EQ(parse_error("FROM base\nREADY [\"true\"]\n").rfind("Sandboxfile line 2: READY", 0), 0u);
  EXPECT_EQ(parse_error("FROM base\nCMD [1, 2]\n"),
            "Sandboxfile line 2: CMD [...] must be a JSON array of strings, e.g. CMD "
            "[\"python3\", \"app.py\"]");
  EXPECT_EQ(parse_error("CMD x\nFROM base\n").rfind("Sandboxfile line 1: CMD comes before FROM", 0),
            0u);
}

TEST(SandboxfileTest, CopiedToFindsWhereACommandsFileWent) {
  EXPECT_EQ(copied_to(parse_ok("FROM base\nCOPY commands.py /app/\n"), "commands.py"),
            "/app/commands.py");
  EXPECT_EQ(copied_to(parse_ok("FROM base\nCOPY ./commands.py /srv/cmds.py\n"), "commands.py"),
            "/srv/cmds.py");
  EXPECT_EQ(copied_to(parse_ok("FROM base\nWORKDIR /w\nCOPY . .\n"), "commands.py"),
            "/w/commands.py");
  EXPECT_EQ(copied_to(parse_ok("FROM base\nCOPY . /app\n"), "commands.py"), "/app/commands.py");
  EXPECT_EQ(copied_to(parse_ok("FROM base\nCOPY other.py /app/\n"), "commands.py"), std::nullopt);
  EXPECT_EQ(copied_to(parse_ok("FROM base\nCOPY sub/commands.py /app/\n"), "commands.py"),
            std::nullopt);
}

}  // namespace
}  // namespace abx::templates::sandboxfile
