// SPDX-License-Identifier: MIT
// tca_bench's tests (main.cpp runs one by name). Each parses its own
// options (argv[0] is the test's name) and returns the exit status.
#pragma once

namespace tcabench {

int bench_pingpong(int argc, char** argv);
int bench_dma(int argc, char** argv);
int bench_crossover(int argc, char** argv);
int bench_dma_local(int argc, char** argv);
int bench_get(int argc, char** argv);

}  // namespace tcabench
