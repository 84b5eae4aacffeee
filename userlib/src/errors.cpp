// SPDX-License-Identifier: MIT
// Error codes as text: tcaErrorString (TCA_E* codes and -errno values) and
// tcaCardErrorName (the card's codes, enum peach2_err, for DMA tickets,
// read-proxy requests and the driver's err_last; the names are peach2_hw.h's
// table, as the driver's sysfs prints them).
#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <cstring>

extern "C" const char* tcaErrorString(int code) {
    switch (code) {
    case TCA_SUCCESS: return "success";
    case TCA_EBADHANDLE: return "invalid tcaHandle (bad magic, version, check value or fields)";
    case TCA_ERANGE: return "offset or length outside the buffer";
    case TCA_ENOTBUF: return "pointer is not inside a tcaMalloc buffer";
    case TCA_ETOOMANYCHUNKS:
        return "range spans more physically contiguous chunks than a tcaHandle holds";
    case TCA_ENODE: return "node id not in the sub-cluster (or the peer is this node)";
    case TCA_EABI: return "PEACH2 driver speaks another ABI version";
    case TCA_EDEVICE: return "PEACH2 driver reported an impossible geometry";
    case TCA_EALIGN:
        return "DMA restriction: source and destination must be 4-byte aligned with equal "
               "low 4 address bits, and the length a multiple of 4";
    case TCA_ESTRIDE:
        return "bad block-stride: burst and gap must be multiples of 4 (a one-sided gap of 16), "
               "and each strided side must stay in one physically contiguous chunk";
    case TCA_EDMA: return "the card ended the DMA with an error (see the ticket's status)";
    case TCA_ENODESC:
        return "out of DMA descriptors (on-card descriptor RAM full, or too many for one "
               "run); host descriptors have no shared limit";
    case TCA_ENOTEXPORTED:
        return "memory not exported for this operation (no export in the handle, or the "
               "target knows no such export, key or permission)";
    case TCA_EREMOTE:
        return "the target node refused or failed the request (see the request's status)";
    default: break;
    }
    if (code < 0 && code > -4096) {
        // strerrordesc_np returns static text and, unlike strerror, is
        // thread-safe and locale-independent.
        if (const char* s = strerrordesc_np(-code))
            return s;
    }
    return "unknown error";
}

extern "C" const char* tcaCardErrorName(uint32_t code) {
    return peach2_err_known(code) ? peach2_err_name(code) : "?";
}
