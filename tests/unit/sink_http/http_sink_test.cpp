// The HTTP sink against a real receiver on loopback (tests/http_receiver.hpp): bodies, headers,
// signatures checked by the receiver's own code, retries, permanent refusals, timeouts, dropped
// connections, stop requests, slicing, and secrets kept out of errors and names.

#include "cppcdc/http_sink.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/cloudevents.hpp"
#include "http_receiver.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

using testing_http::DroppingListener;
using testing_http::HttpReceiver;
using Answer = HttpReceiver::Answer;
using namespace std::chrono_literals;

constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kOldSecret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

Event event(int i) {
  EventBuilder builder("orders", Operation::kInsert);
  builder.schema("public")
      .source(SourceMetadata{"postgres", "0/" + std::to_string(0x1000 + i), 1700000000000 + i})
      .ts(1700000000100 + i)
      .primary_key({"id"})
      .after(Row{{"id", std::to_string(i), false},
                 {"note", std::string("caf\xc3\xa9 \"q\" \n"), false},
                 {"doc", std::string(R"({"k":[1,2]})"), true}});
  return std::move(builder).build();
}

std::vector<Event> batch(int first, int count) {
  std::vector<Event> out;
  for (int i = first; i < first + count; ++i) out.push_back(event(i));
  return out;
}

std::string lines(const std::vector<Event>& events) {
  std::string out;
  for (const auto& e : events) out += e.to_json() + "\n";
  return out;
}

std::string array(const std::vector<Event>& events) {
  std::string out = "[";
  for (const auto& e : events) out += (out.size() > 1 ? "," : "") + e.to_json();
  return out + "]";
}

HttpSinkOptions options_for(const std::string& url) {
  HttpSinkOptions o;
  o.url = url;
  o.retry.initial_backoff_ms = 1;
  o.retry.max_backoff_ms = 5;
  o.connect_timeout_ms = 2'000;
  o.request_timeout_ms = 10'000;
  return o;
}

std::unique_ptr<Sink> open(HttpSinkOptions o) {
  auto sink = make_http_sink(std::move(o));
  if (!sink) {
    ADD_FAILURE() << sink.error().report();
    return nullptr;
  }
  return std::move(*sink);
}

TEST(HttpSink, PostsTheBatchAsAJsonArraySignedWithEverySecret) {
  HttpReceiver receiver({kSecret, kOldSecret});
  auto o = options_for(receiver.url());
  o.signing_secrets = {kSecret, kOldSecret};
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 3);
  ASSERT_TRUE(sink->write(events));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& r = requests[0];
  EXPECT_EQ(r.path, "/hook");
  EXPECT_EQ(r.body, array(events));
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_TRUE(r.signature_ok) << r.header("webhook-signature");
  EXPECT_EQ(r.header("webhook-id").rfind("msg_", 0), 0u);
  const auto ts = std::stoll(r.header("webhook-timestamp"));
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_LE(std::llabs(now - ts), 60);
  // Two signatures, space-separated.
  EXPECT_NE(r.header("webhook-signature").find(' '), std::string::npos);
  EXPECT_TRUE(sink->close());
}

TEST(HttpSink, JsonLinesWithGzipReachTheReceiverAsTheyWereEncoded) {
  HttpReceiver receiver({kSecret});
  auto o = options_for(receiver.url("/ingest"));
  o.format = HttpBodyFormat::kJsonLines;
  o.compression = HttpCompression::kGzip;
  o.signing_secrets = {kSecret};
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 200);
  ASSERT_TRUE(sink->write(events));
  ASSERT_TRUE(sink->flush());
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  // cpp-httplib undid the Content-Encoding; the signature covers the uncompressed body.
  EXPECT_EQ(requests[0].body, lines(events));
  EXPECT_EQ(requests[0].header("content-type"), "application/x-ndjson");
  EXPECT_EQ(requests[0].header("content-encoding"), "gzip");
  EXPECT_TRUE(requests[0].signature_ok);
  EXPECT_EQ(requests[0].path, "/ingest");
}

