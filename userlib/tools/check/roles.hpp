// SPDX-License-Identifier: MIT
// tca_check's roles (main.cpp runs one by area and name). Each parses its
// own options (argv[0] is the role's name) and returns the exit status:
// 0 only if the check passed.
#pragma once

namespace tcacheck {

int pio_recv(int argc, char** argv);
int pio_send(int argc, char** argv);
int pio_bad_node(int argc, char** argv);
int pio_raw(int argc, char** argv);
int pio_order_recv(int argc, char** argv);
int pio_order_send(int argc, char** argv);
int info(int argc, char** argv);

int dma_recv(int argc, char** argv);
int dma_send(int argc, char** argv);
int dma_hold(int argc, char** argv);
int dma_sink(int argc, char** argv);
int dma_chain(int argc, char** argv);
int dma_restrict(int argc, char** argv);

int rp_serve(int argc, char** argv);
int rp_get_verify(int argc, char** argv);
int rp_faa(int argc, char** argv);
int rp_cas_check(int argc, char** argv);
int rp_read_counter(int argc, char** argv);
int rp_expect_refused(int argc, char** argv);
int rp_flood(int argc, char** argv);

}  // namespace tcacheck
