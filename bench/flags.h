// The benchmarks' command lines: the flags every benchmark takes from its wrapper script
// (bench/accuracy, bench/scale), a reader for each benchmark's own, and the main() they share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace lagwatch::bench {

// The arguments of a command line, one flag at a time. A flag's value is the next argument; one
// that is missing or malformed ends the program with exit code 2 and a message prefixed by
// `program`.
class FlagReader {
 public:
  FlagReader(std::string program, int argc, char** argv);

  // Moves to the next flag; false at the end.
  bool Next();
  // The current flag.
  const std::string& flag() const { return flag_; }
  // Takes the current flag's value.
  std::string Value();
  // Value() as a number (std::atoi: 0 when it is not one).
  int Int();
  // Value() as a whole number of seconds, 0 to 86400.
  int Seconds();

 private:
  std::string program_;
  std::vector<std::string> args_;
  size_t next_ = 0;  // the argument Next() or Value() takes
  std::string flag_;
};

// The options every benchmark program gets from its wrapper script.
struct CommonOptions {
  bool quick = false;
  std::string dir;  // the sandbox, already up
  int base_port = 0;
  std::string lagwatch;  // the binary
  std::string out_dir;
  std::string command;  // the wrapper's command line, for the report
  std::string git_rev;
  bool tls = false;  // --tls: the sandbox was built with scripts/sandbox up --tls

  // Applies the current flag if it is one of these; false otherwise.
  bool Parse(FlagReader& flags);
  // True when every required one was given.
  bool complete() const;
  // The sandbox's DIR/env, checked to match --tls: throws std::runtime_error when the sandbox was
  // built with --tls and the flag is missing, or the other way round (a run must say what it
  // measured).
  SandboxEnv Sandbox() const;
};

// What makes one benchmark program.
struct BenchmarkProgram {
  std::string name;   // "bench_accuracy": prefixes every message
  std::string usage;  // what -h and --help print
  // Applies the current flag if it is one of the benchmark's own; false otherwise.
  std::function<bool(FlagReader&)> flag;
  // True when the benchmark's own options allow a run (the common ones are checked apart).
  std::function<bool()> valid;
  std::function<int()> run;
};

// The whole of a benchmark's main(): reads argv into `common` and the program's own options (-h
// and --help print the usage; an unknown flag, or options that do not allow a run, print it to
// stderr and exit 2), defaults --command to the program's name (and --quick), then runs it
// through RunBenchmarkMain (bench/bench_util.h).
int BenchmarkMain(int argc, char** argv, CommonOptions& common, const BenchmarkProgram& program);

}  // namespace lagwatch::bench