TEST(HttpSink, SendsHeadersAndBearerOrBasicAuth) {
  HttpReceiver receiver;
  {
    auto o = options_for(receiver.url());
    o.headers = {{"X-Team", "billing"}, {"X-Trace", "a b"}};
    o.auth.kind = HttpAuth::Kind::kBearer;
    o.auth.token = "tok-123";
    auto sink = open(o);
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(batch(1, 1)));
    ASSERT_TRUE(sink->flush());
  }
  {
    auto o = options_for(receiver.url());
    o.auth.kind = HttpAuth::Kind::kBasic;
    o.auth.username = "cdc";
    o.auth.password = "pa:ss";
    auto sink = open(o);
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(batch(2, 1)));
    ASSERT_TRUE(sink->flush());
  }
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("x-team"), "billing");
  EXPECT_EQ(requests[0].header("x-trace"), "a b");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer tok-123");
  EXPECT_EQ(requests[0].header("webhook-signature"), "");                // no secrets: not signed
  EXPECT_EQ(requests[1].header("authorization"), "Basic Y2RjOnBhOnNz");  // cdc:pa:ss
}

// Ops trial M2: a batch read again after a restart carries new read times (`ts`), so its
// body differs; its webhook-id does not, being made from the events' positions, tables and
// keys. Different events still get different ids.
TEST(HttpSink, TheWebhookIdOfABatchReadAgainAfterARestartIsTheSame) {
  HttpReceiver receiver;
  const auto first_run = batch(1, 3);
  auto second_run = first_run;
  for (auto& e : second_run) e.ts += 3'600'000;  // read an hour later
  auto other = first_run;
  other[2].source.offset = "0/9999";
  const std::vector<const std::vector<Event>*> runs{&first_run, &second_run, &other};
  for (const auto* events : runs) {
    auto sink = open(options_for(receiver.url()));  // a new process each time
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(*events));
    ASSERT_TRUE(sink->flush());
  }
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_NE(requests[0].body, requests[1].body);
  EXPECT_EQ(requests[0].header("webhook-id").rfind("msg_", 0), 0u);
  EXPECT_EQ(requests[0].header("webhook-id"), requests[1].header("webhook-id"));
  EXPECT_NE(requests[0].header("webhook-id"), requests[2].header("webhook-id"));
}

TEST(HttpSink, RetriesServerErrorsAndKeepsTheIdAcrossAttempts) {
  HttpReceiver receiver({kSecret});
  receiver.script({{500, "down"}, {503, ""}, {408, ""}, {429, ""}});
  auto o = options_for(receiver.url());
  o.signing_secrets = {kSecret};
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 4);
  ASSERT_TRUE(sink->write(events));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 5u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.header("webhook-id"), requests[0].header("webhook-id"));
    EXPECT_EQ(r.body, array(events));
    EXPECT_TRUE(r.signature_ok);
  }
  EXPECT_EQ(receiver.delivered(), array(events));
}

TEST(HttpSink, HonoursRetryAfterOnA429) {
  HttpReceiver receiver;
  receiver.script({{429, "slow down", "1"}});
  auto sink = open(options_for(receiver.url()));
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(sink->flush());
  // The back-off alone is at most 5 ms; the receiver asked for a second.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 950ms);
  EXPECT_EQ(receiver.count(), 2u);
}

TEST(HttpSink, APermanentRefusalStopsWithTheStatusAndTheBodyAndIsNotRetried) {
  HttpReceiver receiver;
  receiver.set_fallback(
      {400, "{\"error\":\"column amount is not a number\"}\n" + std::string(2000, 'x')});
  auto o = options_for(receiver.url());
  o.signing_secrets = {kSecret};
  o.auth.kind = HttpAuth::Kind::kBearer;
  o.auth.token = "super-secret-token";
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 2)));
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  const std::string report = flushed.error().report();
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTerminal) << report;
  EXPECT_NE(report.find("HTTP 400"), std::string::npos) << report;
  EXPECT_NE(report.find("column amount is not a number"), std::string::npos) << report;
  EXPECT_NE(report.find("2 events"), std::string::npos) << report;
  EXPECT_LT(report.size(), 1200u) << "the body is cut to its first bytes";
  EXPECT_EQ(report.find("super-secret-token"), std::string::npos);
  EXPECT_EQ(report.find("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), std::string::npos);
  EXPECT_EQ(receiver.count(), 1u);
  for (int status : {401, 403, 404, 413, 422, 301}) {
    HttpReceiver other;
    other.set_fallback({status, ""});
    auto s = open(options_for(other.url()));
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->write(batch(1, 1)));
    const auto st = s->flush();
    ASSERT_FALSE(st) << status;
    EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal) << status;
    EXPECT_NE(st.error().report().find("HTTP " + std::to_string(status)), std::string::npos)
        << st.error().report();
    EXPECT_EQ(other.count(), 1u) << status;
  }
}

