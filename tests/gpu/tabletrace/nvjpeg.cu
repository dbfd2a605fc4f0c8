// nvJPEG through tabletrace: encode a 64x64 RGB gradient, decode it, and
// compare.
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "nvjpeg: %s: %d\n", #x, e_); exit(1); } } while (0)

int
main(void)
{
	const int w = 64, ht = 64;
	size_t sz = (size_t)w * ht * 3, len = 0, i;
	unsigned char *h = (unsigned char *)malloc(sz);
	unsigned char *o = (unsigned char *)malloc(sz), *din, *dout, *jpg;
	nvjpegHandle_t nj;
	nvjpegEncoderState_t es;
	nvjpegEncoderParams_t ep;
	nvjpegJpegState_t js;
	nvjpegImage_t img, out;
	double diff = 0;

	for (i = 0; i < sz; i++)
		h[i] = (unsigned char)((i / 3 % w) * 2 + (i % 3) * 40);
	CK(cudaMalloc(&din, sz));
	CK(cudaMalloc(&dout, sz));
	CK(cudaMemcpy(din, h, sz, cudaMemcpyHostToDevice));
	CK(nvjpegCreateSimple(&nj));
	CK(nvjpegEncoderStateCreate(nj, &es, 0));
	CK(nvjpegEncoderParamsCreate(nj, &ep, 0));
	CK(nvjpegEncoderParamsSetSamplingFactors(ep, NVJPEG_CSS_444, 0));
	CK(nvjpegEncoderParamsSetQuality(ep, 95, 0));
	memset(&img, 0, sizeof img);
	img.channel[0] = din;
	img.pitch[0] = (size_t)w * 3;
	CK(nvjpegEncodeImage(nj, es, ep, &img, NVJPEG_INPUT_RGBI, w, ht, 0));
	CK(nvjpegEncodeRetrieveBitstream(nj, es, NULL, &len, 0));
	jpg = (unsigned char *)malloc(len);
	CK(nvjpegEncodeRetrieveBitstream(nj, es, jpg, &len, 0));
	CK(cudaStreamSynchronize(0));
	CK(nvjpegJpegStateCreate(nj, &js));
	memset(&out, 0, sizeof out);
	out.channel[0] = dout;
	out.pitch[0] = (size_t)w * 3;
	CK(nvjpegDecode(nj, js, jpg, len, NVJPEG_OUTPUT_RGBI, &out, 0));
	CK(cudaMemcpy(o, dout, sz, cudaMemcpyDeviceToHost));
	for (i = 0; i < sz; i++)
		diff += abs((int)o[i] - (int)h[i]);
	diff /= (double)sz;
	printf("nvjpeg: %zu bytes, mean abs diff %.2f\n", len, diff);
	return diff < 8 ? 0 : 1;
}
