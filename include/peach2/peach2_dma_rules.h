/* SPDX-License-Identifier: MIT */
/*
 * PEACH2 DMA restrictions: the one definition of what a DMA descriptor (the
 * card) and a transfer (the driver's struct peach2_xfer, checked with
 * peach2_xfer_rule() in peach2_uapi.h) may look like. The card model
 * refuses a descriptor with peach2_desc_rule(), the driver and the fake
 * driver refuse a transfer with peach2_xfer_rule(), libtca checks a request
 * with the parts before anything starts. docs/hardware.md §6 explains them.
 *
 * A rule answer is an enum peach2_dma_rule: 0 for "fine", else which rule is
 * broken. The driver reports it to user space when it refuses a transfer
 * (struct peach2_dma_start / peach2_chain_create: bad_xfer, bad_rule); the
 * card turns it into its error code with peach2_dma_rule_err().
 *
 * Plain C on top of peach2_hw.h, for kernel, QEMU and C++ alike.
 */
#ifndef PEACH2_DMA_RULES_H
#define PEACH2_DMA_RULES_H

#include "peach2_hw.h"

/*
 * X(name, value, card error, text). Values are ABI (the driver reports
 * them); the card error is what the card answers for a descriptor breaking
 * the rule (NONE: a rule only the driver has, about buffers and handles).
 */
#define PEACH2_DMA_RULES(X) \
	X(OK,            0, NONE,         "no rule broken") \
	X(FLAGS,         1, DMA_BAD_DESC, "undefined flag bits") \
	X(ZERO_LEN,      2, DMA_ZERO_LEN, "length 0") \
	X(IMM_LEN,       3, DMA_BAD_DESC, "immediate length not 4 or 8") \
	X(IMM_FIELDS,    4, DMA_BAD_DESC, "immediate with a source, block-stride fields, or an immediate value without IMM") \
	X(TOO_LONG,      5, DMA_BAD_DESC, "more than PEACH2_DMA_MAX_LEN bytes in one descriptor") \
	X(SRC_ALIGN,     6, DMA_ALIGN,    "source not 4-byte aligned") \
	X(DST_ALIGN,     7, DMA_ALIGN,    "destination not 4-byte aligned") \
	X(LEN_ALIGN,     8, DMA_ALIGN,    "length not a multiple of 4") \
	X(LOW_BITS,      9, DMA_ALIGN,    "source and destination differ in their low 4 address bits") \
	X(BLOCK_FIELDS, 10, DMA_BAD_DESC, "gap or stride side without a burst, or a burst without a side") \
	X(BLOCK_ALIGN,  11, DMA_ALIGN,    "burst or gap not a multiple of 4") \
	X(BLOCK_GAP16,  12, DMA_ALIGN,    "gap on one side only, not a multiple of 16") \
	X(NO_BUFFER,    13, NONE,         "no buffer with that handle in this file") \
	X(SRC_RANGE,    14, NONE,         "source span outside the source buffer") \
	X(DST_RANGE,    15, NONE,         "destination span outside the destination buffer") \
	X(REMOTE,       16, NONE,         "remote destination not another node's host memory") \
	X(CHUNK,        17, NONE,         "block-stride or immediate side crosses a chunk boundary") \
	X(TOO_MANY,     18, NONE,         "more than PEACH2_DMA_MAX_CHAIN descriptors after splitting") \
	X(REG_MODE,     19, NONE,         "register mode needs exactly one descriptor")

enum peach2_dma_rule {
#define PEACH2_DMA_RULE_ENUM(name, value, err, text) PEACH2_DMA_RULE_##name = value,
	PEACH2_DMA_RULES(PEACH2_DMA_RULE_ENUM)
#undef PEACH2_DMA_RULE_ENUM
};

/* "LOW_BITS" for PEACH2_DMA_RULE_LOW_BITS; "UNKNOWN" otherwise. */
static inline const char *peach2_dma_rule_name(peach2_u32 rule)
{
	switch (rule) {
#define PEACH2_DMA_RULE_NAME(name, value, err, text) case value: return #name;
	PEACH2_DMA_RULES(PEACH2_DMA_RULE_NAME)
#undef PEACH2_DMA_RULE_NAME
	default: return "UNKNOWN";
	}
}

/* A sentence fragment for messages; "unknown rule" otherwise. */
static inline const char *peach2_dma_rule_text(peach2_u32 rule)
{
	switch (rule) {
#define PEACH2_DMA_RULE_TEXT(name, value, err, text) case value: return text;
	PEACH2_DMA_RULES(PEACH2_DMA_RULE_TEXT)
#undef PEACH2_DMA_RULE_TEXT
	default: return "unknown rule";
	}
}

/* The card's error code for a descriptor breaking @rule. */
static inline enum peach2_err peach2_dma_rule_err(enum peach2_dma_rule rule)
{
	switch (rule) {
#define PEACH2_DMA_RULE_ERR(name, value, err, text) \
	case PEACH2_DMA_RULE_##name: return PEACH2_ERR_##err;
	PEACH2_DMA_RULES(PEACH2_DMA_RULE_ERR)
#undef PEACH2_DMA_RULE_ERR
	}
	return PEACH2_ERR_DMA_BAD_DESC;
}

