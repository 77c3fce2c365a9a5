// The DDL parser: a tokenizer for MySQL's lexical rules (backticks, quotes, comments,
// versioned comments) and a recursive descent over the statements listed in ddl_parser.hpp.

#include "source/mysql/ddl_parser.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace cppcdc::mysql::detail {
namespace {

struct Token {
  enum class Kind { kWord, kQuoted, kString, kNumber, kPunct, kEnd } kind = Kind::kEnd;
  std::string text;  // words upper-cased in `upper`; identifiers keep `text`
  std::string upper;
};

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#' || (c == '-' && i + 2 <= n && s.substr(i, 2) == "--" &&
                            (i + 2 == n || std::isspace(static_cast<unsigned char>(s[i + 2]))))) {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      if (i + 2 < n && s[i + 2] == '!') {
        // A versioned comment: its content is part of the statement.
        i += 3;
        while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      } else if (i + 2 < n && s[i + 2] == 'M' && i + 3 < n && s[i + 3] == '!') {
        i += 4;  // MariaDB's /*M! ... */
        while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      } else {
        const auto end = s.find("*/", i + 2);
        i = end == std::string_view::npos ? n : end + 2;
      }
    } else if (c == '*' && i + 1 < n && s[i + 1] == '/') {
      i += 2;  // the end of a versioned comment
    } else if (c == '`' || c == '"') {
      Token t;
      t.kind = c == '`' ? Token::Kind::kQuoted : Token::Kind::kString;
      ++i;
      while (i < n) {
        if (s[i] == c) {
          if (i + 1 < n && s[i + 1] == c) {
            t.text += c;
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (c == '"' && s[i] == '\\' && i + 1 < n) ++i;
        t.text += s[i++];
      }
      t.upper = to_upper(t.text);
      out.push_back(std::move(t));
    } else if (c == '\'') {
      Token t;
      t.kind = Token::Kind::kString;
      ++i;
      while (i < n) {
        if (s[i] == '\'') {
          if (i + 1 < n && s[i + 1] == '\'') {
            t.text += '\'';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (s[i] == '\\' && i + 1 < n) {
          ++i;
          const char e = s[i];
          t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e == '0' ? '\0' : e == 'r' ? '\r' : e;
          ++i;
          continue;
        }
        t.text += s[i++];
      }
      t.upper = to_upper(t.text);
      out.push_back(std::move(t));
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      Token t;
      t.kind = Token::Kind::kNumber;
      while (i < n && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                       s[i] == '_' || s[i] == '$')) {
        t.text += s[i++];
      }
      // A name that starts with a digit ("1t") is an identifier.
      if (std::any_of(t.text.begin(), t.text.end(),
                      [](char ch) {
                        return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_' ||
                               ch == '$';
                      }) &&
          t.text.find('.') == std::string::npos) {
        t.kind = Token::Kind::kWord;
      }
      t.upper = to_upper(t.text);
      out.push_back(std::move(t));
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
               static_cast<unsigned char>(c) >= 0x80) {
      Token t;
      t.kind = Token::Kind::kWord;
      while (i < n && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' ||
                       s[i] == '$' || static_cast<unsigned char>(s[i]) >= 0x80)) {
        t.text += s[i++];
      }
      t.upper = to_upper(t.text);
      out.push_back(std::move(t));
    } else {
      Token t;
      t.kind = Token::Kind::kPunct;
      t.text = std::string(1, c);
      t.upper = t.text;
      out.push_back(std::move(t));
      ++i;
    }
  }
  return out;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, bool mysql8) : t_(std::move(tokens)), mysql8_(mysql8) {}

  DdlStatement parse() {
    DdlStatement st;
    if (accept("CREATE")) {
      if (accept("OR")) {
        if (!accept("REPLACE")) return st;
        st.or_replace = true;
      }
      if (accept("TEMPORARY")) st.temporary = true;
      if (accept("TABLE")) return create_table(st);
      if (accept("DATABASE") || accept("SCHEMA")) return create_database(st, false);
      return st;  // views, indexes, triggers, users ...
    }
    if (accept("ALTER")) {
      accept("ONLINE");
      accept("IGNORE");
      if (accept("TABLE")) return alter_table(st);
      if (accept("DATABASE") || accept("SCHEMA")) return create_database(st, true);
      return st;
    }
    if (accept("RENAME")) {
      if (!accept("TABLE") && !accept("TABLES")) return st;
      return rename_tables(st);
    }
    if (accept("DROP")) {
      if (accept("TEMPORARY")) st.temporary = true;
      if (accept("TABLE") || accept("TABLES")) return drop_tables(st);
      if (accept("DATABASE") || accept("SCHEMA")) {
        if (accept("IF")) accept("EXISTS");
        st.kind = DdlStatement::Kind::kDropDatabase;
        st.database = ident();
        return st;
      }
      if (accept("INDEX")) return drop_index(st);
      return st;
    }
    if (accept("TRUNCATE")) {
      accept("TABLE");
      st.kind = DdlStatement::Kind::kTruncate;
      if (!table_ref(st.table)) return unsupported(st, "the table name");
      return st;
    }
    return st;
  }

 private:
  // ---- token helpers ----
  const Token& peek(std::size_t ahead = 0) const {
    static const Token kEnd;
    return pos_ + ahead < t_.size() ? t_[pos_ + ahead] : kEnd;
  }
  bool at_end() const { return pos_ >= t_.size() || peek().text == ";"; }
  bool is(std::string_view word, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return (t.kind == Token::Kind::kWord || t.kind == Token::Kind::kPunct) && t.upper == word;
  }
  bool accept(std::string_view word) {
    if (!is(word)) return false;
    ++pos_;
    return true;
  }
  bool is_ident() const {
    const Token& t = peek();
    return t.kind == Token::Kind::kWord || t.kind == Token::Kind::kQuoted ||
           (t.kind == Token::Kind::kString && t.text.size() > 0 && false);
  }
  std::string ident() {
    if (!is_ident()) return {};
    return t_[pos_++].text;
  }
  bool table_ref(TableRef& out) {
    if (!is_ident()) return false;
    std::string first = ident();
    if (accept(".")) {
      out.database = std::move(first);
      if (!is_ident()) return false;
      out.table = ident();
    } else {
      out.database.clear();
      out.table = std::move(first);
    }
    return true;
  }
  // Skips a balanced (...) group starting at the current "(".
  void skip_group() {
    int depth = 0;
    while (!at_end() || depth > 0) {
      if (pos_ >= t_.size()) return;
      const Token& t = t_[pos_++];
      if (t.kind != Token::Kind::kPunct) continue;
      if (t.text == "(") ++depth;
      if (t.text == ")" && --depth <= 0) return;
    }
  }
  // Skips to the next "," or ")" at depth 0 (not consuming it).
  void skip_to_separator() {
    while (!at_end()) {
      const Token& t = peek();
      if (t.kind == Token::Kind::kPunct && (t.text == "," || t.text == ")")) return;
      if (t.kind == Token::Kind::kPunct && t.text == "(") {
        skip_group();
        continue;
      }
      ++pos_;
    }
  }
  DdlStatement& unsupported(DdlStatement& st, std::string what) {
    st.kind = DdlStatement::Kind::kUnsupported;
    st.what = std::move(what);
    return st;
  }
  // A name of a charset or collation: a word, a quoted name, or a string.
  std::string name_value() {
    accept("=");
    const Token& t = peek();
    if (t.kind == Token::Kind::kWord || t.kind == Token::Kind::kQuoted ||
        t.kind == Token::Kind::kString) {
      ++pos_;
      return to_lower(t.text);
    }
    return {};
  }
  // (a, b(10), c DESC)
  bool key_columns(std::vector<std::string>& out) {
    if (!accept("(")) return false;
    while (!at_end()) {
      if (!is_ident()) return false;
      out.push_back(ident());
      if (is("(")) skip_group();
      accept("ASC");
      accept("DESC");
      if (accept(")")) return true;
      if (!accept(",")) return false;
    }
    return false;
  }

  // ---- column definitions ----
  // Parses "name type attributes..." up to a "," or ")" at depth 0 (or a FIRST/AFTER clause).
  bool column_def(ColumnDef& def, std::string& what) {
    if (!is_ident()) {
      what = "a column name";
      return false;
    }
    def.column.name = ident();
    return column_type_and_attributes(def, what);
  }

  bool column_type_and_attributes(ColumnDef& def, std::string& what) {
    if (peek().kind != Token::Kind::kWord) {
      what = "the type of column " + def.column.name;
      return false;
    }
    std::string type = to_lower(t_[pos_++].text);
    // Multi-word type names.
    if (type == "double" && accept("PRECISION")) {
    } else if (type == "national") {
      if (accept("VARCHAR")) {
        type = "nvarchar";
      } else if (accept("CHAR") || accept("CHARACTER")) {
        type = accept("VARYING") ? "nvarchar" : "nchar";
      }
    } else if ((type == "char" || type == "character") && accept("VARYING")) {
      type = "varchar";
    } else if (type == "long") {
      if (accept("VARBINARY")) {
        type = "mediumblob";
      } else {
        accept("VARCHAR");
        type = "mediumtext";
      }
    } else if (type == "nchar" && accept("VARCHAR")) {
      type = "nvarchar";
    }
    std::vector<std::string> args;
    if (accept("(")) {
      while (!at_end() && !is(")")) {
        const Token& a = peek();
        if (a.kind == Token::Kind::kString) {
          std::string quoted = "'";
          for (char ch : a.text) {
            if (ch == '\'') quoted += '\'';
            quoted += ch;
          }
          args.push_back(quoted + "'");
          ++pos_;
        } else if (a.kind == Token::Kind::kNumber || a.kind == Token::Kind::kWord) {
          args.push_back(a.text);
          ++pos_;
        } else if (!accept(",")) {
          what = "the arguments of the type of column " + def.column.name;
          return false;
        }
      }
      if (!accept(")")) {
        what = "the type of column " + def.column.name;
        return false;
      }
    }
    bool is_unsigned = false;
    bool zerofill = false;
    bool binary_attr = false;
    std::string charset;
    std::string collation;
    bool not_null = false;
    // Attributes at depth 0 until the definition ends.
    while (!at_end()) {
      const Token& a = peek();
      if (a.kind == Token::Kind::kPunct && (a.text == "," || a.text == ")")) break;
      if (is("FIRST") || (is("AFTER") && pos_ + 1 < t_.size())) break;
      if (a.kind == Token::Kind::kPunct && a.text == "(") {
        skip_group();
        continue;
      }
      if (accept("UNSIGNED")) {
        is_unsigned = true;
      } else if (accept("SIGNED")) {
      } else if (accept("ZEROFILL")) {
        zerofill = true;
        is_unsigned = true;
      } else if (accept("BINARY")) {
        binary_attr = true;
      } else if (accept("ASCII")) {
        charset = "latin1";
      } else if (accept("UNICODE")) {
        charset = "ucs2";
      } else if (accept("BYTE")) {
        charset = "binary";
      } else if (is("CHARACTER") && is("SET", 1)) {
        pos_ += 2;
        charset = name_value();
      } else if (accept("CHARSET")) {
        charset = name_value();
      } else if (accept("COLLATE")) {
        collation = name_value();
      } else if (is("NOT") && is("NULL", 1)) {
        pos_ += 2;
        not_null = true;
      } else if (accept("NULL")) {
        not_null = false;
      } else if (accept("DEFAULT")) {
        // One value: a literal (maybe signed), a word (with a call's arguments), or a group.
        if (is("-") || is("+")) ++pos_;
        if (is("(")) {
          skip_group();
        } else if (!at_end()) {
          ++pos_;
          if (is("(")) skip_group();
        }
      } else if (is("PRIMARY") && is("KEY", 1)) {
        pos_ += 2;
        def.primary_key = true;
      } else if (is("CHECK")) {
        ++pos_;
        if (is("(")) {
          // MariaDB's JSON: CHECK (json_valid(`col`)).
          const std::size_t start = pos_;
          skip_group();
          for (std::size_t k = start; k < pos_; ++k) {
            if (t_[k].upper == "JSON_VALID") def.column.is_json = true;
          }
        }
      } else {
        ++pos_;  // AUTO_INCREMENT, COMMENT '...', KEY, UNIQUE, ON UPDATE ..., INVISIBLE ...
      }
    }
    // Column position in ALTER.
    if (accept("FIRST")) {
      def.position = ColumnDef::Position::kFirst;
    } else if (accept("AFTER")) {
      def.position = ColumnDef::Position::kAfter;
      def.after = ident();
    }
    return finish_type(def, type, args, is_unsigned, zerofill, binary_attr, charset, collation,
                       not_null, what);
  }

  bool finish_type(ColumnDef& def, std::string type, std::vector<std::string> args,
                   bool is_unsigned, bool zerofill, bool binary_attr, std::string charset,
                   const std::string& collation, bool not_null, std::string& what) {
    static const std::set<std::string> kCharTypes{"char",       "varchar",  "tinytext", "text",
                                                  "mediumtext", "longtext", "enum",     "set",
                                                  "nchar",      "nvarchar"};
    static const std::set<std::string> kBinaryTypes{"binary", "varbinary",  "tinyblob",
                                                    "blob",   "mediumblob", "longblob"};
    if (type == "json") {
      def.column.is_json = true;
      if (!mysql8_) type = "longtext";
      if (!mysql8_ && charset.empty() && collation.empty()) charset = "utf8mb4";
    }
    if (type == "nchar" || type == "nvarchar") {
      charset = "utf8mb3";
      type = type == "nchar" ? "char" : "varchar";
    }
    if (charset.empty() && !collation.empty()) charset = charset_of_collation(collation);
    def.character = kCharTypes.count(type) > 0;
    if (def.character && charset == "binary") {
      // A character type in the binary charset is its binary counterpart.
      if (type == "char")
        type = "binary";
      else if (type == "varchar")
        type = "varbinary";
      else if (type.size() > 4 && type.substr(type.size() - 4) == "text") {
        type = type.substr(0, type.size() - 4) + "blob";
      }
      def.character = false;
    }
    (void)binary_attr;  // BINARY on a character type picks the _bin collation: same charset
    if (kBinaryTypes.count(type) > 0) charset = "binary";
    if (type == "serial") {
      type = "bigint";
      is_unsigned = true;
      not_null = true;
    }
    if (type == "text" && !args.empty()) {
      // TEXT(n) picks the smallest text type that holds n characters (bytes here).
      const auto n = std::stoull(args[0]);
      type = n < 256 ? "tinytext" : n < 65536 ? "text" : n < 16777216 ? "mediumtext" : "longtext";
      args.clear();
    }
    if (type == "blob" && !args.empty()) {
      const auto n = std::stoull(args[0]);
      type = n < 256 ? "tinyblob" : n < 65536 ? "blob" : n < 16777216 ? "mediumblob" : "longblob";
      args.clear();
    }
    if (type.empty()) {
      what = "the type of column " + def.column.name;
      return false;
    }
    def.column.column_type = normalize_column_type(type, args, is_unsigned, zerofill, mysql8_);
    def.column.is_unsigned = is_unsigned;
    def.column.charset = def.character || charset == "binary" ? charset : std::string();
    if (type == "enum" || type == "set")
      def.column.elements = parse_elements(def.column.column_type);
    def.column.nullable = !not_null && !def.primary_key;
    return true;
  }

  // ---- CREATE TABLE ----
  DdlStatement create_table(DdlStatement& st) {
    if (accept("IF")) {
      accept("NOT");
      accept("EXISTS");
      st.if_not_exists = true;
    }
    if (!table_ref(st.table)) return unsupported(st, "the table name");
    if (accept("LIKE") || (is("(") && is("LIKE", 1) && (pos_ += 2))) {
      st.kind = DdlStatement::Kind::kCreateTableLike;
      if (!table_ref(st.like)) return unsupported(st, "the table after LIKE");
      return st;
    }
    st.kind = DdlStatement::Kind::kCreateTable;
    if (!accept("(")) {
      return unsupported(st, "a CREATE TABLE without a column list (CREATE TABLE ... SELECT)");
    }
    while (!at_end()) {
      if (is("PRIMARY") || (is("CONSTRAINT") && (is("PRIMARY", 1) || is("PRIMARY", 2)))) {
        if (accept("CONSTRAINT") && !is("PRIMARY")) ++pos_;
        pos_ += 2;                             // PRIMARY KEY
        while (!at_end() && !is("(")) ++pos_;  // USING BTREE, a name
        if (!key_columns(st.primary_key)) return unsupported(st, "the PRIMARY KEY columns");
        skip_to_separator();
      } else if (is("KEY") || is("INDEX") || is("UNIQUE") || is("FULLTEXT") || is("SPATIAL") ||
                 is("CONSTRAINT") || is("FOREIGN") || is("CHECK") || is("PERIOD")) {
        skip_to_separator();
      } else {
        ColumnDef def;
        std::string what;
        if (!column_def(def, what)) return unsupported(st, what);
        if (def.primary_key) st.primary_key = {def.column.name};
        st.columns.push_back(std::move(def));
      }
      if (accept(")")) break;
      if (!accept(",")) return unsupported(st, "the column list");
    }
    // Table options.
    while (!at_end()) {
      if (accept("DEFAULT")) continue;
      if (is("CHARACTER") && is("SET", 1)) {
        pos_ += 2;
        st.default_charset = name_value();
      } else if (accept("CHARSET")) {
        st.default_charset = name_value();
      } else if (accept("COLLATE")) {
        const std::string c = name_value();
        if (st.default_charset.empty()) st.default_charset = charset_of_collation(c);
      } else if (is("SELECT") || is("AS") || is("IGNORE") || is("REPLACE")) {
        if (is("AS") || is("SELECT")) {
          return unsupported(st, "CREATE TABLE ... SELECT (the columns the query adds)");
        }
        ++pos_;
      } else if (is("(")) {
        skip_group();
      } else {
        ++pos_;
      }
    }
    for (auto& c : st.columns) {
      if (std::find(st.primary_key.begin(), st.primary_key.end(), c.column.name) !=
          st.primary_key.end()) {
        c.column.nullable = false;
      }
    }
    return st;
  }

  DdlStatement create_database(DdlStatement& st, bool alter) {
    if (accept("IF")) {
      accept("NOT");
      accept("EXISTS");
    }
    st.kind = alter ? DdlStatement::Kind::kAlterDatabase : DdlStatement::Kind::kCreateDatabase;
    if (!is("DEFAULT") && !is("CHARACTER") && !is("CHARSET") && !is("COLLATE")) {
      st.database = ident();
    }
    while (!at_end()) {
      if (is("CHARACTER") && is("SET", 1)) {
        pos_ += 2;
        st.default_charset = name_value();
      } else if (accept("CHARSET")) {
        st.default_charset = name_value();
      } else if (accept("COLLATE")) {
        const std::string c = name_value();
        if (st.default_charset.empty()) st.default_charset = charset_of_collation(c);
      } else {
        ++pos_;
      }
    }
    return st;
  }

  // ---- ALTER TABLE ----
  DdlStatement alter_table(DdlStatement& st) {
    if (accept("IF")) accept("EXISTS");
    st.kind = DdlStatement::Kind::kAlterTable;
    if (!table_ref(st.table)) return unsupported(st, "the table name");
    if (is("WAIT") || is("NOWAIT")) {
      if (accept("WAIT"))
        ++pos_;
      else
        accept("NOWAIT");
    }
    while (!at_end()) {
      AlterOp op;
      std::string what;
      if (!alter_clause(op, what)) return unsupported(st, what);
      st.ops.push_back(std::move(op));
      if (at_end()) break;
      if (!accept(",")) {
        // Table options and partitioning may follow without a comma: they change no shape.
        if (is("PARTITION") || is("ENGINE") || is("ROW_FORMAT") || is("COMMENT") ||
            is("AUTO_INCREMENT") || is("ALGORITHM") || is("LOCK") || is("KEY_BLOCK_SIZE")) {
          continue;
        }
        return unsupported(st, "the clause at '" + peek().text + "'");
      }
    }
    return st;
  }

  bool alter_clause(AlterOp& op, std::string& what) {
    using K = AlterOp::Kind;
    if (accept("ADD")) {
      if (is("PRIMARY") || (is("CONSTRAINT") && (is("PRIMARY", 1) || is("PRIMARY", 2)))) {
        if (accept("CONSTRAINT") && !is("PRIMARY")) ++pos_;
        pos_ += 2;
        while (!at_end() && !is("(")) ++pos_;
        op.kind = K::kAddPrimaryKey;
        if (!key_columns(op.key)) {
          what = "the PRIMARY KEY columns";
          return false;
        }
        skip_clause();
        return true;
      }
      if (is("KEY") || is("INDEX") || is("UNIQUE") || is("FULLTEXT") || is("SPATIAL") ||
          is("CONSTRAINT") || is("FOREIGN") || is("CHECK") || is("PARTITION") || is("PERIOD") ||
          is("SYSTEM")) {
        op.kind = K::kNoShapeChange;
        skip_clause();
        return true;
      }
      accept("COLUMN");
      if (accept("IF")) {
        accept("NOT");
        accept("EXISTS");
        op.if_exists = true;
      }
      op.kind = K::kAddColumn;
      if (is("(")) {
        what = "ADD COLUMN with a parenthesised list";
        return false;
      }
      return column_def(op.def, what);
    }
    if (accept("DROP")) {
      if (is("PRIMARY") && is("KEY", 1)) {
        pos_ += 2;
        op.kind = K::kDropPrimaryKey;
        return true;
      }
      if (is("INDEX") || is("KEY") || is("FOREIGN") || is("CONSTRAINT") || is("CHECK") ||
          is("PARTITION") || is("PERIOD") || is("SYSTEM")) {
        if ((is("INDEX") || is("KEY")) && peek(1).text == "PRIMARY" &&
            peek(1).kind == Token::Kind::kQuoted) {
          pos_ += 2;
          op.kind = K::kDropPrimaryKey;
          return true;
        }
        op.kind = K::kNoShapeChange;
        skip_clause();
        return true;
      }
      accept("COLUMN");
      if (accept("IF")) {
        accept("EXISTS");
        op.if_exists = true;
      }
      op.kind = K::kDropColumn;
      op.name = ident();
      if (op.name.empty()) {
        what = "the column DROP names";
        return false;
      }
      accept("RESTRICT");
      accept("CASCADE");
      return true;
    }
    if (accept("MODIFY")) {
      accept("COLUMN");
      if (accept("IF")) {
        accept("EXISTS");
        op.if_exists = true;
      }
      op.kind = K::kModifyColumn;
      if (!column_def(op.def, what)) return false;
      op.name = op.def.column.name;
      return true;
    }
    if (accept("CHANGE")) {
      accept("COLUMN");
      if (accept("IF")) {
        accept("EXISTS");
        op.if_exists = true;
      }
      op.kind = K::kChangeColumn;
      op.name = ident();
      if (op.name.empty()) {
        what = "the column CHANGE names";
        return false;
      }
      return column_def(op.def, what);
    }
    if (accept("RENAME")) {
      if (accept("COLUMN")) {
        op.kind = K::kRenameColumn;
        op.name = ident();
        if (!accept("TO")) {
          what = "RENAME COLUMN ... TO";
          return false;
        }
        op.new_name = ident();
        return !op.name.empty() && !op.new_name.empty();
      }
      if (is("INDEX") || is("KEY")) {
        op.kind = K::kNoShapeChange;
        skip_clause();
        return true;
      }
      if (!accept("TO")) accept("AS");
      op.kind = K::kRenameTable;
      if (!table_ref(op.new_table)) {
        what = "the new table name";
        return false;
      }
      return true;
    }
    if (accept("CONVERT")) {
      if (!accept("TO")) {
        what = "CONVERT TO";
        return false;
      }
      if (is("CHARACTER") && is("SET", 1)) {
        pos_ += 2;
      } else if (!accept("CHARSET")) {
        what = "CONVERT TO CHARACTER SET";
        return false;
      }
      op.kind = K::kConvertCharset;
      op.charset = name_value();
      if (op.charset == "default") {
        what = "CONVERT TO CHARACTER SET DEFAULT";
        return false;
      }
      if (accept("COLLATE")) (void)name_value();
      return true;
    }
    if (is("DEFAULT") || is("CHARACTER") || is("CHARSET") || is("COLLATE")) {
      accept("DEFAULT");
      op.kind = K::kDefaultCharset;
      if (is("CHARACTER") && is("SET", 1)) {
        pos_ += 2;
        op.charset = name_value();
        if (accept("COLLATE")) (void)name_value();
      } else if (accept("CHARSET")) {
        op.charset = name_value();
        if (accept("COLLATE")) (void)name_value();
      } else if (accept("COLLATE")) {
        op.charset = charset_of_collation(name_value());
      } else {
        what = "the DEFAULT clause";
        return false;
      }
      return true;
    }
    if (accept("ALTER")) {
      accept("COLUMN");
      op.kind = K::kNoShapeChange;  // SET / DROP DEFAULT, visibility
      skip_clause();
      return true;
    }
    static const std::set<std::string> kNoShape{"ENGINE",
                                                "AUTO_INCREMENT",
                                                "COMMENT",
                                                "ROW_FORMAT",
                                                "KEY_BLOCK_SIZE",
                                                "ALGORITHM",
                                                "LOCK",
                                                "FORCE",
                                                "ORDER",
                                                "PARTITION",
                                                "REMOVE",
                                                "COALESCE",
                                                "REORGANIZE",
                                                "EXCHANGE",
                                                "ANALYZE",
                                                "CHECK",
                                                "OPTIMIZE",
                                                "REBUILD",
                                                "REPAIR",
                                                "TRUNCATE",
                                                "DISCARD",
                                                "IMPORT",
                                                "ENABLE",
                                                "DISABLE",
                                                "STATS_PERSISTENT",
                                                "STATS_AUTO_RECALC",
                                                "STATS_SAMPLE_PAGES",
                                                "PACK_KEYS",
                                                "CHECKSUM",
                                                "DELAY_KEY_WRITE",
                                                "MAX_ROWS",
                                                "MIN_ROWS",
                                                "AVG_ROW_LENGTH",
                                                "PAGE_CHECKSUM",
                                                "PAGE_COMPRESSED",
                                                "PAGE_COMPRESSION_LEVEL",
                                                "TRANSACTIONAL",
                                                "ENCRYPTED",
                                                "ENCRYPTION_KEY_ID",
                                                "ENCRYPTION",
                                                "COMPRESSION",
                                                "INSERT_METHOD",
                                                "UNION",
                                                "DATA",
                                                "INDEX",
                                                "TABLESPACE",
                                                "STORAGE",
                                                "SECONDARY_ENGINE",
                                                "WITH",
                                                "WITHOUT",
                                                "UPGRADE",
                                                "SEQUENCE",
                                                "ADD",
                                                "CONNECTION",
                                                "PASSWORD"};
    if (peek().kind == Token::Kind::kWord && kNoShape.count(peek().upper)) {
      op.kind = K::kNoShapeChange;
      skip_clause();
      return true;
    }
    what = "the clause at '" + peek().text + "'";
    return false;
  }
  // Skips to the "," that ends an ALTER clause (at depth 0) or the end.
  void skip_clause() {
    while (!at_end() && !is(",")) {
      if (is("(")) {
        skip_group();
      } else {
        ++pos_;
      }
    }
  }

  DdlStatement rename_tables(DdlStatement& st) {
    st.kind = DdlStatement::Kind::kRenameTables;
    while (!at_end()) {
      TableRef from, to;
      if (!table_ref(from)) return unsupported(st, "the table RENAME names");
      if (accept("WAIT")) ++pos_;
      accept("NOWAIT");
      if (!accept("TO")) return unsupported(st, "RENAME TABLE ... TO");
      if (!table_ref(to)) return unsupported(st, "the new table name");
      st.renames.emplace_back(std::move(from), std::move(to));
      if (!accept(",")) break;
    }
    return st;
  }

  DdlStatement drop_tables(DdlStatement& st) {
    if (accept("IF")) accept("EXISTS");
    st.kind = DdlStatement::Kind::kDropTables;
    while (!at_end()) {
      TableRef t;
      if (!table_ref(t)) break;
      st.tables.push_back(std::move(t));
      if (!accept(",")) break;
    }
    if (st.tables.empty()) return unsupported(st, "the table DROP names");
    return st;
  }

  DdlStatement drop_index(DdlStatement& st) {
    if (accept("IF")) accept("EXISTS");
    const Token name = peek();
    ++pos_;
    if (accept("ON") && name.upper == "PRIMARY") {
      st.kind = DdlStatement::Kind::kAlterTable;
      if (!table_ref(st.table)) return unsupported(st, "the table name");
      AlterOp op;
      op.kind = AlterOp::Kind::kDropPrimaryKey;
      st.ops.push_back(op);
    }
    return st;
  }

  std::vector<Token> t_;
  bool mysql8_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string charset_of_collation(std::string_view collation) {
  const std::string c = to_lower(collation);
  if (c == "binary") return c;
  const auto u = c.find('_');
  return u == std::string::npos ? c : c.substr(0, u);
}

