// The proxy's waits are bounded and quiet: a name lookup whose DNS never
// answers ends with an error, and a peek waiting for the rest of a request
// sleeps until it comes instead of waking every few milliseconds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <future>
#include <thread>

#include "common/unique_fd.h"
#include "egress/lookup.h"
#include "egress/peek.h"
#include "temp_dir.h"

namespace abx::egress {
namespace {

// Not egress_test_support.h: its namespace `testing` would hide
// abx::testing from the test files built in one unit with this one.
constexpr uint32_t kLoopbackIp = 0x7f000001;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(kLoopbackIp);
  a.sin_port = htons(port);
  return a;
}

// A connected TCP pair on loopback: {client, server}.
std::pair<UniqueFd, UniqueFd> tcp_pair() {
  const UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = loopback(0);
  socklen_t size = sizeof a;
  EXPECT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(listener.get(), 4), 0);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &size);
  UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  return {std::move(client), std::move(server)};
}

void send_text(int fd, std::string_view text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// The peek on a thread of its own, with the times it went to sleep (voluntary
// context switches: each wait in poll or a sleep is one).
struct PeekRun {
  FirstBytes first;
  long sleeps = 0;
};

PeekRun peek_counting(int fd, std::chrono::milliseconds timeout) {
  PeekRun run;
  std::thread([&] {
    rusage before{}, after{};
    ::getrusage(RUSAGE_THREAD, &before);
    run.first = peek_first_bytes(fd, timeout);
    ::getrusage(RUSAGE_THREAD, &after);
    run.sleeps = after.ru_nvcsw - before.ru_nvcsw;
  }).join();
  return run;
}

TEST(EgressPeek, WaitingForTheRestOfAHeadDoesNotWakeEveryFewMilliseconds) {
  auto [client, server] = tcp_pair();
  send_text(client.get(), "GET / HTTP/1.1\r\nHost: a.te");  // and then nothing
  const PeekRun run = peek_counting(server.get(), std::chrono::milliseconds(1000));
  EXPECT_EQ(run.first.protocol, Protocol::kOther);  // never complete: judged by address
  // A loop that polls a socket still holding the peeked bytes wakes ~200 times a second.
  EXPECT_LT(run.sleeps, 20) << "the peek woke " << run.sleeps << " times in one second";
}

TEST(EgressPeek, TheRestOfAHeadArrivingLaterIsSeen) {
  auto [client, server] = tcp_pair();
  send_text(client.get(), "GET / HTTP/1.1\r\nHost: a.te");
  std::thread rest([fd = client.get()] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    send_text(fd, "st\r\nAccept: */*\r\n\r\n");
  });
  const PeekRun run = peek_counting(server.get(), std::chrono::seconds(10));
  rest.join();
  EXPECT_EQ(run.first.protocol, Protocol::kHttp);
  EXPECT_EQ(run.first.name, "a.test");
  // The bytes stay for the relay, which reads them as usual.
  char buffer[128];
  EXPECT_EQ(::recv(server.get(), buffer, sizeof buffer, MSG_DONTWAIT), 45);
}

TEST(EgressPeek, AClientThatClosesMidHeadEndsThePeekAtOnce) {
  auto [client, server] = tcp_pair();
  send_text(client.get(), "GET / HTTP/1.1\r\nHost: a.te");
  ::shutdown(client.get(), SHUT_WR);
  const PeekRun run = peek_counting(server.get(), std::chrono::seconds(30));
  EXPECT_EQ(run.first.protocol, Protocol::kOther);
  EXPECT_LT(run.sleeps, 20);
}

// In a network and mount namespace of its own, the host's resolver is a
// server on 127.0.0.1:53 that reads queries and never answers, and the
// resolver is told to wait 30 s per try, 5 tries: a lookup ends only through
// its own deadline. Exit codes: 0 the lookup failed as timed out, 77 no
// namespaces here, others a step that failed.
int lookup_against_a_silent_resolver(const std::filesystem::path& dir) {
  if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return 77;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 10;
  const std::filesystem::path conf = dir / "resolv.conf";
  std::ofstream(conf) << "nameserver 127.0.0.1\noptions timeout:30 attempts:5\n";
  if (::mount(conf.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0) return 11;
  const UniqueFd control(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq lo{};
  std::strcpy(lo.ifr_name, "lo");
  lo.ifr_flags = IFF_UP;
  if (::ioctl(control.get(), SIOCSIFFLAGS, &lo) != 0) return 12;
  const UniqueFd silent(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const sockaddr_in dns = loopback(53);
  if (::bind(silent.get(), reinterpret_cast<const sockaddr*>(&dns), sizeof dns) != 0) return 13;
  const auto found = ipv4_addresses("never.answers.test", std::chrono::milliseconds(500));
  if (found) return 14;
  return found.error().errnum == ETIMEDOUT ? 0 : 15;
}

TEST(EgressLookup, ANameWhoseDnsNeverAnswersFailsWithinTheDeadline) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for namespaces and a bind mount";
  abx::testing::TempDir dir("abx-lookup");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(lookup_against_a_silent_resolver(dir.path()));
  // Without a deadline the lookup would take 30 s × 5 tries: the child is
  // given far less than that, then killed.
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 200 && done == 0; ++i) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "the lookup was still waiting for the resolver after 20 s";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no namespaces here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see lookup_against_a_silent_resolver for the step";
}

TEST(EgressLookup, ALateLookupIsGivenUpAndItsValueDropped) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  const auto value = within<int>(std::chrono::milliseconds(100), [released] {
    released.wait();
    return 7;
  });
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().errnum, ETIMEDOUT);
  release->set_value();
  EXPECT_EQ(within<int>(std::chrono::seconds(10), [] { return 7; }).value(), 7);
}

// A full pool says so (not "no answer within"), and one pool's lookups do
// not take another's slots.
TEST(EgressLookup, AFullPoolSaysItIsBusyAndLeavesOtherPoolsFree) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  static LookupSlots two(2);  // outlives the late lookups' threads
  for (int i = 0; i < 2; ++i)
    EXPECT_FALSE(within<int>(
        std::chrono::milliseconds(1),
        [released] {
          released.wait();
          return 1;
        },
        two));
  auto busy = within<int>(
      std::chrono::seconds(1), [] { return 1; }, two);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().errnum, EAGAIN);
  EXPECT_NE(busy.error().message().find("2 name lookups are running already"), std::string::npos);
  EXPECT_EQ(within<int>(std::chrono::seconds(10), [] { return 3; }).value(), 3);
  release->set_value();
  // The late lookups give their slots back when they end.
  bool freed = false;
  for (int i = 0; i < 500 && !freed; ++i) {
    freed = static_cast<bool>(within<int>(
        std::chrono::seconds(1), [] { return 1; }, two));
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(freed);
}

}  // namespace
}  // namespace abx::egress
