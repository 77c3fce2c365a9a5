// Every built-in PostgreSQL 15 type (plus enums, domains, composites and ranges built from
// them) captured through the library runtime: each value must arrive as exactly the text the
// type's output function prints under the connector's fixed session settings, the same text a
// `SELECT col` shows on a connection opened with those settings, in the after image of the
// insert and in the full before images of an update and a delete (REPLICA IDENTITY FULL). The
// row shape must name every column's type as format_type(atttypid, atttypmod) does.
//
// The database is given hostile defaults for every setting the connector fixes (DateStyle,
// TimeZone, IntervalStyle, extra_float_digits, bytea_output, client_encoding), and some values
// carry a pinned text: they would print differently if any of those leaked into a session.
//
// Cases are grouped into a few wide tables (one column per type, one row per value) so the
// whole suite needs one slot and a handful of transactions.

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "pg_util.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;

namespace {

// ---- the cases ------------------------------------------------------------------------------

struct Value {
  Value(std::string s, std::optional<std::string> e = std::nullopt)
      : sql(std::move(s)), expect(std::move(e)) {}
  std::string sql;                    ///< SQL expression assigned to the column
  std::optional<std::string> expect;  ///< pinned text under the connector's settings, if any
};

struct TypeCase {
  TypeCase(std::string t, std::vector<Value> v, bool j = false)
      : type(std::move(t)), values(std::move(v)), json(j) {}
  std::string type;  ///< the column's declared type
  std::vector<Value> values;
  bool json;  ///< json/jsonb (or a domain over one): kept as JSON in the envelope
};

struct TypeGroup {
  std::string table;
  std::vector<TypeCase> cases;
};

// What numeric prints for 1e100: a 1 and a hundred zeros.
std::string one_e100() { return "1" + std::string(100, '0'); }

const std::vector<TypeGroup>& groups() {
  static const std::vector<TypeGroup> kGroups = {
      {"t_num",
       {
           {"smallint", {{"-32768", "-32768"}, {"32767"}, {"0"}}},
           {"integer", {{"-2147483648", "-2147483648"}, {"2147483647"}, {"-0"}}},
           {"bigint",
            {{"-9223372036854775808", "-9223372036854775808"},
             {"9223372036854775807", "9223372036854775807"}}},
           {"numeric",
            {{"'NaN'", "NaN"},
             {"'Infinity'", "Infinity"},
             {"'-Infinity'", "-Infinity"},
             {"'12345678901234567890123456789012345678901234567890.123456789012345678901234567890'",
              "12345678901234567890123456789012345678901234567890.123456789012345678901234567890"},
             {"'-0.000000000000000000000000000000000000000001'",
              "-0.000000000000000000000000000000000000000001"},
             {"1e100", one_e100()},
             {"'0.00'", "0.00"},
             {"'-0'"},
             {"'1.5e-20'"}}},
           {"numeric(12,4)",
            {{"'12345678.12345'", "12345678.1235"}, {"'NaN'"}, {"'-0.00005'"}, {"0"}}},
           {"numeric(5,-2)", {{"'12345.67'", "12300"}}},
           {"numeric(3,5)", {{"'0.00123'", "0.00123"}}},
           {"real",
            {{"'NaN'", "NaN"},
             {"'Infinity'", "Infinity"},
             {"'-Infinity'", "-Infinity"},
             {"'-0'", "-0"},
             {"'0.1'", "0.1"},
             {"'3.4028235e38'", "3.4028235e+38"},
             {"'1.4e-45'", "1e-45"},
             {"'123.456'", "123.456"}}},
           {"double precision",
            {{"'NaN'", "NaN"},
             {"'Infinity'"},
             {"'-Infinity'"},
             {"'-0'", "-0"},
             {"'0.1'", "0.1"},
             {"0.1::float8 + 0.2::float8", "0.30000000000000004"},
             {"'1.7976931348623157e308'", "1.7976931348623157e+308"},
             {"'5e-324'", "5e-324"},
             {"'123.456'", "123.456"},
             {"'1e22'", "1e+22"}}},
           {"money",
            {{"'92233720368547758.07'", "$92,233,720,368,547,758.07"},
             {"'-92233720368547758.08'", "-$92,233,720,368,547,758.08"},
             {"'1234.5'", "$1,234.50"},
             {"'-0.01'", "-$0.01"},
             {"0"}}},
           {"oid", {{"0"}, {"4294967295", "4294967295"}}},
       }},
      {"t_text",
       {
           {"boolean", {{"true", "t"}, {"false", "f"}, {"'yes'"}, {"'off'"}}},
           {"character(5)",
            {{"'ab'", "ab   "}, {"''", "     "}, {"'abcde'"}, {"U&'\\00E9'", "\xc3\xa9    "}, {"'a  '"}}},
           {"character(1)", {{"'x'"}, {"''"}}},
           {"bpchar", {{"'ab  '", "ab  "}}},
           {"character varying(20)",
            {{"'ab  '", "ab  "}, {"''", ""}, {"repeat(U&'\\00F1', 20)"}}},
           {"character varying", {{"repeat('xy', 300)"}}},
           {"text",
            {{"U&'\\00E9\\+01F600'", "\xc3\xa9\xf0\x9f\x98\x80"},
             // Every Unicode plane: BMP (with U+FFFD and the noncharacter U+FFFF), then planes
             // 1, 2, 3, 14, 15 and 16 up to U+10FFFF.
             {"U&'A\\00E9\\4E2D\\FFFD\\FFFF'", "A\xc3\xa9\xe4\xb8\xad\xef\xbf\xbd\xef\xbf\xbf"},
             {"U&'\\+010000\\+01F600\\+01FFFF'"},
             {"U&'\\+020000\\+02A6D6'"},
             {"U&'\\+030000\\+03134A'"},
             {"U&'\\+0E0001\\+0E007F'"},
             {"U&'\\+0F0000\\+0FFFFD'"},
             {"U&'\\+100000\\+10FFFF'", "\xf4\x80\x80\x80\xf4\x8f\xbf\xbf"},
             {R"(E'tab\there\nnew\rline \\ "q" ''s')", "tab\there\nnew\rline \\ \"q\" 's"},
             {R"(E'\x01\x1f\x7f')", "\x01\x1f\x7f"},
             {"''", ""},
             {"'NULL'", "NULL"}}},
           {"name", {{"'a_name'"}, {"repeat('n', 70)", std::string(63, 'n')}}},
           {"\"char\"", {{"'a'"}, {"''"}}},
           {"bytea",
            {{R"('\x')", R"(\x)"},
             {R"('\x00ff10')", R"(\x00ff10)"},
             {R"(E'\\000abc\\377')", R"(\x00616263ff)"},
             {"'plain'", R"(\x706c61696e)"}}},
           {"uuid",
            {{"'00000000-0000-0000-0000-000000000000'"},
             {"'{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}'", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
             {"'ffffffffffffffffffffffffffffffff'"}}},
           {"xml",
            {{R"('<a b="1">x &amp; y</a>')"},
             {"'just text'"},
             {R"('<?xml version="1.0" encoding="UTF-8"?><r/>')"},
             {"'<r><![CDATA[<x>]]></r>'"},
             {"''"}}},
           {"tsvector",
            {{"'a fat cat sat on a mat and ate a fat rat'"},
             {R"($$'quo''te' 'sp ace':1A,2B 'back\\slash':3$$)"},
             {"''"}}},
           {"tsquery",
            {{"'fat & (rat | cat)'"}, {"'!a <-> b:*'"}, {"'a <2> b'"}, {R"($$'sp ace' & 'it''s'$$)"}}},
           {"pg_lsn", {{"'0/0'"}, {"'FFFFFFFF/FFFFFFFF'"}, {"'16/b374d848'", "16/B374D848"}}},
           {"bit(8)", {{"B'10101010'", "10101010"}, {"B'00000000'"}}},
           {"bit(1)", {{"B'1'"}}},
           {"bit varying(5)", {{"B''", ""}, {"B'1'"}, {"B'10101'"}}},
           {"bit varying", {{"repeat('10', 100)::varbit"}}},
       }},
      {"t_time",
       {
           {"date",
            {{"'infinity'", "infinity"},
             {"'-infinity'", "-infinity"},
             {"'4713-01-01 BC'", "4713-01-01 BC"},
             {"'0001-01-01 BC'"},
             {"'5874897-12-31'"},
             {"'2000-02-29'", "2000-02-29"}}},
           {"time without time zone",
            {{"'00:00'"}, {"'24:00:00'", "24:00:00"}, {"'23:59:59.999999'"}, {"'allballs'"}}},
           {"time(0) without time zone", {{"'23:59:59.6'"}, {"'12:00:00.4'", "12:00:00"}}},
           {"time with time zone",
            {{"'00:00+15:59'"},
             {"'23:59:59.999999-15:59'"},
             {"'12:00:00+05:45'", "12:00:00+05:45"},
             {"'04:05:06 PST'"}}},
           {"time(2) with time zone", {{"'01:02:03.456+01'", "01:02:03.46+01"}}},
           {"timestamp without time zone",
            {{"'infinity'", "infinity"},
             {"'-infinity'"},
             {"'4714-11-24 00:00:00 BC'", "4714-11-24 00:00:00 BC"},
             {"'294276-12-31 23:59:59.999999'"},
             {"'2000-02-29 12:34:56.123456'", "2000-02-29 12:34:56.123456"},
             {"'epoch'"},
             {"'1999-12-31 23:59:60'"}}},
           {"timestamp(0) without time zone", {{"'2000-01-01 00:00:00.5'"}}},
           {"timestamp with time zone",
            {{"'infinity'", "infinity"},
             {"'-infinity'", "-infinity"},
             {"'2020-01-02 03:04:05+05:45'", "2020-01-01 21:19:05+00"},
             {"'0044-03-15 12:00:00+00 BC'", "0044-03-15 12:00:00+00 BC"},
             {"'4714-11-24 00:00:00+00 BC'"},
             {"'1900-01-01 00:00:00 Europe/Amsterdam'"},
             {"'294276-12-31 23:59:59.999999+00'"},
             {"'2000-01-01 00:00:00.000001+00'", "2000-01-01 00:00:00.000001+00"}}},
           {"timestamp(3) with time zone",
            {{"'2020-06-30 23:59:59.9999+00'", "2020-07-01 00:00:00+00"},
             {"'2020-06-30 12:00:00.1234-02:30'"}}},
           {"interval",
            {{"'1 year 2 mons 3 days 04:05:06.789'", "1 year 2 mons 3 days 04:05:06.789"},
             {"'-1 mons +1 day -00:00:01'", "-1 mons +1 day -00:00:01"},
             {"'178000000 years'"},
             {"'-178000000 years'"},
             {"'P1Y2M3DT4H5M6S'"},
             {"'0'", "00:00:00"},
             {"'-2147483648 days'"},
             {"'@ 1 hour ago'"},
             {"'1.5 microseconds'"}}},
           {"interval(0)", {{"'1.5 seconds'"}}},
           {"interval year to month", {{"'1-2'", "1 year 2 mons"}}},
           {"interval day to second(3)", {{"'1 day 02:03:04.5678'", "1 day 02:03:04.568"}}},
       }},
      {"t_net",
       {
           {"inet",
            {{"'10.0.0.1'", "10.0.0.1"},
             {"'10.0.0.1/8'", "10.0.0.1/8"},
             {"'10.0.0.1/32'", "10.0.0.1"},
             {"'0.0.0.0/0'"},
             {"'::1'", "::1"},
             {"'::ffff:1.2.3.4'"},
             {"'2001:DB8::1/64'", "2001:db8::1/64"}}},
           {"cidr",
            {{"'10.1'", "10.1.0.0/16"},
             {"'192.168.0.0/24'"},
             {"'2001:db8::/32'"},
             {"'0.0.0.0/0'"},
             {"'::/0'"}}},
           {"macaddr",
            {{"'08:00:2b:01:02:03'"},
             {"'0800.2b01.0203'"},
             {"'08-00-2B-01-02-03'", "08:00:2b:01:02:03"}}},
           {"macaddr8",
            {{"'08:00:2b:01:02:03:04:05'"},
             {"'08002b0102030405'"},
             {"'08:00:2b:01:02:03'", "08:00:2b:ff:fe:01:02:03"}}},
       }},
      {"t_json",
       {
           {"json",
            {{R"('{"a": 1, "b": [1, 2.50, 1e400]}')", R"({"a": 1, "b": [1, 2.50, 1e400]})"},
             {R"('{"big": 123456789012345678901234567890123456789012345678901234567890}')"},
             {R"('[{"dup":1,"dup":2}]')", R"([{"dup":1,"dup":2}])"},
             {R"('"str"')"},
             // JSON null: the in-memory value is the text "null" with is_json, distinct from
             // SQL NULL, but in the envelope both are written as null.
             {"'null'"},
             {"'true'"},
             {"'-0.0'"},
             {R"('{"u": "\u00e9\ud83d\ude00 \u0000 \\ \" \/"}')"},
             {R"('  {"ws" :  [ ] }  ')"},
             {R"(E'{\n  "nl":\t1\r\n}')", "{   \"nl\":\t1  }"}},
            true},
           {"jsonb",
            {{R"('{"b": 1, "a": [1, 2.50, 1e400]}')"},
             {R"('{"n": 123456789012345678901234567890.123456789012345678901234567890}')"},
             {R"('{"b": 1, "a": [1, 2.50]}')", R"({"a": [1, 2.50], "b": 1})"},
             {R"('"str"')", R"("str")"},
             {"'null'", "null"},
             {"'[]'"},
             {"'{}'"},
             {R"('{"dup":1,"dup":2}')", R"({"dup": 2})"},
             {R"(E'{\n"nl": "a\\nb\\t\\u0001"}')"},
             {R"('{"e": "\ud83d\ude00 \u00e9 \\ \" /"}')"},
             {R"('[-0.0, 0.1e-3, 1E+2, -1.5e-400]')"},
             {R"('{"deep": [[[[[[[[[[{"x": [true, false, null]}]]]]]]]]]]}')"}},
            true},
           {"jdoc", {{R"('{"in": "a domain over jsonb", "n": 12345678901234567890123}')"}}, true},
           {"jsonpath", {{R"('$.a[*] ? (@ > 1)')"}, {R"('strict $."key with space"')"}}},
       }},
      {"t_array",
       {
           {"integer[]",
            {{"'{}'", "{}"},
             {"'{1,NULL,3}'", "{1,NULL,3}"},
             {"'{{1,2},{3,4}}'", "{{1,2},{3,4}}"},
             {"'[0:1]={1,2}'", "[0:1]={1,2}"},
             {"'{{{1}},{{2}}}'"},
             {"'{NULL}'"}}},
           {"text[]",
            {{R"('{"a b","c\"d","NULL","",NULL,"back\\slash","{}",",",x}')",
              R"({"a b","c\"d","NULL","",NULL,"back\\slash","{}",",",x})"},
             {R"(ARRAY[U&'\+01F600', E'\n', ' lead', 'trail '])"},
             {R"('{{a,b},{c,d}}')"}}},
           {"character(5)[]", {{R"('{ab,"a b",NULL}')", R"({"ab   ","a b  ",NULL})"}}},
           {"character varying(20)[]", {{R"('{"",x}')"}}},
           {"numeric[]", {{"'{NaN,Infinity,-Infinity,1.50}'", "{NaN,Infinity,-Infinity,1.50}"}}},
           {"numeric(12,4)[]", {{"'{1.23456,NaN}'", "{1.2346,NaN}"}}},
           {"double precision[]", {{"'{Infinity,-0,0.1,NaN,123.456}'", "{Infinity,-0,0.1,NaN,123.456}"}}},
           {"real[]", {{"'{0.1,-Infinity}'"}}},
           {"money[]", {{"'{1234.5,-1}'"}}},
           {"timestamp with time zone[]",
            {{R"('{infinity,"2020-01-01 00:00:00+05"}')", R"({infinity,"2019-12-31 19:00:00+00"})"}}},
           {"timestamp(3) without time zone[]", {{R"('{"2020-01-01 00:00:00.12345"}')"}}},
           {"date[]", {{R"('{-infinity,"4713-01-01 BC",2000-02-29}')", R"({-infinity,"4713-01-01 BC",2000-02-29})"}}},
           {"time with time zone[]", {{R"('{"12:00+05:45"}')"}}},
           {"interval[]", {{R"('{"1 day -00:00:01",-1 year}')", R"({"1 day -00:00:01","-1 years"})"}}},
           {"boolean[]", {{"'{t,f,NULL}'", "{t,f,NULL}"}}},
           {"bytea[]", {{R"('{"\\x00ff",NULL,abc}')", R"({"\\x00ff",NULL,"\\x616263"})"}}},
           {"uuid[]", {{"'{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}'"}}},
           {"inet[]", {{"'{10.0.0.1/32,::1/128,10.0.0.0/8}'", "{10.0.0.1,::1,10.0.0.0/8}"}}},
           {"cidr[]", {{"'{10.1}'"}}},
           {"macaddr[]", {{"'{08-00-2B-01-02-03}'"}}},
           {"bit(3)[]", {{"'{101,010}'"}}},
           {"json[]", {{R"(ARRAY['{"a": 1}'::json, 'null', '"s"', NULL])"}}},
           {"jsonb[]", {{R"('{"{\"b\": 1, \"a\": 2}",null}')"}}},
           {"xml[]", {{R"(ARRAY['<a x="1"/>'::xml, 'text'])"}}},
           {"mood[]",
            {{R"('{sad,"with space","quo\"te",NULL}')", R"({sad,"with space","quo\"te",NULL})"},
             {"'{}'"},
             {"'{{sad,ok},{happy,sad}}'"}}},
           {"pair[]", {{R"~(ARRAY[ROW(1, 'a b', '{"k": 1}', 'ok')::pair, ROW(NULL, NULL, NULL, NULL)::pair, NULL])~"}}},
           {"int4range[]", {{R"~('{"[1,2)",empty}')~"}}},
           {"int4multirange[]", {{R"~('{"{[1,2),[4,5)}"}')~"}}},
           {"box[]", {{"'{(1,1),(0,0);(2,2),(1,1)}'", "{(1,1),(0,0);(2,2),(1,1)}"}}},
           {"point[]", {{R"~('{"(1,2)","(0.1,123.456)"}')~", R"~({"(1,2)","(0.1,123.456)"})~"}}},
           {"tsvector[]", {{R"(ARRAY['a b'::tsvector])"}}},
           {"oid[]", {{"'{0,4294967295}'"}}},
           {"regtype[]", {{"'{integer,mood,\"character varying\"}'"}}},
       }},
      {"t_user",
       {
           {"mood",
            {{"'sad'", "sad"},
             {"'with space'", "with space"},
             {R"('quo"te')", R"(quo"te)"},
             {"U&'\\00FCn\\00EF'", "\xc3\xbcn\xc3\xaf"}}},
           {"posint", {{"1"}, {"2147483647"}}},
           {"price", {{"'12.345'", "12.35"}, {"'-99999999.99'"}}},
           {"pair",
            {{R"('(1,"x y",,)')", R"((1,"x y",,))"},
             {"'(,,,)'", "(,,,)"},
             {R"~(ROW(2, 'quo"te\back', '{"k": [1, 2]}', 'happy'))~",
              R"~((2,"quo""te\\back","{""k"": [1, 2]}",happy))~"},
             {"ROW(NULL, '', NULL, NULL)", R"((,"",,))"}}},
           {"outer_t",
            {{R"~(ROW(ROW(1, 'a', NULL, 'ok')::pair, '{1,2}', '[1,5)'))~"},
             {R"~(ROW(NULL, '{}', 'empty'))~"}}},
           {"int4range",
            {{"'empty'", "empty"},
             {"'(,)'", "(,)"},
             {"'[1,10)'", "[1,10)"},
             {"'[,5]'", "(,6)"},
             {"'(1,2)'", "empty"}}},
           {"int8range", {{"'[-9223372036854775808,9223372036854775807)'"}}},
           {"numrange", {{"'[1.5,Infinity]'"}, {"'(-Infinity,0.10)'"}}},
           {"daterange",
            {{"'[2000-01-01,infinity)'", "[2000-01-01,infinity)"},
             {"'[2000-01-01,2000-01-01]'", "[2000-01-01,2000-01-02)"}}},
           {"tsrange", {{R"('["2000-01-01 00:00","2000-01-02 00:00")')"}}},
           {"tstzrange",
            {{"'[2000-01-01 00:00+05, infinity)'", R"(["1999-12-31 19:00:00+00",infinity))"}}},
           {"floatrange", {{"'[1.5,Infinity)'"}, {"'(0.1,123.456]'", "(0.1,123.456]"}}},
           {"int4multirange",
            {{"'{}'", "{}"}, {"'{[1,3), [5,8), [2,4)}'", "{[1,4),[5,8)}"}}},
           {"nummultirange", {{"'{[1.5,2.5], (3,)}'"}}},
           {"datemultirange", {{"'{[2000-01-01,2000-02-01), [2001-01-01,infinity)}'"}}},
           {"tstzmultirange",
            {{"'{[2000-01-01 00:00+00,2000-01-02 00:00+05:45)}'",
              R"({["2000-01-01 00:00:00+00","2000-01-01 18:15:00+00")})"}}},
           {"floatmultirange", {{"'{[0.1,0.2)}'"}}},
       }},
      {"t_geo",
       {
           {"point", {{"'(1.5,-2)'"}, {"'(0.1,123.456)'", "(0.1,123.456)"}, {"'(NaN,Infinity)'"}, {"'(-0,1e300)'"}}},
           {"line", {{"'{1,-1,0}'"}, {"'[(0,0),(1,1)]'"}}},
           {"lseg", {{"'[(0,0),(1,1)]'"}, {"'((0.1,0.2),(123.456,-1))'"}}},
           {"box", {{"'(0,0),(1,1)'", "(1,1),(0,0)"}, {"'((0.1,0.2),(-1,-2))'"}}},
           {"path", {{"'[(0,0),(1,1),(2,0)]'"}, {"'((0,0),(1,1))'"}, {"'(0,0),(1,1)'"}}},
           {"polygon", {{"'((0,0),(1,0),(0,1))'"}, {"'(0.1,0.2)'"}}},
           {"circle", {{"'<(0,0),1.5>'", "<(0,0),1.5>"}, {"'((1,1),0.1)'"}}},
       }},
      {"t_sys",
       {
           {"regclass", {{"'pg_class'", "pg_class"}, {"'sch.tt'", "sch.tt"}, {"'t_sys'"}}},
           {"regtype", {{"'integer'"}, {"'character varying'"}, {"'mood'"}, {"'sch.ty'"}, {"'int[]'"}}},
           {"regproc", {{"'now'"}}},
           {"regprocedure", {{"'sum(integer)'"}}},
           {"regoper", {{"'|/'"}}},
           {"regoperator", {{"'+(integer,integer)'"}}},
           {"regnamespace", {{"'pg_catalog'"}, {"'sch'"}}},
           {"regrole", {{"'postgres'"}}},
           {"regconfig", {{"'english'"}}},
           {"regdictionary", {{"'simple'"}}},
           {"regcollation", {{R"('"C"')"}, {R"('"und-x-icu"')"}}},
           {"xid", {{"'0'"}, {"'4294967295'"}}},
           {"xid8", {{"'18446744073709551615'", "18446744073709551615"}}},
           {"cid", {{"'4294967295'"}}},
           {"tid", {{"'(4294967295,65535)'"}, {"'(0,1)'"}}},
           {"pg_snapshot", {{"'10:20:10,14,15'", "10:20:10,14,15"}}},
           {"txid_snapshot", {{"'10:20:10,14,15'"}}},
           {"int2vector", {{"'1 2 3'"}}},
           {"oidvector", {{"'1 2 4294967295'"}}},
           {"aclitem", {{"'postgres=arwdDxt/postgres'"}, {"'=r/postgres'"}}},
           {"refcursor", {{"'cur'"}}},
       }},
  };
  return kGroups;
}

std::string column(std::size_t i) { return "c" + std::to_string(i); }

std::size_t rows_of(const TypeGroup& g) {
  std::size_t n = 0;
  for (const auto& c : g.cases) n = std::max(n, c.values.size());
  return n;
}

/// Text for failure messages: quoted, with control and non-ASCII bytes escaped.
std::string show(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  std::string out = "\"";
  for (unsigned char c : *v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// ---- capture ---------------------------------------------------------------------------------

struct Capture : it::Reader {
  Capture(const std::string& db, std::vector<std::string> tables)
      : it::Reader(db, source(db, std::move(tables))) {}

  static pg::PostgresSourceConfig source(const std::string& db, std::vector<std::string> tables) {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = db;  // slots are cluster-wide: one per test database
    cfg.publication_name = "types_pub";
    cfg.tables = std::move(tables);
    return cfg;
  }
};

using TextRow = std::vector<std::optional<std::string>>;

// ---- checks ----------------------------------------------------------------------------------

/// One row image against the server's text for that row: every type column present, with the
/// server's text, pinned texts where given, and is_json exactly for the json cases.
void expect_row_matches(const TypeGroup& g, std::size_t row_index, const Row& row,
                        const TextRow& server, const std::string& image) {
  for (std::size_t i = 0; i < g.cases.size(); ++i) {
    const TypeCase& c = g.cases[i];
    const std::string sql =
        row_index < c.values.size() ? c.values[row_index].sql : std::string("NULL");
    const std::string what = g.table + "." + column(i) + " " + c.type + " = " + sql + " (" +
                             image + " of row " + std::to_string(row_index) + ")";
    const ColumnValue* v = find_column(row, column(i));
    if (v == nullptr) {
      ADD_FAILURE() << what << ": column absent from the image";
      continue;
    }
    std::optional<std::string> want = server[i + 1];
    if (c.json && want) {
      // The one deliberate difference: line breaks between JSON tokens (json keeps its input
      // text) arrive as spaces, so an event stays on one JSON line.
      for (char& ch : *want) {
        if (ch == '\n' || ch == '\r') ch = ' ';
      }
    }
    EXPECT_EQ(v->text, want) << what << ": captured " << show(v->text) << ", SELECT shows "
                             << show(server[i + 1]);
    if (row_index < c.values.size() && c.values[row_index].expect) {
      EXPECT_EQ(v->text, c.values[row_index].expect)
          << what << ": captured " << show(v->text) << ", expected "
          << show(c.values[row_index].expect);
    }
    if (v->text) {
      EXPECT_EQ(v->is_json, c.json) << what << ": is_json is " << v->is_json;
    }
  }
}

/// The envelope: one line of valid JSON whose scalar columns are JSON strings holding exactly
/// the captured text, and whose json columns are embedded verbatim (numbers stay exact).
void expect_envelope_keeps_values(const Event& e, const std::string& what) {
  const std::string text = e.to_json();
  EXPECT_EQ(text.find('\n'), std::string::npos) << what << ": the envelope spans lines";
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec);
  if (ec) {
    ADD_FAILURE() << what << ": the envelope is not valid JSON (" << ec.message()
                  << "): " << text.substr(0, 400);
    return;
  }
  auto check_image = [&](const Row* row, const char* field) {
    if (row == nullptr) return;
    const auto& obj = doc.as_object().at(field).as_object();
    for (const auto& c : *row) {
      const std::string where = what + " " + field + "." + c.name;
      const boost::json::value* jv = obj.if_contains(c.name);
      if (jv == nullptr) {
        ADD_FAILURE() << where << ": missing from the envelope";
        continue;
      }
      if (!c.text) {
        EXPECT_TRUE(jv->is_null()) << where;
      } else if (c.is_json) {
        EXPECT_NE(text.find("\"" + c.name + "\":" + *c.text), std::string::npos)
            << where << ": JSON text " << *c.text << " is not embedded verbatim";
        boost::system::error_code jec;
        const auto parsed = boost::json::parse(*c.text, jec);
        EXPECT_FALSE(jec) << where << ": value is not JSON: " << *c.text;
        if (!jec) {
          EXPECT_EQ(parsed, *jv) << where;
        }
      } else if (!jv->is_string()) {
        ADD_FAILURE() << where << ": not a JSON string: " << boost::json::serialize(*jv);
      } else {
        EXPECT_EQ(std::string(jv->as_string()), *c.text)
            << where << ": the JSON string does not round-trip " << show(c.text);
      }
    }
  };
  check_image(e.before.row(), "before");
  check_image(e.after ? &*e.after : nullptr, "after");
}

}  // namespace

class PgTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("types");
    it::fresh_database(db_);
    PgSession admin(it::admin_dsn());
    // Hostile defaults for every setting the connector fixes: a session that does not
    // override one prints differently and the pinned texts catch it.
    for (const char* setting :
         {"DateStyle = 'SQL, DMY'", "TimeZone = 'Asia/Kathmandu'",
          "IntervalStyle = 'sql_standard'", "extra_float_digits = -15",
          "bytea_output = 'escape'", "client_encoding = 'LATIN1'"}) {
      admin.query("alter database " + db_ + " set " + setting);
    }
    PgSession s(it::dsn_for(db_));
    s.query(R"(
      create schema sch;
      create table sch.tt (x int);
      create type sch.ty as (x int);
      create type mood as enum ('sad', 'ok', 'happy', 'with space', 'quo"te', U&'\00FCn\00EF');
      create domain posint as integer check (value > 0);
      create domain price as numeric(10,2);
      create domain jdoc as jsonb check (jsonb_typeof(value) = 'object');
      create type pair as (a integer, b text, c jsonb, d mood);
      create type outer_t as (p pair, arr integer[], r int4range);
      create type floatrange as range (subtype = float8);
    )");
    for (const auto& g : groups()) {
      std::string ddl = "create table " + g.table +
                        " (id integer primary key, touch integer not null default 0";
      for (std::size_t i = 0; i < g.cases.size(); ++i) {
        ddl += ", " + column(i) + " " + g.cases[i].type;
      }
      ddl += "); alter table " + g.table + " replica identity full;";
      s.query(ddl);
    }
  }
  void TearDown() override { it::drop_slots(db_); }
  std::string db_;
};

TEST_F(PgTypes, HostileDatabaseDefaultsAreInEffectWithoutTheConnectorsSettings) {
  // Guards the premise of the pinned texts: a plain session sees the hostile defaults.
  auto* raw = PQconnectdb(it::dsn_for(db_).c_str());
  ASSERT_EQ(PQstatus(raw), CONNECTION_OK) << PQerrorMessage(raw);
  PGresult* r = PQexec(raw, "select current_setting('DateStyle'), "
                            "current_setting('client_encoding'), '123.456'::float8");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(raw);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "SQL, DMY");
  EXPECT_STREQ(PQgetvalue(r, 0, 1), "LATIN1");
  EXPECT_STREQ(PQgetvalue(r, 0, 2), "1e+02");
  PQclear(r);
  PQfinish(raw);
}

TEST_F(PgTypes, EveryTypeArrivesAsItsOutputTextInAfterAndFullBefore) {
  PgSession s(it::dsn_for(db_));

  // Every literal must be accepted on its own first, so a typo in a case names itself instead
  // of failing a whole multi-row insert.
  bool accepted = true;
  for (const auto& g : groups()) {
    for (std::size_t i = 0; i < g.cases.size(); ++i) {
      for (const auto& v : g.cases[i].values) {
        const std::string sql = "begin; insert into " + g.table + " (id, " + column(i) +
                                ") values (-1, " + v.sql + "); rollback;";
        PGresult* r = PQexec(s.get(), sql.c_str());
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
          ADD_FAILURE() << g.cases[i].type << " rejects " << v.sql << ": "
                        << PQerrorMessage(s.get());
          accepted = false;
          PQclear(r);
          PQclear(PQexec(s.get(), "rollback"));
          continue;
        }
        PQclear(r);
      }
    }
  }
  ASSERT_TRUE(accepted);