std::string normalize_column_type(std::string_view name, const std::vector<std::string>& args,
                                  bool is_unsigned, bool zerofill, bool mysql8) {
  std::string type = to_lower(name);
  if (type == "integer") type = "int";
  if (type == "int1") type = "tinyint";
  if (type == "int2") type = "smallint";
  if (type == "int3" || type == "middleint") type = "mediumint";
  if (type == "int4") type = "int";
  if (type == "int8") type = "bigint";
  if (type == "bool" || type == "boolean") return "tinyint(1)";
  if (type == "dec" || type == "numeric" || type == "fixed") type = "decimal";
  if (type == "real" || type == "float8") type = "double";
  if (type == "float4") type = "float";
  if (type == "character") type = "char";
  auto with_args = [&](std::string base) {
    if (args.empty()) return base;
    base += '(';
    for (std::size_t i = 0; i < args.size(); ++i) base += (i ? "," : "") + args[i];
    return base + ')';
  };
  auto sign = [&](std::string base) {
    if (is_unsigned) base += " unsigned";
    if (zerofill) base += " zerofill";
    return base;
  };
  static const std::vector<std::pair<std::string, std::pair<int, int>>> kIntWidths{
      {"tinyint", {4, 3}},
      {"smallint", {6, 5}},
      {"mediumint", {9, 8}},
      {"int", {11, 10}},
      {"bigint", {20, 20}}};
  for (const auto& [n, widths] : kIntWidths) {
    if (type != n) continue;
    if (mysql8) {
      // MySQL 8.0.19+ prints no display width, except tinyint(1) and with ZEROFILL.
      if (!args.empty() && (zerofill || (n == "tinyint" && args[0] == "1"))) {
        return sign(with_args(n));
      }
      if (zerofill)
        return sign(n + "(" + std::to_string(is_unsigned ? widths.second : widths.first) + ")");
      return sign(n);
    }
    if (!args.empty()) return sign(with_args(n));
    return sign(n + "(" + std::to_string(is_unsigned ? widths.second : widths.first) + ")");
  }
  if (type == "decimal") {
    std::string m = args.size() > 0 ? args[0] : "10";
    std::string d = args.size() > 1 ? args[1] : "0";
    return sign("decimal(" + m + "," + d + ")");
  }
  if (type == "float" && args.size() == 1) {
    const auto p = std::stoul(args[0]);
    return sign(p > 24 ? "double" : "float");
  }
  if (type == "float" || type == "double") return sign(with_args(type));
  if (type == "char" || type == "binary") {
    return args.empty() ? type + "(1)" : with_args(type);
  }
  if (type == "bit") return args.empty() ? "bit(1)" : with_args(type);
  if (type == "year") return mysql8 ? "year" : "year(4)";
  if (type == "enum" || type == "set") return with_args(type);
  if (type == "time" || type == "datetime" || type == "timestamp") {
    if (!args.empty() && args[0] != "0") return with_args(type);
    return type;
  }
  return with_args(type);
}

std::vector<std::string> parse_elements(std::string_view column_type) {
  std::vector<std::string> out;
  const auto open = column_type.find('(');
  if (open == std::string_view::npos) return out;
  std::size_t i = open + 1;
  while (i < column_type.size()) {
    if (column_type[i] != '\'') {
      ++i;
      continue;
    }
    std::string v;
    ++i;
    while (i < column_type.size()) {
      if (column_type[i] == '\'') {
        if (i + 1 < column_type.size() && column_type[i + 1] == '\'') {
          v += '\'';
          i += 2;
          continue;
        }
        ++i;
        break;
      }
      v += column_type[i++];
    }
    out.push_back(std::move(v));
  }
  return out;
}

DdlStatement parse_ddl(std::string_view sql, bool mysql8) {
  Parser p(tokenize(sql), mysql8);
  return p.parse();
}

}  // namespace cppcdc::mysql::detail
