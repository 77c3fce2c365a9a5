// TLS between cppcdc and PostgreSQL, through the real `cppcdc run` binary, against a server of
// the test's own with ssl = on and a certificate signed by a CA the test makes
// (scripts/tls-certs.sh): verify-full streams with both connections encrypted; a certificate
// that cannot be trusted (another CA, another host name, no CA file, a client certificate
// the server refuses) stops cppcdc at once instead of being retried; client certificates
// authenticate a role; and no password or key passphrase ever reaches the log or
// `cppcdc check-config`.

#include <array>

#include "own_server.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;

namespace {

constexpr const char* kPassword = "Pw-7c1d9e-s3cr3t";        // role cppcdc_pw (scram)
constexpr const char* kWrongPassword = "Pw-0a8f2b-wr0ng";    // never valid
constexpr const char* kKeyPassphrase = "Kp-51e3aa-pa55";     // encrypts cppcdc_cert's key

class PgTls : public it::OwnServerTest {
 protected:
  int port_offset(const std::string& name) const override {
    return name.find("VerifyFull") != std::string::npos          ? 103
           : name.find("Refused") != std::string::npos           ? 104
           : name.find("ClientCertificate") != std::string::npos ? 105
                                                                 : 106;
  }

  void SetUp() override {
    OwnServerTest::SetUp();
    if (HasFatalFailure()) return;
    certs_ = dir_ / "certs";
    other_ = dir_ / "other";
    // The CA with the server certificate and the client certificate of role cppcdc_cert
    // (its key encrypted), and a second, unrelated CA with a client certificate of the same
    // name.
    ASSERT_EQ(std::system(("TLS_KEY_PASSPHRASE=" + std::string(kKeyPassphrase) + " " +
                           script("tls-certs.sh") + " " + certs_.string() +
                           " cppcdc_cert >/dev/null").c_str()), 0);
    ASSERT_EQ(std::system((script("tls-certs.sh") + " " + other_.string() +
                           " cppcdc_cert >/dev/null").c_str()), 0);

    // The server's files: its key must belong to the user the server runs as, mode 0600.
    const fs::path tls = fs::path(pg_dir()) / "tls";
    fs::create_directories(tls);
    for (const char* f : {"server.crt", "server.key", "ca.crt"}) {
      fs::copy_file(certs_ / f, tls / f, fs::copy_options::overwrite_existing);
    }
    if (geteuid() == 0) {
      ASSERT_EQ(std::system(("chown -R postgres: " + tls.string() + " && chmod 0600 " +
                             tls.string() + "/*").c_str()), 0);
    }
    // Certificate authentication for cppcdc_cert, and nothing else for it; a password for
    // cppcdc_pw (pg.sh's scram line); trust for postgres, over TLS or not.
    const fs::path hba = fs::path(pg_dir()) / "data" / "pg_hba.conf";
    std::string lines;
    {
      std::ifstream in(hba);
      lines.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::ofstream(hba) << "hostssl all cppcdc_cert 127.0.0.1/32 cert\n"
                       << "host all cppcdc_cert 127.0.0.1/32 reject\n" << lines;
    it::PgSession admin(dsn("postgres"));
    admin.query("alter system set ssl = on");
    admin.query("alter system set ssl_cert_file = '" + (tls / "server.crt").string() + "'");
    admin.query("alter system set ssl_key_file = '" + (tls / "server.key").string() + "'");
    admin.query("alter system set ssl_ca_file = '" + (tls / "ca.crt").string() + "'");
    admin.query("create role cppcdc_cert login replication");
    admin.query(std::string("create role cppcdc_pw login replication password '") + kPassword +
                "'");
    admin.query("select pg_reload_conf()");
    it::PgSession(dsn(name_)).query("create publication own_pub for table acct, marker; "
                                    "grant select on acct, marker to cppcdc_cert, cppcdc_pw");
    // The reload is asynchronous: wait until a verified TLS connection works.
    ASSERT_TRUE(wait_until([&] {
      return pg::detail::connect(tls_dsn(), false).has_value();
    }, 10s)) << "TLS did not come up; server log:\n" << log_tail(fs::path(pg_dir()) / "server.log");
  }

  // host=localhost, verify-full against our CA.
  std::string tls_dsn(const std::string& user = "postgres", const std::string& extra = "") const {
    return "host=localhost port=" + std::to_string(port()) + " dbname=" + name_ + " user=" +
           user + " sslmode=verify-full sslrootcert=" + (certs_ / "ca.crt").string() + extra;
  }
  std::string client_cert(const fs::path& dir) const {
    return " sslcert=" + (dir / "cppcdc_cert.crt").string() +
           " sslkey=" + (dir / "cppcdc_cert.key").string();
  }

  // Runs `cppcdc run` with `cppcdc_dsn` and expects it to stop by itself, at once, with exit
  // code 3 (an error that needs an operator) and no retry; returns its log.
  std::string expect_refused(const std::string& cppcdc_dsn) {
    fs::remove(log_path());
    write_config(cppcdc_dsn, "", "\n[log]\nlevel = \"debug\"\n");
    start_cppcdc(/*wait_streaming=*/false);
    const auto status = wait_exit(20);
    const std::string text = log();
    if (!status) {
      ADD_FAILURE() << "cppcdc still running after 20 s (retrying forever?)\n" << text;
      return text;
    }
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3)
        << it::describe_wait_status(*status) << "\n" << text;
    EXPECT_EQ(text.find("retrying in"), std::string::npos) << text;
    EXPECT_NE(text.find("cppcdc stopped"), std::string::npos) << text;
    return text;
  }

