/* SPDX-License-Identifier: MIT */
/* tca.h compiles as strict C and the shared library links and runs from C. */
#include <tca/tca.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(tcaHandle) == 256, "tcaHandle is 256 bytes");

int main(void)
{
	tcaHandle h;
	memset(&h, 0, sizeof h);
	setenv("TCA_DEVICE", "/nonexistent/peach2-c-test", 1);
	if (tcaInit() != -ENOENT) {
		fprintf(stderr, "tcaInit did not report ENOENT\n");
		return 1;
	}
	if (tcaHandleValidate(&h) != TCA_EBADHANDLE) {
		fprintf(stderr, "zero handle accepted\n");
		return 1;
	}
	{
		/* The DMA API from C: designated initialisers, no device. */
		tcaDmaOpts o = {.flags = TCA_DMA_HOST_DESC, .channel = TCA_DMA_CHANNEL(1)};
		tcaDmaTicket t = {0};
		tcaChain c = {0};
		tcaDmaXfer x = {.dst = &h, .len = 4};
		if (tcaDmaStart(&x, 1, &o, &t) != -ENOENT || tcaDmaWait(&t, 0) != 0 ||
		    tcaChainDestroy(c) != -ENOENT || tcaDmaPut(&h, 0, NULL, 4, NULL, NULL) != -EINVAL) {
			fprintf(stderr, "DMA calls without a device misbehave\n");
			return 1;
		}
		printf("c_api_check: %s; card code 14 is %s; PIO up to %zu bytes\n",
		       tcaErrorString(TCA_EALIGN), tcaCardErrorName(14), tcaPioMax());
	}
	printf("c_api_check: %s / %s\n", tcaErrorString(TCA_ERANGE), tcaErrorString(-ENOENT));
	tcaFinalize();
	return 0;
}
