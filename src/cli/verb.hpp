#pragma once
// The `flexwatt` binary is a set of verbs (`flexwatt analyze ...`). Each verb lives in
// its own cli/<verb>.cpp and registers itself with FW_VERB; main.cpp dispatches.
//
// Exit codes of every verb: 0 success, 2 bad usage or bad input, 1 runtime failure.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::cli {

struct Verb {
  std::string name;
  std::string summary;
  std::function<int(int argc, char** argv)> run;  // argv[0] is the verb name
};

std::vector<Verb>& verbs();

struct VerbRegistrar {
  VerbRegistrar(Verb v) { verbs().push_back(std::move(v)); }
};

// Parses a verb's arguments; returns -1 to continue, else the exit code to return
// (0 after --help, 2 after a usage error, with the message printed).
int parse(CLI::App& app, int argc, char** argv);

// Prints "flexwatt <verb>: <message>" to stderr; returns the status's exit code.
int fail(const std::string& verb, const Status& s);

// True when stderr is a terminal (progress lines are shown only then).
bool stderr_is_tty();

}  // namespace fw::cli

#define FW_VERB_CONCAT2_(a, b) a##b
#define FW_VERB_CONCAT_(a, b) FW_VERB_CONCAT2_(a, b)
#define FW_VERB(name, summary, fn) \
  static ::fw::cli::VerbRegistrar FW_VERB_CONCAT_(fw_verb_, __LINE__)({name, summary, fn})