  // `cppcdc check-config` on dir_/cdc.toml: exit code and output (stdout and stderr).
  std::pair<int, std::string> check_config() {
    const std::string cmd = std::string(CPPCDC_BINARY) + " check-config --config " +
                            (dir_ / "cdc.toml").string() + " 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    std::array<char, 4096> buf{};
    while (fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }

  // The TLS state of cppcdc's server processes: backend_type -> "ssl version client_dn".
  std::multimap<std::string, std::string> cppcdc_backends() {
    std::multimap<std::string, std::string> out;
    it::PgSession admin(dsn("postgres"));
    for (auto& row : admin.query(
             "select a.backend_type, s.ssl::text || ' ' || coalesce(s.version, '-') || ' ' || "
             "coalesce(s.client_dn, '-') from pg_stat_activity a join pg_stat_ssl s using (pid) "
             "where a.application_name = 'cppcdc'")) {
      out.emplace(row[0].value_or(""), row[1].value_or(""));
    }
    return out;
  }

  // Whether the walsender streaming from our slot runs over TLS ("true"/"false", "" if none).
  std::string walsender_ssl() {
    it::PgSession admin(dsn("postgres"));
    return admin.scalar(
        "select s.ssl::text from pg_replication_slots sl join pg_stat_replication r on r.pid = "
        "sl.active_pid join pg_stat_ssl s on s.pid = r.pid where sl.slot_name = '" + name_ + "'");
  }

  fs::path certs_;
  fs::path other_;
};

}  // namespace

TEST_F(PgTls, VerifyFullStreamsWithBothConnectionsEncrypted) {
  write_config(tls_dsn());
  start_cppcdc();
  ASSERT_FALSE(HasFatalFailure());
  std::thread workload = start_workload(100);
  EXPECT_EQ(walsender_ssl(), "true");
  const auto backends = cppcdc_backends();
  EXPECT_EQ(backends.count("walsender"), 1u);
  EXPECT_EQ(backends.count("client backend"), 1u);
  for (const auto& [type, state] : backends) {
    EXPECT_EQ(state.rfind("true TLSv1.", 0), 0u) << type << ": " << state;
  }
  // The same query tells a connection without TLS apart.
  it::PgSession plain(dsn(name_) + " sslmode=disable application_name=cppcdc");
  std::size_t unencrypted = 0;
  for (const auto& [type, state] : cppcdc_backends()) unencrypted += state.rfind("false", 0) == 0;
  EXPECT_EQ(unencrypted, 1u);
  workload.join();
  finish_and_check();
}

TEST_F(PgTls, UntrustedCertificateIsRefusedAtOnceNotRetried) {
  // Verified against another CA.
  std::string text = expect_refused(
      "host=localhost port=" + std::to_string(port()) + " dbname=" + name_ +
      " user=postgres sslmode=verify-full sslrootcert=" + (other_ / "ca.crt").string());
  EXPECT_NE(text.find("certificate verify failed"), std::string::npos) << text;
  EXPECT_NE(text.find("sslrootcert"), std::string::npos) << text;  // the remedy names the key

  // The right CA, but the certificate names localhost and we connect to 127.0.0.1.
  text = expect_refused("host=127.0.0.1 port=" + std::to_string(port()) + " dbname=" + name_ +
                        " user=postgres sslmode=verify-full sslrootcert=" +
                        (certs_ / "ca.crt").string());
  EXPECT_NE(text.find("does not match host name \"127.0.0.1\""), std::string::npos) << text;

  // No CA file at all.
  text = expect_refused("host=localhost port=" + std::to_string(port()) + " dbname=" + name_ +
                        " user=postgres sslmode=verify-full sslrootcert=" +
                        (dir_ / "missing-ca.crt").string());
  EXPECT_NE(text.find("missing-ca.crt"), std::string::npos) << text;

  EXPECT_FALSE(fs::exists(dir_ / "events.jsonl") && fs::file_size(dir_ / "events.jsonl") > 0);
}

TEST_F(PgTls, ClientCertificateAuthenticatesTheRoleAndTheKeyPassphraseStaysSecret) {
  write_config(tls_dsn("cppcdc_cert", client_cert(certs_) + " sslpassword=" + kKeyPassphrase),
               "", "\n[log]\nlevel = \"debug\"\n");
  auto [code, out] = check_config();
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find(kKeyPassphrase), std::string::npos) << out;
  EXPECT_NE(out.find("sslpassword=****"), std::string::npos) << out;