  // The catalog's view of each table: format_type per column, in column order.
  std::map<std::string, std::vector<std::string>> catalog_types;
  for (const auto& g : groups()) {
    for (auto& row : s.query("select format_type(atttypid, atttypmod) from pg_attribute "
                             "where attrelid = '" + g.table + "'::regclass and attnum > 0 "
                             "and not attisdropped order by attnum")) {
      catalog_types[g.table].push_back(row[0].value_or("?"));
    }
  }

  std::vector<std::string> tables;
  std::size_t expected_events = 0;
  for (const auto& g : groups()) {
    tables.push_back("public." + g.table);
    expected_events += 3 * rows_of(g);  // insert, update and delete of each row
  }
  Capture cap(db_, tables);
  ASSERT_TRUE(cap.runtime);
  ASSERT_TRUE(cap.runtime->start());

  std::string inserts = "begin;";
  for (const auto& g : groups()) {
    for (std::size_t r = 0; r < rows_of(g); ++r) {
      std::string cols = "id", vals = std::to_string(r);
      for (std::size_t i = 0; i < g.cases.size(); ++i) {
        if (r >= g.cases[i].values.size()) continue;
        cols += ", " + column(i);
        vals += ", " + g.cases[i].values[r].sql;
      }
      inserts += "insert into " + g.table + " (" + cols + ") values (" + vals + ");";
    }
  }
  s.query(inserts + "commit;");