TEST(HttpSink, ARefusedBatchGoesToTheRejectedHookWhenOneIsSet) {
  HttpReceiver receiver;
  receiver.script({{200, ""}, {422, "bad row"}});
  auto o = options_for(receiver.url());
  o.batch_max_events = 2;
  std::vector<std::string> handed;
  std::string why;
  o.on_rejected = [&](std::span<const Event> events, const Error& error) -> Status {
    for (const auto& e : events) handed.push_back(e.to_json());
    why = error.report();
    return ok();
  };
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 5);
  ASSERT_TRUE(sink->write(events));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  ASSERT_EQ(handed.size(), 2u);
  EXPECT_EQ(handed[0], events[2].to_json());
  EXPECT_EQ(handed[1], events[3].to_json());
  EXPECT_NE(why.find("HTTP 422"), std::string::npos) << why;
  EXPECT_NE(why.find("bad row"), std::string::npos) << why;
  EXPECT_EQ(receiver.count(), 3u);
}

TEST(HttpSink, GivesUpAfterMaxRetriesWithATransientError) {
  HttpReceiver receiver;
  receiver.set_fallback({502, "bad gateway"});
  auto o = options_for(receiver.url());
  o.retry.max_retries = 3;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(flushed.error().report().find("gave up after 3 retries"), std::string::npos)
      << flushed.error().report();
  EXPECT_NE(flushed.error().report().find("HTTP 502"), std::string::npos);
  EXPECT_EQ(receiver.count(), 4u);
}

// F4: the sink's own retries are a short round (retry.max_elapsed_ms), not an outage-long
// wait: against a receiver that stays down, flush() fails (transient) within the bound even
// with no count limit, so the runtime's breaker hears of it; and every failed request is
// counted as it happens.
TEST(HttpSink, RetriesEndAfterMaxElapsedAndEveryFailedRequestIsCounted) {
  HttpReceiver receiver;
  receiver.set_fallback({503, "down"});
  auto o = options_for(receiver.url());
  o.retry.max_retries = -1;
  o.retry.initial_backoff_ms = 20;
  o.retry.max_backoff_ms = 40;
  o.retry.max_elapsed_ms = 300;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->failed_attempts(), std::optional<std::uint64_t>(0));
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  const auto flushed = sink->flush();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(flushed.error().report().find("retry.max_elapsed_ms 300"), std::string::npos)
      << flushed.error().report();
  EXPECT_LT(took, 3s);
  EXPECT_GE(receiver.count(), 3u);
  EXPECT_EQ(sink->failed_attempts(), std::optional<std::uint64_t>(receiver.count()));
  // The runtime's next attempt: recover, the batch again; each failed request counts again.
  const std::size_t before = receiver.count();
  ASSERT_TRUE(sink->recover());
  ASSERT_TRUE(sink->write(batch(1, 1)));
  ASSERT_FALSE(sink->flush());
  EXPECT_GT(receiver.count(), before);
  EXPECT_EQ(sink->failed_attempts(), std::optional<std::uint64_t>(receiver.count()));
}

// A Retry-After longer than retry.max_elapsed_ms is not waited for inside flush(): it fails at
// once, and the next flush() sends nothing before the time the receiver asked for.
TEST(HttpSink, ALongRetryAfterEndsTheFlushAndHoldsBackTheNextOne) {
  HttpReceiver receiver;
  receiver.script({{429, "slow down", "2"}});
  auto o = options_for(receiver.url());
  o.retry.max_elapsed_ms = 500;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  EXPECT_NE(flushed.error().report().find("Retry-After"), std::string::npos)
      << flushed.error().report();
  EXPECT_EQ(receiver.count(), 1u);
  ASSERT_TRUE(sink->recover());
  ASSERT_TRUE(sink->write(batch(1, 1)));
  ASSERT_TRUE(sink->flush());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1900ms);
  EXPECT_EQ(receiver.count(), 2u);
}

