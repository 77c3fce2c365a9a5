// The embedding example (examples/embedded_consumer.cpp) works as documented: it captures,
// writes each batch durably itself, acknowledges, and stops cleanly on SIGINT with its
// checkpoint on disk; a second run continues without repeating anything.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cppcdc/checkpoint.hpp"
#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

TEST(EmbeddedExample, AcknowledgesAfterItsOwnDurableWriteAndResumesWithoutRepeats) {
  const std::string db = it::test_database("ex");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table orders (id int primary key, v text)");
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-example-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out.jsonl";

  auto run_once = [&](int first_id) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string log = (dir / "example.log").string();
      freopen(log.c_str(), "a", stderr);
      execl(CPPCDC_EXAMPLE_BINARY, CPPCDC_EXAMPLE_BINARY, it::dsn_for(db).c_str(), "public.orders",
            (dir / "state").c_str(), out.c_str(), nullptr);
      _exit(127);
    }
    EXPECT_TRUE(
        it::wait_until([&] { return s.scalar(it::streaming_sql("cppcdc_example")) == "1"; }, 30s));
    s.query("begin; insert into orders values (" + std::to_string(first_id) + ", 'a'); insert into orders values (" +
            std::to_string(first_id + 1) + ", 'b'); commit;");
    EXPECT_TRUE(it::wait_until(
        [&] {
          return it::read_sink(out.string()).size() >= static_cast<std::size_t>(first_id + 1);
        },
        30s));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  };
  run_once(1);
  run_once(3);
  const auto events = it::read_sink(out.string());
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(find_column(*events[i].after, "id")->text, std::to_string(i + 1));
  }
  auto ckpt = FileCheckpoint::open(dir / "state", "cppcdc_example");
  ASSERT_TRUE(ckpt);
  auto rec = (*ckpt)->load();
  ASSERT_TRUE(rec && *rec);
  EXPECT_EQ((*rec)->committed_events, 4u);
  it::drop_slots(db);
  fs::remove_all(dir);
}
