// SPDX-License-Identifier: MIT
// tcaCardErrorName: the card's error codes (enum peach2_err) by name, for
// DMA tickets, read-proxy requests and the driver's err_last. The names are
// peach2_hw.h's table, as the driver's sysfs prints them.
#include <tca/tca.h>

#include <peach2/peach2_hw.h>

extern "C" const char *tcaCardErrorName(uint32_t code)
{
	return peach2_err_known(code) ? peach2_err_name(code) : "?";
}