TEST(HttpSink, AStalledReceiverTimesOutAndTheBatchIsSentAgain) {
  HttpReceiver receiver;
  receiver.script({{200, "", std::nullopt, 3'000}});  // answers only after 3 s
  auto o = options_for(receiver.url());
  o.request_timeout_ms = 300;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 2);
  ASSERT_TRUE(sink->write(events));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  // The stalled request reached the receiver (and was kept: its answer came too late) and so
  // did the retry, with the same id: the receiver keeps the batch once.
  ASSERT_TRUE(test::wait_until([&] { return receiver.count() == 2; }, 10s));
  const auto requests = receiver.requests();
  EXPECT_EQ(requests[0].header("webhook-id"), requests[1].header("webhook-id"));
  EXPECT_EQ(receiver.delivered(), array(events));
}

TEST(HttpSink, ATimeoutNamesTheReceiverAndIsTransient) {
  HttpReceiver receiver;
  receiver.set_fallback({200, "", std::nullopt, 2'000});
  auto o = options_for(receiver.url());
  o.request_timeout_ms = 200;
  o.retry.max_retries = 0;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(flushed.error().report().find(receiver.url()), std::string::npos)
      << flushed.error().report();
}

TEST(HttpSink, ADroppedConnectionIsRetriedAndThenTransient) {
  DroppingListener dropping;
  auto o = options_for(dropping.url());
  o.retry.max_retries = 2;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient) << flushed.error().report();
  EXPECT_EQ(dropping.accepted(), 3);
}

TEST(HttpSink, AStopRequestEndsTheRetriesOfAnUnreachableReceiver) {
  HttpReceiver receiver;
  receiver.set_fallback({503, ""});
  std::atomic<bool> stop{false};
  auto o = options_for(receiver.url());
  o.retry.max_retries = -1;
  o.retry.initial_backoff_ms = 20;
  o.retry.max_backoff_ms = 200;
  o.stop = &stop;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  std::thread stopper([&] {
    (void)test::wait_until([&] { return receiver.count() >= 3; }, 30s);
    stop.store(true);
  });
  const auto flushed = sink->flush();
  stopper.join();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(flushed.error().report().find("stopping"), std::string::npos)
      << flushed.error().report();
  // close() does not try again after a failed flush (a stop must not wait for it).
  const std::size_t seen = receiver.count();
  const auto closed = sink->close();
  EXPECT_FALSE(closed);
  EXPECT_NE(closed.error().report().find("1 event"), std::string::npos) << closed.error().report();
  EXPECT_EQ(receiver.count(), seen);
}

// While flush() retries a request, current_problem() (read from another thread, as the
// health verdict does) says so with the last answer; once delivered it is empty again.
TEST(HttpSink, TheRequestBeingRetriedIsTheSinksCurrentProblem) {
  HttpReceiver receiver;
  receiver.set_fallback({503, "busy"});
  auto o = options_for(receiver.url());
  o.retry.max_retries = -1;
  o.retry.initial_backoff_ms = 20;
  o.retry.max_backoff_ms = 50;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->current_problem(), "");
  ASSERT_TRUE(sink->write(batch(1, 1)));
  std::string seen;
  std::thread watcher([&] {
    (void)test::wait_until(
        [&] {
          seen = sink->current_problem();
          return receiver.count() >= 3 && !seen.empty();
        },
        30s);
    receiver.set_fallback({200, ""});
  });
  const auto flushed = sink->flush();
  watcher.join();
  ASSERT_TRUE(flushed) << flushed.error().report();
  EXPECT_NE(seen.find("retrying one request for"), std::string::npos) << seen;
  EXPECT_NE(seen.find("HTTP 503"), std::string::npos) << seen;
  EXPECT_EQ(sink->current_problem(), "");
  ASSERT_TRUE(sink->close());
}

TEST(HttpSink, SlicesABatchAndContinuesAfterTheSlicesAlreadyDelivered) {
  HttpReceiver receiver;
  receiver.script({{200, ""}, {500, ""}});
  auto o = options_for(receiver.url());
  o.format = HttpBodyFormat::kJsonLines;
  o.batch_max_events = 3;
  o.retry.max_retries = 0;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  const auto events = batch(1, 8);
  ASSERT_TRUE(sink->write(events));
  EXPECT_FALSE(sink->flush());  // the second slice failed
  const auto again = sink->flush();
  ASSERT_TRUE(again) << again.error().report();
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 4u);  // slice 1, slice 2 (500), slice 2, slice 3
  EXPECT_EQ(requests[0].body, lines({events[0], events[1], events[2]}));
  EXPECT_EQ(requests[1].body, requests[2].body);
  EXPECT_EQ(requests[1].header("webhook-id"), requests[2].header("webhook-id"));
  EXPECT_NE(requests[0].header("webhook-id"), requests[2].header("webhook-id"));
  EXPECT_EQ(requests[3].body, lines({events[6], events[7]}));
  EXPECT_EQ(receiver.delivered(), lines(events));
}

TEST(HttpSink, SlicesByBytesAndSendsALargerEventAlone) {
  HttpReceiver receiver;
  auto o = options_for(receiver.url());
  const auto events = batch(1, 6);
  const std::size_t one = events[0].to_json().size() + 1;
  o.batch_max_bytes = 2 * one + 1;  // '[' + two records with their separators
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(events));
  ASSERT_TRUE(sink->flush());
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) EXPECT_LE(r.body.size(), o.batch_max_bytes);
  EXPECT_EQ(requests[0].body, array({events[0], events[1]}));

  HttpReceiver small;
  auto tiny = options_for(small.url());
  tiny.batch_max_bytes = 10;
  auto s = open(tiny);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->write(batch(1, 2)));
  ASSERT_TRUE(s->flush());
  EXPECT_EQ(small.count(), 2u);
}

