// flexwatt: measured, bounded and flexible power for LLM training on GPUs.
// Verbs register themselves (cli/verb.hpp); this file only dispatches.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cli/verb.hpp"
#include "core/version.hpp"

namespace fw::cli {

std::vector<Verb>& verbs() {
  static std::vector<Verb> v;
  return v;
}

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "flexwatt %s: %s\nRun 'flexwatt %s --help' for usage.\n",
                 app.get_name().c_str(), e.what(), app.get_name().c_str());
    return 2;
  }
  return -1;
}

int fail(const std::string& verb, const Status& s) {
  std::fprintf(stderr, "flexwatt %s: %s\n", verb.c_str(), s.message().c_str());
  return s.ok() ? 1 : s.exit_code();
}

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

}  // namespace fw::cli

namespace {
void usage(std::FILE* out) {
  std::fprintf(
      out,
      "flexwatt %s: measured, bounded and flexible power for LLM training on GPUs\n\n"
      "usage: flexwatt <verb> [options]   (flexwatt <verb> --help for details)\n\nverbs:\n",
      fw::kVersion);
  auto v = fw::cli::verbs();
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& verb : v)
    std::fprintf(out, "  %-12s %s\n", verb.name.c_str(), verb.summary.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::printf("flexwatt %s\n", fw::kVersion);
    return 0;
  }
  for (const auto& v : fw::cli::verbs()) {
    if (v.name == name) return v.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "flexwatt: unknown verb '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
