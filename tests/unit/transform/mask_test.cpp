// mask: every rule kind, golden vectors (RFC 4231, an AES-GCM token made by another
// implementation), JSON subtrees and arrays, and the refusals.

#include <gtest/gtest.h>

#include "transform/crypto.hpp"
#include "transform_events.hpp"

namespace cppcdc {
namespace {

using namespace test;

std::unique_ptr<TransformChain> mask_chain(std::vector<std::pair<std::string, MaskRule>> rules,
                                           MaskRule default_rule = {}) {
  MaskConfig config;
  config.rules = std::move(rules);
  config.default_rule = std::move(default_rule);
  return chain_of(must(make_mask(std::move(config))), "pii");
}

std::string hmac_hex(std::string_view key, std::string_view data) {
  auto chain = mask_chain({{"v", MaskRule::hmac_sha256(std::string(key))}});
  auto out = run(*chain, row_event({col("id", "1"), col("v", std::string(data))}));
  return *value(out.at(0), "v");
}

// RFC 4231 section 4, test cases 1-4, 6 and 7 (case 5 truncates the output).
TEST(MaskGolden, HmacSha256MatchesRfc4231) {
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i);
  EXPECT_EQ(hmac_hex(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
                     "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
                     "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(MaskGolden, UnsaltedSha256IsTheFipsDigest) {
  auto chain = mask_chain({{"v", MaskRule::unsalted_sha256()}});
  auto out = run(*chain, row_event({col("id", "1"), col("v", "abc")}));
  EXPECT_EQ(*value(out[0], "v"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// Made with Python's cryptography package (AESGCM) from the same key derivation
// (SHA-256 of the secret), a fixed nonce 00..0b and associated data "public.customers\ncard".
constexpr std::string_view kSecret = "correct horse battery staple";
constexpr std::string_view kForeignToken =
    "enc:v1:AAECAwQFBgcICQoL:I/ztYkyc09v6tInpdJu0jFdD0Vh4TxEBUDVWLMsCR1eCA4M=";

TEST(MaskGolden, DecryptsATokenMadeByAnotherImplementation) {
  auto chain = mask_chain({{"card", MaskRule::decrypt(std::string(kSecret))}});
  auto out = run(*chain, row_event({col("id", "1"), col("card", std::string(kForeignToken))}));
  EXPECT_EQ(*value(out[0], "card"), "4111 1111 1111 1111");
}

TEST(MaskGolden, EncryptThenDecryptRoundTripsAndEachTokenIsFresh) {
  auto enc = mask_chain({{"card", MaskRule::encrypt(std::string(kSecret))}});
  auto a = run(*enc, row_event({col("id", "1"), col("card", "4111 1111 1111 1111")}));
  auto b = run(*enc, row_event({col("id", "1"), col("card", "4111 1111 1111 1111")}));
  const std::string token = *value(a[0], "card");
  EXPECT_EQ(token.rfind("enc:v1:", 0), 0u) << token;
  EXPECT_NE(token, *value(b[0], "card")) << "a fresh nonce per value";
  auto dec = mask_chain({{"card", MaskRule::decrypt(std::string(kSecret))}});
  auto back = run(*dec, a[0]);
  EXPECT_EQ(*value(back[0], "card"), "4111 1111 1111 1111");
}

Status decrypt_status(Event event, std::string path, std::string secret = std::string(kSecret)) {
  auto dec = mask_chain({{std::move(path), MaskRule::decrypt(std::move(secret))}});
  std::vector<Event> batch{std::move(event)};
  return dec->apply(batch);
}

TEST(MaskGolden, TamperedCiphertextIsRefused) {
  std::string token(kForeignToken);
  token[token.size() - 6] = token[token.size() - 6] == 'A' ? 'B' : 'A';
  auto st = decrypt_status(row_event({col("id", "1"), col("card", token)}), "card");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
  EXPECT_NE(st.error().report().find("does not authenticate"), std::string::npos)
      << st.error().report();
}

TEST(MaskGolden, ValueMovedToAnotherTableOrPathOrKeyIsRefused) {
  Event other_table = row_event({col("id", "1"), col("card", std::string(kForeignToken))});
  other_table.table = "suppliers";
  EXPECT_FALSE(decrypt_status(other_table, "card"));
  // The same token under another column name.
  EXPECT_FALSE(decrypt_status(row_event({col("id", "1"), col("iban", std::string(kForeignToken))}),
                              "iban"));
  EXPECT_FALSE(decrypt_status(row_event({col("id", "1"), col("card", std::string(kForeignToken))}),
                              "card", "another secret"));
  // Not a token at all.
  EXPECT_FALSE(decrypt_status(row_event({col("id", "1"), col("card", "4111")}), "card"));
}

TEST(Mask, RedactNullTruncateAndPassthrough) {
  auto chain = mask_chain({{"email", MaskRule::redact("***")},
                           {"ssn", MaskRule::null()},
                           {"name", MaskRule::truncate(2)},
                           {"city", MaskRule::passthrough()}});
  auto out = run(*chain, row_event({col("id", "1"), col("email", "a@b.c"), col("ssn", "123"),
                                    col("name", "Ünïcode"), col("city", "Oslo")}));
  EXPECT_EQ(*value(out[0], "email"), "***");
  EXPECT_FALSE(value(out[0], "ssn").has_value());
  EXPECT_EQ(*value(out[0], "name"), "Ün") << "characters, not bytes";
  EXPECT_EQ(*value(out[0], "city"), "Oslo");
}

TEST(Mask, BeforeImageIsMaskedToo) {
  auto chain = mask_chain({{"email", MaskRule::redact("***")}});
  Event e = row_event({col("id", "1"), col("email", "new@x")}, Operation::kUpdate);
  e.before = BeforeFull{{col("id", "1"), col("email", "old@x")}, {}};
  auto out = run(*chain, e);
  EXPECT_EQ(find_column(*out[0].before.row(), "email")->text, "***");
}

TEST(Mask, JsonSubtreeAndArrayElements) {
  auto chain = mask_chain({{"doc.user.email", MaskRule::redact("x")},
                           {"doc.cards.*.number", MaskRule::null()},
                           {"profile", MaskRule::redact("gone")}});
  auto out = run(*chain, row_event({col("id", "1"),
                                    json_col("doc",
                                             R"({"user":{"email":"a@b","age":3},)"
                                             R"("cards":[{"number":"1"},{"number":"2"}]})"),
                                    json_col("profile", R"({"a":[1,2]})")}));
  const ColumnValue* doc = find_column(*out[0].after, "doc");
  EXPECT_TRUE(doc->is_json);
  EXPECT_EQ(*doc->text,
            R"({"user":{"email":"x","age":3},"cards":[{"number":null},{"number":null}]})");
  const ColumnValue* profile = find_column(*out[0].after, "profile");
  EXPECT_EQ(*profile->text, "gone");
  EXPECT_FALSE(profile->is_json) << "a whole json column becomes the masked text";
}

TEST(Mask, DefaultRuleHashesColumnsNoRuleNames) {
  auto chain = mask_chain({{"id", MaskRule::passthrough()}}, MaskRule::unsalted_sha256());
  auto out = run(*chain, row_event({col("id", "1"), col("v", "abc")}));
  EXPECT_EQ(*value(out[0], "id"), "1");
  EXPECT_EQ(*value(out[0], "v"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Mask, InvisibleRulesAreRefusedAtConstruction) {
  for (auto rule : {MaskRule::redact(""), MaskRule::truncate(0), MaskRule::hmac_sha256("")}) {
    MaskConfig config;
    config.rules.emplace_back("email", rule);
    auto made = make_mask(std::move(config));
    ASSERT_FALSE(made) << to_string(rule.kind);
    EXPECT_EQ(made.error().kind(), ErrorKind::kConfiguration);
  }
  for (std::string path : {"", "a..b", "*.x", "a."}) {
    MaskConfig config;
    config.rules.emplace_back(path, MaskRule::null());
    EXPECT_FALSE(make_mask(std::move(config))) << path;
  }
}

TEST(Mask, EncryptingAKeyColumnIsRefused) {
  auto chain = mask_chain({{"id", MaskRule::encrypt("s")}});
  std::vector<Event> batch{row_event({col("id", "1")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("primary-key column \"id\""), std::string::npos);
  EXPECT_NE(st.error().report().find("public.customers"), std::string::npos);
}

// Rules that would merge rows under one key (null, redact, truncate), directly, by a nested
// path or by the default rule, are refused like encrypt; hashing a key column is allowed (one
// key per row, the same for every version of it).
TEST(Mask, RulesThatWouldMergeRowsUnderOneKeyAreRefusedOnKeyColumns) {
  const std::vector<std::pair<std::string, MaskRule>> refused = {
      {"id", MaskRule::null()},
      {"id", MaskRule::redact("[R]")},
      {"id", MaskRule::truncate(1)},
      {"id.part", MaskRule::null()},
  };
  for (const auto& [path, rule] : refused) {
    auto chain = mask_chain({{path, rule}});
    std::vector<Event> batch{row_event({col("id", "12"), col("v", "x")})};
    auto st = chain->apply(batch);
    ASSERT_FALSE(st) << path << " " << to_string(rule.kind);
    EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
    EXPECT_NE(st.error().report().find("primary-key column \"id\""), std::string::npos)
        << st.error().report();
    EXPECT_NE(st.error().report().find("hmac_sha256"), std::string::npos);
  }
  // A default rule reaches the key columns no rule names.
  auto by_default = mask_chain({{"v", MaskRule::passthrough()}}, MaskRule::redact("x"));
  std::vector<Event> batch{row_event({col("id", "12"), col("v", "x")})};
  auto st = by_default->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("default_rule"), std::string::npos) << st.error().report();
  // Naming the key column with a rule of its own exempts it; hashing it is allowed.
  auto exempt = mask_chain({{"id", MaskRule::hmac_sha256("k")}}, MaskRule::redact("x"));
  auto out = run(*exempt, row_event({col("id", "12"), col("v", "x")}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(value(out[0], "id")->size(), 64u);
  EXPECT_EQ(*value(out[0], "v"), "x");
  // The same rules on a table without a key pass.
  auto keyless = mask_chain({{"id", MaskRule::null()}});
  out = run(*keyless, row_event({col("id", "12")}, Operation::kInsert, std::nullopt));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(value(out[0], "id").has_value());
}

TEST(Mask, UnmatchedRuleReportsClearText) {
  auto chain = mask_chain({{"email", MaskRule::null()}, {"emial", MaskRule::null()}});
  (void)run(*chain, row_event({col("id", "1"), col("email", "a@b")}));
  auto unmatched = chain->unmatched_rules();
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_EQ(unmatched[0].rule, "emial");
  EXPECT_EQ(unmatched[0].kind, "mask");
  EXPECT_EQ(unmatched[0].transform, "pii");
  EXPECT_NE(unmatched[0].consequence.find("clear text"), std::string::npos);
}

TEST(Crypto, Base64RoundTripAndRefusals) {
  using transform_detail::base64_decode;
  using transform_detail::base64_encode;
  for (const std::string& s : std::vector<std::string>{"a", "ab", "abc", "abcd",
                                                      std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_FALSE(base64_decode("abc"));
  EXPECT_FALSE(base64_decode("ab:d"));
}

}  // namespace
}  // namespace cppcdc