TEST(HttpSink, TheSameBatchGetsTheSameIdFromAnotherSink) {
  HttpReceiver receiver;
  for (int round = 0; round < 2; ++round) {
    auto sink = open(options_for(receiver.url()));
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(batch(1, 3)));
    ASSERT_TRUE(sink->flush());
  }
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("webhook-id"), requests[1].header("webhook-id"));
  EXPECT_EQ(receiver.delivered(), array(batch(1, 3)));  // kept once
}

TEST(HttpSink, NameAndErrorsShowTheUrlWithoutItsPasswordOrQuery) {
  DroppingListener dropping;
  const std::string base = dropping.url();
  const std::string url = "http://cdc:hunter2@" + base.substr(7) + "?token=abc123";
  auto o = options_for(url);
  o.retry.max_retries = 0;
  auto sink = open(o);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->name().find("hunter2"), std::string::npos) << sink->name();
  EXPECT_EQ(sink->name().find("abc123"), std::string::npos) << sink->name();
  EXPECT_NE(sink->name().find("cdc:****@127.0.0.1"), std::string::npos) << sink->name();
  ASSERT_TRUE(sink->write(batch(1, 1)));
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().report().find("hunter2"), std::string::npos);
  EXPECT_EQ(flushed.error().report().find("abc123"), std::string::npos);
}

TEST(HttpSink, FlushReturnsOnlyAfterTheReceiverAnswered) {
  HttpReceiver receiver;
  HttpReceiver::Answer held;
  held.hold = true;
  receiver.script({held});
  auto sink = open(options_for(receiver.url()));
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(batch(1, 1)));
  std::atomic<bool> returned{false};
  std::thread flusher([&] {
    EXPECT_TRUE(sink->flush());
    returned.store(true);
  });
  ASSERT_TRUE(test::wait_until([&] { return receiver.arrived() == 1; }, 10s));
  // The receiver holds its answer: the batch must not count as delivered yet.
  EXPECT_FALSE(returned.load());
  receiver.release();
  flusher.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(receiver.count(), 1u);
}

