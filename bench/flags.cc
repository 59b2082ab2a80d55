#include "bench/flags.h"

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "bench/bench_util.h"

namespace lagwatch::bench {

FlagReader::FlagReader(std::string program, int argc, char** argv)
    : program_(std::move(program)), args_(argv + 1, argv + argc) {}

bool FlagReader::Next() {
  if (next_ >= args_.size()) return false;
  flag_ = args_[next_++];
  return true;
}

std::string FlagReader::Value() {
  if (next_ >= args_.size()) {
    std::cerr << program_ << ": " << flag_ << " needs a value\n";
    std::exit(2);
  }
  return args_[next_++];
}

int FlagReader::Int() { return std::atoi(Value().c_str()); }

int FlagReader::Seconds() {
  const std::string v = Value();
  char* end = nullptr;
  const long s = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || s < 0 || s > 86400) {
    std::cerr << program_ << ": " << flag_ << " needs a number of seconds, got '" << v << "'\n";
    std::exit(2);
  }
  return static_cast<int>(s);
}

bool CommonOptions::Parse(FlagReader& flags) {
  const std::string& flag = flags.flag();
  if (flag == "--quick") {
    quick = true;
    return true;
  }
  if (flag == "--tls") {
    tls = true;
    return true;
  }
  if (flag == "--base-port") {
    base_port = flags.Int();
    return true;
  }
  for (const auto& [name, value] :
       {std::pair{"--dir", &dir}, std::pair{"--lagwatch", &lagwatch},
        std::pair{"--out-dir", &out_dir}, std::pair{"--command", &command},
        std::pair{"--git-rev", &git_rev}}) {
    if (flag == name) {
      *value = flags.Value();
      return true;
    }
  }
  return false;
}

bool CommonOptions::complete() const {
  return !dir.empty() && base_port > 0 && !lagwatch.empty() && !out_dir.empty();
}

SandboxEnv CommonOptions::Sandbox() const {
  SandboxEnv env(dir);
  if (env.Tls() != tls) {
    throw std::runtime_error(tls ? "--tls: the sandbox in " + dir +
                                       " was not built with --tls (scripts/sandbox up --tls)"
                                 : "the sandbox in " + dir +
                                       " was built with --tls: run with --tls");
  }
  return env;
}

int BenchmarkMain(int argc, char** argv, CommonOptions& common, const BenchmarkProgram& program) {
  FlagReader flags(program.name, argc, argv);
  while (flags.Next()) {
    if (common.Parse(flags) || program.flag(flags)) continue;
    if (flags.flag() == "-h" || flags.flag() == "--help") {
      std::cout << program.usage;
      return 0;
    }
    std::cerr << program.name << ": unknown argument '" << flags.flag() << "'\n";
    std::cerr << program.usage;
    return 2;
  }
  if (!common.complete() || !program.valid()) {
    std::cerr << program.usage;
    return 2;
  }
  if (common.command.empty()) common.command = program.name + (common.quick ? " --quick" : "");
  return RunBenchmarkMain(program.name, program.run);
}

}  // namespace lagwatch::bench
