// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_refusal_test: when the driver refuses a transfer of CHAIN_CREATE or
 * DMA_START, it names it: struct peach2_xfer_refusal (bad_xfer, the index in
 * the list; bad_rule, an enum peach2_dma_rule from peach2_dma_rules.h).
 *
 * One variant per rule (as mm/hmm-tests.c does per device type): a list of
 * a good transfer and one that breaks exactly that rule is refused with the
 * rule's errno and the report {1, rule}, from DMA_START and CHAIN_CREATE
 * alike. Refusals that are not about one transfer (request flags) and
 * started lists write no report.
 *
 * Needs a PEACH2 card and peach2.ko: without the device the tests fail.
 * PEACH2_DEV=/dev/peach2-1 picks another card.
 */
#include "peach2_selftest.h"

#define SMALL (64 * 1024)
#define LARGE (8 * 1024 * 1024)	/* two chunks at least (chunks <= 4 MiB) */

FIXTURE(refusal) {
	int fd;
	struct peach2_info info;
	struct mbuf a;		/* source, LARGE: several chunks */
	struct mbuf b;		/* destination, SMALL */
	__u64 chunk0;		/* bytes in a's first chunk */
};

FIXTURE_VARIANT(refusal) {
	enum peach2_dma_rule rule;
	int err;		/* errno of the refusal */
	__u32 flags;		/* of the request */
};

#define RULE(name, e) \
	FIXTURE_VARIANT_ADD(refusal, name) { \
		.rule = PEACH2_DMA_RULE_##name, .err = e, \
	}

RULE(FLAGS, EINVAL);
RULE(ZERO_LEN, EINVAL);
RULE(IMM_LEN, EINVAL);
RULE(IMM_FIELDS, EINVAL);
RULE(TOO_LONG, EINVAL);
RULE(SRC_ALIGN, EINVAL);
RULE(DST_ALIGN, EINVAL);
RULE(LEN_ALIGN, EINVAL);
RULE(LOW_BITS, EINVAL);
RULE(BLOCK_FIELDS, EINVAL);
RULE(BLOCK_ALIGN, EINVAL);
RULE(BLOCK_GAP16, EINVAL);
RULE(NO_BUFFER, ENOENT);
RULE(SRC_RANGE, EINVAL);
RULE(DST_RANGE, EINVAL);
RULE(REMOTE, EINVAL);
RULE(CHUNK, EINVAL);

FIXTURE_VARIANT_ADD(refusal, REG_MODE) {
	.rule = PEACH2_DMA_RULE_REG_MODE, .err = EINVAL,
	.flags = PEACH2_DMA_REG_MODE,
};

FIXTURE_SETUP(refusal)
{
	struct peach2_chunk c;
	struct peach2_chunks q = { .first = 0, .count = 1 };

	self->fd = open_card(_metadata, &self->info, 2);
	ASSERT_EQ(0, mbuf_alloc(self->fd, LARGE, &self->a));
	ASSERT_EQ(0, mbuf_alloc(self->fd, SMALL, &self->b));
	q.handle = self->a.a.handle;
	q.chunks = (__u64)(uintptr_t)&c;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &q));
	ASSERT_LT(1U, q.nr_chunks);
	self->chunk0 = c.len;
}

FIXTURE_TEARDOWN(refusal)
{
	mbuf_free(self->fd, &self->b);
	mbuf_free(self->fd, &self->a);
	close(self->fd);
}

/* 256 bytes from a to b: keeps every rule. */
static struct peach2_xfer good(const struct _test_data_refusal *self)
{
	struct peach2_xfer x = {
		.src_handle = self->a.a.handle,
		.dst_handle = self->b.a.handle,
		.len = 256,
	};

	return x;
}

/* good(), changed so that it breaks exactly @rule. */
static struct peach2_xfer breaking(const struct _test_data_refusal *self,
				   enum peach2_dma_rule rule)
{
	struct peach2_xfer x = good(self);