TEST(HttpSink, WriteAndFlushAfterCloseAreRefused) {
  HttpReceiver receiver;
  auto sink = open(options_for(receiver.url()));
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->close());
  EXPECT_EQ(sink->write(batch(1, 1)).error().kind(), ErrorKind::kInvalidState);
  EXPECT_EQ(sink->flush().error().kind(), ErrorKind::kInvalidState);
  EXPECT_TRUE(sink->close());
  EXPECT_EQ(receiver.count(), 0u);
}

// ---- configuration errors name the setting -----------------------------------------------

std::string config_error(HttpSinkOptions o) {
  auto sink = make_http_sink(std::move(o));
  if (sink) return "(no error)";
  EXPECT_EQ(sink.error().kind(), ErrorKind::kConfiguration) << sink.error().report();
  return sink.error().report();
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(HttpSinkConfig, ErrorsNameTheSetting) {
  const auto base = options_for("https://receiver.test/cdc");
  auto o = base;
  o.url = "ftp://receiver.test/";
  EXPECT_CONTAINS(config_error(o), "url: expected an http:// or https:// address");
  o.url = "https:///path";
  EXPECT_CONTAINS(config_error(o), "url: the address has no host");
  o.url = "receiver.test/cdc";
  EXPECT_CONTAINS(config_error(o), "url:");

  o = base;
  o.headers = {{"Content-Type", "text/plain"}};
  EXPECT_CONTAINS(config_error(o), "headers: \"Content-Type\" is set by the sink itself");
  o.headers = {{"webhook-id", "x"}};
  EXPECT_CONTAINS(config_error(o), "headers:");
  o.headers = {{"Bad Name", "x"}};
  EXPECT_CONTAINS(config_error(o), "headers: \"Bad Name\" is not a header name");
  o.headers = {{"X-Ok", "a\r\nInjected: 1"}};
  EXPECT_CONTAINS(config_error(o), "line break");
  o.headers = {{"Authorization", "Bearer x"}};
  o.auth.kind = HttpAuth::Kind::kBearer;
  o.auth.token = "t";
  EXPECT_CONTAINS(config_error(o), "headers: \"Authorization\" and auth cannot both be set");

  o = base;
  o.signing_secrets = {kSecret, "whsec_***"};
  const std::string bad_secret = config_error(o);
  EXPECT_CONTAINS(bad_secret, "signing_secret: secret 2:");
  EXPECT_EQ(bad_secret.find("MfKQ9r8"), std::string::npos);

  o = base;
  o.auth.kind = HttpAuth::Kind::kBearer;
  EXPECT_CONTAINS(config_error(o), "auth.token");
  o.auth.kind = HttpAuth::Kind::kBasic;
  EXPECT_CONTAINS(config_error(o), "auth.username");

  o = base;
  o.request_timeout_ms = 0;
  EXPECT_CONTAINS(config_error(o), "request_timeout_ms");
  o = base;
  o.connect_timeout_ms = 0;
  EXPECT_CONTAINS(config_error(o), "connect_timeout_ms");
  o = base;
  o.retry.initial_backoff_ms = 100;
  o.retry.max_backoff_ms = 10;
  EXPECT_CONTAINS(config_error(o), "retry.max_backoff_ms");

  o = base;
  o.tls.ca_file = "/nonexistent/ca.pem";
  EXPECT_CONTAINS(config_error(o), "tls.ca_file: '/nonexistent/ca.pem' is not a readable file");
  o = base;
  o.tls.client_cert = "/etc/hostname";
  EXPECT_CONTAINS(config_error(o), "tls.client_key");
  o = options_for("http://receiver.test/cdc");
  o.tls.ca_file = "/etc/hostname";
  EXPECT_CONTAINS(config_error(o), "tls.ca_file: is set but url is http://");
}

// ---- CloudEvents over HTTP, read by the CloudEvents Python SDK (tests/cloudevents_http.py) ----

/// What the SDK makes of `requests`: one object per CloudEvent, {"attributes", "data"}.
std::vector<boost::json::object> sdk_reads(
    const std::vector<testing_http::ReceivedRequest>& requests) {
  boost::json::array in;
  for (const auto& r : requests) {
    boost::json::object headers;
    for (const auto& [name, value] : r.headers) headers[name] = value;
    in.push_back(boost::json::object{{"headers", headers}, {"body", r.body}});
  }
  const auto dir = std::filesystem::temp_directory_path() / "cppcdc-ce-http";
  std::filesystem::create_directories(dir);
  const auto input = dir / ("requests-" + std::to_string(::getpid()) + ".json");
  std::ofstream(input) << boost::json::serialize(in);
  const std::string command = std::string("/usr/bin/python3 ") + CPPCDC_SOURCE_DIR +
                              "/tests/cloudevents_http.py < " + input.string() + " 2>&1";
  std::string output;
  FILE* p = popen(command.c_str(), "r");
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) output += buf;
  EXPECT_EQ(pclose(p), 0) << output;
  std::filesystem::remove(input);
  std::vector<boost::json::object> out;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) {
      ADD_FAILURE() << "the SDK printed: " << output;
      break;
    }
    out.push_back(v.as_object());
  }
  return out;
}

