// The remote tier's Redis client without a Redis server: the RESP reply parser on good and
// hostile bytes, and the deadline against a peer that accepts and never answers or hangs up.

#include "remote/redis_client.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using kiln::cache::detail::Clock;
using kiln::cache::detail::parse_reply;
using kiln::cache::detail::RedisClient;
using kiln::cache::detail::RedisReply;
using kiln::cache::detail::RedisStatus;

namespace {

int parse(const std::string& bytes, RedisReply& reply, std::uint64_t max_bulk = 1 << 20) {
    std::size_t pos = 0;
    return parse_reply(bytes, pos, max_bulk, reply);
}

// A listening socket on 127.0.0.1 that accepts connections and does nothing else with them.
class SilentPeer {
  public:
    SilentPeer() {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof address;
        EXPECT_EQ(::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        ::listen(m_fd, 8);
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&address), &size);
        m_port = ntohs(address.sin_port);
    }
    ~SilentPeer() { ::close(m_fd); }
    std::uint16_t port() const { return m_port; }
    int fd() const { return m_fd; }

  private:
    int m_fd = -1;
    std::uint16_t m_port = 0;
};

kiln::cache::RemoteConfig config_for(std::uint16_t port) {
    return kiln::cache::RemoteConfig::parse_url("redis://127.0.0.1:" + std::to_string(port), "t");
}

} // namespace

TEST(RedisReplyParser, ReadsEveryType) {
    RedisReply reply;
    ASSERT_EQ(parse("+OK\r\n", reply), 1);
    EXPECT_TRUE(reply.is_status("OK"));
    ASSERT_EQ(parse("-ERR wrong\r\n", reply), 1);
    EXPECT_TRUE(reply.is_error());
    EXPECT_EQ(reply.text, "ERR wrong");
    ASSERT_EQ(parse(":-42\r\n", reply), 1);
    EXPECT_EQ(reply.integer, -42);
    ASSERT_EQ(parse("$-1\r\n", reply), 1);
    EXPECT_EQ(reply.type, RedisReply::Type::nil);
    ASSERT_EQ(parse(std::string("$5\r\na\r\n\0b\r\n", 11), reply), 1);
    EXPECT_EQ(reply.text, std::string("a\r\n\0b", 5)); // binary-safe
    ASSERT_EQ(parse("*2\r\n$1\r\n0\r\n*1\r\n$6\r\nkiln:x\r\n", reply), 1);
    ASSERT_EQ(reply.elements.size(), 2u);
    EXPECT_EQ(reply.elements[1].elements[0].text, "kiln:x");
}

TEST(RedisReplyParser, WaitsForTheRestOfAReply) {
    RedisReply reply;
    const std::string whole = "$10\r\n0123456789\r\n";
    for (std::size_t cut = 0; cut < whole.size(); ++cut)
        EXPECT_EQ(parse(whole.substr(0, cut), reply), 0) << cut;
    std::size_t pos = 0;
    EXPECT_EQ(parse_reply(whole + "+OK\r\n", pos, 1 << 20, reply), 1);
    EXPECT_EQ(pos, whole.size()); // the next reply is left for the next call
}

TEST(RedisReplyParser, RejectsWhatIsNotRespOrBreaksALimit) {
    RedisReply reply;
    const std::vector<std::string> hostile = {"?\r\n",
                                              "$abc\r\n",
                                              "$-2\r\n",
                                              "$3\r\nabcd\r\n",
                                              ":12x\r\n",
                                              "*-5\r\n",
                                              "*99999999\r\n",
                                              "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
                                              std::string(5000, 'x')};
    for (const auto& bytes : hostile)
        EXPECT_EQ(parse(bytes, reply), -1) << bytes.substr(0, 40);
    // Too large: told apart, so a huge value is damage rather than a broken server.
    EXPECT_EQ(parse("$2000000\r\n", reply), -2);
}

TEST(RedisClient, APeerThatNeverAnswersCostsOneDeadline) {
    SilentPeer peer;
    RedisClient client;
    ASSERT_TRUE(
        client.connect(config_for(peer.port()), Clock::now() + std::chrono::seconds(5)).ok());
    const auto start = Clock::now();
    auto result = client.command({"GET", "kiln:x"}, start + std::chrono::milliseconds(100));
    EXPECT_EQ(result.status, RedisStatus::timeout);
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(100));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)); // generous: a loaded machine
    EXPECT_FALSE(client.connected());
}

TEST(RedisClient, APeerThatHangsUpIsAFailureNotASignal) {
    SilentPeer peer;
    RedisClient client;
    ASSERT_TRUE(
        client.connect(config_for(peer.port()), Clock::now() + std::chrono::seconds(5)).ok());
    const int accepted = ::accept(peer.fd(), nullptr, nullptr);
    ASSERT_GE(accepted, 0);
    ::close(accepted);
    // Writing to a closed connection raises SIGPIPE unless the client prevents it; a big
    // command makes sure the write meets the reset.
    const std::string value(8 << 20, 'v');
    auto result = client.command({"SET", "kiln:x", value}, Clock::now() + std::chrono::seconds(5));
    EXPECT_EQ(result.status, RedisStatus::failed);
    EXPECT_FALSE(result.message.empty());
}

TEST(RedisClient, NothingListeningFailsAtOnce) {
    std::uint16_t port;
    {
        SilentPeer closed; // bound, then closed: nothing listens there any more
        port = closed.port();
    }
    RedisClient client;
    auto result = client.connect(config_for(port), Clock::now() + std::chrono::seconds(5));
    EXPECT_EQ(result.status, RedisStatus::failed);
    EXPECT_FALSE(client.command({"PING"}, Clock::now() + std::chrono::seconds(1)).ok());
}
