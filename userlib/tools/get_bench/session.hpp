// SPDX-License-Identifier: MIT
// tca_get_bench: both roles after the buffers exist and the handles have
// been exchanged (main.cpp), and the results.
#pragma once

#include "options.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <string>
#include <vector>

namespace getbench {

struct Session {
	const Options *o;
	int self;
	unsigned char *ctrl;        // ours (both roles)
	unsigned char *data;        // server: the pattern; client: get destination
	unsigned char *sink;        // server: the DMA put target; client: put source
	tcaHandle peer_ctrl;        // the other side's ctrl
	tcaHandle peer_data;        // client: the server's exported data
	tcaHandle peer_sink;        // client: the server's sink
};

struct Row {
	std::string test;           // put_pio, dma_put_stream, get, get_stream, cas, faa
	std::uint64_t size = 0;
	std::uint64_t count = 0;
	double min_us = 0, median_us = 0, p99_us = 0;
	double mb_per_s = 0;        // latency rows: size / median; streams: bytes / wall time
	bool latency = true;
};

// Client: every measurement; false after printing the first error.
bool run_client(const Session &s, std::vector<Row> *rows);
// Server: echo the ping-pong, acknowledge the put stream, then sleep.
bool run_server(const Session &s);

void print_rows(const std::vector<Row> &rows);
bool write_csv(const std::string &path, const std::vector<Row> &rows);
// The two ratios the issue asks for; false if a row is missing.
void print_ratios(const std::vector<Row> &rows);

} // namespace getbench