// Binary mode: one event per request, the envelope as the body (Content-Type application/json)
// and the attributes as ce- headers; structured mode: a batch as CloudEvents' JSON batch
// format. The CloudEvents SDK reads both to the same attributes and the envelope as data.
TEST(HttpSink, CloudEventsInBinaryAndBatchModeAreWhatTheCloudEventsSdkReads) {
  const auto events = batch(1, 3);
  std::vector<std::vector<boost::json::object>> read;
  for (const auto mode : {CloudEventsMode::kBinary, CloudEventsMode::kStructured}) {
    HttpReceiver receiver({kSecret});
    auto o = options_for(receiver.url());
    o.signing_secrets = {kSecret};
    CloudEventsOptions ce;
    ce.mode = mode;
    if (mode == CloudEventsMode::kBinary) {
      // Several events per request cannot carry each one's headers.
      auto refused = make_http_sink(o, make_cloudevents_encoder(ce));
      ASSERT_FALSE(refused);
      EXPECT_EQ(refused.error().kind(), ErrorKind::kConfiguration);
      EXPECT_EQ(refused.error().setting(), "batch_max_events");
      o.batch_max_events = 1;
    }
    auto sink = make_http_sink(o, make_cloudevents_encoder(ce));
    ASSERT_TRUE(sink) << sink.error().report();
    ASSERT_TRUE((*sink)->write(events));
    const auto flushed = (*sink)->flush();
    ASSERT_TRUE(flushed) << flushed.error().report();
    const auto requests = receiver.requests();
    if (mode == CloudEventsMode::kBinary) {
      ASSERT_EQ(requests.size(), events.size());
      for (std::size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(requests[i].body, events[i].to_json());
        EXPECT_EQ(requests[i].header("content-type"), "application/json");
        EXPECT_EQ(requests[i].header("ce-specversion"), "1.0");
        EXPECT_EQ(requests[i].header("ce-subject"), "public.orders");
        EXPECT_TRUE(requests[i].signature_ok);
      }
    } else {
      ASSERT_EQ(requests.size(), 1U);
      EXPECT_EQ(requests[0].header("content-type"), "application/cloudevents-batch+json");
      EXPECT_TRUE(requests[0].signature_ok);
    }
    read.push_back(sdk_reads(requests));
    ASSERT_EQ(read.back().size(), events.size());
    EXPECT_TRUE((*sink)->close());
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& binary = read[0][i].at("attributes").as_object();
    const auto& structured = read[1][i].at("attributes").as_object();
    for (const char* name : {"specversion", "id", "source", "type", "subject", "time"}) {
      EXPECT_EQ(binary.at(name), structured.at(name)) << name;
    }
    EXPECT_EQ(binary.at("source"), "/cppcdc/postgres");
    EXPECT_EQ(binary.at("type"), "io.cppcdc.insert");
    EXPECT_EQ(binary.at("time"),
              boost::json::value("2023-11-14T22:13:20.00" + std::to_string(i + 1) + "Z"));
    const auto envelope = boost::json::parse(events[i].to_json());
    EXPECT_EQ(read[0][i].at("data"), envelope);
    EXPECT_EQ(read[1][i].at("data"), envelope);
  }
}

}  // namespace
}  // namespace cppcdc
