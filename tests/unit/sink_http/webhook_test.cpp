// Standard Webhooks signing: known vectors (the specification's own example, and one computed
// with Python's hmac module), secret decoding and its errors, message ids.

#include "sink/http/webhook.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cppcdc::http {
namespace {

TEST(WebhookSignature, MatchesTheStandardWebhooksExample) {
  // The example of the Standard Webhooks documentation and its reference libraries.
  auto key = decode_signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(key) << key.error().report();
  EXPECT_EQ(sign_v1(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

// Computed with Python 3.11:
//   k = base64.b64decode(secret[6:])
//   "v1," + base64.b64encode(hmac.new(k, b"msg_0123....1700000000." + body, sha256).digest())
TEST(WebhookSignature, MatchesPythonHmacForEverySecretDuringARotation) {
  const std::vector<std::string> secrets = {"whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                                            "whsec_cm90YXRlZC1zZWNyZXQta2V5LTAxMjM0NTY3ODk="};
  std::vector<std::string> keys;
  for (const auto& s : secrets) {
    auto key = decode_signing_secret(s);
    ASSERT_TRUE(key) << key.error().report();
    keys.push_back(*key);
  }
  const std::string body = "[{\"id\":\"1\",\"note\":\"caf\xc3\xa9 \\n \xe6\x97\xa5\"}]";
  const std::string id = "msg_0123456789abcdef0123456789abcdef";
  EXPECT_EQ(signature_header(keys, id, 1700000000, body),
            "v1,CKdmHwYDoXT6aWJEKXBWkkzipD/jsT1hXW/jTsRgcfE= "
            "v1,EH7IZ/N8M+tB+doiMT6OHFvC8JTlP6jp091XaC3OFmc=");
  EXPECT_EQ(signature_header({keys[1]}, id, 1700000000, body),
            "v1,EH7IZ/N8M+tB+doiMT6OHFvC8JTlP6jp091XaC3OFmc=");
}

TEST(WebhookSignature, TheTimestampAndTheIdAreSigned) {
  const std::string key(24, 'k');
  const auto base = sign_v1(key, "msg_a", 100, "{}");
  EXPECT_NE(base, sign_v1(key, "msg_a", 101, "{}"));
  EXPECT_NE(base, sign_v1(key, "msg_b", 100, "{}"));
  EXPECT_NE(base, sign_v1(key, "msg_a", 100, "[]"));
  EXPECT_EQ(base, sign_v1(key, "msg_a", 100, "{}"));
}

TEST(WebhookSecret, ThePrefixIsOptional) {
  auto with = decode_signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  auto without = decode_signing_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(with);
  ASSERT_TRUE(without);
  EXPECT_EQ(*with, *without);
  EXPECT_EQ(with->size(), 24u);
}

TEST(WebhookSecret, ErrorsSayWhatIsWrongWithoutShowingTheSecret) {
  for (const std::string& secret : std::vector<std::string>{"whsec_not*base64*at*all!", "whsec_",
                                                            "whsec_c2hvcnQ=", "whsec_abcde"}) {
    auto key = decode_signing_secret(secret);
    ASSERT_FALSE(key) << secret;
    EXPECT_EQ(key.error().kind(), ErrorKind::kConfiguration);
    const std::string report = key.error().report();
    if (secret.size() > 6) {
      EXPECT_EQ(report.find(secret.substr(6)), std::string::npos) << report;
    }
    EXPECT_NE(report.find("whsec_"), std::string::npos) << report;
  }
  EXPECT_NE(decode_signing_secret("whsec_c2hvcnQ=").error().report().find("5 bytes"),
            std::string::npos);
}

TEST(Base64, RoundTripsAndAcceptsMissingPadding) {
  for (const std::string& bytes : {std::string(""), std::string("f"), std::string("fo"),
                                   std::string("foo"), std::string("\0\xff\x10", 3)}) {
    const std::string text = base64_encode(bytes);
    if (bytes.empty()) continue;
    auto back = base64_decode(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, bytes);
    std::string unpadded = text;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    auto again = base64_decode(unpadded);
    ASSERT_TRUE(again) << unpadded;
    EXPECT_EQ(*again, bytes);
  }
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_FALSE(base64_decode("Zm=9"));
  EXPECT_FALSE(base64_decode("Zm9vY"));
  EXPECT_FALSE(base64_decode(""));
}

TEST(WebhookMessageId, IsTheSameForTheSameBodyAndDiffersOtherwise) {
  const std::string a = message_id("[{\"a\":1}]");
  EXPECT_EQ(a, message_id("[{\"a\":1}]"));
  EXPECT_NE(a, message_id("[{\"a\":2}]"));
  EXPECT_EQ(a.rfind("msg_", 0), 0u);
  EXPECT_EQ(a.size(), 4u + 32u);
}

}  // namespace
}  // namespace cppcdc::http

namespace cppcdc::http {
namespace {

Event keyed_event(std::string offset, std::int64_t ts, std::optional<std::string> id) {
  EventBuilder builder("orders", Operation::kUpdate);
  builder.schema("public")
      .source(SourceMetadata{"postgres", std::move(offset), 1700000000000})
      .ts(ts)
      .primary_key({"id"})
      .after(Row{{"id", std::move(id), false}, {"note", std::string("x"), false}});
  return std::move(builder).build();
}

std::string identity(const Event& e) {
  std::string out;
  append_event_identity(e, out);
  return out;
}

// The identity behind the HTTP sink's webhook-id (ops trial M2): the read time never counts;
// the position, the transaction place, the table and the key do.
TEST(EventIdentity, LeavesTheReadTimeOutAndTellsPositionsTablesAndKeysApart) {
  const Event e = keyed_event("0/10", 1, std::string("7"));
  EXPECT_EQ(identity(e), identity(keyed_event("0/10", 999, std::string("7"))));
  EXPECT_NE(identity(e), identity(keyed_event("0/11", 1, std::string("7"))));
  EXPECT_NE(identity(e), identity(keyed_event("0/10", 1, std::string("8"))));
  EXPECT_NE(identity(e), identity(keyed_event("0/10", 1, std::nullopt)));
  EXPECT_NE(identity(keyed_event("0/10", 1, std::string("N"))),
            identity(keyed_event("0/10", 1, std::nullopt)));
  Event other_table = e;
  other_table.table = "orders2";
  EXPECT_NE(identity(e), identity(other_table));
  Event in_tx = e;
  in_tx.transaction = TransactionMetadata{42, 3, 1};
  Event next_in_tx = e;
  next_in_tx.transaction = TransactionMetadata{42, 3, 2};
  EXPECT_NE(identity(in_tx), identity(next_in_tx));
  // Only the key is read from a keyed row: another column changing is the same change.
  Event same_key = e;
  (*same_key.after)[1].text = "y";
  EXPECT_EQ(identity(e), identity(same_key));
  // Without key or transaction, the row itself.
  Event keyless = e;
  keyless.primary_key.reset();
  Event keyless_other = same_key;
  keyless_other.primary_key.reset();
  EXPECT_NE(identity(keyless), identity(keyless_other));
}

}  // namespace
}  // namespace cppcdc::http
