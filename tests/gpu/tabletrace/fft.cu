// cuFFT through tabletrace: 1-D C2C (batched), 2-D C2C and 1-D R2C plans
// and executions, checked against a direct DFT on the CPU.
#include <cufft.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "fft: %s: %d\n", #x, e_); exit(1); } } while (0)

// Largest error of out against the DFT of in (n points, stride 1).
static double
dft_err(const cufftComplex *in, const cufftComplex *out, int n, int real)
{
	double err = 0;
	for (int k = 0; k < (real ? n / 2 + 1 : n); k++) {
		double re = 0, im = 0;
		for (int j = 0; j < n; j++) {
			double a = -2 * M_PI * (double)j * k / n;
			double xr = in[j].x, xi = real ? 0 : in[j].y;
			re += xr * cos(a) - xi * sin(a);
			im += xr * sin(a) + xi * cos(a);
		}
		err = fmax(err, fmax(fabs(re - out[k].x), fabs(im - out[k].y)));
	}
	return err;
}

int
main(void)
{
	const int n = 256, batch = 4, n2 = 64, nr = 1000;
	cufftComplex *h = (cufftComplex *)malloc(sizeof *h * n * batch);
	cufftComplex *o = (cufftComplex *)malloc(sizeof *o * n * batch);
	cufftComplex *d, *d2, *dr;
	float *hr = (float *)malloc(sizeof *hr * nr), *dri;
	cufftHandle p1, p2, p3;
	double e1 = 0, e3;
	int i;

	for (i = 0; i < n * batch; i++) {
		h[i].x = (float)sin(i * 0.1);
		h[i].y = (float)cos(i * 0.37);
	}
	CK(cudaMalloc(&d, sizeof *d * n * batch));
	CK(cudaMemcpy(d, h, sizeof *d * n * batch, cudaMemcpyHostToDevice));
	CK(cufftPlan1d(&p1, n, CUFFT_C2C, batch));
	CK(cufftExecC2C(p1, d, d, CUFFT_FORWARD));
	CK(cudaMemcpy(o, d, sizeof *d * n * batch, cudaMemcpyDeviceToHost));
	for (i = 0; i < batch; i++)
		e1 = fmax(e1, dft_err(h + i * n, o + i * n, n, 0));

	CK(cudaMalloc(&d2, sizeof *d2 * n2 * n2));
	CK(cudaMemset(d2, 0, sizeof *d2 * n2 * n2));
	CK(cufftPlan2d(&p2, n2, n2, CUFFT_C2C));
	CK(cufftExecC2C(p2, d2, d2, CUFFT_INVERSE));

	for (i = 0; i < nr; i++)
		hr[i] = (float)cos(i * 0.05) + 0.5f;
	CK(cudaMalloc(&dri, sizeof *dri * nr));
	CK(cudaMalloc(&dr, sizeof *dr * (nr / 2 + 1)));
	CK(cudaMemcpy(dri, hr, sizeof *dri * nr, cudaMemcpyHostToDevice));
	CK(cufftPlan1d(&p3, nr, CUFFT_R2C, 1));
	CK(cufftExecR2C(p3, dri, dr));
	CK(cudaMemcpy(o, dr, sizeof *dr * (nr / 2 + 1), cudaMemcpyDeviceToHost));
	for (i = 0; i < nr; i++) {
		h[i].x = hr[i];
		h[i].y = 0;
	}
	e3 = dft_err(h, o, nr, 1);
	CK(cudaDeviceSynchronize());
	CK(cufftDestroy(p1));
	CK(cufftDestroy(p2));
	CK(cufftDestroy(p3));
	printf("fft: c2c max err %.3g, r2c max err %.3g\n", e1, e3);
	if (!(e1 < 1e-2 && e3 < 1e-1)) {
		fprintf(stderr, "fft: wrong result\n");
		return 1;
	}
	return 0;
}
