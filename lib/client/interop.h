/*
 * Stand-ins for the OpenGL, EGL and VDPAU types that the graphics interop
 * entry points take, so that their prototypes compile without those
 * headers.  Each has the size and calling convention of the real type;
 * the names are the real ones, so the prototypes read as in cudaGL.h,
 * cudaEGL.h and cudaVDPAU.h.
 */
#ifndef GLEAM_CLIENT_INTEROP_H
#define GLEAM_CLIENT_INTEROP_H

#include <stdint.h>

typedef unsigned int	GLuint;
typedef unsigned int	GLenum;

typedef enum CUGLDeviceList_enum {
	CU_GL_DEVICE_LIST_ALL = 1,
	CU_GL_DEVICE_LIST_CURRENT_FRAME = 2,
	CU_GL_DEVICE_LIST_NEXT_FRAME = 3
} CUGLDeviceList;

typedef void		*EGLImageKHR;
typedef void		*EGLStreamKHR;
typedef void		*EGLSyncKHR;
typedef int32_t		 EGLint;

typedef struct CUeglStreamConnection_st *CUeglStreamConnection;

/* cuEGLStreamProducerPresentFrame takes it by value: the layout matters. */
typedef struct CUeglFrame_st {
	union {
		CUarray	 pArray[3];
		void	*pPitch[3];
	} frame;
	unsigned int	 width;
	unsigned int	 height;
	unsigned int	 depth;
	unsigned int	 pitch;
	unsigned int	 planeCount;
	unsigned int	 numChannels;
	int		 frameType;		/* CUeglFrameType */
	int		 eglColorFormat;	/* CUeglColorFormat */
	CUarray_format	 cuFormat;
} CUeglFrame_v1;

typedef uint32_t	VdpDevice;
typedef uint32_t	VdpVideoSurface;
typedef uint32_t	VdpOutputSurface;
typedef int		VdpGetProcAddress(uint32_t, uint32_t, void **);

#endif
