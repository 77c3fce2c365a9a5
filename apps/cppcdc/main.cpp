// The only main(): the cppcdc server and its tools. Command-line parsing (CLI11, slow to
// compile) stays in this file; everything else lives in src/server.

#include <malloc.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "server/config.hpp"
#include "server/migrate_state.hpp"
#include "server/run.hpp"
#include "server/snapshot_control.hpp"

int main(int argc, char** argv) {
  namespace server = cppcdc::server;
  // Event batches (up to max_buffer_size events of ~0.5 KB each) are allocated and freed over
  // and over. With glibc's defaults each one above its mmap threshold is a fresh mmap whose
  // pages fault in on first touch, and the heap top is trimmed back after every batch: a
  // 1M-row snapshot spent 40% of its time there (perf). Keep such blocks in the heap instead;
  // peak RSS is unchanged (measured), memory is returned to the system above 64 MiB free.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);

  CLI::App app{"cppcdc: change data capture from PostgreSQL and MariaDB/MySQL to JSON events",
               "cppcdc"};
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success or a clean stop (SIGINT/SIGTERM), 1 other errors, also a stop\n"
      "that left a batch a sink was not taking (a retry may succeed), 2 invalid configuration\n"
      "or command line, 3 needs an operator (authentication, a missing table or slot, a failed\n"
      "preflight check), 4 no cppcdc answers on the control socket, 5 refused.\n"
      "`cppcdc COMMAND --help` shows a command's options; man cppcdc.");

  std::string run_config;
  CLI::App* run = app.add_subcommand("run", "Capture changes and deliver them to the sink");
  run->add_option("-c,--config", run_config, "Path of cdc.toml")->required();

  std::string check_config;
  CLI::App* check =
      app.add_subcommand("check-config", "Validate cdc.toml and print the effective settings");
  check->add_option("-c,--config", check_config, "Path of cdc.toml")->required();

  std::string preflight_config;
  CLI::App* preflight = app.add_subcommand(
      "preflight",
      "Check the database against cdc.toml (connection, settings, privileges, tables, "
      "publication, slot) without changing anything");
  preflight->add_option("-c,--config", preflight_config, "Path of cdc.toml")->required();

  std::string teardown_config;
  bool teardown_yes = false;
  bool teardown_preexisting = false;
  CLI::App* teardown = app.add_subcommand(
      "teardown",
      "Remove what the pipeline holds: the replication slot and publication cppcdc created, "
      "and the checkpoint (refused while it runs)");
  teardown->add_option("-c,--config", teardown_config, "Path of cdc.toml")->required();
  teardown->add_flag("-y,--yes", teardown_yes, "Do not ask for confirmation");
  teardown->add_flag("--include-preexisting", teardown_preexisting,
                     "Also drop the slot and publication cppcdc did not create");

  server::MigrateStateOptions migrate_options;
  std::string migrate_output;
  CLI::App* migrate = app.add_subcommand(
      "migrate-state",
      "Copy the pipeline's checkpoint (with the source state it carries: snapshot progress, "
      "schema history) from the [state.offset] backend of one cdc.toml to that of another; "
      "the old backend's record is left as it was");
  migrate->add_option("-c,--config", migrate_options.from_config,
                      "cdc.toml whose [state.offset] holds the state now")
      ->required();
  migrate->add_option("--to", migrate_options.to_config,
                      "cdc.toml the pipeline moves to (same [source]; its [state.offset] is the "
                      "target)")
      ->required();
  migrate->add_option("-o,--output", migrate_output, "Write a JSON report to this file");
  migrate->add_flag("--force", migrate_options.force,
                    "Replace a target record that is newer, unreadable or another source's");
  migrate->add_flag("--dry-run", migrate_options.dry_run, "Say what would be done; write nothing");

  CLI::App* version = app.add_subcommand("version", "Print the version");

  // `cppcdc snapshot ...`: steer the incremental snapshot of a running `cppcdc run` through its
  // control socket; `forget` edits the saved checkpoint while cppcdc is stopped.
  CLI::App* snapshot = app.add_subcommand(
      "snapshot",
      "Show the snapshots of a running `cppcdc run` and steer its incremental snapshot");
  snapshot->require_subcommand(1);
  std::string snapshot_config;
  server::SnapshotCommand command;
  int request_timeout_s = 30;
  bool forget_all = false;
  std::vector<std::string> forget_tables;
  auto leaf = [&](const char* name, const char* what) {
    CLI::App* sub = snapshot->add_subcommand(name, what);
    sub->add_option("-c,--config", snapshot_config, "Path of cdc.toml")->required();
    return sub;
  };
  CLI::App* request =
      leaf("request", "Add tables to the running incremental snapshot, or start one");
  request->add_option("tables", command.tables, "Tables to read (\"schema.table\")")->required();
  request
      ->add_option("--timeout", request_timeout_s,
                   "Seconds the pipeline may take to accept the request")
      ->check(CLI::Range(1, 600));
  CLI::App* pause = leaf("pause", "Pause the incremental snapshot (a chunk in progress completes)");
  CLI::App* resume = leaf("resume", "Resume a paused incremental snapshot");
  CLI::App* stop = leaf("stop", "Stop the incremental snapshot, dropping its unfinished tables");
  CLI::App* status = leaf("status", "Show the initial and incremental snapshots' progress");
  status->add_flag("--json", command.json, "Print the raw state as JSON");
  CLI::App* forget = leaf("forget",
                          "While cppcdc is stopped: remove tables from the incremental snapshot "
                          "state saved in the checkpoint");
  auto* forget_list = forget->add_option("tables", forget_tables, "Tables to forget");
  auto* forget_every = forget->add_flag("--all", forget_all, "Forget every table");
  forget_list->excludes(forget_every);
  forget_every->excludes(forget_list);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // CLI11 uses 0 for --help; any usage error is a configuration problem.
    return code == 0 ? 0 : server::kExitConfiguration;
  }

  if (*version) {
    std::printf("cppcdc %.*s\n", static_cast<int>(server::kVersion.size()),
                server::kVersion.data());
    return 0;
  }
  if (*check) return server::check_config(check_config);
  if (*preflight) return server::preflight(preflight_config);
  if (*teardown) {
    return server::teardown(teardown_config, teardown_yes, teardown_preexisting);
  }
  if (*migrate) {
    if (!migrate_output.empty()) migrate_options.output = migrate_output;
    return server::migrate_state(migrate_options);
  }
  if (*snapshot) {
    if (*forget) {
      if (forget_tables.empty() && !forget_all) {
        std::fprintf(stderr, "cppcdc: snapshot forget: name the tables to forget, or pass --all\n");
        return server::kExitConfiguration;
      }
      return server::forget_snapshot_tables(snapshot_config, forget_tables, forget_all);
    }
    using server::SnapshotVerb;
    command.verb = *request  ? SnapshotVerb::kRequest
                   : *pause  ? SnapshotVerb::kPause
                   : *resume ? SnapshotVerb::kResume
                   : *stop   ? SnapshotVerb::kStop
                             : SnapshotVerb::kStatus;
    command.timeout = std::chrono::seconds(request_timeout_s);
    return server::run_snapshot_command(snapshot_config, command);
  }

  auto config = server::load_server_config(run_config);
  if (!config) {
    std::fprintf(stderr, "cppcdc: %s\n", server::render_error(config.error()).c_str());
    return server::kExitConfiguration;
  }
  if (auto token = server::check_admin_token(*config); !token) {
    std::fprintf(stderr, "cppcdc: %s\n", server::render_error(token.error()).c_str());
    return server::kExitConfiguration;
  }
  return server::run_server(*config);
}