  start_cppcdc();
  ASSERT_FALSE(HasFatalFailure());
  std::thread workload = start_workload(100);
  EXPECT_EQ(walsender_ssl(), "true");
  for (const auto& [type, state] : cppcdc_backends()) {
    EXPECT_NE(state.find("/CN=cppcdc_cert"), std::string::npos) << type << ": " << state;
  }
  workload.join();
  finish_and_check();
  EXPECT_EQ(log().find(kKeyPassphrase), std::string::npos) << log();

  // Without a client certificate the role cannot log in, and that is not retried.
  std::string text = expect_refused(tls_dsn("cppcdc_cert"));
  EXPECT_NE(text.find("requires a valid client certificate"), std::string::npos) << text;
  // A client certificate from a CA the server does not trust.
  text = expect_refused(tls_dsn("cppcdc_cert", client_cert(other_)));
  EXPECT_NE(text.find("unknown ca"), std::string::npos) << text;
  // The right certificate with a wrong passphrase for its key.
  text = expect_refused(tls_dsn("cppcdc_cert", client_cert(certs_) + " sslpassword=Kp-wrong"));
  EXPECT_NE(text.find("private key file"), std::string::npos) << text;
  EXPECT_EQ(text.find(kKeyPassphrase), std::string::npos) << text;
}

TEST_F(PgTls, PasswordNeverAppearsInTheLogOrCheckConfig) {
  const std::string extra = "\n[log]\nlevel = \"debug\"\n";
  // Key=value DSN, right password: streams (so the password was used, and was right).
  write_config(tls_dsn("cppcdc_pw", std::string(" password=") + kPassword), "", extra);
  auto [code, out] = check_config();
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find(kPassword), std::string::npos) << out;
  EXPECT_NE(out.find("password=****"), std::string::npos) << out;
  start_cppcdc();
  ASSERT_FALSE(HasFatalFailure());
  std::thread workload = start_workload(30);
  EXPECT_EQ(walsender_ssl(), "true");
  workload.join();
  finish_and_check();
  std::string text = log();
  EXPECT_NE(text.find("streaming from slot"), std::string::npos) << text;
  EXPECT_EQ(text.find(kPassword), std::string::npos) << text;

  // Wrong password, key=value form: refused at once, the password in neither output.
  text = expect_refused(tls_dsn("cppcdc_pw", std::string(" password=") + kWrongPassword));
  EXPECT_NE(text.find("password authentication failed"), std::string::npos) << text;
  EXPECT_EQ(text.find(kWrongPassword), std::string::npos) << text;
  std::tie(code, out) = check_config();
  EXPECT_EQ(out.find(kWrongPassword), std::string::npos) << out;

  // Wrong password in a URI, in the user-info and as a parameter.
  const std::string uri = "postgresql://cppcdc_pw:" + std::string(kWrongPassword) +
                          "@localhost:" + std::to_string(port()) + "/" + name_ +
                          "?sslmode=verify-full&sslrootcert=" + (certs_ / "ca.crt").string();
  text = expect_refused(uri);
  EXPECT_NE(text.find("password authentication failed"), std::string::npos) << text;
  EXPECT_EQ(text.find(kWrongPassword), std::string::npos) << text;
  std::tie(code, out) = check_config();
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find(kWrongPassword), std::string::npos) << out;
  write_config("postgresql://cppcdc_pw@localhost:" + std::to_string(port()) + "/" + name_ +
               "?password=" + kWrongPassword + "&sslmode=verify-full&sslrootcert=" +
               (certs_ / "ca.crt").string());
  std::tie(code, out) = check_config();
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find(kWrongPassword), std::string::npos) << out;
}