	switch (rule) {
	case PEACH2_DMA_RULE_FLAGS: x.flags = 1u << 7; break;
	case PEACH2_DMA_RULE_ZERO_LEN: x.len = 0; break;
	case PEACH2_DMA_RULE_IMM_LEN:
		x.flags = PEACH2_XFER_IMM; x.src_handle = 0; x.len = 6; break;
	case PEACH2_DMA_RULE_IMM_FIELDS: x.imm = 1; break;
	case PEACH2_DMA_RULE_TOO_LONG:
		x.flags = PEACH2_XFER_STRIDE_SRC; x.burst = 64;
		x.len = PEACH2_DMA_MAX_LEN + 4ull; break;
	case PEACH2_DMA_RULE_SRC_ALIGN: x.src_offset = 2; x.dst = 2; break;
	case PEACH2_DMA_RULE_DST_ALIGN: x.dst = 2; break;
	case PEACH2_DMA_RULE_LEN_ALIGN: x.len = 62; break;
	case PEACH2_DMA_RULE_LOW_BITS: x.dst = 4; break;
	case PEACH2_DMA_RULE_BLOCK_FIELDS: x.gap = 16; break;
	case PEACH2_DMA_RULE_BLOCK_ALIGN:
		x.flags = PEACH2_XFER_STRIDE_DST; x.burst = 6; break;
	case PEACH2_DMA_RULE_BLOCK_GAP16:
		x.flags = PEACH2_XFER_STRIDE_DST; x.burst = 64; x.gap = 8; break;
	case PEACH2_DMA_RULE_NO_BUFFER: x.src_handle = 0xfffff; break;
	case PEACH2_DMA_RULE_SRC_RANGE: x.src_offset = LARGE - 64; break;
	case PEACH2_DMA_RULE_DST_RANGE: x.dst = SMALL - 64; break;
	case PEACH2_DMA_RULE_REMOTE:	/* remote puts go to other nodes only */
		x.dst_handle = 0;
		x.dst = PEACH2_NODE_BASE(self->info.node_id) + self->b.a.bus_addr;
		break;
	case PEACH2_DMA_RULE_CHUNK:	/* a strided source across a chunk end */
		x.flags = PEACH2_XFER_STRIDE_SRC; x.src_offset = self->chunk0 - 64;
		x.burst = 64; x.gap = 64; x.len = 128; break;
	default:			/* REG_MODE: the second one is one too many */
		break;
	}
	return x;
}

/* DMA_START (a one-shot list) and CHAIN_CREATE refuse it alike. */
TEST_F(refusal, names_transfer_and_rule)
{
	struct peach2_xfer x[2] = { good(self), breaking(self, variant->rule) };
	struct peach2_dma_start s = {
		.xfers = (__u64)(uintptr_t)x,
		.count = 2,
		.flags = variant->flags,
		.channel = PEACH2_DMA_ANY_CHANNEL,
	};
	struct peach2_chain_create c = { .xfers = s.xfers, .count = 2, .flags = s.flags };
	const struct peach2_xfer_refusal *why[] = { &s.refusal, &c.refusal };
	int i;

	ASSERT_EQ(variant->err, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	ASSERT_EQ(variant->err, xioctl(self->fd, PEACH2_IOC_CHAIN_CREATE, &c));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(1U, why[i]->bad_xfer);
		EXPECT_EQ((__u32)variant->rule, why[i]->bad_rule)
			TH_LOG("%s: expected %s, driver named %s",
			       i ? "CHAIN_CREATE" : "DMA_START",
			       peach2_dma_rule_name(variant->rule),
			       peach2_dma_rule_name(why[i]->bad_rule));
	}
}

/* Not about one transfer, or not refused: no report. */
TEST_F(refusal, no_report_without_a_refused_transfer)
{
	struct peach2_xfer x = good(self);
	struct peach2_dma_start s = {
		.xfers = (__u64)(uintptr_t)&x,
		.count = 1,
		.flags = 1u << 7,		/* undefined request flag */
		.channel = PEACH2_DMA_ANY_CHANNEL,
	};

	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	EXPECT_EQ(0U, s.refusal.bad_rule);
	s.flags = PEACH2_DMA_WAIT;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	EXPECT_EQ(0U, s.status);
	EXPECT_EQ(0U, s.refusal.bad_rule);
}

TEST_HARNESS_MAIN