  // What SELECT prints for each row, before the update touches anything.
  std::map<std::string, std::vector<TextRow>> server;
  for (const auto& g : groups()) {
    std::string sql = "select id";
    for (std::size_t i = 0; i < g.cases.size(); ++i) sql += ", " + column(i);
    server[g.table] = s.query(sql + " from " + g.table + " order by id");
    ASSERT_EQ(server[g.table].size(), rows_of(g)) << g.table;
  }
  for (const auto& g : groups()) s.query("update " + g.table + " set touch = 1");
  for (const auto& g : groups()) s.query("delete from " + g.table);

  auto events = cap.take(expected_events, 60);
  ASSERT_EQ(events.size(), expected_events);

  std::map<std::string, const TypeGroup*> by_table;
  for (const auto& g : groups()) by_table[g.table] = &g;
  std::map<std::string, std::map<Operation, std::size_t>> seen;
  for (const auto& e : events) {
    ASSERT_TRUE(by_table.count(e.table)) << "event for an unexpected table " << e.table;
    const TypeGroup& g = *by_table[e.table];
    const std::string op(to_string(e.op));
    ++seen[e.table][e.op];
    EXPECT_TRUE(e.validate()) << e.table << " " << op;

    const Row* image = e.op == Operation::kDelete ? e.before.full_row()
                                                  : (e.after ? &*e.after : nullptr);
    ASSERT_NE(image, nullptr) << e.table << " " << op << ": no row image";
    const ColumnValue* id = find_column(*image, "id");
    ASSERT_TRUE(id && id->text) << e.table << " " << op << ": no id";
    const auto row_index = static_cast<std::size_t>(std::stoul(*id->text));
    ASSERT_LT(row_index, rows_of(g)) << e.table;
    const TextRow& ref = server[g.table][row_index];

    if (e.op == Operation::kInsert) {
      expect_row_matches(g, row_index, *e.after, ref, "insert after");
    } else if (e.op == Operation::kUpdate) {
      ASSERT_TRUE(e.before.is_full()) << e.table << " update under REPLICA IDENTITY FULL";
      EXPECT_TRUE(e.before.unavailable_columns().empty());
      EXPECT_TRUE(e.unavailable_columns.empty());
      expect_row_matches(g, row_index, *e.before.full_row(), ref, "update before");
      expect_row_matches(g, row_index, *e.after, ref, "update after");
      EXPECT_EQ(find_column(*e.after, "touch")->text, "1");
    } else if (e.op == Operation::kDelete) {
      ASSERT_TRUE(e.before.is_full()) << e.table << " delete under REPLICA IDENTITY FULL";
      expect_row_matches(g, row_index, *e.before.full_row(), ref, "delete before");
    } else {
      ADD_FAILURE() << "unexpected " << op << " event for " << e.table;
    }
    expect_envelope_keeps_values(e, e.table + " " + op + " of row " + std::to_string(row_index));

    // The shape names each column's type as format_type(atttypid, atttypmod) does.
    ASSERT_TRUE(e.shape) << e.table;
    const auto& cols = e.shape->columns();
    const auto& types = catalog_types[g.table];
    ASSERT_EQ(cols.size(), types.size()) << e.table;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const std::string declared = i < 2 ? std::string("integer") : g.cases[i - 2].type;
      EXPECT_EQ(cols[i].data_type, types[i])
          << e.table << "." << cols[i].name << " declared " << declared;
      EXPECT_EQ(cols[i].is_json, i >= 2 && g.cases[i - 2].json)
          << e.table << "." << cols[i].name << " declared " << declared;
    }
    EXPECT_FALSE(cols[0].nullable);
    EXPECT_TRUE(cols[0].primary_key);
  }
  for (const auto& g : groups()) {
    for (Operation op : {Operation::kInsert, Operation::kUpdate, Operation::kDelete}) {
      EXPECT_EQ(seen[g.table][op], rows_of(g)) << g.table << " " << to_string(op);
    }
  }
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgTypes, ShapeSpellsTypeNamesWithModifiers) {
  // The spellings the row shape promises, as literal text (the table-driven test compares
  // them with format_type; this pins what format_type is expected to say).
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"numeric(12,4)", "numeric(12,4)"},
      {"varchar(20)", "character varying(20)"},
      {"timestamptz(3)", "timestamp(3) with time zone"},
      {"timestamp", "timestamp without time zone"},
      {"char(5)[]", "character(5)[]"},
      {"int[][]", "integer[]"},
      {"interval day to second(3)", "interval day to second(3)"},
      {"bit varying(5)", "bit varying(5)"},
      {"float4", "real"},
      {"price", "price"},
      {"mood[]", "mood[]"},
      {"sch.ty", "sch.ty"},
  };
  PgSession s(it::dsn_for(db_));
  std::string ddl = "create table spell (id integer primary key";
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    ddl += ", " + column(i) + " " + spellings[i].first;
  }
  s.query(ddl + ")");
  Capture cap(db_, {"public.spell"});
  ASSERT_TRUE(cap.runtime);
  ASSERT_TRUE(cap.runtime->start());
  s.query("insert into spell (id) values (1)");
  auto events = cap.take(1, 20);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].shape);
  const auto& cols = events[0].shape->columns();
  ASSERT_EQ(cols.size(), spellings.size() + 1);
  EXPECT_EQ(cols[0].data_type, "integer");
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    EXPECT_EQ(cols[i + 1].data_type, spellings[i].second) << "declared " << spellings[i].first;
  }
  ASSERT_TRUE(cap.runtime->stop());
}