/*
 * The PEACH2 restriction on a contiguous piece: source and destination
 * 4-byte aligned, equal low 4 address bits, length a multiple of 4.
 */
static inline enum peach2_dma_rule
peach2_dma_align_rule(peach2_u64 src, peach2_u64 dst, peach2_u64 len)
{
	if (src % 4)
		return PEACH2_DMA_RULE_SRC_ALIGN;
	if (dst % 4)
		return PEACH2_DMA_RULE_DST_ALIGN;
	if (len % 4)
		return PEACH2_DMA_RULE_LEN_ALIGN;
	if ((src ^ dst) % 16)
		return PEACH2_DMA_RULE_LOW_BITS;
	return PEACH2_DMA_RULE_OK;
}

/*
 * Block-stride fields (@flags: PEACH2_DESC_STRIDE_SRC/DST): burst 0 means
 * contiguous (no gap, no side); a burst needs a side; burst and gap are
 * multiples of 4; a gap on one side only is a multiple of 16, so that every
 * block keeps equal low 4 address bits.
 */
static inline enum peach2_dma_rule
peach2_dma_block_rule(peach2_u32 burst, peach2_u32 gap, peach2_u32 flags)
{
	int ssrc = !!(flags & PEACH2_DESC_STRIDE_SRC);
	int sdst = !!(flags & PEACH2_DESC_STRIDE_DST);

	if (burst == 0)
		return gap || ssrc || sdst ? PEACH2_DMA_RULE_BLOCK_FIELDS :
					     PEACH2_DMA_RULE_OK;
	if (!ssrc && !sdst)
		return PEACH2_DMA_RULE_BLOCK_FIELDS;
	if (burst % 4 || gap % 4)
		return PEACH2_DMA_RULE_BLOCK_ALIGN;
	if (ssrc != sdst && gap % 16)
		return PEACH2_DMA_RULE_BLOCK_GAP16;
	return PEACH2_DMA_RULE_OK;
}

/*
 * A transfer's shape (@flags: PEACH2_DESC_*), in the card's order of checks.
 * IMM writes the low @len bytes of a value (@src unused) to @dst. @splits:
 * a contiguous transfer may be longer than one descriptor (the driver cuts
 * it); block-stride and immediates never are.
 */
static inline enum peach2_dma_rule
peach2_dma_shape_rule(peach2_u64 src, peach2_u64 dst, peach2_u64 len,
		      peach2_u32 burst, peach2_u32 gap, peach2_u32 flags,
		      int splits)
{
	enum peach2_dma_rule r;

	if (flags & ~PEACH2_DESC_FLAGS_ALL)
		return PEACH2_DMA_RULE_FLAGS;
	if (len == 0)
		return PEACH2_DMA_RULE_ZERO_LEN;
	if (flags & PEACH2_DESC_IMM) {
		if (len != 4 && len != 8)
			return PEACH2_DMA_RULE_IMM_LEN;
		if (burst || gap ||
		    flags & (PEACH2_DESC_STRIDE_SRC | PEACH2_DESC_STRIDE_DST))
			return PEACH2_DMA_RULE_IMM_FIELDS;
		return dst % 4 ? PEACH2_DMA_RULE_DST_ALIGN : PEACH2_DMA_RULE_OK;
	}
	if (len > PEACH2_DMA_MAX_LEN && (!splits || burst))
		return PEACH2_DMA_RULE_TOO_LONG;
	r = peach2_dma_align_rule(src, dst, len);
	if (r != PEACH2_DMA_RULE_OK)
		return r;
	return peach2_dma_block_rule(burst, gap, flags);
}

/* A descriptor as the card reads it (chain bits LAST, NEXT_HOST allowed). */
static inline enum peach2_dma_rule peach2_desc_rule(const struct peach2_desc *d)
{
	return peach2_dma_shape_rule(d->src, d->dst, d->len, d->burst, d->gap,
				     d->flags, 0);
}

/*
 * Bytes one side of a block-stride transfer spans from its first to its last
 * byte: (ceil(len / burst) - 1) * (burst + gap) + the last block. Needs
 * len > 0 and burst > 0. Returns 0, or -1 on overflow.
 */
static inline int peach2_stride_span(peach2_u64 len, peach2_u64 burst,
				     peach2_u64 gap, peach2_u64 *span)
{
	peach2_u64 blocks = (len - 1) / burst;	/* whole blocks before the last */
	peach2_u64 step, s;

	if (__builtin_add_overflow(burst, gap, &step) ||
	    __builtin_mul_overflow(blocks, step, &s) ||
	    __builtin_add_overflow(s, len - blocks * burst, &s))
		return -1;
	*span = s;
	return 0;
}

#endif /* PEACH2_DMA_RULES_H */
