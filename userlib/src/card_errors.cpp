// SPDX-License-Identifier: MIT
// tcaCardErrorName: the card's error codes (enum peach2_err) by name, for
// DMA tickets, read-proxy requests and the driver's err_last.
#include <tca/tca.h>

#include <peach2/peach2_hw.h>

extern "C" const char *tcaCardErrorName(uint32_t code)
{
	switch (code) {
	case PEACH2_ERR_NONE: return "NONE";
	case PEACH2_ERR_NO_SUCH_NODE: return "NO_SUCH_NODE";
	case PEACH2_ERR_LINK_DOWN: return "LINK_DOWN";
	case PEACH2_ERR_NO_ROUTE: return "NO_ROUTE";
	case PEACH2_ERR_READ_UNSUPPORTED: return "READ_UNSUPPORTED";
	case PEACH2_ERR_BAD_TARGET: return "BAD_TARGET";
	case PEACH2_ERR_NO_GPU: return "NO_GPU";
	case PEACH2_ERR_BAD_PACKET: return "BAD_PACKET";
	case PEACH2_ERR_TX_OVERFLOW: return "TX_OVERFLOW";
	case PEACH2_ERR_DMA_WRITE: return "DMA_WRITE";
	case PEACH2_ERR_BAD_REG: return "BAD_REG";
	case PEACH2_ERR_HOP_LIMIT: return "HOP_LIMIT";
	case PEACH2_ERR_NOT_REGISTERED: return "NOT_REGISTERED";
	case PEACH2_ERR_BAD_COMMAND: return "BAD_COMMAND";
	case PEACH2_ERR_DMA_ALIGN: return "DMA_ALIGN";
	case PEACH2_ERR_DMA_ZERO_LEN: return "DMA_ZERO_LEN";
	case PEACH2_ERR_DMA_LOOP: return "DMA_LOOP";
	case PEACH2_ERR_DMA_CHAIN_LONG: return "DMA_CHAIN_LONG";
	case PEACH2_ERR_DMA_BAD_INDEX: return "DMA_BAD_INDEX";
	case PEACH2_ERR_DMA_BAD_DESC: return "DMA_BAD_DESC";
	case PEACH2_ERR_DMA_READ: return "DMA_READ";
	case PEACH2_ERR_DMA_BUSY: return "DMA_BUSY";
	case PEACH2_ERR_DMA_ABORTED: return "DMA_ABORTED";
	case PEACH2_ERR_RP_FULL: return "RP_FULL";
	case PEACH2_ERR_RP_OFF: return "RP_OFF";
	case PEACH2_ERR_RP_BAD_REQUEST: return "RP_BAD_REQUEST";
	case PEACH2_ERR_RP_NOT_EXPORTED: return "RP_NOT_EXPORTED";
	case PEACH2_ERR_RP_RANGE: return "RP_RANGE";
	case PEACH2_ERR_RP_REPLAY: return "RP_REPLAY";
	case PEACH2_ERR_RP_BAD_PACKET: return "RP_BAD_PACKET";
	default: return "?";
	}
}
