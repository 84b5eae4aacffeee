// SPDX-License-Identifier: MIT
// C API: persistent chains. A tcaChain names one or more driver chains
// (chain_table.hpp); they are built, started and destroyed together.
#include "api_guard.hpp"
#include "dma_flags.hpp"
#include "dma_resolve.hpp"
#include "dma_rules.hpp"
#include "dma_runs.hpp"
#include "library.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <span>
#include <vector>

using namespace tca;

namespace {

// Destroys driver chains last to first: runs of one tcaChain end in start
// order, so once the last is idle all are. On failure the ones not yet
// destroyed remain in *ids.
int destroy_driver_chains(DriverPort &port, std::vector<std::uint32_t> *ids)
{
	while (!ids->empty()) {
		peach2_chain_destroy d{};
		d.chain = ids->back();
		if (int rc = port.call(PEACH2_IOC_CHAIN_DESTROY, &d))
			return rc;
		ids->pop_back();
	}
	return 0;
}

int create(std::span<const tcaDmaXfer> xfers, const DmaMode &m, tcaChain *out)
{
	std::vector<peach2_xfer> entries;
	Context *ctx = nullptr;
	if (int rc = with_context([&](Context &c) {
		    ctx = &c;
		    return plan_xfers(c, xfers, &entries);
	    }))
		return rc;
	if (entries.empty())
		return -EINVAL; // a chain must do something
	LibChain chain;
	DriverPort &port = ctx->dma().port();
	for (const DmaRun &r : split_runs(entries, m.desc == PEACH2_DMA_REG_MODE)) {
		peach2_chain_create req{};
		req.xfers = reinterpret_cast<std::uintptr_t>(r.xfers.data());
		req.count = static_cast<__u32>(r.xfers.size());
		req.flags = m.desc;
		if (int rc = port.call(PEACH2_IOC_CHAIN_CREATE, &req)) {
			destroy_driver_chains(port, &chain.driver_ids);
			return driver_error(refusal_error(rc, req.refusal));
		}
		chain.driver_ids.push_back(req.chain);
		chain.descriptors += req.nr_desc;
	}
	const std::uint32_t descriptors = chain.descriptors;
	std::vector<std::uint32_t> ids = chain.driver_ids;
	std::uint32_t id = 0;
	with_context([&](Context &c) {
		id = c.dma().chains().add(std::move(chain));
		return 0;
	});
	if (id == 0) {
		destroy_driver_chains(port, &ids);
		return -ENOSPC;
	}
	*out = tcaChain{id, descriptors};
	return 0;
}

} // namespace

extern "C" {

int tcaChainCreate(const tcaDmaXfer *xfers, size_t count, const tcaDmaOpts *opts, tcaChain *chain)
{
	if (!xfers || count == 0 || !chain)
		return -EINVAL;
	DmaMode m;
	if (int rc = dma_mode(opts, &m))
		return rc;
	if (m.wait)
		return -EINVAL; // nothing runs at creation
	*chain = tcaChain{};
	return guarded([&] { return create({xfers, count}, m, chain); });
}

int tcaChainStart(tcaChain chain, const tcaDmaOpts *opts, tcaDmaTicket *ticket)
{
	DmaMode m;
	if (int rc = dma_mode(opts, &m))
		return rc;
	if (m.desc)
		return -EINVAL; // fixed at creation
	if (!ticket)
		m.wait = true;
	return guarded([&] {
		LibChain c;
		Context *ctx = nullptr;
		if (int rc = with_context([&](Context &cx) {
			    ctx = &cx;
			    return cx.dma().chains().get(chain.id, &c) ? 0 : -ENOENT;
		    }))
			return rc;
		std::vector<DmaRun> runs;
		for (std::uint32_t id : c.driver_ids)
			runs.push_back(DmaRun{{}, id});
		tcaDmaTicket unused{};
		DmaStarter s = ctx->dma().starter();
		return start_runs(s, runs, m, ticket ? ticket : &unused);
	});
}

int tcaChainDestroy(tcaChain chain)
{
	return guarded([&] {
		return with_context([&](Context &c) {
			LibChain lc;
			if (!c.dma().chains().take(chain.id, &lc))
				return -ENOENT;
			// Under the mutex: a concurrent start cannot find it half gone.
			const int rc = destroy_driver_chains(c.dma().port(), &lc.driver_ids);
			if (rc)
				c.dma().chains().put_back(chain.id, std::move(lc));
			return rc;
		});
	});
}

} // extern "C"
